"""A manager rollout as the reward reads it: trace events, the scored window, the stage timeline.

The reward scores a *continuation*: the events from `start_seq` on. Earlier events (the fixed
worker prefix, earlier states, the draft under review) are context only: they supply evidence
and the lifecycle stage the continuation starts in. A whole run is scored with start_seq = 0.

    rollout = build_rollout(read_trace(path), start_seq=120)
    for act in rollout.window_actions(): act.kind, act.name, act.stage_before, act.accepted

Every manager proposal leaves exactly one record in the trace (stateguard.trace): a `tool` event
for a tool that ran, an `action` event for a control action (applied or refused) and for a tool
call the harness refused. Refusals before validation carry no action name; their raw arguments
tell a malformed control or tool call from a response that could not be parsed at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stateguard.artifacts.events import ActionEvent
from stateguard.lifecycle import ControlAction, Regime, Stage, ToolAction, is_legal, next_stage
from stateguard.trace import TraceEvent, read_trace
from stateguard.trace_payloads import run_flow, unparsed_action

E = TypeVar("E", bound=BaseModel)
_CONTROL = {a.value for a in ControlAction}
_TOOL = {a.value for a in ToolAction}


class TraceSource(BaseModel):
    """Where a rollout's trace is and which part of it is the scored continuation."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="A trace.jsonl written by stateguard.trace.")
    events: list[TraceEvent] | None = Field(default=None, description="The events inline, instead of path.")
    start_seq: int = Field(
        default=0, ge=0, description="First event of the continuation; earlier ones are context."
    )
    regime: Regime | None = Field(
        default=None, description="Needed only when the trace has no run_start event."
    )
    start_stage: Stage | None = Field(
        default=None, description="Lifecycle stage at start_seq, needed only when the trace lacks the prefix."
    )

    @model_validator(mode="after")
    def _one_source(self) -> TraceSource:
        if (self.path is None) == (self.events is None):
            raise ValueError(
                "a trace source needs exactly one of 'path' (a trace.jsonl) or 'events' (inline list)"
            )
        return self

    def load(self) -> list[TraceEvent]:
        if self.events is not None:
            return list(self.events)
        assert self.path is not None
        if not Path(self.path).is_file():
            raise FileNotFoundError(
                f"trace path {self.path!r} does not exist; the rollout must write its trace first"
            )
        return read_trace(self.path)


class ActionRecord(BaseModel):
    """One manager proposal with the harness verdict and the lifecycle stage around it."""

    model_config = ConfigDict(frozen=True)

    seq: int
    kind: Literal["control", "tool", "unparsed"]
    name: str | None = Field(description="Action name as proposed (None when the response did not parse).")
    accepted: bool = Field(description="The harness applied it (a tool: it ran).")
    malformed: bool = Field(
        default=False, description="Refused before validation: unknown name or bad arguments."
    )
    stage_before: Stage
    stage_after: Stage
    arguments: dict[str, Any] = Field(default_factory=dict)
    feedback: str = ""
    tool_ok: bool | None = Field(default=None, description="Tools only: ToolResult.ok.")
    tool_error: str | None = None

    @property
    def control(self) -> ControlAction | None:
        return ControlAction(self.name) if self.name in _CONTROL else None


class Rollout(BaseModel):
    """The parsed trace: every event, the window start, the regime and every proposal in order."""

    model_config = ConfigDict(frozen=True)

    events: list[TraceEvent]
    start_seq: int
    regime: Regime
    start_stage: Stage
    actions: list[ActionRecord]

    def in_window(self, seq: int) -> bool:
        return seq >= self.start_seq

    def window_actions(self) -> list[ActionRecord]:
        return [a for a in self.actions if self.in_window(a.seq)]

    def window_events(self, kind: type[E]) -> list[E]:
        """The continuation's events of one type (e.g. StateCommittedEvent)."""
        return [e for e in self.events if self.in_window(e.seq) and isinstance(e, kind)]

    def of_kind(self, kind: type[E]) -> list[E]:
        """All events of one type (e.g. WorkerStepEvent), context included."""
        return [e for e in self.events if isinstance(e, kind)]


def detect_regime(events: Iterable[TraceEvent], override: Regime | None = None) -> Regime:
    """The lifecycle regime from the run_start event (flow.regime); `override` must agree with it."""
    recorded: Regime | None = None
    for event in events:
        if event.kind == "run_start":
            flow = run_flow(event.data)
            recorded = flow.regime if flow is not None else None
            break
    if override is not None:
        if recorded is not None and recorded is not Regime(override):
            raise ValueError(
                f"regime {override!r} conflicts with the trace's run_start flow.regime {recorded.value!r}"
            )
        return Regime(override)
    if recorded is None:
        raise ValueError(
            "cannot tell the lifecycle regime: the trace has no run_start event with flow.regime; "
            "set regime='turn_aligned' or 'segment_induced' in the trace source"
        )
    return recorded


def _classify(event: ActionEvent) -> tuple[Literal["control", "tool", "unparsed"], str | None, bool]:
    """(kind, name, malformed) of an `action` event."""
    name = event.data.name
    if name in _CONTROL:
        return "control", name, False
    if name in _TOOL:
        return "tool", name, False
    raw = unparsed_action(event.data)
    if raw is not None and raw.name in _CONTROL:
        return "control", raw.name, True
    if raw is not None:
        return "tool", raw.name, True  # a named call that is no control action: a (failed) tool invocation
    return "unparsed", None, True


def _stage(value: Any, fallback: Stage) -> Stage:
    try:
        return Stage(value) if value is not None else fallback
    except ValueError:
        return fallback


def build_rollout(
    events: Sequence[TraceEvent],
    *,
    start_seq: int = 0,
    regime: Regime | None = None,
    start_stage: Stage | None = None,
) -> Rollout:
    """Replay the trace once: classify every proposal and attach the stage before and after it.

    The stage comes from the harness's own fields (stage_before / stage) when the event has them,
    else it is tracked with the lifecycle table; `degraded` and `run_end` return it to idle.
    """
    ordered = sorted(events, key=lambda e: e.seq)
    resolved = detect_regime(ordered, regime)
    stage = Stage.IDLE
    at_start: Stage | None = None
    records: list[ActionRecord] = []
    for event in ordered:
        if at_start is None and event.seq >= start_seq:
            at_start = stage if start_stage is None else start_stage
            stage = at_start
        if event.kind in ("degraded", "run_end"):
            stage = Stage.IDLE
        elif event.kind == "tool":
            result = event.data.result
            records.append(
                ActionRecord(
                    seq=event.seq,
                    kind="tool",
                    name=event.data.name,
                    accepted=True,
                    stage_before=stage,
                    stage_after=stage,
                    arguments=event.data.arguments,
                    tool_ok=result.ok,
                    tool_error=result.error,
                )
            )
        elif event.kind == "action":
            kind, name, malformed = _classify(event)
            accepted = event.data.accepted and not malformed
            before = _stage(event.data.stage_before if accepted else event.data.stage, stage)
            after = before
            if accepted and kind == "control" and name is not None:
                action = ControlAction(name)
                tracked = (
                    next_stage(resolved, before, action) if is_legal(resolved, before, action) else before
                )
                after = _stage(event.data.stage, tracked)
            arguments = event.data.arguments
            arguments = arguments if isinstance(arguments, dict) else {}
            records.append(
                ActionRecord(
                    seq=event.seq,
                    kind=kind,
                    name=name,
                    accepted=accepted,
                    malformed=malformed,
                    stage_before=before,
                    stage_after=after,
                    arguments=arguments,
                    feedback=event.data.feedback or "",
                )
            )
            stage = after
    if at_start is None:  # nothing at or after start_seq: the continuation is empty
        at_start = stage if start_stage is None else start_stage
    return Rollout(
        events=ordered, start_seq=start_seq, regime=resolved, start_stage=at_start, actions=records
    )
