"""verl custom reward function for the manager's RL prompts: `compute_score` (paper B.4, Eq. 26-30).

In the verl trainer config (verl 0.9; the function gets data_source, solution_str, ground_truth and
extra_info, and returns a float or a dict whose "score" is the reward):

    custom_reward_function:
      path: training/rewards/verl_score.py
      name: compute_score
      reward_kwargs:
        config: {judge: {role: judge, base_url: "http://judge:8000/v1", model: openai/gpt-oss-120b}}

The contract with the rollout side (the RL agent loop runs the manager's continuation through the
real harness, which writes the trace) is one key in the row's extra_info. In verl 0.9 an agent
loop sets it in its output's `extra_fields`, which the reward loop merges into extra_info:

    extra_info["stateguard_trace"] = {"path": "<run>/trace.jsonl", "start_seq": 57}
    extra_info["stateguard_trace"] = {"events": [<TraceEvent dicts>], "start_seq": 57}   # inline

`start_seq` is the first event of the continuation; the events before it (worker prefix, the draft
under review) are context. `regime` / `start_stage` are needed only when the trace lacks its
run_start event / its prefix (see training.rewards.timeline.TraceSource). The labels come from the
row as `synthesis.export` writes it (ground_truth JSON and extra_info) or from extra_info["labels"]
(training.rewards.labels). `solution_str` is not parsed again: every action the model produced is in
the trace with the harness's verdict, which is what the reward scores. `data_source` is not used.

The dict returned has "score" and the same numeric keys for every sample (RewardResult.metrics).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from training.rewards.config import RewardConfig
from training.rewards.judge import Judge, LLMJudge
from training.rewards.labels import RewardLabels
from training.rewards.reward import score_trace
from training.rewards.timeline import TraceSource

TRACE_KEY = "stateguard_trace"

_SETUP: dict[str, tuple[RewardConfig, Judge | None]] = {}  # one config and judge client per process


def _setup(config: Mapping[str, Any] | RewardConfig | None) -> tuple[RewardConfig, Judge | None]:
    """Validate the config once and keep one judge client per distinct config (verl calls per sample)."""
    if isinstance(config, RewardConfig):
        key, build = config.model_dump_json(), config
    else:
        raw = dict(config or {})
        key = json.dumps(raw, sort_keys=True, default=str)
        build = None
        if key not in _SETUP:
            try:
                build = RewardConfig.model_validate(raw)
            except ValidationError as exc:
                raise ValueError(f"reward_kwargs.config is not a valid RewardConfig: {exc}") from None
    if key not in _SETUP:
        assert build is not None
        judge = None
        if build.judge is not None:
            judge = LLMJudge.from_endpoint(build.judge, max_evidence_chars=build.judge_evidence_chars)
        _SETUP[key] = (build, judge)
    return _SETUP[key]


def trace_source(extra_info: Mapping[str, Any] | None) -> TraceSource:
    """The TraceSource in extra_info; the error names the key and what the rollout must put there."""
    raw = (extra_info or {}).get(TRACE_KEY)
    if raw is None:
        raise ValueError(
            f"extra_info has no '{TRACE_KEY}': the rollout must record where the manager continuation's "
            f"trace is, e.g. extra_info['{TRACE_KEY}'] = "
            "{'path': '<run>/trace.jsonl', 'start_seq': <first event>}"
        )
    try:
        return TraceSource.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
    except (ValidationError, json.JSONDecodeError) as exc:
        raise ValueError(f"extra_info['{TRACE_KEY}'] is not a valid trace source: {exc}") from None


def compute_score(
    data_source: str | None,
    solution_str: str | None,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, float]:
    """R(τ) of one manager continuation, as verl's reward manager expects it ({"score": R, ...}).

    kwargs: `config`, a RewardConfig or its fields as a mapping (verl's reward_kwargs); other
    keyword arguments verl may add are accepted and ignored.
    """
    config, judge = _setup(kwargs.get("config"))
    source = trace_source(extra_info)
    labels = RewardLabels.from_verl_row(ground_truth, extra_info)
    result = score_trace(
        source.load(),
        labels,
        config=config,
        start_seq=source.start_seq,
        regime=source.regime,
        start_stage=source.start_stage,
        judge=judge,
    )
    return result.metrics()
