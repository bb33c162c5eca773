"""StateWise's fixed recovery core: between a planner's side-effecting proposal and its execution.

    retrieve -> propose -> attribute (counterfactual replanning) -> resolve each critical record
    -> any unresolved: safe stop -> repair defective records persistently (scoped, with lineage)
    -> replan from the repaired store -> independent state–action check -> execute, or safe stop

`run_task(..., recovery=None)` is the plain agent (retrieve, propose, execute): the baseline
conditions of the benchmark. `RecoveryConfig` switches the components off for the ablations:
attribution (nothing is found critical, so nothing is verified), verification (metadata only),
persistence (repairs go to a throw-away copy of the store), replanning (repaired values are patched
into the original proposal), the state–action check.

    outcome = run_task(task, store, env, interface, planner, developer=dev, recovery=RecoveryConfig())
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.trace import Trace
from statewise.attribution import Attribution, attribute
from statewise.check import CheckResult, check_action
from statewise.clarify import Developer
from statewise.interface import Action, Environment, ExecOutcome, Interface, TaskSpec
from statewise.planner import Planner, PlannerError
from statewise.repair import apply_repairs
from statewise.resolution import Resolution, ResolutionPolicy, resolve
from statewise.store import RecordStore


class RecoveryConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    attribution: bool = Field(
        default=True, description="Counterfactual replanning finds the critical records."
    )
    verify_all: bool = Field(default=False, description="Without attribution: verify every retrieved record.")
    persistence: bool = Field(default=True, description="Corrections are written to the persistent store.")
    replan: bool = Field(
        default=True,
        description="After a repair the planner plans again from the repaired store; "
        "False: the repaired values are patched into the proposal's slots instead.",
    )
    state_action_check: bool = True
    resolution: ResolutionPolicy = Field(default_factory=ResolutionPolicy)


class TaskOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    task_id: str
    retrieved: list[str] = Field(default_factory=list, description="Record ids retrieval returned.")
    proposed: Action
    final: Action = Field(description="The action executed, or a stop.")
    stopped: bool
    stop_reason: str = ""
    attribution: Attribution | None = None
    resolutions: list[Resolution] = Field(default_factory=list)
    corrections: list[str] = Field(default_factory=list, description="Correction ids written by this task.")
    check: CheckResult | None = None
    executed: ExecOutcome | None = None
    planner_calls: int = 0
    probes: int = 0
    questions: int = 0


def _stop(reason: str, used: dict[str, str] | None = None) -> Action:
    return Action(operation="stop", reason=reason, used=used or {})


def _propose(planner: Planner, task: TaskSpec, records: list[Any]) -> Action:
    """A planner that gives no usable action (an unparseable model reply) leaves nothing to execute."""
    try:
        return planner.propose(task, records)
    except PlannerError as exc:
        return _stop(f"the planner gave no usable action: {exc}")


def run_task(
    task: TaskSpec,
    store: RecordStore,
    env: Environment,
    interface: Interface,
    planner: Planner,
    *,
    developer: Developer | None = None,
    recovery: RecoveryConfig | None = None,
    trace: Trace | None = None,
    execute: bool = True,
) -> TaskOutcome:
    """One task end to end; never raises for a task-level failure (it becomes a stop)."""
    calls0, probes0 = planner.calls, env.probes
    asked0 = developer.questions if developer is not None else 0
    emit = trace.emit if trace is not None else (lambda *a, **k: None)
    records = store.retrieve(task.scope, task_id=task.task_id)
    emit("sw_retrieved", task_id=task.task_id, records=[r.model_dump(mode="json") for r in records])
    proposal = _propose(planner, task, records)
    emit("sw_proposed", task_id=task.task_id, action=proposal.model_dump(mode="json"))
    state: dict[str, Any] = {"attribution": None, "resolutions": [], "corrections": [], "check": None}
    final = proposal
    if recovery is not None:
        final = _recover(
            task, store, env, interface, planner, developer, recovery, records, proposal, state, emit
        )
    executed = None
    if not final.is_stop and execute:
        op = interface.spec.operations[final.operation]
        try:
            program = interface.render(op, final.slots)
        except ValueError as exc:  # e.g. a slot value a shell command must not carry
            final = _stop(f"the interface refused to render the action: {exc}", final.used)
        else:
            executed = env.execute(program)
            emit("sw_executed", task_id=task.task_id, ok=executed.ok, error=executed.error, program=program)
    if final.is_stop:
        emit("sw_stopped", task_id=task.task_id, reason=final.reason)
    return TaskOutcome(
        task_id=task.task_id,
        retrieved=[r.id for r in records],
        proposed=proposal,
        final=final,
        stopped=final.is_stop,
        stop_reason=final.reason if final.is_stop else "",
        executed=executed,
        planner_calls=planner.calls - calls0,
        probes=env.probes - probes0,
        questions=(developer.questions - asked0) if developer is not None else 0,
        **state,
    )


def _recover(
    task: TaskSpec,
    store: RecordStore,
    env: Environment,
    interface: Interface,
    planner: Planner,
    developer: Developer | None,
    cfg: RecoveryConfig,
    records: list[Any],
    proposal: Action,
    state: dict[str, Any],
    emit: Any,
) -> Action:
    by_id = {r.id: r for r in records}
    if cfg.attribution:
        attribution = attribute(planner, interface.spec, task, records, proposal)
        state["attribution"] = attribution
        targets = attribution.to_verify
        emit(
            "sw_attribution",
            task_id=task.task_id,
            critical=attribution.critical,
            inconclusive=attribution.inconclusive,
        )
    else:
        targets = [r.id for r in records] if cfg.verify_all else []
    working = store if cfg.persistence else store.copy()
    try:
        return _resolve_repair_check(
            task, working, env, interface, planner, developer, cfg, by_id, targets, proposal, state, emit
        )
    finally:
        if working is not store:
            working.close()


def _resolve_repair_check(
    task: TaskSpec,
    working: RecordStore,
    env: Environment,
    interface: Interface,
    planner: Planner,
    developer: Developer | None,
    cfg: RecoveryConfig,
    by_id: dict[str, Any],
    targets: list[str],
    proposal: Action,
    state: dict[str, Any],
    emit: Any,
) -> Action:
    op = interface.spec.operations[task.operation]
    resolutions = [
        resolve(by_id[rid], task, op, interface, env, working, developer, cfg.resolution) for rid in targets
    ]
    state["resolutions"] = resolutions
    for res in resolutions:
        emit("sw_resolution", task_id=task.task_id, **res.model_dump(mode="json", exclude={"evidence"}))
    unresolved = [r for r in resolutions if r.status == "unresolved"]
    if unresolved:
        return _stop(
            "unresolved premise: " + "; ".join(f"{r.key} ({r.detail})" for r in unresolved), proposal.used
        )
    corrections = apply_repairs(
        working, {r.record_id: by_id[r.record_id] for r in resolutions}, resolutions, task
    )
    state["corrections"] = corrections
    action = proposal
    if corrections:
        emit("sw_repaired", task_id=task.task_id, corrections=corrections)
        if cfg.replan:
            action = _propose(planner, task, working.retrieve(task.scope))
        else:
            action = _patch(proposal, task, interface, working.retrieve(task.scope))
        emit("sw_replanned", task_id=task.task_id, action=action.model_dump(mode="json"))
    if cfg.state_action_check and not action.is_stop:
        check = check_action(action, task, interface, env, working)
        state["check"] = check
        emit("sw_check", task_id=task.task_id, passed=check.passed, failures=check.failures)
        if not check.passed:
            return _stop("state-action check failed: " + "; ".join(check.failures), action.used)
    return action


def _patch(proposal: Action, task: TaskSpec, interface: Interface, records: list[Any]) -> Action:
    """The no-replanning ablation: each slot the proposal filled from a record that a repair superseded
    takes the repaired value; nothing else changes, and a stopped proposal stays stopped (only a new
    plan could turn it into an action)."""
    if proposal.is_stop:
        return proposal
    by_key = {r.key: r for r in records}
    slots, used = dict(proposal.slots), dict(proposal.used)
    for slot, key in interface.spec.operations[task.operation].bound_keys(task.params).items():
        rec = by_key.get(key)
        if rec is not None and slot in used and used[slot] != rec.id:
            slots[slot], used[slot] = rec.value, rec.id
    blocked = [n for n, v in slots.items() if isinstance(v, str) and v in interface.spec.stop_values]
    if blocked:
        return _stop(f"a repaired value is a stop value in {blocked}", used)
    return proposal.model_copy(update={"slots": slots, "used": used})
