"""Synthesis exports in the viewer (variants of one parent side by side), and the benchmark's run stretcher.

.venv/bin/python -m pytest -q tests/eval/viewer/test_viewer_synthesis.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from viewer_support import make_synthesis_export

from eval.results import read_results
from eval.viewer import ViewerConfig, build_view
from eval.viewer.bench import fabricate, stretch
from eval.viewer.sources import load_run
from eval.viewer.states import ReadOnlyStore
from stateguard.trace import read_trace


def test_synthesis_variants_side_by_side(eval_run: Path, tmp_path: Path) -> None:
    export = make_synthesis_export(tmp_path / "synth", eval_run)
    run = load_run(export)  # the out_dir; its corpus/ is found
    assert run.kind == "synthesis" and run.reference == "clean"
    (task,) = run.tasks
    assert [a.name for a in task.arms] == ["clean", "repair-1", "auto-1"]
    assert [a.group for a in task.arms] == ["clean", "repair", "auto"]
    auto = task.arms[2]
    assert auto.result.correct[5] is False and auto.facts["kept"] == "no: autonomous_detection"
    assert (
        "filter_condition at turn 5 (margin_per_order): reuses the old margin"
        in task.arms[1].facts["intervention"]
    )
    report = build_view(export, out=tmp_path / "view", config=ViewerConfig(jobs=1))
    page = (report.out / "tasks" / "six_turn_stale.html").read_text(encoding="utf-8")
    assert re.search(r'<input type="checkbox" id="side-by-side" checked>', page)
    assert [m for m in re.findall(r'<section class="arm" id="(a\d)" data-arm="([^"]+)"', page)] == [
        ("a0", "clean"),
        ("a1", "repair-1"),
        ("a2", "auto-1"),
    ]
    assert re.findall(r'<th class="diverge">(\d+)</th>', page) == ["5", "6"]
    index = (report.out / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<tr data-bench="synthesis" data-arm="([^"]+)"', index) == ["auto", "clean", "repair"]


def test_stretch_keeps_the_store_consistent(eval_run: Path, tmp_path: Path) -> None:
    events = read_trace(eval_run / "tasks" / "six_turn_stale" / "stateguard" / "trace.jsonl")
    rows = stretch(events, 14)  # 6 turns replayed: 1-6, 7-12, 13-14
    assert [r["data"]["turn_id"] for r in rows if r["kind"] == "turn_start"] == list(range(1, 15))
    assert [r["seq"] for r in rows] == list(range(len(rows)))
    committed = [r["data"]["state"] for r in rows if r["kind"] == "state_committed"]
    assert [s["id"] for s in committed] == [f"S{i}" for i in range(1, 15)]
    assert committed[9]["relations"] == [
        {"related_state_id": "S7", "type": "invalidate"}
    ]  # S4 -> S1, shifted by 6
    run = fabricate(eval_run, tmp_path / "fab", tasks=3, turns=14)
    results = read_results(run)
    assert len(results) == 6 and all(len(r.correct) == 14 for r in results)
    store = ReadOnlyStore(run / "tasks" / results[-1].task_id / "stateguard" / "states.sqlite")
    assert len(store) == 14 and store.invalid_states() == [
        "S1",
        "S2",
        "S7",
        "S8",
    ]  # turns 13-14 never reach the revision
    store.close()
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert [a["arm"] for a in summary["arms"]] == ["baseline", "stateguard"]


def test_plain_rollout_folders(eval_run: Path, tmp_path: Path) -> None:
    """`python -m eval.demo` writes <run>/{baseline,stateguard}/: states and timelines, no verdicts."""
    run = load_run(eval_run / "tasks" / "six_turn_stale")
    assert run.kind == "rollouts"
    (task,) = run.tasks
    assert task.task_id == "six_turn_stale" and [a.name for a in task.arms] == ["baseline", "stateguard"]
    assert task.arms[1].result.repairs == 1 and task.arms[1].result.committed_states == 6
    report = build_view(
        eval_run / "tasks" / "six_turn_stale", out=tmp_path / "v", config=ViewerConfig(jobs=1)
    )
    assert report.states == 6 and not report.problems
