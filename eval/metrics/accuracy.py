"""Accuracy over scored units, overall and per group (paper C.3 and the columns of Table 1).

A unit is one scored answer: a LongDS turn, a DABstep question. Its `correct` is True, False or
None; None means *excluded* (the judge failed, or the unit has no ground truth): it counts in
no denominator, as C.3/C.4 require ("a missing or failed evaluation is not ... incorrect").
Groups are free-form labels: `domain` for LongDS, `level` (easy/hard) for DABstep,
`benchmark` when several benchmarks share one report.

    units = unit_outcomes("education/bi/task1", {1: True, 2: None, 3: False}, domain="education")
    accuracy(units).value                         # 0.5 (micro; turn 2 excluded)
    accuracy_by(units, "domain")["education"]     # AccuracySummary for that domain
    task_macro_accuracy(units)                    # mean of per-task accuracies

Micro accuracy (C.3: Acc = (1/T) sum_t s_t over judged turns) is the headline number; the task
macro accuracy (each task weighs the same) is the robustness check C.3 reports next to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field


class UnitOutcome(BaseModel):
    """One scored unit; `correct=None` marks an excluded unit."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(min_length=1, description="The task (cluster) the unit belongs to.")
    unit_id: str = Field(description="Turn id or question id within the task, as text.")
    correct: bool | None
    groups: dict[str, str] = Field(
        default_factory=dict, description="Labels such as domain, level, benchmark."
    )


class AccuracySummary(BaseModel):
    """Counts behind one accuracy figure; `value` is None when nothing was scored."""

    model_config = ConfigDict(frozen=True)

    units: int = Field(ge=0, description="All units, excluded ones included.")
    scored: int = Field(ge=0, description="Units with a True/False verdict (the denominator).")
    correct: int = Field(ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def excluded(self) -> int:
        return self.units - self.scored

    @computed_field  # type: ignore[prop-decorator]
    @property
    def value(self) -> float | None:
        """C.3: correct / scored."""
        return self.correct / self.scored if self.scored else None


def unit_outcomes(task_id: str, correct: Mapping[Any, bool | None], **groups: str) -> list[UnitOutcome]:
    """Per-unit verdicts of one task (e.g. `TaskJudgement` turn ids -> correct) as outcome records."""
    out = []
    for unit, value in correct.items():
        if value is not None and not isinstance(value, bool):
            raise ValueError(
                f"task {task_id!r} unit {unit!r}: correct = {value!r}; use True, False or None (excluded)"
            )
        out.append(UnitOutcome(task_id=task_id, unit_id=str(unit), correct=value, groups=dict(groups)))
    return out


def accuracy(units: Iterable[UnitOutcome]) -> AccuracySummary:
    """Micro accuracy over all scored units (C.3, Acc_LongDS and Acc_g)."""
    n = scored = correct = 0
    for unit in units:
        n += 1
        if unit.correct is not None:
            scored += 1
            correct += unit.correct
    return AccuracySummary(units=n, scored=scored, correct=correct)


def accuracy_by(units: Iterable[UnitOutcome], key: str) -> dict[str, AccuracySummary]:
    """Micro accuracy per value of group label `key` (sorted by label).

    Raises ValueError naming a unit that lacks the label, since silently dropping it would
    change the denominators.
    """
    buckets: dict[str, list[UnitOutcome]] = {}
    for unit in units:
        if key not in unit.groups:
            raise ValueError(
                f"task {unit.task_id!r} unit {unit.unit_id!r} has no group label {key!r} "
                f"(labels: {sorted(unit.groups)}); pass {key}=... to unit_outcomes()"
            )
        buckets.setdefault(unit.groups[key], []).append(unit)
    return {label: accuracy(members) for label, members in sorted(buckets.items())}


def per_task(units: Iterable[UnitOutcome]) -> dict[str, AccuracySummary]:
    """Accuracy of each task (the clusters of the bootstrap), in first-seen order."""
    buckets: dict[str, list[UnitOutcome]] = {}
    for unit in units:
        buckets.setdefault(unit.task_id, []).append(unit)
    return {task: accuracy(members) for task, members in buckets.items()}


def task_macro_accuracy(units: Iterable[UnitOutcome]) -> float | None:
    """C.3 task-macro accuracy: the mean of per-task accuracies over tasks with a scored unit."""
    values = [s.value for s in per_task(units).values() if s.value is not None]
    return sum(values) / len(values) if values else None
