"""The state graph of one arm: committed states from the store, abandoned drafts from the trace.

    graph = state_graph(events, store_path)      # StateGraph: nodes with statuses, typed edges, lineage

Statuses, each drawn differently: `committed`; `invalidated` (the store marks it stale:
`is_invalid`, with `why_invalid` naming the invalidating state); `repaired` (a REPAIR was
applied to it before it committed); `abandoned` (ABANDON_STATE, a discarded draft at the end of
the run, or a degraded manager dropping it); `rolled-back` (abandoned after the repair budget,
with the workspace restored to the last valid checkpoint). The store is opened read-only and
queried through StateStore's public methods.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.viewer.config import ViewerError
from stateguard.actions import RepairArgs
from stateguard.artifacts.events import DegradedEvent
from stateguard.state import ConstraintResult, Draft
from stateguard.store import StateStore, StoreError
from stateguard.trace import TraceEvent
from stateguard.trace_payloads import action_args, draft_of
from stateguard.workspace import ValueSummary

__all__ = ["STATUSES", "Edge", "LineageRow", "ReadOnlyStore", "StateGraph", "StateNode", "state_graph"]

STATUSES = ("committed", "repaired", "invalidated", "abandoned", "rolled-back")


def ReadOnlyStore(path: str | Path) -> StateStore:  # noqa: N802 - kept as the viewer's name for it
    """`StateStore.open_read_only`, with its errors as ViewerError."""
    try:
        return StateStore.open_read_only(path)
    except StoreError as exc:
        raise ViewerError(str(exc)) from None


@dataclass
class ConstraintView:
    text: str
    code: str | None
    passed: bool | None = None  # None: no executable check, or it was not evaluated
    error: str | None = None


@dataclass
class VariableView:
    name: str
    version: str
    value: Any
    defined: bool  # produced by this state (version == its id), else read from an earlier one
    invalid: bool = False


@dataclass
class RepairView:
    seq: int
    attempt: int
    mode: str
    evidence: str
    removed: list[str]
    error_variables: list[str] = field(default_factory=list)
    reasoning: str = ""


@dataclass
class StateNode:
    id: str
    issue: str = ""
    turn: int | None = None
    committed: bool = False
    statuses: list[str] = field(default_factory=list)
    constraints: list[ConstraintView] = field(default_factory=list)
    variables: list[VariableView] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    relations: list[tuple[str, str | None]] = field(default_factory=list)  # (type, upstream id)
    source: tuple[int | None, int | None] = (None, None)
    checkpoint: str | None = None
    invalid_because: list[tuple[str, str]] = field(default_factory=list)  # (invalidating state, root)
    invalidates: list[str] = field(default_factory=list)
    repairs: list[RepairView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    opened_seq: int | None = None
    closed_seq: int | None = None

    @property
    def primary(self) -> str:
        """The status that picks the node's fill: the most consequential one."""
        for status in ("rolled-back", "abandoned", "invalidated", "repaired"):
            if status in self.statuses:
                return status
        return "committed"


@dataclass(frozen=True)
class Edge:
    up: str | None  # None: an Init relation (drawn from the graph's start point)
    down: str
    type: str
    provisional: bool = False  # an abandoned draft's proposed relation, not a committed one


@dataclass(frozen=True)
class LineageRow:
    version: str
    value: Any
    read_by: list[str]
    invalid: bool


@dataclass
class StateGraph:
    nodes: list[StateNode]
    edges: list[Edge]
    lineage: dict[str, list[LineageRow]]

    def node(self, sid: str) -> StateNode | None:
        return next((n for n in self.nodes if n.id == sid), None)


def _fill_from_draft(node: StateNode, draft: Draft) -> None:
    node.issue = draft.issue or node.issue
    node.constraints = [ConstraintView(c.text, c.code) for c in draft.constraints]
    node.variables = [
        VariableView(v.name, v.version or node.id, v.value, (v.version or node.id) == node.id)
        for v in draft.used_variables
    ]
    node.conclusions = [c.text for c in draft.conclusions]
    rels = draft.relations or draft.provisional_relations
    node.relations = [(r.type.value, r.related_state_id) for r in rels]
    node.source = (draft.source_step_start, draft.source_step_end)


def _walk_trace(events: list[TraceEvent]) -> tuple[dict[str, StateNode], dict[str, list[ConstraintResult]]]:
    """Per state id: what the trace says about it (opened, repaired, abandoned, rolled back)."""
    nodes: dict[str, StateNode] = {}
    checks: dict[str, list[ConstraintResult]] = {}
    turn: int | None = None
    pending_hint: dict[str, RepairView] = {}
    for e in events:
        if e.kind == "turn_start":
            turn = e.data.turn_id
        elif e.kind == "state_opened" and e.data.state_id:
            node = nodes.setdefault(e.data.state_id, StateNode(e.data.state_id, turn=turn, opened_seq=e.seq))
            _fill_from_draft(node, draft_of(e.data))
        elif e.kind == "state_updated" and e.data.state_id in nodes:
            _fill_from_draft(nodes[e.data.state_id], draft_of(e.data))
        elif e.kind == "constraint_checks" and e.data.state_id:
            checks[e.data.state_id] = list(e.data.results)
        elif e.kind == "repair" and e.data.state_id in nodes:
            view = RepairView(
                e.seq, e.data.attempt, e.data.mode, str(e.data.evidence or ""), list(e.data.removed)
            )
            nodes[e.data.state_id].repairs.append(view)
            pending_hint[e.data.state_id] = view
        elif e.kind == "action" and e.data.name == "REPAIR" and e.data.accepted:
            # the REPAIR action's own arguments (stateguard.actions), as the harness validated them
            args = action_args(e.data, RepairArgs)
            for view in pending_hint.values():
                view.error_variables = list(args.error_hint.error_variables) if args else []
                view.reasoning = args.error_hint.faulty_reasoning if args else ""
            pending_hint.clear()
        elif e.kind == "rollback" and e.data.state_id in nodes:
            nodes[e.data.state_id].statuses.append("rolled-back")
            nodes[e.data.state_id].notes.append(f"workspace rolled back to checkpoint {e.data.checkpoint}")
        elif e.kind == "state_abandoned" and e.data.state_id in nodes:
            node = nodes[e.data.state_id]
            node.statuses.append("abandoned")
            node.notes.append(f"abandoned after {e.data.repair_attempts} repair attempt(s)")
            node.closed_seq = e.seq
        elif e.kind in ("degraded", "run_end"):
            dropped = e.data.draft if isinstance(e, DegradedEvent) else e.data.discarded_draft
            if dropped in nodes and "abandoned" not in nodes[dropped].statuses:
                nodes[dropped].statuses.append("abandoned")
                nodes[dropped].notes.append(
                    "dropped: the manager degraded"
                    if e.kind == "degraded"
                    else "discarded: still a draft when the run ended"
                )
                nodes[dropped].closed_seq = e.seq
        elif e.kind == "state_committed" and e.data.state.id in nodes:
            nodes[e.data.state.id].closed_seq = e.seq
    return nodes, checks


def _apply_checks(node: StateNode, results: list[ConstraintResult]) -> None:
    by_text = {r.text: r for r in results}
    for c in node.constraints:
        if c.text in by_text:
            c.passed, c.error = by_text[c.text].passed, by_text[c.text].error


def state_graph(events: list[TraceEvent], store_path: Path | None) -> StateGraph:
    """Nodes in id order (committed and abandoned), committed relations, and variable lineages."""
    traced, checks = _walk_trace(events)
    nodes: dict[str, StateNode] = dict(traced)
    edges: list[Edge] = []
    lineage: dict[str, list[LineageRow]] = {}
    if store_path is not None and store_path.is_file():
        store = ReadOnlyStore(store_path)
        try:
            names: dict[str, None] = {}
            for sid in store.ids():
                state = store.load(sid)
                node = nodes.setdefault(sid, StateNode(sid))
                node.committed = True
                node.statuses = ["committed", *(s for s in node.statuses if s != "committed")]
                node.issue = state.issue
                node.constraints = [ConstraintView(c.text, c.code) for c in state.constraints]
                node.variables = [
                    VariableView(v.name, v.version, v.value, v.version == sid, store.is_invalid(v.key))
                    for v in state.used_variables
                ]
                node.conclusions = [c.text for c in state.conclusions]
                node.relations = [(r.type.value, r.related_state_id) for r in state.relations]
                node.source = (state.source_step_start, state.source_step_end)
                node.checkpoint = state.checkpoint_id
                if node.repairs:
                    node.statuses.append("repaired")
                if store.is_invalid(sid):
                    node.statuses.append("invalidated")
                    node.invalid_because = store.why_invalid(sid)
                node.invalidates = store.invalidated_by(sid).states
                edges += [Edge(r.related_state_id, sid, r.type.value) for r in state.relations]
                names.update(dict.fromkeys(v.name for v in state.used_variables))
            for name in names:
                lineage[name] = [
                    LineageRow(v.version, v.value, list(v.read_by), v.invalid)
                    for v in store.lineage(name).versions
                ]
        finally:
            store.close()
    for sid, results in checks.items():
        if sid in nodes:
            _apply_checks(nodes[sid], results)
    for node in nodes.values():
        if not node.committed:
            edges += [
                Edge(up, node.id, kind, provisional=True)
                for kind, up in node.relations
                if up is None or up in nodes
            ]
    ordered = sorted(nodes.values(), key=lambda n: int(n.id[1:]) if n.id[1:].isdigit() else 0)
    return StateGraph(ordered, edges, lineage)


def value_text(value: Any, limit: int) -> str:
    """A variable value as short text: DataFrame summaries by their type, shape and head."""
    summary = ValueSummary.of(value)
    if summary is not None and summary.head is not None:
        shape = summary.shape
        text = f"{summary.type}{' ' + 'x'.join(map(str, shape)) if shape else ''}\n{summary.head}"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"
