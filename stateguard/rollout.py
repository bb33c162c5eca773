"""The rollout loop (paper Algorithm 1): worker and manager around one harness.

Baseline = Worker + Harness (no reviews, no states, no hints); StateGuard = Worker + Harness +
Manager. Everything else — task, worker, workspace, budgets — is identical, so the two arms
differ only by the manager. Manager actions never consume worker steps. Every run writes its
trace (and, with a manager, its state store) under `run_dir`.

    result = rollout(task.agent_view(), ScriptedWorker(..., reference=task), DictWorkspace(), flow=LONGDS,
                     manager=RulesManager(), run_dir="runs/x/stateguard")
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import Field

from stateguard.actions import Action, RawAction
from stateguard.artifacts.run_folder import STORE_FILE, TRACE_FILE, RolloutFolder
from stateguard.encodable import escape_tree
from stateguard.flows import FlowConfig
from stateguard.harness import Harness, HarnessConfig, HarnessResult, Outcome
from stateguard.lifecycle import Actor, ControlAction, Regime, Stage, is_legal
from stateguard.observation import EventType, WorkerStep
from stateguard.policies.base import Advice, Degrade, ManagerContext, ManagerPolicy, ModelResponse
from stateguard.preflight import BindingError, bind_run
from stateguard.records import Record
from stateguard.store import StateStore
from stateguard.task import AgentTask, AgentTurn, agent_view, prelude
from stateguard.trace import Trace, manager_activation
from stateguard.worker_contract import WorkerAdapter, WorkerMessage
from stateguard.workspace import LiveWorkspace

MAX_ACTIVATIONS_PER_REVIEW = 12


class RolloutResult(Record):
    task_id: str
    arm: str = Field(
        min_length=1,
        description="The arm that ran, as the caller named it (baseline, stateguard, observer, llm, ...); "
        "files written before this was recorded say only baseline or stateguard.",
    )
    answers: dict[int, Any]
    committed_states: list[str] = Field(default_factory=list)
    stale_states: list[str] = Field(default_factory=list)
    worker_steps: int = 0
    manager_activations: int = 0
    manager_llm_calls: int = Field(
        default=0, description="Model calls that got a real answer (completions only)."
    )
    manager_fallbacks: int = Field(
        default=0, description="Activations that ended without a decision of the policy."
    )
    manager_usage: dict[str, int | float] = Field(
        default_factory=dict,
        description="A model-backed manager's counters (stateguard.policies.usage.ManagerUsage).",
    )
    repairs: int = 0
    degraded: bool = False
    degraded_reasons: list[str] = Field(
        default_factory=list,
        description="Why the result may be compromised: the manager's own degradation and the workspace's "
        "(e.g. a kernel restart that lost live objects). Non-empty exactly when `degraded` is true.",
    )
    degraded_turns: dict[int, str] = Field(
        default_factory=dict,
        description="Turns in which no worker code ran (failed model calls, refused replies, a spent "
        "time cap), with why: their answers rest on nothing executed. Each is also a degraded reason.",
    )
    workspace_isolation: str | None = Field(
        default=None, description="How the workspace was isolated: bwrap | process | none (in-process)."
    )
    run_dir: str | None = None


class _Run:
    def __init__(
        self,
        task: AgentTask,
        worker: WorkerAdapter,
        workspace: LiveWorkspace,
        flow: FlowConfig,
        manager: ManagerPolicy | None,
        run_dir: Path | None,
        harness_config: dict[str, Any],
    ):
        self.task, self.worker, self.ws, self.flow, self.manager = task, worker, workspace, flow, manager
        folder = None if run_dir is None else RolloutFolder(run_dir)
        self.store = StateStore(folder.store if folder else ":memory:")
        self.trace = Trace(folder.trace if folder else None)
        config = HarnessConfig(regime=flow.regime, task_text=task.query_text, **harness_config)
        self.harness = Harness(self.store, config, trace=self.trace, workspace=workspace, worker=worker)
        self.budget = flow.budget(manager is not None)
        self.step_index = 0
        self.used = 0  # worker steps in the current budget unit
        self.activations = 0
        self.fallbacks = 0  # activations the loop had to end itself (the policy decided nothing)
        self.repairs = 0
        self.degraded = False
        self.degraded_reasons: list[str] = []
        self.turn: AgentTurn | None = None
        self.since_review = 0  # worker steps since the last review (segment flow)

    # -- worker side
    def work(self, *, pause_every: int | None = None) -> bool:
        """Run the worker until it is done, the budget is spent, or a pause is due; True if paused."""
        while not self.worker.done() and self.used < self.budget:
            started = self.trace.now()
            step = self.worker.step(self.step_index)
            if step is None:
                break
            self.harness.record_step(step, started=started)
            self.step_index += 1
            self.used += 1
            self.since_review += 1
            if pause_every is not None and self.since_review >= pause_every:
                return True
        return False

    def deliver(self, hints: list[Any]) -> None:
        for hint in hints:
            self.worker.inject(WorkerMessage.from_hint(hint))

    # -- manager side
    def review(self, event: EventType, *, terminal: bool = False) -> HarnessResult | None:
        if self.manager is None or self.degraded:
            return None
        self.since_review = 0
        obs = self.harness.begin_review(event, terminal=terminal)
        ctx = ManagerContext(
            task=self.task,
            turn=self.turn,
            regime=self.flow.regime,
            store=self.store,
            workspace=self.ws,
            steps=self.harness.steps,
            budget=self.harness.config.repair_budget,
            worker_budget_left=max(0, self.budget - self.used),
            trace=self.trace,
        )
        result: HarnessResult | None = None
        for _ in range(MAX_ACTIVATIONS_PER_REVIEW):
            self.activations += 1
            result = self._activation(obs, ctx)
            if result.action == ControlAction.REPAIR.value and result.accepted:
                self.repairs += 1
            if result.next_actor is not Actor.MANAGER:
                break
            obs = self.harness.observation()
        else:
            result = self.harness.degrade("manager kept the activation going past the per-review limit")
        if result.outcome is Outcome.RUN_TO_COMPLETION:
            self.degraded = True
            self.degraded_reasons.append(f"manager degraded: {result.feedback}")
        self.deliver(self.harness.take_hints())
        return result

    def _activation(self, obs: Any, ctx: ManagerContext) -> HarnessResult:
        # model calls made while the policy decides are logged with this activation's id
        with manager_activation(self.harness.activation):
            return self._drive(obs, ctx)

    def _drive(self, obs: Any, ctx: ManagerContext) -> HarnessResult:
        assert self.manager is not None
        gen = self.manager.activate(obs, ctx)
        try:
            proposal = next(gen)
            while True:
                if isinstance(proposal, Degrade):
                    gen.close()
                    return self.harness.degrade(proposal.reason)
                if isinstance(proposal, Advice):
                    proposal = gen.send(
                        self.harness.advise(proposal.error_variables, proposal.faulty_reasoning)
                    )
                    continue
                if isinstance(proposal, ModelResponse):
                    results = self.harness.propose(proposal.message)
                    done = next(
                        (r for r in results if r.accepted and r.action in ControlAction.__members__), None
                    )
                    if done is not None:
                        return _finish(gen, results, done)
                    proposal = gen.send(results)
                    continue
                if not isinstance(proposal, Action | RawAction):
                    gen.close()
                    raise TypeError(
                        f"manager {getattr(self.manager, 'name', None)!r} yielded {type(proposal).__name__} "
                        f"{str(proposal)[:80]!r}; yield an Action (Action.of(RepairArgs(...))), a RawAction, "
                        "a ModelResponse, Advice or Degrade"
                    )
                result = self.harness.apply(proposal)
                if result.accepted and result.action in ControlAction.__members__:
                    return _finish(gen, result, result)
                proposal = gen.send(result)
        except StopIteration:
            pass
        return self._fallback()

    def _fallback(self) -> HarnessResult:
        """The policy ended without an accepted control action: the least intrusive legal exit,
        marked as a fallback (trace event `manager_fallback`, counted in the result)."""
        regime, stage = self.flow.regime, self.harness.stage
        for action in (ControlAction.ABSTAIN, ControlAction.RESUME_WORKER, ControlAction.ABANDON_STATE):
            if is_legal(regime, stage, action):
                self.trace.emit(
                    "manager_fallback",
                    policy=getattr(self.manager, "name", None),
                    stage=stage.value,
                    exit=action.value,
                    reason="the policy ended the activation without a decision",
                )
                self.fallbacks += 1
                result = self.harness.apply(Action.bare(action))
                if result.accepted:
                    return result
        return self.harness.degrade(f"no legal exit from stage '{stage.value}'")

    def repair_loop(self, event: EventType, *, terminal: bool) -> None:
        """Review; after each accepted REPAIR let the worker respond (if it has anything to do) and
        review again, until the state leaves the repair stage (the harness bounds the attempts)."""
        result = self.review(event, terminal=terminal)
        for _ in range(self.harness.config.repair_budget + 1):
            if result is None or self.harness.stage is not Stage.REPAIRING:
                return
            if not self.worker.done() and self.used < self.budget:
                self.work()
            result = self.review(EventType.REPAIR_RETURN, terminal=terminal)

    # -- flows
    def run_turn_aligned(self) -> None:
        for i, turn in enumerate(self.task.turns):
            self.turn = turn
            self.trace.emit("turn_start", turn_id=turn.turn_id, question=turn.question)
            self.used = 0
            self.review(EventType.TURN_START)
            self.worker.inject(WorkerMessage.user_turn(turn))
            self.work()
            self.repair_loop(EventType.TURN_END, terminal=i == len(self.task.turns) - 1)

    def run_segment(self) -> None:
        turns = list(self.task.turns)
        per_turn = self.flow.budget_unit == "turn"
        while True:
            if self.worker.done():
                if not turns:
                    break
                self.turn = turns.pop(0)
                self.trace.emit("turn_start", turn_id=self.turn.turn_id, question=self.turn.question)
                if per_turn:
                    self.used = 0
                self.worker.inject(WorkerMessage.user_turn(self.turn))
            if self.used >= self.budget:
                break
            paused = self.work(pause_every=self.flow.review_every if self.manager else None)
            if paused:
                self.review(EventType.PAUSE)
        # Terminal reviews repeat while they make progress: each may commit one more formed state,
        # and work the manager requested (a repair) is done and reviewed again.
        for _ in range(MAX_ACTIVATIONS_PER_REVIEW if self.manager else 0):
            committed = len(self.store)
            self.repair_loop(EventType.TERMINAL, terminal=True)
            if not self.worker.done() and self.used < self.budget:
                self.work()
                continue
            if len(self.store) == committed or self.degraded:
                break


def unworked_turns(task: AgentTask, steps: list[WorkerStep]) -> dict[int, str]:
    """Turns in which no worker code ran, with why (the failures the worker reported on its
    steps): an answer there rests on no execution, so the turn counts as degraded, not clean."""
    out: dict[int, str] = {}
    for turn in task.turns:
        mine = [s for s in steps if s.turn == turn.turn_id]
        if any(s.action.strip() and s.meta.get("executed") is not False for s in mine):
            continue
        causes = Counter(
            str(s.meta.get("worker_failure") or ("refused reply" if s.meta.get("refused") else "no action"))
            for s in mine
        )
        detail = ", ".join(f"{n} x {cause.replace('_', ' ')}" for cause, n in causes.most_common())
        out[turn.turn_id] = f"ran no code ({detail or 'no worker step'})"
    return out


def _finish(gen: Any, reply: Any, result: HarnessResult) -> HarnessResult:
    """The activation is over: let the policy see its accepted control action once, then close it."""
    with contextlib.suppress(StopIteration):
        gen.send(reply)
    gen.close()
    return result


def rollout(
    task: AgentTask,
    worker: WorkerAdapter,
    workspace: LiveWorkspace,
    *,
    flow: FlowConfig,
    manager: ManagerPolicy | None = None,
    run_dir: str | Path | None = None,
    harness_config: dict[str, Any] | None = None,
    arm: str | None = None,
) -> RolloutResult:
    """Run one task in one arm and return the per-turn answers and the committed states.

    `arm` is the name recorded in the trace and in result.json; without it, "stateguard" when a
    manager runs and "baseline" when none does (callers with several manager arms pass theirs).
    `task` is the agent view (`Task.agent_view()`); a privileged `Task` passed by an untyped caller
    is stripped here, so neither the worker nor the manager can reach reference code or answers
    (the scripted worker takes the reference by name: `ScriptedWorker(..., reference=task)`)."""
    task = agent_view(task)
    arm_name = arm or ("stateguard" if manager else "baseline")
    if (arm_name == "baseline") != (manager is None):
        raise ValueError(
            f"arm {arm_name!r} with manager {getattr(manager, 'name', None)!r}: the baseline arm runs "
            "without a manager and every other arm with one"
        )
    path = None if run_dir is None else Path(run_dir)
    if path is not None and RolloutFolder(path).holds_run():
        raise FileExistsError(
            f"{path} already holds a run ({STORE_FILE} / {TRACE_FILE}); use a new run_dir or delete it"
        )
    run = _Run(task, worker, workspace, flow, manager, path, harness_config or {})
    run.trace.emit(
        "run_start",
        task_id=task.task_id,
        arm=arm_name,
        flow=flow.model_dump(mode="json"),
        manager=getattr(manager, "name", None),
    )
    setup = workspace.run_cell(prelude(task))
    if not setup.ok:
        raise RuntimeError(f"task prelude failed in the workspace: {setup.error}")
    worker.start(task, workspace)
    try:  # A.6: checkpoints, executor, workspace and worker consistently bound, before any step
        bind_run(run.harness, worker, workspace, manager=manager is not None)
    except BindingError as exc:
        run.trace.emit("binding_failed", error=str(exc))
        run.trace.close()
        run.store.close()
        raise
    if flow.regime is Regime.TURN_ALIGNED:
        run.run_turn_aligned()
    else:
        run.run_segment()
    run.harness.finish()
    llm_calls = int(getattr(manager, "calls", 0) or 0)
    usage_record = getattr(manager, "usage", None)
    usage: dict[str, int | float] = usage_record.model_dump() if usage_record is not None else {}
    fallbacks = run.fallbacks + int(usage.get("fallbacks", 0))
    run.trace.emit(
        "manager_summary",
        activations=run.activations,
        llm_calls=llm_calls,
        repairs=run.repairs,
        fallbacks=fallbacks,
        usage=usage,
    )
    answers = escape_tree(worker.final_answer())  # a lone surrogate in an answer must not crash the write
    run.trace.emit("answers", answers={str(k): v for k, v in answers.items()})
    unworked = unworked_turns(task, list(run.harness.steps.values()))
    if unworked:
        run.trace.emit("worker_degraded", turns={str(k): v for k, v in unworked.items()})
    reasons = (
        run.degraded_reasons
        + [f"worker: turn {t} {why}" for t, why in unworked.items()]
        + [str(r) for r in getattr(workspace, "degraded_reasons", [])]
    )
    if len(reasons) > len(run.degraded_reasons) + len(unworked):
        run.trace.emit("workspace_degraded", reasons=reasons[len(run.degraded_reasons) + len(unworked) :])
    result = RolloutResult(
        task_id=task.task_id,
        arm=arm_name,
        answers=answers,
        committed_states=run.store.ids(),
        stale_states=run.store.invalid_states(),
        worker_steps=run.step_index,
        manager_activations=run.activations,
        manager_llm_calls=llm_calls,
        manager_fallbacks=fallbacks,
        manager_usage=usage,
        repairs=run.repairs,
        degraded=run.degraded or bool(reasons),
        degraded_reasons=reasons,
        degraded_turns=unworked,
        workspace_isolation=getattr(workspace, "isolation", "none"),
        run_dir=None if path is None else str(path),
    )
    if path is not None:
        RolloutFolder(path).result.write_text(result.model_dump_json(indent=1))
    run.trace.close()
    run.store.close()
    return result
