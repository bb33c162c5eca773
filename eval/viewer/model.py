"""What the viewer's pages are built from: a run's tasks, each with its arms (or variants).

    run = load_run(folder)                   # eval.viewer.sources: RunSource
    for task in run.tasks:                   # TaskSource
        for arm in task.arms: arm.result     # ArmSource, its ArmResult (eval.results)

One shape for every kind of run (evaluation runs, synthesis exports, plain rollout folders), so the
readers in `sources.py` and `rollouts.py` and the page builders share it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from eval.report import RunSummary
from eval.results import ArmResult

__all__ = ["ArmSource", "RunSource", "TaskSource"]


@dataclass(frozen=True)
class ArmSource:
    name: str  # eval arm (baseline, stateguard, ...) or synthesis variant (clean, repair-1, ...)
    group: str  # the column it is summarized under: the arm, or the variant kind (clean/repair/auto)
    folder: Path | None  # trace.jsonl + states.sqlite, None when the folder is gone
    result: ArmResult
    facts: dict[str, str] = field(default_factory=dict)  # shown under the arm: intervention, kept, ...


@dataclass(frozen=True)
class TaskSource:
    task_id: str
    bench: str
    arms: list[ArmSource]

    @property
    def turns(self) -> list[int]:
        return sorted({t for a in self.arms for t in a.result.correct})


@dataclass(frozen=True)
class RunSource:
    kind: Literal["eval", "synthesis", "rollouts"]
    root: Path
    reference: str  # the arm the others are compared with, turn by turn
    tasks: list[TaskSource]
    summary: RunSummary | None = None  # as the run printed it (summary.json), when present
    config_text: str = ""

    @property
    def results(self) -> list[ArmResult]:
        """One result per arm, with `arm` set to its group (what the overview table sums)."""
        return [a.result.model_copy(update={"arm": a.group}) for t in self.tasks for a in t.arms]
