"""Rows named by a flag the data holds ("the pricey orders", a boolean column `pricey`): the turn's
rows must be the flagged ones. Checked on the frame or table the turn's result comes from, only when
the turn's code does not read the flag itself (how it used it is not modelled)."""

from __future__ import annotations

import pytest

from stateguard.verification.extract import current_rule_flags, extract, flag_scopes
from stateguard.verification.requirements import Kind
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, session_with

FLAGGED = "orders['pricey'] = orders['price'] > 150"
QUESTION = "Among the pricey orders, what is the mean rating and how many are there?"
CORRELATION = "Among the pricey orders, how closely does the rating track the price, and on how many orders?"
VOCAB = Vocabulary(
    tables={
        "orders": {
            "pricey": ColumnInfo(kind="text", values=["False", "True"]),
            "at_risk": ColumnInfo(kind="text", values=["False", "True"]),
            "rating": ColumnInfo(kind="num"),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "column"),
    [
        ("Among the pricey orders, what is the mean rating", "pricey"),
        ("What is the mean rating of those pricey orders", "pricey"),
        ("the mean rating of orders that count as pricey", "pricey"),
        ("the mean rating of the orders at risk", "at_risk"),
        ("How many orders are pricey", None),  # a predicate: the flag is what is counted
        ("the mean rating of the pricey orders and of the others", None),  # a contrast
        ("the mean rating of the orders the old rule called pricey", None),  # another version
        ("Call an order pricey when its price is above 150", None),  # the definition itself
    ],
)
def test_only_an_attributive_flag_names_the_rows(clause: str, column: str | None) -> None:
    found = flag_scopes(clause, VOCAB, ["orders"])
    assert [r.columns for r in found] == ([[column]] if column else [])
    if column:
        assert found[0].kind is Kind.SCOPE and found[0].values == ["True"]


def test_a_plural_noun_after_the_flag_names_the_rows_and_parses() -> None:
    reqs = extract("Among the pricey orders, what is the mean rating?", vocab=VOCAB, tables=["orders"])
    assert [(r.kind, r.columns) for r in reqs if r.kind is Kind.SCOPE] == [(Kind.SCOPE, ["pricey"])]


def test_the_flag_dropped_from_a_pandas_selection_is_found() -> None:
    session = session_with(FLAGGED)
    code = "pricey_orders = orders\nresult = {'mean_rating': float(pricey_orders['rating'].mean()), 'n': len(pricey_orders)}"
    findings = session.turn(QUESTION, code)
    assert len(findings) == 1
    assert (
        "the filter on the flag pricey is not applied, rows where it is false are used" in findings[0].reason
    )
    assert (
        "'rows_breaking_requirement': 204" in findings[0].evidence
    )  # the orders not above 150 or without a price


def test_an_old_rule_restated_inline_is_found_and_the_current_one_is_not() -> None:
    old = session_with(FLAGGED).turn(
        QUESTION,
        "pricey_orders = orders[orders['price'] > 100]\nresult = {'mean_rating': float(pricey_orders['rating'].mean())}",
    )
    assert len(old) == 1 and old[0].variables == ["pricey_orders"]
    current = session_with(FLAGGED).turn(
        QUESTION,
        "pricey_orders = orders[orders['price'] > 150]\nresult = {'mean_rating': float(pricey_orders['rating'].mean())}",
    )
    assert current == []


def test_code_that_reads_the_flag_itself_is_not_held_to_it() -> None:
    """A group by the flag, or a sum of it: the rows are not filtered, and that is right."""
    session = session_with(FLAGGED)
    code = "by = orders.groupby('pricey')['rating'].mean()\nresult = {'mean_rating': float(by[True])}"
    assert session.turn(QUESTION, code) == []
    assert not any(r.values == ["True"] for r in session.verifier.last.requirements)


def test_a_sql_boolean_column_is_a_flag_too() -> None:
    session = session_with(FLAGGED, DUCKDB_ORDERS)
    dropped = (
        "row = con.execute('SELECT AVG(rating), COUNT(*) FROM o').fetchone()\n"
        "result = {'mean_rating': row[0], 'n': row[1]}"
    )
    findings = session.turn(QUESTION, dropped)
    assert len(findings) == 1
    kept = (
        "row = con.execute('SELECT AVG(rating), COUNT(*) FROM o WHERE price > 150').fetchone()\n"
        "result = {'mean_rating': row[0], 'n': row[1]}"
    )
    assert session_with(FLAGGED, DUCKDB_ORDERS).turn(QUESTION, kept) == []


@pytest.mark.parametrize(
    ("frame", "found"),
    [
        ("orders[orders['price'] > 150]", False),  # the rule restated: only flagged rows
        ("orders", True),  # the whole frame under another name
    ],
)
def test_a_frame_behind_the_answer_that_never_tests_the_flag_holds_only_flagged_rows(
    frame: str, found: bool
) -> None:
    session = session_with(FLAGGED)
    code = (
        "import json\n"
        f"chosen = {frame}\n"
        "corr = float(chosen['rating'].corr(chosen['price']))\n"
        "result = {'corr': round(corr, 3), 'n': int(len(chosen))}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn(CORRELATION, code)
    assert bool(findings) is found
    if found:
        assert "flag_frames" in findings[0].evidence and "chosen" in findings[0].variables


def test_a_frame_check_needs_every_frame_behind_the_answer_to_hold_unflagged_rows() -> None:
    """One frame keeps the flagged rows by the rule restated, another is the whole table (a total
    the question may ask about too): no finding."""
    session = session_with(FLAGGED)
    code = (
        "import json\n"
        "chosen = orders[orders['price'] > 150]\n"
        "result = {'corr': round(float(chosen['rating'].corr(chosen['price'])), 3), 'n_all': int(len(orders))}\n"
        "print(json.dumps(result))"
    )
    assert session.turn(CORRELATION, code) == []


@pytest.mark.parametrize(
    ("clause", "column"),
    [
        ("Which orders are pricey under the restored rule but were not under the dropped one?", "pricey"),
        ("Which orders are pricey under the current rule but were not under the old one", "pricey"),
        # the rule named first is the withdrawn one, whatever the tense: its rows are unflagged now
        ("Which orders were pricey under the old rule but are not under the current one?", "!pricey"),
        ("Which orders are pricey under the restored rule?", None),  # no contrast
        ("Which orders were pricey under the 150 rule we dropped but are not under the new one?", "!pricey"),
        ("Which orders are pricey under the 150 rule we dropped but were not under the new one?", "!pricey"),
        ("Orders pricey only under the rule we withdrew, not under the 150 line", "!pricey"),
        (
            "Which orders were pricey under the 150 rule but are not under the new one?",
            None,
        ),  # no rule withdrawn
    ],
)
def test_rows_flagged_under_the_rule_in_force_but_not_under_another(clause: str, column: str | None) -> None:
    reqs = current_rule_flags(clause, VOCAB, ["orders"])
    assert [("!" if r.exclude else "") + r.columns[0] for r in reqs] == ([column] if column else [])


@pytest.mark.parametrize(
    ("mask", "found"), [("orders['pricey'] & ~_old", False), ("~orders['pricey'] & _old", True)]
)
def test_the_rows_flagged_now_but_not_before_are_checked_on_the_frame_behind_the_answer(
    mask: str, found: bool
) -> None:
    session = session_with(FLAGGED)
    code = (
        "import json\n"
        "_old = orders['rating'] > 3\n"
        f"new_only = orders[{mask}]\n"
        "result = {'n': int(len(new_only)), 'mean_rating': round(float(new_only['rating'].mean()), 3)}\n"
        "print(json.dumps(result))"
    )
    question = "Which orders are pricey under the restored rule but were not under the dropped rating rule? How many, and their mean rating?"
    assert bool(session.turn(question, code)) is found


@pytest.mark.parametrize(
    ("clause", "exclude"),
    [
        ("Which orders did the withdrawn rating rule call pricey that the 150 line does not?", True),
        ("Which orders did the dropped rule count as pricey but the current rule does not?", True),
        ("Which orders does the current rule call pricey that the old one did not?", None),  # not read
    ],
)
def test_rows_the_withdrawn_rule_flagged_that_the_rule_in_force_does_not(
    clause: str, exclude: bool | None
) -> None:
    reqs = current_rule_flags(clause, VOCAB, ["orders"])
    assert [r.exclude for r in reqs] == ([exclude] if exclude is not None else [])


@pytest.mark.parametrize(("mask", "found"), [("_old & ~orders['pricey']", False), ("_old", True)])
def test_the_rows_the_old_rule_flagged_alone_hold_no_flagged_row(mask: str, found: bool) -> None:
    session = session_with(FLAGGED)
    code = (
        "import json\n"
        "_old = orders['rating'] > 3\n"
        f"old_only = orders[{mask}]\n"
        "result = {'n': int(len(old_only)), 'mean_price': round(float(old_only['price'].mean()), 3)}\n"
        "print(json.dumps(result))"
    )
    question = "Which orders did the withdrawn rating rule call pricey that the 150 line does not? How many, and their mean price?"
    assert bool(session.turn(question, code)) is found


def test_the_withdrawn_rule_named_by_another_noun() -> None:
    clause = "Which orders did the dropped rating yardstick call pricey while the 150 line does not?"
    assert [(r.columns, r.exclude) for r in current_rule_flags(clause, VOCAB, ["orders"])] == [
        (["pricey"], True)
    ]
