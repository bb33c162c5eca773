"""A state graph as Graphviz DOT, laid out and drawn to SVG by the `dot` binary at build time.

    svgs = render_svgs([to_dot(graph, prefix="a1")], dot="dot")    # one inline <svg> per graph

Nodes are states; their fill, border and shape say the status (committed, repaired,
invalidated, abandoned, rolled back) and the first label line spells it out. Edges are the
committed relations, from the upstream state to the state holding the relation, coloured and
labelled by type; Init relations start at a small "start" point. An abandoned draft's
proposed relations are drawn dotted and grey. Graphviz copies each element's `id` and `class`
into the SVG (`<g id="a1-S3" class="node state committed">`), which the page's script and the
tests use. Many graphs go through one `dot` process (dot reads a stream of graphs): starting
dot costs more than laying out a 35-state graph.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from eval.viewer.config import ViewerError
from eval.viewer.states import StateGraph, StateNode

__all__ = ["EDGE_STYLE", "NODE_STYLE", "find_dot", "rank_direction", "render_svgs", "to_dot"]

INSTALL = "install Graphviz: `apt-get install -y graphviz` (Debian/Ubuntu) or `brew install graphviz`"

NODE_STYLE: dict[str, dict[str, str]] = {
    "committed": {"fillcolor": "#dbeafe", "color": "#1e40af", "style": "filled", "shape": "box"},
    "repaired": {
        "fillcolor": "#dcfce7",
        "color": "#15803d",
        "style": "filled,bold",
        "shape": "box",
        "peripheries": "2",
    },
    "invalidated": {"fillcolor": "#fde68a", "color": "#b45309", "style": "filled,diagonals", "shape": "box"},
    "abandoned": {
        "fillcolor": "#e5e7eb",
        "color": "#6b7280",
        "style": "filled,dashed",
        "shape": "box",
        "fontcolor": "#4b5563",
    },
    "rolled-back": {"fillcolor": "#fecaca", "color": "#b91c1c", "style": "filled,dashed", "shape": "octagon"},
}
EDGE_STYLE: dict[str, dict[str, str]] = {
    "init": {"color": "#9ca3af", "style": "dotted", "arrowhead": "empty"},
    "progress": {"color": "#1f2937", "style": "solid", "arrowhead": "normal"},
    "branch": {"color": "#2563eb", "style": "dashed", "arrowhead": "normal"},
    "invalidate": {"color": "#dc2626", "style": "bold", "arrowhead": "tee", "penwidth": "2"},
    "combine": {"color": "#7c3aed", "style": "solid", "arrowhead": "odiamond", "penwidth": "1.6"},
}


def _q(text: str) -> str:
    """A DOT double-quoted string; a newline becomes a centred line break."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(values: dict[str, str]) -> str:
    return "[" + ", ".join(f"{k}={_q(v)}" for k, v in values.items()) + "]"


def _label(node: StateNode, chars: int) -> str:
    issue = " ".join(node.issue.split())
    issue = issue if len(issue) <= chars else issue[: chars - 1] + "…"
    status = " + ".join(s for s in node.statuses if s != "committed") or "committed"
    where = [f"turn {node.turn}"] if node.turn is not None else []
    if node.source != (None, None):
        where.append(f"steps {node.source[0]}-{node.source[1]}")
    return "\n".join([f"{node.id} · {status}", issue, " · ".join(where)]).strip()


def rank_direction(graph: StateGraph) -> str:
    """ "TB" for deep graphs (chains of Progress), "LR" for wide ones (many Branches from one state),
    so that the drawing stays closer to the page's shape than to a long strip."""
    level: dict[str, int] = {}
    ups: dict[str, list[str]] = {}
    for e in graph.edges:
        if e.up is not None:
            ups.setdefault(e.down, []).append(e.up)
    for node in graph.nodes:  # ids ascend and relations point to earlier states
        level[node.id] = 1 + max((level.get(u, 0) for u in ups.get(node.id, [])), default=0)
    if not level:
        return "TB"
    counts: dict[int, int] = {}
    for depth in level.values():
        counts[depth] = counts.get(depth, 0) + 1
    return "LR" if max(counts.values()) > max(counts) + 1 else "TB"


def to_dot(graph: StateGraph, prefix: str, *, label_chars: int = 42) -> str:
    """DOT text of one arm's state graph; element ids are prefixed so that several fit on a page."""
    lines = [
        f"digraph {_q(prefix)} {{",
        f'  graph [rankdir="{rank_direction(graph)}", nodesep="0.25", ranksep="0.35", fontname="Helvetica", '
        'bgcolor="transparent"];',
        '  node [fontname="Helvetica", fontsize="10", margin="0.12,0.05", width="2.4"];',
        '  edge [fontname="Helvetica", fontsize="8", arrowsize="0.7"];',
    ]
    if any(e.up is None for e in graph.edges):
        lines.append(
            f'  "start" [id={_q(prefix + "-start")}, class="start", shape="circle", label="start", '
            'fontsize="8", width="0.45", fixedsize="true", style="filled", fillcolor="#f3f4f6", '
            'color="#9ca3af"];'
        )
    for node in graph.nodes:
        style = dict(NODE_STYLE[node.primary])
        if "repaired" in node.statuses:
            style["peripheries"] = "2"
        classes = " ".join(["state", *node.statuses])
        attrs = {
            "id": f"{prefix}-{node.id}",
            "class": classes,
            "label": _label(node, label_chars),
            "tooltip": f"{node.id}: {node.issue[:200]}",
            **style,
        }
        lines.append(f"  {_q(node.id)} {_attrs(attrs)};")
    for i, edge in enumerate(graph.edges):
        style = dict(EDGE_STYLE.get(edge.type, EDGE_STYLE["progress"]))
        if edge.provisional:
            style.update(color="#9ca3af", style="dotted", fontcolor="#6b7280")
        kind = "provisional" if edge.provisional else "relation"
        attrs = {
            "id": f"{prefix}-edge{i}",
            "class": f"{kind} rel-{edge.type}",
            "label": edge.type,
            "tooltip": f"{edge.type}: {edge.up or 'start'} -> {edge.down}",
            "fontcolor": style["color"],
            **style,
        }
        lines.append(f"  {_q(edge.up or 'start')} -> {_q(edge.down)} {_attrs(attrs)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def find_dot(dot: str = "dot") -> str:
    path = shutil.which(dot)
    if path is None:
        raise ViewerError(
            f"Graphviz `{dot}` not found on PATH; the viewer lays out state graphs with it. {INSTALL}"
        )
    return path


_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def render_svgs(dots: list[str], *, dot: str = "dot", timeout_s: float = 120.0) -> list[str]:
    """Lay out every graph with one `dot -Tsvg` process; returns the <svg> elements, in order."""
    if not dots:
        return []
    binary = find_dot(dot)
    try:
        done = subprocess.run(
            [binary, "-Tsvg"],
            input="".join(dots),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ViewerError(f"`{binary} -Tsvg` ran over {timeout_s:.0f}s on {len(dots)} graph(s)") from None
    # Graphviz writes "-" as &#45; everywhere; plain hyphens keep ids greppable (a1-S3), same DOM
    svgs = [_COMMENT.sub("", m.group(0)).replace("&#45;", "-") for m in _SVG.finditer(done.stdout)]
    if done.returncode != 0 or len(svgs) != len(dots):
        raise ViewerError(
            f"`{binary} -Tsvg` failed (exit {done.returncode}, {len(svgs)}/{len(dots)} graphs): "
            f"{done.stderr.strip()[:500]}"
        )
    return svgs
