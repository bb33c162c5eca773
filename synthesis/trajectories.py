"""Manager demonstrations from real rollouts of synthesized tasks (paper B.3, Eq. 24).

    records = generate("runs/synth-debug/penguins_s1_t12", "runs/traj", seed=0)

Per task two kinds of trajectory are produced with the actual harness (`stateguard.rollout`, a
`DictWorkspace`, the scripted worker and the `rules` manager as teacher):

* clean  -- no fault: the worker replays the reference code, the teacher only bookkeeps;
* auto   -- the same counterfactual at t*, but from t* on the rules manager decides on its own
  (it must detect the inconsistency from evidence, e.g. a stated threshold the code does not
  use); kept only when it does, repairs, and the retry restores every answer;
* repair -- at an intervention point t* the turn's stage SQL is replaced by a counterfactual θ'
  (`synthesis.interventions.candidate_interventions`); the worker runs θ' there. The teacher is
  the rules manager plus the known intervention: at t*'s verification it REPAIRs, naming the
  stage's result variable with a worded reason (no code, no values); after the worker's retry it
  may not repair again and must finalize and commit.

Every trajectory is judged by `keep` (Eq. 24), a pure function of the record and its clean twin
with named checks; rejected trajectories are returned with their reasons so they can be counted.
The teacher records the observation it saw and every proposal with the harness verdict at each
activation, which is what `synthesis.export` turns into SFT samples and RL prompts.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import Counter
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from stateguard.actions import ActionError
from stateguard.flows import LONGDS
from stateguard.lifecycle import Stage
from stateguard.observation import ManagerObservation
from stateguard.parser import parse_response
from stateguard.policies.base import Activation, ManagerContext, ManagerPolicy, ModelResponse
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.trace import read_trace
from stateguard.workers.response import ResponseModel
from stateguard.workers.scripted import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from synthesis.interventions import InterventionKind, InterventionRecord, candidate_interventions

__all__ = [
    "KEEP_CHECKS",
    "ActivationLog",
    "KeepVerdict",
    "TrajectoryRecord",
    "generate",
    "keep",
    "load_built_task",
    "rejection_counts",
]

Variant = Literal["clean", "auto", "repair"]

# Worded reasons per intervention kind: they explain what is wrong without code or values.
_REASONS: dict[InterventionKind, str] = {
    InterventionKind.NUMERIC_PARAMETER: "a numeric threshold or limit in this result does not follow the value the "
    "question states, so the selection of rows is off",
    InterventionKind.FORMULA_SEMANTICS: "the aggregate or ratio computed for this result is not the quantity the "
    "question defines",
    InterventionKind.COMPARISON_DIRECTION: "a comparison in this result points the wrong way relative to the "
    "question, so it keeps the opposite side of the cut",
    InterventionKind.CATEGORY_SCOPE: "the set of categories included in this result is not the scope the question "
    "asks for",
    InterventionKind.FILTER_CONDITION: "a filter condition of this result differs from the conditions the question "
    "states",
}
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")  # object reprs in cell output differ run to run
_GENERIC_REASON = "this result was computed under an assumption that the question does not make"


class ActionLog(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    accepted: bool
    feedback: str = ""
    tool_result: dict[str, Any] | None = None
    control: bool = False


class ActivationLog(BaseModel):
    index: int
    turn: int | None
    observation: dict[str, Any]
    actions: list[ActionLog] = Field(default_factory=list)
    forced: bool = False  # the teacher's known-intervention override acted here
    suppressed: list[str] = Field(default_factory=list, description="rules findings overridden on a known-clean turn")


class TrajectoryRecord(BaseModel):
    trajectory_id: str
    task_id: str
    variant: Variant
    seed: int
    t_star: int | None = None
    stage: str | None = None
    intervention: InterventionRecord | None = None
    faulty_code: str | None = None
    worker_steps: list[dict[str, Any]] = Field(default_factory=list)
    action_events: list[dict[str, Any]] = Field(default_factory=list)
    activations: list[ActivationLog] = Field(default_factory=list)
    answers: dict[int, Any] = Field(default_factory=dict)
    reference_answers: dict[int, Any] = Field(default_factory=dict)
    degraded: bool = False
    trace_kinds: list[str] = Field(default_factory=list)
    run_dir: str | None = None
    keep: bool = False
    rejections: list[str] = Field(default_factory=list)


class KeepVerdict(BaseModel):
    keep: bool
    failed: list[str]


# ---------------------------------------------------------------------------------- teacher
class _Teacher:
    """Rules manager (optionally with a known intervention) that logs every activation."""

    def __init__(self, *, t_star: int | None = None, variable: str | None = None, reason: str | None = None,
                 live_from: int | None = None, live: ManagerPolicy | None = None):  # fmt: skip
        self.inner = RulesManager()
        self.name = "rules" if t_star is None else "rules+intervention"
        self.t_star, self.variable, self.reason = t_star, variable, reason
        self.live_from = live_from  # auto: from this turn on the live policy decides alone
        self.live: ManagerPolicy = live or self.inner  # the rules manager, or an LLM teacher
        self.repaired = False
        self.log: list[ActivationLog] = []

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        entry = ActivationLog(index=len(self.log), turn=ctx.turn.turn_id if ctx.turn else None,
                              observation=obs.model_dump(mode="json", exclude={"schema_version"}))  # fmt: skip
        self.log.append(entry)
        at_target = self.t_star is not None and entry.turn == self.t_star and Stage(obs.stage) is Stage.UPDATED
        if at_target and not self.repaired:
            entry.forced = True
            inner = self._forced_repair(obs)
        elif at_target:
            entry.forced = True
            inner = self._forced_finalize(obs, ctx)
        elif self.live_from is not None and (entry.turn or 0) >= self.live_from:
            inner = self.live.activate(obs, ctx)  # autonomous: no knowledge of the intervention
        elif Stage(obs.stage) is Stage.UPDATED:
            # Every other turn is known to be faithful: the rules checks' findings there are false
            # alarms (counted, not demonstrated), so the teacher finalizes.
            entry.suppressed = [f.check for f in self.inner.findings(obs, ctx)]
            inner = self._forced_finalize(obs, ctx)
        else:
            inner = self.inner.activate(obs, ctx)
        return self._relay(inner, entry)

    def _forced_repair(self, obs: ManagerObservation) -> Activation:
        assert self.variable is not None
        self.inner.mark_repair(obs)
        args = {"analytical_evidence": f"[intervention] {self.reason}",
                "error_hint": {"error_variables": [self.variable], "faulty_reasoning": self.reason}}  # fmt: skip
        result = yield ("REPAIR", args)
        if not result.accepted:
            args = {"analytical_evidence": f"[intervention] {_GENERIC_REASON}",
                    "error_hint": {"error_variables": [self.variable], "faulty_reasoning": _GENERIC_REASON}}  # fmt: skip
            result = yield ("REPAIR", args)
        self.repaired = bool(result.accepted)

    def _forced_finalize(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        yield self.inner.finalize(obs, ctx)  # no second repair after the retry

    @staticmethod
    def _relay(inner: Activation, entry: ActivationLog) -> Generator[Any, Any, None]:
        try:
            proposal = next(inner)
            while True:
                reply = yield proposal
                if isinstance(proposal, tuple):
                    _log(entry, proposal[0], dict(proposal[1]), reply)
                elif isinstance(proposal, ModelResponse):  # an LLM teacher: log what the harness parsed
                    try:
                        parsed = [(a.name.value, a.args.model_dump(mode="json", exclude_none=True))
                                  for a in parse_response(proposal.message).actions]  # fmt: skip
                    except ActionError:
                        parsed = []
                    for (name, args), result in zip(parsed, reply, strict=False):
                        _log(entry, name, args, result)
                proposal = inner.send(reply)
        except StopIteration:
            return


def _log(entry: ActivationLog, name: str, args: dict[str, Any], reply: Any) -> None:
    tool = getattr(reply, "tool_result", None)
    entry.actions.append(ActionLog(
        name=name, arguments=args, accepted=bool(reply.accepted), feedback=reply.feedback,
        tool_result=None if tool is None else tool.model_dump(mode="json"), control=name.isupper(),
    ))  # fmt: skip


def llm_teacher() -> ManagerPolicy:
    """The LLM teacher for auto branches: the rules checks first, the model (STATEGUARD_MANAGER_*
    endpoint, any OpenAI-compatible server) wherever the rules cannot decide."""
    from stateguard.llm import EndpointConfig, LLMClient
    from stateguard.policies.hierarchical import HierarchicalManager
    from stateguard.policies.llm_manager import LLMManager

    return HierarchicalManager(RulesManager(), LLMManager(LLMClient(EndpointConfig.from_env("manager"))))


# ---------------------------------------------------------------------------------- running
def load_built_task(task_dir: str | Path) -> Task:
    root = Path(task_dir)
    return load_task(root / "hidden", task_id=root.name, base_path=str((root / "agent").resolve()))


def _run(task: Task, teacher: _Teacher, faults: list[Fault], run_dir: Path) -> dict[str, Any]:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    # The teacher's repair names the known intervention, so the permissive response model applies
    # (any touched variable suffices) and no false alarm is simulated: demonstrations stay as before.
    worker = ScriptedWorker(FaultModel(faults=faults), ResponseModel(identify="variable", p_flip=0.0))
    result = rollout(task, worker, DictWorkspace(), flow=LONGDS, manager=teacher, run_dir=run_dir)
    events = read_trace(run_dir / "trace.jsonl")
    steps = [{k: e.data.get(k) for k in ("index", "turn", "action", "output", "success")}
             | {"purpose": e.data.get("meta", {}).get("purpose"), "turn_end": bool(e.data.get("meta", {}).get("turn_end"))}
             for e in events if e.kind == "worker_step"]  # fmt: skip
    actions = [{"seq": e.seq, **{k: e.data.get(k) for k in ("name", "accepted", "stage", "activation")}}
               for e in events if e.kind == "action"]  # fmt: skip
    return {"worker_steps": steps, "action_events": actions, "answers": result.answers, "degraded": result.degraded,
            "trace_kinds": sorted({e.kind for e in events}), "activations": teacher.log, "run_dir": str(run_dir)}  # fmt: skip


def _stages(task_dir: Path) -> list[dict[str, Any]]:
    graph = json.loads((task_dir / "hidden" / "graph.json").read_text(encoding="utf-8"))
    return list(graph["stages"])


def generate(task_dir: str | Path, out_dir: str | Path, *, seed: int, repairs: int = 2, autos: int = 1,
             max_attempts: int = 8, teacher: str = "rules") -> list[TrajectoryRecord]:  # fmt: skip
    """One clean trajectory, up to `repairs` repair and up to `autos` auto trajectories for a
    built task; every record carries its Keep verdict (rejected ones included, for counting).
    `teacher="llm"` lets `llm_teacher()` decide in the auto branches."""
    if teacher not in ("rules", "llm"):
        raise ValueError(f"teacher={teacher!r}: use rules or llm (the LLM reads STATEGUARD_MANAGER_*)")
    root = Path(task_dir)
    task = load_built_task(root)
    runs = Path(out_dir) / "runs" / task.task_id
    reference = {t.turn_id: t.answer for t in task.turns}
    clean = TrajectoryRecord(trajectory_id=f"{task.task_id}/clean", task_id=task.task_id, variant="clean",
                             seed=seed, reference_answers=reference,
                             **_run(task, _Teacher(), [], runs / "clean"))  # fmt: skip
    out = [_judge(clean, clean)]
    rng = random.Random(f"traj:{task.task_id}:{seed}")
    options: list[tuple[dict[str, Any], str, InterventionRecord]] = []
    for stage in _stages(root):
        code = task.turn(stage["turn_id"]).code
        if code.count(stage["sql"]) != 1:
            continue
        for new_sql, record in candidate_interventions(stage["sql"], rng, stage=stage["name"]):
            options.append((stage, code.replace(stage["sql"], new_sql), record))
    rng.shuffle(options)

    def forced(stage: dict[str, Any], record: InterventionRecord) -> _Teacher:
        return _Teacher(t_star=int(stage["turn_id"]), variable=stage["name"],
                        reason=_REASONS.get(record.kind, _GENERIC_REASON))  # fmt: skip

    def live(stage: dict[str, Any], record: InterventionRecord) -> _Teacher:
        return _Teacher(live_from=int(stage["turn_id"]), live=llm_teacher() if teacher == "llm" else None)

    out += _branches(task, runs, options, clean, "repair", forced, seed=seed, wanted=repairs, max_attempts=max_attempts)
    out += _branches(task, runs, options, clean, "auto", live, seed=seed, wanted=autos, max_attempts=max_attempts)
    return out


def _branches(task: Task, runs: Path, options: list[tuple[dict[str, Any], str, InterventionRecord]],
              clean: TrajectoryRecord, variant: Variant,
              make_teacher: Callable[[dict[str, Any], InterventionRecord], _Teacher], *, seed: int, wanted: int,
              max_attempts: int) -> list[TrajectoryRecord]:  # fmt: skip
    """Counterfactual branches of one variant: θ' at t*, the teacher `make_teacher` gives (forced
    for repair, live for auto); at most `wanted` kept, one per intervention turn."""
    out: list[TrajectoryRecord] = []
    kept = attempts = 0
    used_turns: set[int] = set()
    for stage, faulty, record in options:
        if kept >= wanted or attempts >= max_attempts:
            break
        t_star = int(stage["turn_id"])
        if t_star in used_turns:
            continue
        attempts += 1
        rec = TrajectoryRecord(
            trajectory_id=f"{task.task_id}/{variant}-{attempts}", task_id=task.task_id, variant=variant, seed=seed,
            t_star=t_star, stage=stage["name"], intervention=record, faulty_code=faulty,
            reference_answers=clean.reference_answers,
            **_run(task, make_teacher(stage, record), [Fault(kind="counterfactual", turn=t_star, code=faulty)],
                   runs / f"{variant}-{attempts}"),
        )  # fmt: skip
        rec = _judge(rec, clean)
        out.append(rec)
        if rec.keep:
            kept += 1
            used_turns.add(t_star)
    return out


def _judge(record: TrajectoryRecord, clean: TrajectoryRecord) -> TrajectoryRecord:
    verdict = keep(record, clean)
    return record.model_copy(update={"keep": verdict.keep, "rejections": verdict.failed})


# ---------------------------------------------------------------------------------- Keep(τ)
def _replay_fidelity(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    cut = tau.t_star if tau.t_star is not None else 10**9
    def view(s: dict[str, Any]) -> tuple[Any, ...]:
        return (s.get("turn"), s.get("action"), _ADDRESS.sub("0x?", s.get("output") or ""), s.get("purpose"))

    def before(r: TrajectoryRecord) -> list[tuple[Any, ...]]:
        return [view(s) for s in r.worker_steps if (s.get("turn") or 0) < cut]

    return before(tau) == before(clean)


def _faulty_answer(tau: TrajectoryRecord) -> Any:
    for s in tau.worker_steps:
        if s.get("turn") == tau.t_star and s.get("purpose") == "faulty" and s.get("turn_end"):
            lines = [x for x in (s.get("output") or "").splitlines() if x.strip()]
            try:
                return json.loads(lines[-1]) if lines else None
            except json.JSONDecodeError:
                return None
    return None


def _intervention_activated(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    if tau.variant == "clean":
        return not any(s.get("purpose") != "reference" for s in tau.worker_steps)
    ran = any(s.get("turn") == tau.t_star and s.get("purpose") == "faulty" and s.get("success")
              for s in tau.worker_steps)  # fmt: skip
    # An intervention that leaves the turn's answer unchanged teaches nothing (benign): reject it.
    return ran and _faulty_answer(tau) != clean.answers.get(tau.t_star or -1)


def _retried_after_fault(tau: TrajectoryRecord) -> bool:
    after = [s for s in tau.worker_steps if s.get("turn") == tau.t_star and s.get("purpose") == "recompute"]
    first_retry = min((s["index"] for s in after), default=None)
    faulty_end = max((s["index"] for s in tau.worker_steps if s.get("purpose") == "faulty"), default=None)
    return first_retry is not None and faulty_end is not None and first_retry > faulty_end


def _demonstration_consumed(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    repairs = [a for a in tau.action_events if a.get("name") == "REPAIR" and a.get("accepted")]
    if tau.variant == "clean":
        return not repairs
    if tau.variant == "auto":  # nothing prescribed; no repair may precede the intervention
        return not any(c.name == "REPAIR" and c.accepted for a in tau.activations
                       if (a.turn or 0) < (tau.t_star or 0) for c in a.actions)  # fmt: skip
    if len(repairs) != 1:  # exactly the forced one: none before, none after the retry
        return False
    return _retried_after_fault(tau)


def _autonomous_detection(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    """auto only: the live manager repaired at t* on its own and the worker actually retried."""
    if tau.variant != "auto":
        return True
    repaired = any(c.name == "REPAIR" and c.accepted for a in tau.activations if a.turn == tau.t_star
                   for c in a.actions)  # fmt: skip
    return repaired and _retried_after_fault(tau)


def _lifecycle_valid(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    if tau.degraded or "degraded" in tau.trace_kinds:
        return False
    for act in tau.activations:
        accepted = [a for a in act.actions if a.accepted]
        controls = [a for a in accepted if a.control]
        if len(controls) != 1 or not accepted[-1].control:
            return False
    if tau.variant == "repair":
        forced = [a for a in tau.activations if a.forced]
        finals = [c.name for a in forced for c in a.actions if c.accepted and c.control]
        if not finals or finals[0] != "REPAIR" or "REPAIR" in finals[1:] or "FINALIZE_RELATIONS" not in finals[1:]:
            return False
        commits = [c.name for a in tau.activations if a.turn == tau.t_star for c in a.actions
                   if c.accepted and c.name == "COMMIT_STATE"]  # fmt: skip
        return len(commits) == 1
    return True


def _task_completed(tau: TrajectoryRecord, clean: TrajectoryRecord) -> bool:
    turns = set(tau.reference_answers)
    if not turns or set(tau.answers) != turns or any(tau.answers[t] is None for t in turns):
        return False
    if tau.variant in ("clean", "auto"):  # auto: the repair must restore every answer
        return all(tau.answers[t] == tau.reference_answers[t] for t in turns)
    assert tau.t_star is not None
    return tau.answers[tau.t_star] == clean.answers.get(tau.t_star)


KEEP_CHECKS = {
    "replay_fidelity": _replay_fidelity,
    "intervention_activated": _intervention_activated,
    "demonstration_consumed": _demonstration_consumed,
    "autonomous_detection": _autonomous_detection,
    "lifecycle_valid": _lifecycle_valid,
    "task_completed": _task_completed,
}


def keep(tau: TrajectoryRecord, clean: TrajectoryRecord) -> KeepVerdict:
    """Keep(τ) (Eq. 24): the conjunction of the named checks; `failed` lists those that did not hold."""
    failed = [name for name, check in KEEP_CHECKS.items() if not check(tau, clean)]
    return KeepVerdict(keep=not failed, failed=failed)


def rejection_counts(records: list[TrajectoryRecord]) -> dict[str, int]:
    return dict(sorted(Counter(r for rec in records for r in rec.rejections).items()))
