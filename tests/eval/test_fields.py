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
    ],
)
def test_judge_fields(expected, got, ok) -> None:
    assert judge_fields(expected, got) is ok


def test_per_turn() -> None:
    assert per_turn_correct({1: {"a": 1}, 2: {"b": 2}}, {1: {"a": 1}}) == {1: True, 2: False}
