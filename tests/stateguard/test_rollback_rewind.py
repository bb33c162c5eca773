"""A rollback rewinds the worker with the workspace (paper A.6): scripted worker and LLM worker.

A test-only manager policy (`ExhaustRepairs`, scripted, no model) commits every turn except one,
which it repairs until the budget of 3 is spent and then abandons; the harness rolls the
workspace back to the last valid checkpoint and restores the worker snapshot taken with it.
The LLM worker talks to a scripted model over real HTTP (`tests/support/scripted_server.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stateguard.actions import RawAction
from stateguard.flows import LONGDS
from stateguard.observation import EventType, ManagerObservation
from stateguard.policies.base import Activation, ManagerContext
from stateguard.preflight import START_CHECKPOINT
from stateguard.rollout import rollout
from stateguard.task import Task, Turn
from stateguard.trace import read_trace
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workers.scripted import ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.support.scripted_server import Reply, Respond, ScriptedServer

CODE = {
    1: "revenue = 1200\nprint(json.dumps({'revenue': revenue}))",
    2: "margin = revenue - 700\nprint(json.dumps({'margin': margin}))",
    3: "share = revenue / 12\nprint(json.dumps({'share': share}))",
}
QUESTIONS = {
    1: "What is the total revenue?",
    2: "What is the margin after costs of 700?",
    3: "What is one twelfth of the revenue?",
}
TASK = Task(task_id="rewind", turns=[Turn(turn_id=t, question=QUESTIONS[t], code=CODE[t]) for t in (1, 2, 3)])
HINT = {"error_variables": [], "faulty_reasoning": "the costs used are not the ones the question names"}


class ExhaustRepairs:
    """Scripted test policy: commit each turn, but repair `target` until the budget is spent, then abandon."""

    name = "exhaust-repairs"

    def __init__(self, target: int, variable: str):
        self.target, self.variable = target, variable

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        turn = ctx.turn.turn_id if ctx.turn is not None else None
        if obs.stage == "idle":
            if obs.event_type is EventType.TURN_START:
                yield RawAction(name="OPEN_STATE", arguments={"issue": f"turn {turn}"})
            else:
                yield RawAction(name="ABSTAIN", arguments={})
        elif obs.stage in ("open", "repairing"):
            names = [{"name": self.variable}] if turn == self.target else []
            yield RawAction(
                name="UPDATE_STATE", arguments={"used_variables": names, "conclusions": [f"turn {turn} done"]}
            )
        elif obs.stage == "updated" and turn == self.target:
            if obs.repair_attempts < obs.repair_budget:
                hint = {**HINT, "error_variables": [self.variable]}
                yield RawAction(
                    name="REPAIR",
                    arguments={"analytical_evidence": "scripted test evidence", "error_hint": hint},
                )
            else:
                yield RawAction(name="ABANDON_STATE", arguments={})
        elif obs.stage == "updated":
            yield RawAction(name="FINALIZE_RELATIONS", arguments={"mode": "confirm"})
        else:
            yield RawAction(name="COMMIT_STATE", arguments={})


def _events(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    return [e.payload for e in read_trace(run_dir / "trace.jsonl") if e.kind == kind]


def test_scripted_worker_is_rewound_to_the_last_commit(tmp_path: Path) -> None:
    ws, worker = DictWorkspace(), ScriptedWorker(reference=TASK)
    result = rollout(TASK, worker, ws, flow=LONGDS, manager=ExhaustRepairs(2, "margin"), run_dir=tmp_path)
    (rollback,) = _events(tmp_path, "rollback")
    assert rollback == {"state_id": "S2", "checkpoint": "ckpt-S1", "worker": True}
    abandon = next(a for a in _events(tmp_path, "action") if a["name"] == "ABANDON_STATE")
    assert "worker context rewound to ckpt-S1" in abandon["notes"]
    assert worker._run_turns == [1, 3]  # turn 2 left the worker's context with the rollback
    assert worker.answers == {
        1: {"revenue": 1200},
        2: {"margin": 500},
        3: {"share": 100.0},
    }  # submitted stays
    assert "margin" not in ws.namespace and ws.namespace["share"] == 100.0
    assert result.committed_states == ["S1", "S3"]


def test_rollback_before_any_commit_goes_to_the_start_checkpoint(tmp_path: Path) -> None:
    ws, worker = DictWorkspace(), ScriptedWorker(reference=TASK)
    rollout(TASK, worker, ws, flow=LONGDS, manager=ExhaustRepairs(1, "revenue"), run_dir=tmp_path)
    (rollback,) = _events(tmp_path, "rollback")
    assert rollback["checkpoint"] == START_CHECKPOINT
    (bound,) = _events(tmp_path, "binding_checked")
    assert bound["start_checkpoint"] == START_CHECKPOINT
    assert worker._run_turns == [2, 3]
    # turn 2 ran on the rewound workspace: `revenue` was gone, so its reference code failed
    steps = {s["turn"]: s for s in _events(tmp_path, "worker_step")}
    assert steps[2]["error"] is not None and "revenue" in steps[2]["error"]


def _turn_of(messages: list[dict[str, Any]]) -> int:
    asked = [t for m in messages if m["role"] == "user" for t, q in QUESTIONS.items() if q in m["content"]]
    return asked[-1]


def scripted_model(request: dict[str, Any]) -> Reply:
    """Code for the current question; after its output, the JSON answer; a repair hint: code again."""
    messages = request["messages"]
    turn, last = _turn_of(messages), messages[-1]["content"]
    if last.startswith("Output:"):
        return Reply(content=f"<answer>{last.splitlines()[-1]}</answer>")
    return Reply(content=f"Computing turn {turn}.\n```python\n{CODE[turn]}\n```")


def test_llm_worker_context_is_rewound(tmp_path: Path) -> None:
    from stateguard.llm import EndpointConfig, LLMClient

    with ScriptedServer([Respond(scripted_model)] * 40) as server:
        client = LLMClient(
            EndpointConfig(role="worker", base_url=server.base_url, model="scripted", max_retries=0)
        )
        worker, ws = LLMWorker(client), DictWorkspace()
        rollout(TASK, worker, ws, flow=LONGDS, manager=ExhaustRepairs(2, "margin"), run_dir=tmp_path)
        requests = [r["messages"] for r in server.requests]
    seen = [m["content"] for m in requests[-1]]
    assert any(QUESTIONS[1] in c for c in seen) and any(QUESTIONS[3] in c for c in seen)
    assert not any(QUESTIONS[2] in c for c in seen)  # turn 2 and its repair hints were rewound away
    assert not any("<repair_hint>" in c for c in seen)
    turn2 = [m for m in requests if _turn_of(m) == 2]
    assert sum("<repair_hint>" in m[-1]["content"] for m in turn2) == 3  # it did see the hints at the time
    assert worker.answers[2] == {"margin": 500} and worker.answers[3] == {"share": 100.0}
    assert json.dumps(worker.messages).count(QUESTIONS[2]) == 0


class RefusingWorkspace(DictWorkspace):
    """A workspace whose restore (and, optionally, transaction snapshot) is refused the way the
    sandbox refuses a checkpoint whose loading trips the kernel: a RuntimeError saying why."""

    def __init__(self, refuse_txn: bool = False) -> None:
        super().__init__()
        self.refuse_txn = refuse_txn

    def snapshot(self, checkpoint_id: str, *, copy_connections: bool = False) -> None:
        if self.refuse_txn and checkpoint_id.startswith("txn-"):
            raise RuntimeError("checkpoint refused: the kernel was rebuilt")
        super().snapshot(checkpoint_id)

    def restore(self, checkpoint_id: str) -> None:
        raise RuntimeError("checkpoint refused: loading it trips the kernel")


def test_a_refused_restore_ends_the_abandon_without_a_rewind_and_the_run_goes_on(tmp_path: Path) -> None:
    ws, worker = RefusingWorkspace(), ScriptedWorker(reference=TASK)
    result = rollout(TASK, worker, ws, flow=LONGDS, manager=ExhaustRepairs(2, "margin"), run_dir=tmp_path)
    (rollback,) = _events(tmp_path, "rollback")
    assert rollback["worker"] is False and "trips the kernel" in rollback["refused"]
    abandon = next(a for a in _events(tmp_path, "action") if a["name"] == "ABANDON_STATE")
    assert abandon["accepted"] and any("nothing rewound" in n for n in abandon["notes"])
    assert result.committed_states == ["S1", "S3"] and worker._run_turns == [
        1,
        2,
        3,
    ]  # turn 2 not rewound away


def test_a_refused_transaction_snapshot_refuses_the_action_instead_of_crashing(tmp_path: Path) -> None:
    ws, worker = RefusingWorkspace(refuse_txn=True), ScriptedWorker(reference=TASK)
    result = rollout(TASK, worker, ws, flow=LONGDS, manager=ExhaustRepairs(2, "margin"), run_dir=tmp_path)
    refused = [a for a in _events(tmp_path, "action") if not a["accepted"]]
    assert [a["name"] for a in refused] == ["REPAIR"]  # the heavy repair, which snapshots first
    assert "could not be checkpointed first" in refused[0]["feedback"]
    assert result.committed_states == ["S1", "S3"]  # the run went on
