"""Readings that made false repairs on clean runs of the fresh12 split (after its first look), each
as a general case: a bound on a distance from another quantity, and a value given to every row."""

from __future__ import annotations

import pytest

from stateguard.verification.extract import comparisons, extract
from stateguard.verification.requirements import Kind


@pytest.mark.parametrize(
    "clause",
    [
        "a household is stretched when its share is at least 5 points (0.05) above the median share of its class",
        "a month is warm when it is at least 1 degree above the long-run average of its calendar month",
        "an order counts when it is more than 20 dollars over the cheapest price of its day",
    ],
)
def test_a_bound_on_the_distance_from_another_quantity_is_no_bound_on_the_column(clause: str) -> None:
    assert comparisons(clause) == []


def test_a_plain_bound_or_one_against_a_number_stays() -> None:
    assert [(r.op, r.value) for r in comparisons("the orders priced more than 20 above 100")] == [
        (">", 20.0),
        (">", 100.0),
    ]
    assert [(r.op, r.value) for r in comparisons("flights more than 60 minutes late")] == [(">", 60.0)]


@pytest.mark.parametrize(
    ("question", "keys"),
    [
        ("Give each household its class in a `klass` column. How many classes are empty?", []),
        ("Assign every order their region's mean price.", []),
        ("What is the mean price for each region?", [["region"]]),
    ],
)
def test_a_value_for_every_row_is_no_grouping(question: str, keys: list[list[str]]) -> None:
    assert [r.keys for r in extract(question) if r.kind is Kind.GROUPING] == keys
