"""Comparator phrasings beyond the plain ones ("in excess of", "at or above", "65 and over", "up to
and including"), the second bound of a range written as two, "the remaining X whose ..." as a
subset (not "the rest"), and "the bottom four X by Y" as an order (not a grouping)."""

from __future__ import annotations

import pytest

from stateguard.verification.extract import comparisons, extract, groupings
from stateguard.verification.requirements import Kind
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary


@pytest.mark.parametrize(
    ("clause", "op", "value"),
    [
        ("quarters whose rate is in excess of 4", ">", 4.0),
        ("a rate beyond 45", ">", 45.0),
        ("a rate surpassing 45", ">", 45.0),
        ("a rate upwards of 45", ">", 45.0),
        ("a rate at or above 45", ">=", 45.0),  # not ">" from "above"
        ("a rate equal to or greater than 45", ">=", 45.0),
        ("a rate greater than or equal to 45", ">=", 45.0),
        ("a rate at or below 45", "<=", 45.0),
        ("a rate less than or equal to 45", "<=", 45.0),
        ("a rate up to and including 8", "<=", 8.0),
        ("a rate short of 45", "<", 45.0),
        ("a rate of 45 and above", ">=", 45.0),
        ("a rate of 45 and under", "<=", 45.0),
    ],
)
def test_comparator_phrases(clause: str, op: str, value: float) -> None:
    assert [(r.op, r.value) for r in comparisons(clause)] == [(op, value)]


def test_and_before_a_comparative_with_than_is_no_postfix_bound() -> None:
    # "30 and fewer than 50": not "30 or fewer"
    assert [(r.op, r.value) for r in comparisons("a rate of 30 and fewer than 50 cases")] == [("<", 50.0)]


def test_the_second_bound_of_a_range_is_on_the_first_ones_quantity() -> None:
    reqs = comparisons("count the quarters whose rate is above 6 and up to and including 8 percent")
    assert [(r.op, r.value, r.subject) for r in reqs] == [(">", 6.0, ["rate"]), ("<=", 8.0, ["rate"])]
    reqs = comparisons("birds with a body mass of more than 4,000 g but no more than 5,000 g")
    assert [r.subject for r in reqs] == [["body", "mass"], ["body", "mass"]]


def test_a_second_bound_with_its_own_quantity_keeps_it() -> None:
    reqs = comparisons("a pulse below 55 and a weight over 150")
    assert [(r.op, r.subject) for r in reqs] == [("<", ["pulse"]), (">", ["weight"])]


def test_the_remaining_rows_whose_value_is_bounded_are_a_subset_not_the_rest() -> None:
    assert [(r.op, r.value) for r in comparisons("count the remaining quarters whose rate is above 6")] == [
        (">", 6.0)
    ]
    assert comparisons("the mean in the quarters above 6 and in the remaining quarters") == []
    # "the restored" is no "the rest"
    reqs = comparisons("with the restored share: in the years whose clean share was above 20 percent")
    assert [(r.op, r.value) for r in reqs] == [(">", 20.0)]


@pytest.mark.parametrize(
    "clause",
    [
        "Name the bottom four remaining quarters by long-term rate (lowest first)",
        "the top 3 countries by population",
        "list the regions sorted by size",
    ],
)
def test_an_order_by_a_quantity_is_no_grouping(clause: str) -> None:
    assert groupings(clause) == []


def test_a_grouping_by_stays() -> None:
    assert [r.keys for r in groupings("the highest mean rate by decade")] == [["decade"]]


@pytest.mark.parametrize(
    ("clause", "subject"),
    [
        ("And of those, how many have 3,000 residents or more?", ["residents"]),
        ("families with two or more children", ["children"]),
        ("trips of 500 miles or more", []),  # a unit names no quantity
        ("a rate of 45 or more", ["rate"]),  # the words before the number still win
    ],
)
def test_the_words_between_the_number_and_or_more_name_the_quantity(clause: str, subject: list[str]) -> None:
    (req,) = comparisons(clause)
    assert req.op == ">=" and req.subject == subject


@pytest.mark.parametrize(
    ("clause", "function", "subject"),
    [
        ("Give the middle value of inflation and its spread", "median", ["inflation"]),
        ("the middle value of the county rates, and which county is highest", "median", ["county", "rates"]),
        ("the average long-term rate and the count", "mean", ["long-term", "rate"]),
    ],
)
def test_every_statistic_word_of_the_lexicon_names_an_aggregation(
    clause: str, function: str, subject: list[str]
) -> None:
    (req,) = [r for r in extract(clause) if r.kind is Kind.AGGREGATION]
    assert (req.function, req.subject) == (function, subject)


def test_a_verb_after_a_grouping_is_no_key() -> None:
    assert [
        r.keys for r in groupings("For every ten-year stretch, keep in a table `t` the number of quarters")
    ] == [["ten-year stretch"]]
    assert [r.keys for r in groupings("Per size class, store in `by_size` the counts")] == [["size class"]]


@pytest.mark.parametrize(
    ("clause", "op", "value"),
    [
        ("From 2015 on, how many good months did each stock have", ">=", 2015.0),
        ("from 1980 onwards", ">=", 1980.0),
        ("since 2010, how many", ">=", 2010.0),
        ("until 1990", "<=", 1990.0),
        ("in 2015 or later", ">=", 2015.0),  # not also "in 2015"
        ("1990 and earlier", "<=", 1990.0),
    ],
)
def test_bounds_on_time(clause: str, op: str, value: float) -> None:
    assert [(r.op, r.value, r.subject) for r in comparisons(clause)] == [(op, value, ["year"])]


def test_a_number_that_is_no_year_is_no_bound_on_time() -> None:
    assert [(r.op, r.value, r.subject) for r in comparisons("ages 65 and later")] == [(">=", 65.0, [])]


def test_the_words_of_another_bound_name_no_quantity() -> None:
    reqs = comparisons("How many strikes were over in a week at most (7 days or fewer)?")
    assert [(r.op, r.value, r.subject) for r in reqs] == [("<=", 7.0, ["days"])]


def test_combined_is_a_sum() -> None:
    (req,) = [r for r in extract("what was their combined flow?") if r.kind is Kind.AGGREGATION]
    assert (req.function, req.subject) == ("sum", ["flow"])


def test_a_light_verb_of_duration_carries_no_content() -> None:
    flag = ColumnInfo(kind="other", values=["False", "True"])
    vocab = Vocabulary(tables={"orders": {"days": ColumnInfo(kind="num"), "long": flag}})
    reqs = extract("Flag as long every order that went on beyond 50 days.", vocab=vocab, tables=["orders"])
    assert [(r.op, r.value, r.subject) for r in reqs if r.kind is Kind.COMPARISON] == [(">", 50.0, ["days"])]


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        (
            "Report the average flow, the middle value and the standard deviation.",
            [("mean", ["flow"]), ("median", ["flow"])],
        ),
        (
            "What is the typical index (the median), its mean and its spread?",
            [("median", ["index"]), ("mean", ["index"])],
        ),
        ("what is the mean price, and how many orders have a median?", [("mean", ["price"])]),
    ],
)
def test_a_statistic_listed_without_its_quantity(clause: str, expected: list[tuple[str, list[str]]]) -> None:
    assert [(r.function, r.subject) for r in extract(clause) if r.kind is Kind.AGGREGATION] == expected
