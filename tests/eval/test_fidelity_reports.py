"""The reports the paper has: task-macro gain next to micro (C.3), D.2's relation / hint / tool mix,
D.3's paired flips and manager-attributable regressions; unit tables, then a small real run."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from eval.metrics.paired import attribute, paired_flips, regressed_units
from eval.report import render_summary, summarize
from eval.results import ArmResult, read_results
from eval.runner import run
from eval.tables import main as tables_main
from stateguard.trace import Trace
from synthesis.sources.tabular import is_installed
from synthesis.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]


def result(task: str, arm: str, correct: dict[int, bool | None]) -> ArmResult:
    return ArmResult(bench="synth", task_id=task, arm=arm, correct=correct, run_dir="/nonexistent")


# ----------------------------------------------------------------------------- C.3 macro gain
def test_macro_gain_weighs_each_task_the_same() -> None:
    long = {t: t <= 5 for t in range(1, 11)}  # 5 of 10 right in both arms
    results = [
        result("A", "baseline", long),
        result("A", "stateguard", long),
        result("B", "baseline", {1: False, 2: False}),
        result("B", "stateguard", {1: True, 2: True}),
    ]
    summary = summarize(results, resamples=200)
    assert summary.gain is not None and summary.gain.observed_gain == pytest.approx(2 / 12)
    assert summary.macro_gain is not None and summary.macro_gain.observed_gain == pytest.approx(0.5)
    assert summary.macro_gain.n_tasks == 2 and summary.macro_gain.n_resamples == 200
    text = render_summary(summary)
    assert "accuracy gain (stateguard - baseline): +16.7 points" in text
    assert "task-macro gain (stateguard - baseline): +50.0 points" in text


# ----------------------------------------------------------------------------- D.3 flips
@pytest.mark.parametrize(
    ("base", "guard", "expected"),
    [
        (
            {"t": {1: False, 2: True, 3: True, 4: False}},
            {"t": {1: True, 2: False, 3: True, 4: False}},
            {"improved": 1, "regressed": 1, "stayed_right": 1, "stayed_wrong": 1, "tasks_unchanged": 1},
        ),
        (
            {"t": {1: None, 2: False}},
            {"t": {1: True, 2: None, 3: True}},
            {"units": 0, "excluded": 3, "tasks": 0},
        ),  # nothing scored in both arms
        (
            {"a": {1: False}, "b": {1: True, 2: True}, "only_base": {1: True}},
            {"a": {1: True}, "b": {1: True, 2: False}, "only_guard": {1: False}},
            {
                "units": 3,
                "improved": 1,
                "regressed": 1,
                "tasks": 2,
                "tasks_improved": 1,
                "tasks_decreased": 1,
            },
        ),
    ],
)
def test_paired_flips(base: Any, guard: Any, expected: dict[str, int]) -> None:
    flips = paired_flips(base, guard).model_dump()
    assert {k: flips[k] for k in expected} == expected


def test_manager_attribution_broad_and_strict() -> None:
    trace = Trace()

    def step(index: int, turn: int, reads: list[str]) -> None:
        trace.emit("worker_step", index=index, turn=turn, meta={"reads": reads})

    trace.emit("turn_start", turn_id=1)
    step(0, 1, [])
    trace.emit(
        "state_committed",
        state={
            "id": "S1",
            "issue": "revenue",
            "source_step_start": 0,
            "source_step_end": 0,
            "used_variables": [{"name": "revenue", "version": "S1"}],
        },
    )
    packed = {
        "kind": "state",
        "states": [{"id": "S1", "issue": "revenue", "variables": [], "conclusions": [], "relations": []}],
    }
    for turn, reads, hint in (
        (2, ["cost"], {"kind": "repair"}),
        (3, ["revenue"], packed),
        (4, ["cost"], packed),
        (5, ["revenue"], None),
    ):
        trace.emit("turn_start", turn_id=turn)
        if hint:
            trace.emit("hint_delivered", hint=hint, text="...")
        step(turn, turn, reads)
    correct = {1: False, 2: False, 3: False, 4: False, 5: False}
    broad, strict = attribute(trace.events(), regressed={2, 3, 4, 5}, correct=correct)
    assert broad == {2, 3, 4}  # turn 5 got nothing from the manager
    assert strict == {3}  # only turn 3 read a variable of the wrong upstream state it was handed
    assert attribute(trace.events(), regressed={3}, correct={**correct, 1: True}) == ({3}, set())
    assert regressed_units({1: True, 2: True, 3: None}, {1: False, 2: True, 3: False}) == {1}


# ----------------------------------------------------------------------------- a small real run
@pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")
def test_make_tables_shows_macro_gain_d2_mix_and_d3_flips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bench"
    build_task(bench, dataset="penguins", seed=11, turns=16, worker_faults=2)
    build_task(bench, dataset="penguins", seed=4, turns=12, worker_faults=2)
    overrides = [
        f"run_dir={tmp_path / 'run'}",
        f"bench.data_dir={bench}",
        "bench.verify=false",
        "workspace=dict",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=300",
    ]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        summary = run(compose("eval", overrides=overrides))
    assert tables_main([str(tmp_path / "run"), "--resamples", "300"]) == 0
    printed = capsys.readouterr().out
    assert "Accuracy gain, micro and task-macro (C.3)" in printed and "Paired flips (D.3)" in printed
    out = tmp_path / "run" / "tables"

    def rows(name: str) -> list[dict[str, str]]:
        return list(csv.DictReader((out / f"{name}.csv").open()))

    (gain,) = rows("gains")
    assert summary.gain is not None and summary.macro_gain is not None
    assert gain["micro gain (points)"] == f"{100 * summary.gain.observed_gain:+.2f}"
    assert gain["task-macro gain (points)"] == f"{100 * summary.macro_gain.observed_gain:+.2f}"
    assert (gain["arm"], gain["tasks"]) == ("stateguard", "2")
    results = read_results(tmp_path / "run")
    flips = paired_flips(
        {r.task_id: r.correct for r in results if r.arm == "baseline"},
        {r.task_id: r.correct for r in results if r.arm == "stateguard"},
    )
    (pair,) = rows("paired")
    assert (pair["wrong->right"], pair["right->wrong"], pair["paired units"]) == (
        str(flips.improved),
        str(flips.regressed),
        str(flips.units),
    )
    assert flips.improved > 0 and pair["net"] == f"{flips.net:+d}"
    assert pair["manager-attributable (broad)"].split()[0].isdigit()  # synth units are turns
    mix = rows("states_mix")
    kinds = {r["D.2"] for r in mix}
    assert kinds == {"relation", "hint", "tool"}
    relation_rows = [r for r in mix if r["D.2"] == "relation" and r["share"].endswith("% of relations")]
    assert relation_rows and abs(sum(float(r["share"].split("%")[0]) for r in relation_rows) - 100) < 0.5
    assert any(r["kind"] == "state" and r["D.2"] == "hint" for r in mix)
    assert any(r["kind"] == "any evidence tool" for r in mix)
