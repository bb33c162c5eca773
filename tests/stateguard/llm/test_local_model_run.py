"""Slow integration: the real local model (Qwen2.5-Coder 0.5B GGUF via llama-cpp-python, served by
`scripts/serve_local.py` with its default 4,096-token context), started once for this module.

* a plain chat completion round trip;
* the model as the `llm` manager with its default settings on the first two turns of the
  six-turn demo (scripted worker): the manager must discover the window and the tokenizer from
  the server, send no request the server refuses for size, decode every reply against the
  schema of the offered actions, and get a parseable, offered action from every answer.

Run with `make test-slow` after `make setup-local`. What a 0.5B model decides is not asserted
(docs/results/llm_managers.md reports it); what the manager makes of any answer is.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from stateguard.flows import LONGDS
from stateguard.llm.client import LLMClient
from stateguard.llm.endpoints import EndpointConfig
from stateguard.policies.llm_manager import LLMManager
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.trace import Trace, read_trace
from stateguard.workers import FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    pytest.importorskip("llama_cpp", reason="needs the llm-local extra: `make setup-local`")
    log = tmp_path_factory.mktemp("server") / "server.log"
    threads = os.environ.get("STATEGUARD_LOCAL_THREADS", "1")
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "scripts" / "serve_local.py"),
            "--model",
            "0.5b",
            "--port",
            "0",
            "--threads",
            threads,
            "--log",
            str(log),
            "--cache-dir",
            str(ROOT / ".venv" / "models"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the server child is cleaned up with it
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    seen: list[str] = []
    base_url = model = None
    try:
        deadline = time.monotonic() + 600
        while (base_url is None or model is None) and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1.0).strip()
            except queue.Empty:
                assert proc.poll() is None, "launcher exited early:\n" + "\n".join(seen)
                continue
            seen.append(line)
            if line.startswith("STATEGUARD_LOCAL_BASE_URL="):
                base_url = line.split("=", 1)[1]
            elif line.startswith("STATEGUARD_LOCAL_MODEL="):
                model = line.split("=", 1)[1]
        assert base_url and base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), seen
        assert model, seen
        yield base_url, model
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_real_server_answers_a_chat_completion_and_names_its_window(local_server: tuple[str, str]) -> None:
    base_url, model = local_server
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Say hello in one short sentence."}],
        "max_tokens": 24,
        "temperature": 0.0,
    }
    req = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        out = json.loads(resp.read())
    assert out["choices"][0]["message"]["content"].strip() and out["usage"]["completion_tokens"] > 0
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/props", timeout=30) as resp:
        props = json.loads(resp.read())
    assert props["n_ctx"] == 4096 and props["server"] == "llama-cpp-python"


def test_local_model_as_the_manager_fits_the_window_and_decodes_only_offered_actions(
    local_server: tuple[str, str], tmp_path: Path
) -> None:
    base_url, model = local_server
    full = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    task = Task(task_id="two_turn", turns=full.turns[:2], base_path=full.base_path)
    calls = Trace(tmp_path / "llm_calls.jsonl")
    # The manager's defaults; the timeouts are generous because this CPU may be shared.
    endpoint = EndpointConfig(
        role="manager", base_url=base_url, model=model, timeout_s=900, max_retries=0, temperature=0.0
    )
    manager = LLMManager(LLMClient(endpoint, trace=calls), task_time_cap_s=3600)
    start = time.monotonic()
    result = rollout(
        task,
        ScriptedWorker(FaultModel(), reference=task),
        DictWorkspace(),
        flow=LONGDS,
        manager=manager,
        run_dir=tmp_path / "run",
    )
    calls.close()
    assert manager.info is not None
    assert (manager.info.kind, manager.info.context_window, manager.info.tokenizer) == (
        "llama-cpp-python",
        4096,
        "llama-cpp-python",
    )
    usage = result.manager_usage
    events = [e.payload for e in read_trace(tmp_path / "llm_calls.jsonl")]
    report = {
        "wall_s": round(time.monotonic() - start, 1),
        "usage": usage,
        "committed": result.committed_states,
        "calls": [
            {
                k: e.get(k)
                for k in (
                    "outcome",
                    "prompt_mode",
                    "prompt_tokens",
                    "completion_tokens",
                    "latency_s",
                    "offered",
                )
            }
            for e in events
        ],
    }
    (ROOT / "runs").mkdir(exist_ok=True)
    (ROOT / "runs" / "local_model_report.json").write_text(json.dumps(report, indent=1, default=str))
    assert usage["rejected_for_size"] == 0 and usage["not_sent"] == 0 and usage["completions"] > 0
    assert usage["constrained_completions"] == usage["completions"]
    assert usage["valid_actions"] == usage["completions"] and usage["parse_failures"] == 0
    assert all(e["outcome"] == "completion" and e["constrained"] for e in events)
    assert all(e["prompt_tokens"] + 512 <= 4096 for e in events)  # the reply's room was kept
    assert result.committed_states, "no state committed: see runs/local_model_report.json"
