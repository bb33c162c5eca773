"""Hierarchical manager: deterministic checks first, the LLM manager only where they cannot decide.

The `rules` manager runs the whole lifecycle. At verification (stage UPDATED) its checks run
first: concrete findings go straight to a rules REPAIR, no model call. When the checks find
nothing but a configured trigger says the state holds something they cannot judge — a
semantic requirement in the question (filters, exclusions, rankings, ...), no executable
constraint, or an inconclusive check (no structured answer to check) — the verification
decision is delegated to the LLM manager, which may gather evidence with tools and ends with
REPAIR or FINALIZE_RELATIONS (the only actions it is offered; REPAIR only while repair budget
remains). Every model call is an `llm_call` event (`<arm>/llm_calls.jsonl`), so calls per task can
be counted against the paper's 134.5 per LongDS task (Table 5).

A failed delegation — the endpoint refused or failed, the reply was unusable, the activation ran
out of actions, the per-task time cap is spent — never ends in ABANDON/ABSTAIN: the rules tier's
own decision is applied instead (it found nothing, so it finalizes and the state is committed),
marked by a `manager_fallback` event. When the model tier gives up for the task (repeated
endpoint failures or the time cap), the rest of the task is run by the rules tier alone; the
task is never degraded to worker-only completion. So `hierarchical` commits every state `rules`
commits and issues every repair `rules` issues, whatever the model does besides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from stateguard.actions import ActionError
from stateguard.lifecycle import ControlAction, Stage
from stateguard.observation import ManagerObservation
from stateguard.parser import parse_response
from stateguard.policies.base import Activation, Degrade, ManagerContext, ModelResponse
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.rules import RulesManager
from stateguard.policies.usage import ManagerUsage

Trigger = Literal["semantic_requirement", "no_executable_constraint", "inconclusive", "always"]
SEMANTIC = re.compile(
    r"\b(only|exclud\w*|except|without|at least|at most|more than|less than|top|bottom|highest|lowest|"
    r"between|unless|filter\w*|among|within|whose|where|per|rank\w*|instead|revis\w*|update|most|least)\b",
    re.IGNORECASE,
)


class HierarchicalManager:
    name = "hierarchical"

    def __init__(self, rules: RulesManager, llm: LLMManager, triggers: Iterable[Trigger] = ("semantic_requirement",),
                 semantic_pattern: str | None = None):  # fmt: skip
        self.rules = rules
        self.llm = llm
        self.triggers = set(triggers)
        self.semantic = re.compile(semantic_pattern, re.IGNORECASE) if semantic_pattern else SEMANTIC
        self.delegations = 0
        self.llm_off: str | None = None  # why the model tier stopped for the current task
        self._task_id: str | None = None

    @property
    def calls(self) -> int:
        """Model calls that got a real answer (the rules tier makes none)."""
        return self.llm.calls

    @property
    def usage(self) -> ManagerUsage:
        """The model tier's counters; `fallbacks` counts delegations decided by the rules tier instead."""
        return self.llm.usage

    def needs_llm(self, obs: ManagerObservation, ctx: ManagerContext) -> bool:
        if "always" in self.triggers:
            return True
        question = ctx.turn.prompt() if ctx.turn is not None else ""
        draft = obs.current_draft or {}
        if "semantic_requirement" in self.triggers and self.semantic.search(question):
            return True
        if "no_executable_constraint" in self.triggers and not any(c.get("code") for c in draft.get("constraints", [])):
            return True
        if "inconclusive" in self.triggers:
            steps = self.rules._span(obs, ctx)
            return self.rules._answer(steps) is None
        return False

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        if ctx.task.task_id != self._task_id:
            self._task_id, self.llm_off = ctx.task.task_id, None
        if (Stage(obs.stage) is not Stage.UPDATED or self.llm_off is not None or self.rules.findings(obs, ctx)
                or not self.needs_llm(obs, ctx)):  # fmt: skip
            yield from self.rules.activate(obs, ctx)
            return
        self.delegations += 1
        verdicts = ["FINALIZE_RELATIONS"] + (["REPAIR"] if obs.repair_attempts < obs.repair_budget else [])
        gen = self.llm.activate(obs, ctx, allowed=verdicts, fallback=False)
        why: str | None = None
        try:
            proposal = next(gen)
            while True:
                if isinstance(proposal, Degrade):
                    self.llm_off = proposal.reason
                    why = f"the model tier stops for this task: {proposal.reason}"
                    break
                if isinstance(proposal, ModelResponse) and _is_finalize(proposal):
                    # The model judged the state consistent; the rules tier owns the relations
                    # (read off the dataflow), so its FINALIZE is the one applied.
                    gen.close()
                    yield self.rules.finalize(obs, ctx)
                    return
                reply = yield proposal
                if isinstance(proposal, ModelResponse) and any(r.accepted and r.action == "REPAIR" for r in reply):
                    self.rules.mark_repair(obs)  # the retry will be checked on its own by the rules tier
                if _decided(reply):
                    return
                proposal = gen.send(reply)
        except StopIteration:
            why = self.llm.last_failure or "the model gave no usable verdict"
        gen.close()
        # A failed delegation: the rules tier's own decision (it found nothing, so it finalizes).
        if ctx.trace is not None:
            ctx.trace.emit("manager_fallback", policy=self.name, reason=why, stage=obs.stage, exit="rules tier decision")
        self.llm.usage.fallbacks += 1
        yield from self.rules.activate(obs, ctx)


def _decided(reply: Any) -> bool:
    """Did the harness accept a control action (the activation is over)?"""
    results = reply if isinstance(reply, list) else [reply]
    return any(getattr(r, "accepted", False) and getattr(r, "action", None) in ControlAction.__members__ for r in results)


def _is_finalize(proposal: ModelResponse) -> bool:
    try:
        control = parse_response(proposal.message).control
    except ActionError:
        return False
    return control is not None and control.name.value == "FINALIZE_RELATIONS"
