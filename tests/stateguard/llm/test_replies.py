"""Every malformed reply shape, and hung endpoints, against the real client and the real rollout loop.

The scripted server answers on a real 127.0.0.1 socket with the exact bytes of each case. The
client must turn each into a `MalformedReplyError` (retried within the budget, counted as a
failed call), never an exception from deep inside; the manager must degrade, never crash; and a
hung endpoint must cost bounded, configured time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from eval.scorers.fields import per_turn_correct
from stateguard.flows import LONGDS
from stateguard.llm import EndpointConfig, LLMClient
from stateguard.llm.client import DeadlineExceeded, LLMError, MalformedReplyError
from stateguard.policies.hierarchical import HierarchicalManager
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import load_task
from stateguard.trace import Trace, read_trace
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.support.schema_model import CONTROLS_FIRST
from tests.support.scripted_server import Delay, Raw, Reply, Respond, ScriptedServer

ROOT = Path(__file__).resolve().parents[3]
USER = [{"role": "user", "content": "how many rows"}]


def _completion(message: Any) -> str:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    )


MALFORMED: dict[str, Raw] = {
    "html page": Raw("<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html"),
    "html labelled json": Raw("<!doctype html><p>maintenance</p>"),
    "non-utf8 bytes": Raw(b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),
    "empty body": Raw(b""),
    "json array": Raw("[1, 2, 3]"),
    "json string": Raw('"ok"'),
    "choices is a string": Raw('{"choices": "nope"}'),
    "choices empty": Raw('{"choices": []}'),
    "choice is a number": Raw('{"choices": [7]}'),
    "message missing": Raw('{"choices": [{"finish_reason": "stop"}]}'),
    "message is a string": Raw('{"choices": [{"message": "hello"}]}'),
    "content is a number": Raw(_completion({"role": "assistant", "content": 7})),
    "content is an object": Raw(_completion({"role": "assistant", "content": {"text": "x"}})),
    "tool_calls is a string": Raw(
        _completion({"role": "assistant", "content": None, "tool_calls": "COMMIT"})
    ),
    "tool call without function": Raw(_completion({"role": "assistant", "tool_calls": [{"id": "a"}]})),
    "tool name is a number": Raw(
        _completion({"role": "assistant", "tool_calls": [{"function": {"name": 5}}]})
    ),
    "arguments is a number": Raw(
        _completion({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 5}}]})
    ),
    "error object with 200": Raw('{"error": {"message": "upstream overloaded"}}'),
}


def client(server: ScriptedServer, trace: Trace | None = None, **fields: Any) -> LLMClient:
    values: dict[str, Any] = {
        "role": "manager",
        "base_url": server.base_url,
        "model": "m",
        "timeout_s": 2.0,
        "max_retries": 1,
        "backoff_s": 0.01,
        "backoff_max_s": 0.02,
    }
    values.update(fields)
    return LLMClient(EndpointConfig(**values), trace=trace)


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_every_malformed_shape_is_a_retried_malformed_reply_error(case: str) -> None:
    trace = Trace(None, clock=lambda: None)
    with ScriptedServer([MALFORMED[case], MALFORMED[case]]) as server:
        with pytest.raises(MalformedReplyError) as info:
            client(server, trace).chat(USER)
        assert len(server.requests) == 2  # the retry budget (max_retries=1) was used, nothing more
    assert info.value.attempts == 2 and "malformed reply" in str(info.value)
    event = next(e.payload for e in trace.events() if e.kind == "llm_call")
    assert event["outcome"] == "failed" and event["error"].startswith("MalformedReplyError")


def test_a_malformed_reply_then_a_good_one_succeeds_on_the_retry() -> None:
    with ScriptedServer([MALFORMED["choices is a string"], "fine"]) as server:
        result = client(server).chat(USER)
    assert result.content == "fine" and result.attempts == 2


def test_tolerated_variants_are_normalized_not_rejected() -> None:
    parts = Raw(
        _completion(
            {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
        )
    )
    object_args = Raw(
        _completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "function": {"name": "COMMIT_STATE", "arguments": {}}}],
            }
        )
    )
    odd_usage = Raw(
        json.dumps(
            {
                "choices": [{"message": {"content": "x"}, "finish_reason": 3}],
                "usage": {"prompt_tokens": "many", "completion_tokens": -1},
            }
        )
    )
    with ScriptedServer([parts, object_args, odd_usage]) as server:
        c = client(server)
        assert c.chat(USER).content == "ab"
        call = c.chat(USER).tool_calls[0]
        assert call["function"] == {"name": "COMMIT_STATE", "arguments": "{}"}
        odd = c.chat(USER)
    assert odd.usage.estimated and odd.finish_reason is None


def test_the_call_deadline_bounds_a_hung_endpoint() -> None:
    # Each attempt would wait timeout_s; the whole call may not pass call_deadline_s.
    with ScriptedServer([Delay(5.0)] * 6) as server:
        c = client(server, timeout_s=0.4, max_retries=5, call_deadline_s=1.0)
        start = time.monotonic()
        with pytest.raises(LLMError) as info:
            c.chat(USER)
        took = time.monotonic() - start
    assert took < 1.6 and info.value.attempts <= 3
    assert (
        isinstance(info.value, DeadlineExceeded)
        or "no time left" in str(info.value)
        or "timeout" in str(info.value)
    )


def test_the_callers_deadline_cuts_the_attempt_timeout() -> None:
    with ScriptedServer([Delay(5.0)]) as server:
        start = time.monotonic()
        with pytest.raises(LLMError):
            client(server, timeout_s=30.0, max_retries=0).chat(USER, deadline=time.monotonic() + 0.5)
    assert time.monotonic() - start < 1.5


# ----------------------------------------------------------------------------- through the rollout


def _rollout(
    script: list[Any], manager_of: Any, tmp: Path, faults: list[Fault] | None = None, **fields: Any
) -> Any:
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    with ScriptedServer(script) as server:
        trace = Trace(tmp / "llm_calls.jsonl")
        manager = manager_of(client(server, trace, **fields))
        start = time.monotonic()
        result = rollout(
            task,
            ScriptedWorker(FaultModel(faults=faults or []), reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=manager,
            run_dir=tmp / "run",
        )
        took = time.monotonic() - start
        trace.close()
    correct = per_turn_correct({t.turn_id: t.answer for t in task.turns}, result.answers)
    return result, correct, took, read_trace(tmp / "run" / "trace.jsonl")


@pytest.mark.parametrize(
    "case", ["html page", "non-utf8 bytes", "choices is a string", "content is a number"]
)
def test_the_llm_manager_degrades_on_malformed_replies_and_never_crashes(case: str, tmp_path: Path) -> None:
    result, correct, _, events = _rollout(
        [MALFORMED[case]] * 8, lambda c: LLMManager(c, max_failures=2), tmp_path
    )
    assert all(correct.values()) and result.degraded  # the worker finished alone, every turn right
    usage = result.manager_usage
    assert (
        usage["completions"] == 0 and result.manager_llm_calls == 0
    )  # no failed call counts as a model call
    assert usage["failed_requests"] == 2 and usage["malformed_replies"] == 2
    assert result.manager_fallbacks == 1 and [
        e.payload["exit"] for e in events if e.kind == "manager_fallback"
    ] == ["ABSTAIN"]
    degraded = [e for e in events if e.kind == "degraded"]
    assert len(degraded) == 1 and "MalformedReplyError" in degraded[0].payload["reason"]
    outcomes = [e.payload["outcome"] for e in read_trace(tmp_path / "llm_calls.jsonl")]
    assert outcomes == ["failed", "failed"]


def test_a_hung_endpoint_degrades_within_the_configured_bound(tmp_path: Path) -> None:
    # Bound: max_failures x call_deadline_s (plus one probe of the server) = 2 x 0.8 s.
    result, correct, took, events = _rollout(
        [Delay(30.0)] * 10,
        lambda c: LLMManager(c, max_failures=2),
        tmp_path,
        timeout_s=0.5,
        max_retries=3,
        call_deadline_s=0.8,
    )
    assert result.degraded and all(correct.values())
    assert result.manager_usage["failed_requests"] == 2 and took < 2 * 0.8 + 8.0
    assert result.manager_usage["model_time_s"] <= 2 * 0.8 + 0.5


def test_the_per_task_time_cap_stops_model_calls(tmp_path: Path) -> None:
    slow = Delay(0.35, then=Reply(content="not an action"))
    result, correct, _, events = _rollout(
        [slow] * 40, lambda c: LLMManager(c, task_time_cap_s=1.0, max_failures=99), tmp_path
    )
    usage = result.manager_usage
    assert usage["time_capped"] == 1 and result.degraded and all(correct.values())
    assert usage["model_time_s"] <= 1.0 + 0.5  # at most one call runs past the cap, cut by its deadline
    assert "time cap" in next(e.payload["reason"] for e in events if e.kind == "degraded")


def test_hierarchical_keeps_every_rules_decision_when_the_endpoint_is_malformed(tmp_path: Path) -> None:
    faults = [Fault(kind="stale", turn=5)]
    rules, rules_correct, _, _ = _rollout([], lambda c: RulesManager(), tmp_path / "rules", faults)
    result, correct, _, events = _rollout(
        [MALFORMED["html page"]] * 20,
        lambda c: HierarchicalManager(RulesManager(), LLMManager(c), triggers=["always"]),
        tmp_path / "h",
        faults,
    )
    assert not result.degraded and correct == rules_correct and all(correct.values())
    assert result.committed_states == rules.committed_states and result.repairs == rules.repairs == 1
    fallbacks = [e.payload for e in events if e.kind == "manager_fallback"]
    assert fallbacks and all(f["exit"] == "rules tier decision" for f in fallbacks)
    assert result.manager_usage["failed_requests"] == 2  # then the model tier stopped for the task
    assert any("model tier stops" in f["reason"] for f in fallbacks)


def test_a_model_that_keeps_failing_at_verification_does_not_abandon_the_draft(tmp_path: Path) -> None:
    # A model that answers every stage well except verification, where it repeats an output the
    # stage refuses: the fallback keeps the verified draft (FINALIZE with the provisional relations)
    # instead of abandoning it, since a failed model is no evidence against the state.
    def model(request: dict[str, Any]) -> Reply:
        names = [t["function"]["name"] for t in request.get("tools") or []]
        if "FINALIZE_RELATIONS" in names:
            return Reply(content="not an action")
        name = next(n for n in CONTROLS_FIRST if n in names)
        return Reply(tool_calls=[{"name": name, "arguments": {"issue": "q"} if name == "OPEN_STATE" else {}}])

    result, correct, _, events = _rollout(
        [Respond(model)] * 200, lambda c: LLMManager(c, max_failures=99, constrained="off"), tmp_path
    )
    exits = [e.payload["exit"] for e in events if e.kind == "manager_fallback"]
    assert exits and set(exits) == {"FINALIZE_RELATIONS"}
    assert not [e for e in events if e.kind == "state_abandoned"]
    assert len(result.committed_states) == 6 and all(correct.values())
