"""Two units of time in one question: "summarise by calendar month ... the most orders per day on
average". The code that groups by month follows one stated grouping; "per day" is then a rate, and
two readings are no finding. A code grouped by neither still is one."""

from __future__ import annotations

import pytest

from tests.stateguard.verification.conftest import DUCKDB_ORDERS, session_with

DAYS = "orders['day'] = pd.Timestamp('2024-01-01') + pd.to_timedelta(orders['order_id'] % 90, unit='D')"
QUESTION = (
    "Summarise by calendar month in a table `monthly`: orders and the average price. "
    "Which month had the most orders per day on average?"
)


@pytest.mark.parametrize(
    ("key", "expr", "found"), [("month", "strftime(day, '%Y-%m')", False), ("region", "region", True)]
)
def test_a_second_unit_of_time_is_a_rate_when_the_code_follows_the_first(
    key: str, expr: str, found: bool
) -> None:
    session = session_with(DAYS, DUCKDB_ORDERS)
    code = (
        f'con.execute("CREATE OR REPLACE TABLE monthly AS SELECT {expr} AS {key}, COUNT(*) AS n, '
        f'AVG(price) AS avg_price FROM o GROUP BY {key}")\n'
        '_rows = con.execute("SELECT * FROM monthly").fetchall()\n'
        "result = {'busiest': max(_rows, key=lambda r: r[1])[0]}"
    )
    findings = session.turn(QUESTION, code)
    assert bool(findings) is found
    if found:
        assert "group_keys probe" in findings[0].evidence
    else:
        assert "one result per day" in [r.describe() for r in session.verifier.last.unverified]
