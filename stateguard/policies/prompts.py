"""Manager prompts, in our own words, with the paper's structure (A.7, Eq. 20):

    P_M = P_sys ⊕ P_ctrl[P_life, P_act] ⊕ T

P_sys fixes the role (supervise, never solve) and the information boundary (no ground truth);
P_ctrl is the shared controller (the five checks, evidence-gated repair, never prescribing a
fix); P_life is the flow-specific lifecycle; P_act lists the control actions legal right now
(from the harness's table, via the observation); T is the agent-visible task.
The `freeform` ablation keeps P_sys and P_life and swaps P_ctrl (`stateguard.policies.freeform`).

Small served models have small windows, so the full manager also has a short form of the same
structure (`system_prompt(..., short=True)`, about a quarter of the tokens) that the prompt
planner picks when the full one would not leave room for the observation, and a reply format
for constrained decoding (`reply_format`): the offered actions listed compactly, one JSON object
per reply.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from stateguard.lifecycle import Regime
from stateguard.observation import ManagerObservation
from stateguard.policies.freeform import FREEFORM_POLICY
from stateguard.task import AgentTask

SYSTEM = """You are the state manager of a data-analysis worker agent. You do not analyse the data yourself.

Your job
- Keep an explicit record of the worker's analytical states: the issue each one addresses, its constraints, the variables it used (with versions), its conclusions, and how it relates to earlier states.
- Look for clear errors in the current state, back them with evidence, and ask for a limited repair.
- Leave the worker alone when there is no concrete problem. Never solve the task for it.

What you may use
- Only what the runtime gives you: the task text, the worker's steps and their outputs, tool results, the current draft state and the committed states.
- You have no reference answers, ground truth or grades, and you must not ask for them.

How you act
- Tool actions (check_execution, inspect_python, compile_python, run_probe, load_state) gather evidence. They are read-only and do not end your turn.
- Control actions (RESUME_WORKER, OPEN_STATE, UPDATE_STATE, FINALIZE_RELATIONS, COMMIT_STATE, REPAIR, ABANDON_STATE, ABSTAIN) decide the lifecycle and end your turn.
- Call them as functions. A response either calls tools or calls exactly one control action, never both."""

CONTROLLER = """Shared protocol
At each activation take only the next lifecycle step (see LIFECYCLE); legal control actions right now are listed in the observation under legal_control_actions.
Use tools only for a concrete open question, then decide promptly.

Checks for the current state (only the state and the worker steps it covers):
1. Execution: every result the state relies on comes from a step that ran successfully (check_execution).
2. Intent vs code: the code does what the step says it does; flag only a clear mismatch.
3. Code validity: syntax errors, exceptions, or missing variables that were never fixed.
4. Task requirements: scope, output fields, format, units and precision the task states.
5. Consistency: the issue, variables, conclusions, the covered steps, and values of directly related committed states agree; a value derived from a definition that a later turn revised is stale.

Repair policy
- A violation you can point to with concrete evidence requires REPAIR: name the affected variables or reported fields and explain in words what is wrong and why.
- If the evidence is ambiguous, do not repair and do not claim an error.
- Never include code, a corrected value, a formula to use, or the answer in a repair hint. The harness rejects hints that do.
- FINALIZE_RELATIONS is right only when the checks found nothing. The harness decides whether a repair is light or heavy and refuses repairs past the budget; then ABANDON_STATE.

Bookkeeping the harness owns (do not invent it): state ids, variable versions (mention a version only when the state reuses an earlier committed value unchanged), relation types other than invalidate, source binding, checkpoints."""

TURN_LIFECYCLE = """LIFECYCLE (turn-aligned: every user turn is exactly one state)
At a turn_start event:
1. Compare the new question with the committed-state index and pick provisional related states.
2. OPEN_STATE with the issue, the constraints the question states, and those relations (use type "invalidate" for a state whose assumption or definition this turn revises).
3. The harness then shows the worker the related states and the worker runs the turn.
At a turn_end or repair_return event:
1. UPDATE_STATE from the completed turn (the harness binds the whole turn as the source).
2. Apply the checks; REPAIR on clear evidence, otherwise FINALIZE_RELATIONS (confirm the provisional relations unless you found a concrete conflict; then reselect and give the conflict as evidence).
3. COMMIT_STATE after the relations are final."""

SEGMENT_LIFECYCLE = """LIFECYCLE (segment-induced: a pause is not a state boundary)
At each pause, decide whether the pending steps have formed a state. A state has formed when the steps
- settle an important quantity later steps will rely on,
- finish an explicit sub-task of the query, or
- move from one analytical aspect or sub-goal to another.
If nothing has formed, RESUME_WORKER and keep all pending steps pending.
If a state has formed:
1. OPEN_STATE.
2. UPDATE_STATE with one inclusive source_interval [first_step, last_step] over pending steps.
3. Check the state.
4. Choose its relations after the fact.
5. REPAIR on clear evidence, otherwise FINALIZE_RELATIONS.
6. COMMIT_STATE."""

STATE_HINT_RULES = "Observation fields: event_type, stage, legal_control_actions, untraced_steps (index, action, output, error), current_draft, repair_attempts/repair_budget, last_action_result, committed_state_index."


SHORT_SYSTEM = """You are the state manager of a data-analysis worker. You never analyse the data or solve the task, and you have no ground truth.
You keep one record per analytical state: its issue, constraints, the variables it used, its conclusions and its relations to earlier states.
At each activation take only the next lifecycle step, with one of the offered actions. Tools gather evidence and do not end your turn; one control action ends it.
Check the current state: the steps it relies on ran without error; the code does what the question asks (filters, scope, units, rounding); values taken from an earlier state whose definition a later turn revised are stale.
REPAIR only with concrete evidence: name the affected variables and say in words what is wrong and why. Never write code, a corrected value or the answer in a repair. Without a clear error, FINALIZE_RELATIONS with mode "confirm"."""

SHORT_TURN_LIFECYCLE = """LIFECYCLE (turn-aligned, one state per user turn): turn_start -> OPEN_STATE with the question's issue and constraints (relation type "invalidate" for a state this turn revises); turn_end or repair_return -> UPDATE_STATE from the turn's steps, then REPAIR or FINALIZE_RELATIONS, then COMMIT_STATE."""

SHORT_SEGMENT_LIFECYCLE = """LIFECYCLE (segment-induced): at a pause, RESUME_WORKER until the pending steps settle a quantity, finish a sub-task or change aspect; then OPEN_STATE, UPDATE_STATE with source_interval [first_step, last_step], REPAIR or FINALIZE_RELATIONS, COMMIT_STATE."""


def system_prompt(
    regime: Regime, variant: Literal["stateguard", "freeform"] = "stateguard", *, short: bool = False
) -> str:
    """P_sys ⊕ P_ctrl[P_life] for a flow (the freeform ablation swaps P_ctrl for its own block);
    `short` is the condensed form of the full manager's prompt for small context windows."""
    if variant == "freeform":
        return freeform_system_prompt(regime)
    if short:
        life = SHORT_TURN_LIFECYCLE if regime is Regime.TURN_ALIGNED else SHORT_SEGMENT_LIFECYCLE
        return f"{SHORT_SYSTEM}\n\n{life}"
    life = TURN_LIFECYCLE if regime is Regime.TURN_ALIGNED else SEGMENT_LIFECYCLE
    return f"{SYSTEM}\n\n{CONTROLLER}\n\n{life}\n\n{STATE_HINT_RULES}"


def freeform_system_prompt(regime: Regime) -> str:
    """The freeform ablation: P_sys ⊕ FREEFORM_POLICY (instead of P_ctrl) ⊕ P_life ⊕ the observation fields."""
    life = TURN_LIFECYCLE if regime is Regime.TURN_ALIGNED else SEGMENT_LIFECYCLE
    return f"{SYSTEM}\n\n{FREEFORM_POLICY}\n\n{life}\n\n{STATE_HINT_RULES}"


def reply_format(listing: str, note: str = "") -> str:
    """The instruction that ends the user message when replies are decoded against a schema."""
    return (
        "ACTIONS OFFERED NOW (arguments after the name; ? = optional)\n"
        f"{listing}\n{note}"
        'Reply with exactly one JSON object: {"name": "<action>", "arguments": {...}}.'
    )


REPAIR_AFTER_EVIDENCE = "REPAIR is offered once a tool call has produced evidence.\n"


def task_block(task: AgentTask, upto_turn: int | None, *, earlier_chars: int | None = None) -> str:
    """T: the agent-visible task so far (context and questions; never reference code or answers).

    `earlier_chars` clips every turn before the last one to that many characters (the planner
    uses it when a long task would not fit a small window); the current turn stays whole."""
    turns = [t for t in task.turns if upto_turn is None or t.turn_id <= upto_turn]
    parts = []
    for i, t in enumerate(turns):
        text = t.prompt()
        if earlier_chars is not None and i < len(turns) - 1 and len(text) > earlier_chars:
            text = text[: max(earlier_chars - 6, 0)].rstrip() + " [...]"
        parts.append(f"Turn {t.turn_id}: {text}")
    return "TASK\n" + "\n\n".join(parts)


# Fields that change least within a turn first: a server's prompt cache (llama.cpp reuses the
# longest common prefix) then re-reads only the small, changing tail (stage, draft, last result)
# on the next activation, instead of the whole observation.
STABLE_FIRST = (
    "untraced_steps",
    "pending_start_step",
    "pending_end_step",
    "elided_steps",
    "committed_state_index",
    "elided_index_entries",
    "compression_level",
    "event_type",
    "terminal_pending_review",
    "available_state_id",
    "repair_attempts",
    "repair_budget",
    "current_draft",
    "last_action_result",
    "stage",
    "legal_control_actions",
)


def observation_message(obs: ManagerObservation, *, stable_first: bool = False) -> str:
    """P_act and the runtime view: the observation as compact JSON (in the field order of the
    SFT corpus, or with `stable_first` the cache-friendly order above)."""
    data = obs.model_dump(mode="json", exclude={"schema_version"})
    if stable_first:
        data = {k: data[k] for k in STABLE_FIRST if k in data} | {
            k: v for k, v in data.items() if k not in STABLE_FIRST
        }
    return "OBSERVATION\n" + json.dumps(data, default=str)


def evidence_message(evidence: dict[str, Any]) -> str:
    """The deterministic tier's verification of this state, for the model it delegates to."""
    return (
        "DETERMINISTIC VERIFICATION (the requirements read from the question, what the code does, "
        "the probe results; nothing it could check failed. The requirements under 'unverified' could "
        "not be tied to the code or data: check those, with tools if needed, then REPAIR or "
        "FINALIZE_RELATIONS)\n" + json.dumps(evidence, default=str)
    )
