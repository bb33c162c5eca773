"""Hierarchical manager and the LLM worker, each through the real rollout loop with a scripted model
on a real 127.0.0.1 socket. The observer and freeform ablations: test_ablations.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.scorers.fields import per_turn_correct
from stateguard.artifacts.events import ActionEvent, LlmCallEvent, ToolEvent
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.flows import LONGDS
from stateguard.llm.client import LLMClient
from stateguard.llm.endpoints import EndpointConfig
from stateguard.policies.hierarchical import HierarchicalManager
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.trace import Trace, read_trace
from stateguard.verification.verifier import SemanticVerifier
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workspace import DictWorkspace
from tests.support.scripted_server import Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[3]
COUNTERFACTUAL = (
    'region_counts = sales.groupby("region")["amount"].sum().sort_values(ascending=False)\n\n'
    'result = {"answer_type": "ranking", "top_region": str(region_counts.index[0]), '
    '"orders": int(region_counts.iloc[0])}\nprint(json_dumps_rounded(result, 2))'
)


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")


def client(server: ScriptedServer, role: str = "manager") -> LLMClient:
    return LLMClient(
        EndpointConfig(role=role, base_url=server.base_url, model="m", timeout_s=2, max_retries=0)
    )


def call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": arguments}])


# The model's moves on turn 3's plausible but wrong ranking (by amount instead of by orders).
RANKING_EVIDENCE = call("inspect_python", code="region_counts = sales.groupby('region')['amount'].sum()")
RANKING_REPAIR = call(
    "REPAIR",
    analytical_evidence="inspect_python: the ranking sums amount instead of counting orders",
    error_hint={
        "error_variables": ["region_counts"],
        "faulty_reasoning": "the ranking uses order amounts, but the question asks which region has the most orders",
    },
)


def correct(task: Task, answers: dict[int, Any]) -> dict[int, bool]:
    return per_turn_correct({t.turn_id: t.answer for t in task.turns}, answers)


def test_hierarchical_calls_the_model_only_where_rules_cannot_decide(task: Task, tmp_path: Path) -> None:
    # Turn 3 runs a plausible but wrong ranking (by amount): no rule fires, the question has a
    # semantic requirement ("most"), so the model is asked; it repairs, then approves the retry.
    script = [
        RANKING_EVIDENCE,
        RANKING_REPAIR,
        call("FINALIZE_RELATIONS", mode="confirm"),
    ]  # turn 3 (evidence, then the repair), then turn 3's retry
    with ScriptedServer(script) as server:
        manager = HierarchicalManager(
            RulesManager(), LLMManager(client(server)), semantic_pattern=r"\bwhich region\b"
        )
        faults = FaultModel(
            faults=[Fault(kind="counterfactual", turn=3, code=COUNTERFACTUAL), Fault(kind="stale", turn=5)]
        )
        result = rollout(
            task,
            ScriptedWorker(faults, reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=manager,
            run_dir=tmp_path,
        )
        assert server.remaining == 0
        asked_about = [json.dumps(r["messages"][1]["content"]) for r in server.requests]
    assert all(correct(task, result.answers).values())
    assert (
        manager.delegations == 2 and result.repairs == 2
    )  # one LLM repair (turn 3), one rules repair (turn 5)
    assert (
        result.manager_llm_calls == 3 and result.manager_activations > 20
    )  # most activations cost no model call
    assert all(
        "Turn 3: " in q and "Turn 4: " not in q for q in asked_about
    )  # the model saw the task only up to turn 3
    committed = {
        e.payload["state"]["id"]: e.payload["state"]
        for e in read_trace(tmp_path / "trace.jsonl")
        if e.kind == "state_committed"
    }
    assert {"type": "invalidate", "related_state_id": "S1"} in committed["S4"][
        "relations"
    ]  # relations stay the rules tier's


def test_each_manager_model_call_is_logged_with_its_activation(task: Task, tmp_path: Path) -> None:
    # The hierarchical run above, with the calls logged: llm_calls.jsonl joins the trace on the
    # activation id (the evidence and the repair share one activation, the approval is a later one).
    calls_log = Trace(RolloutFolder(tmp_path).llm_calls)
    with ScriptedServer(
        [RANKING_EVIDENCE, RANKING_REPAIR, call("FINALIZE_RELATIONS", mode="confirm")]
    ) as server:
        model = LLMClient(
            EndpointConfig(role="manager", base_url=server.base_url, model="m", timeout_s=2, max_retries=0),
            trace=calls_log,
        )
        manager = HierarchicalManager(RulesManager(), LLMManager(model), semantic_pattern=r"\bwhich region\b")
        faults = FaultModel(faults=[Fault(kind="counterfactual", turn=3, code=COUNTERFACTUAL)])
        rollout(
            task,
            ScriptedWorker(faults, reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=manager,
            run_dir=tmp_path,
        )
    calls_log.close()
    calls = [e.data for e in read_trace(RolloutFolder(tmp_path).llm_calls) if isinstance(e, LlmCallEvent)]
    assert [c.outcome for c in calls] == ["completion"] * 3
    events = read_trace(RolloutFolder(tmp_path).trace)
    (inspected,) = [e.data for e in events if isinstance(e, ToolEvent) and e.data.name == "inspect_python"]
    decided = {
        e.data.name: e.data.activation
        for e in events
        if isinstance(e, ActionEvent) and e.data.accepted and e.data.name == "REPAIR"
    }
    first, second, third = (c.activation for c in calls)
    assert first is not None and first == second == inspected.activation == decided["REPAIR"]
    assert third is not None and third > second
    approvals = [
        e.data.activation
        for e in events
        if isinstance(e, ActionEvent) and e.data.accepted and e.data.name == "FINALIZE_RELATIONS"
    ]
    assert third in approvals  # the model's approval of the retry, in the activation it was asked


def _delegated(task: Task, tmp: Path, triggers: Any) -> tuple[HierarchicalManager, list[str]]:
    """A clean run of the hierarchical manager with semantic verification; the model always confirms."""
    finalize = call("FINALIZE_RELATIONS", mode="confirm")
    with ScriptedServer([finalize] * 30) as server:
        manager = HierarchicalManager(
            RulesManager(semantic=SemanticVerifier()), LLMManager(client(server)), triggers=triggers
        )
        result = rollout(
            task,
            ScriptedWorker(FaultModel(faults=[]), reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=manager,
            run_dir=tmp,
        )
        asked = [r["messages"][1]["content"] for r in server.requests]
    assert result.repairs == 0 and all(correct(task, result.answers).values())
    assert result.manager_llm_calls == manager.delegations == len(asked)
    return manager, asked


def test_hierarchical_delegates_on_unverified_requirements_with_the_evidence(
    task: Task, tmp_path: Path
) -> None:
    # With semantic verification the default trigger is evidence: the model is asked only about
    # states where an extracted requirement could not be tied to the code or data, and it sees
    # the requirements, the code notes and the probe results. The keyword trigger asks more often.
    manager, asked = _delegated(task, tmp_path / "evidence", None)
    assert manager.triggers == {"unverified_requirement"}
    assert manager.delegations > 0
    for message in asked:
        evidence = json.loads(message.split("DETERMINISTIC VERIFICATION", 1)[1].split("\n", 1)[1])
        assert evidence["unverified"] and evidence["requirements"] and "probe_results" in evidence
    keyword, _ = _delegated(task, tmp_path / "keyword", ("semantic_requirement",))
    assert manager.delegations < keyword.delegations


def test_unverified_trigger_needs_semantic_verification(task: Task) -> None:
    with ScriptedServer() as server, pytest.raises(ValueError, match="semantic verification"):
        HierarchicalManager(RulesManager(), LLMManager(client(server)), triggers=("unverified_requirement",))


def test_llm_worker_writes_code_reads_output_and_answers(task: Task, tmp_path: Path) -> None:
    one = Task(task_id="one", turns=task.turns[:1], base_path=task.base_path)
    script = [
        Reply(
            content='Load it.\n```python\nsales = pd.read_csv(f"{BASE_PATH}/data/sales.csv")\nlen(sales), float(sales["amount"].sum())\n```'
        ),
        Reply(content='Done.\n<answer>{"n_orders": 10, "revenue": 1060.0}</answer>'),
    ]
    with ScriptedServer(script) as server:
        worker = LLMWorker(client(server, "worker"))
        result = rollout(one, worker, DictWorkspace(), flow=LONGDS, run_dir=tmp_path)
        second = server.requests[1]["messages"]
    assert correct(one, result.answers) == {1: True} and result.worker_steps == 2
    assert (
        second[-1]["role"] == "user" and "(10, 1060.0)" in second[-1]["content"]
    )  # the executor output came back
    assert "Load the sales data" in second[1]["content"]  # the user turn was injected
