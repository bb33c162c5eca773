"""One arm's trace as a timeline: worker steps, manager activations, tool evidence, verdicts, hints.

    entries = timeline(read_trace(path), text_chars=4000)    # list[Entry], in trace order

Each entry keeps what the filters need: `tags` ("repair" for everything the repair schedule
did or caused, "rejected" for an action the harness refused), the variable names it touches
(for one variable's lineage) and the state it concerns. Hints are shown exactly as the worker
received them (`hint_delivered.text`); an action's verdict is shown with its feedback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stateguard.trace import TraceEvent

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


def _names(items: Any) -> set[str]:
    out = set()
    for item in items or []:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name:
            out.add(name.split("@")[0])
    return out


def _step(e: TraceEvent, turn: int | None, limit: int) -> Entry:
    d, meta = e.data, e.data.get("meta") or {}
    ok = bool(d.get("success", True)) and not d.get("error")
    entry = Entry(
        e.seq,
        d.get("turn", turn),
        "step",
        f"worker step {d.get('index')}: {_short(d.get('thought') or '', 70)}",
        "ok" if ok else "error",
    )
    entry.step = d.get("index")
    entry.body = [("code", _clip(d.get("action") or "", limit))]
    if d.get("output"):
        entry.body.append(("output", _clip(d["output"], limit)))
    if d.get("error"):
        entry.body.append(("error", _clip(d["error"], limit)))
    if meta.get("stale_reads"):
        entry.body.append(("stale reads", _clip(meta["stale_reads"], limit)))
    entry.variables = _names(meta.get("reads")) | _names(meta.get("writes"))
    if meta.get("purpose") == "recompute":
        entry.tags.add("repair")
    return entry


def _action(e: TraceEvent, turn: int | None, limit: int) -> Entry:
    d = e.data
    args = d.get("arguments") or {}
    name = d.get("name") or "unparsed action"
    accepted = bool(d.get("accepted"))
    entry = Entry(
        e.seq,
        turn,
        "action",
        f"{name}: {'applied' if accepted else 'rejected'}",
        "applied" if accepted else "rejected",
    )
    if d.get("feedback"):
        entry.body.append(("harness feedback", _clip(d["feedback"], limit)))
    if d.get("notes"):
        entry.body.append(("notes", _clip("\n".join(map(str, d["notes"])), limit)))
    if "stage_before" in d:
        entry.body.append(("stage", f"{d['stage_before']} -> {d.get('stage')}"))
    elif d.get("stage"):
        entry.body.append(("stage", str(d["stage"])))
    entry.body.append(("arguments", _clip(args, limit)))
    if not accepted:
        entry.tags.add("rejected")
    if name == "REPAIR":
        entry.tags.add("repair")
        entry.variables = _names((args.get("error_hint") or {}).get("error_variables"))
    elif name == "UPDATE_STATE":
        entry.variables = _names(args.get("used_variables"))
    return entry


def _hint(e: TraceEvent, turn: int | None, limit: int) -> Entry:
    hint = e.data.get("hint") or {}
    kind = hint.get("kind", "?")
    about = (
        ", ".join(s.get("id", "?") for s in hint.get("states") or [])
        if kind == "state"
        else ", ".join(hint.get("error_variables") or [])
    )
    entry = Entry(
        e.seq,
        turn,
        "hint",
        f"{kind} hint delivered to the worker ({about or 'nothing'})",
        state=hint.get("for_state"),
    )
    entry.body = [("as the worker received it", _clip(e.data.get("text", ""), limit))]
    if kind == "repair":
        entry.tags.add("repair")
        entry.variables = _names(hint.get("error_variables")) | _names(hint.get("removed_variables"))
    return entry


def _state_event(e: TraceEvent, turn: int | None, limit: int) -> Entry:
    d = e.data
    sid = d.get("state_id") or (d.get("state") or {}).get("id")
    if e.kind == "state_committed":
        state = d.get("state") or {}
        rels = ", ".join(
            f"{r['type']}<-{r.get('related_state_id') or 'start'}" for r in state.get("relations", [])
        )
        entry = Entry(e.seq, turn, "state", f"{sid} committed ({rels})", "ok", state=sid)
        entry.variables = _names(state.get("used_variables"))
        return entry
    if e.kind in ("state_opened", "state_updated"):
        draft = d.get("draft") or {}
        keys = [f"{v['name']}@{v.get('version') or sid}" for v in draft.get("used_variables") or []]
        verb = "opened" if e.kind == "state_opened" else "updated"
        entry = Entry(
            e.seq, turn, "state", f"{sid} {verb}: {_short(draft.get('issue') or '', 80)}", state=sid
        )
        if keys:
            entry.body.append(("variables", ", ".join(keys)))
        if d.get("notes"):
            entry.body.append(("notes", _clip("\n".join(map(str, d["notes"])), limit)))
        entry.variables = _names(draft.get("used_variables"))
        return entry
    if e.kind == "relations_finalized":
        rels = ", ".join(
            f"{r['type']}<-{r.get('related_state_id') or 'start'}" for r in d.get("relations", [])
        )
        return Entry(e.seq, turn, "state", f"{sid} relations ({d.get('mode')}): {rels}", state=sid)
    results = d.get("results") or []
    failed = [r for r in results if r.get("passed") is False]
    return Entry(
        e.seq,
        turn,
        "state",
        f"{sid} constraint checks: {len(results) - len(failed)} passed, {len(failed)} failed",
        "error" if failed else "ok",
        [("results", _clip(results, limit))],
        state=sid,
    )


def _repair_event(e: TraceEvent, turn: int | None, limit: int) -> Entry:
    d = e.data
    sid = d.get("state_id")
    if e.kind == "repair":
        entry = Entry(
            e.seq,
            turn,
            "repair",
            f"repair attempt {d.get('attempt')} ({d.get('mode')}) on {sid}",
            state=sid,
            tags={"repair"},
            body=[("evidence", _clip(d.get("evidence") or "", limit))],
        )
        if d.get("removed"):
            entry.body.append(("deleted from the workspace", ", ".join(d["removed"])))
            entry.variables = _names(d["removed"])
        return entry
    if e.kind == "rollback":
        return Entry(
            e.seq,
            turn,
            "repair",
            f"{sid} rolled back to checkpoint {d.get('checkpoint')}",
            "error",
            state=sid,
            tags={"repair"},
        )
    attempts = int(d.get("repair_attempts") or 0)
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
        d = e.data
        if e.kind == "turn_start":
            turn = d.get("turn_id")
            out.append(Entry(e.seq, turn, "turn", f"turn {turn}"))
        elif e.kind == "worker_step":
            out.append(_step(e, turn, text_chars))
        elif e.kind == "review":
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "review",
                    f"manager activation: {d.get('event')} (stage {d.get('stage')})"
                    + (", terminal" if d.get("terminal") else ""),
                )
            )
        elif e.kind == "tool":
            result = d.get("result") or {}
            ok = bool(result.get("ok"))
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "tool",
                    f"tool {d.get('name')}({_short(d.get('arguments') or {}, 60)})",
                    "ok" if ok else "error",
                    [("evidence", _clip(result.get("data") if ok else result.get("error"), text_chars))],
                )
            )
        elif e.kind == "action":
            out.append(_action(e, turn, text_chars))
        elif e.kind == "hint_delivered":
            out.append(_hint(e, turn, text_chars))
        elif e.kind in (
            "state_opened",
            "state_updated",
            "state_committed",
            "relations_finalized",
            "constraint_checks",
        ):
            out.append(_state_event(e, turn, text_chars))
        elif e.kind in ("repair", "rollback", "state_abandoned"):
            out.append(_repair_event(e, turn, text_chars))
        elif e.kind == "advice":
            hint = d.get("hint") or {}
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "hint",
                    f"advice queued ({', '.join(hint.get('error_variables') or [])})",
                    body=[("reason", _clip(hint.get("faulty_reasoning", ""), text_chars))],
                    tags={"repair"},
                    variables=_names(hint.get("error_variables")),
                )
            )
        elif e.kind == "run_start":
            out.append(
                Entry(
                    e.seq,
                    turn,
                    "note",
                    f"run start: {d.get('arm')} arm, manager {d.get('manager') or 'none'}",
                    body=[("flow", _clip(d.get("flow") or {}, text_chars))],
                )
            )
        else:  # degraded, run_end, manager_summary, answers, and kinds added later
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
