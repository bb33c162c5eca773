"""Readings that made false repairs on clean runs of the fresh11 split (after its first look),
each as a general case: an example value, a count of one category, quoted labels, a bound whose
rows are left out, a bound compared with the rest, a bound tested inside an aggregate, and an
exclusion said after the bound."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.bind import _measured_share
from stateguard.verification.extract import clauses, comparisons
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, Session, session_with


def test_a_value_given_as_an_example_is_no_scope() -> None:
    question = (
        "Load the orders with short columns: region (the sales area, e.g. North) and price. How many orders?"
    )
    code = "import json\nprint(json.dumps({'n': len(orders)}))"
    session = Session()
    assert session.turn(question, code) == []
    assert not any("North" in r.describe() for r in session.verifier.last.requirements)
    assert clauses("the area, e.g. North, and price") == ["the area, e.g. North, and price"]


def test_a_category_test_the_code_sums_is_a_count_of_that_category() -> None:
    """`(big['region'] == 'North').sum()` counts the North rows: the count applies the category (a
    scope on it is met there), as a mean of such a test measures its share."""
    sem = inspect_code(
        "n_north = int((big['region'] == 'North').sum())\nshare = (big['region'] == 'North').mean()"
    )
    counted, shared = sem.selections
    assert _measured_share(counted, counted.conditions[0], "sum") and not _measured_share(
        counted, counted.conditions[0]
    )
    assert _measured_share(shared, shared.conditions[0]) and not _measured_share(
        shared, shared.conditions[0], "sum"
    )


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("an age band (`band`: 'under 40', '40-49' or '50 and over') kept", []),  # labels written out
        ("the women's rating is 2 or lower", [("<=", 2.0)]),  # an apostrophe quotes nothing
        ("as now defined (patients under 30 still left out)", [(">=", 30.0)]),  # the rows left out
        ("what share of the orders over 100 are North, and what share of the rest", []),  # a split
    ],
)
def test_bounds_in_labels_left_out_or_split_from_the_rest(
    clause: str, expected: list[tuple[str, float]]
) -> None:
    assert [(r.op, r.value) for r in comparisons(clause)] == expected


def test_a_bound_the_sql_tests_inside_an_aggregate_is_not_missing() -> None:
    question = "What is the average rating of the orders priced over 100?"
    code = (
        "import json\n_r = con.execute('SELECT AVG(rating) FILTER (WHERE price > 100) FROM o').fetchone()\n"
        "print(json.dumps({'avg_rating': round(_r[0], 2)}))"
    )
    session = session_with(DUCKDB_ORDERS)
    assert session.turn(question, code) == []
    assert any("against it in an expression" in n for n in session.verifier.last.notes)


def test_an_exclusion_said_after_the_bound_leaves_it_unbound_through_the_code() -> None:
    question = (
        "Orders under 50 are samples; exclude them from here on and keep the others in `paid`. "
        "How many orders remain?"
    )
    code = "import json\npaid = orders[orders['price'] >= 50]\nprint(json.dumps({'n': len(paid)}))"
    session = Session()
    assert session.turn(question, code) == []
    assert not any("bound through the code" in n for n in session.verifier.last.notes)
