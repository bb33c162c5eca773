"""Honest reporting of an LLM worker that never ran (issue 34): degraded turns, warnings, options.

A run where every worker call failed used to print "repairs issued: 1; committed states: 6" and
"clean runs: 0 false repairs" with no warning, its turns `status ok`. The worker endpoint here is
a closed port, so every call fails at once.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from eval.components import make_worker, quiet_http_logs
from eval.demo import render
from eval.demo import run as run_demo
from eval.report import render_summary
from eval.results import read_results
from eval.runner import run as run_eval
from stateguard.trace import Trace
from tests.eval.test_faults_and_detection import FAULTS, _cfg, _layout

ROOT = Path(__file__).resolve().parents[2]
DEAD = ["worker_llm.timeout_s=1", "worker_llm.max_retries=0", "worker_llm.call_deadline_s=2"]


@pytest.fixture
def dead_worker_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "nobody")


def _demo_cfg(*overrides: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("demo", overrides=list(overrides))


def test_demo_with_a_dead_worker_reports_degraded_turns_and_repairs_nothing(
    tmp_path: Path, dead_worker_endpoint: None
) -> None:
    result = run_demo(_demo_cfg(f"run_dir={tmp_path}", "worker=llm", "workspace=dict", *DEAD))
    assert sorted(result.degraded_turns["baseline"]) == [1, 2, 3, 4, 5, 6]
    assert sorted(result.degraded_turns["stateguard"]) == [1, 2, 3, 4, 5, 6]
    assert "model call" in result.degraded_turns["baseline"][1]
    assert result.repairs == 0  # a failed model call is no evidence against a state
    text = render(result)
    assert "WARNING: baseline: 6 of 6 turns ran no worker code" in text
    assert "answers parsed (a dict of fields): baseline 0/6, +StateGuard 0/6" in text


def test_eval_with_a_dead_worker_counts_degraded_turns_in_summary_and_detection(
    tmp_path: Path, dead_worker_endpoint: None
) -> None:
    cfg = _cfg(
        _layout(tmp_path / "ds", FAULTS),
        tmp_path / "run",
        "worker=llm",
        "bench.variants=[clean,stale-t5]",
        *DEAD,
    )
    summary = run_eval(cfg)
    results = read_results(tmp_path / "run")
    assert results and all(r.status == "degraded" and len(r.degraded_turns) == 6 for r in results)
    assert all(a.degraded_turns == 6 for a in summary.arms)  # the fault variant's 6 turns per arm
    text = render_summary(summary)
    assert "WARNING: baseline: 6 of 6 scored turn(s) ran no worker code" in text
    assert "WARNING: 6 of those 6 clean turns ran no worker code" in text


def test_worker_llm_keys_are_declared() -> None:
    """Old: `worker_llm.temperature=0` failed unless written `+worker_llm.temperature=0`."""
    cfg = _demo_cfg("worker_llm.temperature=0", "worker_llm.max_tokens=256", "worker_llm.task_time_cap_s=600")
    assert cfg.worker_llm.temperature == 0 and cfg.worker_llm.task_time_cap_s == 600
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        assert compose("eval", overrides=["worker_llm.temperature=0"]).worker_llm.temperature == 0


def test_worker_llm_block_builds_the_worker_with_its_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "m")
    block = {"timeout_s": 5, "temperature": 0, "max_tokens": None, "task_time_cap_s": 90}
    worker = make_worker("llm", trace=Trace(), endpoint=block)
    assert worker.task_time_cap_s == 90 and worker.client.config.temperature == 0
    with pytest.raises(ValueError, match="task_time_cap_s"):
        make_worker("llm", trace=Trace(), endpoint={"task_time_cap_s": -1})


def test_http_request_logs_are_quiet() -> None:
    """Old: the openai client logged every request through `httpx2`, which was not silenced."""
    logging.getLogger("httpx2").setLevel(logging.INFO)
    quiet_http_logs()
    assert logging.getLogger("httpx2").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING


def test_task_ids_accept_the_readme_slash_form(tmp_path: Path) -> None:
    """Old: `task_ids=[demo/sales/task1]` (the dev README's form) was 'not in bench'."""
    cfg = _cfg(
        _layout(tmp_path / "ds", FAULTS),
        tmp_path / "run",
        "task_ids=[demo/sales/task1]",
        "bench.variants=[clean]",
    )
    run_eval(cfg)
    assert {r.task_id for r in read_results(tmp_path / "run")} == {"demo__sales__task1"}
