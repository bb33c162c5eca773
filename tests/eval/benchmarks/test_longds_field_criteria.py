"""The deterministic field judge against LongDS's official criteria (paper C.3), one row per rule.

Answers shaped like the published LongDS ground truths (ranking records, `primary_metric`, labels).
"""

from __future__ import annotations

from typing import Any

import pytest

from eval.scorers.fields import judge_fields

NORWAY = {"country": "Norway", "student_count": 49}
UGANDA = {"country": "Uganda", "student_count": 4}
KENYA = {"country": "Kenya", "student_count": 4}
DENMARK = {"country": "Denmark", "student_count": 2}
RANKED = {
    "answer_type": "ranking",
    "primary_metric": "student_count",
    "top4": [NORWAY, UGANDA, KENYA, DENMARK],
}


def ranked(*rows: Any) -> dict[str, Any]:
    return {"top4": list(rows)}


CASES: list[tuple[str, Any, Any, bool]] = [
    # numbers: exact up to trailing zeros, in any notation
    ("trailing zeros", {"mean": 41.2706}, {"mean": 41.27060}, True),
    ("int vs float", {"rows": 77}, {"rows": 77.0}, True),
    ("number as text", {"mean": 41.2706}, {"mean": "41.2706"}, True),
    ("text with trailing zeros", {"mean": "41.27"}, {"mean": "41.2700"}, True),
    ("thousands and currency", {"revenue": 1234.5}, {"revenue": "$1,234.50"}, True),
    ("percent sign dropped, not rescaled", {"share": 12.5}, {"share": "12.5%"}, True),
    ("percent is not a ratio", {"share": 0.125}, {"share": "12.5%"}, False),
    ("other rounding is wrong", {"mean": 41.2706}, {"mean": 41.271}, False),
    ("sign matters", {"gap": -0.3244}, {"gap": 0.3244}, False),
    ("text that is not a number", {"mean": 41.2706}, {"mean": "about 41.27"}, False),
    # tolerance only when the truth states one
    ("stated absolute tolerance", {"r2": 0.81, "tolerance": 0.01}, {"r2": 0.805}, True),
    ("outside the stated tolerance", {"r2": 0.81, "tolerance": 0.01}, {"r2": 0.79}, False),
    ("tolerance reaches nested values", {"abs_tol": 0.5, "s": {"mean": 10}}, {"s": {"mean": 10.4}}, True),
    ("relative tolerance", {"total": 1000, "rel_tol": 0.01}, {"total": 1009}, True),
    ("no tolerance: exact", {"r2": 0.81}, {"r2": 0.805}, False),
    # labels, case and formatting
    ("answer_type is a label", {"answer_type": "scalar", "x": 1}, {"answer_type": "other", "x": 1}, True),
    ("field names ignore case and separators", {"mean_python": 80.0}, {"Mean Python": 80}, True),
    (
        "ambiguous field names do not match",
        {"mean_python": 80.0},
        {"MeanPython": 80, "mean-python": 80},
        False,
    ),
    ("string case and spacing", {"leader": "High  School"}, {"leader": " high school "}, True),
    ("different strings", {"leader": "High School"}, {"leader": "HighSchool"}, False),
    ("extra fields are ignored", {"x": 1}, {"x": 1, "note": "done"}, True),
    ("missing field is wrong", {"x": 1, "y": 2}, {"x": 1}, False),
    ("booleans are not numbers", {"top5_higher": False}, {"top5_higher": 0}, False),
    # rankings: order matters except among ties on the ranking value
    ("exact order", RANKED, ranked(NORWAY, UGANDA, KENYA, DENMARK), True),
    ("tied rows swapped", RANKED, ranked(NORWAY, KENYA, UGANDA, DENMARK), True),
    ("untied rows swapped", RANKED, ranked(UGANDA, NORWAY, KENYA, DENMARK), False),
    ("tie does not cross its block", RANKED, ranked(NORWAY, UGANDA, DENMARK, KENYA), False),
    ("a row too few", RANKED, ranked(NORWAY, UGANDA, KENYA), False),
    ("tied rows need their own values", RANKED, ranked(NORWAY, KENYA, KENYA, DENMARK), False),
    (
        "ties on all numbers without primary_metric",
        {"records": [{"name": "a", "value": 1.0}, {"name": "b", "value": 1.0}]},
        {"records": [{"name": "b", "value": 1}, {"name": "a", "value": 1}]},
        True,
    ),
    (
        "primary_metric decides ties, not other numbers",
        {"primary_metric": "avg", "top": [{"c": "x", "avg": 5, "n": 1}, {"c": "y", "avg": 5, "n": 2}]},
        {"top": [{"c": "y", "avg": 5, "n": 2}, {"c": "x", "avg": 5, "n": 1}]},
        True,
    ),
    (
        "no tie without numbers: plain lists keep order",
        {"ranking": ["26-35", "36-50"]},
        {"ranking": ["36-50", "26-35"]},
        False,
    ),
]


@pytest.mark.parametrize(("rule", "expected", "got", "ok"), CASES, ids=[c[0] for c in CASES])
def test_field_judge_criteria(rule: str, expected: Any, got: Any, ok: bool) -> None:
    assert judge_fields(expected, got) is ok, rule
