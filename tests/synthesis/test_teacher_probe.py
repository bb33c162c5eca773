"""The teacher's stated-recompute probe, run for real in a workspace over a DuckDB connection.

Each case stores a table, states a query, runs the probe code with `run_probe` and reads the verdict
back: equal row multisets must say `same_rows`, whatever the row order, the integer widths or the
float summation order; a changed value, a lost or doubled row, or an extra column must not.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from stateguard.workspace import DictWorkspace
from synthesis.teacher.probe import PROBE_TAG, StatedVerdict, read_probe, stated_probe


def _verdict(setup_sql: str, table: str, stated: str) -> StatedVerdict:
    con = duckdb.connect()
    con.execute(setup_sql)
    ws = DictWorkspace({"con": con})
    probe = ws.run_probe(stated_probe(table, stated))
    assert probe.ok, probe.error
    verdict = read_probe(probe.stdout)
    assert verdict is not None, probe.stdout
    return verdict


BASE = """
CREATE TABLE src AS SELECT * FROM (VALUES
    (1, 'a', 0.1, DATE '2013-01-01'), (2, 'b', 0.2, NULL), (2, 'b', 0.2, NULL),
    (3, NULL, 'nan'::DOUBLE, DATE '2013-01-03')) v(k, name, x, day);
"""


def test_same_rows_in_another_order_and_widths():
    v = _verdict(
        BASE + "CREATE TABLE stored AS SELECT k::BIGINT AS k, name, x, day FROM src ORDER BY k DESC;",
        "stored",
        "SELECT k, name, x, day FROM src ORDER BY name NULLS FIRST",
    )
    assert (v.table, v.stored_rows, v.stated_rows, v.same_rows) == ("stored", 4, 4, True)


def test_float_summation_order_does_not_matter():
    setup = BASE + "CREATE TABLE stored AS SELECT 0.3::DOUBLE AS total, -0.0::DOUBLE AS zero;"
    v = _verdict(setup, "stored", "SELECT 0.1::DOUBLE + 0.2::DOUBLE AS total, 0.0::DOUBLE AS zero")
    assert v.same_rows is True
    # a decimal stored as a double compares by value too
    v = _verdict(
        BASE + "CREATE TABLE stored AS SELECT 1.5::DOUBLE AS x;", "stored", "SELECT 1.50::DECIMAL(4,2)"
    )
    assert v.same_rows is True


@pytest.mark.parametrize(
    "stored, stored_rows, stated_rows",
    [
        ("SELECT * FROM src WHERE k > 1", 3, 4),  # a row lost
        ("SELECT * FROM src UNION ALL SELECT * FROM src WHERE k = 1", 5, 4),  # a row doubled
        ("SELECT k, name, x + 1e-6 AS x, day FROM src", 4, 4),  # a value changed beyond the rounding
        ("SELECT k, name, x, day, 0 AS extra FROM src", 4, 4),  # an extra column
        # the same count, other multiplicities: (1, a) three times, (2, b) never
        (
            "SELECT * FROM src WHERE k <> 2 UNION ALL SELECT * FROM src WHERE k = 1 UNION ALL "
            "SELECT * FROM src WHERE k = 1",
            4,
            4,
        ),
    ],
)
def test_different_rows_are_reported(stored, stored_rows, stated_rows):
    v = _verdict(BASE + f"CREATE TABLE stored AS {stored};", "stored", "SELECT * FROM src")
    assert (v.stored_rows, v.stated_rows, v.same_rows) == (stored_rows, stated_rows, False)


def test_empty_tables_and_stated_sql_with_a_comment():
    setup = BASE + "CREATE TABLE stored AS SELECT * FROM src WHERE false;"
    v = _verdict(setup, "stored", "SELECT * FROM src WHERE k > 10 -- none left;\n")
    assert (v.stored_rows, v.stated_rows, v.same_rows) == (0, 0, True)


def test_probe_prints_no_values_and_rejects_bad_names():
    con = duckdb.connect()
    con.execute(BASE + "CREATE TABLE stored AS SELECT * FROM src;")
    out = DictWorkspace({"con": con}).run_probe(stated_probe("stored", "SELECT * FROM src")).stdout
    assert PROBE_TAG in out and "'a'" not in out and "2013" not in out
    with pytest.raises(ValueError, match="not a table name"):
        stated_probe("stored; DROP TABLE src", "SELECT 1")


def test_read_probe_ignores_other_lines():
    assert read_probe("hello\n{not json}\n") is None
    line = json.dumps(
        {"check": PROBE_TAG, "table": "t", "stored_rows": 2, "stated_rows": 3, "same_rows": False}
    )
    assert read_probe(f"noise\n{line}\n") == StatedVerdict(
        table="t", stored_rows=2, stated_rows=3, same_rows=False
    )


def test_text_is_not_a_number():
    v = _verdict(
        BASE + "CREATE TABLE stored AS SELECT k::VARCHAR AS k FROM src;", "stored", "SELECT k FROM src"
    )
    assert (v.stored_rows, v.same_rows) == (4, False)
    v = _verdict(
        BASE + "CREATE TABLE stored AS SELECT k::DOUBLE AS k FROM src;", "stored", "SELECT k FROM src"
    )
    assert v.same_rows is False  # 1.0 is not 1, as the rows a reader would see differ
