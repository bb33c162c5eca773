"""The LLM planner and the endpoint developer over real HTTP (the scripted server), through the core."""

from __future__ import annotations

import json

import pytest

from stateguard.llm import EndpointConfig, LLMClient
from statewise.clarify import EndpointDeveloper, Question
from statewise.llm_planner import LLMPlanner, parse_plan, render_prompt
from statewise.planner import PlannerError
from statewise.recovery import RecoveryConfig, run_task
from statewise.store import RecordStore
from tests.stateguard.statewise.toy import FILES, INTERFACE, SPEC, ToyEnv, record, task
from tests.support.scripted_server import Reply, Respond, ScriptedServer
from tests.support.statewise_model import planning_model


def client(server: ScriptedServer) -> LLMClient:
    return LLMClient(EndpointConfig(role="worker", base_url=server.base_url, model="m", max_retries=0))


def test_llm_planner_drives_attribution_repair_and_replanning_over_http() -> None:
    store = RecordStore()
    for r in (record("src.path", "in/a.txt"), record("dest.dir", "out"), record("note.colour", "blue")):
        store.add(r)
    env = ToyEnv(FILES)
    with ScriptedServer([Respond(planning_model(SPEC))] * 20) as server:
        planner = LLMPlanner(client(server), SPEC)
        out = run_task(task(), store, env, INTERFACE, planner, recovery=RecoveryConfig())
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert env.files["out/r.txt"] == "new" and len(out.corrections) == 1
    assert len(prompts) == out.planner_calls == 1 + 2 * 2 + 1  # note.colour is not linked to the action
    original = set(prompts[0].splitlines())
    for probe in prompts[1:5]:  # each counterfactual prompt differs from the original in one record line
        assert len(set(probe.splitlines()) ^ original) in (1, 2)
    assert '"value": "in/b.txt"' in prompts[-1] and '"value": "in/a.txt"' not in prompts[-1]
    current = {r.key: r.id for r in store.retrieve("p/a")}
    assert out.final.used == {"src": current["src.path"], "dest": current["dest.dir"]}  # read off the values


def test_a_failed_probe_keeps_a_linked_record_for_verification() -> None:
    store = RecordStore()
    for r in (record("src.path", "in/b.txt"), record("dest.dir", "out")):
        store.add(r)
    garble = lambda prompt: '"key": "dest.dir"' not in prompt  # noqa: E731 - the model fails without that record
    with ScriptedServer([Respond(planning_model(SPEC, garble=garble))] * 20) as server:
        out = run_task(
            task(),
            store,
            ToyEnv(FILES),
            INTERFACE,
            LLMPlanner(client(server), SPEC),
            recovery=RecoveryConfig(),
        )
    ids = {r.key: r.id for r in store.records()}
    assert ids["dest.dir"] in out.attribution.critical  # altering it still showed the dependence
    assert not out.stopped


def test_parse_plan_rejects_what_it_cannot_trust() -> None:
    t = task()
    recs = [record("src.path", "in/b.txt")]
    with pytest.raises(PlannerError, match="not a JSON plan"):
        parse_plan("copy the file", SPEC, t, recs)
    with pytest.raises(PlannerError, match="operation 'delete_dir'"):
        parse_plan('{"operation": "delete_dir", "slots": {}}', SPEC, t, recs)
    with pytest.raises(PlannerError, match="left slots"):
        parse_plan('{"operation": "copy_file", "slots": {"src": "in/b.txt"}}', SPEC, t, recs)
    filled = parse_plan(
        '{"operation": "copy_file", "slots": {"src": "in/b.txt", "mode": "copy", "dest": "out"}}',
        SPEC,
        t,
        recs,
    )
    assert filled.slots["name"] == "r.txt"  # a task parameter the model left out comes from the task
    stop = parse_plan('{"operation": "stop", "reason": "frozen"}', SPEC, t, recs)
    assert stop.is_stop and stop.reason == "frozen"
    held = parse_plan(
        json.dumps(
            {
                "operation": "copy_file",
                "slots": {"src": "in/b.txt", "mode": "hold", "dest": "out", "name": "r.txt"},
            }
        ),
        SPEC,
        t,
        recs,
    )
    assert held.is_stop
    prompt = render_prompt(SPEC, t, recs)
    assert 'Task parameters: {"name": "r.txt"}' in prompt and '"key": "src.path"' in prompt
    assert (
        "src.path" not in prompt.split("Slots:")[1].split("Stored records:")[0]
    )  # the binding is not given away


def test_endpoint_developer_reads_json_and_plain_replies() -> None:
    q = Question(
        key="dest.dir",
        task_scope="p/a",
        record_scope="p",
        recorded_value="out",
        recorded_on="2025-01-01",
        signals=["expired"],
        task="copy",
    )
    script = [
        Reply('{"answer": "correct", "value": "shared"}'),
        Reply("Yes, that is still right."),
        Reply('{"answer": "correct"}'),
    ]
    with ScriptedServer(script) as server:
        dev = EndpointDeveloper(LLMClient(EndpointConfig(role="judge", base_url=server.base_url, model="m")))
        answers = [dev.ask(q) for _ in script]
        asked = server.requests[0]["messages"][-1]["content"]
    assert [(a.kind, a.value) for a in answers] == [
        ("correct", "shared"),
        ("confirm", None),
        ("unknown", None),
    ]
    assert "dest.dir = 'out'" in asked and dev.questions == 3
