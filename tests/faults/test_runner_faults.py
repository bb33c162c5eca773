"""Fault suite, eval runner: killed pool workers and runners, a job that keeps killing its worker,
damaged results files and a changed config on resume. 0 silent wrong results, 0 crashes of a run,
0 orphan processes; each problem named in results, summary and exit status."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval.config import ConfigError
from eval.results import ResultFileError, read_results
from eval.runner import run
from synthesis.sources.tabular import is_installed
from synthesis.tasks import build_task

ROOT = Path(__file__).resolve().parents[2]
REAPER = ROOT / "tests" / "support" / "reaper.py"
pytestmark = pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")
KILLER = "zz_kills_its_worker"


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    build_task(out, dataset="penguins", seed=11, turns=12, worker_faults=1)
    build_task(out, dataset="penguins", seed=4, turns=12, worker_faults=1)
    return out


@pytest.fixture(scope="module")
def killer_bench(bench_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two tasks plus one whose turn 2 kills the process it runs in (with workspace=dict: the
    pool worker), every time."""
    out = tmp_path_factory.mktemp("killer")
    for task in bench_dir.iterdir():
        shutil.copytree(task, out / task.name)
    shutil.copytree(bench_dir / "penguins_s4_t12", out / KILLER)
    spec = out / KILLER / "hidden" / "task.json"
    turns = json.loads(spec.read_text())
    turns[1]["code"] = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n\n" + turns[1]["code"]
    spec.write_text(json.dumps(turns))
    return out


def _args(bench: Path, run_dir: Path, **over: object) -> list[str]:
    base = {
        "run_dir": run_dir,
        "bench.data_dir": bench,
        "bench.verify": "false",
        "workspace": "dict",
        "workers": 1,
        "progress": "false",
        "bootstrap_resamples": 200,
        "bench.variants": "[shipped]",
    }
    return [f"{k}={v}" for k, v in {**base, **over}.items()]


def _cfg(bench: Path, run_dir: Path, **over: object) -> DictConfig:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=_args(bench, run_dir, **over))


def _runner(bench: Path, run_dir: Path, **over: object) -> list[str]:
    return [sys.executable, "-m", "eval.runner", *_args(bench, run_dir, **over)]


def _outcomes(run_dir: Path) -> dict[tuple[str, str], object]:
    return {(r.task_id, r.arm): (r.status, r.correct, r.answers) for r in read_results(run_dir)}


@pytest.fixture(scope="module")
def clean(bench_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], object]:
    run_dir = tmp_path_factory.mktemp("clean") / "run"
    run(_cfg(bench_dir, run_dir))
    return _outcomes(run_dir)


def _pool_workers(runner: int) -> list[int]:
    out = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == runner and b"spawn_main" in cmd:
            out.append(int(name))
    return out


def test_a_killed_pool_worker_has_its_job_retried(bench_dir: Path, tmp_path: Path, clean: dict) -> None:
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(
        _runner(bench_dir, run_dir, workers=2),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and not (
        len(_pool_workers(proc.pid)) == 2 and list(run_dir.glob("tasks/*/*/trace.jsonl"))
    ):
        time.sleep(0.05)
    victim = _pool_workers(proc.pid)[0]
    os.kill(victim, signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    results = read_results(run_dir)
    assert len(results) == 4 and all(r.status == "ok" for r in results)
    assert max(r.attempts for r in results) >= 2  # the job(s) in flight ran again
    assert _outcomes(run_dir) == clean  # and gave the same answers and verdicts as a clean run


def test_a_job_that_keeps_killing_its_worker_is_crashed_not_the_run(
    killer_bench: Path, tmp_path: Path, clean: dict
) -> None:
    run_dir = tmp_path / "run"
    command = _runner(killer_bench, run_dir, workers=2, job_retries=1, task_ids=f"[{KILLER},penguins_s4_t12]")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr  # a crashed rollout: exit status 1, named
    assert "2 rollout(s) crashed and were not scored" in done.stderr
    results = {(r.task_id, r.arm): r for r in read_results(run_dir)}
    for arm in ("baseline", "stateguard"):
        crashed = results[(KILLER, arm)]
        assert crashed.status == "crashed" and crashed.correct == {} and crashed.attempts == 2
        assert "its worker process died" in str(crashed.error) and "SIGKILL" in str(crashed.error)
    others = {k: (r.status, r.correct, r.answers) for k, r in results.items() if k[0] != KILLER}
    assert others == {
        k: v for k, v in clean.items() if k[0] == "penguins_s4_t12"
    }  # innocent jobs are unharmed
    summary = json.loads((run_dir / "summary.json").read_text())
    for arm in summary["arms"]:
        assert arm["crashed_tasks"] == 1 and list(arm["crashed"]) == [KILLER]
        assert arm["tasks"] == 2 and arm["turns_scored"] == 12  # the crashed task is not scored as wrong
    assert "CRASHED baseline: 1 task(s) not scored" in done.stdout and f"  {KILLER}: " in done.stdout


@pytest.mark.parametrize("sig", ["KILL", "TERM"])
def test_killing_the_runner_leaves_no_process_behind(bench_dir: Path, tmp_path: Path, sig: str) -> None:
    run_dir = tmp_path / "run"
    reaper = [
        sys.executable,
        str(REAPER),
        "--signal",
        sig,
        "--grace",
        "20",
        "--wait-for",
        str(run_dir / "tasks" / "*" / "*" / "trace.jsonl"),
        "--",
        *_runner(bench_dir, run_dir, workers=2, workspace="sandbox", limit=1),
    ]
    done = subprocess.run(reaper, cwd=ROOT, capture_output=True, text=True, timeout=400)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" not in report, report
    tree = report["tree_before"]
    assert sum("spawn_main" in p for p in tree) == 2 and any(
        "stateguard.sandbox.kernel" in p for p in tree
    ), tree
    assert report["survivors"] == [], report
    if sig == "TERM":
        assert report["rc"] == 128 + signal.SIGTERM  # it shut down in order
    run(
        _cfg(bench_dir, run_dir, resume="true", workers=2, workspace="sandbox", limit=1)
    )  # and the run resumes
    assert len(read_results(run_dir)) == 2


def test_a_truncated_results_file_is_named_moved_aside_and_rerun(
    bench_dir: Path, tmp_path: Path, clean: dict
) -> None:
    run_dir = tmp_path / "run"
    run(_cfg(bench_dir, run_dir))
    bad = run_dir / "results" / "penguins_s4_t12__stateguard.json"
    bad.write_bytes(bad.read_bytes()[:200])
    with pytest.raises(
        ResultFileError, match=r"penguins_s4_t12__stateguard\.json: not valid JSON.*resume=true"
    ):
        read_results(run_dir)
    summary = run(_cfg(bench_dir, run_dir, resume="true"))
    assert (run_dir / "results" / "invalid" / "penguins_s4_t12__stateguard.json.1").stat().st_size == 200
    assert any("penguins_s4_t12__stateguard.json" in n and "rerun" in n for n in summary.notes)
    assert _outcomes(run_dir) == clean


def test_resume_refuses_a_changed_config_unless_told(bench_dir: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run(_cfg(bench_dir, run_dir, limit=1))
    saved = (run_dir / "config.yaml").read_text()
    with pytest.raises(
        ConfigError,
        match=r"(?s)differs from the saved config\.yaml.*seed: 0 -> 3.*"
        r"resume_with_changed_config=true",
    ):
        run(_cfg(bench_dir, run_dir, resume="true", seed=3))
    run(_cfg(bench_dir, run_dir, resume="true", limit=2, workers=2))  # what to run and how: allowed
    assert len(read_results(run_dir)) == 4
    summary = run(_cfg(bench_dir, run_dir, resume="true", seed=3, resume_with_changed_config="true"))
    assert (run_dir / "config.yaml").read_text() == saved  # never overwritten
    assert len(list(run_dir.glob("config.resume-*.yaml"))) == 1
    assert any("seed: 0 -> 3" in n for n in summary.notes)
