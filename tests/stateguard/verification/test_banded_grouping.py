"""A grouping "by age: young under 30, ..." that the code makes by bands of the stated column
(`CASE WHEN age < 30 ... END AS age_group`) is that grouping, not a grouping by every age."""

from __future__ import annotations

import pytest

from stateguard.verification import sql_edit
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, session_with

QUESTION = (
    "Split the orders by rating: low under 2, mid from 2 to under 4, high at 4 or more. How many per band?"
)


@pytest.mark.parametrize(
    ("key", "found"),
    [
        ("CASE WHEN rating < 2 THEN 'low' WHEN rating < 4 THEN 'mid' ELSE 'high' END", False),
        ("CASE WHEN price < 100 THEN 'low' ELSE 'high' END", True),  # bands of another column
    ],
)
def test_bands_of_the_stated_column_are_its_grouping(key: str, found: bool) -> None:
    session = session_with(DUCKDB_ORDERS)
    code = (
        "import json\n"
        f'_rows = con.execute("SELECT {key} AS band, COUNT(*) FROM o GROUP BY band").fetchall()\n'
        "result = {'per_band': {r[0]: r[1] for r in _rows}}\nprint(json.dumps(result))"
    )
    assert bool(session.turn(QUESTION, code)) is found


def test_alias_columns() -> None:
    sql = "SELECT CASE WHEN age < 30 THEN 'y' ELSE 'o' END AS age_group, COUNT(*) FROM v GROUP BY age_group"
    assert sql_edit.alias_columns(sql, "age_group") == {"age"}
    assert sql_edit.alias_columns("SELECT age AS g FROM v GROUP BY g", "g") is None
