"""The `rules` manager: a deterministic validity checker speaking the manager action protocol.

It drives the lifecycle through the same harness an LLM manager uses: OPEN a state per turn
(turn-aligned) or once a turn's work has formed (segment-induced), fill variables from the
workspace with committed versions, gather evidence with `check_execution`, run the checks in
`policies.checks`, then REPAIR on concrete evidence (localized variables + a worded reason) or
FINALIZE_RELATIONS and COMMIT_STATE. Relations come from dataflow: states whose variable
versions the turn consumed are upstream; a turn that rebinds a variable another state defined
(without reading it) invalidates that state. It never supplies code or answers, and it records
which check fired in the REPAIR evidence.

With a `SemanticVerifier` (`stateguard.verification`; `semantic.enabled` in eval) it also checks what the
question asks against what the code did: requirements read from the task text become the state's
executable constraints (at OPEN in the segment flow, at UPDATE in the turn-aligned flow, once the
turn's code is known) and probes, and the evidence is gathered with inspect_python, compile_python,
run_probe and load_state tool calls. What it still cannot see (a requirement it could not tie to code or data)
is the LLM manager's job in the hierarchical policy.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Generator
from typing import Any

from stateguard.actions import (
    AbandonStateArgs,
    AbstainArgs,
    Action,
    CheckExecutionArgs,
    CommitStateArgs,
    ErrorHintArg,
    FinalizeRelationsArgs,
    OpenStateArgs,
    RepairArgs,
    ResumeWorkerArgs,
    UpdateStateArgs,
)
from stateguard.answers import field_name, last_json, numbers, required_decimals
from stateguard.dataflow import cell_dataflow
from stateguard.lifecycle import Regime, Stage
from stateguard.observation import EventType, ManagerObservation, WorkerStep
from stateguard.policies import checks
from stateguard.policies.base import Activation, ManagerContext, Proposal, raw_actions
from stateguard.policies.staleness import AcceptedVersions, StaleDecision, decide
from stateguard.state import ConstraintResult
from stateguard.verification.verifier import SemanticVerifier
from stateguard.workspace import ValueSummary


class RulesManager:
    name = "rules"

    def __init__(self, semantic: SemanticVerifier | None = None) -> None:
        self._retry_from: int | None = None  # first step of the worker's retry after our last REPAIR
        self._named: dict[str, str] = {}  # content hashes of the variables our last REPAIR named
        self._accepted = AcceptedVersions()  # values built from earlier versions on purpose
        self.semantic = semantic

    # ------------------------------------------------------------------ activation
    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        stage = Stage(obs.stage)
        if stage is Stage.IDLE:
            yield from self._idle(obs, ctx)
        elif stage is Stage.OPEN or stage is Stage.REPAIRING:
            yield from self._update(obs, ctx, stage)
        elif stage is Stage.UPDATED:
            yield from self._verify(obs, ctx)
        else:
            yield Action.of(CommitStateArgs())

    def _idle(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        self._retry_from = None
        if ctx.regime is Regime.TURN_ALIGNED:
            if obs.event_type is EventType.TURN_START and ctx.turn is not None:
                latest = ctx.store.latest_id()
                constraints = self._constraints(ctx)
                if self.semantic is not None:  # the code is not known yet: requirements in words
                    constraints += yield from raw_actions(self.semantic.open_constraints(ctx, ctx.turn, []))
                yield Action.of(
                    OpenStateArgs.model_validate(
                        {
                            "issue": ctx.turn.question.strip()[:300],
                            "constraints": constraints,
                            "relations": [{"related_state_id": latest}] if latest else [],
                        }
                    )
                )
            else:
                yield Action.of(AbstainArgs(reason="no state is open for this turn"))
            return
        end = self._formed_end(obs, ctx)
        if end is None:
            yield Action.of(AbstainArgs() if obs.terminal_pending_review else ResumeWorkerArgs())
            return
        turn_id = ctx.steps[end].turn
        turn = ctx.task.turn(turn_id) if turn_id is not None else ctx.turn
        constraints = self._constraints(ctx, turn)
        if self.semantic is not None:  # the state's work has run: requirements become executable checks
            start = obs.pending_start_step or 0
            formed = [
                ctx.steps[i] for i in range(start, end + 1) if i in ctx.steps and ctx.steps[i].turn == turn_id
            ]
            constraints += yield from raw_actions(self.semantic.open_constraints(ctx, turn, formed))
        yield Action.of(
            OpenStateArgs.model_validate(
                {
                    "issue": (turn.question if turn else "analysis segment").strip()[:300],
                    "constraints": constraints,
                }
            )
        )

    def _update(self, obs: ManagerObservation, ctx: ManagerContext, stage: Stage) -> Activation:
        steps = self._span(obs, ctx)
        retried = any(
            s.meta.get("turn_end")
            for s in steps
            if self._retry_from is not None and s.index >= self._retry_from
        )
        if (
            stage is Stage.REPAIRING
            and ctx.regime is Regime.SEGMENT_INDUCED
            and not retried
            and obs.event_type is EventType.PAUSE
        ):
            yield Action.of(ResumeWorkerArgs())  # segment flow: the retry has not finished yet
            return
        constraints: list[dict[str, Any]] = []
        if self.semantic is not None and (ctx.regime is Regime.TURN_ALIGNED or self._retry_from is not None):
            # The work under review is known now (the turn-aligned state opened before it; a retry
            # rewrote the segment's): the requirement checks get the code of that work. First, so
            # that the activation's tool budget goes to this evidence rather than to check_execution.
            retry, turn = self._under_review(obs, ctx)
            constraints = yield from raw_actions(self.semantic.update_constraints(ctx, turn, retry))
        for step in checks.execution_evidence(steps):
            result = yield Action.of(CheckExecutionArgs(step_id=step.index))
            if not getattr(result, "accepted", True):
                break  # the activation's action limit is reached: the control action must follow
        written, consumed = self._variables(steps, ctx)
        args: dict[str, Any] = {
            "used_variables": written
            + [{"name": n, "version": v, "value": self._value(ctx, n)} for n, v in consumed.items()],
            "conclusions": self._conclusions(steps),
            "constraints": constraints,
        }
        if ctx.regime is Regime.SEGMENT_INDUCED:
            args["source_interval"] = [steps[0].index, steps[-1].index] if steps else None
        yield Action.of(UpdateStateArgs.model_validate(args))

    def _under_review(self, obs: ManagerObservation, ctx: ManagerContext) -> tuple[list[WorkerStep], Any]:
        """The steps under verification (the retry, after a repair) and their turn."""
        steps = self._span(obs, ctx)
        retry = [s for s in steps if self._retry_from is not None and s.index >= self._retry_from] or steps
        turn_id = retry[-1].turn if retry else None
        return retry, ctx.task.turn(turn_id) if turn_id is not None else ctx.turn

    def findings(self, obs: ManagerObservation, ctx: ManagerContext) -> list[checks.Finding]:
        """Run every deterministic check on the state under verification (the retry, after a repair)."""
        steps = self._span(obs, ctx)
        retry = [s for s in steps if self._retry_from is not None and s.index >= self._retry_from] or steps
        _, consumed = self._variables(retry, ctx)
        # The workspace may have moved past the span under review (a segment reviewed after later
        # steps ran): values rewritten since then say nothing about this span's answer.
        end = max((s.index for s in steps), default=-1)
        later = {w for i, s in ctx.steps.items() if i > end for w in s.meta.get("writes", [])}
        scalars = self._scalars(ctx, skip=later)
        answer = self._answer(retry)
        turn_id = retry[-1].turn if retry else None
        turn = ctx.task.turn(turn_id) if turn_id is not None else ctx.turn
        printed = self._printed(retry, ctx, skip=later)
        draft = obs.current_draft or {}
        return (
            checks.execution(retry)
            + checks.staleness(
                [(d.step, d.name, d.inputs) for d in self._stale_reads(retry, ctx, turn, skip=later)]
            )
            + checks.constraints(
                ConstraintResult.model_validate(r)
                for r in draft.get("constraint_results", [])
                if not (self.semantic and self.semantic.owns(r.get("text", "")))
            )  # its own: _verify
            + checks.precision(answer, self._required(ctx, turn), printed)
            + checks.grounding(answer, printed)
            + checks.related(consumed, ctx.store, scalars)
            + checks.parameters(
                turn.question if turn else "",
                retry,
                scalars,
                [s for i, s in sorted(ctx.steps.items()) if not steps or i < steps[0].index],
            )
        )

    def mark_repair(
        self, obs: ManagerObservation, ctx: ManagerContext | None = None, names: list[str] | None = None
    ) -> None:
        """Remember where the worker's retry starts (checks then look at the retry only), and the
        content of the variables the repair names (a retry that changes none of them is no evidence)."""
        self._retry_from = (obs.pending_end_step or 0) + 1
        self._named = self._fingerprint(ctx, names or []) if ctx is not None else {}

    def _verify(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        findings = yield from self.gather(obs, ctx)
        yield from self.decide(obs, ctx, findings)

    def gather(
        self, obs: ManagerObservation, ctx: ManagerContext
    ) -> Generator[Proposal, Any, list[checks.Finding]]:
        """Every finding on the state under verification: the deterministic checks, then the
        semantic requirements checked with tool evidence (inspect_python, run_probe, load_state)."""
        findings = self.findings(obs, ctx)
        if self.semantic is not None:
            retry, turn = self._under_review(obs, ctx)
            earlier = self.semantic.last
            findings += yield from raw_actions(self.semantic.verify(obs, ctx, turn, retry))
            if ctx.trace is not None and self.semantic.last is not earlier:
                # what the verifier saw broken and let go, so a run shows which gate held
                for note in self.semantic.last.gated:
                    ctx.trace.emit("manager_note", policy=self.name, note=f"[semantic] {note}"[:900])
        return findings

    def remember(self, obs: ManagerObservation, ctx: ManagerContext) -> None:
        """The state will be committed as it is: its turn's definitions become the current ones."""
        if self.semantic is not None:
            self.semantic.remember(self._under_review(obs, ctx)[1], obs.available_state_id)

    def decide(
        self, obs: ManagerObservation, ctx: ManagerContext, findings: list[checks.Finding]
    ) -> Activation:
        """REPAIR on findings (heavy or ABANDON only with confirmed evidence), else commit."""
        if not findings:
            self.remember(obs, ctx)
        if findings and obs.repair_attempts == 0:
            yield from self._repair(obs, ctx, findings)
            return
        if findings and self._escalate(obs, ctx, findings):
            if obs.repair_attempts < obs.repair_budget:
                yield from self._repair(
                    obs, ctx, findings
                )  # the harness makes it heavy: it deletes the named variables
            else:
                yield Action.of(
                    AbandonStateArgs(
                        reason="repair budget exhausted with confirmed evidence: " + findings[0].check
                    )
                )
            return
        # No finding, or one the worker's retry left as it was: no ground to destroy work; commit.
        yield from self.settle(obs, ctx)

    def settle(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        """FINALIZE; when an executable check of the draft still fails although the manager decided
        not to act on it (the worker's retry left the values as they were, or the repair could not
        be worded), the check stays as an unverified constraint (its text without code, noted in
        the trace) so the state can commit -- a failed check is no ground to abandon work."""
        result = yield self.finalize(obs, ctx)
        if result.accepted or "executable constraint" not in (getattr(result, "feedback", "") or ""):
            return
        draft = obs.current_draft or {}
        failed = [r["text"] for r in draft.get("constraint_results", []) if r.get("passed") is False]
        if not failed:
            return
        if ctx.trace is not None:
            ctx.trace.emit(
                "manager_note",
                policy=self.name,
                note="kept as unverified (the retry left the values as they were): "
                + "; ".join(failed)[:700],
            )
        args: dict[str, Any] = {
            "used_variables": [
                {
                    "name": v["name"],
                    "value": v.get("value"),
                    "version": None if v.get("version") == draft.get("id") else v.get("version"),
                }
                for v in draft.get("used_variables", [])
            ],
            "conclusions": [
                c["text"] if isinstance(c, dict) else str(c) for c in draft.get("conclusions", [])
            ],
            "constraints": [{"text": text} for text in failed],
        }
        if ctx.regime is Regime.SEGMENT_INDUCED and draft.get("source_step_start") is not None:
            args["source_interval"] = [draft["source_step_start"], draft["source_step_end"]]
        yield Action.of(UpdateStateArgs.model_validate(args))  # the next activation verifies and commits

    def _repair(
        self, obs: ManagerObservation, ctx: ManagerContext, findings: list[checks.Finding]
    ) -> Activation:
        first = findings[0]
        evidence = "; ".join(f"[{f.check}] {f.evidence}" for f in findings)
        names = sorted({n for f in findings if f.check == first.check for n in f.variables})
        made = self._draft_made(obs)
        reason = hint_reason(findings)
        for attempt in range(2):
            self.mark_repair(obs, ctx, names)
            result = yield Action.of(
                RepairArgs(
                    analytical_evidence=evidence,
                    error_hint=ErrorHintArg(error_variables=names, faulty_reasoning=reason),
                )
            )
            if result.accepted:
                return
            if attempt or "must be localized" not in (getattr(result, "feedback", "") or "") or not made:
                break
            # The finding names what the harness cannot resolve (a SQL table that is no workspace
            # variable): name what the draft's own steps made instead (the reported dict).
            names = made
        if reason != first.reason:  # a later reason was refused (a value slipped in): the first alone
            result = yield Action.of(
                RepairArgs(
                    analytical_evidence=evidence,
                    error_hint=ErrorHintArg(error_variables=names, faulty_reasoning=first.reason),
                )
            )
            if result.accepted:
                return
        # The hint guard refused our wording (e.g. a value slipped in): fall back to a generic reason.
        result = yield Action.of(
            RepairArgs(
                analytical_evidence=f"[{first.check}] {first.evidence}",
                error_hint=ErrorHintArg(
                    error_variables=names, faulty_reasoning=f"the {first.check} check failed for these values"
                ),
            )
        )
        if not result.accepted:  # nothing the worker could act on: leave the work as it is
            yield from self.settle(obs, ctx)

    @staticmethod
    def _draft_made(obs: ManagerObservation) -> list[str]:
        """Variables the draft's own steps made (version = the draft), scratch names left out."""
        draft = obs.current_draft or {}
        return sorted(
            {
                v["name"]
                for v in draft.get("used_variables", [])
                if v.get("version") == draft.get("id") and not str(v.get("name", "_")).startswith("_")
            }
        )

    def _escalate(self, obs: ManagerObservation, ctx: ManagerContext, findings: list[checks.Finding]) -> bool:
        """A second repair is heavy (it deletes variables) and an exhausted budget rolls back, so
        both need confirmed evidence: a finding of a CONFIRMED check that persists on fresh evidence
        -- the worker did retry (it ran steps) and changed what the repair named, and the check
        still fires. A retry that left the named values identical, or a judgement-only finding
        (precision, grounding, related, parameters), is not grounds to destroy work. A semantic
        finding is a probe result (rows that break a stated condition), so it counts as confirmed."""
        if not all(f.check in checks.CONFIRMED | {"semantic"} for f in findings):
            return False
        retried = any(i >= (self._retry_from or 0) for i in ctx.steps)
        if not retried:
            return False
        names = sorted(self._named)
        return bool(names) and self._fingerprint(ctx, names) != self._named

    def _fingerprint(self, ctx: ManagerContext | None, names: list[str]) -> dict[str, str]:
        if ctx is None or ctx.workspace is None:
            return {}
        hashes = {v.name: v.content_hash for v in ctx.workspace.list_variables()}
        return {n: hashes.get(n, "<absent>") for n in names}

    def _required(self, ctx: ManagerContext, turn: Any) -> int | None:
        """Decimal places the turn asks for: its own question, then its own context, then the
        task-wide context of the first turn (a turn's "3 decimal places" beats the task's "4")."""
        if turn is None:
            return required_decimals(ctx.task.turns[0].context) if ctx.task.turns else None
        for text in (turn.question, turn.context):
            places = required_decimals(text or "")
            if places is not None:
                return places
        return required_decimals(ctx.task.turns[0].context) if ctx.task.turns else None

    def _printed(
        self, steps: list[WorkerStep], ctx: ManagerContext, skip: set[str]
    ) -> tuple[str, Any] | None:
        """(name, value) of the workspace variable the reported answer was printed from (`result`
        in `print(json_dumps_rounded(result, 2))`), when it is a small JSON-like value. When that
        variable was rewritten since (a segment reviewed after later turns ran), an earlier JSON
        the same steps printed stands in for it: the values as the turn had them before reporting."""
        answering = next(
            (s for s in reversed(steps) if s.success and s.output and last_json(s.output) is not None), None
        )
        if answering is None:
            return None
        names = self._print_args(answering.action)
        for name in names:
            if name in skip:
                continue
            value = self._value(ctx, name)
            if isinstance(value, dict | list) and not (isinstance(value, dict) and "hash" in value):
                return name, value
        earlier = [last_json(s.output) for s in steps if s.index < answering.index and s.success and s.output]
        earlier = [e for e in earlier if isinstance(e, dict)]
        return (names[0] if names else "result", earlier[-1]) if earlier else None

    @staticmethod
    def _print_args(code: str) -> list[str]:
        """Names inside the arguments of the last print / print_result call of a cell."""
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return []
        for node in reversed([n for n in ast.walk(tree) if isinstance(n, ast.Call)]):
            func = node.func.id if isinstance(node.func, ast.Name) else None
            if func in ("print", "print_result"):
                return [
                    n.id
                    for arg in node.args
                    for n in ast.walk(arg)
                    if isinstance(n, ast.Name) and n.id not in ("json_dumps_rounded", "json", "print_result")
                ]
        return []

    def _stale_reads(
        self, steps: list[WorkerStep], ctx: ManagerContext, turn: Any, skip: set[str]
    ) -> list[StaleDecision]:
        """The confirmed stale reads of the span (`policies.staleness.decide`): every recorded
        stale read gets a decision, written to the trace, and the findings are returned."""
        decisions = decide(
            steps,
            ctx.steps,
            ctx.workspace,
            turn.question if turn is not None else "",
            skip=skip,
            accepted=self._accepted,
        )
        if ctx.trace is not None:
            for d in decisions:
                ctx.trace.emit("stale_decision", policy=self.name, **d.model_dump())
        return [d for d in decisions if d.decision == "finding"]

    def finalize(self, obs: ManagerObservation, ctx: ManagerContext) -> Action:
        """FINALIZE_RELATIONS with the relations the dataflow shows (confirm when they match)."""
        steps = self._span(obs, ctx)
        _, consumed = self._variables(steps, ctx)
        relations = self._relations(steps, consumed, ctx)
        draft = obs.current_draft or {}
        provisional = sorted(r.get("related_state_id") or "" for r in draft.get("provisional_relations", []))
        inherited = sorted(r["related_state_id"] for r in relations if r.get("type") != "invalidate")
        if inherited == [p for p in provisional if p] and not any(
            r.get("type") == "invalidate" for r in relations
        ):
            return Action.of(FinalizeRelationsArgs(mode="confirm"))
        evidence = ", ".join(f"{r.get('type') or 'uses'} {r['related_state_id']}" for r in relations)
        return Action.of(
            FinalizeRelationsArgs.model_validate(
                {
                    "mode": "reselect",
                    "relations": relations,
                    "conflict_evidence": f"dataflow of the state's steps: {evidence or 'no upstream reads'}",
                }
            )
        )

    # ------------------------------------------------------------------ evidence helpers
    def _span(self, obs: ManagerObservation, ctx: ManagerContext) -> list[WorkerStep]:
        """Worker steps of the state being formed (the current turn, or the formed segment)."""
        if obs.pending_start_step is None or obs.pending_end_step is None:
            return []
        pending = [
            ctx.steps[i] for i in sorted(ctx.steps) if obs.pending_start_step <= i <= obs.pending_end_step
        ]
        if ctx.regime is Regime.TURN_ALIGNED and ctx.turn is not None:
            return [s for s in pending if s.turn == ctx.turn.turn_id]
        draft = obs.current_draft or {}
        if draft.get("source_step_start") is not None and self._retry_from is None:
            return [s for s in pending if draft["source_step_start"] <= s.index <= draft["source_step_end"]]
        end = self._formed_end(obs, ctx)
        return [s for s in pending if end is None or s.index <= end] or pending

    def _formed_end(self, obs: ManagerObservation, ctx: ManagerContext) -> int | None:
        """Segment flow: a state has formed once a turn's answering block is among the pending steps."""
        if obs.pending_start_step is None or obs.pending_end_step is None:
            return None
        ends = [
            i
            for i in range(obs.pending_start_step, obs.pending_end_step + 1)
            if i in ctx.steps and ctx.steps[i].meta.get("turn_end")
        ]
        if self._retry_from is not None:
            ends = [i for i in ends if i >= self._retry_from] or ends
        if not ends and self._retry_from is None:
            # a worker stuck on failing code forms a state too: waiting for its turn to end would
            # leave the loop to the step budget (issue 34)
            pending = [
                ctx.steps[i]
                for i in range(obs.pending_start_step, obs.pending_end_step + 1)
                if i in ctx.steps
            ]
            stuck = checks.stuck(pending)
            return stuck[-1].index if stuck else None
        return ends[-1] if self._retry_from is not None and ends else (ends[0] if ends else None)

    def _constraints(self, ctx: ManagerContext, turn: Any = None) -> list[dict[str, Any]]:
        """Requirements stated in the task text. Precision is checked on the printed answer by the
        precision check (reference code often rounds only when printing), so it carries no code."""
        places = self._required(ctx, turn or ctx.turn)
        return (
            []
            if places is None
            else [{"text": f"decimal results are reported rounded to {places} decimal places"}]
        )

    def _variables(
        self, steps: list[WorkerStep], ctx: ManagerContext
    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """(variables written in the span, {name: committed version} consumed before being written)."""
        written: dict[str, None] = {}
        consumed: dict[str, str] = {}
        for step in steps:
            if not (step.success and step.error is None):
                continue
            for name in step.meta.get("reads", []):
                if name not in written and name not in consumed:
                    current = ctx.store.current_version(name)
                    if current:
                        consumed[name] = current.split("@")[1]
            for name in step.meta.get("writes", []):
                written[name] = None
        summaries = {v.name: v for v in ctx.workspace.list_variables()} if ctx.workspace else {}
        out = []
        for name in written:
            summary = summaries.get(name)
            if summary is None or summary.type in (
                "module",
                "function",
                "type",
                "builtin_function_or_method",
            ):
                continue
            out.append({"name": name, "value": self._value(ctx, name, summary)})
        return out, {n: v for n, v in consumed.items() if n not in written}

    def _value(self, ctx: ManagerContext, name: str, summary: Any = None) -> Any:
        if ctx.workspace is None:
            return None
        try:
            value = ctx.workspace.get_value(name)
        except Exception:  # deleted by a heavy repair, or not representable
            return None
        if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 200):
            return value
        if isinstance(value, dict | list) and len(value) <= 50 and "hash" not in value:
            try:
                json.dumps(value)
                return value  # small JSON-like values (e.g. the reported result dict) are kept whole
            except (TypeError, ValueError):
                pass
        if ValueSummary.of(value) is not None:
            return value  # the sandbox already returns a summary for non-JSON objects
        if summary is None:
            summary = next((v for v in ctx.workspace.list_variables() if v.name == name), None)
        return None if summary is None else summary.value_summary().as_value()

    def _scalars(
        self, ctx: ManagerContext, skip: set[str] | frozenset[str] = frozenset()
    ) -> dict[str, float]:
        """Numeric workspace values by name: scalar variables, plus the numeric fields of small
        dict/list variables (a `result` dict holds the unrounded values a report is printed from);
        variables named in `skip` are left out."""
        out: dict[str, float] = {}
        ambiguous: set[str] = set()  # a field name with different values in different places
        if ctx.workspace is None:
            return out
        for summary in ctx.workspace.list_variables():
            if summary.name in skip or summary.type not in (
                "int",
                "float",
                "float64",
                "int64",
                "float32",
                "dict",
                "list",
            ):
                continue
            try:
                value = ctx.workspace.get_value(summary.name)
            except Exception:
                continue
            if isinstance(value, dict | list):
                leaves = list(numbers(value))
                if len(leaves) <= 200:
                    for path, number in leaves:
                        name = field_name(path)
                        if name in out and out[name] != number:
                            ambiguous.add(name)
                        out.setdefault(name, number)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                out[summary.name] = float(value)
        return {k: v for k, v in out.items() if k not in ambiguous}

    def _answer(self, steps: list[WorkerStep]) -> Any:
        for step in reversed(steps):
            if step.success and step.output:
                parsed = last_json(step.output)
                if parsed is not None:
                    return parsed
        return None

    def _conclusions(self, steps: list[WorkerStep]) -> list[str]:
        answer = self._answer(steps)
        if isinstance(answer, dict):
            keys = [k for k in answer if k != "answer_type"][:8]
            return [f"reported {', '.join(keys)}"] if keys else []
        return ["no structured answer was reported"] if steps else []

    def _relations(
        self, steps: list[WorkerStep], consumed: dict[str, str], ctx: ManagerContext
    ) -> list[dict[str, Any]]:
        """Upstream = states whose variable versions were consumed. Invalidate = states whose
        *definition* this span replaced: a variable rebound from scratch (not refined in place, not
        read by the rebinding) whose committed version other states had built on. Rebinding a
        mere output (e.g. a `result` dict nobody read) is not a revision."""
        invalidated: list[str] = []
        for step in steps:
            if not (step.success and step.error is None):
                continue
            flow = cell_dataflow(step.action)
            for name in sorted(set(flow.writes) - set(flow.inplace) - set(flow.reads)):
                lineage = ctx.store.lineage(name)
                if lineage.versions and lineage.versions[-1].read_by:
                    owner = lineage.versions[-1].version.split("@")[1]
                    if owner not in invalidated:
                        invalidated.append(owner)
        inherited = [v for v in dict.fromkeys(consumed.values()) if v not in invalidated]
        return [{"related_state_id": s} for s in inherited] + [
            {"related_state_id": s, "type": "invalidate"} for s in invalidated
        ]


def hint_reason(findings: list[checks.Finding]) -> str:
    """The repair hint's reason: every distinct reason of the first finding's check, in order. A
    hint that gave only the first would leave the worker without the one it can act on when the
    check found two things (a misread comparison beside a rule read under its old definition)."""
    check = findings[0].check
    return "; ".join(dict.fromkeys(f.reason for f in findings if f.check == check))
