"""DABstep's answer matcher, branch by branch, and accuracy per level on the official dev answers.

The branch table is ours. The ten official dev rows (CC-BY-4.0) are read in place from
../shared/benchmarks/dabstep (tests/support/published.py), never copied into the repository.
"""

from __future__ import annotations

import pytest

from eval.benchmarks.dabstep import (
    SCORING_VERSION,
    DabstepTask,
    load_split,
    question_matches,
    score_predictions,
)
from eval.benchmarks.dabstep.scorer import first_number, numbers_match
from tests.support.published import published

# (prediction, truth, expected): each row names the branch of the algorithm it exercises.
CASES = [
    # (1) one side is wholly a grouped number or a decimal: first numbers compared
    ("1,000", "1000", True),  # thousands separator
    ("1,234.50", "1234.5", True),  # grouped with decimals, trailing zero
    ("$1,234.5", "1234.5", True),  # dollar prefix allowed
    ("1,500", "1500", True),
    ("0,99", "0.99", False),  # a decimal comma is deleted before reading: 99 vs 0.99
    ("1,5", "1.5", False),  # same quirk: 15 vs 1.5
    ("12.5", "twelve point five", False),  # no number on one side
    ("3.14159", "3.14", True),  # rounded to the 2 decimals the truth shows
    ("3.15", "3.14", False),
    ("123.456", "123.4", False),  # rounding, not truncation: 123.5 vs 123.4
    ("123.44", "123.4", True),
    ("0.1234", "0.12345", True),  # both below 1: within 1e-4
    ("0.1234", "0.1236", False),
    ("1,000,000", "1000001", True),  # rounding fails, relative 1e-4 holds
    ("10000.0", "10001.04", False),  # relative gap 1.04e-4 on the unrounded values
    ("1.00005", "1", True),  # an integer shows one decimal: both round to 1.0
    ("12.5", "12.5%", True),  # the percent sign is never read
    ("-5.5", "5.5", True),  # nor the minus sign
    ("1,2,3", "1.23", False),  # commas deleted: 123 vs 1.23
    # (2) a comma or semicolon on either side: order-free lists
    ("b, a, c", "a, b, c", True),
    ("[a; b]", "a,b", True),  # one bracket pair dropped, both separators
    ("a, b", "a, b, c", False),  # different lengths
    ("", "a, b", False),
    ("1.0, 2", "1, 2.00", True),  # items matched pairwise after sorting
    ("2, 10", "10, 2.0", True),
    ("$5, 10", "5, 10", False),  # string sort pairs $5 with 10
    ("netherlands, belgium", "belgium, the netherlands", True),  # items fall back to text
    ("nl; be", "be, nl", True),
    ("hello, world", "hello world", False),  # a comma forces the list rule
    # (3) both sides contain a number: first numbers compared
    ("The answer is 42", "42", True),
    ("  42  ", "42", True),
    ("42 transactions", "41", False),
    ("E: 13.570", "E:13.57", True),
    ("A:13.57", "E:13.57", True),  # letters around the number are not compared
    ("-0.94000000000005", "-0.94810300000017", False),  # dev task 1871, two published truths
    ("12.5%", "0.125", False),  # percentages are not rescaled
    ("1e-3", "1", True),  # exponents are never read
    ("100", "100.4", False),
    ("2023 total: 5", "2023", True),
    ("5 of 2023", "2023", False),
    ("0.00012", "0.0002", True),  # both below 1: absolute 1e-4
    # (4) text
    ("NL", "nl", True),
    ("B. BE", "b. be", True),
    ("b be", "B. BE", True),  # equal once non-word characters are deleted
    ("Sognsvann!", "sognsvann", True),
    ("GlobalCard", "globalcard", True),
    ("Not-Applicable", "Not Applicable", True),
    ("not_applicable", "Not Applicable", False),  # underscore is a word character
    ("applicable", "Not Applicable", True),  # a single word contained in the other side
    ("the answer is no", "no", True),
    ("yes", "Not Applicable", False),
    ("martinis fine steakhouse", "martinis_fine_steakhouse", False),
    ("credit card", "credit cards", True),  # similarity 0.957
    ("credit card", "debit card", False),
    ("", "NL", False),  # no words on one side: similarity decides
    ("?", "NL", False),
    ("", "", True),
]


@pytest.mark.parametrize(("prediction", "truth", "expected"), CASES)
def test_question_matches(prediction: str, truth: str, expected: bool) -> None:
    assert question_matches(prediction, truth) is expected


def test_table_is_large_and_not_trivial() -> None:
    assert len(CASES) >= 40
    assert {expected for _, _, expected in CASES} == {True, False}


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("1,234.5", 1234.5),
        ("$7", 7.0),
        ("-0.5", 0.5),
        ("abc", None),
        (".25 of it", 0.25),
        ("12.", 12.0),
        ("1e-3", 1.0),
    ],
)
def test_first_number(text: str, number: float | None) -> None:
    assert first_number(text) == number


@pytest.mark.parametrize(("a", "b", "expected"), [(5.0, 5.0, True), (0.5, 0.50009, True), (2.0, 2.4, False)])
def test_numbers_match(a: float, b: float, expected: bool) -> None:
    assert numbers_match(a, b) is expected


# ----------------------------------------------------------------------------- dev answers


def dev_tasks() -> list[DabstepTask]:
    return load_split(published("dabstep"), "dev")


@pytest.mark.published_data
def test_every_dev_answer_matches_itself() -> None:
    tasks = dev_tasks()
    assert [t.task_id for t in tasks] == [
        "5",
        "49",
        "70",
        "1273",
        "1305",
        "1464",
        "1681",
        "1753",
        "1871",
        "2697",
    ]
    for task in tasks:
        assert question_matches(task.answer, task.answer), task.task_id
        assert question_matches(f"  {task.answer.upper()} ", task.answer), task.task_id


@pytest.mark.published_data
def test_the_two_published_answers_of_task_1871_do_not_match() -> None:
    (task,) = [t for t in dev_tasks() if t.task_id == "1871"]
    later_copy = "-0.94810300000017"
    assert task.answer == "-0.94000000000005"
    assert not question_matches(later_copy, task.answer)
    assert not question_matches(task.answer, later_copy)


@pytest.mark.published_data
def test_list_answers_match_in_any_order() -> None:
    (task,) = [t for t in dev_tasks() if t.task_id == "1681"]
    shuffled = ", ".join(reversed(task.answer.split(", ")))
    assert question_matches(shuffled, task.answer)
    assert not question_matches(", ".join(task.answer.split(", ")[:-1]), task.answer)


@pytest.mark.published_data
def test_accuracy_per_level() -> None:
    tasks = dev_tasks()
    wrong = {"49": "A. NL", "1305": "0.2", "1464": "1, 2"}
    predictions: dict[str, str | None] = {t.task_id: wrong.get(t.task_id, t.answer) for t in tasks}
    predictions["2697"] = None  # no answer given: wrong
    result = score_predictions((t, predictions[t.task_id]) for t in tasks)
    assert result.scoring_version == SCORING_VERSION
    assert (result.easy.n, result.easy.correct) == (3, 2)
    assert (result.hard.n, result.hard.correct) == (7, 4)
    assert (result.overall.n, result.overall.correct) == (10, 6)
    assert result.easy.accuracy == pytest.approx(2 / 3)
    assert result.hard.accuracy == pytest.approx(4 / 7)
    assert {s.task_id for s in result.tasks if not s.correct} == {"49", "1305", "1464", "2697"}


@pytest.mark.published_data
def test_empty_group_has_no_accuracy() -> None:
    easy_only = [t for t in dev_tasks() if t.level == "easy"]
    result = score_predictions((t, t.answer) for t in easy_only)
    assert result.hard.n == 0 and result.hard.accuracy is None
    assert result.easy.accuracy == 1.0


@pytest.mark.published_data
def test_withheld_or_repeated_tasks_are_refused() -> None:
    blank = DabstepTask(task_id="1712", question="q", level="hard", answer="")
    with pytest.raises(ValueError, match="1712: its answer is withheld"):
        score_predictions([(blank, "3.0")])
    task = dev_tasks()[0]
    with pytest.raises(ValueError, match="listed twice"):
        score_predictions([(task, "NL"), (task, "NL")])
