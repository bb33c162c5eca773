"""verl reward manager for the manager's RL: DAPO's reward manager, fed the continuation's trace.

    reward:
      reward_manager: {source: importlib, name: StateGuardRewardManager,
                       module: {path: pkg://training.rl.reward_manager}}
      custom_reward_function: {path: pkg://training.rewards.verl_score, name: compute_score}

verl's DAPO reward manager (verl/experimental/reward_loop/reward_manager/dapo.py) calls the custom
compute_score(data_source, solution_str, ground_truth, extra_info) with the row's extra_info, then
adds DAPO's overlong penalty (reward.reward_kwargs.overlong_buffer_cfg). Our compute_score scores the
trace of the rollout (training/rewards/verl_score.py reads extra_info["stateguard_trace"]), which the
agent loop returns in its extra_fields. verl hands those to the reward manager in one of two places:
* streaming reward (rule-based, the default): non_tensor_batch["tool_extra_fields"][key];
* reward after sampling (a colocated reward model): non_tensor_batch[key] itself.
This subclass copies the trace source into the sample's extra_info (a copy: the row's dict is shared
by the group's rollouts) and otherwise is verl's DAPO manager unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from verl import DataProto
from verl.experimental.reward_loop.reward_manager.dapo import DAPORewardManager

from stateguard.artifacts.rl_prompts import RlColumn
from training.rewards.verl_score import TRACE_KEY

__all__ = ["StateGuardRewardManager", "trace_source_of"]


def trace_source_of(non_tensor: Mapping[str, Any]) -> Any:
    """The agent loop's trace source for one sample, wherever verl put its extra_fields."""
    fields = non_tensor.get("tool_extra_fields")
    if isinstance(fields, Mapping) and fields.get(TRACE_KEY) is not None:
        return fields[TRACE_KEY]
    return non_tensor.get(TRACE_KEY)


class StateGuardRewardManager(DAPORewardManager):
    """DAPORewardManager whose compute_score sees the continuation's trace in extra_info."""

    async def run_single(self, data: DataProto) -> dict:
        data = data[-1:]
        item = data[0].non_tensor_batch
        source = trace_source_of(item)
        if source is None:
            raise ValueError(
                f"sample has no '{TRACE_KEY}' in its extra_fields: "
                "it was not produced by the stateguard_manager "
                "agent loop; give the rows agent_name=stateguard_manager (python -m training.rl.data)"
            )
        extra = dict(item.get(RlColumn.EXTRA_INFO) or {})
        extra[TRACE_KEY] = source
        holder = np.empty(1, dtype=object)
        holder[0] = extra
        data.non_tensor_batch[RlColumn.EXTRA_INFO] = holder
        return await super().run_single(data)
