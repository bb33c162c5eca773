"""Paired case analysis of baseline vs StateGuard (paper Appendix D.3).

Both arms answer the same units of the same tasks, so each unit pairs up: it *improves*
(wrong -> right), *regresses* (right -> wrong) or stays. D.3 reports those flips in both
directions at the unit (LongDS: turn) level, the task-level picture (a task improves when its
accuracy over the units scored in both arms rises), and how many regressions the manager can
be blamed for, since raw regressions also come from worker randomness.

Manager attribution (the paper names the criteria; the operational test is ours). A regressed
turn t is
* attributable (broad) when the StateGuard run shows an explicit StateGuard path into t: during
  turn t the worker was handed a state or repair hint, or the harness rolled the workspace back;
* attributable (strict) when, in addition, a state hint delivered during t packed a committed
  state whose own turn was wrong in the StateGuard arm, and t's worker steps then read one of
  that state's variables (an incorrect state value reused downstream).
Units whose verdict is None in either arm are left out (excluded, as in C.3). Attribution needs
units that are turns; `attribute` is given the StateGuard arm's trace.

    flips = paired_flips({"t1": {1: True, 2: False}}, {"t1": {1: True, 2: True}})
    broad, strict = attribute(read_trace(run / "trace.jsonl"), regressed={5}, correct={3: False, 5: False})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from stateguard.trace import TraceEvent

__all__ = ["FlipSummary", "attribute", "paired_flips", "regressed_units"]

Verdicts = Mapping[str, Mapping[int, bool | None]]


class FlipSummary(BaseModel):
    """D.3 counts over the units and tasks scored in both arms."""

    model_config = ConfigDict(frozen=True)

    units: int = Field(ge=0, description="Units with a verdict in both arms.")
    improved: int = Field(ge=0, description="Wrong in the baseline, right with StateGuard.")
    regressed: int = Field(ge=0, description="Right in the baseline, wrong with StateGuard.")
    stayed_right: int = Field(ge=0)
    stayed_wrong: int = Field(ge=0)
    excluded: int = Field(ge=0, description="Units with no verdict in one arm or both.")
    tasks: int = Field(ge=0, description="Tasks with at least one unit scored in both arms.")
    tasks_improved: int = Field(ge=0)
    tasks_decreased: int = Field(ge=0)
    tasks_unchanged: int = Field(ge=0)

    @property
    def net(self) -> int:
        return self.improved - self.regressed


def _pairs(
    base: Mapping[int, bool | None], guard: Mapping[int, bool | None]
) -> tuple[list[tuple[bool, bool]], int]:
    units = set(base) | set(guard)
    both = [
        (bool(base[u]), bool(guard[u]))
        for u in sorted(units)
        if base.get(u) is not None and guard.get(u) is not None
    ]
    return both, len(units) - len(both)


def paired_flips(baseline: Verdicts, stateguard: Verdicts) -> FlipSummary:
    """Flips per unit and per task over the tasks both arms ran (a task in one arm only is ignored)."""
    counts = dict.fromkeys(("improved", "regressed", "stayed_right", "stayed_wrong", "excluded"), 0)
    tasks = {"tasks": 0, "tasks_improved": 0, "tasks_decreased": 0, "tasks_unchanged": 0}
    for task in sorted(set(baseline) & set(stateguard)):
        both, excluded = _pairs(baseline[task], stateguard[task])
        counts["excluded"] += excluded
        for b, g in both:
            key = (
                "improved"
                if g and not b
                else "regressed"
                if b and not g
                else "stayed_right"
                if b
                else "stayed_wrong"
            )
            counts[key] += 1
        if both:
            tasks["tasks"] += 1
            gain = sum(g for _, g in both) - sum(b for b, _ in both)
            key = "tasks_improved" if gain > 0 else "tasks_decreased" if gain < 0 else "tasks_unchanged"
            tasks[key] += 1
    scored = counts["improved"] + counts["regressed"] + counts["stayed_right"] + counts["stayed_wrong"]
    return FlipSummary(units=scored, **counts, **tasks)


def regressed_units(baseline: Mapping[int, bool | None], stateguard: Mapping[int, bool | None]) -> set[int]:
    """Units right in the baseline and wrong with StateGuard (one task)."""
    return {u for u in baseline if baseline[u] is True and stateguard.get(u) is False}


def _state_turns(events: Iterable[TraceEvent]) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Committed state -> the turn of its last source step, and -> its variable names."""
    step_turn: dict[int, int] = {}
    turn: int | None = None
    owner: dict[str, int] = {}
    names: dict[str, set[str]] = {}
    for e in events:
        if e.kind == "turn_start":
            turn = e.data.turn_id
        elif e.kind == "worker_step":
            own = e.data.turn if e.data.turn is not None else turn
            if own is not None:
                step_turn[e.data.index] = own
        elif e.kind == "state_committed":
            state = e.data.state
            end = state.source_step_end
            if end is not None and end in step_turn:
                owner[state.id] = step_turn[end]
            names[state.id] = {v.name for v in state.used_variables}
    return owner, names


def attribute(
    events: Iterable[TraceEvent], regressed: Iterable[int], correct: Mapping[int, bool | None]
) -> tuple[set[int], set[int]]:
    """(broad, strict) manager-attributable regressions among `regressed` turns, from the
    StateGuard arm's trace and its own verdicts `correct` (see the module docstring)."""
    ordered = sorted(events, key=lambda e: e.seq)
    owner, names = _state_turns(ordered)
    touched: set[int] = set()
    packed: dict[int, set[str]] = {}  # turn -> ids of the states its state hints packed
    reads: dict[int, set[str]] = {}
    turn: int | None = None
    for e in ordered:
        if e.kind == "turn_start":
            turn = e.data.turn_id
        elif turn is None:
            continue
        elif e.kind == "rollback":
            touched.add(turn)
        elif e.kind == "hint_delivered":
            touched.add(turn)
            if e.data.hint.kind == "state":
                packed.setdefault(turn, set()).update(s.id for s in e.data.hint.states)
        elif e.kind == "worker_step":
            reads.setdefault(turn, set()).update(e.data.meta.reads)
    broad = {t for t in regressed if t in touched}
    strict = set()
    for t in broad:
        wrong_upstream = [s for s in packed.get(t, ()) if correct.get(owner.get(s, -1)) is False]
        if any(names.get(s, set()) & reads.get(t, set()) for s in wrong_upstream):
            strict.add(t)
    return broad, strict
