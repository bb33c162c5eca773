"""Declared worker mistakes: what can apply where, and how the scripted worker answers repair hints."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from eval.scorers.fields import per_turn_correct
from stateguard.flows import LONGDS
from stateguard.hints import Hint
from stateguard.rollout import rollout
from stateguard.task import Task, load_task, prelude
from stateguard.worker_contract import WorkerMessage
from stateguard.workers import (
    Fault,
    FaultError,
    FaultModel,
    ResponseModel,
    ScriptedWorker,
    check_fault,
    check_faults,
)
from stateguard.workers.response import names_kind
from stateguard.workspace import DictWorkspace

TASK_DIR = Path(__file__).resolve().parents[3] / "eval" / "benchmarks" / "demo" / "six_turn"


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        (Fault(kind="exec_error", turn=9), "has no turn 9"),
        (Fault(kind="stale", turn=2), "nothing this turn recomputes is stale"),
        (Fault(kind="counterfactual", turn=2, replace=[("no such text", "x")]), "occurs 0 times"),
        (Fault(kind="counterfactual", turn=2, replace=[("round(", "ceil(")]), "occurs 2 times"),
        (Fault(kind="counterfactual", turn=2, code="this is (not python"), "does not parse"),
        (Fault(kind="stale", turn=5), None),
        (Fault(kind="precision", turn=2), None),
        (Fault(kind="exec_error", turn=3), None),
        (
            Fault(
                kind="counterfactual", turn=3, semantic="aggregation_swap", replace=[(".size()", ".count()")]
            ),
            None,
        ),
    ],
)
def test_check_fault_names_why_a_fault_cannot_apply(task: Task, fault: Fault, problem: str | None) -> None:
    found = check_fault(task, fault)
    assert (found is None) if problem is None else (problem in (found or "") and fault.describe() in found)


def test_fault_fields_are_validated_and_errors_name_the_variant(task: Task) -> None:
    with pytest.raises(ValidationError, match="exactly one of `code` or `replace`"):
        Fault(kind="counterfactual", turn=2)
    with pytest.raises(ValidationError, match="for counterfactual faults only"):
        Fault(kind="stale", turn=2, semantic="join")
    assert Fault(kind="counterfactual", turn=2, code="x = 1", semantic="join").label == "counterfactual:join"
    with pytest.raises(FaultError, match=r"variant 'v1'.*stale at turn 2"):
        check_faults(task, [Fault(kind="stale", turn=2)], where="task six_turn, variant 'v1'")


@pytest.mark.parametrize(
    ("reason", "label", "named"),
    [
        ("margin is stale: it was computed from an earlier definition of revenue", "stale", True),
        ("the reported values are rounded more coarsely than the 2 decimal places", "precision", True),
        ("a block of this turn raised an error and was never re-run", "exec_error", True),
        ("the reported values are rounded more coarsely than the 2 decimal places", "stale", False),
        ("the rows were grouped by the wrong key", "counterfactual:grouping_key", True),
        ("the comparison direction is reversed", "counterfactual:join", False),
    ],
)
def test_a_hint_names_a_kind_only_with_its_words(reason: str, label: str, named: bool) -> None:
    assert names_kind(reason, label) is named


def _answers(
    task: Task, faults: list[Fault], hints: dict[int, tuple[list[str], str]], response: ResponseModel
) -> dict[int, bool]:
    """Run the worker alone; after turn t's work, deliver the repair hint hints[t] and let it respond."""
    worker = ScriptedWorker(FaultModel(faults=faults), response, reference=task)
    ws = DictWorkspace()
    ws.run(prelude(task))
    worker.start(task.agent_view(), ws)
    step = 0
    for turn in task.agent_view().turns:
        worker.inject(WorkerMessage.user_turn(turn))
        while not worker.done():
            worker.step(step)
            step += 1
        if turn.turn_id in hints:
            names, reason = hints[turn.turn_id]
            worker.inject(
                WorkerMessage.from_hint(Hint(kind="repair", error_variables=names, faulty_reasoning=reason))
            )
            while not worker.done():
                worker.step(step)
                step += 1
    return per_turn_correct({t.turn_id: t.answer for t in task.turns}, worker.final_answer())


STALE_REASON = (
    "margin is stale: it was computed from an earlier definition of revenue, which has since been redefined"
)


def test_a_hint_fixes_a_mistake_only_when_it_names_the_variable_and_the_kind(task: Task) -> None:
    honest = ResponseModel(p_flip=0.0)
    stale = [Fault(kind="stale", turn=5)]
    assert _answers(task, stale, {}, honest)[5] is False
    assert _answers(task, stale, {5: (["margin"], STALE_REASON)}, honest)[5] is True
    # the right variable but the wrong kind of problem: the worker cannot find the mistake
    assert (
        _answers(task, stale, {5: (["margin"], "the reported values carry too many decimal places")}, honest)[
            5
        ]
        is False
    )
    # the permissive model (the synthesis teacher's) recomputes on the variable alone
    assert (
        _answers(
            task, stale, {5: (["margin"], "check this")}, ResponseModel(identify="variable", p_flip=0.0)
        )[5]
        is True
    )


def test_an_identifying_hint_fixes_the_mistake_with_probability_p_fix(task: Task) -> None:
    stale, hint = [Fault(kind="stale", turn=5)], {5: (["margin"], STALE_REASON)}
    assert _answers(task, stale, hint, ResponseModel(p_flip=0.0, p_fix=1.0))[5] is True
    assert ResponseModel().p_fix == 1.0  # the default: an identifying hint always fixes
    # p_fix = 0: the hint names the variable and the kind, and the worker still keeps its wrong answer
    # (and p_flip = 1 flips nothing: the turn is faulted, not correct); turn 6 builds on turn 5
    unhinted = _answers(task, stale, {}, ResponseModel(p_flip=0.0))
    assert unhinted == {1: True, 2: True, 3: True, 4: True, 5: False, 6: False}
    assert _answers(task, stale, hint, ResponseModel(p_flip=1.0, p_fix=0.0)) == unhinted
    # a seeded draw per (seed, task, turn, hint): repeatable, and at about the rate asked
    half = ResponseModel(p_fix=0.5)
    draws = [half.takes_fix("t", turn, 1) for turn in range(400)]
    assert draws == [half.takes_fix("t", turn, 1) for turn in range(400)]
    assert 0.42 < sum(draws) / 400 < 0.58
    assert sum(ResponseModel(p_fix=0.1).takes_fix("t", turn, 1) for turn in range(400)) < 70
    # the fix draw is not the flip draw: at equal rates the two disagree somewhere
    both = ResponseModel(p_fix=0.5, p_flip=0.5)
    assert any(both.takes_fix("t", n, 1) != both.flips("t", n, 1) for n in range(50))


def test_a_false_alarm_on_a_correct_turn_changes_it_with_probability_p_flip(task: Task) -> None:
    false_alarm = {
        3: (["region_counts"], "region_counts is stale: it was computed from an earlier definition")
    }
    assert _answers(task, [], false_alarm, ResponseModel(p_flip=0.0)) == dict.fromkeys(range(1, 7), True)
    flipped = _answers(task, [], false_alarm, ResponseModel(p_flip=1.0))
    assert flipped[3] is False and all(flipped[t] for t in (1, 2, 4, 5, 6))


def test_a_fault_that_cannot_take_effect_at_run_time_is_reported_not_dropped(task: Task) -> None:
    worker = ScriptedWorker(
        FaultModel(faults=[Fault(kind="stale", turn=3)]), ResponseModel(p_flip=0.0), reference=task
    )
    result = rollout(task, worker, DictWorkspace(), flow=LONGDS)
    assert [f.turn for f in worker.skipped] == [3] and worker.applied == []
    assert result.answers[3] is not None


def test_the_exec_error_typo_hits_a_python_name_not_a_table_inside_sql() -> None:
    from stateguard.workers.scripted import _typo

    block = "_sql = 'SELECT COUNT(*) FROM flights'\n_row = con.execute(_sql).fetchone()\nprint(json_dumps_rounded(_row, 2))"
    broken = _typo(block)
    assert "json_dumps_rounded_(" in broken and "FROM flights" in broken
    ws = DictWorkspace()
    ws.run(
        "import duckdb, json\ncon = duckdb.connect()\ncon.execute('CREATE TABLE flights AS SELECT 1 AS x')\n"
        "json_dumps_rounded = lambda o, n: json.dumps(o)"
    )
    assert ws.run_cell(block).ok and not ws.run_cell(broken).ok


def test_static_stale_replays_each_task_once(task: Task) -> None:
    """Every turn's answer equals a replay of the turns before it, and checking many faults of one
    task replays it once (the loader checks every fault of every variant)."""
    from stateguard.dataflow import DataflowGraph, cell_dataflow
    from stateguard.workers.faults import _stale_before_each_turn, split_blocks, static_stale

    _stale_before_each_turn.cache_clear()
    for turn in task.turns:
        graph, cell = DataflowGraph(), 0
        for earlier in task.turns:
            if earlier.turn_id >= turn.turn_id:
                break
            for block in split_blocks(earlier.code):
                cell += 1
                flow = cell_dataflow(block)
                graph.record(cell, reads=flow.reads, writes=flow.writes)
        assert static_stale(task, turn.turn_id) == graph.stale()
    assert _stale_before_each_turn.cache_info().misses == 1
