"""Fit the manager's request to the served context window before it is sent.

A request is the system prompt, the task so far, the tool definitions (or, with constrained
decoding, a compact listing of the offered actions) and the observation, plus the room the reply
needs. The fixed part cannot be shrunk by compressing the observation, so `plan_prompt` picks
the richest prompt form whose fixed part leaves the observation a useful share of the window:

    full      the full system prompt and full tool schemas (with descriptions)
    compact   the full system prompt and tool schemas without descriptions
    short     the short system prompt and compact schemas

and, when even that is too big, clips the earlier turns of the task text and at last offers the
control actions only (no evidence tools, whose schemas cost tokens). The observation gets
what is left, counted with the served tokenizer (`stateguard.llm.tokens`). With an unknown window
(`window=None`) nothing is planned beyond `context_budget`, until an overflow names the limit.

    plan = plan_prompt(counter, window=4096, reply_tokens=384, ...)
    obs = compress(obs, plan.observation_budget, counter.text)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from stateguard.actions import tool_schemas
from stateguard.lifecycle import Regime
from stateguard.llm.tokens import MARGIN, TokenCounter
from stateguard.policies.prompts import system_prompt

PromptMode = Literal["full", "compact", "short"]
PromptChoice = Literal["auto", "full", "compact", "short"]
MODES: tuple[PromptMode, ...] = ("full", "compact", "short")
TASK_CLIPS: tuple[int | None, ...] = (None, 600, 200, 80)  # characters kept of each earlier turn
SAFETY_TOKENS = 32
MIN_OBSERVATION = 384  # tokens: less than this and the manager sees too little to judge


class PromptPlan(BaseModel):
    """How one activation's prompt is built, and what it may cost."""

    model_config = ConfigDict(frozen=True)

    mode: PromptMode
    system: str
    tools: list[dict[str, Any]] | None  # None: the offered actions are listed in the user message
    task_clip: int | None
    window: int | None
    prompt_limit: int | None  # most calibrated prompt tokens a request may have; None: unknown
    fixed_tokens: int
    observation_budget: int  # raw tokens (the counter's units) for the rendered observation
    fits: bool
    tool_actions: bool = True  # False: the last resort, only control actions are offered


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A function schema without descriptions (names and types only)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "description"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    fn = schema["function"]
    return {"type": "function", "function": {"name": fn["name"], "parameters": strip(fn["parameters"])}}


def tools_for(mode: PromptMode, names: list[str] | None = None) -> list[dict[str, Any]]:
    schemas = [s for s in tool_schemas() if names is None or s["function"]["name"] in names]
    return schemas if mode == "full" else [compact_schema(s) for s in schemas]


def plan_prompt(counter: TokenCounter, **kw: Any) -> PromptPlan:
    """The richest prompt form that leaves the observation room (see `plan_candidates`)."""
    candidates = plan_candidates(counter, **kw)
    return next((p for p in candidates if p.fits), min(candidates, key=lambda p: p.fixed_tokens))


def plan_candidates(
    counter: TokenCounter,
    *,
    window: int | None,
    reply_tokens: int,
    regime: Regime,
    variant: Literal["stateguard", "freeform"],
    choice: PromptChoice,
    constrained: bool,
    user_fixed: Callable[[int | None, bool], str],
    context_budget: int,
    tool_names: list[str] | None = None,
    control_names: list[str] | None = None,
) -> list[PromptPlan]:
    """Every prompt form to try, richest first (see the module docstring); `fits` says whether
    its fixed part leaves the observation a useful share of the window.

    `user_fixed(task_clip, tool_actions)` is the user message without the observation (task text,
    and the action listing when decoding is constrained); `tool_names` are the actions whose
    schemas are sent as tools when it is not (all of them when None), `control_names` the ones
    kept by the last resort."""
    modes = MODES if choice == "auto" else (choice,)
    if variant == "freeform":
        modes = tuple(m for m in modes if m != "short") or ("compact",)  # the ablation has one prompt
    limit = None if window is None else window - reply_tokens - SAFETY_TOKENS
    plans: list[PromptPlan] = []
    # Richest first: each prompt form with the whole task, then the smallest form with ever
    # shorter earlier turns (the task text is worth more than the prompt's prose).
    candidates: list[tuple[PromptMode, int | None, bool]] = [(m, None, True) for m in modes]
    if limit is not None:
        candidates += [(modes[-1], c, True) for c in TASK_CLIPS[1:]]
        if control_names is not None:
            candidates.append((modes[-1], TASK_CLIPS[-1], False))
    for mode, clip, with_tools in candidates:
        system = system_prompt(regime, variant, short=mode == "short")
        tools = None if constrained else tools_for(mode, tool_names if with_tools else control_names)
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": user_fixed(clip, with_tools)},
        ]
        fixed = counter.calibrated(counter.messages(messages, tools))
        if limit is None:
            return [
                PromptPlan(
                    mode=mode,
                    system=system,
                    tools=tools,
                    task_clip=clip,
                    window=None,
                    prompt_limit=None,
                    fixed_tokens=fixed,
                    observation_budget=context_budget,
                    fits=True,
                )
            ]
        room = math.floor((limit - fixed) / (counter.ratio * MARGIN))
        plan = PromptPlan(
            mode=mode,
            system=system,
            tools=tools,
            task_clip=clip,
            window=window,
            prompt_limit=limit,
            fixed_tokens=fixed,
            observation_budget=max(0, min(room, context_budget)),
            fits=room >= min(MIN_OBSERVATION, limit // 4),
            tool_actions=with_tools,
        )
        plans.append(plan)
    return plans
