"""The repair hint a real manager run gives on a declared mistake (for `eval.perf.hint_response`).

The mistake's variant runs with the scripted worker and the `rules` manager with semantic
verification on (`eval.perf.semantic.run_one`, setting `semantic`), on the task cut after the
mistake's turn (the later turns cannot change what is said about it, and cost time). The hint is
the first repair hint delivered while that turn is the current one, exactly as the worker got it.
A mistake the manager does not flag has no hint (None): the experiment measures how a model
answers the hints the manager really gives.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from eval.benchmarks.base import EvalTask
from eval.perf.semantic import run_one
from stateguard.artifacts.events import HintDeliveredEvent, TurnStartEvent
from stateguard.flows import FlowConfig
from stateguard.hints import Hint
from stateguard.trace import read_trace

__all__ = ["cut_after", "first_repair_hint", "manager_hint"]


def cut_after(task: EvalTask, turn: int) -> EvalTask:
    """The task with its turns up to `turn` (the same variant, faults and data)."""
    turns = [t for t in task.task.turns if t.turn_id <= turn]
    return task.model_copy(update={"task": task.task.model_copy(update={"turns": turns})})


def first_repair_hint(trace: Path, turn: int) -> Hint | None:
    """The first repair hint delivered while `turn` was the current turn."""
    current: int | None = None
    for event in read_trace(trace):
        if isinstance(event, TurnStartEvent):
            current = event.data.turn_id
        elif isinstance(event, HintDeliveredEvent) and current == turn and event.data.hint.kind == "repair":
            return event.data.hint
    return None


def manager_hint(variant: EvalTask, turn: int, flow: FlowConfig, folder: Path) -> Hint | None:
    """Run the variant (cut after `turn`) under the scripted worker and the rules manager with
    semantic verification; the first repair hint at `turn`, or None. `folder` is removed after."""
    base = variant.model_copy(update={"task_id": variant.base_task or variant.task_id})
    try:
        outcome = run_one(
            cut_after(base, turn), variant.variant, list(variant.faults), "semantic", flow, str(folder)
        )
        return first_repair_hint(Path(outcome["trace"]), turn)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
