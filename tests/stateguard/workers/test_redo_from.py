"""A fix redoes the faulty turn from the workspace as the turn began (ResponseModel.redo_from)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from eval.scorers.fields import per_turn_correct
from stateguard.hints import Hint
from stateguard.task import Task, Turn
from stateguard.worker_contract import WorkerMessage
from stateguard.workers import Fault, FaultModel, ResponseModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

# Turn 2 reads the frame it rebuilds, and reports how many rows there were before and after.
TURN1 = 'rows = [{"v": v} for v in range(10)]\nresult = {"answer_type": "scalar", "n": len(rows)}\nprint(json.dumps(result))'
TURN2 = (
    "n_before = len(rows)\nrows = [r for r in rows if r['v'] >= 4]\n"
    'result = {"answer_type": "scalar", "n_before": n_before, "n_after": len(rows)}\nprint(json.dumps(result))'
)
TURN3 = 'result = {"answer_type": "scalar", "total": sum(r["v"] for r in rows)}\nprint(json.dumps(result))'
TASK = Task(
    task_id="self_rebuild",
    turns=[
        Turn(turn_id=1, question="How many rows?", code=TURN1, answer={"n": 10}),
        Turn(
            turn_id=2,
            question="Keep v of 4 or more; rows before and after?",
            code=TURN2,
            answer={"n_before": 10, "n_after": 6},
        ),
        Turn(turn_id=3, question="Sum of v?", code=TURN3, answer={"total": 39}),
    ],
)
THRESHOLD = Fault(kind="counterfactual", turn=2, semantic="changed_threshold", replace=[(">= 4", ">= 7")])
HINT = (["rows"], "rows uses the wrong threshold: the turn keeps v of 7 or more, the question says 4")


class _Counting(DictWorkspace):
    """A DictWorkspace that counts the checkpoints taken (to show clean runs take none)."""

    def __init__(self) -> None:
        super().__init__()
        self.taken: list[str] = []

    def snapshot(self, checkpoint_id: str, *, copy_connections: bool = False) -> None:
        self.taken.append(checkpoint_id)
        super().snapshot(checkpoint_id)


def _run(
    faults: list[Fault],
    response: ResponseModel,
    hint_after: int | None,
    on_hint: Callable[[_Counting], None] | None = None,
) -> tuple[dict[int, bool], Any]:
    """Run the worker alone; after turn `hint_after`'s work, deliver HINT (then `on_hint(ws)`)."""
    worker = ScriptedWorker(FaultModel(faults=faults), response, reference=TASK)
    ws = _Counting()
    ws.run("import json")
    worker.start(TASK.agent_view(), ws)
    step = 0
    for turn in TASK.agent_view().turns:
        worker.inject(WorkerMessage.user_turn(turn))
        if turn.turn_id == hint_after:
            while not worker.done():
                worker.step(step)
                step += 1
            worker.inject(
                WorkerMessage.from_hint(
                    Hint(kind="repair", error_variables=HINT[0], faulty_reasoning=HINT[1])
                )
            )
            if on_hint is not None:
                on_hint(ws)
        while not worker.done():
            worker.step(step)
            step += 1
    answers = worker.final_answer()
    return per_turn_correct({t.turn_id: t.answer for t in TASK.turns}, answers), (worker, ws, answers)


def test_a_fix_redoes_a_turn_that_reads_what_it_rebuilds_from_the_turns_inputs() -> None:
    correct, (worker, ws, answers) = _run([THRESHOLD], ResponseModel(p_flip=0.0), hint_after=2)
    assert correct == {1: True, 2: True, 3: True}
    assert answers[2] == {"answer_type": "scalar", "n_before": 10, "n_after": 6}
    assert ws.taken == ["worker-before-turn-2"]
    assert not ws.has_checkpoint("worker-before-turn-2")  # used once, then dropped
    assert [f.turn for f in worker.fixed] == [2]


def test_in_place_the_redo_rereads_the_faulty_output_and_stays_wrong() -> None:
    correct, (_, ws, answers) = _run(
        [THRESHOLD], ResponseModel(p_flip=0.0, redo_from="current"), hint_after=2
    )
    # the faulty run left 3 rows (7, 8, 9): the redo counts them as "before" and keeps all of them
    assert answers[2] == {"answer_type": "scalar", "n_before": 3, "n_after": 3}
    assert correct == {1: True, 2: False, 3: False}
    assert ws.taken == []


@pytest.mark.parametrize("faults", [[], [Fault(kind="precision", turn=3)]])
def test_no_save_point_for_turns_the_worker_gets_right(faults: list[Fault]) -> None:
    _, (_, ws, _) = _run(faults, ResponseModel(p_flip=0.0), hint_after=None)
    assert ws.taken == [f"worker-before-turn-{f.turn}" for f in faults]


def test_an_unfixed_fault_keeps_its_answer_and_the_workspace_is_not_rewound() -> None:
    correct, (_, ws, answers) = _run([THRESHOLD], ResponseModel(p_flip=0.0, p_fix=0.0), hint_after=2)
    assert answers[2] == {"answer_type": "scalar", "n_before": 10, "n_after": 3}
    assert correct == {1: True, 2: False, 3: False}
    assert ws.has_checkpoint("worker-before-turn-2")


def test_a_redo_drops_the_save_points_of_the_turns_it_replaces() -> None:
    """Mistakes at turns 2 and 3; the hint after turn 3 fixes turn 2, whose redo re-runs turn 3 too:
    turn 3's save point held a workspace with turn 2's mistake in it, and goes."""

    def at_the_hint(ws: _Counting) -> None:
        assert ws.taken == ["worker-before-turn-2", "worker-before-turn-3"]
        assert not ws.has_checkpoint("worker-before-turn-2")
        assert not ws.has_checkpoint("worker-before-turn-3")

    precision = Fault(kind="precision", turn=3, decimals=0)
    _, (_, ws, _) = _run([THRESHOLD, precision], ResponseModel(p_flip=0.0), hint_after=3, on_hint=at_the_hint)
    assert ws.get_value("rows") == [{"v": v} for v in range(4, 10)]
