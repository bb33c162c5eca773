"""DAPO's group-level pieces on a rolled-out batch: dynamic-sampling filter and GRPO advantages.

    keep = keep_mask(uids, scores)                           # drop groups whose metric has zero variance
    adv = group_advantages(rm_scores, response_mask, uids)   # verl's registered GRPO estimator

Dynamic sampling (DAPO): a group whose rollouts all earn the same reward gives every rollout a zero
advantage, so it only dilutes the batch; verl 0.9's trainer drops such finished groups in its replay
buffer (verl/trainer/ppo/v1/replay_buffer.py, `algorithm.filter_groups`) and refills the batch with
fresh prompts. `zero_variance_groups` is the same rule (more than one rollout, population std 0)
on a plain batch, for the CPU dry run and for tests; the advantages come from verl's own estimator
(verl.trainer.ppo.core_algos, looked up by `algorithm.adv_estimator`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["group_advantages", "group_values", "keep_mask", "zero_variance_groups"]


def group_values(uids: Sequence[Any], values: Sequence[float]) -> dict[Any, list[float]]:
    """uid -> the metric of each of its rollouts, in batch order."""
    if len(uids) != len(values):
        raise ValueError(f"{len(uids)} uids but {len(values)} values: one value per rollout is needed")
    groups: dict[Any, list[float]] = defaultdict(list)
    for uid, value in zip(uids, values, strict=True):
        groups[uid].append(float(value))
    return dict(groups)


def zero_variance_groups(uids: Sequence[Any], values: Sequence[float]) -> set[Any]:
    """Groups DAPO drops: more than one rollout and all of them scored alike."""
    return {
        uid
        for uid, vals in group_values(uids, values).items()
        if len(vals) > 1 and float(np.std(vals)) == 0.0
    }


def keep_mask(uids: Sequence[Any], values: Sequence[float]) -> np.ndarray:
    """Boolean mask over rollouts: True where the rollout's group carries a learning signal."""
    dropped = zero_variance_groups(uids, values)
    return np.array([uid not in dropped for uid in uids], dtype=bool)


def group_advantages(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    uids: Sequence[Any],
    *,
    estimator: str = "grpo",
    norm_adv_by_std: bool = True,
) -> torch.Tensor:
    """Per-token advantages from verl's registered estimator (GRPO: (R - mean_g) / (std_g + eps))."""
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn

    fn = get_adv_estimator_fn(estimator)
    index = np.array([str(u) for u in uids], dtype=object)
    advantages, _ = fn(
        token_level_rewards=token_level_rewards,
        response_mask=response_mask,
        index=index,
        norm_adv_by_std_in_grpo=norm_adv_by_std,
    )
    return advantages
