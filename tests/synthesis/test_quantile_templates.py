"""The cut-off draws fill `{q}` into SQL that already holds data values: a value with braces in it
(a category like `{north}` in a source table) must neither break the draw nor be altered."""

from __future__ import annotations

import duckdb

from synthesis.threads import quantile

SQL = "SELECT quantile_cont(x, {q}) FROM t WHERE c = '{north} a}'"


def _con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES ('{north} a}', 10.0), ('{north} a}', 30.0), ('b', 99.0)) v(c, x)"
    )
    return con


def test_quantile_keeps_braces_in_values():
    # both thread builders draw through the one `quantile`: source families unrounded, the
    # hand-written ones rounded to their step
    assert quantile(_con(), SQL, 0.5) == 20.0
    assert quantile(_con(), SQL, 0.25, 5) == 15.0
