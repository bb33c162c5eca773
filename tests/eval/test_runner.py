"""The evaluation runner: results per (task, arm), resume after SIGKILL, determinism, tables."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval.report import render_summary
from eval.results import read_results
from eval.runner import run
from eval.tables import render_tables
from synthesis.sources.tabular import is_installed
from synthesis.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    build_task(out, dataset="penguins", seed=11, turns=16, worker_faults=2)
    build_task(out, dataset="penguins", seed=4, turns=12, worker_faults=2)
    return out


def _cfg(bench_dir: Path, run_dir: Path, **over: object) -> DictConfig:
    overrides = [
        f"run_dir={run_dir}",
        f"bench.data_dir={bench_dir}",
        "bench.verify=false",
        "workspace=dict",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=200",
        "bench.variants=[shipped]",
    ] + [f"{k}={v}" for k, v in over.items()]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=overrides)


def _outcomes(run_dir: Path) -> dict[tuple[str, str], dict]:
    return {
        (r.task_id, r.arm): {"correct": r.correct, "answers": r.answers, "repairs": r.repairs}
        for r in read_results(run_dir)
    }


def test_both_arms_scored_per_turn_and_summarized(bench_dir: Path, tmp_path: Path) -> None:
    summary = run(_cfg(bench_dir, tmp_path / "a"))
    results = read_results(tmp_path / "a")
    assert sorted((r.task_id, r.arm) for r in results) == sorted(
        (t, a) for t in ("penguins_s11_t16", "penguins_s4_t12") for a in ("baseline", "stateguard")
    )
    faults = {
        t: json.loads((bench_dir / t / "hidden" / "faults.json").read_text()) for t in ("penguins_s11_t16",)
    }
    base = next(r for r in results if r.task_id == "penguins_s11_t16" and r.arm == "baseline")
    wrong = sorted(t for t, ok in base.correct.items() if not ok)
    planned = sorted(
        {f["turn"] for f in faults["penguins_s11_t16"]}
        | {c for f in faults["penguins_s11_t16"] for c in f["contaminates"]}
    )
    assert wrong == planned  # the baseline is wrong exactly where the shipped mistakes reach
    arms = {a.arm: a for a in summary.arms}
    assert arms["stateguard"].accuracy > arms["baseline"].accuracy and arms["stateguard"].repairs > 0
    assert arms["baseline"].dcr is not None and arms["baseline"].dcr > 0
    # post hoc review (the synth flow) stops contamination below a wrong, already answered turn
    assert arms["stateguard"].dcr is not None and arms["stateguard"].dcr < arms["baseline"].dcr
    n = sum(len(r.correct) for r in results if r.arm == "baseline")
    assert arms["baseline"].turns_scored == n == 28
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["bench"] == "synth"
    text = render_summary(summary)
    assert "baseline" in text and "accuracy gain" in text
    with pytest.raises(FileExistsError, match="resume=true"):
        run(_cfg(bench_dir, tmp_path / "a"))


def test_same_seed_same_results(bench_dir: Path, tmp_path: Path) -> None:
    run(_cfg(bench_dir, tmp_path / "x", limit=1))
    run(_cfg(bench_dir, tmp_path / "y", limit=1))
    assert _outcomes(tmp_path / "x") == _outcomes(tmp_path / "y")


def test_resume_after_sigkill_counts_every_pair_once(bench_dir: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    args = [
        sys.executable,
        "-m",
        "eval.runner",
        f"run_dir={run_dir}",
        f"bench.data_dir={bench_dir}",
        "bench.verify=false",
        "bench.variants=[shipped]",
        "workspace=dict",
        "workers=1",
        "progress=false",
        "bootstrap_resamples=50",
    ]
    proc = subprocess.Popen(
        args,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list((run_dir / "results").glob("*.json"))) < 1:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = sorted(p.name for p in (run_dir / "results").glob("*.json"))
    assert 1 <= len(before) < 4, before  # killed mid-run
    assert not list((run_dir / "results").glob("*.tmp*"))  # no half-written result
    run(_cfg(bench_dir, run_dir, resume="true"))
    after = sorted(p.name for p in (run_dir / "results").glob("*.json"))
    assert len(after) == 4 and set(before) <= set(after)
    clean = tmp_path / "clean"
    run(_cfg(bench_dir, clean))
    assert _outcomes(run_dir) == _outcomes(clean)


def test_tables_render_from_a_saved_run(bench_dir: Path, tmp_path: Path) -> None:
    summary = run(_cfg(bench_dir, tmp_path / "t"))
    written = render_tables([tmp_path / "t"], tmp_path / "t" / "tables", "scripted")
    names = {p.name for p in written}
    assert {
        "table1.md",
        "table1.csv",
        "ablation.md",
        "runtime.md",
        "states.md",
        "accuracy_vs_coverage.png",
        "engagement_by_difficulty.png",
    } <= names
    rows = (tmp_path / "t" / "tables" / "table1.csv").read_text().splitlines()
    arms = {a.arm: a for a in summary.arms}
    assert rows[1].split(",")[0] == "scripted" and rows[2].split(",")[0] == "+StateGuard"
    assert rows[1].split(",")[-2] == f"{100 * arms['baseline'].accuracy:.1f}"
    assert rows[2].split(",")[-2] == f"{100 * arms['stateguard'].accuracy:.1f}"
    assert (tmp_path / "t" / "tables" / "accuracy_vs_coverage.png").stat().st_size > 1000


def test_checkpoints_are_dropped_after_a_rollout_unless_kept(bench_dir: Path, tmp_path: Path) -> None:
    over = {"workspace": "sandbox", "limit": 1, "arms": "[stateguard]"}
    run(_cfg(bench_dir, tmp_path / "drop", **over))
    run(_cfg(bench_dir, tmp_path / "keep", keep_checkpoints="true", **over))
    dropped = list((tmp_path / "drop").rglob("checkpoints/*.pkl"))
    kept = list((tmp_path / "keep").rglob("checkpoints/*.pkl"))
    assert dropped == [] and len(kept) >= 2  # the start checkpoint and at least one per committed state
    assert list((tmp_path / "drop").rglob("checkpoints/.parts/*")) == []  # their parts go with them
    # what a reader of the run needs stays: results and the kernel's log
    assert [r.status for r in read_results(tmp_path / "drop")] == [
        r.status for r in read_results(tmp_path / "keep")
    ]
    assert list((tmp_path / "drop").rglob("checkpoints/kernel.stderr.log"))
