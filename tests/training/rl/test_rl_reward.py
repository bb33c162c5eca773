"""verl's reward manager (loaded from our config) calls compute_score on our rows and rollouts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from training.rewards.verl_score import TRACE_KEY, compute_score


def _sample(group: Any, i: int, *, nested: bool) -> Any:
    """One rollout as verl's reward loop hands it over: output tensors + the row's fields + extra_fields."""
    batch, out, _, _ = group
    sample = out[i : i + 1]
    for key in ("data_source", "reward_model", "extra_info"):
        sample.non_tensor_batch[key] = batch.non_tensor_batch[key][i : i + 1]
    if nested:  # streaming reward: the agent loop's extra_fields arrive as tool_extra_fields
        fields = np.empty(1, dtype=object)
        fields[0] = {TRACE_KEY: out.non_tensor_batch[TRACE_KEY][i]}
        sample.non_tensor_batch["tool_extra_fields"] = fields
        del sample.non_tensor_batch[TRACE_KEY]
    return sample


def _manager(cfg: Any) -> Any:
    from verl.trainer.ppo.reward import load_reward_manager
    from verl.utils.tokenizer import hf_tokenizer

    return load_reward_manager(cfg, hf_tokenizer(cfg.actor_rollout_ref.model.path))


def _run(manager: Any, sample: Any) -> dict[str, Any]:
    import asyncio

    async def go() -> dict[str, Any]:
        manager.loop = asyncio.get_running_loop()
        return await manager.run_single(sample)

    return asyncio.run(go())


@pytest.mark.parametrize("nested", [True, False])
def test_reward_manager_calls_compute_score_on_our_rows(group: Any, nested: bool) -> None:
    from training.rl.reward_manager import StateGuardRewardManager

    batch, _, _, cfg = group
    manager = _manager(cfg)
    assert isinstance(manager, StateGuardRewardManager)
    for i in (0, 2):  # a passing and a repairing rollout
        result = _run(manager, _sample(group, i, nested=nested))
        extra = {
            **batch.non_tensor_batch["extra_info"][i],
            TRACE_KEY: group[1].non_tensor_batch[TRACE_KEY][i],
        }
        direct = compute_score(
            batch.non_tensor_batch["data_source"][i],
            "",
            batch.non_tensor_batch["reward_model"][i]["ground_truth"],
            extra,
            config=dict(cfg.reward.custom_reward_function.reward_kwargs.config),
        )
        assert result["reward_score"] == pytest.approx(direct["score"])
        assert result["reward_extra_info"]["score"] == pytest.approx(direct["score"])
    assert TRACE_KEY not in batch.non_tensor_batch["extra_info"][0]  # the row's shared dict is left alone


def test_overlong_buffer_penalizes_long_responses(group: Any, rl_cfg: Any) -> None:
    cfg = rl_cfg("reward.reward_kwargs.max_resp_len=1000", "reward.reward_kwargs.overlong_buffer_cfg.len=500")
    sample = _sample(group, 2, nested=True)  # the repair: a retry and three more activations, >1,000 tokens
    valid = int(sample.batch["attention_mask"][0, sample.batch["prompts"].shape[1] :].sum())
    assert valid > 500
    result = _run(_manager(cfg), sample)
    penalty = min(-(valid - 500) / 500 * 1.0, 0.0)
    assert result["reward_score"] == pytest.approx(result["reward_extra_info"]["score"] + penalty)
    assert bool(result["reward_extra_info"]["overlong"])


def test_a_sample_without_a_trace_is_refused(group: Any) -> None:
    sample = _sample(group, 0, nested=False)
    del sample.non_tensor_batch[TRACE_KEY]
    with pytest.raises(ValueError, match="stateguard_manager"):
        _run(_manager(group[3]), sample)
