"""State and intervention statistics of one run and of a benchmark (paper Appendix D.2, Figure 4).

D.2 reports the following. State construction: states per task, the share of turns that got a
committed state, the share of tasks with any state, and constraints, variables and conclusions
per state. The relation mix. Reselections at finalization. Hints by kind: the paper's
"error hints" are our `repair` hints. Repairs per task, with the attempt number and the mode.
Tool usage.

    stats = run_state_stats(read_trace(RolloutFolder(run).trace), StateStore(RolloutFolder(run).store))
    summary = summarize([stats, ...])          # pooled over tasks, as D.2 reports them

Sources. Committed states come from the state store, which is authoritative and survives a
crash. Everything that happened (turns, steps, hints, repairs, tools, reselections) comes from
the trace.

Definitions:
* A turn is *covered* when a committed state's source steps include at least one worker step of
  that turn ("receives its own committed state"). The denominator is the set of turns with a
  `turn_start` event.
* A step's turn is the step's own `turn` field. When that field is absent, it is the last
  `turn_start` before the step.
* The relation mix counts every committed relation, Init included. States with multiple
  upstreams have at least two distinct related states.
* Pooling (`summarize`): shares are pooled. For example, coverage is covered turns over all
  turns, and the relation mix is over all relations. Per-task figures are totals divided by
  tasks. Per-state figures are totals divided by states.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, computed_field

from stateguard.artifacts.events import (
    HintDeliveredEvent,
    RelationsFinalizedEvent,
    RepairEvent,
    RunStartEvent,
    ToolEvent,
)
from stateguard.store import StateStore
from stateguard.trace import TraceEvent


class RunStateStats(BaseModel):
    """D.2 counts of one task run."""

    model_config = ConfigDict(frozen=True)

    task_id: str | None
    states: int = Field(ge=0, description="Committed states in the store.")
    turns: int = Field(ge=0, description="Turns started (turn_start events).")
    turns_covered: int = Field(ge=0)
    constraints: int = Field(ge=0, description="Constraints over all committed states.")
    executable_constraints: int = Field(default=0, ge=0, description="Constraints that carry a check (code).")
    variables: int = Field(ge=0, description="Recorded variables over all committed states.")
    variables_with_value: int = Field(ge=0, description="Recorded variables that carry a concrete value.")
    conclusions: int = Field(ge=0)
    relations: dict[str, int] = Field(description="Committed relations by type.")
    multi_upstream_states: int = Field(ge=0, description="States related to two or more distinct states.")
    reselections: int = Field(ge=0, description="FINALIZE_RELATIONS in mode 'reselect'.")
    hints: dict[str, int] = Field(description="Delivered hints by kind (state / repair).")
    repairs: int = Field(ge=0)
    repair_attempts: dict[int, int] = Field(
        description="Repairs by attempt number (1 = first repair of a state)."
    )
    repair_modes: dict[str, int] = Field(description="Repairs by mode (light / heavy).")
    tools: dict[str, int] = Field(description="Evidence-tool calls by tool name.")
    abandoned: int = Field(ge=0)
    rollbacks: int = Field(ge=0)
    reviews: int = Field(ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def coverage(self) -> float | None:
        return self.turns_covered / self.turns if self.turns else None


class StateStatsSummary(BaseModel):
    """D.2 over a benchmark arm, pooled over tasks."""

    model_config = ConfigDict(frozen=True)

    tasks: int
    states_per_task: float
    turn_coverage: float | None = Field(description="Covered turns / turns, pooled.")
    task_coverage: float = Field(description="Share of tasks with at least one committed state.")
    constraints_per_state: float | None
    executable_constraints_per_state: float | None = Field(
        default=None, description="Constraints with code, per state."
    )
    variables_per_state: float | None
    conclusions_per_state: float | None
    value_share: float | None = Field(description="Share of recorded variables that carry a value.")
    relations: dict[str, int]
    relation_shares: dict[str, float]
    multi_upstream_states: int
    reselections: int
    hints: dict[str, int]
    hints_per_task: dict[str, float]
    repairs: int
    repairs_per_task: float
    first_attempt_share: float | None = Field(
        description="Share of repairs that were a state's first attempt."
    )
    heavy_share: float | None
    tools: dict[str, int]
    tool_task_coverage: float = Field(description="Share of tasks with at least one evidence-tool call.")


def _turn_of_steps(events: Sequence[TraceEvent]) -> tuple[dict[int, int], list[int]]:
    """Step index -> turn id, and the turns started, in order."""
    turns: list[int] = []
    step_turn: dict[int, int] = {}
    current: int | None = None
    for event in events:
        if event.kind == "turn_start":
            current = event.data.turn_id
            if current not in turns:
                turns.append(current)
        elif event.kind == "worker_step":
            turn = current if event.data.turn is None else event.data.turn
            if turn is not None:
                step_turn[event.data.index] = turn
    return step_turn, turns


def run_state_stats(events: Iterable[TraceEvent], store: StateStore) -> RunStateStats:
    """D.2 counts of one run from its trace events and its state store (opened by the caller)."""
    ordered = sorted(events, key=lambda e: e.seq)
    step_turn, turns = _turn_of_steps(ordered)
    states = [store.load(sid) for sid in store.ids()]
    covered: set[int] = set()
    relations: Counter[str] = Counter()
    multi = 0
    for state in states:
        if state.source_step_start is not None and state.source_step_end is not None:
            for step in range(state.source_step_start, state.source_step_end + 1):
                if step in step_turn:
                    covered.add(step_turn[step])
        relations.update(r.type.value for r in state.relations)
        multi += len({r.related_state_id for r in state.relations if r.related_state_id}) >= 2
    kinds = Counter(e.kind for e in ordered)
    repairs = [e.data for e in ordered if isinstance(e, RepairEvent)]
    start = next((e for e in ordered if isinstance(e, RunStartEvent)), None)
    return RunStateStats(
        task_id=start.data.task_id if start else None,
        states=len(states),
        turns=len(turns),
        turns_covered=len(covered & set(turns)),
        constraints=sum(len(s.constraints) for s in states),
        executable_constraints=sum(c.code is not None for s in states for c in s.constraints),
        variables=sum(len(s.used_variables) for s in states),
        variables_with_value=sum(v.value is not None for s in states for v in s.used_variables),
        conclusions=sum(len(s.conclusions) for s in states),
        relations=dict(sorted(relations.items())),
        multi_upstream_states=multi,
        reselections=sum(
            isinstance(e, RelationsFinalizedEvent) and e.data.mode == "reselect" for e in ordered
        ),
        hints=dict(
            sorted(Counter(e.data.hint.kind for e in ordered if isinstance(e, HintDeliveredEvent)).items())
        ),
        repairs=len(repairs),
        repair_attempts=dict(sorted(Counter(r.attempt for r in repairs).items())),
        repair_modes=dict(sorted(Counter(r.mode for r in repairs).items())),
        tools=dict(sorted(Counter(e.data.name for e in ordered if isinstance(e, ToolEvent)).items())),
        abandoned=kinds["state_abandoned"],
        rollbacks=kinds["rollback"],
        reviews=kinds["review"],
    )


def _total(runs: Sequence[RunStateStats], field: str) -> dict[str, int]:
    counter: Counter[str] = Counter()
    for run in runs:
        counter.update({str(k): v for k, v in getattr(run, field).items()})
    return dict(sorted(counter.items()))


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def summarize(runs: Sequence[RunStateStats]) -> StateStatsSummary:
    """Pool per-task D.2 counts into benchmark figures (see the module docstring for the rules)."""
    if not runs:
        raise ValueError("no runs given; pass one RunStateStats per task of the StateGuard arm")
    n = len(runs)
    states = sum(r.states for r in runs)
    variables = sum(r.variables for r in runs)
    relations = _total(runs, "relations")
    all_relations = sum(relations.values())
    hints = _total(runs, "hints")
    repairs = sum(r.repairs for r in runs)
    return StateStatsSummary(
        tasks=n,
        states_per_task=states / n,
        turn_coverage=_ratio(sum(r.turns_covered for r in runs), sum(r.turns for r in runs)),
        task_coverage=sum(r.states > 0 for r in runs) / n,
        constraints_per_state=_ratio(sum(r.constraints for r in runs), states),
        executable_constraints_per_state=_ratio(sum(r.executable_constraints for r in runs), states),
        variables_per_state=_ratio(variables, states),
        conclusions_per_state=_ratio(sum(r.conclusions for r in runs), states),
        value_share=_ratio(sum(r.variables_with_value for r in runs), variables),
        relations=relations,
        relation_shares={k: v / all_relations for k, v in relations.items()} if all_relations else {},
        multi_upstream_states=sum(r.multi_upstream_states for r in runs),
        reselections=sum(r.reselections for r in runs),
        hints=hints,
        hints_per_task={k: v / n for k, v in hints.items()},
        repairs=repairs,
        repairs_per_task=repairs / n,
        first_attempt_share=_ratio(sum(r.repair_attempts.get(1, 0) for r in runs), repairs),
        heavy_share=_ratio(sum(r.repair_modes.get("heavy", 0) for r in runs), repairs),
        tools=_total(runs, "tools"),
        tool_task_coverage=sum(bool(r.tools) for r in runs) / n,
    )
