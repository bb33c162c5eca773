"""Helpers for the viewer tests, imported as `viewer_support` (pytest puts this folder on sys.path).

`make_eval_run` writes a real evaluation-run folder (the runner's layout) from the six-turn demo
task: each (task, arm) is one `eval.runner.run_job` rollout with the scripted worker and the
rules manager, scored and written with the runner's own record types (~1 s per task with the
in-process workspace). `make_handmade_arm` drives the harness by hand into the outcomes the
rules manager never produces: a rejected action, a state abandoned and rolled back after its
repair budget. `make_synthesis_export` lays rollouts out as a synthesis export folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from eval.benchmarks.base import EvalTask
from eval.benchmarks.longds.deps import parse_dependencies
from eval.config import HarnessSettings, JobSettings
from eval.report import summarize
from eval.results import ArmResult, read_results, write_result
from eval.runner import run_job
from eval.scorers.fields import per_turn_correct
from stateguard import EventType, Harness, HarnessConfig, StateStore, WorkerStep
from stateguard.actions import RawAction
from stateguard.artifacts.corpus_records import (
    InterventionKind,
    InterventionRecord,
    RecordsKey,
    TrajectoryRecord,
    save_records,
)
from stateguard.artifacts.run_folder import CorpusFolder
from stateguard.flows import LONGDS
from stateguard.task import load_task
from stateguard.trace import Trace
from stateguard.workers.scripted import Fault
from stateguard.workspace import DictWorkspace

SIX_TURN = Path(__file__).resolve().parents[3] / "eval" / "benchmarks" / "demo" / "six_turn"
CFG = JobSettings(
    workspace="dict",
    worker="scripted",
    manager="rules",
    seed=0,
    harness=HarnessSettings(repair_budget=3, context_budget_tokens=40960),
)
# task id -> the scripted worker's mistakes: a stale margin after the revenue revision (caught by a
# repair), and a precision slip (also caught); each makes the arms diverge on some turns.
TASKS = {
    "six_turn_stale": [Fault(kind="stale", turn=5)],
    "six_turn_precision": [Fault(kind="precision", turn=2)],
}


def eval_task(task_id: str, faults: list[Fault]) -> EvalTask:
    task = load_task(SIX_TURN, task_id=task_id)
    raw = json.loads((SIX_TURN / "task.json").read_text(encoding="utf-8"))
    return EvalTask(
        task_id=task_id,
        task=task,
        data_dir=SIX_TURN / "data",
        domain="sales",
        level="6 turns",
        parents=parse_dependencies(raw),
        faults=faults,
    )


def make_eval_run(root: Path) -> Path:
    """An evaluation run folder with TASKS in both arms, as `python -m eval.runner` writes it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text("bench: {name: demo}\narms: [baseline, stateguard]\n", encoding="utf-8")
    for task_id, faults in TASKS.items():
        task = eval_task(task_id, faults)
        expected = {t.turn_id: t.answer for t in task.task.turns}
        for arm in ("baseline", "stateguard"):
            arm_dir = root / "tasks" / task_id / arm
            outcome = run_job(task, arm, LONGDS, CFG, str(arm_dir))
            assert outcome.error is None, outcome.error
            write_result(
                root,
                ArmResult(
                    bench="demo",
                    task_id=task_id,
                    arm=arm,
                    domain=task.domain,
                    level=task.level,
                    correct=dict(per_turn_correct(expected, outcome.answers)),
                    parents=task.parents,
                    answers=outcome.answers,
                    run_dir=str(arm_dir),
                    **{
                        k: getattr(outcome, k)
                        for k in (
                            "repairs",
                            "manager_calls",
                            "committed_states",
                            "stale_states",
                            "degraded",
                            "wall_s",
                        )
                    },
                ),
            )
    summary = summarize(read_results(root), resamples=500)
    (root / "summary.json").write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return root


def _turn(h: Harness, step: int, issue: str, code: str, variables: list[dict[str, Any]]) -> None:
    h.begin_review(EventType.TURN_START)
    h.apply(RawAction(name="OPEN_STATE", arguments={"issue": issue}))
    h.record_step(WorkerStep(index=step, action=code, output="ok"))
    h.begin_review(EventType.TURN_END)
    h.apply(RawAction(name="UPDATE_STATE", arguments={"used_variables": variables}))


def make_handmade_arm(folder: Path) -> dict[str, str]:
    """S1 committed; S2 repaired 3 times then abandoned with a rollback; one rejected action.
    Returns what the tests check: the ids by outcome and the rejected action's feedback."""
    folder.mkdir(parents=True, exist_ok=True)
    trace, store, ws = Trace(folder / "trace.jsonl"), StateStore(folder / "states.sqlite"), DictWorkspace()
    h = Harness(store, HarnessConfig(regime="turn_aligned"), trace=trace, workspace=ws)
    trace.emit("turn_start", turn_id=1)
    ws.run_cell("revenue = 1000")
    _turn(h, 0, "total revenue", "revenue = 1000", [{"name": "revenue", "value": 1000}])
    h.apply(RawAction(name="FINALIZE_RELATIONS", arguments={"mode": "confirm"}))
    h.apply(RawAction(name="COMMIT_STATE", arguments={}))
    rejected = h.apply(
        RawAction(name="COMMIT_STATE", arguments={})
    )  # nothing to commit in stage idle: refused with feedback
    assert not rejected.accepted
    trace.emit("turn_start", turn_id=2)
    ws.run_cell("margin = revenue - 600")
    _turn(h, 1, "gross margin", "margin = revenue - 600", [{"name": "margin", "value": 400}])
    for attempt in range(3):
        if attempt:  # the worker answers the hint with another cell; the manager reviews it again
            h.record_step(WorkerStep(index=1 + attempt, action="margin = revenue - 600", output="ok"))
            h.begin_review(EventType.REPAIR_RETURN)
            assert h.apply(
                RawAction(
                    name="UPDATE_STATE", arguments={"used_variables": [{"name": "margin", "value": 400}]}
                )
            ).accepted
        result = h.apply(
            RawAction(
                name="REPAIR",
                arguments={
                    "analytical_evidence": f"[handmade] check {attempt + 1} disagrees",
                    "error_hint": {
                        "error_variables": ["margin"],
                        "faulty_reasoning": "the cost used is not the one asked for",
                    },
                },
            )
        )
        assert result.accepted, result.feedback
    assert h.apply(RawAction(name="ABANDON_STATE", arguments={})).accepted
    h.finish()
    trace.close()
    store.close()
    return {"committed": "S1", "rolled_back": "S2", "feedback": rejected.feedback.split(" (stage")[0]}


def make_synthesis_export(root: Path, eval_run: Path) -> Path:
    """`<root>/corpus/{runs,records}` from an eval run's six_turn_stale rollouts: its stateguard arm
    plays the repair variant, its baseline arm an auto variant; both judged against the answers."""
    task_dir = root / "corpus" / "runs" / "six_turn_stale"
    key = RecordsKey(
        seed=0, repairs=1, autos=1, benign=0, heavy=0, abandon=0, teacher="rules", version="test"
    )
    expected = {
        t["turn_id"]: t["answer"] for t in json.loads((SIX_TURN / "task.json").read_text(encoding="utf-8"))
    }
    changed = InterventionRecord(
        kind=InterventionKind.FILTER_CONDITION,
        operation="reuse_old_margin",
        stage="margin_per_order",
        description="reuses the old margin",
        before="margin",
        after="old_margin",
        path=["this"],
    )
    records = []
    for variant, arm in (("clean", "stateguard"), ("repair-1", "stateguard"), ("auto-1", "baseline")):
        shutil.copytree(eval_run / "tasks" / "six_turn_stale" / arm, task_dir / variant)
        result = json.loads((task_dir / variant / "result.json").read_text(encoding="utf-8"))
        answers = {int(k): v for k, v in result["answers"].items()} if variant != "clean" else expected
        records.append(
            TrajectoryRecord(
                trajectory_id=f"six_turn_stale/{variant}",
                task_id="six_turn_stale",
                variant=variant.split("-")[0],  # type: ignore[arg-type]
                seed=0,
                t_star=None if variant == "clean" else 5,
                stage=None if variant == "clean" else "margin_per_order",
                intervention=None if variant == "clean" else changed,
                answers=answers,
                reference_answers=expected,
                keep=variant != "auto-1",
                rejections=["autonomous_detection"] if variant == "auto-1" else [],
            )
        )
    save_records(CorpusFolder(root / "corpus").record_file("six_turn_stale"), key, records)
    return root
