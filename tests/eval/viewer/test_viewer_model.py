"""What the viewer reads out of a run, without a browser: statuses, edges, timeline tags, SVG ids.

.venv/bin/python -m pytest -q tests/eval/viewer/test_viewer_model.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from eval.viewer.config import ViewerError
from eval.viewer.graph import render_svgs, to_dot
from eval.viewer.states import ReadOnlyStore, state_graph, value_text
from eval.viewer.timeline import timeline
from stateguard.trace import read_trace


def test_statuses_and_edges_of_the_demo_run(eval_run: Path) -> None:
    arm = eval_run / "tasks" / "six_turn_stale" / "stateguard"
    graph = state_graph(read_trace(arm / "trace.jsonl"), arm / "states.sqlite")
    status = {n.id: n.statuses for n in graph.nodes}
    assert status == {
        "S1": ["committed", "invalidated"],
        "S2": ["committed", "invalidated"],
        "S3": ["committed"],
        "S4": ["committed"],
        "S5": ["committed", "repaired"],
        "S6": ["committed"],
    }
    s1, s4 = graph.node("S1"), graph.node("S4")
    assert s1 is not None and s1.invalid_because == [("S4", "S1")]
    assert s4 is not None and s4.invalidates == ["S1", "S2"]
    assert [(e.up, e.down, e.type) for e in graph.edges if e.type == "invalidate"] == [
        ("S1", "S4", "invalidate")
    ]
    assert [v.version for v in graph.lineage["margin"]] == ["margin@S2", "margin@S5"]
    assert [v.invalid for v in graph.lineage["margin"]] == [True, False]
    s5 = graph.node("S5")
    assert (
        s5 is not None
        and s5.repairs[0].evidence.startswith("[staleness]")
        and s5.repairs[0].error_variables == ["margin"]
    )


def test_abandoned_rolled_back_and_rejected(handmade_run: tuple[Path, dict[str, str]]) -> None:
    root, facts = handmade_run
    arm = root / "tasks" / "handmade" / "stateguard"
    events = read_trace(arm / "trace.jsonl")
    graph = state_graph(events, arm / "states.sqlite")
    s2 = graph.node(facts["rolled_back"])
    assert s2 is not None and not s2.committed and s2.primary == "rolled-back"
    assert s2.statuses == ["rolled-back", "abandoned"] and len(s2.repairs) == 3
    assert [r.mode for r in s2.repairs] == ["light", "heavy", "heavy"]
    entries = timeline(events)
    rejected = [e for e in entries if "rejected" in e.tags]
    assert len(rejected) == 1 and rejected[0].verdict == "rejected"
    assert any(facts["feedback"] in text for _, text in rejected[0].body)
    assert {e.kind for e in entries if "repair" in e.tags} >= {"repair", "action"}
    assert [e.title for e in entries if e.kind == "turn"] == ["turn 1", "turn 2"]


def test_svg_carries_ids_and_classes(eval_run: Path) -> None:
    arm = eval_run / "tasks" / "six_turn_stale" / "stateguard"
    graph = state_graph(read_trace(arm / "trace.jsonl"), arm / "states.sqlite")
    (svg,) = render_svgs([to_dot(graph, "a7")])
    assert svg.startswith("<svg") and "<!--" not in svg
    nodes = re.findall(r'<g id="(a7-S\d+)" class="node state ([^"]*)"', svg)
    assert dict(nodes)["a7-S5"] == "committed repaired" and len(nodes) == 6
    assert len(re.findall(r'class="edge relation rel-', svg)) == sum(
        1 for e in graph.edges if not e.provisional
    )


def test_read_only_store_leaves_no_files_and_refuses_other_files(eval_run: Path, tmp_path: Path) -> None:
    arm = eval_run / "tasks" / "six_turn_stale" / "stateguard"
    before = sorted(p.name for p in arm.iterdir())
    store = ReadOnlyStore(arm / "states.sqlite")
    assert store.ids() == ["S1", "S2", "S3", "S4", "S5", "S6"]
    store.close()
    assert sorted(p.name for p in arm.iterdir()) == before
    bogus = tmp_path / "states.sqlite"
    bogus.write_text("not a database")
    with pytest.raises(ViewerError, match="not a StateGuard state store"):
        ReadOnlyStore(bogus)
    with pytest.raises(ViewerError, match="no state store"):
        ReadOnlyStore(tmp_path / "missing.sqlite")


def test_value_text_reads_value_summaries_typed() -> None:
    import pandas as pd

    from stateguard.sandbox.values import summary
    from stateguard.workspace import ValueSummary, summarize

    frame = pd.DataFrame({"x": [1, 2, 3]})
    recorded = summary(frame)  # what the sandbox's get_value hands a manager for a DataFrame
    assert list(recorded) == ["type", "shape", "head", "hash"]
    parsed = ValueSummary.of(recorded)
    assert parsed is not None and parsed.shape == [3, 1] and parsed.as_value() == recorded
    text = value_text(recorded, 400)
    assert text.startswith("DataFrame 3x1\n") and text.endswith(recorded["head"])
    # the rules manager's form (from the listing) has no head: shown as its JSON, as before
    listed = summarize("frame", frame).value_summary().as_value()
    assert list(listed) == ["type", "shape", "hash"] and ValueSummary.of(listed) is not None
    assert value_text(listed, 400).startswith('{"hash": ')
    # an analysis' own dict is not a summary, even with a `type` key
    own = {"type": "ratio", "value": 0.5}
    assert ValueSummary.of(own) is None and value_text(own, 400) == '{"type": "ratio", "value": 0.5}'
    assert ValueSummary.of({"type": "DataFrame", "head": "h", "rows": 3}) is None  # unknown field
