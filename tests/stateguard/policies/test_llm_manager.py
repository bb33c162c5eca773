"""The LLM manager against a real HTTP server on 127.0.0.1 with canned responses.

Each scenario runs the real rollout loop, harness, scripted worker and in-process workspace; only
the model is scripted. Assertions are on the store, the trace and the worker's answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.scorers.fields import per_turn_correct
from stateguard.flows import LONGDS
from stateguard.llm.client import LLMClient
from stateguard.llm.endpoints import EndpointConfig
from stateguard.policies.llm_manager import LLMManager
from stateguard.rollout import RolloutResult, rollout
from stateguard.store import StateStore
from stateguard.task import Task, load_task
from stateguard.trace import Trace, read_trace
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.support.scripted_server import Delay, Die, Reply, ScriptedServer, Status

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def one_turn() -> Task:
    full = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    return Task(task_id="one_turn", turns=full.turns[:1], base_path=full.base_path)


def call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": arguments}])


OPEN = call("OPEN_STATE", issue="load the sales data and total the revenue")
UPDATE = call(
    "UPDATE_STATE", used_variables=[{"name": "revenue", "value": 1060.0}], conclusions=["revenue computed"]
)
FINALIZE = call("FINALIZE_RELATIONS", mode="confirm")
COMMIT = call("COMMIT_STATE")


def run(
    task: Task, tmp: Path, script: list[Any], faults: list[Fault] | None = None, **manager_kw: Any
) -> tuple[RolloutResult, ScriptedServer, list[Any]]:
    with ScriptedServer(script) as server:
        trace_path = tmp / "llm_calls.jsonl"
        config = EndpointConfig(
            role="manager",
            base_url=server.base_url,
            model="scripted-model",
            timeout_s=0.5,
            max_retries=1,
            backoff_s=0.01,
            backoff_max_s=0.02,
        )
        client = LLMClient(config, trace=Trace(trace_path))
        result = rollout(
            task,
            ScriptedWorker(FaultModel(faults=faults or []), reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=LLMManager(client, **manager_kw),
            run_dir=tmp / "run",
        )
        return result, server, read_trace(tmp / "run" / "trace.jsonl")


def correct(task: Task, result: RolloutResult) -> dict[int, bool]:
    return per_turn_correct({t.turn_id: t.answer for t in task.turns}, result.answers)


def test_clean_turn_with_a_tool_call(one_turn: Task, tmp_path: Path) -> None:
    check = call("check_execution", step_id=1)
    result, server, events = run(one_turn, tmp_path, [OPEN, UPDATE, check, FINALIZE])
    assert correct(one_turn, result) == {1: True}
    store = StateStore(tmp_path / "run" / "states.sqlite")
    state = store.load("S1")
    assert [v.key for v in state.used_variables] == ["revenue@S1"] and state.relations[0].type.value == "init"
    tool = next(e for e in events if e.kind == "tool")
    assert tool.payload["name"] == "check_execution" and tool.payload["result"]["data"]["success"] is True
    # The tool result went back to the model as a tool message with the matching call id.
    follow_up = server.requests[3]["messages"]
    assert follow_up[-1]["role"] == "tool" and follow_up[-1]["tool_call_id"] == "call_0"
    assert '"success": true' in follow_up[-1]["content"]
    # COMMIT_STATE, the only action after FINALIZE_RELATIONS, is applied without a model call.
    assert len(server.requests) == 4 and result.manager_usage["forced_actions"] == 1
    # Only the actions offered at the stage are sent as tools: OPEN_STATE alone at a turn start; the
    # verdicts and the evidence tools while the state is verified.
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["OPEN_STATE"]
    offered = {t["function"]["name"] for t in server.requests[2]["tools"]}
    assert offered >= {"FINALIZE_RELATIONS", "check_execution", "run_probe"} and not offered & {
        "ABANDON_STATE",
        "REPAIR",
    }
    assert "REPAIR" in {t["function"]["name"] for t in server.requests[3]["tools"]}  # evidence was gathered
    assert result.manager_activations == 4 and not result.degraded and result.manager_llm_calls == 4


def test_correct_repair_is_applied_and_the_worker_recomputes(one_turn: Task, tmp_path: Path) -> None:
    repair = call(
        "REPAIR",
        analytical_evidence="check_execution: the last block raised NameError",
        error_hint={
            "error_variables": ["result"],
            "faulty_reasoning": "the final block raised an error and was never re-run",
        },
    )
    check = call("check_execution", step_id=1)  # evidence first: a REPAIR is offered only after it
    script = [OPEN, UPDATE, repair, check, repair, UPDATE, FINALIZE]
    result, server, events = run(one_turn, tmp_path, script, faults=[Fault(kind="exec_error", turn=1)])
    assert correct(one_turn, result) == {1: True} and result.repairs == 1
    hint = next(e for e in events if e.kind == "hint_delivered" and e.payload["hint"]["kind"] == "repair")
    assert "never re-run" in hint.payload["text"]
    assert any(e.kind == "worker_step" and e.payload["meta"]["purpose"] == "recompute" for e in events)
    assert server.remaining == 0
    # The first REPAIR came before any evidence: refused before the harness, with the reason.
    assert "REPAIR is offered once a tool call has produced evidence" in json.dumps(
        server.requests[3]["messages"][-1]
    )
    assert [e.payload["output"] for e in events if e.kind == "manager_output_refused"][0].count("REPAIR") == 1
    assert result.manager_usage["illegal_actions"] == 1


def test_malformed_unknown_and_mixed_responses_get_feedback_then_a_safe_exit(
    one_turn: Task, tmp_path: Path
) -> None:
    malformed = Reply(content='<tool_call>{"name": "UPDATE_STATE", "arguments": {oops</tool_call>')
    unknown = call("UPDATE_STAT", used_variables=[])
    mixed = Reply(
        tool_calls=[
            {"name": "check_execution", "arguments": {"step_id": 0}},
            {"name": "COMMIT_STATE", "arguments": {}},
        ]
    )
    result, server, events = run(one_turn, tmp_path, [OPEN, malformed, unknown, mixed])
    rejected = [e.payload["feedback"] for e in events if e.kind == "action" and not e.payload["accepted"]]
    assert len(rejected) == 3
    assert "not valid JSON" in rejected[0] and "unknown action 'UPDATE_STAT'" in rejected[1]
    assert "mixes tool actions (check_execution) with a control action (COMMIT_STATE)" in rejected[2]
    # The corrective feedback reached the model before its next try.
    assert "not valid JSON" in json.dumps(server.requests[2]["messages"][-1])
    assert "Did you mean 'UPDATE_STATE'" in json.dumps(server.requests[3]["messages"][-1])
    # After the retry budget the loop abandons the open draft; the worker's answer is untouched.
    assert any(e.kind == "state_abandoned" for e in events)
    assert result.committed_states == [] and correct(one_turn, result) == {1: True}


def test_a_request_refused_for_size_is_refitted_never_resent_unchanged(
    one_turn: Task, tmp_path: Path
) -> None:
    # A server we could not ask (plain) refuses the first request and names its window.
    overflow = Status(
        400,
        "This model's maximum context length is 4096 tokens. However, you requested "
        "4800 tokens (4300 in the messages, 500 in the completion).",
    )
    result, server, events = run(one_turn, tmp_path, [overflow, OPEN, UPDATE, FINALIZE])
    assert result.committed_states == ["S1"] and len(server.requests) == 4
    calls = read_trace(tmp_path / "llm_calls.jsonl")
    assert [c.payload["outcome"] for c in calls] == [
        "rejected_for_size",
        "completion",
        "completion",
        "completion",
    ]
    assert calls[0].payload["window"] is None and all(c.payload["window"] == 4096 for c in calls[1:])
    # The retry is a different, smaller request: a shorter prompt form, within the named window.
    first, second = (json.dumps(server.requests[i]) for i in (0, 1))
    assert len(second) < 0.8 * len(first) and calls[1].payload["prompt_mode"] != "full"
    assert all(c.payload["planned_prompt_tokens"] <= 4096 - 512 for c in calls[1:])
    assert result.manager_usage["rejected_for_size"] == 1 and result.manager_llm_calls == 3


def test_timeouts_and_500s_are_retried(one_turn: Task, tmp_path: Path) -> None:
    script = [Status(500, "boom"), OPEN, Delay(2.0, then=UPDATE), UPDATE, FINALIZE]
    result, _, _ = run(one_turn, tmp_path, script)
    assert result.committed_states == ["S1"]
    attempts = [e.payload["attempts"] for e in read_trace(tmp_path / "llm_calls.jsonl")]
    assert attempts[:2] == [2, 2]


def test_a_server_that_dies_degrades_to_worker_only_completion(tmp_path: Path) -> None:
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    result, _, events = run(task, tmp_path, [OPEN, UPDATE, FINALIZE, Die()], max_failures=2)
    assert result.committed_states == ["S1"] and result.degraded
    assert all(correct(task, result).values())  # the worker finished every turn on its own
    degraded = [e for e in events if e.kind == "degraded"]
    assert len(degraded) == 1 and "kept failing" in degraded[0].payload["reason"]
    reviews_after = [e for e in events if e.kind == "review" and e.seq > degraded[0].seq]
    assert reviews_after == []  # no manager activation after degradation


def test_identical_rejected_output_is_not_retried_again(one_turn: Task, tmp_path: Path) -> None:
    malformed = Reply(content='<tool_call>{"name": "UPDATE_STATE", "arguments": {oops</tool_call>')
    result, server, events = run(
        one_turn, tmp_path, [OPEN, malformed, malformed, malformed], compact_tools=True
    )
    assert len(server.requests) == 3  # OPEN, then the same bad output twice: no third try
    assert all("description" not in json.dumps(t) for t in server.requests[0]["tools"])
    assert result.committed_states == [] and any(e.kind == "state_abandoned" for e in events)
