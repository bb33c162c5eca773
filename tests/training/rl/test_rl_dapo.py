"""DAPO's dynamic-sampling filter and verl's GRPO advantages on group rewards."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
import torch

from training.rl.dapo import group_advantages, keep_mask, zero_variance_groups

pytest.importorskip("verl", reason="needs the rl extra: pip install -e '.[rl]'")


@pytest.mark.parametrize(
    ("uids", "values", "dropped"),
    [
        (["a"] * 4 + ["b"] * 4, [1, 1, 1, 1, 0, 1, 0, 1], {"a"}),  # all alike -> no signal
        (["a"] * 8 + ["b"] * 8, [0.25] * 8 + [0.0] * 8, {"a", "b"}),
        (["a"] * 3, [0.1, 0.2, 0.3], set()),
        (["a", "b"], [0.5, 0.5], set()),  # single rollouts are never filtered
    ],
)
def test_zero_variance_groups(uids: list[str], values: list[float], dropped: set[str]) -> None:
    assert zero_variance_groups(uids, values) == dropped
    assert keep_mask(uids, values).tolist() == [u not in dropped for u in uids]


def test_filter_agrees_with_verls_replay_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl 0.9 filters finished groups in its replay buffer; feed it the same rewards via a stub queue."""
    from verl.trainer.ppo.v1 import replay_buffer as rb

    uids = ["g1"] * 4 + ["g2"] * 4 + ["g3"] * 4
    values = [0.5, 0.5, 0.5, 0.5, 0.125, 0.875, 0.125, 0.875, -0.25, -0.25, -0.25, -0.25]  # exact in float32
    keys = [f"{u}_{k % 4}" for k, u in enumerate(uids)]
    table = dict(zip(keys, values, strict=True))

    class _Queue:
        @staticmethod
        def kv_batch_get(keys: list[str], partition_id: str, select_fields: list[str]) -> dict[str, Any]:
            return {"rm_scores": [torch.tensor([0.0, table[k]]) for k in keys]}

    monkeypatch.setattr(rb, "tq", _Queue)
    buffer = rb.ReplayBuffer(
        trainer_mode="sync",
        trainer_config={},
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs={},
        refill_fn=lambda n: None,
        filter_groups_metric="reward",
        train_batch_size=3,
        gen_batch_size=1,
    )
    buffer.finished_keys["train"] = set(uids)
    buffer.partitions["train"] = {k: {} for k in keys}
    filtered, counts = buffer._dapo_filtered_keys("train")
    assert filtered == zero_variance_groups(uids, values) == {"g1", "g3"}
    assert counts == Counter({0.5: 1, -0.25: 1})


def test_grpo_advantages_are_finite_and_zero_mean_per_group() -> None:
    uids = ["a"] * 4 + ["b"] * 4
    scores = torch.tensor([0.1, 0.9, 0.4, 0.6, -1.0, 0.0, 0.0, 1.0])
    mask = torch.ones(8, 5)
    mask[:, 3:] = 0
    rewards = torch.zeros(8, 5)
    rewards[:, 2] = scores
    adv = group_advantages(rewards, mask, uids)
    assert torch.isfinite(adv).all() and (adv[:, 3:] == 0).all()
    per = adv[:, 0]
    for g in ("a", "b"):
        rows = [i for i, u in enumerate(uids) if u == g]
        assert float(per[rows].mean()) == pytest.approx(0.0, abs=1e-6)
        s = scores[rows]
        assert per[rows].tolist() == pytest.approx(((s - s.mean()) / (s.std() + 1e-6)).tolist(), abs=1e-5)


def test_advantages_on_the_rolled_out_group(group: Any) -> None:
    batch, out, _, cfg = group
    uids = [str(u) for u in batch.non_tensor_batch["uid"]]
    adv = group_advantages(
        out.batch["rm_scores"], out.batch["response_mask"], uids, estimator=str(cfg.algorithm.adv_estimator)
    )
    mask = out.batch["response_mask"]
    per = (adv * mask).sum(-1) / mask.sum(-1)
    assert torch.isfinite(per).all() and float(per.mean()) == pytest.approx(0.0, abs=1e-5)
    assert bool(
        keep_mask(uids, np.asarray(out.non_tensor_batch["score"], dtype=float)).all()
    )  # it varies: kept
