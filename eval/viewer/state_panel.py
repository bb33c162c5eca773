"""The panel shown when a state is clicked, and the lineage table of one variable.

    state_detail(node, prefix="a1", step_seq={4: 57}, value_chars=400)   # <section class="state-detail">
    lineage_table("revenue", rows, prefix="a1")

A state's panel lists its statuses, issue, constraints with the outcome of their executable
checks, versioned variables with values (stale versions marked), conclusions, relations,
source step interval (linked to those worker steps in the timeline), why it is invalid or
what it invalidated, and the evidence of every repair applied to it.
"""

from __future__ import annotations

from eval.viewer.html import Markup, el, join
from eval.viewer.states import LineageRow, StateNode, value_text

__all__ = ["lineage_table", "state_detail", "state_link"]


def state_link(sid: str | None, prefix: str) -> Markup:
    if not sid:
        return el("span", {"class": "start-ref"}, "start")
    return el("a", {"href": f"#{prefix}-{sid}", "class": "state-ref", "data-state": sid}, sid)


def _step_link(index: int | None, prefix: str, step_seq: dict[int, int]) -> Markup:
    if index is None:
        return el("span", None, "?")
    seq = step_seq.get(index)
    return (
        el("a", {"href": f"#{prefix}-e-{seq}", "class": "entry-ref"}, f"step {index}")
        if seq is not None
        else el("span", None, f"step {index}")
    )


def _constraints(node: StateNode) -> Markup:
    if not node.constraints:
        return el("p", {"class": "empty"}, "none")
    items = []
    for c in node.constraints:
        if c.code is None:
            check = el("span", {"class": "check none"}, "no executable check")
        elif c.passed is None:
            check = el(
                "span", {"class": "check none"}, "check not evaluated" + (f" ({c.error})" if c.error else "")
            )
        else:
            check = el(
                "span",
                {"class": f"check {'pass' if c.passed else 'fail'}"},
                "check passed" if c.passed else f"check failed: {c.error or ''}",
            )
        items.append(
            el("li", None, c.text, " ", check, el("pre", {"class": "code"}, c.code) if c.code else None)
        )
    return el("ul", {"class": "constraints"}, items)


def _variables(node: StateNode, limit: int) -> Markup:
    if not node.variables:
        return el("p", {"class": "empty"}, "none")
    rows = [
        el(
            "tr",
            {"class": "stale" if v.invalid else None, "data-var": v.name},
            el("td", None, el("code", None, f"{v.name}@{v.version}")),
            el("td", None, "defined here" if v.defined else "read", " · stale" if v.invalid else ""),
            el("td", None, el("pre", {"class": "value"}, value_text(v.value, limit))),
        )
        for v in node.variables
    ]
    return el(
        "table",
        {"class": "variables"},
        el(
            "thead",
            None,
            el("tr", None, el("th", None, "version"), el("th", None, "use"), el("th", None, "value")),
        ),
        el("tbody", None, rows),
    )


def _validity(node: StateNode, prefix: str) -> Markup:
    parts = []
    for by, root in node.invalid_because:
        parts.append(
            el(
                "li",
                None,
                "invalidated by ",
                state_link(by, prefix),
                "" if root == node.id else join(" (through ", state_link(root, prefix), ")"),
            )
        )
    if node.invalidates:
        parts.append(
            el(
                "li",
                None,
                "its Invalidate relations made stale: ",
                [join(state_link(s, prefix), " ") for s in node.invalidates],
            )
        )
    return el("ul", {"class": "validity"}, parts) if parts else el("p", {"class": "empty"}, "valid")


def _repairs(node: StateNode, prefix: str) -> Markup:
    if not node.repairs:
        return el("p", {"class": "empty"}, "no repair")
    items = []
    for r in node.repairs:
        items.append(
            el(
                "li",
                {"class": "repair-evidence"},
                el(
                    "div",
                    None,
                    el(
                        "a",
                        {"href": f"#{prefix}-e-{r.seq}", "class": "entry-ref"},
                        f"attempt {r.attempt} ({r.mode})",
                    ),
                ),
                el(
                    "div",
                    None,
                    el("strong", None, "evidence: "),
                    el("span", {"class": "evidence"}, r.evidence),
                ),
                el("div", None, el("strong", None, "affected: "), ", ".join(r.error_variables) or "—"),
                el("div", None, el("strong", None, "reason given to the worker: "), r.reasoning or "—"),
                el("div", None, el("strong", None, "deleted from the workspace: "), ", ".join(r.removed))
                if r.removed
                else None,
            )
        )
    return el("ol", {"class": "repairs"}, items)


def state_detail(node: StateNode, *, prefix: str, step_seq: dict[int, int], value_chars: int) -> Markup:
    badges = [el("span", {"class": f"badge s-{s}"}, s) for s in node.statuses]
    start, end = node.source
    source = (
        join(_step_link(start, prefix, step_seq), " – ", _step_link(end, prefix, step_seq))
        if (start, end) != (None, None)
        else Markup("—")
    )
    relations = [
        el("li", None, el("span", {"class": f"rel rel-{kind}"}, kind), " ← ", state_link(up, prefix))
        for kind, up in node.relations
    ]
    facts = el(
        "dl",
        {"class": "facts"},
        el("dt", None, "turn"),
        el("dd", None, "—" if node.turn is None else str(node.turn)),
        el("dt", None, "source steps"),
        el("dd", {"class": "source"}, source),
        el("dt", None, "checkpoint"),
        el("dd", None, node.checkpoint or "—"),
        el("dt", None, "in the trace"),
        el(
            "dd",
            None,
            el("a", {"href": f"#{prefix}-e-{node.opened_seq}", "class": "entry-ref"}, "opened")
            if node.opened_seq is not None
            else "—",
        ),
    )
    return el(
        "section",
        {"class": "state-detail", "id": f"{prefix}-detail-{node.id}", "data-state": node.id, "hidden": True},
        el("h3", None, node.id, " ", badges),
        el("p", {"class": "issue"}, node.issue or "(no issue)"),
        facts,
        el("p", {"class": "notes"}, "; ".join(node.notes)) if node.notes else None,
        el("h4", None, "Constraints"),
        _constraints(node),
        el("h4", None, "Variables"),
        _variables(node, value_chars),
        el("h4", None, "Conclusions"),
        el("ul", None, [el("li", None, c) for c in node.conclusions])
        if node.conclusions
        else el("p", {"class": "empty"}, "none"),
        el("h4", None, "Relations"),
        el("ul", {"class": "relations"}, relations),
        el("h4", None, "Validity"),
        _validity(node, prefix),
        el("h4", None, "Repairs"),
        _repairs(node, prefix),
    )


def lineage_table(name: str, rows: list[LineageRow], *, prefix: str, value_chars: int) -> Markup:
    body = [
        el(
            "tr",
            {"class": "stale" if r.invalid else None},
            el("td", None, el("code", None, r.version)),
            el("td", None, state_link(r.version.rsplit("@", 1)[-1], prefix)),
            el("td", None, [join(state_link(s, prefix), " ") for s in r.read_by] or "—"),
            el("td", None, "stale" if r.invalid else "valid"),
            el("td", None, el("pre", {"class": "value"}, value_text(r.value, value_chars))),
        )
        for r in rows
    ]
    return el(
        "table",
        {"class": "lineage", "data-var": name, "hidden": True},
        el("caption", None, f"lineage of {name}: every committed version, oldest first"),
        el(
            "thead",
            None,
            el(
                "tr",
                None,
                [el("th", None, h) for h in ("version", "defined by", "read by", "validity", "value")],
            ),
        ),
        el("tbody", None, body),
    )
