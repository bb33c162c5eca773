"""One task's page: per-turn verdicts of every arm, then per arm its state graph and timeline.

    html = task_page(run, task, [ArmView(source, graph, entries, svg), ...], value_chars=400)

Each arm is a section (`#a0`, `#a1`, ...) shown as a tab, or all next to each other with the
"side by side" switch (the default for synthesis variants). In a section: the Graphviz SVG
(click a state to open its panel), filters (only repairs, only rejected actions, one
variable's lineage: its versions, the states that define or read it, the entries that touch
it) and the timeline, grouped by turn, each entry expandable to its code, output, evidence,
verdict feedback or hint text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape

from eval.viewer.graph import EDGE_STYLE, NODE_STYLE
from eval.viewer.html import Markup, el, join, page
from eval.viewer.model import ArmSource, RunSource, TaskSource
from eval.viewer.overview import diverging_turns, verdict_class
from eval.viewer.state_panel import lineage_table, state_detail
from eval.viewer.states import StateGraph
from eval.viewer.timeline import Entry

__all__ = ["ArmView", "task_page"]


@dataclass
class ArmView:
    source: ArmSource
    graph: StateGraph
    entries: list[Entry]
    svg: str | None  # None when the arm committed no state and abandoned none (e.g. the baseline)


def _verdict_grid(run: RunSource, task: TaskSource) -> Markup:
    diverge = diverging_turns(task, run.reference)
    head = [el("th", None, "arm")] + [
        el("th", {"class": "diverge" if t in diverge else None}, str(t)) for t in task.turns
    ]
    rows = []
    for i, arm in enumerate(task.arms):
        cells = []
        for t in task.turns:
            value, present = arm.result.correct.get(t), t in arm.result.correct
            cls = verdict_class(value, present) + (" diverge" if t in diverge else "")
            cells.append(
                el(
                    "td",
                    {"class": cls, "data-turn": t},
                    el(
                        "a",
                        {"href": f"#a{i}-turn-{t}", "title": f"{arm.name}, turn {t}"},
                        {"ok": "✓", "wrong": "✗", "excluded": "–", "missing": " "}[
                            verdict_class(value, present)
                        ],
                    ),
                )
            )
        rows.append(
            el("tr", {"data-arm": arm.name}, el("th", None, el("a", {"href": f"#a{i}"}, arm.name)), cells)
        )
    return el(
        "table",
        {"class": "verdicts", "id": "verdicts"},
        el("thead", None, el("tr", None, head)),
        el("tbody", None, rows),
    )


def _legend() -> Markup:
    nodes = [
        el(
            "span",
            {
                "class": "swatch",
                "style": f"background:{s['fillcolor']};border-color:{s['color']}"
                + (";border-style:dashed" if "dashed" in s["style"] else "")
                + (";border-width:3px;border-style:double" if s.get("peripheries") else ""),
            },
            name,
        )
        for name, s in NODE_STYLE.items()
    ]
    edges = [
        el(
            "span",
            {"class": "edge-key", "style": f"color:{s['color']}"},
            {"dotted": "⋯", "dashed": "⇢", "bold": "⟞"}.get(s["style"], "→"),
            " ",
            name,
        )
        for name, s in EDGE_STYLE.items()
    ]
    zoom = el(
        "label", {"class": "zoom"}, el("input", {"type": "checkbox", "class": "f-zoom"}), " actual size"
    )
    return el("div", {"class": "legend"}, zoom, "states: ", nodes, el("br"), "relations: ", edges)


def _entry(e: Entry, prefix: str) -> str:
    """One timeline row. Written with f-strings rather than `el`: a 35-turn run has ~1,000 of them."""
    if e.kind == "turn":
        return (
            f'<li class="turn-head" id="{prefix}-turn-{e.turn}" data-turn="{e.turn}">{escape(e.title)}</li>'
        )
    cls = f"entry k-{e.kind}" + (f" v-{e.verdict}" if e.verdict else "")
    sid = escape(e.state or "")
    ref = f' <a href="#{prefix}-{sid}" class="state-ref" data-state="{sid}">{sid}</a>' if sid else ""
    head = (
        f'<span class="seq">#{e.seq}</span> <span class="kind k-{e.kind}">{e.kind}</span> '
        f'<span class="title">{escape(e.title)}</span>{ref}'
    )
    turn = "" if e.turn is None else e.turn
    state = f' data-state="{sid}"' if sid else ""
    tags, names = " ".join(sorted(e.tags)), escape(" ".join(sorted(e.variables)))
    attrs = (
        f'class="{cls}" id="{prefix}-e-{e.seq}" data-turn="{turn}"{state} '
        f'data-tags="{tags}" data-vars="{names}"'
    )
    if not e.body:
        return f'<li {attrs}><div class="line">{head}</div></li>'
    body = "".join(
        f'<div class="label">{escape(label)}</div><pre>{escape(text, quote=False)}</pre>'
        for label, text in e.body
    )
    return f'<li {attrs}><details><summary>{head}</summary><div class="body">{body}</div></details></li>'


def _filters(view: ArmView, prefix: str) -> Markup:
    names = sorted(set(view.graph.lineage) | {v for e in view.entries for v in e.variables})
    return el(
        "div",
        {"class": "filters"},
        el("label", None, el("input", {"type": "checkbox", "class": "f-repairs"}), " only repairs"),
        el("label", None, el("input", {"type": "checkbox", "class": "f-rejected"}), " only rejected actions"),
        el(
            "label",
            None,
            "variable lineage ",
            el(
                "select",
                {"class": "f-var", "id": f"{prefix}-var"},
                el("option", {"value": ""}, "(all variables)"),
                [
                    el("option", {"value": n}, n + ("" if n in view.graph.lineage else " (workspace only)"))
                    for n in names
                ],
            ),
        ),
        el("span", {"class": "f-count"}, ""),
    )


def _lineage_data(view: ArmView) -> str:
    data: dict[str, dict[str, list[str]]] = {}
    for node in view.graph.nodes:
        for v in node.variables:
            slot = data.setdefault(v.name, {"def": [], "read": []})
            slot["def" if v.defined else "read"].append(node.id)
    return json.dumps(data, sort_keys=True).replace("</", "<\\/")


def _arm_section(i: int, view: ArmView, value_chars: int) -> Markup:
    prefix, arm, r = f"a{i}", view.source, view.source.result
    scored = [v for v in r.correct.values() if v is not None]
    facts = [
        f"{sum(scored)}/{len(scored)} turns correct",
        f"{r.repairs} repairs",
        f"{r.manager_calls} manager calls",
        f"{len(view.graph.nodes)} states ({r.stale_states} stale)",
        f"{r.wall_s:.1f} s",
    ]
    if r.status == "crashed":
        facts.append("CRASHED: not scored")
    elif r.degraded:  # the reasons are in arm.facts (eval runs) or here (plain rollout folders)
        why = "; ".join(r.degraded_reasons) or "manager degraded"
        facts.append("DEGRADED" if "degraded" in arm.facts else f"DEGRADED: {why}")
    extra = [el("p", {"class": "fact"}, el("strong", None, f"{k}: "), v) for k, v in arm.facts.items()]
    step_seq = {e.step: e.seq for e in view.entries if e.step is not None}
    if view.svg is None:
        graph = el(
            "p",
            {"class": "empty"},
            "No states: this arm ran without a state manager (worker + harness)."
            if r.manager_calls == 0 and not view.graph.nodes
            else "No states were opened.",
        )
    else:
        graph = el("div", {"class": "svg-wrap"}, Markup(view.svg))
    panel = el(
        "aside",
        {"class": "state-panel"},
        el(
            "p",
            {"class": "placeholder"},
            "Click a state in the graph to see its issue, constraints, "
            "variables, conclusions, source steps and repair evidence.",
        ),
        [
            state_detail(n, prefix=prefix, step_seq=step_seq, value_chars=value_chars)
            for n in view.graph.nodes
        ],
    )
    lineages = [
        lineage_table(name, rows, prefix=prefix, value_chars=value_chars)
        for name, rows in sorted(view.graph.lineage.items())
    ]
    return el(
        "section",
        {"class": "arm", "id": prefix, "data-arm": arm.name},
        el("h2", None, arm.name, " ", el("span", {"class": "sub"}, " · ".join(facts))),
        extra,
        el("div", {"class": "graph-area"}, el("div", {"class": "graph-pane"}, _legend(), graph), panel),
        el("h3", None, "Timeline"),
        _filters(view, prefix),
        el("div", {"class": "lineages"}, lineages),
        el("script", {"type": "application/json", "class": "lineage-data"}, Markup(_lineage_data(view))),
        el("ol", {"class": "timeline"}, Markup("".join(_entry(e, prefix) for e in view.entries))),
    )


def _default_arm(run: RunSource, views: list[ArmView]) -> int:
    for i, v in enumerate(views):
        if v.source.name == "stateguard" or (run.kind == "synthesis" and v.source.name != run.reference):
            return i
    return next((i for i, v in enumerate(views) if v.svg is not None), 0)


def task_page(run: RunSource, task: TaskSource, views: list[ArmView], *, value_chars: int = 400) -> str:
    tabs = [
        el("button", {"type": "button", "class": "tab", "data-target": f"a{i}"}, v.source.name)
        for i, v in enumerate(views)
    ]
    body = join(
        el(
            "header",
            {"class": "top"},
            el("a", {"href": "../index.html"}, "← run overview"),
            " · ",
            el("strong", None, "StateGuard run viewer"),
            " · ",
            el("code", None, str(run.root)),
        ),
        el(
            "main",
            {"data-default-arm": f"a{_default_arm(run, views)}"},
            el("h1", None, task.task_id),
            el(
                "p",
                {"class": "sub"},
                f"{task.bench} · {len(task.turns)} turns · {len(task.arms)} "
                + ("variants of this parent task" if run.kind == "synthesis" else "arms"),
            ),
            el("h2", None, "Per-turn verdicts"),
            el(
                "p", {"class": "sub"}, f"highlighted columns: turns where an arm differs from {run.reference}"
            ),
            _verdict_grid(run, task),
            el(
                "nav",
                {"class": "tabs"},
                tabs,
                el(
                    "label",
                    {"class": "sbs"},
                    el(
                        "input",
                        {"type": "checkbox", "id": "side-by-side", "checked": run.kind == "synthesis"},
                    ),
                    " side by side",
                ),
            ),
            [_arm_section(i, v, value_chars) for i, v in enumerate(views)],
        ),
    )
    return page(f"{task.task_id} · StateGuard run", body, depth=1, body_class="task")
