"""Manager demonstrations from real rollouts of synthesized tasks (paper 3.4, B.3, Eq. 24).

    records = generate("runs/synth-debug/penguins_s1_t12", "runs/traj", seed=0)

Per task the shared teacher (`synthesis.teacher`) runs through the actual harness
(`stateguard.rollout`, a `DictWorkspace`, the scripted worker) under the task's flow (turn-aligned
LongDS-style, or segment-induced DABstep-/DAComp-DE-style), one rollout per variant:

* clean   -- no fault: the teacher verifies every state (inspect, load related states, the stage
             recomputed as stated) and commits it;
* repair  -- a genuine, stated counterfactual θ' at t* (`synthesis.screen`): verification shows the
             mismatch, REPAIR; the worker's retry passes verification, COMMIT;
* heavy   -- as repair, but the worker repeats θ' after the light hint, so the second REPAIR is heavy;
* abandon -- the worker repeats θ' after every hint: the budget runs out, ABANDON_STATE (rollback);
* benign  -- θ' changes nothing the data shows: verification finds equal results, FINALIZE (a hard
             negative, exported with `benign: true`);
* auto    -- a genuine θ' at t*, and from t* on the rules manager (or an LLM, teacher="llm") decides
             alone; kept only when it detects, repairs and every answer is restored.

Every trajectory is judged by `keep` (Eq. 24), a pure function of the record and its clean twin with
named checks; rejected trajectories are returned with their reasons so they can be counted.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from stateguard.artifacts.corpus_records import (
    ActionRow,
    StateStats,
    TrajectoryRecord,
    WorkerStepRow,
    observation_of,
    tool_stdout,
)
from stateguard.artifacts.events import (
    ActionEvent,
    HintDeliveredEvent,
    RepairEvent,
    StateCommittedEvent,
    WorkerStepEvent,
)
from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.mistakes import by_intervention
from stateguard.artifacts.run_folder import CorpusFolder, RolloutFolder
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.artifacts.teacher_plan import Variant
from stateguard.policies.base import ManagerPolicy
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.state import AnalyticalState
from stateguard.task import Task, load_task
from stateguard.trace import read_trace
from stateguard.workers.faults import Fault
from stateguard.workspace import DictWorkspace
from synthesis.screen import Candidate, screen, stated_select
from synthesis.teacher import (
    Segment,
    StageCheck,
    TeacherPlan,
    TeacherPolicy,
    flow_named,
    teacher_worker,
)
from synthesis.teacher.probe import read_probe

__all__ = [
    "KEEP_CHECKS",
    "KeepVerdict",
    "TrajectoryRecord",
    "base_plan",
    "generate",
    "keep",
    "load_built_task",
    "rejection_counts",
]

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class KeepVerdict(BaseModel):
    keep: bool
    failed: list[str]


def llm_teacher() -> ManagerPolicy:
    """The LLM teacher for auto branches: the rules checks first, the model (STATEGUARD_MANAGER_*
    endpoint, any OpenAI-compatible server) wherever the rules cannot decide."""
    from stateguard.llm import EndpointConfig, LLMClient
    from stateguard.policies.hierarchical import HierarchicalManager
    from stateguard.policies.llm_manager import LLMManager

    return HierarchicalManager(RulesManager(), LLMManager(LLMClient(EndpointConfig.from_env("manager"))))


# ---------------------------------------------------------------------------------- plans
def load_built_task(task_dir: str | Path) -> Task:
    root = Path(task_dir)
    folder = TaskFolder(root)
    return load_task(folder.hidden, task_id=root.name, base_path=str(folder.agent.resolve()))


def base_plan(task_dir: str | Path) -> TeacherPlan:
    """The clean plan of a built task: its flow, each stage's as-stated query, the definition
    updates of the hidden graph and, in segment flows, where each stage ends."""
    root = Path(task_dir)
    graph = load_graph(TaskFolder(root))
    codes = {t.turn_id: t.code for t in load_built_task(root).turns}
    stages = graph.stages
    by_id = {s.state_id: s.name for s in stages}
    checks = {
        s.name: StageCheck(table=s.name, stated_sql=stated_select(s.sql))
        for s in stages
        if codes.get(s.turn_id, "").count(s.sql) == 1
    }
    invalidates = {
        s.name: [
            by_id[r.related_state_id]
            for r in s.relations
            if r.type.value == "invalidate" and r.related_state_id in by_id
        ]
        for s in stages
    }
    return TeacherPlan(
        flow=graph.flow_name,
        checks=checks,
        stage_of_turn={} if graph.segments else {s.turn_id: s.name for s in stages},
        invalidates={k: v for k, v in invalidates.items() if v},
        segments=[Segment.model_validate(s.model_dump()) for s in graph.segments or []],
    )


# ---------------------------------------------------------------------------------- running
def _run(
    task: Task, plan: TeacherPlan, faults: list[Fault], run_dir: Path, live: ManagerPolicy | None
) -> dict[str, Any]:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    teacher = TeacherPolicy(plan, live=live)
    worker = teacher_worker(faults, plan.resist, reference=task)
    result = rollout(
        task.agent_view(),
        worker,
        DictWorkspace(),
        flow=flow_named(plan.flow),
        manager=teacher,
        run_dir=run_dir,
    )
    events = read_trace(RolloutFolder(run_dir).trace)
    steps = [
        WorkerStepRow(
            index=s.index,
            turn=s.turn,
            action=s.action,
            output=s.output,
            success=s.success,
            purpose=s.meta.purpose,
            turn_end=s.meta.turn_end,
        )
        for s in (e.data for e in events if isinstance(e, WorkerStepEvent))
    ]
    actions = [
        ActionRow(
            seq=e.seq,
            name=e.data.name,
            accepted=e.data.accepted,
            stage=e.data.stage,
            activation=e.data.activation,
        )
        for e in events
        if isinstance(e, ActionEvent)
    ]
    return {
        "worker_steps": steps,
        "action_events": actions,
        "answers": result.answers,
        "degraded": result.degraded,
        "trace_kinds": sorted({e.kind for e in events}),
        "activations": teacher.log,
        "run_dir": str(run_dir),
        "teacher": teacher.name,
        "repair_modes": [e.data.mode for e in events if isinstance(e, RepairEvent)],
        "rollbacks": sum(e.kind == "rollback" for e in events),
        "states": [_state_stats(e.data.state, plan) for e in events if isinstance(e, StateCommittedEvent)],
        "hints": dict(Counter(e.data.hint.kind for e in events if isinstance(e, HintDeliveredEvent))),
    }


def _state_stats(state: AnalyticalState, plan: TeacherPlan) -> StateStats:
    """What a committed state holds (for the corpus statistics)."""
    return StateStats(
        id=state.id,
        constraints=len(state.constraints),
        executable=sum(1 for c in state.constraints if c.code),
        variables=len(state.used_variables),
        conclusions=len(state.conclusions),
        relations=[r.type.value for r in state.relations],
    )


def generate(
    task_dir: str | Path,
    out_dir: str | Path,
    *,
    seed: int,
    repairs: int = 2,
    autos: int = 1,
    benign: int = 1,
    heavy: int = 1,
    abandon: int = 1,
    max_attempts: int = 4,
    teacher: str = "rules",
) -> list[TrajectoryRecord]:
    """One clean trajectory and up to the given number of each counterfactual variant for a built
    task; every record carries its Keep verdict (rejected ones included, for counting).
    `teacher="llm"` lets `llm_teacher()` decide in the auto branches."""
    if teacher not in ("rules", "llm"):
        raise ValueError(f"teacher={teacher!r}: use rules or llm (the LLM reads STATEGUARD_MANAGER_*)")
    root = Path(task_dir)
    task = load_built_task(root)
    runs = CorpusFolder(Path(out_dir)).runs / task.task_id
    plan = base_plan(root)
    reference = {t.turn_id: t.answer for t in task.turns}
    clean_plan = plan.model_copy(update={"variant": "clean"})
    clean = TrajectoryRecord(
        trajectory_id=f"{task.task_id}/clean",
        task_id=task.task_id,
        variant="clean",
        seed=seed,
        flow=plan.flow,
        plan=clean_plan,
        reference_answers=reference,
        **_run(task, clean_plan, [], runs / "clean", None),
    )
    out = [_judge(clean, clean)]
    rng = random.Random(f"traj:{task.task_id}:{seed}")
    candidates = screen(root, rng)
    rng.shuffle(candidates)
    segment = bool(plan.segments)
    wanted: list[tuple[Variant, int, list[Candidate]]] = [
        ("repair", repairs, [c for c in candidates if c.effect == "genuine" and c.stated]),
        ("heavy", heavy, [c for c in candidates if c.effect == "genuine" and c.stated]),
        # abandoning rolls back to the previous state's checkpoint: the first turn has none to go back to
        (
            "abandon",
            0 if segment else abandon,
            [c for c in candidates if c.effect == "genuine" and c.stated and c.turn > 1],
        ),
        ("benign", benign, [c for c in candidates if c.effect == "benign" and c.stated]),
        ("auto", 0 if segment else autos, [c for c in candidates if c.effect == "genuine"]),
    ]
    used: Counter[tuple[int, str]] = Counter()
    for variant, count, pool in wanted:
        pool = sorted(
            pool, key=lambda c: used[(c.turn, c.stage)]
        )  # stable: fresh sites first, then the shuffle
        live = llm_teacher() if variant == "auto" and teacher == "llm" else None
        got = _branches(
            task,
            runs,
            plan,
            pool,
            clean,
            variant,
            seed=seed,
            wanted=count,
            max_attempts=max_attempts,
            live=live,
            teacher=teacher,
        )
        for rec in got:
            if rec.keep and rec.t_star is not None and rec.stage is not None:
                used[(rec.t_star, rec.stage)] += 1
        out += got
    return out


def _branches(
    task: Task,
    runs: Path,
    plan: TeacherPlan,
    pool: list[Candidate],
    clean: TrajectoryRecord,
    variant: Variant,
    *,
    seed: int,
    wanted: int,
    max_attempts: int,
    live: ManagerPolicy | None,
    teacher: str,
) -> list[TrajectoryRecord]:
    """Counterfactual branches of one variant: θ' at t*; at most `wanted` kept, one per stage."""
    out: list[TrajectoryRecord] = []
    kept = attempts = 0
    done: set[str] = set()
    for cand in pool:
        if kept >= wanted or attempts >= max_attempts:
            break
        if cand.stage in done:
            continue
        attempts += 1
        branch = plan.model_copy(
            update={
                "variant": variant,
                "fault_turn": cand.turn,
                "target": cand.stage,
                "kind": cand.record.kind.value,
                "reason": by_intervention(cand.record.kind).reason,
                "live": teacher if variant == "auto" else "rules",
            }
        )
        rec = TrajectoryRecord(
            trajectory_id=f"{task.task_id}/{variant}-{attempts}",
            task_id=task.task_id,
            variant=variant,
            seed=seed,
            flow=plan.flow,
            plan=branch,
            t_star=cand.turn,
            stage=cand.stage,
            intervention=cand.record,
            faulty_code=cand.faulty_code,
            benign=variant == "benign",
            reference_answers=clean.reference_answers,
            **_run(
                task,
                branch,
                [Fault(kind="counterfactual", turn=cand.turn, code=cand.faulty_code)],
                runs / f"{variant}-{attempts}",
                live,
            ),
        )
        rec = _judge(rec, clean)
        out.append(rec)
        if rec.keep:
            kept += 1
            done.add(cand.stage)
    return out


def _judge(record: TrajectoryRecord, clean: TrajectoryRecord) -> TrajectoryRecord:
    verdict = keep(record, clean)
    return record.model_copy(update={"keep": verdict.keep, "rejections": verdict.failed})


# ---------------------------------------------------------------------------------- Keep(τ)
def _step_view(s: WorkerStepRow) -> tuple[Any, ...]:
    return (s.turn, s.action, _ADDRESS.sub("0x?", s.output))


def _divergence(tau: TrajectoryRecord, clean: TrajectoryRecord) -> int | None:
    """Position of the first worker step that differs from the clean run (None: none differs)."""
    for i, (a, b) in enumerate(zip(tau.worker_steps, clean.worker_steps, strict=False)):
        if _step_view(a) != _step_view(b):
            return i
    return (
        None
        if len(tau.worker_steps) == len(clean.worker_steps)
        else min(len(tau.worker_steps), len(clean.worker_steps))
    )


def _manager_prefix(rec: TrajectoryRecord, cut: int) -> list[tuple[Any, ...]]:
    """The manager's actions in activations that saw only steps before position `cut`."""
    out = []
    for act in rec.activations:
        end = observation_of(act).pending_end_step
        if end is not None and end >= cut:
            break
        out += [
            (a.name, a.accepted, _ADDRESS.sub("0x?", json.dumps(a.arguments, sort_keys=True, default=str)))
            for a in act.actions
        ]
    return out


def _replay_fidelity(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    """Every worker and manager call before the intervention reproduces the parent run exactly."""
    if tau.variant == "clean":
        return True
    cut = _divergence(tau, clean)
    if cut is None or cut >= len(tau.worker_steps) or tau.worker_steps[cut].turn != tau.t_star:
        return False
    return _manager_prefix(tau, cut) == _manager_prefix(clean, cut)


def _faulty_answer(tau: TrajectoryRecord) -> Any:
    for s in tau.worker_steps:
        if s.turn == tau.t_star and s.purpose == "faulty" and s.turn_end:
            lines = [x for x in s.output.splitlines() if x.strip()]
            try:
                return json.loads(lines[-1]) if lines else None
            except json.JSONDecodeError:
                return None
    return None


def _intervention_activated(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    if tau.variant == "clean":
        return not any(s.purpose != "reference" for s in tau.worker_steps)
    ran = any(s.turn == tau.t_star and s.purpose == "faulty" and s.success for s in tau.worker_steps)
    changed = _faulty_answer(tau) != clean.answers.get(tau.t_star or -1)
    return ran and (not changed if tau.variant == "benign" else changed)


def _accepted(tau: TrajectoryRecord, name: str) -> int:
    return sum(1 for a in tau.action_events if a.name == name and a.accepted)


def _retried_after_fault(tau: TrajectoryRecord) -> bool:
    after = [s for s in tau.worker_steps if s.turn == tau.t_star and s.purpose == "recompute"]
    first_retry = min((s.index for s in after), default=None)
    faulty_end = max((s.index for s in tau.worker_steps if s.purpose == "faulty"), default=None)
    return first_retry is not None and faulty_end is not None and first_retry > faulty_end


def _demonstration_consumed(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    repairs = _accepted(tau, "REPAIR")
    if tau.variant in ("clean", "benign"):
        return repairs == 0
    if tau.variant == "auto":  # nothing prescribed; no repair may precede the intervention
        return not any(
            c.name == "REPAIR" and c.accepted
            for a in tau.activations
            if (a.turn or 0) < (tau.t_star or 0)
            for c in a.actions
        )
    if tau.variant == "repair":
        return repairs == 1 and tau.repair_modes == ["light"] and _retried_after_fault(tau)
    if tau.variant == "heavy":
        return repairs == 2 and tau.repair_modes == ["light", "heavy"] and _retried_after_fault(tau)
    budget = observation_of(tau.activations[0]).repair_budget if tau.activations else 3
    return repairs == budget and _accepted(tau, "ABANDON_STATE") == 1 and tau.rollbacks == 1  # abandon


def _autonomous_detection(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    """auto only: the live manager repaired at t* on its own and the worker actually retried."""
    if tau.variant != "auto":
        return True
    repaired = any(
        c.name == "REPAIR" and c.accepted for a in tau.activations if a.turn == tau.t_star for c in a.actions
    )
    return repaired and _retried_after_fault(tau)


def _lifecycle_valid(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    if tau.degraded or "degraded" in tau.trace_kinds:
        return False
    for act in tau.activations:
        accepted = [a for a in act.actions if a.accepted]
        controls = [a for a in accepted if a.control]
        if len(controls) != 1 or not accepted[-1].control:
            return False
    if tau.variant in ("repair", "heavy", "abandon"):
        at_target = [
            c.name for a in tau.activations if a.forced for c in a.actions if c.accepted and c.control
        ]
        if not at_target or at_target[0] != "REPAIR":
            return False
        want_end = "ABANDON_STATE" if tau.variant == "abandon" else "FINALIZE_RELATIONS"
        return at_target[-1] == want_end and at_target.count(want_end) == 1
    return True


def _decisions_grounded(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    """Each teacher decision follows from its activation's evidence: REPAIR / ABANDON only after a
    probe showed a mismatch, FINALIZE never after one; where θ' sits, a probe ran."""
    for act in tau.activations:
        if act.live:
            continue
        verdicts = [read_probe(tool_stdout(a)) for a in act.actions if a.name == "run_probe" and a.accepted]
        mismatch = any(v is not None and not v.same_rows for v in verdicts)
        for a in act.actions:
            if not (a.accepted and a.control):
                continue
            if a.name in ("REPAIR", "ABANDON_STATE") and not mismatch:
                return False
            if a.name == "FINALIZE_RELATIONS" and (mismatch or (act.forced and not verdicts)):
                return False
    return True


def _task_completed(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    turns = set(tau.reference_answers)
    if not turns or set(tau.answers) != turns or any(tau.answers[t] is None for t in turns):
        return False
    if tau.variant in ("clean", "auto", "benign"):  # auto: the repair must restore every answer
        return all(tau.answers[t] == tau.reference_answers[t] for t in turns)
    assert tau.t_star is not None
    if tau.plan is not None and tau.plan.segments:
        # segment flows: a repair may come after the worker moved to a later turn (the reviews trail
        # the work), when the earlier answers are already submitted; the build's final result counts
        last = max(turns)
        return tau.answers[last] == clean.answers.get(last)
    if tau.variant == "abandon":  # the state is given up: the turns before it stand as they were
        return all(tau.answers[t] == clean.answers.get(t) for t in turns if t < tau.t_star)
    return tau.answers[tau.t_star] == clean.answers.get(tau.t_star)


KEEP_CHECKS = {
    "replay_fidelity": _replay_fidelity,
    "intervention_activated": _intervention_activated,
    "demonstration_consumed": _demonstration_consumed,
    "autonomous_detection": _autonomous_detection,
    "lifecycle_valid": _lifecycle_valid,
    "decisions_grounded": _decisions_grounded,
    "task_completed": _task_completed,
}


def keep(tau: TrajectoryRecord, clean: TrajectoryRecord) -> KeepVerdict:
    """Keep(τ) (Eq. 24): the conjunction of the named checks; `failed` lists those that did not hold."""
    failed = [name for name, check in KEEP_CHECKS.items() if not check(tau, clean)]
    return KeepVerdict(keep=not failed, failed=failed)


def rejection_counts(records: list[TrajectoryRecord]) -> dict[str, int]:
    return dict(sorted(Counter(r for rec in records for r in rec.rejections).items()))
