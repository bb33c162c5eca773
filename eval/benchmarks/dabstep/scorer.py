"""DABstep's programmatic answer matcher, and accuracy per difficulty level (paper C.3).

`question_matches(prediction, truth)` reproduces the benchmark's official matching rules,
including their quirks, so that our accuracies are comparable with the leaderboard's:

1. Both sides are stripped and lower-cased.
2. Numeric form: when either side is *wholly* a comma-grouped number (`1,234` or `12,345.6`) or a
   decimal with a point or a comma (`0.99`, `0,99`), optionally after a `$`, the first number
   of each side is compared; a side without any number fails the match.
3. List form: otherwise, when either side contains `,` or `;`, one leading `[` and one trailing
   `]` are dropped, both sides are split on `,`/`;`, items are stripped, empty items dropped and
   the rest sorted as strings. Equal lists match; lists of different lengths fail; otherwise
   items are matched pairwise (in sorted order) with `question_matches` itself.
4. When both sides contain a number, their first numbers are compared.
5. Otherwise the texts are compared.

Numbers are read by deleting every `,` and `$` and taking the first unsigned decimal: minus
signs, `%` and exponents are never read, so `-0.5` reads as 0.5 and `1e-3` as 1.
Two numbers match when equal; when both are below 1, when they are within 1e-4 (absolute or
relative); otherwise both are rounded to the smaller count of characters after the point in
Python's `str(float)` (an integer such as 5.0 shows one decimal) and match when the rounded
values are equal, or else when the original values are within 1e-4 absolute or relative.
Texts match when equal after deleting every non-word character (`_` is a word character);
else, when both contain words and one of them is a single word, when one side's word set
contains the other's; else when difflib's similarity ratio (prediction first) exceeds 0.95.

    question_matches("1,000", "1000.0")           -> True
    score_predictions([(task, "NL"), ...]).easy    -> LevelScore(n=..., correct=..., accuracy=...)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from difflib import SequenceMatcher

from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.dabstep.loader import DabstepTask

SCORING_VERSION = "dabstep-official-matcher/1"

TOLERANCE = 1e-4
TEXT_SIMILARITY = 0.95

_WHOLLY_NUMERIC = re.compile(r"^\$?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+[.,]\d+)$")
_FIRST_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_LIST_SEPARATOR = re.compile(r"[,;]")
_NON_WORD = re.compile(r"\W")
_WORD = re.compile(r"\b\w+\b")


def first_number(text: str) -> float | None:
    """The first unsigned decimal in `text` after deleting `,` and `$`; None when there is none."""
    match = _FIRST_NUMBER.search(text.replace(",", "").replace("$", ""))
    return float(match.group(0)) if match else None


def _shown_decimals(value: float) -> int:
    """Characters after the point in str(value): 5.0 -> 1, 0.125 -> 3, 1e+16 -> 0."""
    shown = str(value)
    return len(shown.split(".")[-1]) if "." in shown else 0


def numbers_match(a: float, b: float) -> bool:
    """Compare two extracted (non-negative) numbers by the benchmark's rule."""
    if a == b:
        return True
    if a < 1 and b < 1:
        return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    places = min(_shown_decimals(a), _shown_decimals(b))
    if round(a, places) == round(b, places):
        return True
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def texts_match(prediction: str, truth: str) -> bool:
    """Text rule: punctuation-free equality, then single-word containment, then fuzzy similarity."""
    if _NON_WORD.sub("", prediction) == _NON_WORD.sub("", truth):
        return True
    words_p, words_t = _WORD.findall(prediction), _WORD.findall(truth)
    if words_p and words_t and (len(words_p) == 1 or len(words_t) == 1):
        return set(words_p) <= set(words_t) or set(words_t) <= set(words_p)
    return SequenceMatcher(None, prediction, truth).ratio() > TEXT_SIMILARITY


def _list_items(text: str) -> list[str]:
    text = re.sub(r"^\[|\]$", "", text.strip())
    return sorted(item.strip() for item in _LIST_SEPARATOR.split(text) if item.strip())


def lists_match(prediction: str, truth: str) -> bool:
    """Order-free list rule: sorted items equal, or pairwise matches of equally long lists."""
    items_p, items_t = _list_items(prediction), _list_items(truth)
    if items_p == items_t:
        return True
    if len(items_p) != len(items_t):
        return False
    return all(question_matches(p, t) for p, t in zip(items_p, items_t, strict=True))


def question_matches(prediction: str, truth: str) -> bool:
    """True when `prediction` matches the ground-truth answer `truth` under DABstep's rules."""
    prediction, truth = prediction.strip().lower(), truth.strip().lower()
    if _WHOLLY_NUMERIC.match(prediction) or _WHOLLY_NUMERIC.match(truth):
        a, b = first_number(prediction), first_number(truth)
        return a is not None and b is not None and numbers_match(a, b)
    if _LIST_SEPARATOR.search(prediction) or _LIST_SEPARATOR.search(truth):
        return lists_match(prediction, truth)
    a, b = first_number(prediction), first_number(truth)
    if a is not None and b is not None:
        return numbers_match(a, b)
    return texts_match(prediction, truth)


# ----------------------------------------------------------------------------- accuracy


class LevelScore(BaseModel):
    """Accuracy over one group of tasks; `accuracy` is None for an empty group."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(ge=0, description="Tasks scored in this group.")
    correct: int = Field(ge=0, description="Tasks whose prediction matched the truth.")

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.n if self.n else None


class TaskScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    task_id: str
    level: str
    prediction: str | None = Field(description="The agent's answer; None when it gave none (scored wrong).")
    correct: bool


class DabstepScore(BaseModel):
    """Result of scoring a set of DABstep predictions; the paper reports easy and hard separately."""

    model_config = ConfigDict(frozen=True)

    scoring_version: str = SCORING_VERSION
    easy: LevelScore
    hard: LevelScore
    overall: LevelScore
    tasks: list[TaskScore]


def score_predictions(pairs: Iterable[tuple[DabstepTask, str | None]]) -> DabstepScore:
    """Score (task, prediction) pairs. A None prediction counts as wrong.

    Raises ValueError for a task whose answer is withheld (the public 450-task file ships empty
    answers; score those on the official leaderboard instead) or listed twice.
    """
    scored: list[TaskScore] = []
    seen: set[str] = set()
    for task, prediction in pairs:
        if not task.has_answer:
            raise ValueError(
                f"DABstep task {task.task_id}: its answer is withheld (empty); only tasks with a "
                "ground truth (the dev split) can be scored locally"
            )
        if task.task_id in seen:
            raise ValueError(f"DABstep task {task.task_id} is listed twice; score each task once")
        seen.add(task.task_id)
        correct = prediction is not None and question_matches(prediction, task.answer)
        scored.append(
            TaskScore(task_id=task.task_id, level=task.level, prediction=prediction, correct=correct)
        )

    def group(level: str | None) -> LevelScore:
        chosen = [s for s in scored if level is None or s.level == level]
        return LevelScore(n=len(chosen), correct=sum(s.correct for s in chosen))

    return DabstepScore(easy=group("easy"), hard=group("hard"), overall=group(None), tasks=scored)
