"""Slow integration: a real small model (Qwen2.5-Coder 0.5B GGUF via llama-cpp-python) as both
worker and manager on a 3-turn offline task, in both arms. Run with `make test-slow` after
`make setup-local`. It checks that the run completes, the trace is valid, and every manager
action was either applied or rejected with feedback — not that a 0.5B model analyses well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stateguard.flows import FlowConfig
from stateguard.llm.client import LLMClient
from stateguard.llm.endpoints import EndpointConfig
from stateguard.policies.llm_manager import LLMManager
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.trace import Trace, read_trace
from stateguard.workers.llm_worker import LLMWorker

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("llama_cpp", reason="needs the llm-local extra: `make setup-local`")
    log = tmp_path_factory.mktemp("server") / "server.log"
    threads = os.environ.get("STATEGUARD_LOCAL_THREADS", "2")
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "serve_local.py"), "--port", "0", "--threads", threads,
         "--ctx", "8192", "--log", str(log), "--cache-dir", str(ROOT / ".venv" / "models")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    base_url = None
    deadline = time.monotonic() + 600
    assert proc.stdout is not None
    while time.monotonic() < deadline and base_url is None:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        if line.startswith("STATEGUARD_LOCAL_BASE_URL="):
            base_url = line.strip().split("=", 1)[1]
    if base_url is None:
        proc.kill()
        pytest.fail(f"local model server did not start; log: {log.read_text()[-2000:] if log.exists() else ''}")
    yield base_url
    proc.terminate()
    proc.wait(timeout=30)


def test_local_model_as_worker_and_manager_in_both_arms(local_server: str, tmp_path: Path) -> None:
    full = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    task = Task(task_id="three_turn", turns=full.turns[:3], base_path=full.base_path)
    flow = FlowConfig(name="local-3", regime="turn_aligned", baseline_budget=3, stateguard_budget=3)
    calls = Trace(tmp_path / "llm_calls.jsonl")
    report = {}
    for arm in ("baseline", "stateguard"):
        def client(role: str) -> LLMClient:
            cfg = EndpointConfig(role=role, base_url=local_server, model="local", timeout_s=600, max_retries=1,
                                 temperature=0.0, max_tokens=200, concurrency=1)  # fmt: skip
            return LLMClient(cfg, trace=calls)

        manager = (LLMManager(client("manager"), max_actions=2, max_invalid=1, context_budget_tokens=4000, compact_tools=True)
                   if arm == "stateguard" else None)
        start = time.monotonic()
        from stateguard.sandbox import SandboxWorkspace

        arm_dir = tmp_path / arm
        with SandboxWorkspace(task_data_dir=Path(task.base_path) / "data", scratch_dir=arm_dir / "scratch",
                              checkpoint_dir=arm_dir / "checkpoints") as ws:  # fmt: skip
            result = rollout(task, LLMWorker(client("worker")), ws, flow=flow, manager=manager, run_dir=arm_dir / "run",
                             harness_config={"context_budget_tokens": 2000})
        report[arm] = {"wall_s": round(time.monotonic() - start, 1), "steps": result.worker_steps,
                       "activations": result.manager_activations, "answers": result.answers}  # fmt: skip
        events = read_trace(arm_dir / "run" / "trace.jsonl")  # parses and validates every event
        assert events[0].kind == "run_start" and events[-1].kind == "answers"
        for e in events:
            if e.kind == "action":
                assert e.data["accepted"] or e.data["feedback"], e.data
        if arm == "stateguard":
            assert result.manager_activations > 0
    llm = [e.data for e in read_trace(tmp_path / "llm_calls.jsonl") if e.data.get("error") is None]
    tokens = sum(d["completion_tokens"] or 0 for d in llm)
    seconds = sum(d["latency_s"] for d in llm)
    report["completion_tokens_per_s"] = round(tokens / seconds, 2) if seconds else None
    report["llm_calls"] = len(llm)
    (ROOT / "runs").mkdir(exist_ok=True)
    (ROOT / "runs" / "local_model_report.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report, indent=1, default=str))
