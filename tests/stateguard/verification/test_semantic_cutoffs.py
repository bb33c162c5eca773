"""Semantic verification where the question's words name no column: a cut-off bound to the code's
one cut-off (also a fall stated as a magnitude, and a bare Series), a filter missing on a frame read
whole, a year bound on a date column, and the current version of a named table."""

from __future__ import annotations

import pytest

from tests.stateguard.verification.conftest import Session, session_with

GAIN = "How many orders gained more than 10%? Report `n_gain`."
FALL = "In how many orders did the value fall by more than 0.5? Report `n_drop`."


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("up = orders[orders.chg > 0.10]", False),
        ("up = orders[orders.chg > 0.05]", True),  # changed cut-off: no literal of the question left
        ("up = orders[orders.chg >= 0.3]", True),
    ],
)
def test_a_cut_off_whose_subject_names_no_column(code: str, found: bool) -> None:
    session = session_with("orders['chg'] = orders['rating'].pct_change()")
    findings = session.turn(GAIN, code + "\nresult = {'n_gain': len(up)}")
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["up"]
        assert "threshold" in findings[0].evidence and "kept_as_stated" in findings[0].evidence


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("down = orders[orders.chg < -0.5]", False),  # a fall by more than 0.5 is a change below -0.5
        ("down = orders[orders.chg < -0.2]", True),
        ("down = orders[orders.chg > -0.5]", True),  # reversed
    ],
)
def test_a_fall_stated_as_a_magnitude_is_the_negated_bound(code: str, found: bool) -> None:
    session = session_with("orders['chg'] = orders['rating'].diff()")
    assert bool(session.turn(FALL, code + "\nresult = {'n_drop': len(down)}")) is found


@pytest.mark.parametrize(("op", "found"), [(">", False), ("<", True)])
def test_a_comparison_on_a_bare_series(op: str, found: bool) -> None:
    session = session_with("avg = orders.groupby('region')['price'].mean()")
    question = "In how many regions is the regional average above 150? Report `n_regions`."
    code = f"big = avg[avg {op} 150]\nresult = {{'n_regions': len(big)}}"
    findings = session.turn(question, code)
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["big"] and "'kept_as_written'" in findings[0].evidence


def test_a_cut_off_is_not_bound_when_the_code_has_several() -> None:
    session = session_with("orders['chg'] = orders['rating'].pct_change()")
    code = "up = orders[(orders.chg > 0.05) & (orders.price > 20)]\nresult = {'n_gain': len(up)}"
    assert session.turn(GAIN, code) == []
    assert [r.describe() for r in session.verifier.last.unverified] == ["many orders gained > 10%"]


@pytest.mark.parametrize(
    ("code", "found"), [("big = orders[orders.gift_items >= 3]", False), ("big = orders", True)]
)
def test_a_filter_missing_on_a_frame_a_statistic_reads_whole(code: str, found: bool) -> None:
    """'with at least 3 gift items' names its column after the bound; a statistic over a frame
    that keeps rows outside it is a missing filter."""
    session = session_with("orders['gift_items'] = orders['order_id'] % 7")
    question = "Among orders with at least 3 gift items, what is the mean rating? Report `avg_rating`."
    findings = session.turn(question, code + "\nresult = {'avg_rating': float(big['rating'].mean())}")
    assert bool(findings) is found
    if found:
        assert "rows_breaking_requirement" in findings[0].evidence


def test_a_stated_value_the_code_looks_up_is_no_missing_filter() -> None:
    """`share[2001]`: the code picks the stated years by lookup; the frame it reads whole is no
    missing filter."""
    session = session_with("orders['year'] = 2000 + orders['order_id'] % 20")
    question = (
        "Build the yearly totals. What was the price share in 2001 and in 2017? Report `s2001`, `s2017`."
    )
    code = (
        "by_year = orders.pivot_table(index='year', columns='region', values='price', aggfunc='sum')\n"
        "by_year['total'] = by_year[['North', 'South']].sum(axis=1)\n"
        "share = 100 * by_year['North'] / by_year['total']\n"
        "result = {'s2001': float(share[2001]), 's2017': float(share[2017])}"
    )
    assert session.turn(question, code) == []


DATED = "orders['day'] = pd.date_range('2008-01-01', periods=len(orders), freq='D')"


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("early = orders[orders['day'] < '2009-01-01']", False),
        ("early = orders", True),
        ("early = orders[orders['day'] >= '2008-06-01']", True),  # a bound in the other direction only
    ],
)
def test_a_year_bound_on_a_date_column(code: str, found: bool) -> None:
    session = session_with(DATED)
    question = "What is the highest price before 2009? Report `top_price`."
    findings = session.turn(question, code + "\nresult = {'top_price': float(early['price'].max())}")
    assert bool(findings) is found
    if found:
        assert "year < 2009" in findings[0].evidence


@pytest.mark.parametrize(("source", "found"), [("orders_clean", False), ("orders", True)])
def test_the_current_version_of_a_named_frame(source: str, found: bool) -> None:
    session = session_with("orders_clean = orders[orders.price.notna()].copy()")
    question = "With the current `orders_clean`, what is the mean rating? Report `mean_rating`."
    findings = session.turn(question, f"m = {source}['rating'].mean()\nresult = {{'mean_rating': float(m)}}")
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["m"] and "'differs_from_each': True" in findings[0].evidence


def test_a_current_name_nothing_holds_decides_nothing() -> None:
    question = "With the current scope, what is the mean rating? Report `mean_rating`."
    assert Session().turn(question, "m = orders['rating'].mean()\nresult = {'mean_rating': float(m)}") == []


@pytest.mark.parametrize(("fn", "found"), [("mean", False), ("median", True)])
def test_a_statistic_scaled_by_a_constant_is_still_that_statistic(fn: str, found: bool) -> None:
    question = "What is the average price of toys orders in cents? Report `avg_cents`."
    code = f"toys = orders[orders.category == 'toys']\navg_cents = 100 * toys['price'].{fn}()\nresult = {{'avg_cents': avg_cents}}"
    findings = Session().turn(question, code)
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["avg_cents"] and "aggregation" in findings[0].evidence


def test_scaled_and_combined_aggregates() -> None:
    from stateguard.inspection.inspect import inspect_code

    def standalone(code: str) -> list[bool]:
        return [a.standalone for s in inspect_code(code).selections for a in s.aggregates]

    assert standalone("x = 100 * s.mean()") == [True]
    assert standalone("x = s.median() / 1000") == [True]
    assert standalone("x = 1 / s.mean()") == [False]
    assert standalone("x = s.mean() - t.sum()") == [False, False]


SALES = (
    "import duckdb\ncon = duckdb.connect()\n"
    "con.execute(\"CREATE TABLE sales AS SELECT DATE '2008-01-01' + INTERVAL (i) DAY AS day, i % 13 AS amount FROM range(800) t(i)\")"
)


@pytest.mark.parametrize(
    ("part", "group", "found"),
    [("year", "yr", False), ("month", "month(day)", True)],
)
def test_a_year_key_on_data_with_a_date_column(part: str, group: str, found: bool) -> None:
    """'for each year' over a table whose only time column is a date: the grouped query's rows
    against the distinct years of that date."""
    session = session_with(SALES)
    question = "For each year, what is the mean amount? Report `mean_by_year`."
    code = (
        f'_rows = con.execute("SELECT {part}(day) AS yr, AVG(amount) AS m FROM sales GROUP BY {group}").fetchall()\n'
        "result = {'mean_by_year': {r[0]: r[1] for r in _rows}}"
    )
    findings = session.turn(question, code)
    assert bool(findings) is found
    if found:
        assert (
            "'result_rows': 12" in findings[0].evidence
            and "'stated_key_combinations': 3" in findings[0].evidence
        )
