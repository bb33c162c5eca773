"""The LLM endpoint client against a scripted OpenAI-compatible server on 127.0.0.1.

Covers the result shape (plain-dict messages, tool calls, reasoning, usage), the retry policy
(5xx, 429 with Retry-After, timeouts, a dead server: all bounded), non-retried 4xx and the
context-overflow error, the per-client concurrency limit, trace events, EndpointConfig.from_env
and the Hydra `endpoint/` config group.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from stateguard.actions import tool_schemas
from stateguard.lifecycle import ToolAction
from stateguard.llm import (
    ChatResult,
    ContextOverflow,
    EndpointConfig,
    EndpointConfigError,
    LLMClient,
    LLMError,
)
from stateguard.llm.client import estimate_tokens
from stateguard.parser import parse_response
from stateguard.trace import Trace
from tests.support.scripted_server import Delay, Die, Echo, Reply, ScriptedServer, Status

CONFIG_DIR = Path(__file__).resolve().parents[3] / "configs"
USER = [{"role": "user", "content": "how many rows are left"}]


class Sleeps:
    """Records the backoff delays instead of sleeping them."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_client(
    server: ScriptedServer, trace: Trace | None = None, sleep: Any = None, **fields: Any
) -> LLMClient:
    values: dict[str, Any] = {
        "role": "manager",
        "base_url": server.base_url,
        "model": "scripted-model",
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_s": 0.01,
        "backoff_max_s": 0.04,
    }
    values.update(fields)
    kwargs: dict[str, Any] = {"rng": random.Random(0)}
    if sleep is not None:
        kwargs["sleep"] = sleep
    return LLMClient(EndpointConfig(**values), trace=trace, **kwargs)


def llm_events(trace: Trace) -> list[dict[str, Any]]:
    return [e.payload for e in trace.events() if e.kind == "llm_call"]


# ----------------------------------------------------------------------------- success path


def test_completion_returns_plain_message_and_records_usage_in_trace() -> None:
    trace = Trace(None, clock=lambda: None)
    with ScriptedServer([Reply("3 rows remain", usage=(17, 5))]) as server:
        client = make_client(
            server,
            trace,
            api_key="sk-test",
            temperature=0.2,
            max_tokens=32,
            extra_body={"chat_template_kwargs": {"enable_thinking": False, "keep": 1}},
        )
        result = client.chat(
            USER, extra_body={"chat_template_kwargs": {"enable_thinking": True}}, top_k=20, seed=7
        )
        client.close()

    assert isinstance(result, ChatResult)
    assert result.message == {"role": "assistant", "content": "3 rows remain"}
    assert result.content == "3 rows remain" and result.tool_calls == []
    assert result.finish_reason == "stop"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (17, 5)
    assert result.usage.estimated is False and result.usage.total_tokens == 22
    assert result.attempts == 1
    assert 0 < result.latency_s < 5
    assert result.model == "scripted-model"

    sent = server.requests[0]
    assert sent["model"] == "scripted-model" and sent["messages"] == USER
    assert sent["temperature"] == 0.2 and sent["max_tokens"] == 32 and sent["seed"] == 7
    assert sent["top_k"] == 20  # unknown to the SDK: sent as an extra body field
    assert sent["chat_template_kwargs"] == {"enable_thinking": True, "keep": 1}  # per-call wins, merged
    assert "tools" not in sent and "tool_choice" not in sent
    assert {k.lower(): v for k, v in server.headers[0].items()}["authorization"] == "Bearer sk-test"

    assert llm_events(trace) == [
        {
            "role": "manager",
            "model": "scripted-model",
            "outcome": "completion",
            "prompt_tokens": 17,
            "completion_tokens": 5,
            "usage_estimated": False,
            "finish_reason": "stop",
            "latency_s": pytest.approx(result.latency_s, abs=1e-5),
            "attempts": 1,
            "status": None,
            "error": None,
        }
    ]


def test_missing_usage_is_estimated_from_text_and_flagged() -> None:
    trace = Trace(None, clock=lambda: None)
    with ScriptedServer([Reply("x" * 40, reasoning_content="y" * 8, usage=False)]) as server:
        result = make_client(server, trace).chat(USER)

    assert result.usage.estimated is True
    assert result.usage.completion_tokens == 12  # (40 + 8) characters / 4
    assert result.usage.prompt_tokens == estimate_tokens(json.dumps([USER, []]))
    assert result.usage.prompt_tokens > 0
    event = llm_events(trace)[0]
    assert event["usage_estimated"] is True
    assert (event["prompt_tokens"], event["completion_tokens"]) == (result.usage.prompt_tokens, 12)


def test_tool_calls_and_reasoning_come_back_as_dicts_the_parser_reads() -> None:
    tools = tool_schemas()
    reply = Reply(
        content=None,
        tool_calls=[{"name": "check_execution", "arguments": {"step_id": 3}}],
        reasoning_content="step 3 looks stale",
    )
    with ScriptedServer([reply]) as server:
        result = make_client(server).chat(USER, tools=tools, tool_choice="required")

    assert result.message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "check_execution", "arguments": '{"step_id": 3}'},
            }
        ],
        "reasoning_content": "step 3 looks stale",
    }
    assert result.finish_reason == "tool_calls"
    assert json.loads(json.dumps(result.message)) == result.message  # plain JSON data only
    assert server.requests[0]["tools"] == tools
    assert server.requests[0]["tool_choice"] == "required"

    parsed = parse_response(result.message)
    assert [a.name for a in parsed.actions] == [ToolAction.CHECK_EXECUTION]
    assert parsed.actions[0].call_id == "call_0"
    assert parsed.thinking == "step 3 looks stale"


def test_list_models_reads_the_served_model() -> None:
    with ScriptedServer([], model="qwen-test") as server:
        assert make_client(server).list_models() == ["qwen-test"]
        assert server.requests == []  # GET does not consume the script


# ----------------------------------------------------------------------------- retried failures


def test_server_error_then_success_takes_two_attempts() -> None:
    trace = Trace(None, clock=lambda: None)
    sleeps = Sleeps()
    with ScriptedServer([Status(500, "engine crashed"), "recovered"]) as server:
        result = make_client(server, trace, sleeps).chat(USER)

    assert result.content == "recovered"
    assert result.attempts == 2
    assert len(server.requests) == 2 and server.requests[0] == server.requests[1]
    assert len(sleeps.delays) == 1 and 0.005 <= sleeps.delays[0] <= 0.01  # backoff_s with jitter
    event = llm_events(trace)[0]
    assert (event["attempts"], event["error"], event["status"]) == (2, None, None)


def test_rate_limit_is_retried_honouring_retry_after_then_backing_off() -> None:
    sleeps = Sleeps()
    script = [Status(429, "slow down", headers={"Retry-After": "0.03"}), Status(429, "slow down"), "done"]
    with ScriptedServer(script) as server:
        result = make_client(server, sleep=sleeps, max_retries=3).chat(USER)

    assert result.content == "done" and result.attempts == 3
    assert len(server.requests) == 3
    assert sleeps.delays[0] == pytest.approx(0.03)
    assert 0.01 <= sleeps.delays[1] <= 0.02  # second retry: 2 * backoff_s, jittered into [half, all]


def test_retry_after_is_capped_by_backoff_max() -> None:
    sleeps = Sleeps()
    with ScriptedServer([Status(503, "warming up", headers={"Retry-After": "600"}), "up"]) as server:
        result = make_client(server, sleep=sleeps).chat(USER)
    assert result.attempts == 2
    assert sleeps.delays == [0.04]


def test_timeout_then_success() -> None:
    with ScriptedServer([Delay(3.0, then="too late"), "in time"]) as server:
        result = make_client(server, timeout_s=0.2).chat(USER)
    assert result.content == "in time"
    assert result.attempts == 2


def test_timeouts_exhaust_retries_and_fail() -> None:
    trace = Trace(None, clock=lambda: None)
    script = [Delay(3.0), Delay(3.0), Delay(3.0), "never reached"]
    start = time.monotonic()
    with ScriptedServer(script) as server:
        client = make_client(server, trace, timeout_s=0.2, max_retries=2)
        with pytest.raises(LLMError) as info:
            client.chat(USER)
        elapsed = time.monotonic() - start
        assert server.remaining == 1
        assert server.errors == []

    err = info.value
    assert type(err) is LLMError
    assert err.attempts == 3 and err.status is None
    assert "timeout" in str(err) and "gave up after 3 attempts" in str(err)
    assert (err.role, err.model) == ("manager", "scripted-model")
    assert len(server.requests) == 3
    assert 0.55 <= elapsed < 2.5  # three 0.2 s timeouts, nowhere near the 3 s delays
    event = llm_events(trace)[0]
    assert event["attempts"] == 3 and event["prompt_tokens"] is None
    assert event["error"].startswith("LLMError: ") and "timeout" in event["error"]


def test_dead_server_fails_after_bounded_retries() -> None:
    trace = Trace(None, clock=lambda: None)
    sleeps = Sleeps()
    with ScriptedServer([Die(), "unreachable"]) as server:
        client = make_client(server, trace, sleeps, max_retries=3)
        with pytest.raises(LLMError) as info:
            client.chat(USER)
        assert server.dead is True

    err = info.value
    assert err.attempts == 4 and err.status is None
    assert "connection failed" in str(err)
    assert len(server.requests) == 1  # the rest were refused before reaching a handler
    assert len(sleeps.delays) == 3
    assert [llm_events(trace)[0][k] for k in ("attempts", "status")] == [4, None]


# ----------------------------------------------------------------------------- non-retried failures


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    trace = Trace(None, clock=lambda: None)
    sleeps = Sleeps()
    with ScriptedServer([Status(status, "unknown field 'frobnicate'"), "never"]) as server:
        with pytest.raises(LLMError) as info:
            make_client(server, trace, sleeps).chat(USER)
        assert server.remaining == 1

    err = info.value
    assert not isinstance(err, ContextOverflow)
    assert err.status == status and err.attempts == 1
    assert err.body is not None and "unknown field 'frobnicate'" in err.body
    assert f"HTTP {status}" in str(err)
    assert sleeps.delays == []
    assert llm_events(trace)[0]["status"] == status


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
        "the request exceeds the available context size, try increasing it",
        "context_length_exceeded",
    ],
)
def test_context_length_400_raises_context_overflow(message: str) -> None:
    trace = Trace(None, clock=lambda: None)
    with ScriptedServer([Status(400, message), "never"]) as server, pytest.raises(ContextOverflow) as info:
        make_client(server, trace).chat(USER)

    err = info.value
    assert isinstance(err, LLMError)
    assert err.status == 400 and err.attempts == 1
    assert len(server.requests) == 1
    assert llm_events(trace)[0]["error"].startswith("ContextOverflow: ")


def test_exhausted_script_is_a_clear_non_retried_failure() -> None:
    with ScriptedServer(["only one"]) as server:
        client = make_client(server)
        assert client.chat(USER).content == "only one"
        with pytest.raises(LLMError) as info:
            client.chat(USER)
    assert info.value.status == 410 and "script exhausted after 1 requests" in str(info.value)


# ----------------------------------------------------------------------------- concurrency


@pytest.mark.parametrize("limit", [1, 3])
def test_concurrency_limit_bounds_requests_in_flight(limit: int) -> None:
    n = 6
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    with ScriptedServer([Delay(0.15, then=Echo())] * n) as server:
        client = make_client(server, concurrency=limit)

        def call(i: int) -> None:
            try:
                results[i] = client.chat([{"role": "user", "content": f"request {i}"}]).content
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert server.in_flight == 0
        assert server.errors == []

    assert errors == []
    assert results == {i: f"request {i}" for i in range(n)}
    assert server.max_in_flight == limit


# ----------------------------------------------------------------------------- configuration


def test_from_env_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEGUARD_MANAGER_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("STATEGUARD_MANAGER_MODEL", "from-env")
    monkeypatch.delenv("STATEGUARD_MANAGER_API_KEY", raising=False)

    cfg = EndpointConfig.from_env("manager")
    assert (cfg.role, cfg.base_url, cfg.model, cfg.api_key) == (
        "manager",
        "http://127.0.0.1:8000/v1",
        "from-env",
        "EMPTY",
    )
    assert (cfg.timeout_s, cfg.max_retries, cfg.backoff_s, cfg.concurrency) == (120.0, 3, 1.0, 4)

    monkeypatch.setenv("STATEGUARD_MANAGER_API_KEY", "env-key")
    assert EndpointConfig.from_env("manager").api_key == "env-key"  # env beats the default

    cfg = EndpointConfig.from_env("manager", model="explicit", api_key=None, timeout_s=9)
    assert (cfg.model, cfg.api_key, cfg.timeout_s) == ("explicit", "env-key", 9.0)  # explicit beats env

    cfg = EndpointConfig.from_env(
        "manager", environ={"STATEGUARD_MANAGER_BASE_URL": "http://a/v1"}, model="m"
    )
    assert (cfg.base_url, cfg.api_key) == ("http://a/v1", "EMPTY")


def test_from_env_names_the_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BASE_URL", "API_KEY", "MODEL"):
        monkeypatch.delenv(f"STATEGUARD_JUDGE_{name}", raising=False)
    with pytest.raises(EndpointConfigError, match="STATEGUARD_JUDGE_BASE_URL"):
        EndpointConfig.from_env("judge", model="m")
    monkeypatch.setenv("STATEGUARD_JUDGE_BASE_URL", "   ")  # blank counts as unset
    with pytest.raises(EndpointConfigError, match="STATEGUARD_JUDGE_BASE_URL"):
        EndpointConfig.from_env("judge")
    monkeypatch.setenv("STATEGUARD_JUDGE_BASE_URL", "http://127.0.0.1:1/v1")
    with pytest.raises(EndpointConfigError, match="STATEGUARD_JUDGE_MODEL"):
        EndpointConfig.from_env("judge")
    with pytest.raises(EndpointConfigError, match="unknown role 'critic'"):
        EndpointConfig.from_env("critic")


def test_backoff_is_exponential_jittered_and_capped() -> None:
    cfg = EndpointConfig(role="worker", base_url="http://x/v1", model="m", backoff_s=1.0, backoff_max_s=5.0)
    rng = random.Random(1)
    for retry, nominal in enumerate([1.0, 2.0, 4.0, 5.0, 5.0, 5.0]):
        for _ in range(20):
            assert nominal / 2 <= cfg.backoff_delay(retry, rng) <= nominal
    assert cfg.backoff_delay(10_000, rng) <= 5.0
    with pytest.raises(ValueError, match="backoff_max_s"):
        EndpointConfig(role="worker", base_url="http://x/v1", model="m", backoff_s=2.0, backoff_max_s=1.0)


def _compose_endpoint(name: str, *overrides: str) -> EndpointConfig:
    with initialize_config_dir(version_base=None, config_dir=str(CONFIG_DIR)):
        cfg = compose(overrides=[f"+endpoint={name}", *overrides])
    data = OmegaConf.to_container(cfg.endpoint, resolve=True)
    assert isinstance(data, dict)
    return EndpointConfig.model_validate(data)


def test_endpoint_config_group_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MANAGER_BASE_URL", "MANAGER_MODEL", "WORKER_BASE_URL", "WORKER_API_KEY", "WORKER_MODEL"):
        monkeypatch.delenv(f"STATEGUARD_{var}", raising=False)

    local = _compose_endpoint("local")
    assert (local.role, local.base_url, local.model) == (
        "worker",
        "http://127.0.0.1:8080/v1",
        "qwen2.5-coder-0.5b",
    )

    vllm = _compose_endpoint("vllm")
    assert (vllm.role, vllm.base_url, vllm.model) == (
        "manager",
        "http://localhost:8000/v1",
        "stateguard-manager",
    )
    monkeypatch.setenv("STATEGUARD_MANAGER_MODEL", "/ckpt/manager-step-200")
    assert _compose_endpoint("vllm").model == "/ckpt/manager-step-200"

    with pytest.raises(Exception, match="STATEGUARD_WORKER_BASE_URL"):
        _compose_endpoint("openai")
    monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", "https://llm.example/v1")
    monkeypatch.setenv("STATEGUARD_WORKER_API_KEY", "sk-hosted")
    monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "hosted-model")
    hosted = _compose_endpoint("openai")
    assert (hosted.base_url, hosted.api_key, hosted.model) == (
        "https://llm.example/v1",
        "sk-hosted",
        "hosted-model",
    )


def test_scripted_endpoint_config_drives_the_client() -> None:
    with ScriptedServer([Status(502, "bad gateway"), Echo()]) as server:
        cfg = _compose_endpoint("scripted", f"endpoint.base_url={server.base_url}")
        assert (cfg.role, cfg.timeout_s, cfg.max_retries, cfg.concurrency) == ("manager", 2.0, 2, 2)
        with LLMClient(cfg) as client:
            result = client.chat(USER)
    assert result.content == USER[0]["content"] and result.attempts == 2
    assert server.requests[1]["max_tokens"] == 64 and server.requests[1]["temperature"] == 0.0
