"""The paper's two state ablations (C.5) as built: what each prompt holds, and what each sees.

Both run through the real rollout loop with a scripted model on a real 127.0.0.1 socket.
`docs/ablations.md` is the table these tests pin down.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from stateguard.flows import LONGDS
from stateguard.hints import REMARK_PREAMBLE
from stateguard.lifecycle import ControlAction, Regime, ToolAction
from stateguard.llm.client import LLMClient
from stateguard.llm.endpoints import EndpointConfig
from stateguard.policies import prompts
from stateguard.policies.freeform import FREEFORM_POLICY
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.observer import OBSERVER_SYSTEM, ObserverManager, parse_hint
from stateguard.policies.prompts import freeform_system_prompt
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.trace import read_trace
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.support.scripted_server import Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[3]
QUIET = Reply(content='{"hint": null}')
REMARK = (
    "margin_per_order is built from a margin whose revenue input was computed before "
    "revenue was redefined in an earlier step"
)


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")


def client(server: ScriptedServer) -> LLMClient:
    return LLMClient(
        EndpointConfig(role="manager", base_url=server.base_url, model="m", timeout_s=2, max_retries=0)
    )


def call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": arguments}])


# ----------------------------------------------------------------------------- free-form memory
@pytest.mark.parametrize("regime", list(Regime))
def test_freeform_keeps_role_boundary_and_lifecycle_and_swaps_only_the_controller(regime: Regime) -> None:
    full, free = prompts.system_prompt(regime), prompts.system_prompt(regime, "freeform")
    assert free == freeform_system_prompt(regime)
    assert full.replace(prompts.CONTROLLER, FREEFORM_POLICY) == free  # the one and only difference
    assert prompts.SYSTEM in free  # role (supervise, never solve) and information boundary (no ground truth)
    life, other = (
        (prompts.TURN_LIFECYCLE, prompts.SEGMENT_LIFECYCLE)
        if regime is Regime.TURN_ALIGNED
        else (prompts.SEGMENT_LIFECYCLE, prompts.TURN_LIFECYCLE)
    )
    assert life in free and other not in free
    assert prompts.CONTROLLER not in free and prompts.STATE_HINT_RULES in free
    for name in [a.value for a in ControlAction] + [t.value for t in ToolAction]:
        assert name in free, name
    for shape in ('{"text": "..."}', '"code": "<Python that runs on its own>"', '"name": "<workspace name>"'):
        assert shape in FREEFORM_POLICY


def test_freeform_manager_sends_that_prompt_and_the_same_tools(task: Task, tmp_path: Path) -> None:
    one = Task(task_id="one", turns=task.turns[:1], base_path=task.base_path)
    script = [
        call("OPEN_STATE", issue="notes"),
        call("UPDATE_STATE", used_variables=[{"name": "revenue", "value": 1060.0}]),
        call("FINALIZE_RELATIONS", mode="confirm"),
        call("COMMIT_STATE"),
    ]
    with ScriptedServer(script) as server:
        manager = LLMManager(client(server), variant="freeform")
        result = rollout(
            one,
            ScriptedWorker(reference=one),
            DictWorkspace(),
            flow=LONGDS,
            manager=manager,
            run_dir=tmp_path,
        )
        first = server.requests[0]
    with ScriptedServer(script) as server:  # the full manager on the same script, for comparison
        rollout(
            one,
            ScriptedWorker(reference=one),
            DictWorkspace(),
            flow=LONGDS,
            manager=LLMManager(client(server)),
            run_dir=tmp_path / "full",
        )
        full = server.requests
    assert result.committed_states == ["S1"] and manager.name == "freeform"
    assert first["messages"][0]["content"] == freeform_system_prompt(Regime.TURN_ALIGNED)
    assert (
        first["tools"] == full[0]["tools"]
    )  # the harness schema is unchanged (the actions offered at the stage)
    assert first["messages"][1]["content"].startswith("TASK\nTurn 1: ")  # same task block and observation


# ----------------------------------------------------------------------------- observer
@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ('{"hint": null}', None),
        ('{"hint": "  "}', None),
        ('sure: {"hint": "step 3 ignores the filter"}', "step 3 ignores the filter"),
        ('{"issue": true}', None),
        ("no json", None),
        ('{"hint": 3}', None),
    ],
)
def test_observer_output_schema(text: str, hint: str | None) -> None:
    assert parse_hint(text) == hint


def test_observer_sees_only_the_window_the_budget_and_termination(task: Task, tmp_path: Path) -> None:
    script = [QUIET, QUIET, QUIET, QUIET, Reply(content=json.dumps({"hint": REMARK})), QUIET]
    with ScriptedServer(script) as server:
        observer = ObserverManager(client(server), window=3)
        worker = ScriptedWorker(FaultModel(faults=[Fault(kind="stale", turn=5)]), reference=task)
        result = rollout(task, worker, DictWorkspace(), flow=LONGDS, manager=observer, run_dir=tmp_path)
        requests = [r["messages"] for r in server.requests]
    assert len(requests) == 6  # one fresh call per turn end, none at turn starts
    events = read_trace(tmp_path / "trace.jsonl")
    used: dict[int, int] = {}  # worker steps run inside each turn's budget (recomputes included)
    current = 0
    for e in events:
        if e.kind == "turn_start":
            current = e.payload["turn_id"]
        elif e.kind == "worker_step":
            used[current] = used.get(current, 0) + 1
    steps_per_turn = [used[t] for t in range(1, 7)]
    for turn, messages in enumerate(requests, start=1):
        assert [m["role"] for m in messages] == ["system", "user"]  # rebuilt every activation: no memory
        assert messages[0]["content"] == OBSERVER_SYSTEM
        user = messages[1]["content"]
        assert f"REMAINING WORKER BUDGET: {40 - steps_per_turn[turn - 1]} step(s)" in user
        assert user.endswith("TERMINATING: " + ("yes" if turn == 6 else "no"))
        assert len(re.findall(r"^step \d+$", user, re.M)) <= 3
        assert not any(t.question[:40] in user for t in task.turns)  # no question text
        for hidden in ("OBSERVATION", "committed", "S1", "draft", REMARK):
            assert hidden not in user, hidden  # no state, no earlier manager output
    assert result.committed_states == [] and result.repairs == 0
    (advice,) = [e.payload for e in events if e.kind == "advice"]
    assert advice["hint"]["error_variables"] == [] and advice["hint"]["faulty_reasoning"] == REMARK
    (delivered,) = [e.payload["text"] for e in events if e.kind == "hint_delivered"]
    assert REMARK_PREAMBLE in delivered and "affected:" not in delivered
    assert not any(e.kind in ("tool", "state_opened") for e in events)
    assert result.answers[5] == task.turn(5).answer  # the scripted worker recomputed turn 5 after the remark


def test_observer_hint_with_code_or_a_value_is_refused(task: Task, tmp_path: Path) -> None:
    one = Task(task_id="one", turns=task.turns[:1], base_path=task.base_path)
    leak = Reply(content=json.dumps({"hint": "fix it with `revenue = sales['amount'].sum()`"}))
    with ScriptedServer([leak]) as server:
        rollout(
            one,
            ScriptedWorker(reference=one),
            DictWorkspace(),
            flow=LONGDS,
            manager=ObserverManager(client(server)),
            run_dir=tmp_path,
        )
    events = read_trace(tmp_path / "trace.jsonl")
    assert not any(e.kind in ("advice", "hint_delivered") for e in events)
    rejected = [e.payload for e in events if e.kind == "action" and e.payload.get("accepted") is False]
    assert rejected and "contains code" in rejected[0]["feedback"]
