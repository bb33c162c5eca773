"""Which variables a stated row condition binds to when a question asks for several quantities:
a category share the code measures is not a site of the scope, and a bound the code counts in a
conditional aggregate qualifies that count only."""

from __future__ import annotations

import pytest

from tests.stateguard.verification.conftest import session_with

SHARE_AND_MEAN = (
    "Look only at the orders above 100. What percentage of them is North, and on average how high "
    "is the rating of the North ones? Report `north_pct` and `avg_rating`."
)


@pytest.mark.parametrize(
    ("rating", "found"),
    [
        ("float(big.loc[big['region'] == 'North', 'rating'].mean())", []),
        ("float(big['rating'].mean())", ["avg_rating"]),  # the filter dropped: the mean is the one to fix
    ],
)
def test_a_measured_share_is_not_a_site_of_the_scope(rating: str, found: list[str]) -> None:
    """'North' in the second clause scopes the mean, not the share the first clause asks for:
    the share is the test averaged (`(big['region'] == 'North').mean()`), which keeps every row on
    purpose."""
    session = session_with("big = orders[orders.price > 100]")
    code = (
        "north_pct = 100 * float((big['region'] == 'North').mean())\n"
        f"avg_rating = {rating}\n"
        "result = {'north_pct': north_pct, 'avg_rating': avg_rating}"
    )
    findings = session.turn(SHARE_AND_MEAN, code)
    assert [v for f in findings for v in f.variables] == found


COUNTED = (
    "Among the orders above 100, give their median rating and how many of them were well rated "
    "(rating more than 4). Report `n`, `median_rating` and `n_good`."
)
SQL = (
    "import duckdb\ncon = duckdb.connect()\n"
    "con.execute('CREATE TABLE sales AS SELECT * FROM orders WHERE price IS NOT NULL')"
)


@pytest.mark.parametrize(("op", "found"), [(">", False), ("<", False)])
def test_a_bound_counted_in_a_conditional_aggregate_qualifies_that_count(op: str, found: bool) -> None:
    """`SUM(CASE WHEN rating > 4 ...)` applies the bound to one count; the turn's rows (price above
    100) need not meet it, so no 'missing filter' is raised; the count, the code's one test against
    the stated 4, is seen to be written as stated (`bind_loose.py`). Written the other way (`rating < 4`) the count is re-run as stated, which needs a changed
    answer: in process (probes share the connection) that cannot be told, so no finding either."""
    session = session_with(SQL)
    code = (
        "_row = con.execute('SELECT COUNT(*), MEDIAN(rating), "
        f"SUM(CASE WHEN rating {op} 4 THEN 1 ELSE 0 END) FROM sales WHERE price > 100').fetchone()\n"
        "result = {'n': _row[0], 'median_rating': _row[1], 'n_good': int(_row[2])}"
    )
    findings = session.turn(COUNTED, code)
    assert bool(findings) is found
    assert not any(r.op == ">" and r.value == 4 for r in session.verifier.last.unverified)
    if op == ">":
        assert any("rating > 4" in n and "as stated" in n for n in session.verifier.last.notes)
    if op == "<":
        assert any("no finding without a changed answer" in n for n in session.verifier.last.notes)
