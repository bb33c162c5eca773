"""Fault suite, reporting: a degraded rollout and a crashed one are never silent. Each shows in its
result file, summary.json, the printed summary, `make tables` and the viewer, with its reason; the
crashed one is not scored (left out of accuracy, DCR and the paired gain), not scored 0."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

import eval.runner as runner
from eval.report import render_summary
from eval.results import read_results
from eval.tables import render_tables
from eval.viewer import build_view
from stateguard.flows import LONGDS
from stateguard.policies.base import Degrade
from stateguard.rollout import rollout
from stateguard.task import load_task
from stateguard.workers import FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from synthesis.sources.tabular import is_installed
from synthesis.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]


class ScriptedDegradingManager:
    """A scripted stand-in for a manager that gives up at its first activation (as the LLM manager
    does when its endpoint keeps failing)."""

    name = "scripted-degrading"
    calls = 0

    def activate(self, obs: Any, ctx: Any) -> Iterator[Any]:
        yield Degrade(reason="scripted: the model endpoint kept failing")


def test_rollout_records_why_it_degraded(tmp_path: Path) -> None:
    task = load_task(ROOT / "eval/benchmarks/demo/six_turn")
    result = rollout(
        task,
        ScriptedWorker(FaultModel(seed=0), reference=task),
        DictWorkspace(),
        flow=LONGDS,
        manager=ScriptedDegradingManager(),
        run_dir=tmp_path / "sg",
    )
    assert result.degraded and result.degraded_reasons == [
        "manager degraded: scripted: the model endpoint kept failing"
    ]
    saved = json.loads((tmp_path / "sg" / "result.json").read_text())
    assert saved["degraded"] is True and saved["degraded_reasons"] == result.degraded_reasons


@pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")
def test_degraded_and_crashed_rollouts_show_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = tmp_path / "bench"
    a = build_task(bench, dataset="penguins", seed=4, turns=12, worker_faults=1).name
    b = build_task(bench, dataset="penguins", seed=11, turns=12, worker_faults=1).name
    real_workspace = runner.make_workspace

    def workspace(kind: str, data_dir: Path, arm_dir: Path, *rest: Any) -> Any:
        if arm_dir.parent.name == b and arm_dir.name == "baseline":
            raise RuntimeError("scripted: the workspace could not start")
        return real_workspace(kind, data_dir, arm_dir, *rest)

    monkeypatch.setattr(runner, "make_workspace", workspace)
    monkeypatch.setattr(runner, "make_manager", lambda kind, **_: ScriptedDegradingManager())
    run_dir = tmp_path / "run"
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose(
            "eval",
            overrides=[
                f"run_dir={run_dir}",
                f"bench.data_dir={bench}",
                "bench.verify=false",
                "workspace=dict",
                "workers=1",
                "progress=false",
                "bootstrap_resamples=100",
                "bench.variants=[shipped]",
            ],
        )
    assert runner.run_cli(cfg) == 1  # a crashed rollout: exit status 1
    printed = capsys.readouterr()
    assert "1 rollout(s) crashed and were not scored" in printed.err

    results = {(r.task_id, r.arm): r for r in read_results(run_dir)}
    crashed, degraded = results[(b, "baseline")], results[(a, "stateguard")]
    assert (
        crashed.status == "crashed"
        and crashed.correct == {}
        and "workspace could not start" in str(crashed.error)
    )
    assert degraded.status == "degraded" and degraded.degraded_reasons == [
        "manager degraded: scripted: the model endpoint kept failing"
    ]
    assert results[(a, "baseline")].status == "ok"

    summary = json.loads((run_dir / "summary.json").read_text())
    arms = {x["arm"]: x for x in summary["arms"]}
    assert arms["baseline"]["crashed"] == {b: "RuntimeError: scripted: the workspace could not start"}
    assert arms["baseline"]["turns_scored"] == 12  # b's 12 turns are left out, not counted wrong
    assert arms["stateguard"]["degraded_tasks"] == 2 and arms["stateguard"]["crashed_tasks"] == 0
    assert summary["gain"]["n_tasks"] == 1  # the pair with a crashed arm leaves the paired comparison
    base = results[(a, "baseline")]
    assert arms["baseline"]["accuracy"] == pytest.approx(sum(base.correct.values()) / len(base.correct))
    for text in (printed.out, render_summary(runner.summarize(list(results.values()), resamples=10))):
        assert "CRASHED baseline: 1 task(s) not scored" in text and f"  {b}: RuntimeError: scripted" in text
        assert "DEGRADED stateguard: 2 task(s) ran impaired" in text and "manager degraded: scripted" in text
        head = text.splitlines()[2]
        assert "degraded" in head and "crashed" in head

    render_tables([run_dir], run_dir / "tables", "scripted")
    rows = list(csv.reader((run_dir / "tables" / "problems.csv").open()))
    assert sorted(r[1:4] for r in rows[1:]) == sorted(
        [["baseline", b, "crashed"], ["stateguard", a, "degraded"], ["stateguard", b, "degraded"]]
    )
    ablation = list(csv.reader((run_dir / "tables" / "ablation.csv").open()))
    assert ablation[1][-2:] == ["0", "1"] and ablation[2][-2:] == ["2", "0"]

    report = build_view(run_dir, out=tmp_path / "view")
    index = report.index.read_text()
    assert "crashed, not scored: RuntimeError: scripted: the workspace could not start" in index
    assert f"degraded: {a} / stateguard: " in index and 'data-status="crashed"' in index
    page = next((tmp_path / "view" / "tasks").glob(f"{a}*.html")).read_text()
    assert "DEGRADED" in page and "the model endpoint kept failing" in page


def test_result_status_is_consistent_and_old_files_read_as_crashed() -> None:
    from eval.results import ArmResult

    base = {"bench": "synth", "task_id": "t", "arm": "baseline", "run_dir": "x"}
    old = ArmResult.model_validate(
        {**base, "correct": {1: False, 2: False}, "error": "boom"}
    )  # before `status`
    assert old.status == "crashed" and old.correct == {}  # not scored, rather than 2 wrong turns
    assert ArmResult.model_validate({**base, "correct": {1: True}, "degraded": True}).status == "degraded"
    with pytest.raises(ValueError, match="a crashed result, and only it, carries an error"):
        ArmResult.model_validate({**base, "status": "ok", "correct": {}, "error": "boom"})
    with pytest.raises(ValueError, match="a crashed result has no verdicts"):
        ArmResult.model_validate({**base, "status": "crashed", "correct": {1: False}, "error": "boom"})
