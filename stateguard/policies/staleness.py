"""A decision on every stale read the workspace recorded: a finding, or a named reason not to act.

The dataflow records a stale read when a turn reads a value whose inputs changed after it was
computed. The manager never commits over one silently; each gets one of these decisions:

    finding     recomputing the value on today's inputs gives a different one, and the question
                did not ask for the earlier value (`replay.replay_differs`)
    intended    the question positively asks for the earlier value (outright, or in a comparison
                whose new side the turn computes from the revised input), or the value was built
                on purpose from an earlier version by a turn that asked for it (`policies.intent`)
    unchanged   the replay gives the same value (the change did not touch what it was made of),
                or a different value that leaves the turn's reported answer as it is
    covered     the value was made in this same turn; the read of its stale input is judged
    superseded  the value was rewritten after the span under review (segment flow)
    undecided   the replay could not run (no recorded producer, a failed probe): no evidence
                either way, so nothing is destroyed; the detection report counts these

    decisions = decide(span, ctx.steps, ctx.workspace, question, skip=set(), accepted=memory)
    findings  = [d for d in decisions if d.decision == "finding"]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.events import StaleDecisionKind
from stateguard.observation import WorkerStep
from stateguard.policies.intent import QuestionIntent, question_intent
from stateguard.policies.replay import answer_differs, replay_differs, replay_plan

__all__ = ["AcceptedVersions", "Decision", "StaleDecision", "decide"]

Decision = StaleDecisionKind


class StaleDecision(BaseModel):
    """What the manager decided about one recorded stale read, and the evidence for it."""

    model_config = ConfigDict(frozen=True)
    step: int = Field(description="The worker step that read the value.")
    name: str
    inputs: list[str] = Field(description="Inputs redefined since the value was computed.")
    decision: Decision
    evidence: str


class AcceptedVersions:
    """Values a turn built from earlier versions on purpose: later reads of them, while neither
    they nor the versions they were built from changed, are intended as well."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[Any, dict[str, Any]]] = {}

    def remember(self, flow: Any, names: set[str]) -> None:
        if flow is None:
            return
        for name in names:
            reasons = flow.stale_reasons(name)
            self._kept[name] = (flow.version(name), {r: flow.version(r) for r in reasons})

    def covers(self, flow: Any, name: str) -> bool:
        record = self._kept.get(name)
        if record is None or flow is None or flow.version(name) != record[0]:
            return False
        return all(record[1].get(r, -1) == flow.version(r) for r in flow.stale_reasons(name))


def _writer(steps: Mapping[int, WorkerStep], name: str, before: int) -> WorkerStep | None:
    """The last step before `before` that wrote `name`."""
    for index in sorted((i for i in steps if i < before), reverse=True):
        if name in (steps[index].meta.get("writes") or []):
            return steps[index]
    return None


def _new_side(steps: Mapping[int, WorkerStep], span: list[WorkerStep], revised: set[str], name: str) -> bool:
    """The turn has the new side of its comparison: it reads a revised input itself, or reads a
    value (other than the stale one) made from one after the revision, e.g. by the turn that revised it."""
    first = min(s.index for s in span)
    reads = {n for s in span for n in (s.meta.get("reads") or [])}
    if reads & revised:
        return True
    revisions = [i for i in steps if i < first and set(steps[i].meta.get("writes") or []) & revised]
    if not revisions:
        return False
    for read in reads:
        if read == name:
            continue
        writer = _writer(steps, read, first)
        # made from the revised input at or after its last revision: the comparison's new side
        if (
            writer is not None
            and writer.index >= max(revisions)
            and set(writer.meta.get("reads") or []) & revised
        ):
            return True
    return False


def _decide_one(
    step: WorkerStep,
    name: str,
    steps: Mapping[int, WorkerStep],
    workspace: Any,
    intent: QuestionIntent,
    span: list[WorkerStep],
    skip: set[str] | frozenset[str],
    accepted: AcceptedVersions | None,
) -> tuple[Decision, str, list[str] | None]:
    """(decision, evidence, the revised inputs when the replay planner found them)."""
    indices = {s.index for s in span}
    if name in skip:
        return "superseded", "rewritten after the span under review", None
    if accepted is not None and accepted.covers(getattr(workspace, "dataflow", None), name):
        return "intended", "built on purpose from an earlier version by a turn that asked for it", None
    writer = _writer(steps, name, step.index)
    if writer is not None and writer.index in indices:
        return "covered", f"made in this turn at step {writer.index}; its own inputs are judged", None
    plan = replay_plan(steps, name, step.index)
    revised = plan.revised if plan is not None else []
    asked = intent.turns.get(writer.turn) if writer is not None and writer.turn is not None else None
    asked = asked or intent.earlier
    if asked and (not asked.compares or not revised or _new_side(steps, span, set(revised), name)):
        return "intended", f"the question asks for the earlier value: {asked.phrase!r}", revised
    differs = replay_differs(workspace, steps, name, step.index, plan)
    if differs is True and plan is not None:
        if answer_differs(workspace, span, name, step.index, plan) is False:
            return (
                "unchanged",
                "recomputed it differs, but the turn's reported answer comes out the same",
                revised,
            )
        return "finding", "recomputed on the current inputs it comes out different", revised
    if differs is False:
        return "unchanged", "recomputed on the current inputs it comes out the same", revised
    return (
        "undecided",
        "no recorded statement made it" if plan is None else "the replay probe could not run",
        revised,
    )


def decide(
    span: list[WorkerStep],
    steps: Mapping[int, WorkerStep],
    workspace: Any,
    question: str,
    skip: set[str] | frozenset[str] = frozenset(),
    accepted: AcceptedVersions | None = None,
) -> list[StaleDecision]:
    """One decision per (step, name) stale read of the span under review."""
    intent = question_intent(question)
    out: list[StaleDecision] = []
    for step in span:
        for name, inputs in sorted((step.meta.get("stale_reads") or {}).items()):
            decision, evidence, revised = _decide_one(
                step, name, steps, workspace, intent, span, skip, accepted
            )
            out.append(
                StaleDecision(
                    step=step.index,
                    name=name,
                    inputs=revised or list(inputs),
                    decision=decision,
                    evidence=evidence,
                )
            )
    if accepted is not None and any(d.decision == "intended" for d in out):
        accepted.remember(
            getattr(workspace, "dataflow", None),
            {w for s in span for w in (s.meta.get("writes") or [])} | {d.name for d in out},
        )
    return out
