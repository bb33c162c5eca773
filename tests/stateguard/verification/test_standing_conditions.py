"""Scopes set for the rest of the analysis that the code keeps with a condition (SQL) instead of a
table of their own, and the turn that sets a scope in a frame of its own and then reads around it
(`standing.inline_scopes`, `standing.read_without`, `standing.own_edit`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.verification import standing
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, SETUP, Session

SET = (
    "Ratings under 2 come from a broken survey form: leave those orders out for the rest of the "
    "analysis. How many orders are left, and what is their average price?"
)


def _set_code(second_where: str) -> str:
    return (
        "import json\n"
        "_n = con.execute('SELECT COUNT(*) FROM o WHERE rating >= 2').fetchone()[0]\n"
        f'_p = con.execute("SELECT AVG(price) FROM o {second_where}").fetchone()[0]\n'
        "print(json.dumps({'n_left': int(_n), 'mean_price': round(float(_p), 2)}))"
    )


def test_the_instruction_anchors_one_condition_the_code_applies() -> None:
    sem = inspect_code(_set_code("WHERE rating >= 2"))
    (scope,) = standing.inline_scopes(3, SET, sem)
    assert (scope.parent, scope.condition, scope.columns, scope.child) == (
        "o",
        "rating >= 2",
        ("rating",),
        "",
    )
    # no standing words, or two conditions the words anchor equally often: no scope
    assert standing.inline_scopes(3, SET.replace("for the rest of the analysis", ""), sem) == []
    two = inspect_code(_set_code("WHERE price > 2"))
    assert standing.inline_scopes(3, SET, two) == []


def test_a_decade_anchors_the_bound_after_it() -> None:
    sem = inspect_code(
        "a = con.execute('SELECT COUNT(*) FROM m WHERE year >= 1960').fetchone()[0]\n"
        "b = con.execute('SELECT AVG(t) FROM m WHERE year >= 1960').fetchone()[0]"
    )
    (scope,) = standing.inline_scopes(1, "The 1950s are sparse; leave them out from now on. How many?", sem)
    assert scope.condition == "year >= 1960"


def test_a_statement_behind_the_answer_without_the_condition_is_read_around_it() -> None:
    scope = standing.Scope(2, "o", "", True, "rating >= 2", ("rating",))
    code = _set_code("WHERE region = 'North'")
    found = standing.read_without(scope, "What is the average price in the North?", code, inspect_code(code))
    assert [stated for _, stated in found] == [
        "SELECT AVG(price) FROM o WHERE region = 'North' AND rating >= 2"
    ]
    # a statement that tests the scope's column itself, a question that brings rows back, a turn
    # that rebuilds the table: nothing
    tested = _set_code("WHERE rating < 2")
    assert standing.read_without(scope, "And the rest?", tested, inspect_code(tested)) == []
    assert (
        standing.read_without(scope, "Including the broken forms, the mean?", code, inspect_code(code)) == []
    )
    rebuilt = "con.execute('CREATE OR REPLACE TABLE o AS SELECT * FROM o')\n" + code
    assert standing.read_without(scope, "Mean?", rebuilt, inspect_code(rebuilt)) == []


def _sandboxed(tmp_path: Path) -> tuple[Session, SandboxWorkspace]:
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    ws = SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits)
    session = Session()
    session.ws = ws  # type: ignore[assignment]
    assert ws.run_cell(SETUP).ok and ws.run_cell(DUCKDB_ORDERS).ok
    return session, ws


@pytest.mark.parametrize(("where", "found"), [("WHERE rating >= 2", False), ("", True)])
def test_the_turn_that_sets_the_scope_and_drops_it_in_one_statement(
    tmp_path: Path, where: str, found: bool
) -> None:
    session, ws = _sandboxed(tmp_path)
    with ws:
        findings = session.turn(SET, _set_code(where))
    assert bool(findings) is found
    if found:
        assert "rating >= 2" in findings[0].reason and "rows_as_written" in findings[0].evidence


@pytest.mark.parametrize(
    ("where", "found"), [("WHERE region = 'North' AND rating >= 2", False), ("WHERE region = 'North'", True)]
)
def test_a_later_turn_that_reads_the_table_without_the_scope(tmp_path: Path, where: str, found: bool) -> None:
    session, ws = _sandboxed(tmp_path)
    with ws:
        assert session.turn(SET, _set_code("WHERE rating >= 2")) == []
        code = (
            "import json\n"
            f'_p = con.execute("SELECT AVG(price) FROM o {where}").fetchone()[0]\n'
            "print(json.dumps({'mean_north': round(float(_p), 2)}))"
        )
        findings = session.turn("What is the average price in the North region?", code)
    assert bool(findings) is found


OWN = (
    "Garden orders are sold by a partner: leave them out from here on and keep the others in `shop`. "
    "How many orders remain, and what is their median price?"
)


@pytest.mark.parametrize(("frame", "found"), [("shop", False), ("orders", True)])
def test_the_turn_that_keeps_the_scope_in_a_frame_and_reads_the_parent_again(frame: str, found: bool) -> None:
    code = (
        "import json\n"
        "shop = orders[orders['category'] != 'garden']\n"
        f"result = {{'n': len(shop), 'median_price': round(float({frame}['price'].median()), 2)}}\n"
        "print(json.dumps(result))"
    )
    findings = Session().turn(OWN, code)
    assert bool(findings) is found
    if found:
        assert "this turn filtered out" in findings[0].reason


def test_a_line_that_tests_the_scope_column_on_the_parent_is_left_alone() -> None:
    """ "How many were left out?" counts the parent's garden rows: that line reads the parent on purpose."""
    scope = standing.Scope(None, "orders", "shop", False, columns=("category",))
    cell = (
        "shop = orders[orders['category'] != 'garden']\n"
        "n_out = int((orders['category'] == 'garden').sum())\n"
        "m = orders['price'].median()\n"
    )
    assert standing.own_edit(scope, [cell]) == (
        "m = orders['price'].median()\n",
        "m = shop['price'].median()\n",
    )
    assert standing.own_edit(scope, [cell.replace("m = orders", "m = shop")]) is None


OWN_SQL = (
    "Garden orders are sold by a partner: set them aside from here on and keep the rest of `o` as `shop`. "
    "How many orders remain, and how many of them cost more than 100?"
)


@pytest.mark.parametrize(("table", "found"), [("shop", False), ("o", True)])
def test_the_turn_that_keeps_the_scope_in_a_table_and_reads_the_parent_again(
    tmp_path: Path, table: str, found: bool
) -> None:
    """`CREATE TABLE shop AS SELECT * FROM o WHERE ...`, then a subquery that counts on `o`."""
    session, ws = _sandboxed(tmp_path)
    code = (
        "import json\n"
        "con.execute(\"CREATE OR REPLACE TABLE shop AS SELECT * FROM o WHERE category <> 'garden'\")\n"
        f'_row = con.execute("SELECT COUNT(*), (SELECT COUNT(*) FROM {table} WHERE price > 100) FROM shop").fetchone()\n'
        "print(json.dumps({'n_shop': _row[0], 'n_over_100': _row[1]}))"
    )
    with ws:
        findings = session.turn(OWN_SQL, code)
    assert bool(findings) is found
    if found:
        assert "this turn filtered out" in findings[0].reason


def test_a_sql_line_that_tests_the_scope_column_on_the_parent_is_left_alone() -> None:
    scope = standing.Scope(None, "o", "shop", True, columns=("category",))
    cell = (
        'con.execute("CREATE TABLE shop AS\n'
        "SELECT * FROM o WHERE category <> 'garden'\")\n"
        "_out = con.execute(\"SELECT COUNT(*) FROM o WHERE category = 'garden'\").fetchone()[0]\n"
        "_m = con.execute('SELECT MEDIAN(price) FROM o').fetchone()[0]\n"
    )
    assert standing.own_edit(scope, [cell]) == (
        "_m = con.execute('SELECT MEDIAN(price) FROM o').fetchone()[0]\n",
        "_m = con.execute('SELECT MEDIAN(price) FROM shop').fetchone()[0]\n",
    )
    assert standing.own_edit(scope, [cell.replace("FROM o').", "FROM shop').")]) is None


@pytest.mark.parametrize(
    "words",
    [
        "leave garden orders out from now until we finish",
        "work with the other orders in every question that follows",
        "for the remainder of the analysis keep them out",
        "from here onwards drop them",
    ],
)
def test_more_words_set_a_scope_for_the_rest_of_the_analysis(words: str) -> None:
    assert standing._STANDING.search(words)
    assert not standing._STANDING.search("leave garden orders out for this question")
