"""Fitting the served window and constraining replies to the stage's actions, against scripted
servers that answer like llama.cpp, llama-cpp-python (our launcher) and vLLM: their discovery
routes, their tokenizer routes, their response_format dialects and their HTTP 400 on a prompt
that does not fit. The scripted model reads the JSON schema it is sent and answers with an
instance of it, so what is tested is what the manager asks for, not what a model happens to do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stateguard.flows import LONGDS
from stateguard.lifecycle import LEGAL, Regime, Stage
from stateguard.llm import EndpointConfig, LLMClient
from stateguard.llm.server_info import probe_server
from stateguard.llm.tokens import TokenCounter
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.prompt_fit import plan_prompt
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.trace import Trace, read_trace
from stateguard.workers import FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.support.schema_model import CONTROLS_FIRST, SchemaModel
from tests.support.scripted_server import Reply, Respond, ScriptedServer, Status, prompt_tokens

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")


def run(
    task: Task, tmp: Path, server: ScriptedServer, **manager_kw: Any
) -> tuple[Any, LLMManager, list[Any]]:
    trace = Trace(tmp / "llm_calls.jsonl")
    endpoint = {k: manager_kw.pop(k) for k in ("context_window", "max_tokens") if k in manager_kw}
    client = LLMClient(
        EndpointConfig(
            role="manager", base_url=server.base_url, model="m", timeout_s=5, max_retries=0, **endpoint
        ),
        trace=trace,
    )
    manager = LLMManager(client, **manager_kw)
    result = rollout(
        task,
        ScriptedWorker(FaultModel(), reference=task),
        DictWorkspace(),
        flow=LONGDS,
        manager=manager,
        run_dir=tmp / "run",
    )
    trace.close()
    return result, manager, [e.payload for e in read_trace(tmp / "llm_calls.jsonl")]


@pytest.mark.parametrize(
    ("flavor", "dialect"),
    [("llama.cpp", "json_schema"), ("llama-cpp-python", "json_object"), ("vllm", "json_schema")],
)
def test_constrained_replies_fit_the_discovered_window_and_commit_every_turn(
    task: Task, tmp_path: Path, flavor: str, dialect: str
) -> None:
    model = SchemaModel()
    with ScriptedServer([Respond(model)] * 60, flavor=flavor, context_window=4096) as server:
        result, manager, calls = run(task, tmp_path, server)
        requests = [r for r in server.requests]
        assert server.rejected_for_size == 0 and server.tokenize_calls > 0
    assert manager.info is not None and manager.info.context_window == 4096 and manager.info.kind == flavor
    assert result.committed_states == [f"S{i}" for i in range(1, 7)]  # one committed state per turn
    usage = result.manager_usage
    assert usage["completions"] == usage["constrained_completions"] == usage["valid_actions"] == len(requests)
    assert usage["parse_failures"] == usage["illegal_actions"] == usage["fallbacks"] == 0
    assert usage["forced_actions"] == 6 and result.manager_fallbacks == 0
    for request in requests:
        assert request["response_format"]["type"] == dialect and "tools" not in request
        assert prompt_tokens(request) + request["max_tokens"] <= 4096
    assert all(c["constrained"] and c["outcome"] == "completion" for c in calls)
    assert {c["token_counts"] for c in calls} == {f"server ({flavor})"}
    # Every offered control action is legal at the stage the observation shows (the harness's table).
    for stage, legal, names in model.offered:
        table = [a.value for a in LEGAL[Regime.TURN_ALIGNED][Stage(stage)]]
        controls = [n for n in names if n.isupper()]
        assert controls and set(controls) <= set(legal) == set(table)


def test_a_small_window_picks_the_short_prompt_and_still_fits(task: Task, tmp_path: Path) -> None:
    with ScriptedServer([Respond(SchemaModel())] * 60, flavor="llama.cpp", context_window=1800) as server:
        result, _, calls = run(task, tmp_path, server, reply_tokens=256)
        assert server.rejected_for_size == 0
    assert len(result.committed_states) == 6 and result.manager_fallbacks == 0
    modes = [c["prompt_mode"] for c in calls]
    assert modes[0] == "full" and "short" in modes  # richest while it fits, shorter as the task grows
    assert all(c["planned_prompt_tokens"] <= 1800 - 256 for c in calls)


def test_an_unknown_server_learns_its_window_from_one_refusal(task: Task, tmp_path: Path) -> None:
    refused: list[str] = []

    def model(request: dict[str, Any]) -> Any:  # a server with no schema support: free text + parser
        assert "response_format" not in request
        names = {t["function"]["name"] for t in request["tools"]}
        name = next(n for n in CONTROLS_FIRST if n in names)
        args = {"issue": "the turn's question"} if name == "OPEN_STATE" else {}
        return Reply(tool_calls=[{"name": name, "arguments": args}])

    with ScriptedServer([Respond(model)] * 60, context_window=1500) as server:
        result, manager, calls = run(task, tmp_path, server, reply_tokens=256)
        bodies = [json.dumps(r, sort_keys=True) for r in server.requests]
        refused = [c["outcome"] for c in calls if c["outcome"] != "completion"]
    assert refused == ["rejected_for_size"] and server.rejected_for_size == 1 and manager.window == 1500
    assert len(set(bodies)) == len(bodies)  # no request was ever sent twice
    assert len(result.committed_states) == 6 and result.manager_usage["rejected_for_size"] == 1


def test_the_endpoint_setting_prevents_even_the_first_refusal(task: Task, tmp_path: Path) -> None:
    def model(request: dict[str, Any]) -> Reply:
        names = {t["function"]["name"] for t in request["tools"]}
        name = next(n for n in CONTROLS_FIRST if n in names)
        return Reply(tool_calls=[{"name": name, "arguments": {"issue": "q"} if name == "OPEN_STATE" else {}}])

    with ScriptedServer([Respond(model)] * 60, context_window=2600) as server:
        result, manager, _ = run(task, tmp_path, server, context_window=2600)
        assert server.rejected_for_size == 0
    assert manager.info is not None and manager.info.context_source == "endpoint setting context_window"
    assert len(result.committed_states) == 6


def test_a_server_that_refuses_the_schema_falls_back_to_free_text(task: Task, tmp_path: Path) -> None:
    one = Task(task_id="one", turns=task.turns[:1], base_path=task.base_path)

    def model(request: dict[str, Any]) -> Any:
        if "response_format" in request:
            return Status(400, "response_format json_schema is not supported by this server")
        names = {t["function"]["name"] for t in request["tools"]}
        name = next(n for n in CONTROLS_FIRST if n in names)
        return Reply(tool_calls=[{"name": name, "arguments": {"issue": "q"} if name == "OPEN_STATE" else {}}])

    with ScriptedServer([Respond(model)] * 10) as server:
        result, manager, calls = run(one, tmp_path, server, constrained="on")
    assert [c["outcome"] for c in calls] == ["rejected", "completion", "completion", "completion"]
    assert [c["constrained"] for c in calls] == [True, False, False, False] and manager.structured == "off"
    assert result.committed_states == ["S1"] and result.manager_usage["rejected_requests"] == 1
    notes = [e.payload for e in read_trace(tmp_path / "run" / "trace.jsonl") if e.kind == "manager_note"]
    assert len(notes) == 1 and "constrained decoding turned off" in notes[0]["note"]


def test_constrained_off_sends_tools_and_parses_text(task: Task, tmp_path: Path) -> None:
    one = Task(task_id="one", turns=task.turns[:1], base_path=task.base_path)
    script = [
        Reply(content='```json\n{"name": "OPEN_STATE", "arguments": {"issue": "q"}}\n```'),
        Reply(content='{"name": "UPDATE_STATE", "arguments": {}}'),
        Reply(
            content='<tool_call>{"name": "FINALIZE_RELATIONS", "arguments": {"mode": "confirm"}}</tool_call>'
        ),
    ]
    with ScriptedServer(script, flavor="llama.cpp", context_window=8192) as server:
        result, _, calls = run(one, tmp_path, server, constrained="off")
        assert all("tools" in r and "response_format" not in r for r in server.requests)
    assert result.committed_states == ["S1"] and not any(c["constrained"] for c in calls)
    assert result.manager_usage["valid_actions"] == 3


def test_an_output_the_stage_does_not_offer_is_refused_before_the_harness(task: Task, tmp_path: Path) -> None:
    # ABANDON_STATE is legal at UPDATED, but destroying work needs the repair budget spent first.
    one = Task(task_id="one", turns=task.turns[:1], base_path=task.base_path)
    abandon = Reply(tool_calls=[{"name": "ABANDON_STATE", "arguments": {"reason": "unsure"}}])
    script = [
        Reply(tool_calls=[{"name": "OPEN_STATE", "arguments": {"issue": "q"}}]),
        Reply(tool_calls=[{"name": "UPDATE_STATE", "arguments": {}}]),
        abandon,
        Reply(tool_calls=[{"name": "FINALIZE_RELATIONS", "arguments": {}}]),
    ]
    with ScriptedServer(script, flavor="plain") as server:
        result, _, _ = run(one, tmp_path, server, constrained="off")
        retry = server.requests[3]["messages"][-1]["content"]
    assert result.committed_states == ["S1"] and "not offered now" in retry
    events = read_trace(tmp_path / "run" / "trace.jsonl")
    assert not any(e.kind == "state_abandoned" for e in events)
    assert result.manager_usage["illegal_actions"] == 1 and result.manager_usage["valid_actions"] == 3


def test_plan_prompt_chooses_by_window() -> None:
    endpoint = EndpointConfig(role="manager", base_url="http://127.0.0.1:9/v1", model="m")
    from stateguard.llm.server_info import ServerInfo

    counter = TokenCounter(endpoint, ServerInfo())
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    from stateguard.policies.prompts import task_block

    def plan(window: int | None, constrained: bool = False) -> Any:
        return plan_prompt(
            counter,
            window=window,
            reply_tokens=512,
            regime=Regime.TURN_ALIGNED,
            variant="stateguard",
            choice="auto",
            constrained=constrained,
            context_budget=40_960,
            user_fixed=lambda clip, tools: task_block(task, 6, earlier_chars=clip),
            control_names=["OPEN_STATE"],
        )

    assert plan(None).mode == "full" and plan(None).observation_budget == 40_960
    assert plan(32_768).mode == "full" and plan(32_768).fits
    small = plan(2_048)
    assert small.mode == "short" and small.fits and small.fixed_tokens + 512 < 2_048
    tiny = plan(1_400)
    assert tiny.task_clip is not None  # the earlier turns are clipped before giving up
    assert plan(4_096, constrained=True).tools is None


def test_probe_of_an_unreachable_server_is_unknown_not_an_error() -> None:
    info = probe_server(
        EndpointConfig(role="manager", base_url="http://127.0.0.1:9/v1", model="m"), timeout_s=0.5
    )
    assert info.kind == "unknown" and info.context_window is None and info.structured_output == "off"
