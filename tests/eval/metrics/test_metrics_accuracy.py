"""Accuracy per group with excluded units (C.3): hand-counted tables."""

from __future__ import annotations

import pytest

from eval.metrics.accuracy import accuracy, accuracy_by, per_task, task_macro_accuracy, unit_outcomes

# Two LongDS-like tasks in two domains, one DABstep-like level label each.
UNITS = [
    *unit_outcomes(
        "education/bi/task1", {1: True, 2: None, 3: False, 4: True}, domain="education", level="hard"
    ),
    *unit_outcomes("sports/nba/task2", {1: False, 2: False}, domain="sports", level="hard"),
    *unit_outcomes("sports/nba/task3", {1: True}, domain="sports", level="easy"),
    *unit_outcomes("sports/nba/task4", {1: None}, domain="sports", level="easy"),
]


def test_micro_accuracy_skips_excluded_units() -> None:
    summary = accuracy(UNITS)
    # 8 units, 2 excluded; right: t1/1, t1/4, t3/1 -> 3/6
    assert (summary.units, summary.scored, summary.correct, summary.excluded) == (8, 6, 3, 2)
    assert summary.value == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("domain", {"education": (4, 3, 2, 2 / 3), "sports": (4, 3, 1, 1 / 3)}),
        ("level", {"easy": (2, 1, 1, 1.0), "hard": (6, 5, 2, 0.4)}),
    ],
)
def test_accuracy_by_group(key: str, expected: dict[str, tuple[int, int, int, float]]) -> None:
    got = accuracy_by(UNITS, key)
    assert list(got) == sorted(expected)
    for label, (units, scored, correct, value) in expected.items():
        assert (got[label].units, got[label].scored, got[label].correct) == (units, scored, correct)
        assert got[label].value == pytest.approx(value)


def test_task_macro_and_per_task() -> None:
    tasks = per_task(UNITS)
    assert [t.value for t in tasks.values()] == [pytest.approx(2 / 3), 0.0, 1.0, None]
    # mean over the three tasks with something scored: (2/3 + 0 + 1) / 3
    assert task_macro_accuracy(UNITS) == pytest.approx(5 / 9)


def test_nothing_scored_is_undefined_not_zero() -> None:
    only_excluded = unit_outcomes("t", {1: None, 2: None})
    assert accuracy(only_excluded).value is None
    assert task_macro_accuracy(only_excluded) is None
    assert accuracy([]).value is None


def test_errors_name_the_unit_and_the_fix() -> None:
    with pytest.raises(ValueError, match="has no group label 'benchmark'"):
        accuracy_by(UNITS, "benchmark")
    with pytest.raises(ValueError, match=r"unit 2: correct = 1; use True, False or None"):
        unit_outcomes("t", {1: True, 2: 1})  # type: ignore[dict-item]
