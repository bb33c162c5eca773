"""One arm's trace as a timeline: worker steps, manager activations, tool evidence, verdicts, hints.

    entries = timeline(read_trace(path), text_chars=4000)    # list[Entry], in trace order

Each entry keeps what the filters need: `tags` ("repair" for everything the repair schedule
did or caused, "rejected" for an action the harness refused), the variable names it touches
(for one variable's lineage) and the state it concerns. Hints are shown exactly as the worker
received them (`hint_delivered.text`); an action's verdict is shown with its feedback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from stateguard.actions import RepairArgs, UpdateStateArgs
from stateguard.artifacts.events import (
    ActionEvent,
    ConstraintChecksEvent,
    HintDeliveredEvent,
    RelationsFinalizedEvent,
    RepairEvent,
    RollbackEvent,
    StateAbandonedEvent,
    StateCommittedEvent,
    StateOpenedEvent,
    StateUpdatedEvent,
    WorkerStepEvent,
)
from stateguard.state import Relation
from stateguard.trace import TraceEvent
from stateguard.trace_payloads import action_args, draft_of

StateEvent = (
    StateOpenedEvent
    | StateUpdatedEvent
    | StateCommittedEvent
    | RelationsFinalizedEvent
    | ConstraintChecksEvent
)

__all__ = ["Entry", "timeline"]


@dataclass
class Entry:
    seq: int
    turn: int | None
    kind: str  # turn | step | review | tool | action | state | repair | hint | note
    title: str
    verdict: str | None = None  # applied | rejected | ok | error
    body: list[tuple[str, str]] = field(default_factory=list)  # (label, preformatted text)
    tags: set[str] = field(default_factory=set)
    variables: set[str] = field(default_factory=set)
    state: str | None = None
    step: int | None = None  # the worker step index, for links from a state's source interval


def _clip(text: Any, limit: int) -> str:
    # compact JSON: json.dumps(indent=...) runs the pure-Python encoder, 10x slower on big payloads
    text = text if isinstance(text, str) else json.dumps(text, default=str, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[:limit]}\n… ({len(text) - limit} more characters)"


def _short(value: Any, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _names(items: Iterable[str]) -> set[str]:
    return {name.split("@")[0] for name in items if name}


def _payload(data: BaseModel) -> dict[str, Any]:
    """An event payload as it was written (fields the writer set), for the raw-data panels."""
    return data.model_dump(mode="json", exclude_unset=True)


def _step(e: WorkerStepEvent, turn: int | None, limit: int) -> Entry:
    d, meta = e.data, e.data.meta
    ok = d.success and not d.error
    entry = Entry(
        e.seq,
        d.turn if d.turn is not None else turn,
        "step",
        f"worker step {d.index}: {_short(d.thought, 70)}",
        "ok" if ok else "error",
    )
    entry.step = d.index
    entry.body = [("code", _clip(d.action, limit))]
    if d.output:
        entry.body.append(("output", _clip(d.output, limit)))
    if d.error:
        entry.body.append(("error", _clip(d.error, limit)))
    if meta.value is not None:
        entry.body.append(("value", _clip(meta.value, limit)))
    if meta.stale_reads:
        entry.body.append(("stale reads", _clip(meta.stale_reads, limit)))
    entry.variables = _names(meta.reads) | _names(meta.writes)
    if meta.purpose == "recompute":
        entry.tags.add("repair")
    return entry


def _action(e: ActionEvent, turn: int | None, limit: int) -> Entry:
    d = e.data
    name = d.name or "unparsed action"
    accepted = d.accepted
    entry = Entry(
        e.seq,
        turn,
        "action",
        f"{name}: {'applied' if accepted else 'rejected'}",
        "applied" if accepted else "rejected",
    )
    if d.feedback:
        entry.body.append(("harness feedback", _clip(d.feedback, limit)))
    if d.notes:
        entry.body.append(("notes", _clip("\n".join(map(str, d.notes)), limit)))
    if d.stage_before is not None:
        entry.body.append(("stage", f"{d.stage_before} -> {d.stage}"))
    elif d.stage:
        entry.body.append(("stage", d.stage))
    entry.body.append(("arguments", _clip(d.arguments or {}, limit)))
    if not accepted:
        entry.tags.add("rejected")
    # the arguments are the action's own (stateguard.actions); a rejected one may not validate
    if name == "REPAIR":
        entry.tags.add("repair")
        repair = action_args(d, RepairArgs)
        entry.variables = _names(repair.error_hint.error_variables) if repair else set()
    elif name == "UPDATE_STATE":
        update = action_args(d, UpdateStateArgs)
        entry.variables = _names(v.name for v in update.used_variables) if update else set()
    return entry


def _hint(e: HintDeliveredEvent, turn: int | None, limit: int) -> Entry:
    hint = e.data.hint
    kind = hint.kind
    about = ", ".join(s.id for s in hint.states) if kind == "state" else ", ".join(hint.error_variables)
    entry = Entry(
        e.seq,
        turn,
        "hint",
        f"{kind} hint delivered to the worker ({about or 'nothing'})",
        state=hint.for_state,
    )
    entry.body = [("as the worker received it", _clip(e.data.text, limit))]
    if kind == "repair":
        entry.tags.add("repair")
        entry.variables = _names(hint.error_variables) | _names(hint.removed_variables)
    return entry


def _relations(relations: list[Relation]) -> str:
    return ", ".join(f"{r.type.value}<-{r.related_state_id or 'start'}" for r in relations)


def _state_event(e: StateEvent, turn: int | None, limit: int) -> Entry:
    if isinstance(e, StateCommittedEvent):
        state = e.data.state
        entry = Entry(
            e.seq,
            turn,
            "state",
            f"{state.id} committed ({_relations(state.relations)})",
            "ok",
            state=state.id,
        )
        entry.variables = _names([v.name for v in state.used_variables])
        return entry
    sid = e.data.state_id
    if isinstance(e, StateOpenedEvent | StateUpdatedEvent):
        draft = draft_of(e.data)
        keys = [f"{v.name}@{v.version or sid}" for v in draft.used_variables]
        verb = "opened" if e.kind == "state_opened" else "updated"
        entry = Entry(e.seq, turn, "state", f"{sid} {verb}: {_short(draft.issue, 80)}", state=sid)
        if keys:
            entry.body.append(("variables", ", ".join(keys)))
        if isinstance(e, StateUpdatedEvent) and e.data.notes:
            entry.body.append(("notes", _clip("\n".join(map(str, e.data.notes)), limit)))
        entry.variables = _names(v.name for v in draft.used_variables)
        return entry
    if isinstance(e, RelationsFinalizedEvent):
        return Entry(
            e.seq,
            turn,
            "state",
            f"{sid} relations ({e.data.mode}): {_relations(e.data.relations)}",
            state=sid,
        )
    results = [r.model_dump(mode="json") for r in e.data.results]
    failed = [r for r in e.data.results if r.passed is False]
    return Entry(
        e.seq,
        turn,
        "state",
        f"{sid} constraint checks: {len(results) - len(failed)} passed, {len(failed)} failed",
        "error" if failed else "ok",
        [("results", _clip(results, limit))],
        state=sid,
    )


def _repair_event(
    e: RepairEvent | RollbackEvent | StateAbandonedEvent, turn: int | None, limit: int
) -> Entry:
    sid = e.data.state_id
    if isinstance(e, RepairEvent):
        d = e.data
        entry = Entry(
            e.seq,
            turn,
            "repair",
            f"repair attempt {d.attempt} ({d.mode}) on {sid}",
            state=sid,
            tags={"repair"},
            body=[("evidence", _clip(d.evidence or "", limit))],
        )
        if d.removed:
            entry.body.append(("deleted from the workspace", ", ".join(map(str, d.removed))))
            entry.variables = _names(d.removed)
        return entry
    if isinstance(e, RollbackEvent):
        return Entry(
            e.seq,
            turn,
            "repair",
            f"{sid} rolled back to checkpoint {e.data.checkpoint}",
            "error",
            state=sid,
            tags={"repair"},
        )
    attempts = e.data.repair_attempts
    return Entry(
        e.seq,
        turn,
        "repair",
        f"{sid} abandoned after {attempts} repair attempt(s)",
        "error",
        state=sid,
        tags={"repair"} if attempts else set(),
    )


def timeline(events: list[TraceEvent], *, text_chars: int = 4000) -> list[Entry]:
    out: list[Entry] = []
    turn: int | None = None
    for e in events:
        if e.kind == "turn_start":
            turn = e.data.turn_id
            entry = Entry(e.seq, turn, "turn", f"turn {turn}")
            if e.data.question:
                entry.body.append(("question", _clip(e.data.question, text_chars)))
            out.append(entry)
        elif e.kind == "worker_step":
            out.append(_step(e, turn, text_chars))
        elif e.kind == "review":
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "review",
                    f"manager activation: {e.data.event} (stage {e.data.stage})"
                    + (", terminal" if e.data.terminal else ""),
                )
            )
        elif e.kind == "tool":
            result = e.data.result
            ok = result.ok
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "tool",
                    f"tool {e.data.name}({_short(e.data.arguments, 60)})",
                    "ok" if ok else "error",
                    [("evidence", _clip(result.data if ok else result.error, text_chars))],
                )
            )
        elif e.kind == "action":
            out.append(_action(e, turn, text_chars))
        elif e.kind == "hint_delivered":
            out.append(_hint(e, turn, text_chars))
        elif isinstance(e, StateEvent):
            out.append(_state_event(e, turn, text_chars))
        elif isinstance(e, RepairEvent | RollbackEvent | StateAbandonedEvent):
            out.append(_repair_event(e, turn, text_chars))
        elif e.kind == "advice":
            hint = e.data.hint
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "hint",
                    f"advice queued ({', '.join(hint.error_variables)})",
                    body=[("reason", _clip(hint.faulty_reasoning, text_chars))],
                    tags={"repair"},
                    variables=_names(hint.error_variables),
                )
            )
        elif e.kind == "stale_decision":
            stale = e.data
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "note",
                    f"stale read of {stale.name} at step {stale.step}: {stale.decision}",
                    "error" if stale.decision in ("finding", "undecided") else "ok",
                    [
                        ("evidence", _clip(stale.evidence, text_chars)),
                        ("redefined inputs", ", ".join(stale.inputs)),
                    ],
                    variables=_names([stale.name]),
                )
            )
        elif e.kind == "run_start":
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "note",
                    f"run start: {e.data.arm} arm, manager {e.data.manager or 'none'}",
                    body=[("flow", _clip(e.data.flow, text_chars))],
                )
            )
        else:  # degraded, run_end, manager_summary, answers, and kinds added later
            d = _payload(e.data)
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "note",
                    f"{e.kind.replace('_', ' ')}: {_short(d, 100)}",
                    "error" if e.kind == "degraded" else None,
                    [("data", _clip(d, text_chars))],
                )
            )
    return out
