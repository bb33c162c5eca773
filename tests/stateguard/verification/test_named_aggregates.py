"""Statistics the code computes as named aggregations (`.agg(median_rating=("rating", "median"))`)
or over `.loc[mask, "col"]` are read with their column, so a stated statistic binds to them."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from tests.stateguard.verification.conftest import Session


def test_named_aggregations_and_loc_columns_are_read() -> None:
    sem = inspect_code(
        "s = orders.groupby('region').agg(n=('order_id', 'size'), med=('rating', 'median'), top=('price', max))\n"
        "x = orders.loc[orders['price'] > 100, 'rating'].mean()"
    )
    found = [(a.function, a.column, a.alias) for s in sem.selections for a in s.aggregates]
    assert ("count", "order_id", "n") in found and ("median", "rating", "med") in found
    assert not any(a == "top" for _, _, a in found)  # a function object, not a name: not read
    assert ("mean", "rating", None) in found


QUESTION = "Per region, what is the median rating? Keep it in `by_region`."


@pytest.mark.parametrize(("fn", "found"), [("median", False), ("mean", True)])
def test_a_named_aggregation_computing_another_statistic_is_a_finding(fn: str, found: bool) -> None:
    code = f'by_region = orders.groupby("region").agg(med_rating=("rating", "{fn}"))\nprint(by_region)'
    findings = Session().turn(QUESTION, code)
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["by_region"] and "'differ': True" in findings[0].evidence


def test_a_swap_that_leaves_the_printed_answer_is_dropped_by_the_gate() -> None:
    """The mean is computed but the answer printed is the count: the same answer either way."""
    question = "How many orders have a median rating? Report `n`."
    code = (
        "import json\nm = orders.loc[orders['price'] > 100, 'rating'].mean()\n"
        "result = {'n': int(len(orders))}\nprint(json.dumps(result))"
    )
    session = Session()
    assert session.turn(question, code) == []


def test_a_mean_over_loc_rows_for_a_stated_median_is_a_finding() -> None:
    code = (
        "import json\nm = orders.loc[orders['price'] > 100, 'rating'].mean()\n"
        "result = {'m': float(m)}\nprint(json.dumps(result))"
    )
    (finding,) = Session().turn("What is the median rating of the orders above 100? Report `m`.", code)
    assert finding.variables == ["m"] and "the median of rating" in finding.evidence
