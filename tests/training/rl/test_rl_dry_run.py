"""The CPU dry run (`make rl CONFIG=debug`) end to end: data, config, rollout, reward, filter, advantages."""

from __future__ import annotations

from typing import Any

from training.rl.dry_run import dry_run, format_table


def test_dry_run_drops_the_constant_group(rl_cfg: Any) -> None:
    result = dry_run(rl_cfg("stateguard.dry_run.groups=1", "stateguard.dry_run.constant_groups=1"))
    assert result.rollouts == 16 and len(result.groups) == 2
    varied, constant = result.groups
    assert varied.kept and varied.g == 1 and len(set(varied.scores)) > 1
    assert not constant.kept and len(set(constant.scores)) == 1
    table = format_table(result)
    assert "DROPPED (zero variance)" in table and "check: GRPO advantages finite" in table
    assert result.recipe["rollout_n"] == 8
