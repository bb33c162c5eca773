"""Trace events as typed records: one model per `kind`, joined in a union keyed on that literal.

Every line of a `trace.jsonl` / `llm_calls.jsonl` is `{schema_version, seq, kind, ts, data}`; the
`data` payload's fields depend on `kind` and are declared here, so a writer that renames a field
fails when it emits (extra fields are refused, required ones must be present) and a reader gets
attributes that mypy checks instead of `data.get("name", default)`, which would silently turn a
renamed field into its default. Narrow an event with `isinstance(e, WorkerStepEvent)` (or
compare `e.kind`, which mypy narrows on).

    events = read_trace(RolloutFolder(run).trace)
    steps = [e.data for e in events if isinstance(e, WorkerStepEvent)]   # WorkerStepData
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from stateguard.artifacts.hints import Hint
from stateguard.artifacts.records import Record
from stateguard.artifacts.state import AnalyticalState, ConstraintResult, Relation

__all__ = [
    "EVENTS",
    "ActionEvent",
    "AdviceEvent",
    "AnswersEvent",
    "BindingCheckedEvent",
    "BindingFailedEvent",
    "ConstraintChecksEvent",
    "DegradedEvent",
    "HintDeliveredEvent",
    "LlmCallEvent",
    "ManagerFallbackEvent",
    "ManagerNoteEvent",
    "ManagerOutputRefusedEvent",
    "ManagerSummaryEvent",
    "RelationsFinalizedEvent",
    "RepairEvent",
    "ReviewEvent",
    "RollbackEvent",
    "RunEndEvent",
    "RunStartEvent",
    "StateAbandonedEvent",
    "StateCommittedEvent",
    "StateOpenedEvent",
    "StateUpdatedEvent",
    "StaleDecisionEvent",
    "StaleDecisionKind",
    "StepMeta",
    "SwEvent",
    "ToolEvent",
    "ToolResultData",
    "TraceEvent",
    "TurnStartEvent",
    "WorkerStepData",
    "WorkerStepEvent",
    "WorkerDegradedEvent",
    "WorkspaceDegradedEvent",
    "parse_event",
    "state_id_of",
]


class _Data(BaseModel):
    """A payload: unknown fields are refused, so a renamed field cannot pass unnoticed."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class _Event(Record):
    seq: int = Field(ge=0, description="Position in the log, from 0.")
    ts: float | None = Field(default=None, description="Wall-clock seconds; None with a deterministic clock.")

    @property
    def payload(self) -> dict[str, Any]:
        """The payload as written (plain JSON, only the fields the writer set), for tests and
        display. Library code reads the typed `data` (tests/test_artifact_names.py refuses
        `.payload[...]` there)."""
        data: BaseModel = getattr(self, "data")  # noqa: B009 - every concrete event declares `data`
        return data.model_dump(mode="json", exclude_unset=True)


# ---------------------------------------------------------------- run and turn


class RunStartData(_Data):
    task_id: str
    arm: str
    flow: dict[str, Any] = Field(description="stateguard.flows.Flow as JSON.")
    manager: str | None


class RunStartEvent(_Event):
    kind: Literal["run_start"]
    data: RunStartData


class TurnStartData(_Data):
    turn_id: int
    question: str | None = Field(
        default=None, description="The turn's question text (traces since issue 18)."
    )


class TurnStartEvent(_Event):
    kind: Literal["turn_start"]
    data: TurnStartData


class StepMeta(BaseModel):
    """Runtime metadata of a worker step. Workers and faults add their own keys (kept as extras)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    cell_id: int | None = None
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    stale_reads: dict[str, list[str]] = Field(default_factory=dict)
    turn_end: bool = False
    final: bool = False
    purpose: str | None = Field(default=None, description="Scripted worker: main | revise | recompute | ...")
    wall_s: float | None = None
    notes: list[str] = Field(default_factory=list)
    value: str | None = Field(default=None, description="repr of the cell's last expression, truncated.")
    fault: str | None = Field(
        default=None, description="Label of the fault the scripted worker applied here."
    )
    fault_dropped: list[str] = Field(default_factory=list)
    fault_skipped: str | None = None
    flip: bool = False


class WorkerStepData(_Data):
    index: int = Field(ge=0)
    turn: int | None = None
    thought: str = ""
    action: str = ""
    output: str = ""
    error: str | None = None
    success: bool = True
    meta: StepMeta = Field(default_factory=StepMeta)
    started: float | None = Field(
        default=None, description="Wall-clock start of the step (the event's ts is its end)."
    )


class WorkerStepEvent(_Event):
    kind: Literal["worker_step"]
    data: WorkerStepData


class AnswersData(_Data):
    answers: dict[str, Any] = Field(description="turn id (as text) -> the worker's final answer.")


class AnswersEvent(_Event):
    kind: Literal["answers"]
    data: AnswersData


class RunEndData(_Data):
    discarded_draft: str | None
    committed: int


class RunEndEvent(_Event):
    kind: Literal["run_end"]
    data: RunEndData


class ManagerSummaryData(_Data):
    activations: int
    llm_calls: int
    repairs: int
    fallbacks: int
    usage: dict[str, Any]


class ManagerSummaryEvent(_Event):
    kind: Literal["manager_summary"]
    data: ManagerSummaryData


class WorkspaceDegradedData(_Data):
    reasons: list[str]


class WorkspaceDegradedEvent(_Event):
    kind: Literal["workspace_degraded"]
    data: WorkspaceDegradedData


class WorkerDegradedData(_Data):
    """Turns in which no worker code ran (turn id as text -> why); see RolloutResult.degraded_turns."""

    turns: dict[str, str]


class WorkerDegradedEvent(_Event):
    kind: Literal["worker_degraded"]
    data: WorkerDegradedData


class BindingCheckedData(_Data):
    checks: list[str]
    start_checkpoint: str | None


class BindingCheckedEvent(_Event):
    kind: Literal["binding_checked"]
    data: BindingCheckedData


class BindingFailedData(_Data):
    error: str


class BindingFailedEvent(_Event):
    kind: Literal["binding_failed"]
    data: BindingFailedData


# ---------------------------------------------------------------- manager activations


class ReviewData(_Data):
    event: str = Field(description="stateguard.observation.EventType value.")
    terminal: bool
    stage: str


class ReviewEvent(_Event):
    kind: Literal["review"]
    data: ReviewData


class ActionData(_Data):
    activation: int
    name: str | None = Field(description="None when the proposal did not parse as an action.")
    arguments: Any = Field(description="The action's arguments (or the raw proposal when it did not parse).")
    accepted: bool
    stage: str | None = Field(
        default=None, description="Stage after the action (a hand-built trace may omit it)."
    )
    feedback: str | None = Field(default=None, description="Rejected actions: why.")
    notes: list[str] | None = Field(default=None, description="Accepted actions: what the harness did.")
    stage_before: str | None = None


class ActionEvent(_Event):
    kind: Literal["action"]
    data: ActionData


class ToolResultData(_Data):
    """stateguard.tools.ToolResult as the trace records it."""

    tool: str
    ok: bool
    data: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class ToolData(_Data):
    activation: int
    name: str
    arguments: dict[str, Any]
    result: ToolResultData


class ToolEvent(_Event):
    kind: Literal["tool"]
    data: ToolData


class AdviceData(_Data):
    hint: Hint


class AdviceEvent(_Event):
    kind: Literal["advice"]
    data: AdviceData


class HintDeliveredData(_Data):
    hint: Hint
    text: str


class HintDeliveredEvent(_Event):
    kind: Literal["hint_delivered"]
    data: HintDeliveredData


class DegradedData(_Data):
    reason: str
    draft: str | None


class DegradedEvent(_Event):
    kind: Literal["degraded"]
    data: DegradedData


class StateOpenedData(_Data):
    state_id: str
    draft: dict[str, Any]


class StateOpenedEvent(_Event):
    kind: Literal["state_opened"]
    data: StateOpenedData


class StateUpdatedData(_Data):
    state_id: str
    draft: dict[str, Any]
    notes: list[str]


class StateUpdatedEvent(_Event):
    kind: Literal["state_updated"]
    data: StateUpdatedData


class ConstraintChecksData(_Data):
    state_id: str
    results: list[ConstraintResult]


class ConstraintChecksEvent(_Event):
    kind: Literal["constraint_checks"]
    data: ConstraintChecksData


class RelationsFinalizedData(_Data):
    state_id: str
    mode: str
    relations: list[Relation]


class RelationsFinalizedEvent(_Event):
    kind: Literal["relations_finalized"]
    data: RelationsFinalizedData


class StateCommittedData(_Data):
    state: AnalyticalState


class StateCommittedEvent(_Event):
    kind: Literal["state_committed"]
    data: StateCommittedData


class RepairData(_Data):
    state_id: str
    attempt: int
    mode: str
    evidence: Any
    removed: list[Any]


class RepairEvent(_Event):
    kind: Literal["repair"]
    data: RepairData


class StateAbandonedData(_Data):
    state_id: str
    repair_attempts: int


class StateAbandonedEvent(_Event):
    kind: Literal["state_abandoned"]
    data: StateAbandonedData


class RollbackData(_Data):
    state_id: str
    checkpoint: str | None
    worker: bool
    refused: str | None = None  # the workspace refused the restore (why); nothing was rewound


class RollbackEvent(_Event):
    kind: Literal["rollback"]
    data: RollbackData


class ManagerFallbackData(_Data):
    policy: str | None
    stage: str
    exit: str
    reason: str


class ManagerFallbackEvent(_Event):
    kind: Literal["manager_fallback"]
    data: ManagerFallbackData


class ManagerNoteData(_Data):
    policy: str | None
    note: str


class ManagerNoteEvent(_Event):
    kind: Literal["manager_note"]
    data: ManagerNoteData


# What the manager may decide about a recorded stale read (meanings: stateguard/policies/staleness.py).
StaleDecisionKind = Literal["finding", "intended", "unchanged", "covered", "superseded", "undecided"]


class StaleDecisionData(_Data):
    """The manager's decision on one stale read the workspace recorded (stateguard.policies.staleness)."""

    policy: str | None
    step: int
    name: str
    inputs: list[str]
    decision: StaleDecisionKind
    evidence: str


class StaleDecisionEvent(_Event):
    kind: Literal["stale_decision"]
    data: StaleDecisionData


class ManagerOutputRefusedData(_Data):
    policy: str | None
    stage: str
    offered: list[str]
    output: str


class ManagerOutputRefusedEvent(_Event):
    kind: Literal["manager_output_refused"]
    data: ManagerOutputRefusedData


# ---------------------------------------------------------------- model calls


class LlmCallData(BaseModel):
    """One chat completion (stateguard.llm.client). The caller's `meta` (purpose, offered tools,
    token plans, ...) is merged in and kept as extra fields; `activation` ties a manager call to
    the harness activation it served."""

    model_config = ConfigDict(extra="allow", frozen=True)

    role: str
    model: str | None
    outcome: str
    prompt_tokens: int | None
    completion_tokens: int | None
    usage_estimated: bool | None
    finish_reason: str | None
    latency_s: float
    attempts: int
    status: int | None
    error: str | None
    purpose: str | None = None
    activation: int | None = None


class LlmCallEvent(_Event):
    kind: Literal["llm_call"]
    data: LlmCallData


# ---------------------------------------------------------------- StateWise recovery (stateguard.statewise)


class SwData(BaseModel):
    """StateWise recovery steps: the task id plus step-specific fields (records, actions, checks)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task_id: str


class SwEvent(_Event):
    kind: Literal[
        "sw_retrieved",
        "sw_proposed",
        "sw_executed",
        "sw_stopped",
        "sw_attribution",
        "sw_resolution",
        "sw_repaired",
        "sw_replanned",
        "sw_check",
    ]
    data: SwData


TraceEvent = Annotated[
    RunStartEvent
    | TurnStartEvent
    | WorkerStepEvent
    | AnswersEvent
    | RunEndEvent
    | ManagerSummaryEvent
    | WorkspaceDegradedEvent
    | WorkerDegradedEvent
    | BindingCheckedEvent
    | BindingFailedEvent
    | ReviewEvent
    | ActionEvent
    | ToolEvent
    | AdviceEvent
    | HintDeliveredEvent
    | DegradedEvent
    | StateOpenedEvent
    | StateUpdatedEvent
    | ConstraintChecksEvent
    | RelationsFinalizedEvent
    | StateCommittedEvent
    | RepairEvent
    | StateAbandonedEvent
    | RollbackEvent
    | ManagerFallbackEvent
    | ManagerNoteEvent
    | StaleDecisionEvent
    | ManagerOutputRefusedEvent
    | LlmCallEvent
    | SwEvent,
    Field(discriminator="kind"),
]
EVENTS: TypeAdapter[TraceEvent] = TypeAdapter(TraceEvent)


def state_id_of(event: TraceEvent) -> str | None:
    """The state an event is about (its `state_id`, or the committed state's id), if any."""
    if isinstance(event, StateCommittedEvent):
        return event.data.state.id
    if isinstance(
        event,
        StateOpenedEvent
        | StateUpdatedEvent
        | ConstraintChecksEvent
        | RelationsFinalizedEvent
        | RepairEvent
        | StateAbandonedEvent
        | RollbackEvent,
    ):
        return event.data.state_id
    return None


def parse_event(raw: dict[str, Any]) -> TraceEvent:
    """One event from its JSON object; raises pydantic.ValidationError naming kind and field."""
    return EVENTS.validate_python(raw)
