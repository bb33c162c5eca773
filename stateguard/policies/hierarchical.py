"""Hierarchical manager: deterministic checks first, the LLM manager only where they cannot decide.

The `rules` manager runs the whole lifecycle. At verification (stage UPDATED) its checks run
first, semantic verification included (requirements from the task text, checked with
inspect_python / run_probe / load_state calls): concrete findings go straight to a rules REPAIR,
no model call. When they find nothing, the decision is delegated to the LLM manager only where a
configured trigger says the deterministic tier could not decide:
  * `unverified_requirement` (the default with semantic verification): a requirement the
    verifier extracted could not be tied to the code or data, so nothing checked it. The model
    receives the extracted requirements, what the code does and the probe results in its
    observation, and is asked about the unverified ones;
  * `semantic_requirement`: a keyword in the question (the default without semantic
    verification, and the older trigger: kept for comparison);
  * `no_executable_constraint`, `inconclusive` (no structured answer to check), `always`.
The model may gather more evidence with tools and ends with REPAIR or FINALIZE_RELATIONS. Every
model call is an `llm_call` event in the trace, so calls per task can be counted against the
paper's 134.5 per LongDS task (Table 5).

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
from stateguard.artifacts.lexicon import LEXICON
from stateguard.lifecycle import ControlAction, Stage
from stateguard.observation import ManagerObservation
from stateguard.parser import parse_response
from stateguard.policies.base import Activation, Degrade, ManagerContext, ModelResponse
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.rules import RulesManager
from stateguard.policies.usage import ManagerUsage

Trigger = Literal[
    "unverified_requirement", "semantic_requirement", "no_executable_constraint", "inconclusive", "always"
]
# Words that put a semantic requirement in a question (the lexicon's core comparators, ranking
# words, exclusions, scope and grouping markers) plus the words of a revision.
SEMANTIC = re.compile(
    r"\b("
    + "|".join(
        [
            LEXICON.pattern(p for p in LEXICON.comparator_phrases(core=True) if p[0].isalpha()),
            LEXICON.pattern(["top", "bottom", "highest", "lowest", "most", "least", "between", "per"]),
            *[w for w in LEXICON.exclusion if w != "not"],
            *LEXICON.scope_markers,
            r"filter\w*",
            r"rank\w*",
            "instead",
            r"revis\w*",
            "update",
        ]
    )
    + r")\b",
    re.IGNORECASE,
)


class HierarchicalManager:
    name = "hierarchical"

    def __init__(
        self,
        rules: RulesManager,
        llm: LLMManager,
        triggers: Iterable[Trigger] | None = None,
        semantic_pattern: str | None = None,
    ):
        self.rules = rules
        self.llm = llm
        default: tuple[Trigger, ...] = (
            ("unverified_requirement",) if rules.semantic is not None else ("semantic_requirement",)
        )
        self.triggers = set(triggers if triggers is not None else default)
        if "unverified_requirement" in self.triggers and rules.semantic is None:
            raise ValueError(
                "trigger 'unverified_requirement' needs a rules tier with semantic verification "
                "(RulesManager(semantic=SemanticVerifier()))"
            )
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
        if (
            "unverified_requirement" in self.triggers
            and self.rules.semantic is not None
            and self.rules.semantic.last.unverified
        ):
            return True
        question = ctx.turn.prompt() if ctx.turn is not None else ""
        draft = obs.current_draft or {}
        if "semantic_requirement" in self.triggers and self.semantic.search(question):
            return True
        if "no_executable_constraint" in self.triggers and not any(
            c.get("code") for c in draft.get("constraints", [])
        ):
            return True
        if "inconclusive" in self.triggers:
            steps = self.rules._span(obs, ctx)
            return self.rules._answer(steps) is None
        return False

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        if ctx.task.task_id != self._task_id:
            self._task_id, self.llm_off = ctx.task.task_id, None
        if Stage(obs.stage) is not Stage.UPDATED:
            yield from self.rules.activate(obs, ctx)
            return
        findings = yield from self.rules.gather(obs, ctx)  # the deterministic tier's evidence, as tool calls
        if findings or self.llm_off is not None or not self.needs_llm(obs, ctx):
            yield from self.rules.decide(obs, ctx, findings)
            return
        self.delegations += 1
        verdicts = ["FINALIZE_RELATIONS"] + (["REPAIR"] if obs.repair_attempts < obs.repair_budget else [])
        evidence = self.rules.semantic.last.summary() if self.rules.semantic is not None else None
        gen = self.llm.activate(obs, ctx, allowed=verdicts, fallback=False, evidence=evidence)
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
                    self.rules.remember(obs, ctx)
                    yield self.rules.finalize(obs, ctx)
                    return
                reply = yield proposal
                if isinstance(proposal, ModelResponse) and any(
                    r.accepted and r.action == "REPAIR" for r in reply
                ):
                    self.rules.mark_repair(obs)  # the retry will be checked on its own by the rules tier
                if _decided(reply):
                    return
                proposal = gen.send(reply)
        except StopIteration:
            why = self.llm.last_failure or "the model gave no usable verdict"
        gen.close()
        # A failed delegation: the rules tier's own decision (it found nothing, so it finalizes).
        if ctx.trace is not None:
            ctx.trace.emit(
                "manager_fallback", policy=self.name, reason=why, stage=obs.stage, exit="rules tier decision"
            )
        self.llm.usage.fallbacks += 1
        yield from self.rules.decide(obs, ctx, [])  # the deterministic tier found nothing: its own verdict


def _decided(reply: Any) -> bool:
    """Did the harness accept a control action (the activation is over)?"""
    results = reply if isinstance(reply, list) else [reply]
    return any(
        getattr(r, "accepted", False) and getattr(r, "action", None) in ControlAction.__members__
        for r in results
    )


def _is_finalize(proposal: ModelResponse) -> bool:
    try:
        control = parse_response(proposal.message).control
    except ActionError:
        return False
    return control is not None and control.name.value == "FINALIZE_RELATIONS"
