"""What one rollout's trace says about repairs, destruction and the worker's mistakes.

    facts = arm_facts(Path(result.run_dir) / "trace.jsonl", answers=result.answers)

* every accepted REPAIR: the turn whose state it reviewed, its error variables, the check that
  fired (the `[check]` prefix of its evidence), its reason, and whether it was heavy (deleted
  workspace variables);
* destructive actions: variable deletions (heavy repairs that removed something), rollbacks and
  abandoned states;
* the worker's side: which fault took effect at which turn (`meta.fault`), the variables it
  touched (what the faulty turn wrote, what a block that raised was to write, what a stale fault
  left unrecomputed, the fields it reported), faults that could not take effect (`meta.fault_skipped`), turns the worker
  recomputed after a hint (`purpose=recompute`) and answers it changed after a false alarm
  (`meta.flip`);
* the manager's decision on every stale read the workspace recorded (`stale_decision` events):
  the last decision per (step, variable), counted by kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from stateguard.actions import RepairArgs
from stateguard.artifacts.events import StateOpenedEvent, StateUpdatedEvent
from stateguard.dataflow import cell_dataflow
from stateguard.trace import TraceEvent, read_trace
from stateguard.trace_payloads import action_args, draft_of

__all__ = ["ArmFacts", "FaultFacts", "RepairFact", "arm_facts", "facts_from_events"]

_CHECK = re.compile(r"^\s*\[(?P<check>[\w-]+)\]")
_STEP = re.compile(r"\bstep (\d+)\b")


class RepairFact(BaseModel):
    turn: int | None
    state_id: str | None = None
    variables: list[str]
    check: str = ""
    reason: str = ""

    def key(self) -> tuple[int | None, tuple[str, ...], str]:
        """What makes two repairs 'the same repair' across variants of one task."""
        return self.turn, tuple(sorted(self.variables)), self.check


class FaultFacts(BaseModel):
    label: str
    turn: int
    variables: list[str] = Field(default_factory=list)
    recomputed: bool = False  # the worker redid this turn after a hint


class ArmFacts(BaseModel):
    repairs: list[RepairFact] = Field(default_factory=list)
    deletions: int = Field(default=0, description="Heavy repairs that removed workspace variables.")
    deleted_variables: list[str] = Field(default_factory=list)
    rollbacks: int = 0
    abandons: int = 0
    faults: list[FaultFacts] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list, description="Faults that could not take effect.")
    flipped_turns: list[int] = Field(default_factory=list, description="Answers changed after a false alarm.")
    turns: int = 0
    stale: dict[str, int] = Field(
        default_factory=dict,
        description="Recorded stale reads by the manager's last decision on each (finding, intended, "
        "unchanged, covered, superseded, undecided; stateguard/policies/staleness.py).",
    )

    @property
    def destructive(self) -> int:
        return self.deletions + self.rollbacks + self.abandons


def _fields(answer: Any) -> set[str]:
    return {str(k) for k in answer if k != "answer_type"} if isinstance(answer, dict) else set()


def facts_from_events(events: list[TraceEvent], answers: Mapping[Any, Any] | None = None) -> ArmFacts:
    facts = ArmFacts()
    turn_of_step: dict[int, int] = {}
    span_end: dict[str, int] = {}  # state id -> last source step of its draft
    current_turn: int | None = None
    faults: dict[int, FaultFacts] = {}
    recomputed: set[int] = set()
    answers = {int(k): v for k, v in (answers or {}).items()}
    turns: set[int] = set()
    repair_state: str | None = None
    stale: dict[tuple[int, str], str] = {}  # (step, name) -> the last decision on that read
    for event in events:
        if event.kind == "turn_start":
            current_turn = event.data.turn_id
            turns.add(current_turn)
        elif event.kind == "worker_step":
            meta = event.data.meta
            turn = event.data.turn
            if turn is None:
                continue
            turn_of_step[event.data.index] = turn
            purpose = meta.purpose
            if meta.fault and turn not in faults:
                faults[turn] = FaultFacts(label=meta.fault, turn=turn)
            if purpose == "faulty" and turn in faults:
                names = set(meta.writes) | set(meta.fault_dropped)
                if not event.data.success or event.data.error:  # what the block that raised was to produce
                    names |= set(cell_dataflow(event.data.action).writes)
                faults[turn].variables = sorted(set(faults[turn].variables) | names)
            if meta.fault_skipped:
                facts.skipped.append(f"{meta.fault_skipped} at turn {turn}")
            if purpose == "recompute":
                recomputed.add(turn)
            if meta.flip:
                facts.flipped_turns.append(turn)
        elif isinstance(event, StateUpdatedEvent | StateOpenedEvent):
            end_step = draft_of(event.data).source_step_end
            if end_step is not None and event.data.state_id:
                span_end[event.data.state_id] = end_step
        elif event.kind == "action" and event.data.name == "REPAIR" and event.data.accepted:
            args = action_args(event.data, RepairArgs)
            evidence = args.analytical_evidence if args else ""
            check = _CHECK.match(evidence)
            state = repair_state  # the harness emits its `repair` event just before the accepted action
            end = span_end.get(state or "")
            turn = turn_of_step.get(end, current_turn) if end is not None else current_turn
            cited = _STEP.search(evidence)
            if cited and int(cited.group(1)) in turn_of_step:  # the evidence names the step it is about
                turn = turn_of_step[int(cited.group(1))]
            facts.repairs.append(
                RepairFact(
                    turn=turn,
                    state_id=state,
                    variables=list(args.error_hint.error_variables) if args else [],
                    check=check.group("check") if check else "",
                    reason=args.error_hint.faulty_reasoning if args else "",
                )
            )
        elif event.kind == "repair":
            repair_state = event.data.state_id or None
            if event.data.removed:
                facts.deletions += 1
                facts.deleted_variables += [str(v) for v in event.data.removed]
        elif event.kind == "stale_decision":
            stale[(event.data.step, event.data.name)] = event.data.decision
        elif event.kind == "rollback":
            facts.rollbacks += 1
        elif event.kind == "state_abandoned":
            facts.abandons += 1
    for turn, fault in faults.items():
        fault.variables = sorted(set(fault.variables) | _fields(answers.get(turn)))
        fault.recomputed = turn in recomputed
    facts.faults = [faults[t] for t in sorted(faults)]
    facts.turns = len(turns)
    for decision in stale.values():
        facts.stale[decision] = facts.stale.get(decision, 0) + 1
    return facts


def arm_facts(trace: Path, answers: Mapping[Any, Any] | None = None) -> ArmFacts:
    """Facts of one rollout; a missing trace (a run that crashed before starting) has none."""
    return facts_from_events(read_trace(trace), answers) if trace.is_file() else ArmFacts()
