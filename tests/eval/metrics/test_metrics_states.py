"""D.2 state and intervention statistics on real demo rollouts, and the pooling rules.

Expected values were read off the demo runs by hand (trace + store) and follow from the task:
turn-aligned, one state per turn, S4 invalidates S1 (revenue redefined), S3 is reselected as a
Branch of S1, and the stale margin at turn 5 draws one light repair.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.metrics.states import RunStateStats, run_state_stats, summarize
from stateguard.store import StateStore
from stateguard.trace import read_trace


def _stats(run_dir: Path) -> RunStateStats:
    store = StateStore(run_dir / "states.sqlite")
    try:
        return run_state_stats(read_trace(run_dir / "trace.jsonl"), store)
    finally:
        store.close()


def test_turn_aligned_stateguard_run(demo_runs: dict[str, Path]) -> None:
    s = _stats(demo_runs["turn/stateguard"])
    assert (s.task_id, s.states, s.turns, s.turns_covered, s.coverage) == ("six_turn", 6, 6, 6, 1.0)
    # one constraint (2-decimal rounding) and one conclusion per state; variables 3+5+3+4+6+3
    assert (s.constraints, s.conclusions, s.variables, s.variables_with_value) == (6, 6, 24, 24)
    assert s.relations == {"branch": 1, "init": 1, "invalidate": 1, "progress": 3}
    assert (s.multi_upstream_states, s.reselections) == (0, 2)  # S3 and S4 reselected at finalization
    assert s.hints == {"repair": 1, "state": 5}  # S1 has no related state to pack
    assert (s.repairs, s.repair_attempts, s.repair_modes) == (1, {1: 1}, {"light": 1})
    assert s.tools == {"check_execution": 16}
    assert (s.abandoned, s.rollbacks, s.reviews) == (0, 0, 13)


def test_segment_stateguard_run_covers_turns_with_fewer_states(demo_runs: dict[str, Path]) -> None:
    s = _stats(demo_runs["segment/stateguard"])
    # S5 is formed from steps 8-15, which span turns 5 and 6 (the repaired turn 5 and turn 6)
    assert (s.states, s.turns, s.turns_covered) == (5, 6, 6)
    assert s.relations == {"branch": 1, "init": 1, "invalidate": 1, "progress": 2}
    assert (s.reselections, s.repairs, s.reviews) == (4, 1, 7)
    assert s.tools == {
        "check_execution": 16
    }  # at most the last 6 steps of a span are checked (checks.execution_evidence)


def test_baseline_run_has_no_states(demo_runs: dict[str, Path]) -> None:
    s = _stats(demo_runs["turn/baseline"])
    assert (s.states, s.turns, s.turns_covered, s.coverage) == (0, 6, 0, 0.0)
    assert s.relations == {} and s.hints == {} and s.tools == {} and s.repairs == 0


def test_summary_pools_over_tasks(demo_runs: dict[str, Path]) -> None:
    turn, segment, base = (
        _stats(demo_runs[k]) for k in ("turn/stateguard", "segment/stateguard", "turn/baseline")
    )
    summary = summarize([turn, segment, base])
    assert summary.tasks == 3
    assert summary.states_per_task == pytest.approx(11 / 3)
    assert summary.turn_coverage == pytest.approx(12 / 18)  # 6 + 6 covered of 3 x 6 turns
    assert summary.task_coverage == pytest.approx(2 / 3)
    assert summary.constraints_per_state == pytest.approx(1.0)
    assert summary.variables_per_state == pytest.approx((24 + 22) / 11)
    assert summary.value_share == 1.0
    assert summary.relations == {"branch": 2, "init": 2, "invalidate": 2, "progress": 5}
    assert summary.relation_shares["progress"] == pytest.approx(5 / 11)
    assert summary.hints == {"repair": 2, "state": 10}
    assert summary.hints_per_task["state"] == pytest.approx(10 / 3)
    assert (summary.repairs, summary.first_attempt_share, summary.heavy_share) == (2, 1.0, 0.0)
    assert summary.repairs_per_task == pytest.approx(2 / 3)
    assert summary.tools == {"check_execution": 32} and summary.tool_task_coverage == pytest.approx(2 / 3)


def test_summary_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no runs given"):
        summarize([])
