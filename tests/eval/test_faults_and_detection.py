"""Faults declared in a LongDS-layout task folder, and the detection report of the run.

The six-turn demo task gets a `faults.json` beside its task.json; the runner expands it into one
task per variant (clean + each declared mistake), and `summary.detection` reports recall per kind,
false repairs and destructive actions on the clean run, and accuracy against the baseline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from eval.benchmarks.variants import read_faults_file, select_variants
from eval.report import render_summary
from eval.results import read_results
from eval.runner import run
from eval.tables import render_tables
from stateguard.workers import Fault, FaultError

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "eval" / "benchmarks" / "demo" / "six_turn"
FAULTS = {
    "schema_version": 1,
    "variants": {
        "stale-t5": [{"kind": "stale", "turn": 5}],
        "precision-t2": [{"kind": "precision", "turn": 2, "decimals": 1}],
        "exec_error-t3": [{"kind": "exec_error", "turn": 3}],
        "agg-t3": [
            {
                "kind": "counterfactual",
                "turn": 3,
                "semantic": "aggregation_swap",
                "replace": [['sales.groupby("region").size()', 'sales.groupby("returned").size()']],
            }
        ],
    },
}


def _layout(root: Path, faults: object) -> Path:
    task_dir = root / "task" / "longds" / "demo" / "sales" / "task1"
    task_dir.mkdir(parents=True)
    shutil.copy(DEMO / "task.json", task_dir / "task.json")
    (task_dir / "faults.json").write_text(json.dumps(faults))
    shutil.copytree(DEMO / "data", root / "data" / "longds" / "demo" / "sales" / "task1" / "data")
    return root


def _cfg(data_dir: Path, run_dir: Path, *extra: str):  # type: ignore[no-untyped-def]
    overrides = [
        "bench=longds",
        f"bench.data_dir={data_dir}",
        f"run_dir={run_dir}",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=100",
        "bench.judge=fields",
        "workspace=dict",
        *extra,
    ]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=overrides)


def test_declared_faults_run_as_variants_and_the_report_counts_detection_and_harm(tmp_path: Path) -> None:
    summary = run(_cfg(_layout(tmp_path / "ds", FAULTS), tmp_path / "run"))
    results = read_results(tmp_path / "run")
    assert {r.variant for r in results} == {"clean", "stale-t5", "precision-t2", "exec_error-t3", "agg-t3"}
    assert {r.task_id for r in results if r.variant == "stale-t5"} == {"demo__sales__task1~stale-t5"}
    assert summary.scope == "fault variants" and summary.detection is not None
    section = summary.detection.sections[0]
    rows = {k.kind: k for k in section.kinds}
    for kind in ("stale", "precision", "exec_error"):  # the mechanically checkable kinds are all caught
        assert (rows[kind].faults, rows[kind].detected, rows[kind].lucky) == (1, 1, 0)
        assert rows[kind].acc_arm is not None and rows[kind].acc_baseline is not None
        assert rows[kind].acc_arm > rows[kind].acc_baseline
    assert (
        rows["counterfactual:aggregation_swap"].detected == 0
    )  # a clean-running θ' is not the rules' to see
    assert (
        rows["counterfactual:aggregation_swap"].acc_arm
        == rows["counterfactual:aggregation_swap"].acc_baseline
    )
    assert (section.clean_runs, section.clean_turns, section.false_repairs, section.destructive) == (
        1,
        6,
        0,
        0,
    )
    assert section.clean_acc_arm == section.clean_acc_baseline == 1.0
    text = render_summary(summary)
    assert "detection: stateguard vs baseline" in text and "0 false repairs in 6 turns" in text
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["detection"]["sections"][0]["false_repairs"] == 0
    written = render_tables([tmp_path / "run"], tmp_path / "tables", "scripted")
    assert tmp_path / "tables" / "detection.csv" in written
    rows = (tmp_path / "tables" / "detection.csv").read_text().splitlines()
    assert "stateguard,all,stale,1,1,100.0,0,1," in "\n".join(rows)


def test_a_fault_that_cannot_apply_stops_the_run_naming_it(tmp_path: Path) -> None:
    bad = {"variants": {"oops": [{"kind": "stale", "turn": 2}]}}
    with pytest.raises(
        FaultError, match=r"variant 'oops'.*stale at turn 2: nothing this turn recomputes is stale"
    ):
        run(_cfg(_layout(tmp_path / "ds", bad), tmp_path / "run"))
    assert not (tmp_path / "run" / "results").exists()


def test_faults_can_be_selected_and_overridden_from_the_command_line(tmp_path: Path) -> None:
    data = _layout(tmp_path / "ds", FAULTS)
    run(_cfg(data, tmp_path / "r1", "bench.variants=[clean,precision]", "arms=[baseline]"))
    assert {r.variant for r in read_results(tmp_path / "r1")} == {"clean", "precision-t2"}
    run(
        _cfg(
            data,
            tmp_path / "r2",
            "bench.faults=[{kind: exec_error, turn: 1}]",
            "bench.variants=[custom]",
            "arms=[baseline]",
        )
    )
    got = read_results(tmp_path / "r2")
    assert [(r.variant, r.faults) for r in got] == [("custom", [{"kind": "exec_error", "turn": 1}])]
    assert got[0].correct[1] is False


def test_faults_file_formats_and_errors(tmp_path: Path) -> None:
    synth_style = tmp_path / "synth.json"
    synth_style.write_text(json.dumps([{"turn": 2, "code": "x = 1", "kind": "numeric_parameter"}]))
    shipped = read_faults_file(synth_style).variants["shipped"]
    assert shipped == [Fault(kind="counterfactual", turn=2, code="x = 1", semantic="changed_threshold")]
    assert read_faults_file(tmp_path / "absent.json").variants == {}
    broken = tmp_path / "broken.json"
    broken.write_text('{"variants": {"v": [{"kind": "typo", "turn": 1}]}}')
    with pytest.raises(FaultError, match=r"broken.json: not a faults file"):
        read_faults_file(broken)
    declared = {
        "a": [Fault(kind="stale", turn=3)],
        "b": [Fault(kind="counterfactual", turn=2, code="x", semantic="join")],
    }
    assert list(select_variants(declared, {"variants": "all"})) == ["clean", "a", "b"]
    assert list(select_variants(declared, {"variants": ["counterfactual:join"]})) == ["b"]
    assert list(select_variants(declared, {"variants": ["clean", "stale"]})) == ["clean", "a"]
