"""One DAPO group (a g=1 decision point x 8) through verl's AgentLoopWorker and our agent loop."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
import torch

from training.rewards.verl_score import TRACE_KEY
from training.rl.scripted_server import PERSONAS

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# timings (durations, step start times) differ from run to run; nothing else may
_WALL = re.compile(r'"(wall_s|started)": [0-9.e+-]+')


def _split_runs(ids: list[int], mask: list[int]) -> list[tuple[int, list[int]]]:
    """Maximal runs of equal mask value: (value, token ids)."""
    runs: list[tuple[int, list[int]]] = []
    for token, value in zip(ids, mask, strict=True):
        if runs and runs[-1][0] == value:
            runs[-1][1].append(token)
        else:
            runs.append((value, [token]))
    return runs


def _valid(out: Any, i: int) -> int:
    prompt_width = out.batch["prompts"].shape[1]
    return int(out.batch["attention_mask"][i, prompt_width:].sum())


def test_group_shares_the_prompt_tokens_of_the_row(group: Any) -> None:
    batch, out, server, _ = group
    assert len(out) == 8
    prompts = out.batch["prompts"]
    assert all(torch.equal(prompts[0], prompts[i]) for i in range(8))
    text = server.tokenizer.decode(prompts[0][out.batch["attention_mask"][0, : prompts.shape[1]].bool()])
    row_user = batch.non_tensor_batch["raw_prompt"][0][1]["content"]
    assert row_user.split("OBSERVATION\n")[0].strip() in text  # the row's prompt, rendered with the tools
    assert "check_execution" in text and "FINALIZE_RELATIONS" in text  # the 13 tool schemas are in the prompt


def test_responses_mask_out_tool_results_and_observations(group: Any) -> None:
    _, out, server, _ = group
    tok = server.tokenizer
    for i in range(8):
        n = _valid(out, i)
        ids = out.batch["responses"][i, :n].tolist()
        mask = out.batch["response_mask"][i, :n].tolist()
        assert mask[0] == 1 and n > 0
        for value, span in _split_runs(ids, mask):
            text = tok.decode(span, skip_special_tokens=False)
            if value == 1:  # the model's own turns: tool calls, each closed by the end-of-turn token
                assert "<tool_call>" in text and text.rstrip().endswith("<|im_end|>"), text[:200]
            else:  # everything the runtime said back
                assert "<tool_response>" in text or "OBSERVATION" in text, text[:200]
        assert (out.batch["response_mask"][i, n:] == 0).all()  # padding


def test_rollouts_act_differently_over_one_shared_prefix(group: Any) -> None:
    _, out, server, _ = group
    summaries = out.non_tensor_batch["stateguard"]
    personas = [server.persona(s["request_id"]) for s in summaries]
    assert personas == list(PERSONAS)
    decisions = dict(zip(personas, (s["decision"] for s in summaries), strict=True))
    assert decisions["repair"] == "REPAIR" and decisions["finalize"] == "FINALIZE_RELATIONS"
    assert decisions["illegal"] == "FINALIZE_RELATIONS"  # its COMMIT_STATE was refused, then it finalized
    sources = out.non_tensor_batch[TRACE_KEY]
    starts = {s["start_seq"] for s in sources}
    assert len(starts) == 1  # same prefix length in every rollout
    start = starts.pop()

    def prefix(source: dict[str, Any]) -> list[Any]:
        text = [
            _WALL.sub("", _ADDRESS.sub("0x", json.dumps(e["data"], sort_keys=True)))
            for e in source["events"][:start]
        ]
        return [(e["kind"], t) for e, t in zip(source["events"][:start], text, strict=True)]

    assert all(
        prefix(s) == prefix(sources[0]) for s in sources
    )  # the worker prefix is the same, event by event


def test_rewards_are_attached_by_verls_reward_loop(group: Any) -> None:
    _, out, _, _ = group
    rm = out.batch["rm_scores"]
    scores = np.asarray(out.non_tensor_batch["score"], dtype=float)
    for i in range(8):
        n = _valid(out, i)
        nonzero = torch.nonzero(rm[i]).flatten().tolist()
        assert nonzero in ([], [n - 1])  # one scalar at the last response token
        assert float(rm[i].sum()) == pytest.approx(
            scores[i], abs=1e-6
        )  # short responses: no overlong penalty
    by = dict(zip([s["decision"] for s in out.non_tensor_batch["stateguard"]], scores, strict=True))
    assert by["REPAIR"] > by["FINALIZE_RELATIONS"]  # g=1: repairing beats passing the inconsistency on
    assert np.isfinite(scores).all() and scores.std() > 0


def test_logprobs_follow_the_mask(group: Any) -> None:
    _, out, _, _ = group
    logprobs, mask = out.batch["rollout_log_probs"], out.batch["response_mask"]
    assert logprobs.shape == mask.shape
    assert (logprobs[mask == 0] == 0).all()
