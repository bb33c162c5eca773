"""One activation's messages for the LLM manager: built to fit the served window, sent, extended
with feedback, and shrunk when a long activation outgrows the window.

The manager (`llm_manager.LLMManager`) owns the policy; this module owns the text. A
`Conversation` picks the richest prompt plan whose whole first request fits
(`prompt_fit.plan_candidates`), renders the user message (task, observation in cache-friendly
field order, and with constrained decoding the listing of the offered actions), and for each
call returns the request's keyword arguments: the tool schemas of exactly the actions offered
(free text) or the `response_format` schema (constrained), `max_tokens`, the deadline left by the
per-task time cap, and the `llm_call` event's metadata.
"""

from __future__ import annotations

import json
import time
from typing import Any

from stateguard.lifecycle import ControlAction, Stage
from stateguard.llm.server_info import response_format
from stateguard.llm.tokens import TokenCounter
from stateguard.observation import ManagerObservation, compress
from stateguard.policies.action_schema import action_listing, action_schema
from stateguard.policies.base import ManagerContext
from stateguard.policies.prompt_fit import PromptPlan, plan_candidates, tools_for
from stateguard.policies.prompts import (
    REPAIR_AFTER_EVIDENCE,
    evidence_message,
    observation_message,
    reply_format,
    task_block,
)

TOOL_RESULT_CHARS = 6000


class Conversation:
    """The messages of one activation and the plan they were built with."""

    def __init__(
        self,
        manager: Any,
        obs: ManagerObservation,
        ctx: ManagerContext,
        offered: list[str],
        tools: list[str],
        counter: TokenCounter,
        evidence: dict[str, Any] | None = None,
    ):
        self.m, self.obs, self.ctx, self.counter = manager, obs, ctx, counter
        self.evidence = f"\n\n{evidence_message(evidence)}" if evidence else ""
        self.schema_obs = obs  # what the schema and listings are tied to (the manager narrows it)
        self.constrained = manager.structured != "off"
        cfg = manager.cfg
        gated = Stage(obs.stage) is Stage.UPDATED and ControlAction.REPAIR.value not in offered
        self.note = (
            REPAIR_AFTER_EVIDENCE if gated and tools and obs.repair_attempts < obs.repair_budget else ""
        )
        self.listings = {
            flag: action_listing(offered + (tools if flag else []), obs, ctx.regime)
            if self.constrained
            else ""
            for flag in (True, False)
        }
        upto = ctx.turn.turn_id if ctx.turn is not None else None
        self.task = lambda clip: task_block(ctx.task, upto, earlier_chars=clip)
        plans = plan_candidates(
            counter,
            window=manager.window,
            reply_tokens=cfg.reply_tokens,
            regime=ctx.regime,
            variant=cfg.variant,
            choice=cfg.prompt,
            constrained=self.constrained,
            context_budget=cfg.context_budget_tokens,
            tool_names=None if manager.corpus else offered + tools,
            control_names=None if manager.corpus else offered,
            user_fixed=lambda clip, flag: self._user(self.task(clip), "OBSERVATION\n", flag),
        )
        # The richest form whose whole first request (the observation compressed to its budget) fits.
        for plan in [p for p in plans if p.fits] or plans[-1:]:
            self._use(plan)
            if (
                plan.prompt_limit is None
                or counter.calibrated(counter.messages(self.messages, plan.tools)) <= plan.prompt_limit
            ):
                break

    def _use(self, plan: PromptPlan) -> None:
        self.plan = plan
        self.listing = self.listings[plan.tool_actions]
        self.budget = plan.observation_budget
        self.messages = self._build(self.budget)

    def _user(self, task: str, observation: str, tool_actions: bool | None = None) -> str:
        listing = self.listing if tool_actions is None else self.listings[tool_actions]
        tail = f"\n\n{reply_format(listing, self.note)}" if self.constrained else ""
        return f"{task}\n\n{observation}{self.evidence}{tail}"

    def _build(self, budget: int) -> list[dict[str, Any]]:
        view = compress(self.obs, max(budget, 1), self.counter.text)
        user = self._user(
            self.task(self.plan.task_clip), observation_message(view, stable_first=not self.m.corpus)
        )
        return [{"role": "system", "content": self.plan.system}, {"role": "user", "content": user}]

    def request(self, names: list[str]) -> dict[str, Any] | None:
        """Keyword arguments for the next chat call, after fitting the messages; None: cannot fit."""
        tools = self.plan.tools
        if (
            tools is not None and not self.m.corpus
        ):  # free text: the schemas of exactly the actions offered now
            tools = tools_for(self.plan.mode, names)
        counted = self.counter.messages(self.messages, tools)
        limit = self.plan.prompt_limit
        for _ in range(4):
            if limit is None or self.counter.calibrated(counted) <= limit:
                break
            self._shrink(self.counter.calibrated(counted) - limit)
            counted = self.counter.messages(self.messages, tools)
        else:
            return None
        kw: dict[str, Any] = {"tools": tools}
        schema_mode = self.m.structured
        if self.constrained:
            kw["response_format"] = response_format(
                schema_mode, action_schema(names, self.schema_obs, self.ctx.regime)
            )
        endpoint = self.m._endpoint()
        if endpoint is None or endpoint.max_tokens is None:
            kw["max_tokens"] = self.m.cfg.reply_tokens
        left = self.m._left_s()
        if left is not None:
            kw["deadline"] = time.monotonic() + max(left, 0.0)
        kw["meta"] = {
            "purpose": "manager",
            "constrained": self.constrained,
            "prompt_mode": self.plan.mode,
            "offered": names,
            "window": self.plan.window,
            "counted_prompt_tokens": counted,
            "planned_prompt_tokens": self.counter.calibrated(counted),
            "token_counts": self.counter.source,
        }
        return kw

    def _shrink(self, over: int) -> None:
        """Make room: clip long tool results first, then compress the observation further."""
        for message in self.messages[2:]:
            text = message.get("content") or ""
            if message.get("role") in ("tool", "user") and len(text) > 800:
                message["content"] = text[:400] + " ...[cut to fit the context window]... " + text[-300:]
        self.budget = max(1, int(self.budget - over * 1.2 - 32))
        self.messages[:2] = self._build(self.budget)

    def feedback(self, message: dict[str, Any], results: list[Any], names: list[str]) -> list[dict[str, Any]]:
        """What goes back to the model after the harness applied (or rejected) its output."""
        if self.constrained or not message.get("tool_calls"):
            body = "\n".join(f"<tool_response>\n{_result_text(r)}\n</tool_response>" for r in results)
            note = self.note if ControlAction.REPAIR.value not in names else ""
            ask = (
                reply_format(action_listing(names, self.schema_obs, self.ctx.regime), note)
                if self.constrained
                else f"Continue: call tools or one control action ({', '.join(n for n in names if n in ControlAction.__members__)})."
            )
            return [{"role": "user", "content": f"{body}\n{ask}"}]
        calls = message["tool_calls"]
        texts = [_result_text(r) for r in results]
        if len(texts) != len(calls):  # the whole response was rejected: answer every call with the reason
            texts = [texts[0] if texts else "REJECTED"] * len(calls)
        return [
            {"role": "tool", "tool_call_id": c.get("id") or f"call_{i}", "content": t}
            for i, (c, t) in enumerate(zip(calls, texts, strict=True))
        ]


def _result_text(result: Any) -> str:
    if not result.accepted:
        return f"REJECTED by the harness: {result.feedback}"
    if result.tool_result is not None:
        body = json.dumps(result.tool_result.model_dump(mode="json"), default=str)
        return body if len(body) <= TOOL_RESULT_CHARS else body[:TOOL_RESULT_CHARS] + " ...[truncated]"
    return str(result.feedback)
