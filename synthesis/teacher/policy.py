"""The synthesis teacher: one manager policy shared by corpus synthesis and the RL prefix replay.

    teacher = TeacherPolicy(plan)                  # plan: synthesis.teacher.plan.TeacherPlan
    worker = teacher_worker(faults, plan.resist, reference=task)   # task: the privileged Task
    rollout(task.agent_view(), worker, DictWorkspace(), flow=flow_named(plan.flow), manager=teacher,
            run_dir=...)
    teacher.log                                    # ActivationLog per activation (what export reads)

It drives the lifecycle through the real harness in both regimes: turn-aligned (a state per
turn, opened at the turn's start) and segment-induced (a state per analytical stage, formed post
hoc from the pending steps at a pause). At every verification it gathers evidence with tool
calls a manager without its knowledge could make -- `inspect_python` on the state's code,
`load_state` on the committed states the code builds on (and on the one a definition update
replaces), `compile_python` then `run_probe` of the stage recomputed as the task text states it
(`probe.stated_probe`) -- and decides from the probe's result:

* the stored result differs from the task as stated -> REPAIR, naming the stage's variable with a
  worded reason (no code, no values); the harness makes a second attempt heavy; once the budget is
  spent -> ABANDON_STATE (the harness rolls back);
* otherwise -> FINALIZE_RELATIONS with the relations the dataflow shows, plus `invalidate` for
  the state whose definition the task's update replaces (which it loaded), then COMMIT_STATE.

The privileged plan only chooses: which query is "as stated" (the reference SQL; a stage is only
planned for a counterfactual when the text states the part θ' changes), where a segment ends,
which state an update replaces. An `auto` plan hands every activation from the fault turn on to a
live policy (the rules manager, or an LLM) that has none of this knowledge.
"""

from __future__ import annotations

from typing import Any

from stateguard.actions import (
    AbandonStateArgs,
    AbstainArgs,
    Action,
    CheckExecutionArgs,
    CommitStateArgs,
    CompilePythonArgs,
    ErrorHintArg,
    FinalizeRelationsArgs,
    InspectPythonArgs,
    LoadStateArgs,
    OpenStateArgs,
    RepairArgs,
    ResumeWorkerArgs,
    RunProbeArgs,
    UpdateStateArgs,
)
from stateguard.artifacts.activation_log import ActivationLog
from stateguard.artifacts.teacher_plan import Segment, TeacherPlan
from stateguard.lifecycle import Regime, Stage
from stateguard.observation import EventType, ManagerObservation, WorkerStep
from stateguard.policies.base import Activation, ManagerContext, ManagerPolicy
from stateguard.policies.rules import RulesManager
from synthesis.teacher.log import relay
from synthesis.teacher.plan import flow_named
from synthesis.teacher.probe import read_probe, stated_probe
from synthesis.teacher.requirements import requirements

__all__ = ["GENERIC_REASON", "TeacherPolicy"]

GENERIC_REASON = "this result does not follow what the question asks for, so its rows or values are off"


def _marks(step: WorkerStep, segment: Segment) -> bool:
    """Does this step hold the stage's last block (a line equal to its marker)?"""
    return any(line.strip() == segment.marker for line in step.action.splitlines())


class TeacherPolicy:
    def __init__(self, plan: TeacherPlan, *, live: ManagerPolicy | None = None):
        self.plan = plan
        self.flow = flow_named(plan.flow)
        self.name = f"{plan.version}:{plan.variant}" + (f"+{plan.live}" if plan.variant == "auto" else "")
        self.rules = RulesManager()  # bookkeeping: variables, conclusions, constraints, dataflow relations
        self.live: ManagerPolicy | None = (
            live if live is not None else (RulesManager() if plan.variant == "auto" else None)
        )
        self.log: list[ActivationLog] = []
        self.states: dict[str, str] = {}  # stage key -> id of the state that committed it
        self.key: str | None = None  # stage key of the open draft
        self.span: tuple[int, int] | None = None  # segment flow: the draft's source steps
        self.retry_from: int | None = None  # first worker step after our last REPAIR
        self.probed: set[str] = set()  # stages whose probe was compiled already

    # ------------------------------------------------------------------ activation
    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        turn = ctx.turn.turn_id if ctx.turn is not None else None
        entry = ActivationLog(
            index=len(self.log),
            turn=turn,
            segment=self.key,
            observation=obs.model_dump(mode="json", exclude={"schema_version"}),
        )
        self.log.append(entry)
        if self._is_live(turn, obs) and self.live is not None:
            entry.live = True
            return relay(self.live.activate(obs, ctx), entry)
        return relay(self._decide(obs, ctx, entry), entry)

    def _is_live(self, turn: int | None, obs: ManagerObservation) -> bool:
        """auto: live from the fault turn's first activation after its OPEN_STATE. Opening the turn
        comes before any of its steps (θ' included) and is replayed as in the clean run, so the
        prefix up to the intervention is identical (Keep's replay_fidelity)."""
        p = self.plan
        if p.variant != "auto" or p.fault_turn is None or turn is None or turn < p.fault_turn:
            return False
        return turn > p.fault_turn or Stage(obs.stage) is not Stage.IDLE

    def _decide(self, obs: ManagerObservation, ctx: ManagerContext, entry: ActivationLog) -> Activation:
        stage = Stage(obs.stage)
        if stage is Stage.IDLE:
            yield from (
                self._open_turn(obs, ctx)
                if ctx.regime is Regime.TURN_ALIGNED
                else self._open_segment(obs, ctx)
            )
            entry.segment = self.key
        elif stage in (Stage.OPEN, Stage.REPAIRING):
            yield from (
                self.rules.activate(obs, ctx)
                if ctx.regime is Regime.TURN_ALIGNED
                else self._update_segment(obs, ctx, stage)
            )
        elif stage is Stage.UPDATED:
            entry.forced = self.plan.knows_fault and self.key == self.plan.target
            yield from self._verify(obs, ctx)
        else:
            result = yield Action.of(CommitStateArgs())
            if result.accepted and self.key is not None and obs.available_state_id:
                self.states[self.key] = obs.available_state_id
                self.key = None

    # ------------------------------------------------------------------ opening
    def _replaced(self, key: str | None) -> list[str]:
        """Committed states whose definition the stage `key` replaces (a definition update)."""
        return [self.states[s] for s in self.plan.invalidates.get(key or "", []) if s in self.states]

    def _open_turn(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        if obs.event_type is not EventType.TURN_START or ctx.turn is None:
            yield Action.of(AbstainArgs(reason="no state is open for this turn"))
            return
        self.key = self.plan.stage_of_turn.get(ctx.turn.turn_id, f"turn{ctx.turn.turn_id}")
        self.retry_from = None
        replaced = self._replaced(self.key)
        for sid in replaced:  # the turn's update text names a definition an earlier state holds
            yield Action.of(LoadStateArgs(state_id=sid))
        latest = ctx.store.latest_id()
        relations: list[dict[str, Any]] = (
            [{"related_state_id": latest}] if latest and latest not in replaced else []
        )
        relations += [{"related_state_id": sid, "type": "invalidate"} for sid in replaced]
        yield Action.of(
            OpenStateArgs.model_validate(
                {
                    "issue": ctx.turn.question.strip()[:300],
                    "constraints": self._constraints(ctx, ctx.turn, ctx.turn.question),
                    "relations": relations,
                }
            )
        )

    def _open_segment(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        formed = self._formed(obs, ctx)
        if formed is None:
            yield Action.of(AbstainArgs() if obs.terminal_pending_review else ResumeWorkerArgs())
            return
        segment, end = formed
        assert obs.pending_start_step is not None
        self.key, self.span, self.retry_from = segment.key, (obs.pending_start_step, end), None
        turn = ctx.task.turn(segment.turn)
        # the frame is named by the steps already run (segment-induced: the state forms after them)
        yield Action.of(
            OpenStateArgs.model_validate(
                {
                    "issue": segment.issue[:300],
                    "constraints": self._constraints(ctx, turn, segment.issue, frame=segment.key),
                }
            )
        )

    def _formed(
        self, obs: ManagerObservation, ctx: ManagerContext, after: int | None = None
    ) -> tuple[Segment, int] | None:
        """The next stage not yet committed whose last block is among the pending steps."""
        if obs.pending_start_step is None or obs.pending_end_step is None:
            return None
        todo = [s for s in self.plan.segments if s.key not in self.states]
        if not todo:
            return None
        segment = todo[0]
        start = obs.pending_start_step if after is None else max(after, obs.pending_start_step)
        for i in range(start, obs.pending_end_step + 1):
            step = ctx.steps.get(i)
            if step is not None and step.turn == segment.turn and _marks(step, segment):
                return segment, i
        return None

    def _constraints(
        self, ctx: ManagerContext, turn: Any, question: str, frame: str | None = None
    ) -> list[dict[str, Any]]:
        """What the question states (synthesis.teacher.requirements), plus the frame check in segment flows."""
        return requirements(question, places=self.rules._required(ctx, turn), frame=frame)

    # ------------------------------------------------------------------ updating (segment flow)
    def _update_segment(self, obs: ManagerObservation, ctx: ManagerContext, stage: Stage) -> Activation:
        if stage is Stage.REPAIRING:
            retry = self._formed_retry(obs, ctx)
            if retry is None:  # the worker's retry of this stage has not finished yet
                yield Action.of(AbstainArgs() if obs.terminal_pending_review else ResumeWorkerArgs())
                return
            self.span = retry
        assert self.span is not None
        steps = [ctx.steps[i] for i in range(self.span[0], self.span[1] + 1) if i in ctx.steps]
        for step in steps:
            yield Action.of(CheckExecutionArgs(step_id=step.index))
        written, consumed = self.rules._variables(steps, ctx)
        later = {w for i, s in ctx.steps.items() if i > self.span[1] for w in s.meta.get("writes", [])}
        for var in written:  # rebound after this span: its live value is not this state's
            if var["name"] in later:
                var["value"] = None
        yield Action.of(
            UpdateStateArgs.model_validate(
                {
                    "used_variables": written
                    + [
                        {"name": n, "version": v, "value": self.rules._value(ctx, n)}
                        for n, v in consumed.items()
                    ],
                    "conclusions": self.rules._conclusions(steps),
                    "source_interval": list(self.span),
                }
            )
        )

    def _formed_retry(self, obs: ManagerObservation, ctx: ManagerContext) -> tuple[int, int] | None:
        if self.retry_from is None or self.key is None:
            return None
        segment = next(s for s in self.plan.segments if s.key == self.key)
        for i in sorted(ctx.steps):
            step = ctx.steps[i]
            if i >= self.retry_from and step.turn == segment.turn and _marks(step, segment):
                return self.retry_from, i
        return None

    # ------------------------------------------------------------------ verification
    def _under_review(self, obs: ManagerObservation, ctx: ManagerContext) -> list[WorkerStep]:
        if ctx.regime is Regime.SEGMENT_INDUCED and self.span is not None:
            return [ctx.steps[i] for i in range(self.span[0], self.span[1] + 1) if i in ctx.steps]
        steps = self.rules._span(obs, ctx)
        return [s for s in steps if self.retry_from is None or s.index >= self.retry_from] or steps

    def _verify(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        steps = self._under_review(obs, ctx)
        code = "\n\n".join(s.action for s in steps if s.success and s.error is None and s.action.strip())
        if code:
            yield Action.of(InspectPythonArgs(code=code))
        _, consumed = self.rules._variables(steps, ctx)
        loaded = set() if ctx.regime is Regime.TURN_ALIGNED else set(self._replaced(self.key))
        for sid in sorted(loaded) + [s for s in sorted(set(consumed.values())) if s not in loaded][:2]:
            yield Action.of(LoadStateArgs(state_id=sid))
        violated, evidence = yield from self._probe(ctx)
        if violated:
            if obs.repair_attempts >= obs.repair_budget:
                yield Action.of(
                    AbandonStateArgs(reason=f"repair budget exhausted; the evidence still holds: {evidence}")
                )
                return
            yield from self._repair(obs, evidence)
            return
        yield self._finalize(obs, ctx)

    def _probe(self, ctx: ManagerContext) -> Any:
        """(violated, evidence) from the as-stated recomputation of the state's stage, if planned."""
        check = self.plan.checks.get(self.key or "")
        if check is None or ctx.workspace is None:
            return False, ""
        code = stated_probe(check.table, check.stated_sql)
        if check.table not in self.probed:
            self.probed.add(check.table)
            yield Action.of(CompilePythonArgs(code=code))
        result = yield Action.of(RunProbeArgs(code=code))
        tool = getattr(result, "tool_result", None)
        verdict = read_probe(str((tool.data if tool is not None else {}).get("stdout", "")))
        if verdict is None or verdict.same_rows:
            return False, ""
        return True, (
            f"[stated_recompute] recomputing {check.table} as the task states it gives "
            f"{verdict.stated_rows} rows against {verdict.stored_rows} stored; the row sets differ"
        )

    def _repair(self, obs: ManagerObservation, evidence: str) -> Activation:
        check = self.plan.checks[self.key or ""]
        reason = self.plan.reason if self.key == self.plan.target and self.plan.reason else GENERIC_REASON
        self.retry_from = (obs.pending_end_step or 0) + 1
        hint = ErrorHintArg(error_variables=[check.table], faulty_reasoning=reason)
        result = yield Action.of(RepairArgs(analytical_evidence=evidence, error_hint=hint))
        if not result.accepted and reason != GENERIC_REASON:  # the hint guard refused the wording
            yield Action.of(
                RepairArgs(
                    analytical_evidence=evidence,
                    error_hint=ErrorHintArg(error_variables=[check.table], faulty_reasoning=GENERIC_REASON),
                )
            )

    def _finalize(self, obs: ManagerObservation, ctx: ManagerContext) -> Action:
        """FINALIZE_RELATIONS: the dataflow's upstream states plus `invalidate` for replaced ones."""
        if ctx.regime is Regime.SEGMENT_INDUCED:
            self.rules._retry_from = None  # the rules' span is the draft's bound interval
        args = self.rules.finalize(obs, ctx).args
        assert isinstance(args, FinalizeRelationsArgs)
        draft = obs.current_draft or {}
        provisional = [r for r in draft.get("provisional_relations", []) if r.get("related_state_id")]
        if args.mode == "confirm":
            relations = [
                {"related_state_id": r["related_state_id"]}
                for r in provisional
                if r.get("type") != "invalidate"
            ]
        else:
            relations = [r.model_dump(exclude_unset=True) for r in args.relations if r.type != "invalidate"]
        replaced = self._replaced(self.key)
        relations = [r for r in relations if r["related_state_id"] not in replaced]
        relations += [{"related_state_id": s, "type": "invalidate"} for s in replaced]
        want = sorted((r["related_state_id"], r.get("type") == "invalidate") for r in relations)
        have = sorted((r["related_state_id"], r.get("type") == "invalidate") for r in provisional)
        if want == have:
            return Action.of(FinalizeRelationsArgs(mode="confirm"))
        parts = [
            f"{'invalidates' if r.get('type') == 'invalidate' else 'uses'} {r['related_state_id']}"
            for r in relations
        ]
        why = "the task's update replaces the definition this state loaded; " if replaced else ""
        return Action.of(
            FinalizeRelationsArgs.model_validate(
                {
                    "mode": "reselect",
                    "relations": relations,
                    "conflict_evidence": f"{why}dataflow of the state's steps: {', '.join(parts) or 'no upstream reads'}",
                }
            )
        )
