"""Honest accounting of model-backed managers in what a user reads: the demo's printout, the
runner's result files and summary table, and `make tables`' runtime table.

The manager endpoint is a scripted server (real HTTP on 127.0.0.1) that refuses, fails and
answers uselessly; the config's `llm:` block sets its timeouts. Real completions, refused and
failed requests, unusable answers and fallbacks must each be counted apart, and every surface
must warn when an activation ended in a fallback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from eval.demo import render
from eval.demo import run as run_demo
from eval.report import render_summary, summarize
from eval.results import ArmResult
from eval.tables import runtime
from stateguard.trace import Trace
from tests.support.scripted_server import Raw, Reply, ScriptedServer, Status

ROOT = Path(__file__).resolve().parents[2]


def _demo_cfg(tmp: Path, **overrides: object) -> Any:
    values = {
        "run_dir": str(tmp),
        "workspace": "dict",
        "llm.timeout_s": 2,
        "llm.call_deadline_s": 3,
        "llm.max_retries": 0,
        **overrides,
    }
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("demo", overrides=[f"{k}={v}" for k, v in values.items()])


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Any:
    def serve(script: list[Any]) -> ScriptedServer:
        server = ScriptedServer(script).start()
        monkeypatch.setenv("STATEGUARD_MANAGER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_MANAGER_MODEL", "scripted")
        return server

    return serve


def test_the_demo_counts_each_outcome_apart_and_warns_of_fallbacks(tmp_path: Path, endpoint: Any) -> None:
    # A failed call, then an unusable answer and a malformed reply: two endpoint failures in a row
    # stop the model tier for the task (max_failures=2); the rules tier decides the rest.
    server = endpoint(
        [Status(503, "busy"), Reply(content="looks fine to me"), Raw('{"choices": "nope"}')] * 30
    )
    try:
        result = run_demo(_demo_cfg(tmp_path, manager="hierarchical"))
    finally:
        server.close()
    usage = result.manager_usage
    # hierarchical keeps every rules decision: all turns right, the one repair, six states.
    assert all(result.stateguard.values()) and result.repairs == 1 and len(result.committed_states) == 6
    assert result.manager_calls == usage["completions"] == 1 and usage["parse_failures"] == 1
    assert usage["failed_requests"] == 2 and usage["malformed_replies"] == 1
    assert result.manager_fallbacks == usage["fallbacks"] >= 2
    text = render(result)
    assert "model: 1 real completions (0 constrained), 0 refused and 2 failed requests" in text
    assert f"WARNING: {result.manager_fallbacks} of" in text and "ended in a fallback" in text
    saved = json.loads((tmp_path / "stateguard" / "result.json").read_text())
    assert saved["manager_llm_calls"] == 1 and saved["manager_usage"]["failed_requests"] == 2
    calls = [
        json.loads(line)["data"]
        for line in (tmp_path / "stateguard" / "llm_calls.jsonl").read_text().splitlines()
    ]
    assert [c["outcome"] for c in calls] == ["failed", "completion", "failed"]


def test_a_clean_rules_demo_prints_no_model_lines(tmp_path: Path) -> None:
    text = render(run_demo(_demo_cfg(tmp_path)))
    assert "model:" not in text and "WARNING" not in text


def test_a_bad_llm_block_is_refused_before_anything_runs(tmp_path: Path, endpoint: Any) -> None:
    server = endpoint([])
    try:
        with pytest.raises(ValueError, match=r"llm\.prompt"):
            run_demo(_demo_cfg(tmp_path, manager="llm", **{"llm.prompt": "tiny"}))
        with pytest.raises(ValueError, match=r"llm\.timeout_s"):
            run_demo(_demo_cfg(tmp_path / "b", manager="llm", **{"llm.timeout_s": -1}))
        with pytest.raises(ValueError, match=r"worker_llm: block has unknown keys \['retries'\]"):
            run_demo(_demo_cfg(tmp_path / "c", **{"+worker_llm.retries": 3}))
    finally:
        server.close()
    assert server.requests == [] and not (tmp_path / "baseline").exists()  # refused before the first arm


def _result(tmp: Path, arm: str, task: str, **fields: Any) -> ArmResult:
    run_dir = tmp / task / arm
    trace = Trace(run_dir / "trace.jsonl")  # a minimal trace: the runtime table reads the review cadence
    trace.emit(
        "run_start",
        task_id=task,
        arm=arm,
        flow={"regime": "turn_aligned", "review_every": 3},
        manager=None if arm == "baseline" else "llm",
    )
    trace.close()
    return ArmResult(
        bench="b", task_id=task, arm=arm, correct={1: True, 2: False}, run_dir=str(run_dir), **fields
    )


def test_summary_and_runtime_table_keep_the_counters_apart(tmp_path: Path) -> None:
    usage = {
        "activations": 10,
        "completions": 6,
        "rejected_for_size": 1,
        "rejected_requests": 2,
        "failed_requests": 3,
        "parse_failures": 2,
        "illegal_actions": 1,
        "fallbacks": 4,
    }
    results = [
        _result(tmp_path, "baseline", "t1"),
        _result(tmp_path, "baseline", "t2"),
        _result(tmp_path, "llm", "t1", manager_calls=6, manager_fallbacks=4, manager_usage=usage),
        _result(tmp_path, "llm", "t2", manager_calls=6, manager_fallbacks=4, manager_usage=usage),
    ]
    summary = summarize(results, resamples=10)
    llm = next(a for a in summary.arms if a.arm == "llm")
    assert (llm.manager_calls, llm.refused_calls, llm.failed_calls, llm.unusable_outputs, llm.fallbacks) == (
        12,
        6,
        6,
        6,
        8,
    )
    text = render_summary(summary)
    assert "refused" in text and "fallbacks" in text
    assert "WARNING: llm: 8 manager activation(s) ended in a fallback" in text
    head, rows = runtime(results)
    row = dict(zip(head, next(r for r in rows if r[0] == "llm"), strict=True))
    assert row["manager calls/task (real completions)"] == "6.0" and row["refused requests/task"] == "3.0"
    assert (
        row["failed requests/task"] == "3.0"
        and row["unusable answers/task"] == "3.0"
        and row["fallbacks/task"] == "4.0"
    )


def _eval_cfg(tmp: Path, **overrides: object) -> Any:
    values = {"run_dir": str(tmp / "run"), "workspace": "dict", "progress": "false", **overrides}
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("eval", overrides=[f"{k}={v}" for k, v in values.items()])


def test_the_runner_refuses_a_bad_llm_block_as_a_config_error(tmp_path: Path) -> None:
    from eval.config import ConfigError
    from eval.runner import prepare

    with pytest.raises(ConfigError, match=r"llm\.prompt"):
        prepare(_eval_cfg(tmp_path, **{"llm.prompt": "tiny"}))
    with pytest.raises(ConfigError, match=r"worker_llm: block has unknown keys \['retries'\]"):
        prepare(_eval_cfg(tmp_path, **{"+worker_llm.retries": 3}))
    assert not (tmp_path / "run").exists()  # refused before the run folder was made


def test_call_policy_keys_may_change_on_resume_but_manager_knobs_may_not() -> None:
    from eval.config import changed_keys

    saved = {
        "llm": {"timeout_s": 300, "max_retries": 1, "call_deadline_s": 330, "prompt": "auto"},
        "worker_llm": {"timeout_s": 300},
    }
    slower = {
        "llm": {"timeout_s": 900, "max_retries": 3, "call_deadline_s": 1000, "prompt": "auto"},
        "worker_llm": {"timeout_s": 900},
    }
    assert changed_keys(saved, slower) == []
    shorter = {**slower, "llm": {**slower["llm"], "prompt": "short"}}
    assert changed_keys(saved, shorter) == ["llm.prompt: 'auto' -> 'short'"]


def test_a_run_without_a_model_manager_has_no_model_columns(tmp_path: Path) -> None:
    results = [_result(tmp_path, "baseline", "t1"), _result(tmp_path, "stateguard", "t1", repairs=1)]
    text = render_summary(summarize(results, resamples=10))
    head = text.splitlines()[2]
    assert "mgr calls" in head and "degraded" in head and "crashed" in head
    assert "refused" not in head and "fallbacks" not in head and "WARNING" not in text
