"""`hierarchical` is never worse than `rules`, whatever the model tier does.

The model tier is a scripted server that answers every delegated verdict with a random mix of
what real endpoints do: unusable text, a verdict, a false alarm, a destructive action it is not
offered, an illegal action, HTTP 500/400, a malformed 200, and finally a spent script (HTTP 410).
Against the rules manager alone on the same task, faults and seed, hierarchical must commit at
least as many states, issue at least the rules tier's repairs, and be right on at least as many
turns — in both flows, with every failed delegation visible as a `manager_fallback` event. (A
REPAIR is offered to the model only after a tool produced evidence; a false alarm it then raises
is a decision, not a failure: harmless in the turn-aligned flow, where the worker recomputes.)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from eval.scorers.fields import per_turn_correct
from stateguard.flows import LONGDS, FlowConfig
from stateguard.llm import EndpointConfig, LLMClient
from stateguard.policies.hierarchical import HierarchicalManager
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.rules import RulesManager
from stateguard.rollout import RolloutResult, rollout
from stateguard.task import Task, load_task
from stateguard.trace import read_trace
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.support.scripted_server import Raw, Reply, ScriptedServer, Status

ROOT = Path(__file__).resolve().parents[3]
SEGMENT = FlowConfig(
    name="demo-segment",
    regime="segment_induced",
    review_every=3,
    budget_unit="task",
    baseline_budget=200,
    stateguard_budget=200,
)
FAULTS = [Fault(kind="stale", turn=5), Fault(kind="exec_error", turn=2)]


def call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": arguments}])


ENDPOINT_BEHAVIOURS = [
    Reply(content="The state looks plausible to me."),
    call("FINALIZE_RELATIONS", mode="confirm"),
    call(
        "REPAIR",
        analytical_evidence="the reported value looks off",
        error_hint={
            "error_variables": ["result"],
            "faulty_reasoning": "the reported value does not follow from the steps",
        },
    ),
    call("ABANDON_STATE", reason="not sure about this state"),
    call("COMMIT_STATE"),
    TOOL := call("check_execution", step_id=0),
    Status(500, "overloaded"),
    Status(400, "bad request"),
    Raw('{"choices": "nope"}'),
    Raw("<html>gateway</html>", content_type="text/html"),
]


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")


def _run(task: Task, flow: FlowConfig, manager: Any, run_dir: Path) -> tuple[RolloutResult, int]:
    result = rollout(
        task,
        ScriptedWorker(FaultModel(faults=FAULTS), reference=task),
        DictWorkspace(),
        flow=flow,
        manager=manager,
        run_dir=run_dir,
    )
    right = sum(per_turn_correct({t.turn_id: t.answer for t in task.turns}, result.answers).values())
    return result, right


@pytest.fixture(scope="module")
def rules_runs(task: Task, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RolloutResult, int]]:
    out = tmp_path_factory.mktemp("rules")
    return {
        name: _run(task, flow, RulesManager(), out / name)
        for name, flow in (("turn", LONGDS), ("segment", SEGMENT))
    }


@pytest.mark.parametrize(
    ("flow_name", "seed"), [("turn", 0), ("turn", 1), ("turn", 2), ("segment", 3), ("segment", 4)]
)
def test_hierarchical_is_never_worse_than_rules(
    task: Task, tmp_path: Path, rules_runs: Any, flow_name: str, seed: int
) -> None:
    rng = random.Random(seed)
    # In the segment flow an evidence-backed false alarm is the model's own (wrong) decision and can
    # cost states there (see docs/design_llm.md): these scripts give the model no tool to back one.
    choices = (
        ENDPOINT_BEHAVIOURS if flow_name == "turn" else [b for b in ENDPOINT_BEHAVIOURS if b is not TOOL]
    )
    script = [rng.choice(choices) for _ in range(rng.randint(5, 40))]
    flow = LONGDS if flow_name == "turn" else SEGMENT
    rules, rules_right = rules_runs[flow_name]
    with ScriptedServer(script) as server:
        client = LLMClient(
            EndpointConfig(role="manager", base_url=server.base_url, model="m", timeout_s=2, max_retries=0)
        )
        manager = HierarchicalManager(RulesManager(), LLMManager(client, max_failures=3), triggers=["always"])
        result, right = _run(task, flow, manager, tmp_path / "run")
    assert not result.degraded
    assert len(result.committed_states) >= len(rules.committed_states)
    assert result.repairs >= rules.repairs and right >= rules_right
    events = read_trace(tmp_path / "run" / "trace.jsonl")
    fallbacks = [e.payload for e in events if e.kind == "manager_fallback"]
    assert all(f["exit"] == "rules tier decision" for f in fallbacks)
    assert result.manager_usage["fallbacks"] == len(fallbacks) == result.manager_fallbacks
    abandoned = [e for e in events if e.kind == "state_abandoned"]
    rules_abandoned = [
        e for e in read_trace(Path(rules.run_dir or "") / "trace.jsonl") if e.kind == "state_abandoned"
    ]
    assert len(abandoned) <= len(rules_abandoned)  # the model tier never abandons a state


def test_a_dead_endpoint_leaves_exactly_the_rules_run(task: Task, tmp_path: Path, rules_runs: Any) -> None:
    rules, rules_right = rules_runs["turn"]
    client = LLMClient(
        EndpointConfig(
            role="manager", base_url="http://127.0.0.1:9/v1", model="m", timeout_s=1, max_retries=0
        )
    )
    manager = HierarchicalManager(RulesManager(), LLMManager(client), triggers=["always"])
    result, right = _run(task, LONGDS, manager, tmp_path / "run")
    assert (result.committed_states, result.repairs, result.answers, right) == (
        rules.committed_states,
        rules.repairs,
        rules.answers,
        rules_right,
    )
    assert (
        result.manager_usage["failed_requests"] == 2 and result.manager_llm_calls == 0 and not result.degraded
    )
