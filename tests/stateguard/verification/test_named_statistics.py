"""A value the code names one statistic and computes as another (`named_stats.py`): bound when the
question asks for the named statistic, a finding only when the answer changes."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.named_stats import named_statistics
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, Session, session_with

QUESTION = "What is the typical (median) score the shoppers gave, and how many orders are there?"


@pytest.mark.parametrize(("call", "found"), [("median", False), ("mean", True)])
def test_a_field_named_median_computed_as_a_mean_is_a_finding(call: str, found: bool) -> None:
    code = (
        "import json\n"
        f'result = {{"n": len(orders), "median_rating": orders["rating"].{call}()}}\n'
        "print(json.dumps(result))"
    )
    findings = Session().turn(QUESTION, code)
    assert bool(findings) is found
    if found:
        assert "median" in findings[0].reason and findings[0].variables == ["result"]


def test_the_named_statistic_must_be_asked_and_a_name_without_one_binds_nothing() -> None:
    sem = inspect_code(
        'a = {"median_rating": orders["rating"].mean(), "spread": orders["price"].median()}\n'
        'b = orders.groupby("region").agg(mean_price=("price", "median"))'
    )
    asked = named_statistics("What are the typical (median) rating and the average price?", sem)
    assert sorted((r.function, r.fields[0]) for r, _, _ in asked) == [
        ("mean", "mean_price"),
        ("median", "median_rating"),
    ]
    assert named_statistics("How many orders are there?", sem) == []


def test_two_fields_holding_the_same_call_are_told_apart_by_their_names() -> None:
    sem = inspect_code('r = {"mean_r": o["rating"].mean(), "median_r": o["rating"].mean()}')
    assert [(r.function, r.fields) for r, _, _ in named_statistics("the mean and the median", sem)] == [
        ("median", ["median_r"])
    ]


def test_a_sql_alias_naming_another_statistic_is_re_run_as_named() -> None:
    session = session_with(DUCKDB_ORDERS)
    code = (
        "import json\n"
        "_r = con.execute('SELECT AVG(rating) AS median_rating FROM o').fetchone()\n"
        'result = {"median_rating": _r[0]}\n'
        "print(json.dumps(result))"
    )
    assert session.turn(QUESTION, code) == []  # in process the SQL re-run cannot be told: no finding
    plan_notes = " ".join(session.verifier.last.notes)
    assert "names it `median_rating` but computes mean" in plan_notes
    assert "no finding without a changed answer" in plan_notes


def test_a_value_read_from_a_fetched_row_is_named_by_its_field() -> None:
    """`_row = con.execute("SELECT COUNT(*), AVG(price), AVG(price) ...").fetchone()`, then
    `"median_price": _row[2]`: the row's third value is named median."""
    sem = inspect_code(
        "_row = con.execute('SELECT COUNT(*), AVG(price), AVG(price) FROM o').fetchone()\n"
        'result = {"n": _row[0], "mean_price": _row[1], "median_price": _row[2]}'
    )
    asked = named_statistics("How many orders, and the mean and the median price?", sem)
    assert [(r.function, r.fields, agg.position) for r, _, agg in asked] == [("median", ["median_price"], 2)]


def test_a_total_computed_as_a_mean_is_named_by_its_field() -> None:
    sem = inspect_code(
        "_total = con.execute('SELECT AVG(price) FROM o WHERE rating > 3').fetchone()[0]\n"
        'result = {"total_price_rated": _total}'
    )
    asked = named_statistics("What is the total price of the orders rated above 3?", sem)
    assert [(r.function, r.fields) for r, _, _ in asked] == [("sum", ["total_price_rated"])]
    # a name of two statistics ("mean_total") states none
    sem = inspect_code(
        "_t = con.execute('SELECT AVG(price) FROM o').fetchone()[0]\nresult = {'mean_total_price': _t}"
    )
    assert named_statistics("the mean total price", sem) == []
