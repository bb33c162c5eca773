"""End to end, offline: the six-turn task where turn 4 revises a definition used in turn 2.

The scripted worker's stale-inheritance fault at turn 5 reuses the turn-2 margin. The baseline
(worker + harness) gets turns 5 and 6 wrong; StateGuard with the `rules` manager detects the
stale read, repairs, and the worker recomputes. Both flows, and the other fault kinds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.scorers.fields import per_turn_correct
from stateguard.flows import LONGDS, FlowConfig
from stateguard.hints import Hint
from stateguard.policies.rules import RulesManager
from stateguard.rollout import RolloutResult, rollout
from stateguard.task import Task, load_task
from stateguard.trace import read_trace
from stateguard.worker_contract import WorkerMessage
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

ROOT = Path(__file__).resolve().parents[2]
TASK_DIR = ROOT / "eval" / "benchmarks" / "demo" / "six_turn"
SEGMENT = FlowConfig(
    name="segment-3",
    regime="segment_induced",
    review_every=3,
    budget_unit="task",
    baseline_budget=100,
    stateguard_budget=100,
)


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


def run(
    task: Task, tmp: Path, arm: str, faults: list[Fault], flow: FlowConfig = LONGDS
) -> tuple[RolloutResult, dict[int, bool]]:
    manager = RulesManager() if arm == "stateguard" else None
    result = rollout(
        task,
        ScriptedWorker(FaultModel(faults=faults), reference=task),
        DictWorkspace(),
        flow=flow,
        manager=manager,
        run_dir=tmp / arm,
    )
    expected = {t.turn_id: t.answer for t in task.turns}
    return result, per_turn_correct(expected, result.answers)


STALE = [Fault(kind="stale", turn=5)]


@pytest.mark.parametrize("flow", [LONGDS, SEGMENT], ids=["turn_aligned", "segment_every_3"])
def test_baseline_propagates_the_stale_margin_and_stateguard_repairs_it(
    task: Task, tmp_path: Path, flow
) -> None:
    base, base_ok = run(task, tmp_path, "baseline", STALE, flow)
    guard, guard_ok = run(task, tmp_path, "stateguard", STALE, flow)
    assert base_ok == {1: True, 2: True, 3: True, 4: True, 5: False, 6: False}
    if flow is SEGMENT:
        # The review after turn 5's answer was submitted repairs the workspace: turn 5's answer stays
        # as submitted, but turn 6 no longer inherits the stale margin (contamination stopped).
        assert guard_ok == {1: True, 2: True, 3: True, 4: True, 5: False, 6: True}
    else:
        assert guard_ok == {t: True for t in range(1, 7)}
    assert base.committed_states == [] and base.manager_activations == 0
    assert guard.repairs == 1

    events = read_trace(tmp_path / "stateguard" / "trace.jsonl")
    committed = {e.payload["state"]["id"]: e.payload["state"] for e in events if e.kind == "state_committed"}
    revision = next(s for s in committed.values() if s["issue"].startswith("Recompute revenue"))
    assert {"type": "invalidate", "related_state_id": "S1"} in revision["relations"]
    repair = next(e for e in events if e.kind == "repair")
    assert "[staleness]" in repair.payload["evidence"] and "margin" in repair.payload["evidence"]
    delivered = [e for e in events if e.kind == "hint_delivered" and e.payload["hint"]["kind"] == "repair"]
    assert delivered and delivered[0].payload["hint"]["error_variables"] == ["margin"]
    assert "<repair_hint>" in delivered[0].payload["text"]
    after = [e for e in events if e.kind == "worker_step" and e.seq > delivered[0].seq]
    assert after and after[0].payload["meta"]["purpose"] == "recompute" and after[0].payload["turn"] == 5
    final = next(s for s in committed.values() if s["issue"].startswith("Under the current revenue"))
    versions = {v["name"]: v["version"] for v in final["used_variables"]}
    assert versions["margin"] == final["id"]  # recomputed in the repaired state, not inherited from S2
    assert "S1" in guard.stale_states and "S2" in guard.stale_states and "S3" not in guard.stale_states
    # every recorded stale read got a decision in the trace; the skipped recomputation is a finding
    decisions = [e.payload for e in events if e.kind == "stale_decision"]
    assert any(d["name"] == "margin" and d["decision"] == "finding" for d in decisions)
    assert not any(d["decision"] == "undecided" for d in decisions)


@pytest.mark.parametrize(
    ("fault", "wrong_turn", "check"),
    [
        (Fault(kind="precision", turn=2, decimals=1), 2, "[precision]"),
        (Fault(kind="exec_error", turn=3), 3, "[execution]"),
    ],
)
def test_rules_catch_precision_and_unfixed_errors(
    task: Task, tmp_path: Path, fault: Fault, wrong_turn: int, check: str
) -> None:
    _, base_ok = run(task, tmp_path, "baseline", [fault])
    _, guard_ok = run(task, tmp_path, "stateguard", [fault])
    assert [t for t, ok in base_ok.items() if not ok] == [wrong_turn]
    assert all(guard_ok.values())
    repair = next(e for e in read_trace(tmp_path / "stateguard" / "trace.jsonl") if e.kind == "repair")
    assert repair.payload["evidence"].startswith(check)


def test_counterfactual_code_that_runs_cleanly_is_not_caught_by_rules(task: Task, tmp_path: Path) -> None:
    # Turn 3 ranks by total amount instead of order count: plausible, executes fine, wrong.
    theta = (
        'region_counts = sales.groupby("region")["amount"].sum().sort_values(ascending=False)\n\n'
        'result = {"answer_type": "ranking", "top_region": str(region_counts.index[0]), '
        '"orders": int(region_counts.iloc[0])}\nprint(json_dumps_rounded(result, 2))'
    )
    fault = Fault(kind="counterfactual", turn=3, code=theta)
    _, base_ok = run(task, tmp_path, "baseline", [fault])
    guard, guard_ok = run(task, tmp_path, "stateguard", [fault])
    assert (
        not base_ok[3] and not guard_ok[3] and guard.repairs == 0
    )  # needs the LLM tier (hierarchical manager)


def test_no_fault_no_repair_and_one_state_per_turn(task: Task, tmp_path: Path) -> None:
    guard, ok = run(task, tmp_path, "stateguard", [])
    assert all(ok.values()) and guard.repairs == 0
    assert guard.committed_states == [f"S{i}" for i in range(1, 7)]


def test_same_seed_same_trajectory(task: Task, tmp_path: Path) -> None:
    model = FaultModel(seed=3, rates={"stale": 0.5, "precision": 0.3, "exec_error": 0.3})
    assert model.plan(task) == FaultModel(seed=3, rates=model.rates).plan(task)
    actions = []
    for i in range(2):
        rollout(
            task,
            ScriptedWorker(model, reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=RulesManager(),
            run_dir=tmp_path / str(i),
        )
        actions.append(
            [
                e.payload["action"]
                for e in read_trace(tmp_path / str(i) / "trace.jsonl")
                if e.kind == "worker_step"
            ]
        )
    assert actions[0] == actions[1] and len(actions[0]) > 6


def test_a_hint_naming_nothing_relevant_changes_nothing(task: Task) -> None:
    ws = DictWorkspace()
    worker = ScriptedWorker(FaultModel(faults=[Fault(kind="exec_error", turn=1)]), reference=task)
    from stateguard.task import prelude

    ws.run_cell(prelude(task))
    worker.start(task.agent_view(), ws)
    worker.inject(WorkerMessage.user_turn(task.agent_view().turns[0]))
    while not worker.done():
        worker.step(0)
    irrelevant = Hint(
        kind="repair", error_variables=["unrelated_thing"], faulty_reasoning="not about this turn"
    )
    worker.inject(WorkerMessage.from_hint(irrelevant))
    assert worker.done() and worker.ignored_hints
    relevant = Hint(kind="repair", error_variables=["revenue"], faulty_reasoning="the block raised")
    worker.inject(WorkerMessage.from_hint(relevant))
    assert not worker.done()
    while not worker.done():
        worker.step(0)
    assert worker.final_answer()[1] == task.turns[0].answer


def test_run_dir_with_a_finished_run_is_refused(task: Task, tmp_path: Path) -> None:
    run(task, tmp_path, "baseline", [])
    with pytest.raises(FileExistsError, match="already holds a run"):
        run(task, tmp_path, "baseline", [])


def test_nested_answers_with_repeated_field_names_are_not_false_alarms(tmp_path: Path) -> None:
    # Each group's dict repeats the field names; a clean turn must commit without a repair.
    code = (
        'groups = {"a": {"n": 3, "mean": 1.25}, "b": {"n": 5, "mean": 2.5}}\n\n'
        'result = {"answer_type": "map", "per_group": groups}\nprint(json_dumps_rounded(result, 2))'
    )
    from stateguard.task import Turn

    task = Task(
        task_id="nested",
        turns=[
            Turn(
                turn_id=1,
                question="Per group counts and means, 2 decimals?",
                code=code,
                answer={"per_group": {"a": {"n": 3, "mean": 1.25}, "b": {"n": 5, "mean": 2.5}}},
            )
        ],
        base_path=str(tmp_path),
    )
    result = rollout(
        task,
        ScriptedWorker(reference=task),
        DictWorkspace(),
        flow=LONGDS,
        manager=RulesManager(),
        run_dir=tmp_path / "r",
    )
    assert result.repairs == 0 and result.committed_states == ["S1"]


def test_segment_review_does_not_compare_a_span_with_values_rewritten_after_it(tmp_path: Path) -> None:
    """A segment is often reviewed after later steps ran; their rewritten `result` is no evidence
    against the span's answer (this once produced a false REPAIR per turn)."""
    import json

    from stateguard.task import Turn

    turns = []
    for t, n in enumerate([151, 123, 167, 98], start=1):
        code = f"x{t} = {n}\n\nresult = {{'n_birds': x{t}}}\nprint(json.dumps(result))"
        turns.append(
            Turn(
                turn_id=t,
                question=f"How many birds in group {t}? Report `n_birds`.",
                code=code,
                answer={"n_birds": n},
            )
        )
    task = Task(task_id="groups", turns=turns, base_path=str(tmp_path))
    ws = DictWorkspace({"json": json})
    result = rollout(
        task,
        ScriptedWorker(reference=task),
        ws,
        flow=SEGMENT,
        manager=RulesManager(),
        run_dir=tmp_path / "run",
    )
    assert result.repairs == 0
    assert per_turn_correct({t.turn_id: t.answer for t in turns}, result.answers) == {
        1: True,
        2: True,
        3: True,
        4: True,
    }


@pytest.mark.parametrize("flow", [LONGDS, SEGMENT], ids=["turn_aligned", "segment_every_3"])
def test_precision_is_caught_in_both_flows_even_after_result_was_rewritten(
    task: Task, tmp_path: Path, flow
) -> None:
    guard, _ = run(task, tmp_path, "stateguard", [Fault(kind="precision", turn=2)], flow)
    repairs = [
        e.payload
        for e in read_trace(tmp_path / "stateguard" / "trace.jsonl")
        if e.kind == "action" and e.payload.get("name") == "REPAIR" and e.payload.get("accepted")
    ]
    assert repairs and repairs[0]["arguments"]["analytical_evidence"].startswith("[precision]")
    assert repairs[0]["arguments"]["error_hint"]["error_variables"] == ["result"]


def test_the_recorded_arm_is_the_arm_that_ran(task: Task, tmp_path: Path) -> None:
    # an eval arm other than "stateguard" (here a rules manager standing in for e.g. "observer")
    result = rollout(
        task,
        ScriptedWorker(FaultModel(faults=[]), reference=task),
        DictWorkspace(),
        flow=LONGDS,
        manager=RulesManager(),
        run_dir=tmp_path / "observer",
        arm="observer",
    )
    saved = RolloutResult.model_validate_json((tmp_path / "observer" / "result.json").read_text())
    start = next(e for e in read_trace(tmp_path / "observer" / "trace.jsonl") if e.kind == "run_start")
    assert (result.arm, saved.arm, start.payload["arm"]) == ("observer", "observer", "observer")
    # without a name, the arm follows the manager, as before
    plain = rollout(
        task,
        ScriptedWorker(FaultModel(faults=[]), reference=task),
        DictWorkspace(),
        flow=LONGDS,
        run_dir=tmp_path / "b",
    )
    assert plain.arm == "baseline"


def test_an_arm_that_contradicts_the_manager_is_refused(task: Task) -> None:
    with pytest.raises(ValueError, match="baseline arm runs without a manager"):
        rollout(
            task,
            ScriptedWorker(FaultModel(faults=[]), reference=task),
            DictWorkspace(),
            flow=LONGDS,
            arm="observer",
        )
    with pytest.raises(ValueError, match="baseline arm runs without a manager"):
        rollout(
            task,
            ScriptedWorker(FaultModel(faults=[]), reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=RulesManager(),
            arm="baseline",
        )


def test_result_files_written_before_the_arm_was_recorded_still_load() -> None:
    old = '{"schema_version": "stateguard/1", "task_id": "t", "arm": "stateguard", "answers": {"1": 3}}'
    assert RolloutResult.model_validate_json(old).arm == "stateguard"
