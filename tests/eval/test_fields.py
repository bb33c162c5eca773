"""Table of cases for the deterministic field judge."""

import pytest

from eval.scorers.fields import judge_fields, per_turn_correct


@pytest.mark.parametrize(
    ("expected", "got", "ok"),
    [
        ({"revenue": 720.0}, {"revenue": 720}, True),  # trailing zeros
        ({"revenue": 720.0}, {"revenue": 720.01}, False),
        ({"answer_type": "scalar", "x": 1}, {"answer_type": "other", "x": 1}, True),  # label ignored
        ({"x": 1}, {"x": 1, "extra": 5}, True),  # only requested fields
        ({"x": 1, "y": 2}, {"x": 1}, False),  # missing field
        ({"top": "North"}, {"top": " north "}, True),
        ({"flag": True}, {"flag": 1}, False),
        ({"rank": ["a", "b"]}, {"rank": ["b", "a"]}, False),
        ({"s": {"mean": 1.5}}, {"s": {"mean": 1.5, "std": 2}}, True),
        ({"x": 1}, None, False),
        # field names are labels (paper C.3): a requested field under another name counts by value
        ({"n_orders": 10, "revenue": 1060}, {"number_of_orders": 10, "total_revenue": 1060}, True),
        ({"n_orders": 10, "revenue": 1060}, {"number_of_orders": 10, "total_revenue": 1061}, False),
        ({"top_region": "North", "orders": 5}, {"region": "north", "count": 5}, True),
        ({"a": 5, "b": 5}, {"x": 5}, False),  # one answer field stands for one requested field
        ({"margin": 465, "pct": 43.87}, {"margin": 43.87, "other": 465}, False),  # a named field stays strict
        ({"answer_type": "scalar", "x": 1}, {"answer_type": 1}, False),  # labels never stand for values
    ],
)
def test_judge_fields(expected, got, ok) -> None:
    assert judge_fields(expected, got) is ok


def test_per_turn() -> None:
    assert per_turn_correct({1: {"a": 1}, 2: {"b": 2}}, {1: {"a": 1}}) == {1: True, 2: False}
