"""A rule stated for later turns ("from now on an order is pricey when ...") that the code stores as
a flag column of a SQL table (`price > 150 AS pricey`) rather than as a filter: the flag is what is
checked, never the table's rows (a flag marks rows, it keeps all of them)."""

from __future__ import annotations

import pytest

from tests.stateguard.verification.conftest import DUCKDB_ORDERS, Session, session_with

RULE = "Prices rose. From now on an order is pricey when its price is above 150."
QUESTION = "Redefine `pricey` in `flagged` with the new cut. How many pricey orders are there now?"


def _session() -> Session:
    session = session_with(DUCKDB_ORDERS)
    session.turn("How many orders are there?", "result = {'n': len(orders)}")  # turn 1 states no rule
    return session


def _code(flag: str) -> str:
    return (
        f'con.execute("CREATE OR REPLACE TABLE flagged AS SELECT *, {flag} FROM o")\n'
        'n = con.execute("SELECT COUNT(*) FROM flagged WHERE pricey").fetchone()[0]\n'
        "result = {'n_pricey': n}"
    )


@pytest.mark.parametrize(
    ("flag", "status"),
    [
        ("price > 150 AS pricey", None),  # the rule as stated: no finding
        ("(price > 150) AS pricey", None),
        ("price > 100 AS pricey", "threshold"),  # the old cut-off
        ("price < 150 AS pricey", "differs"),  # the wrong side
    ],
)
def test_a_rule_stored_as_a_flag_is_checked_on_the_flag(flag: str, status: str | None) -> None:
    session = _session()
    findings = session.turn(QUESTION, _code(flag), own_context=RULE)
    if status is None:
        assert findings == []
        assert any("stores it as the flag pricey" in n for n in session.verifier.last.notes)
    else:
        assert len(findings) == 1 and findings[0].variables == ["flagged"]
        assert f"code {status}; flagged_rows probe" in findings[0].evidence
        assert "'flagged': " in findings[0].evidence


def test_two_flags_on_the_stated_column_are_told_apart_by_the_rules_name() -> None:
    """The words bind neither flag (two test the stated column); the rule's sentence names `pricey`
    ("an order is pricey when"), so the bound is that flag's comparison (`bind_loose`), as stated."""
    session = _session()
    code = _code("price > 150 AS pricey, price > 250 AS luxury")
    assert session.turn(QUESTION, code, own_context=RULE) == []
    assert session.verifier.last.unverified == []
    assert any("the flag's comparison `price > 150`, as stated" in n for n in session.verifier.last.notes)


def test_a_rollback_that_rebuilds_the_flag_is_not_held_to_the_carried_definition() -> None:
    """Turn 2 defines 'pricey' (above 150) through a flag; turn 3's context rolls the cut back to 100
    without naming the term, and rebuilds the flag: the carried definition is not checked on it."""
    session = _session()
    assert session.turn(QUESTION, _code("price > 150 AS pricey"), own_context=RULE) == []
    back = "Prices fell again. Drop the new cut and bring the old one back."
    findings = session.turn(
        "Restore the 100 flag in `flagged`. How many pricey orders are there?",
        _code("price > 100 AS pricey"),
        own_context=back,
    )
    assert findings == []
