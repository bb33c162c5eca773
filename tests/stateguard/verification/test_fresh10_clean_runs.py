"""Three readings that made false repairs on clean runs of the fresh10 split (after its first
look), each as a general case: a ranking whose kept values are not its sort key, a multiple of
another quantity read as a bound, and a statistic computed only as a ranking key in SQL."""

from __future__ import annotations

import pytest

from stateguard.verification.bind import _sql_computes
from stateguard.verification.extract import extract
from stateguard.verification.requirements import Kind
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, Session, session_with


@pytest.mark.parametrize(
    ("question", "pick"),
    [
        # the ids of the ranked rows: not in price order
        (
            "Which three orders have the highest price (highest first)?",
            'orders.nlargest(3, "price")["order_id"]',
        ),
        # one record, its fields in column order
        ("Which order has the highest price?", 'orders.loc[orders["price"].idxmax()]'),
    ],
)
def test_a_ranking_the_code_makes_as_stated_is_not_read_from_values_that_are_not_its_key(
    question: str, pick: str
) -> None:
    code = f"import json\ntop = {pick}\nresult = {{'top': [str(v) for v in top]}}\nprint(json.dumps(result))"
    assert Session().turn(question + " Report `top`.", code) == []


def test_a_number_of_times_another_quantity_is_no_bound() -> None:
    text = "A year is high-growth when its rise is at least 1.5 times the average rise before it."
    assert [r for r in extract(text) if r.kind is Kind.COMPARISON] == []
    assert [
        r.value
        for r in extract("Count the years whose rise is at least 1.5 ppm.")
        if r.kind is Kind.COMPARISON
    ] == [1.5]


def test_sql_computes_finds_the_statistic_anywhere_in_the_query() -> None:
    sql = "SELECT region FROM o GROUP BY region ORDER BY AVG(o.rating) DESC"
    assert _sql_computes(sql, "mean", "rating") and not _sql_computes(sql, "median", "rating")
    assert not _sql_computes(sql, "mean", "price")


def test_a_stated_mean_computed_only_as_a_ranking_key_beside_a_median_is_no_finding() -> None:
    question = (
        "What is the median rating of all orders? Which region has the highest average rating? "
        "Report `median_rating` and `top_region`."
    )
    code = (
        "import json\n_m = con.execute('SELECT MEDIAN(rating) FROM o').fetchone()[0]\n"
        "_r = con.execute('SELECT region FROM o GROUP BY region ORDER BY AVG(rating) DESC').fetchall()\n"
        "result = {'median_rating': float(_m), 'top_region': _r[0][0]}\nprint(json.dumps(result))"
    )
    session = session_with(DUCKDB_ORDERS)
    assert session.turn(question, code) == []
    assert any("as well" in n for n in session.verifier.last.notes)
