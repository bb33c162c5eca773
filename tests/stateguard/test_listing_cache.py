"""Reused workspace listings (`DictWorkspace` + `stateguard.value_version`): a summary is reused only
while the value is provably what it was, and every kind of change is seen."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stateguard.sql import SQLParseError, parse_statements
from stateguard.tools import inspect_code_facts, inspect_python
from stateguard.value_version import render_context, version_token
from stateguard.workspace import DictWorkspace, summarize

SETUP = """
import numpy as np
import pandas as pd
df = pd.DataFrame({"a": [1, 2, 3, 4, 5, 6], "b": ["x", "y", "z", "u", "v", "w"], "c": [0.123456] * 6})
db = pd.DataFrame({
    "t": pd.to_datetime(["2013-01-01 05:00"] * 3),
    "n": pd.array([1, None, 3], dtype="Int32"),
    "w": pd.array([0.5, None, 1.5], dtype="Float64"),
    "ok": pd.array([True, None, False], dtype="boolean"),
    "d": pd.to_timedelta([1, 2, 3], unit="s"),
})
arr = np.arange(6, dtype="float64")
s = df["a"] * 2
label = "penguins"
pair = (1, "two")
items = [1, 2]
"""


def _by_name(ws: DictWorkspace) -> dict[str, object]:
    return {v.name: v for v in ws.list_variables()}


def _fresh(ws: DictWorkspace) -> dict[str, object]:
    """What summarize would say about every variable right now, without any cache."""
    return {k: summarize(k, v) for k, v in ws.namespace.items() if not k.startswith("__")}


def _workspace() -> DictWorkspace:
    ws = DictWorkspace()
    ws.run_cell(SETUP)
    return ws


def test_unchanged_values_reuse_their_summary_objects() -> None:
    ws = _workspace()
    first = _by_name(ws)
    ws.run_cell("unrelated = 1")
    second = _by_name(ws)
    for name in ("df", "db", "arr", "s", "label", "pair"):
        assert second[name] is first[name], name  # reused, not recomputed
    assert second["items"] is not first["items"]  # lists have no token: summarized again
    assert second == _fresh(ws)


@pytest.mark.parametrize(
    ("cell", "changed"),
    [
        ("df.loc[0, 'a'] = 99", "df"),  # a numpy block written in place
        ("df.loc[1, 'b'] = 'changed'", "df"),  # an Arrow string column: pandas swaps the array
        ("df['d'] = df['a'] + 1", "df"),  # a new column: new block
        ("df.columns = ['A', 'B', 'C']", "df"),  # new column labels
        ("df.index.name = 'row'", "df"),  # an index renamed in place
        ("del df['c']", "df"),  # a column deleted in place
        ("view = arr[2:]\nview[0] = -1.0", "arr"),  # written through an alias
        ("arr[5] = 7.0", "arr"),
        ("s.name = 'doubled'", "s"),
        ("s.iloc[0] = -5", "s"),
        ("label = 'gapminder'", "label"),
        ("db.loc[0, 't'] = pd.Timestamp('2020-01-01')", "db"),  # a timestamp column
        ("db.loc[1, 'n'] = 7", "db"),  # a NULL of a nullable column becomes a value
        ("db.loc[0, 'n'] = None", "db"),  # and a value a NULL
        ("db.loc[2, 'w'] = 9.5", "db"),
        ("db.loc[2, 'ok'] = True", "db"),
        ("db.loc[0, 'd'] = pd.Timedelta(seconds=30)", "db"),
        ("col = db['n'].array\ncol[2] = -3", "db"),  # through an alias of the array
        ("db['t'] = db['t'].dt.tz_localize('UTC')", "db"),  # same instants, another dtype
    ],
)
def test_a_changed_variable_gets_a_fresh_summary(cell: str, changed: str) -> None:
    ws = _workspace()
    before = _by_name(ws)
    ws.run_cell(cell)
    after = _by_name(ws)
    assert after == _fresh(ws)  # exactly what an uncached listing says
    assert after[changed] != before[changed]
    assert (
        after[changed].content_hash != before[changed].content_hash
        or after[changed].head != before[changed].head
    )


def test_display_options_invalidate_a_frame_head() -> None:
    ws = _workspace()
    before = _by_name(ws)["df"]
    ws.run_cell("pd.set_option('display.precision', 2)")
    try:
        after = _by_name(ws)["df"]
        assert after == summarize("df", ws.namespace["df"])
        assert after.head != before.head  # 0.12 instead of 0.123456
    finally:
        pd.reset_option("display.precision")


def test_restore_and_delete_drop_cached_summaries() -> None:
    ws = _workspace()
    ws.snapshot("c1")
    _by_name(ws)
    ws.run_cell("df.loc[0, 'a'] = 42")
    ws.restore("c1")
    assert _by_name(ws)["df"] == summarize("df", ws.namespace["df"])
    assert "42" not in _by_name(ws)["df"].head
    ws.delete_variables(["df"])
    assert "df" not in _by_name(ws)


def test_tokens_refuse_what_cannot_be_vouched_for() -> None:
    ctx = render_context()
    assert version_token([1, 2], ctx) is None
    assert version_token({"a": 1}, ctx) is None
    assert version_token((1, [2]), ctx) is None  # a tuple holding a list
    assert version_token(np.array([[1], "x"], dtype=object), ctx) is None  # a list in a cell
    assert version_token(pd.Series(pd.Categorical(["a", "b"])), ctx) is None
    assert version_token(pd.DataFrame({"t": pd.date_range("2020", periods=2)}).set_index("t"), ctx) is None
    token = version_token(np.array(["a", None, 3], dtype=object), ctx)
    assert token is not None and len(token[1]) == 1  # the shallow copy that pins the elements


def test_parsed_sql_is_remembered_but_every_caller_gets_its_own_tree() -> None:
    sql = "SELECT a FROM t WHERE b > 1"
    first = parse_statements(sql)
    first[0].set("where", None)  # a caller edits its tree
    second = parse_statements(sql)
    assert second[0].sql() == "SELECT a FROM t WHERE b > 1"
    for _ in range(2):  # the error is remembered too, with the same message
        with pytest.raises(SQLParseError, match="cannot parse SQL as duckdb"):
            parse_statements("SELECT FROM WHERE (")


def test_inspect_python_answers_are_copies_of_one_analysis() -> None:
    code = "x = con.execute('SELECT AVG(v) FROM t WHERE k >= 3').df()"
    first = inspect_python(code)
    first["reads"].append("mutated")
    first["semantics"].clear()
    assert inspect_python(code) == inspect_code_facts(code)
    assert "mutated" not in inspect_python(code)["reads"]
