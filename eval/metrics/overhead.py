"""Manager overhead from trace timestamps (paper Appendix D.1, Eq. 32, and Table 5).

Worker and manager run one after the other: at a review boundary the worker waits until the
manager cycle is over. So the time between two consecutive worker steps is longer when a
review sits between them. Eq. 32 estimates one manager cycle as

    T_M = Delta_bdry - Delta_local - Delta_harness,      T_M^task = N_review * T_M

Delta_bdry and Delta_local are the mean worker-step intervals at review boundaries and away
from them (StateGuard arm). Delta_harness is the boundary cost without a manager. We read it
as the same gap in the manager-free arm, Delta_bdry(baseline) - Delta_local(baseline). Intervals
over 900 s count as interrupted sessions and are dropped from both groups.

    sg = [step_intervals(read_trace(d / "trace.jsonl")) for d in stateguard_dirs]
    base = [step_intervals(read_trace(d / "trace.jsonl")) for d in baseline_dirs]
    decompose(sg, base).t_manager_s
    manager_call_stats([read_trace(d / "llm_calls.jsonl") for d in stateguard_dirs])   # Table 5

Definitions used on our trace:
* A worker-step interval is ts(worker_step i) - ts(worker_step i-1). The event is written when
  the step has finished, so an interval covers the worker's next step plus whatever came before it.
* Boundary markers. A StateGuard trace has `review` events, and those mark the boundaries. A
  manager-free trace has none, so we mark the points where a review would have been, using the
  `run_start` flow. Turn-aligned: a `turn_start` event. Segment-induced: after every
  `review_every`-th worker step.
* A manager cycle is a maximal run of markers with no worker step in between. A turn-aligned
  boundary (turn_end review, then turn_start review) is one cycle. N_review is the mean number
  of cycles per task, and this includes the cycles before the first step and after the last
  one, which no interval can time.
* Pooling: the Deltas are means over all intervals of all tasks of an arm, each interval
  weighted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.events import LlmCallEvent, RunStartEvent
from stateguard.lifecycle import Regime
from stateguard.trace import TraceEvent
from stateguard.trace_payloads import run_flow

INTERRUPTED_S = 900.0  # D.1: longer intervals are interrupted sessions
Rule = Literal["auto", "review", "turn", "every"]


class StepIntervals(BaseModel):
    """The worker-step intervals of one run, split at boundaries."""

    model_config = ConfigDict(frozen=True)

    task_id: str | None
    arm: str | None
    rule: Literal["review", "turn", "every"] = Field(description="How boundaries were found.")
    boundary_s: list[float] = Field(description="Intervals that contain a boundary (seconds).")
    local_s: list[float] = Field(description="Intervals between two steps with no boundary in between.")
    cycles: int = Field(ge=0, description="Manager cycles (or nominal boundaries), timed or not.")
    review_events: int = Field(ge=0, description="`review` events in the trace.")
    dropped_long: int = Field(ge=0, description="Intervals over the interruption limit, left out.")


class OverheadDecomposition(BaseModel):
    """Eq. 32 on pooled intervals; fields are None where the data cannot give them."""

    model_config = ConfigDict(frozen=True)

    tasks: int
    delta_bdry_s: float | None
    delta_local_s: float | None
    delta_harness_s: float | None = Field(
        description="Baseline Delta_bdry - Delta_local; None without a baseline."
    )
    t_manager_s: float | None = Field(description="Eq. 32: cost of one manager cycle.")
    reviews_per_task: float = Field(description="N_review: mean manager cycles per task.")
    review_events_per_task: float
    t_manager_task_s: float | None = Field(description="N_review * T_M.")
    boundary_intervals: int
    local_intervals: int
    dropped_long: int


class ManagerCallStats(BaseModel):
    """Table 5: manager-model calls per task and time per call, from `llm_call` events."""

    model_config = ConfigDict(frozen=True)

    tasks: int
    calls: int
    failed_calls: int
    calls_per_task: float
    mean_latency_s: float | None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _rule(events: Sequence[TraceEvent], rule: Rule) -> tuple[Literal["review", "turn", "every"], int]:
    start = next((e for e in events if isinstance(e, RunStartEvent)), None)
    flow = run_flow(start.data) if start else None
    # a cadence only when the trace recorded one (FlowConfig's default is no evidence of it)
    every = flow.review_every if flow is not None and "review_every" in flow.model_fields_set else 0
    if rule != "auto":
        if rule == "every" and every < 1:
            raise ValueError("rule='every' needs flow.review_every in the trace's run_start event")
        return rule, every
    if any(e.kind == "review" for e in events):
        return "review", every
    if flow is not None and flow.regime is Regime.TURN_ALIGNED:
        return "turn", every
    if flow is not None and flow.regime is Regime.SEGMENT_INDUCED and every >= 1:
        return "every", every
    raise ValueError(
        "cannot tell where the review boundaries are: the trace has no `review` events and its run_start "
        "carries no flow (regime, review_every); pass rule='turn' or rule='every'"
    )


def step_intervals(
    events: Iterable[TraceEvent], *, rule: Rule = "auto", max_interval_s: float = INTERRUPTED_S
) -> StepIntervals:
    """Split one run's worker-step intervals into boundary and local ones (D.1)."""
    ordered = sorted(events, key=lambda e: e.seq)
    kind, every = _rule(ordered, rule)
    marker = "review" if kind == "review" else "turn_start"
    start = next((e for e in ordered if isinstance(e, RunStartEvent)), None)
    boundary: list[float] = []
    local: list[float] = []
    cycles = dropped = steps = 0
    last_ts: float | None = None
    pending = False  # a marker was seen since the last worker step
    for event in ordered:
        if kind != "every" and event.kind == marker:
            cycles += not pending
            pending = True
            continue
        if event.kind != "worker_step":
            continue
        if event.ts is None:
            raise ValueError(
                f"worker_step seq {event.seq} has no ts: the trace was written with a deterministic clock; "
                "time runs with Trace(clock=time.time) (the default)"
            )
        if last_ts is not None:
            gap = event.ts - last_ts
            if gap > max_interval_s:
                dropped += 1
            else:
                (boundary if pending else local).append(gap)
        steps += 1
        last_ts = event.ts
        pending = False
        if kind == "every" and steps % every == 0:
            cycles += 1
            pending = True
    return StepIntervals(
        task_id=start.data.task_id if start else None,
        arm=start.data.arm if start else None,
        rule=kind,
        boundary_s=boundary,
        local_s=local,
        cycles=cycles,
        review_events=sum(e.kind == "review" for e in ordered),
        dropped_long=dropped,
    )


def decompose(
    stateguard: Sequence[StepIntervals], baseline: Sequence[StepIntervals] | None = None
) -> OverheadDecomposition:
    """Eq. 32 pooled over tasks; without `baseline` runs, Delta_harness and T_M stay None."""
    if not stateguard:
        raise ValueError("no StateGuard runs given; pass one StepIntervals per task of the StateGuard arm")
    bdry = _mean([x for run in stateguard for x in run.boundary_s])
    loc = _mean([x for run in stateguard for x in run.local_s])
    harness = None
    if baseline:
        b_bdry = _mean([x for run in baseline for x in run.boundary_s])
        b_loc = _mean([x for run in baseline for x in run.local_s])
        harness = None if b_bdry is None or b_loc is None else b_bdry - b_loc
    t_m = None if bdry is None or loc is None or harness is None else bdry - loc - harness
    reviews = sum(run.cycles for run in stateguard) / len(stateguard)
    return OverheadDecomposition(
        tasks=len(stateguard),
        delta_bdry_s=bdry,
        delta_local_s=loc,
        delta_harness_s=harness,
        t_manager_s=t_m,
        reviews_per_task=reviews,
        review_events_per_task=sum(run.review_events for run in stateguard) / len(stateguard),
        t_manager_task_s=None if t_m is None else reviews * t_m,
        boundary_intervals=sum(len(run.boundary_s) for run in stateguard),
        local_intervals=sum(len(run.local_s) for run in stateguard),
        dropped_long=sum(run.dropped_long for run in stateguard),
    )


def manager_call_stats(runs: Sequence[Iterable[TraceEvent]], *, role: str = "manager") -> ManagerCallStats:
    """Table 5 columns 2-3 from each task's `llm_call` events (trace.jsonl or llm_calls.jsonl).

    Mean latency is over successful calls (a failed call has no answer to time).
    """
    if not runs:
        raise ValueError("no runs given; pass the llm_call events of each task of the StateGuard arm")
    calls = failed = 0
    latencies: list[float] = []
    for events in runs:
        for event in events:
            if not isinstance(event, LlmCallEvent) or event.data.role != role:
                continue
            calls += 1
            if event.data.error:
                failed += 1
            else:
                latencies.append(event.data.latency_s)
    return ManagerCallStats(
        tasks=len(runs),
        calls=calls,
        failed_calls=failed,
        calls_per_task=calls / len(runs),
        mean_latency_s=_mean(latencies),
    )
