"""The one mean-or-median the code computes, when the question asks the other and its words name
no column the ordinary reading binds ("the median MIC of each drug" over `bact[drugs].mean()`):
re-run as asked, a finding only when the answer changes (`named_stats.only_statistic`)."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.named_stats import only_statistic
from tests.stateguard.verification.conftest import Session

QUESTION = "What is the median value of each kind of goods, and which kind is the dearest?"


def _code(function: str) -> str:
    return (
        "import json\n"
        "_cols = ['price', 'rating']\n"
        f"_by = orders.groupby('category')[_cols].{function}()\n"
        "result = {'dearest': str(_by['price'].idxmax()), 'top_price': round(float(_by['price'].max()), 2)}\n"
        "print(json.dumps(result))"
    )


@pytest.mark.parametrize(("function", "found"), [("median", False), ("mean", True)])
def test_the_codes_one_statistic_is_the_one_asked(function: str, found: bool) -> None:
    findings = Session().turn(QUESTION, _code(function))
    assert bool(findings) is found
    if found:
        assert "median" in findings[0].reason


def test_two_statistics_in_the_question_or_the_code_abstain() -> None:
    sem = inspect_code(_code("mean"))
    assert [r.function for r, _, _ in only_statistic(QUESTION, sem)] == ["median"]
    assert only_statistic("What is the median and the mean value of each kind?", sem) == []
    two = inspect_code(_code("mean") + "\nm = orders['price'].median()")
    assert only_statistic(QUESTION, two) == []
