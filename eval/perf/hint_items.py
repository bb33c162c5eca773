"""The items of the hint-response experiment: paired (task, turn) cases with a true and a false hint.

A pair is one declared mistake of the dev set (a semantic counterfactual, a stale or a precision
fault) at its turn, with the repair hint the `rules` manager gives on it:

* the **true-hint item** runs the mistake's variant: the turn's first attempt is the faulty code,
  and the hint names the mistake. Its outcome is `fixed` (the final answer is right) or not;
* the **false-hint item** runs the clean variant: the turn's first attempt is the reference code
  (its answer is right), and the same hint arrives, now false. Its outcome is `broken` (the final
  answer is wrong) or not.

Both items of a pair show the model the same prefix, question and hint text, so the two rates come
from the same prompts. Pairs are chosen spread over kinds and tasks (`choose_pairs`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.base import EvalTask
from stateguard.hints import Hint

__all__ = ["HintItem", "HintPair", "HintRecord", "choose_pairs", "fault_kind", "items_of"]

Truth = Literal["true", "false"]


def fault_kind(task: EvalTask) -> str:
    """The kind of a one-mistake variant: the semantic kind of a counterfactual, else the fault kind."""
    fault = task.faults[0]
    return fault.semantic or fault.kind if fault.kind == "counterfactual" else fault.kind


class HintPair(BaseModel):
    """A declared mistake and the hint the manager gives on it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task_id: str = Field(description="The base task id (dev), e.g. botany/iris/task1.")
    variant: str = Field(description="The mistake's variant, e.g. join-t4.")
    turn: int
    kind: str = Field(description="flipped_comparison, ..., stale, precision.")
    hint: Hint
    hint_source: Literal["manager", "given"] = Field(
        description="manager: the first repair hint a scripted rules-manager run (semantic on) gave at the turn."
    )


class HintItem(BaseModel):
    """One run of the experiment: a pair's true or false side."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    pair: HintPair
    truth: Truth = Field(description="true: the mistake's variant; false: the clean variant.")

    @property
    def item_id(self) -> str:
        return f"{self.pair.task_id}~{self.pair.variant}~{self.truth}"

    @property
    def run_variant(self) -> str:
        return self.pair.variant if self.truth == "true" else "clean"


class HintRecord(BaseModel):
    """One item's line in the results JSONL: the set-up, the model's work after the hint, the verdicts."""

    model_config = ConfigDict(extra="forbid")
    item: str
    model: str
    sampling: dict[str, Any]
    task: str
    variant: str = Field(description="The variant run: the mistake's (true hint) or clean (false hint).")
    fault_variant: str
    turn: int
    kind: str
    truth: Truth
    hint: str = Field(description="The hint as the model read it.")
    hint_source: str
    error: str | None = Field(default=None, description="A crash (the item is rerun on resume).")
    first_answer: Any = None
    first_correct: bool | None = Field(
        default=None, description="The first attempt's verdict (before the hint)."
    )
    handed_over: bool = False
    cells: list[dict[str, Any]] = Field(default_factory=list, description="The model's steps after the hint.")
    final_answer: Any = None
    correct: bool | None = None
    outcome: Literal["fixed", "not_fixed", "kept", "broken"] | None = None
    model_s: float = 0.0
    model_calls: int = 0
    wall_s: float = 0.0


def items_of(pairs: list[HintPair]) -> list[HintItem]:
    """Each pair's false-hint item right after its true-hint item."""
    return [HintItem(pair=p, truth=t) for p in pairs for t in ("true", "false")]


def _base(task: EvalTask) -> str:
    return task.base_task or task.task_id


def _room(kinds: list[str], kind: str, per_task: int) -> bool:
    return len(kinds) < per_task and kind not in kinds


def choose_pairs(
    candidates: list[EvalTask], *, per_task: int = 2, limit: int | None = None
) -> list[EvalTask]:
    """One-mistake variants spread over kinds and tasks: rounds over the kinds (in order of how rare
    they are), each taking the task with that kind that has the fewest picks so far (at most `per_task`); a
    task's two picks are of different kinds. Deterministic (the candidates' order)."""
    by_kind: dict[str, list[EvalTask]] = defaultdict(list)
    for task in candidates:
        if len(task.faults) == 1 and task.variant != "clean":
            by_kind[fault_kind(task)].append(task)
    kinds = sorted(by_kind, key=lambda k: (len(by_kind[k]), k))
    taken: dict[str, list[str]] = defaultdict(list)  # base task -> kinds chosen
    chosen: list[EvalTask] = []
    while any(by_kind.values()) and (limit is None or len(chosen) < limit):
        for kind in kinds:
            queue = by_kind[kind]
            open_ = [t for t in queue if _room(taken[_base(t)], kind, per_task)]
            if open_:
                task = min(open_, key=lambda t: len(taken[_base(t)]))  # the least-used task first
                queue.remove(task)
                taken[_base(task)].append(kind)
                chosen.append(task)
            else:
                queue.clear()
            if limit is not None and len(chosen) >= limit:
                break
    return chosen
