"""The harness Γ_H (paper A.6, Eq. 19): validates, canonicalizes and applies manager actions.

Every control action runs as a transaction over the components it may touch (draft, lifecycle
stage, repair session, hint queue, trace buffer, committed store, workspace): snapshot -> apply
-> commit, or restore on any failure. A rejected action leaves all of them unchanged and returns
corrective feedback; the only trace record it adds is its own verdict.

The harness — never the manager — owns state ids, variable versions, relation normalization
(Eq. 13), source binding, checkpoints and the repair schedule (attempt 1 light = hint;
later attempts heavy = hint + delete the localized variables from the workspace; at most
`repair_budget` attempts; then ABANDON_STATE rolls the workspace back to the last valid
checkpoint, and the worker too: a commit keeps the bound worker's `snapshot()` under the same
checkpoint id, and a rollback `restore`s it, so the worker's context no longer holds the
abandoned work). `stateguard.preflight.bind_run` checks those bindings before a task starts.

    h = Harness(StateStore(path), HarnessConfig(regime="turn_aligned"), trace=Trace(path))
    h.begin_review(EventType.TURN_START); h.propose(model_message) -> [HarnessResult, ...]
"""

from __future__ import annotations

from bisect import bisect_left, insort
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stateguard.actions import (
    Action,
    ActionError,
    FinalizeRelationsArgs,
    OpenStateArgs,
    RawAction,
    RelationArg,
    RepairArgs,
    UpdateStateArgs,
    validate_action,
)
from stateguard.binding import bind_source, cite_conclusions, merge_constraints, version_variables
from stateguard.hint_guard import HintRejected, check_repair_hint
from stateguard.hints import Hint, state_hint
from stateguard.lifecycle import (
    NEXT_ACTOR,
    Actor,
    ControlAction,
    Regime,
    Stage,
    is_legal,
    legal_actions,
    next_stage,
)
from stateguard.observation import EventType, ManagerObservation, WorkerStep, compress, project_steps
from stateguard.parser import parse_response
from stateguard.relation_rules import normalize_relations
from stateguard.repair import plan_repair, repair_mode
from stateguard.state import Constraint, ConstraintResult, Draft, Relation
from stateguard.store import StateStore, StoreError
from stateguard.tools import ToolResult, run_tool
from stateguard.trace import Trace
from stateguard.worker_contract import WorkerAdapter
from stateguard.workspace import Workspace


class BindingError(RuntimeError):
    """Checkpoints, executor, workspace or worker are not bound consistently (A.6); the run stops."""


class Outcome(StrEnum):
    CONTINUE = "continue"
    FINISH = "finish"
    RUN_TO_COMPLETION = "run_to_completion"


class HarnessConfig(BaseModel):
    """Knobs of the harness; defaults follow the paper (A.6, A.7)."""

    model_config = ConfigDict(extra="forbid")

    regime: Regime = Field(description="turn_aligned (one state per turn) or segment_induced.")
    repair_budget: int = Field(default=3, ge=1, description="Max REPAIR attempts per state.")
    light_attempts: int = Field(default=1, ge=0, description="Attempts 1..n are light (hint only).")
    on_budget_exhausted: Literal["rollback", "abandon"] = Field(
        default="rollback", description="What ABANDON_STATE does after the budget is spent."
    )
    max_actions_per_activation: int = Field(default=8, ge=1)
    context_budget_tokens: int = Field(default=40_960, ge=256)
    recent_states_in_hint: int = Field(
        default=3, ge=0, description="Segment flow: states in the refresh hint."
    )
    task_text: str = Field(
        default="", description="The task query; numbers in it may appear in repair hints."
    )


class HarnessResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    accepted: bool
    action: str | None
    feedback: str
    notes: list[str] = Field(default_factory=list)
    outcome: Outcome = Outcome.CONTINUE
    next_actor: Actor = Actor.MANAGER
    stage: Stage
    state_id: str | None = None
    hints: list[Hint] = Field(default_factory=list)
    tool_result: ToolResult | None = None


class Harness:
    def __init__(
        self,
        store: StateStore,
        config: HarnessConfig,
        *,
        trace: Trace | None = None,
        workspace: Workspace | None = None,
        worker: WorkerAdapter | None = None,
    ):
        self.store = store
        self.config = config
        self.trace = trace or Trace()
        self.workspace = workspace
        self.worker = worker
        # checkpoint id -> the worker's snapshot() taken with it (commit, or the start checkpoint)
        self.worker_checkpoints: dict[str, Any] = {}
        self.stage = Stage.IDLE
        self.draft: Draft | None = None
        self.repair_attempts = 0
        self.pending_hints: list[Hint] = []
        self.steps: dict[int, WorkerStep] = {}
        # `steps`' indices in ascending order, so the pending steps (from `traced_upto` on) are
        # found without scanning every step of the run at each UPDATE and observation.
        self._step_order: list[int] = []
        self.traced_upto = 0  # first step index not yet bound to a committed state
        self.turn_start: int | None = None
        self.event: EventType = EventType.TASK_START
        self.terminal = False
        self.last_result: str | None = None
        self.activation = 0
        self.activation_actions = 0
        self.activation_evidence: list[Any] = []
        self.last_valid_checkpoint: str | None = None
        latest = store.latest_id()
        if latest is not None:
            self.last_valid_checkpoint = store.load(latest).checkpoint_id

    # ------------------------------------------------------------------ flow-facing API
    def record_step(self, step: WorkerStep, *, started: float | None = None) -> None:
        """Append one worker step to the trajectory (called by the rollout loop; `started` is the
        trace clock when the step began, so readers get its duration, not only its end)."""
        if step.index in self.steps:
            raise ValueError(
                f"worker step {step.index} was already recorded; step indices are unique per task"
            )
        self.steps[step.index] = step
        insort(self._step_order, step.index)
        timing = {} if started is None else {"started": started}
        self.trace.emit_known(
            "worker_step", **step.model_dump(mode="json", exclude={"schema_version"}), **timing
        )

    def begin_review(self, event: EventType, *, terminal: bool = False) -> ManagerObservation:
        """Start a manager activation at a review point and return the observation."""
        self.event = EventType(event)
        self.terminal = terminal
        if event is EventType.TURN_START:
            self.turn_start = self._next_step_index()
        self._new_activation()
        self.trace.emit("review", event=self.event.value, terminal=terminal, stage=self.stage.value)
        return self.observation()

    def advise(self, error_variables: list[str], faulty_reasoning: str) -> HarnessResult:
        """A stateless repair-style hint (the `observer` ablation): same guard, no state, no budget.
        The observer's remark is free text, so `error_variables` may be empty."""
        try:
            if not faulty_reasoning.strip():
                raise ActionError("advice needs a remark (faulty_reasoning)")
            check_repair_hint(faulty_reasoning, error_variables, allowed_text=self.config.task_text)
        except (ActionError, HintRejected) as exc:
            return self._reject(None, {"advice": error_variables, "reason": faulty_reasoning}, str(exc))
        hint = Hint(
            kind="repair",
            error_variables=list(error_variables),
            faulty_reasoning=faulty_reasoning,
            mode="light",
        )
        self.pending_hints.append(hint)
        self.trace.emit("advice", hint=hint)
        return HarnessResult(
            accepted=True, action="ADVICE", feedback="hint queued", stage=self.stage, hints=[hint]
        )

    def take_hints(self) -> list[Hint]:
        """Hints for the worker, in delivery order; the worker adapter injects them."""
        hints, self.pending_hints = self.pending_hints, []
        for hint in hints:
            self.trace.emit("hint_delivered", hint=hint, text=hint.render())
        return hints

    def observation(self) -> ManagerObservation:
        with self.store.pinned_heads():  # the next id and the index: one check of the heads
            return self._observation()

    def _observation(self) -> ManagerObservation:
        pending = [self.steps[i] for i in self._pending_indices()]
        obs = ManagerObservation(
            event_type=self.event,
            available_state_id=self.draft.id if self.draft else self.store.peek_next_id(),
            stage=self.stage.value,
            legal_control_actions=[a.value for a in legal_actions(self.config.regime, self.stage)],
            untraced_steps=project_steps(pending),
            pending_start_step=pending[0].index if pending else None,
            pending_end_step=pending[-1].index if pending else None,
            current_draft=None if self.draft is None else self.draft.model_dump(mode="json"),
            repair_attempts=self.repair_attempts,
            repair_budget=self.config.repair_budget,
            terminal_pending_review=self.terminal,
            last_action_result=self.last_result,
            committed_state_index=self.store.index(),
        )
        return compress(obs, self.config.context_budget_tokens)

    def propose(self, message: Any) -> list[HarnessResult]:
        """Parse a model response and apply its actions in order; a parse error is one rejection."""
        try:
            parsed = parse_response(message)
        except ActionError as exc:
            return [self._reject(None, {"raw": _raw_text(message)}, str(exc))]
        return [self.apply(action) for action in parsed.actions]

    def apply(self, action: Action | RawAction) -> HarnessResult:
        """Apply one action: a typed `Action`, or a `RawAction` validated here (a bad one is rejected
        with feedback naming the argument and the fix)."""
        if not isinstance(action, Action | RawAction):
            raise TypeError(
                f"Harness.apply takes an Action (Action.of(OpenStateArgs(...))) or a RawAction(name=..., "
                f"arguments=...), not {type(action).__name__} {str(action)[:60]!r}"
            )
        if isinstance(action, RawAction):
            name, arguments = action.name, action.arguments
            try:
                action = validate_action(name, arguments)
            except ActionError as exc:
                return self._reject(None, {"name": name, "arguments": arguments}, str(exc))
        if self.activation_actions >= self.config.max_actions_per_activation and not action.is_control:
            return self._reject(
                action,
                None,
                f"this activation already used {self.activation_actions} actions "
                f"(limit {self.config.max_actions_per_activation}); send one control action now",
            )
        self.activation_actions += 1
        if not action.is_control:
            return self._run_tool(action)
        return self._apply_control(action)

    def degrade(self, reason: str) -> HarnessResult:
        """Persistent manager failure: drop the draft and let the worker run to completion."""
        self.trace.emit("degraded", reason=reason, draft=self.draft.id if self.draft else None)
        self.draft, self.stage, self.repair_attempts = None, Stage.IDLE, 0
        return HarnessResult(
            accepted=True,
            action=None,
            feedback=reason,
            outcome=Outcome.RUN_TO_COMPLETION,
            next_actor=Actor.WORKER,
            stage=self.stage,
        )

    def finish(self) -> None:
        """End of run: any uncommitted draft is discarded (Algorithm 1, line 28)."""
        self.trace.emit(
            "run_end", discarded_draft=self.draft.id if self.draft else None, committed=len(self.store)
        )
        self.draft, self.stage = None, Stage.IDLE

    # ------------------------------------------------------------------ internals
    def _next_step_index(self) -> int:
        return self._ordered_indices()[-1] + 1 if self.steps else 0

    def _ordered_indices(self) -> list[int]:
        """`steps`' indices, ascending (sorted afresh if `steps` was written around `record_step`)."""
        if len(self._step_order) != len(self.steps):
            self._step_order = sorted(self.steps)
        return self._step_order

    def _pending_indices(self) -> list[int]:
        """Indices of the recorded steps no committed state covers yet (>= `traced_upto`), ascending."""
        order = self._ordered_indices()
        return order[bisect_left(order, self.traced_upto) :]

    def _new_activation(self) -> None:
        self.activation += 1
        self.activation_actions = 0
        self.activation_evidence = []

    def _reject(self, action: Action | None, raw: dict[str, Any] | None, feedback: str) -> HarnessResult:
        legal = ", ".join(a.value for a in legal_actions(self.config.regime, self.stage))
        self.last_result = f"REJECTED: {feedback}"
        self.trace.emit(
            "action",
            activation=self.activation,
            name=None if action is None else action.name.value,
            arguments=raw if action is None else action.args.model_dump(mode="json"),
            accepted=False,
            feedback=feedback,
            stage=self.stage.value,
        )
        return HarnessResult(
            accepted=False,
            action=None if action is None else action.name.value,
            feedback=f"{feedback} (stage '{self.stage.value}'; legal control actions: {legal})",
            stage=self.stage,
            state_id=self.draft.id if self.draft else None,
            next_actor=Actor.MANAGER,
        )

    def _run_tool(self, action: Action) -> HarnessResult:
        result = run_tool(action, store=self.store, steps=self.steps, workspace=self.workspace)
        self.activation_evidence.append(result.data)
        self.trace.emit(
            "tool",
            activation=self.activation,
            name=action.name.value,
            arguments=action.args.model_dump(mode="json"),
            result=result.model_dump(mode="json"),
        )
        self.last_result = f"{action.name.value}: {'ok' if result.ok else result.error}"
        return HarnessResult(
            accepted=True,
            action=action.name.value,
            feedback=self.last_result,
            stage=self.stage,
            state_id=self.draft.id if self.draft else None,
            tool_result=result,
            next_actor=Actor.MANAGER,
        )

    _MUTABLE = ("stage", "draft", "repair_attempts", "pending_hints", "traced_upto", "last_valid_checkpoint")

    # The actions that edit the draft in place; the others replace or drop it, so the saved
    # reference is enough to restore it and copying it would be wasted work on every action.
    _EDITS_DRAFT = frozenset({ControlAction.UPDATE_STATE, ControlAction.FINALIZE_RELATIONS})

    def _snapshot(self, name: ControlAction) -> dict[str, Any]:
        """Copy of the in-memory components a control action may modify (the draft when `name`
        edits it in place; the hint queue shallowly, since hints are only appended)."""
        saved = {k: getattr(self, k) for k in self._MUTABLE}
        if self.draft is not None and name in self._EDITS_DRAFT:
            saved["draft"] = _copy_draft(self.draft)
        saved["pending_hints"] = list(self.pending_hints)
        return saved

    def _apply_control(self, action: Action) -> HarnessResult:
        name = action.name
        assert isinstance(name, ControlAction)
        regime = self.config.regime
        if not is_legal(regime, self.stage, name):
            return self._reject(action, None, f"{name.value} is not allowed in stage '{self.stage.value}'")
        saved = self._snapshot(name)
        ws_token = None
        stage_before = self.stage
        try:
            # One check of the store's heads for the whole action (OPEN asks for them four times).
            with self.trace.transaction(), self.store.pinned_heads():
                if self._touches_workspace(name) and self.workspace is not None:
                    token = f"txn-{self.activation}-{self.trace.next_seq}"
                    try:
                        self.workspace.snapshot(token)
                    except RuntimeError as exc:  # a refused snapshot (the sandbox says why): not applied
                        raise ActionError(
                            f"{name.value} not applied: the workspace could not be checkpointed first ({exc})"
                        ) from None
                    ws_token = token
                notes, hints = self._dispatch(action)
                self.stage = next_stage(regime, stage_before, name)
                self.pending_hints.extend(hints)
                self.trace.emit_known(
                    "action",
                    activation=self.activation,
                    name=name.value,
                    arguments=action.args,  # written as its JSON dump
                    accepted=True,
                    notes=notes,
                    stage_before=stage_before.value,
                    stage=self.stage.value,
                )
        except (ActionError, HintRejected, StoreError, ValidationError) as exc:
            for key, value in saved.items():
                setattr(self, key, value)
            reason = str(exc)
            if ws_token is not None and self.workspace is not None:
                try:
                    self.workspace.restore(ws_token)
                except RuntimeError as failed:  # the workspace rebuilt itself and reports it as degraded
                    reason += f"; the workspace could not be put back as it was ({failed})"
            return self._reject(action, None, reason)
        finally:
            if ws_token is not None and self.workspace is not None:
                self.workspace.drop_checkpoint(ws_token)

        actor = NEXT_ACTOR[regime][name]
        outcome = Outcome.CONTINUE
        if self.terminal and actor is Actor.WORKER and name is not ControlAction.REPAIR:
            outcome = Outcome.FINISH
        if actor is Actor.MANAGER:
            self._new_activation()
        self.last_result = f"{name.value} applied" + (": " + "; ".join(notes) if notes else "")
        return HarnessResult(
            accepted=True,
            action=name.value,
            feedback=self.last_result,
            notes=notes,
            outcome=outcome,
            next_actor=actor,
            stage=self.stage,
            state_id=self.draft.id if self.draft else saved_id(saved),
            hints=hints,
        )

    def _touches_workspace(self, name: ControlAction) -> bool:
        """Only heavy repair and a rollback change the workspace; only they pay for a snapshot."""
        exhausted = self.repair_attempts >= self.config.repair_budget
        if name is ControlAction.REPAIR:
            return (
                not exhausted and repair_mode(self.repair_attempts + 1, self.config.light_attempts) == "heavy"
            )
        if name is ControlAction.ABANDON_STATE:
            return exhausted and self.config.on_budget_exhausted == "rollback"
        return False

    def _dispatch(self, action: Action) -> tuple[list[str], list[Hint]]:
        name, args = action.name, action.args
        if name is ControlAction.OPEN_STATE:
            assert isinstance(args, OpenStateArgs)
            return self._open(args)
        if name is ControlAction.UPDATE_STATE:
            assert isinstance(args, UpdateStateArgs)
            return self._update(args), []
        if name is ControlAction.FINALIZE_RELATIONS:
            assert isinstance(args, FinalizeRelationsArgs)
            return self._finalize(args), []
        if name is ControlAction.COMMIT_STATE:
            return self._commit()
        if name is ControlAction.REPAIR:
            assert isinstance(args, RepairArgs)
            return self._repair(args)
        if name is ControlAction.ABANDON_STATE:
            return self._abandon(), []
        return [], []  # RESUME_WORKER, ABSTAIN: no state mutation

    # -- OPEN_STATE
    def _open(self, args: OpenStateArgs) -> tuple[list[str], list[Hint]]:
        draft_id = self.store.peek_next_id()
        relations, notes = normalize_relations(
            args.relations,
            draft_id=draft_id,
            latest_committed=self.store.latest_id(),
            is_committed=self.store.__contains__,
        )
        self.draft = Draft(
            id=draft_id,
            issue=args.issue,
            constraints=[Constraint(text=c.text, code=c.code) for c in args.constraints],
            provisional_relations=relations,
        )
        self.repair_attempts = 0
        hints: list[Hint] = []
        if self.config.regime is Regime.TURN_ALIGNED:
            related = [self.store.load(r.related_state_id) for r in relations if r.related_state_id]
            hint = state_hint(related, for_state=draft_id)
            hints = [hint] if hint else []
        reserved = self.store.reserve_id()
        assert reserved == draft_id
        self.trace.emit_known("state_opened", state_id=draft_id, draft=self.draft)  # written as its JSON dump
        return notes, hints

    # -- UPDATE_STATE
    def _update(self, args: UpdateStateArgs) -> list[str]:
        draft = self.draft
        assert draft is not None
        notes: list[str] = []
        start, end = bind_source(
            self.config.regime,
            args.source_interval,
            # Only steps at or after traced_upto can be bound (bind_source refuses earlier ones).
            steps=self._pending_indices(),
            traced_upto=self.traced_upto,
            turn_start=self.turn_start,
            previous=(draft.source_step_start, draft.source_step_end),
            notes=notes,
        )
        variables = version_variables(args.used_variables, draft_id=draft.id, store=self.store)
        draft.conclusions = cite_conclusions(args.conclusions, variables)
        draft.issue = args.issue or draft.issue
        draft.used_variables = variables
        draft.source_step_start, draft.source_step_end = start, end
        draft.updated = True
        draft.constraints = merge_constraints(draft.constraints, args.constraints)
        draft.constraint_results = self._evaluate_constraints(draft)
        failed = draft.failed_constraints()
        if failed:
            notes.append(
                "executable constraint failed: " + "; ".join(f"{r.text} ({r.error})" for r in failed)
            )
        self.trace.emit_known("state_updated", state_id=draft.id, draft=draft, notes=notes)
        return notes

    def _evaluate_constraints(self, draft: Draft) -> list[ConstraintResult]:
        """Run each constraint's check in an isolated probe of the workspace (it passes if it doesn't raise)."""
        results = []
        for constraint in draft.constraints:
            if constraint.code is None:
                continue
            if self.workspace is None:
                results.append(ConstraintResult(text=constraint.text, passed=None, error="no workspace"))
                continue
            probe = self.workspace.run_probe(constraint.code)
            results.append(ConstraintResult(text=constraint.text, passed=probe.ok, error=probe.error))
        if results:
            self.trace.emit("constraint_checks", state_id=draft.id, results=[r.model_dump() for r in results])
        return results

    # -- FINALIZE_RELATIONS
    def _finalize(self, args: FinalizeRelationsArgs) -> list[str]:
        draft = self.draft
        assert draft is not None
        failed = draft.failed_constraints()
        if failed:
            raise ActionError(
                f"FINALIZE_RELATIONS refused: executable constraint '{failed[0].text}' failed "
                f"({failed[0].error}); REPAIR the violation or ABANDON_STATE"
            )
        if args.mode == "confirm":
            if args.relations:
                raise ActionError(
                    "mode 'confirm' keeps the provisional relations; to change them use mode 'reselect' "
                    "with conflict_evidence"
                )
            proposed: list[RelationArg | Relation] = list(draft.provisional_relations)
        else:
            if not (args.conflict_evidence or "").strip():
                raise ActionError(
                    "mode 'reselect' needs conflict_evidence: the concrete conflict with the provisional relations"
                )
            proposed = list(args.relations)
        relations, notes = normalize_relations(
            proposed,
            draft_id=draft.id,
            latest_committed=self.store.latest_id(),
            is_committed=self.store.__contains__,
        )
        for rel in relations:
            if (
                rel.related_state_id
                and rel.type.value != "invalidate"
                and self.store.is_invalid(rel.related_state_id)
            ):
                notes.append(f"warning: {rel.related_state_id} is stale (invalidated by a later state)")
        draft.relations = relations
        self.trace.emit_known(
            "relations_finalized",
            state_id=draft.id,
            mode=args.mode,
            relations=relations,
        )
        return notes

    # -- COMMIT_STATE
    def _commit(self) -> tuple[list[str], list[Hint]]:
        draft = self.draft
        assert draft is not None
        checkpoint = None
        if self.workspace is not None:
            checkpoint = f"ckpt-{draft.id}"
            try:
                self.workspace.snapshot(checkpoint)
            except Exception as exc:  # the workspace reports why; the draft stays committable later
                raise ActionError(f"COMMIT_STATE failed: workspace checkpoint failed ({exc})") from None
        try:
            state = draft.to_state(checkpoint)
            self.store.commit(state)
        except (StoreError, ValueError) as exc:
            if checkpoint is not None and self.workspace is not None:
                self.workspace.drop_checkpoint(checkpoint)
            raise ActionError(f"COMMIT_STATE failed: {exc}") from None
        if state.source_step_end is not None:
            self.traced_upto = max(self.traced_upto, state.source_step_end + 1)
        self.last_valid_checkpoint = checkpoint or self.last_valid_checkpoint
        if checkpoint is not None and self.worker is not None:
            self.worker_checkpoints[checkpoint] = self.worker.snapshot()
        self.draft, self.repair_attempts = None, 0
        self.trace.emit_known("state_committed", state=state)
        hints: list[Hint] = []
        if self.config.regime is Regime.SEGMENT_INDUCED and self.config.recent_states_in_hint:
            recent = [self.store.load(e.id) for e in self.store.index(last=self.config.recent_states_in_hint)]
            hint = state_hint(recent, for_state=state.id)
            hints = [hint] if hint else []
        return [], hints

    # -- REPAIR
    def _repair(self, args: RepairArgs) -> tuple[list[str], list[Hint]]:
        draft = self.draft
        assert draft is not None
        listing = self.workspace.list_variables() if self.workspace else []
        args = _without_code_objects(args, {v.name for v in listing if v.type in CODE_TYPES})
        plan = plan_repair(
            args,
            draft,
            attempts_so_far=self.repair_attempts,
            budget=self.config.repair_budget,
            light_attempts=self.config.light_attempts,
            workspace_names=[v.name for v in listing if v.type not in CODE_TYPES],
            is_committed_name=lambda name: self.store.current_version(name) is not None,
            evidence=self.activation_evidence,
            task_text=self.config.task_text,
            rollback=self.config.on_budget_exhausted == "rollback",
        )
        self.repair_attempts = plan.attempt
        removed: list[str] = []
        if plan.mode == "heavy" and self.workspace is not None:
            removed = self.workspace.delete_variables([v.split("@")[0] for v in plan.localized])
        hint = Hint(
            kind="repair",
            for_state=draft.id,
            error_variables=list(args.error_hint.error_variables),
            faulty_reasoning=args.error_hint.faulty_reasoning,
            mode=plan.mode,
            removed_variables=removed,
        )
        self.trace.emit(
            "repair",
            state_id=draft.id,
            attempt=plan.attempt,
            mode=plan.mode,
            evidence=args.analytical_evidence,
            removed=removed,
        )
        return [f"repair attempt {plan.attempt}/{self.config.repair_budget} ({plan.mode})"], [hint]

    # -- ABANDON_STATE
    def _abandon(self) -> list[str]:
        draft = self.draft
        assert draft is not None
        notes: list[str] = []
        exhausted = self.repair_attempts >= self.config.repair_budget
        if exhausted and self.config.on_budget_exhausted == "rollback":
            ckpt = self.last_valid_checkpoint
            if self.workspace is not None and ckpt is not None:
                self._rollback(draft.id, ckpt, notes)
            else:  # only outside `rollout`, which binds a start checkpoint before the task begins
                notes.append("no valid checkpoint to roll back to; draft abandoned")
        self.trace.emit("state_abandoned", state_id=draft.id, repair_attempts=self.repair_attempts)
        self.draft, self.repair_attempts = None, 0
        return notes

    def _rollback(self, state_id: str, ckpt: str, notes: list[str]) -> None:
        """Rewind the workspace and the bound worker to checkpoint `ckpt`, or refuse to run on.

        A checkpoint that went missing after the pre-run check is a broken binding, not a reason
        to abandon quietly: it raises BindingError, which ends the run with that message.
        """
        assert self.workspace is not None
        if not self.workspace.has_checkpoint(ckpt):
            raise BindingError(f"rollback of {state_id}: the workspace no longer holds checkpoint {ckpt}")
        token = self.worker_checkpoints.get(ckpt)
        if self.worker is not None and token is None:
            raise BindingError(f"rollback of {state_id}: no worker snapshot was taken with checkpoint {ckpt}")
        try:
            self.workspace.restore(ckpt)
        except RuntimeError as exc:
            # A refused restore (the sandbox rebuilt the kernel and says why): the draft is still
            # abandoned, nothing is rewound, and the run goes on degraded with the reason traced.
            notes.append(f"rollback to {ckpt} refused by the workspace ({exc}); nothing rewound")
            self.trace.emit("rollback", state_id=state_id, checkpoint=ckpt, worker=False, refused=str(exc))
            return
        notes.append(f"workspace rolled back to {ckpt}")
        if self.worker is not None:
            self.worker.restore(token)
            notes.append(f"worker context rewound to {ckpt}")
        self.trace.emit("rollback", state_id=state_id, checkpoint=ckpt, worker=self.worker is not None)


def _copy_draft(draft: Draft) -> Draft:
    """A copy the draft's in-place edits cannot reach: its lists are copied, their items are
    frozen records and are shared (a deep copy was most of the cost of a control action)."""
    return draft.model_copy(update={k: list(v) for k, v in draft.__dict__.items() if isinstance(v, list)})


# Workspace entries that are code, not analysis values: a REPAIR may not name them (the worker
# cannot "recompute" `pd`, and a heavy repair would delete the module from its session).
CODE_TYPES = frozenset({"module", "function", "builtin_function_or_method", "type", "method"})


def _without_code_objects(args: RepairArgs, code_objects: set[str]) -> RepairArgs:
    """`args` with error variables that name modules or functions dropped; an ActionError when
    nothing else is left."""
    hint = args.error_hint
    kept = [n for n in hint.error_variables if n.split("@")[0] not in code_objects]
    if kept == list(hint.error_variables):
        return args
    if not kept:
        raise ActionError(
            f"REPAIR must be localized: error_variables {hint.error_variables} name only modules or "
            "functions of the workspace, not analysis values; name the variables the faulty code produced"
        )
    return args.model_copy(update={"error_hint": hint.model_copy(update={"error_variables": kept})})


def saved_id(saved: dict[str, Any]) -> str | None:
    draft = saved.get("draft")
    return draft.id if isinstance(draft, Draft) else None


def _raw_text(message: Any) -> str:
    if isinstance(message, str):
        return message[:4000]
    return repr(message)[:4000]
