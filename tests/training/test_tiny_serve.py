"""End to end: the overfit tiny Qwen3 behind a real `transformers serve`, called through LLMClient.

The session fixture builds the model into a temporary directory, then starts
scripts/serve_tiny.py (which runs `transformers serve MODEL_DIR --host 127.0.0.1 --port P`) in its
own process group and waits, bounded, for the STATEGUARD_MANAGER_BASE_URL line it prints once
GET /health answers. Teardown ends that process group. About 20 s on 2 CPU cores
(model build ~5 s, server start ~9 s), so it is not marked slow.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="needs the train extra: pip install -e '.[dev,train]'")
pytest.importorskip("transformers", reason="needs the train extra: pip install -e '.[dev,train]'")
pytest.importorskip("fastapi", reason="needs the train extra: pip install -e '.[dev,train]'")

from stateguard.actions import ControlAction, tool_schemas  # noqa: E402
from stateguard.lifecycle import Regime  # noqa: E402
from stateguard.llm.client import LLMClient  # noqa: E402
from stateguard.llm.endpoints import EndpointConfig  # noqa: E402
from stateguard.parser import parse_response  # noqa: E402
from stateguard.policies.prompts import system_prompt  # noqa: E402
from stateguard.trace import Trace, read_trace  # noqa: E402
from training import tiny_model as tm  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 180.0
OBSERVATION = 'OBSERVATION\n{"event_type": "turn_start", "stage": "none", "legal_control_actions": ["OPEN_STATE", "ABSTAIN"]}'


@dataclass(frozen=True)
class Served:
    base_url: str
    model: str
    model_dir: Path
    log: Path


def _stop_group(proc: subprocess.Popen[str]) -> None:
    """End the launcher and its `transformers serve` child (one process group, started by us)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the server child too, if it outlived the launcher
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("tiny_serve")
    model_dir = tm.build_tiny_model(root / "tiny-qwen3", overfit_response=tm.DEFAULT_RESPONSE, seed=0)
    log = root / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    script = REPO / "scripts" / "serve_tiny.py"
    cmd = [sys.executable, str(script), "--port", "0", "--model-dir", str(model_dir), "--log", str(log)]
    cmd += ["--startup-timeout", str(STARTUP_TIMEOUT_S - 10)]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    found: dict[str, str] = {}
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while "STATEGUARD_MANAGER_MODEL" not in found:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else "(no server log)"
                said = "\n".join(seen[-20:])
                pytest.fail(
                    f"serve_tiny.py reported no ready server within {STARTUP_TIMEOUT_S:.0f}s:\n{said}\nlog:\n{tail}"
                )
            seen.append(line)
            key, sep, value = line.partition("=")
            if sep and key.startswith("STATEGUARD_MANAGER_"):
                found[key] = value
        yield Served(found["STATEGUARD_MANAGER_BASE_URL"], found["STATEGUARD_MANAGER_MODEL"], model_dir, log)
    finally:
        _stop_group(proc)


@pytest.fixture(scope="session")
def tokenizer(served: Served) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(served.model_dir)


def client_for(served: Served, trace: Trace | None = None) -> LLMClient:
    config = EndpointConfig(
        role="manager",
        base_url=served.base_url,
        model=served.model,
        temperature=0.0,
        max_tokens=64,
        timeout_s=60.0,
        max_retries=0,
    )
    return LLMClient(config, trace=trace)


def assert_single_abstain(message: dict[str, Any]) -> None:
    parsed = parse_response(message)
    assert len(parsed.actions) == 1, parsed.actions
    action = parsed.actions[0]
    assert action.is_control and action.name is ControlAction.ABSTAIN
    assert action.args.model_dump() == {"reason": "tiny"}


def test_manager_prompt_gets_the_overfit_tool_call(served: Served, tokenizer: Any, tmp_path: Path) -> None:
    assert served.base_url.startswith("http://127.0.0.1:") and served.base_url.endswith("/v1")
    messages = [
        {"role": "system", "content": system_prompt(Regime.TURN_ALIGNED)},
        {"role": "user", "content": OBSERVATION},
    ]
    tools = tool_schemas()
    trace = Trace(tmp_path / "trace.jsonl")
    with client_for(served, trace) as client:
        result = client.chat(messages, tools=tools)
    trace.close()
    assert_single_abstain(result.message)

    # transformers serve knows the qwen3 family: it parses <tool_call> blocks into native tool_calls
    assert len(result.tool_calls) == 1, result.message
    call = result.tool_calls[0]
    assert call["type"] == "function" and call["function"]["name"] == "ABSTAIN"
    assert json.loads(call["function"]["arguments"]) == {"reason": "tiny"}
    assert result.finish_reason == "tool_calls"
    assert "<tool_call>" in result.content  # our markup tokens are not special, so the text keeps them too

    # token accounting comes from the server and matches our own tokenizer exactly
    assert not result.usage.estimated
    assert result.usage.prompt_tokens == len(tm.prompt_ids(tokenizer, messages, tools))
    assert result.usage.completion_tokens == len(
        tokenizer.encode(tm.DEFAULT_RESPONSE, add_special_tokens=False)
    )
    assert result.usage.total_tokens == result.usage.prompt_tokens + result.usage.completion_tokens
    assert result.attempts == 1 and result.latency_s > 0
    assert result.model.startswith(served.model)  # the server answers with "<model dir>@main"
    (event,) = read_trace(tmp_path / "trace.jsonl")
    assert event.kind == "llm_call" and event.payload["error"] is None
    assert event.payload["prompt_tokens"] == result.usage.prompt_tokens
    assert event.payload["completion_tokens"] == result.usage.completion_tokens
    assert event.payload["usage_estimated"] is False and event.payload["finish_reason"] == "tool_calls"


def test_history_with_tool_call_and_tool_response_round_trips(served: Served, tokenizer: Any) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(Regime.SEGMENT_INDUCED, "freeform")},
        {"role": "user", "content": OBSERVATION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "load_state", "arguments": '{"state_id": "S1"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true, "state": "S1"}'},
    ]
    with client_for(served) as client:
        result = client.chat(messages, tools=tool_schemas())
    assert_single_abstain(result.message)
    # the server rendered the history with our template: same prompt length as a local render
    expected = tm.prompt_ids(tokenizer, messages, tool_schemas())
    assert result.usage.prompt_tokens == len(expected) and not result.usage.estimated
