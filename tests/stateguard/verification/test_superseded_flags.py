"""A flag the run redefined, written out again in its replaced form (`superseded.py`): found from
the run's own committed code, bound to the question only by the flag's name, and a finding only
when the rows differ and the turn's answer changes once it reads the flag."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.superseded import KIND, FlagHistory, names_term
from tests.stateguard.verification.conftest import Session

DEFINE = "Call an order pricey when its price is at least 100. How many orders are pricey? Report `n_pricey`."
REDEFINE = "Pricey now means a price of at least 150. How many orders are pricey now? Report `n_pricey`."
USE = "Among the pricey orders as the term now stands, what is the mean rating? Report `mean_rating`."


def _count(rule: str) -> str:
    return (
        f"import json\norders['pricey'] = {rule}\n"
        "result = {'n_pricey': int(orders['pricey'].sum())}\nprint(json.dumps(result))"
    )


def _mean(selection: str) -> str:
    return (
        f"import json\nsel = {selection}\n"
        "result = {'mean_rating': round(float(sel['rating'].mean()), 3)}\nprint(json.dumps(result))"
    )


def _session() -> Session:
    session = Session()
    assert session.turn(DEFINE, _count("orders['price'] >= 100")) == []
    assert session.turn(REDEFINE, _count("orders['price'] >= 150")) == []
    return session


def test_the_replaced_rule_written_out_is_a_finding_and_reading_the_flag_is_not() -> None:
    session = _session()
    findings = session.turn(USE, _mean('orders[orders["price"] >= 100]'))
    assert len(findings) == 1
    assert findings[0].variables == ["sel"]
    assert KIND in findings[0].evidence and "'rows_where_the_replaced_rule_differs'" in findings[0].evidence
    assert "replaced" in findings[0].reason and "100" not in findings[0].reason
    assert session.turn(USE, _mean('orders[orders["pricey"]]')) == []


def test_a_rollback_makes_the_middle_version_the_replaced_one() -> None:
    session = _session()
    assert (
        session.turn("Restore the first pricey rule. How many are pricey?", _count("orders['price'] >= 100"))
        == []
    )
    assert session.turn(USE, _mean("orders[orders['price'] >= 100]")) == []  # the rule in force again
    findings = session.turn(USE, _mean("orders[orders['price'] >= 150]"))
    # the words' definition check finds the cut-off too; the code's own history names the replaced rule
    assert [f.variables for f in findings if KIND in f.evidence] == [["sel"]]


@pytest.mark.parametrize(
    "question",
    [
        "Among the orders the original pricey rule kept, what is the mean rating? Report `mean_rating`.",
        "Among the orders priced at 100 or more, what is the mean rating? Report `mean_rating`.",
        "What is the mean rating of all orders? Report `mean_rating`.",  # the flag is not named
    ],
)
def test_a_question_about_the_replaced_rule_or_not_about_the_flag_is_left_alone(question: str) -> None:
    session = _session()
    assert session.turn(question, _mean("orders[orders['price'] >= 100]")) == []


def test_code_that_sets_both_versions_side_by_side_is_left_alone() -> None:
    session = _session()
    code = _mean("orders[(orders['price'] >= 100) & ~orders['pricey']]")
    assert session.turn(USE, code) == []


def test_a_replaced_rule_that_gives_the_same_answer_is_no_finding() -> None:
    """The highest price among orders of 100 or more is the highest among those of 150 or more."""
    session = _session()
    question = "What is the highest price of a pricey order as now defined? Report `max_price`."
    code = (
        "import json\nsel = orders[orders['price'] >= 100]\n"
        "result = {'max_price': float(sel['price'].max())}\nprint(json.dumps(result))"
    )
    assert session.turn(question, code) == []
    assert any("reports the same answer" in n for n in session.verifier.last.notes)


def test_sql_flags_and_a_redefinition_that_is_not_a_comparison() -> None:
    history = FlagHistory()
    first = "con.execute('CREATE OR REPLACE TABLE quarters AS SELECT *, infl >= 6 AS high_infl FROM macro')"
    second = (
        "con.execute('CREATE OR REPLACE TABLE quarters AS SELECT *, "
        "COALESCE(cpi >= 1.05 * LAG(cpi, 4) OVER (ORDER BY year), false) AS high_infl FROM macro')"
    )
    history.record(2, first, inspect_code(first))
    history.record(7, second, inspect_code(second))
    code = "_m = con.execute('SELECT MEDIAN(tbilrate) FROM quarters WHERE infl >= 6').fetchone()[0]"
    found = history.restated(
        "What was the median T-bill rate of the high-inflation quarters?", code, inspect_code(code)
    )
    assert [(f.before, f.after, f.old.turn, f.current.turn, f.current.holder) for f in found] == [
        ("infl >= 6", "high_infl", 2, 7, "quarters")
    ]
    probe = found[0].probe("con")
    assert probe is not None and "FROM quarters" in probe and "high_infl" in probe
    assert found[0].probe(None) is None  # no connection to test the rows through
    dropped = history.restated(
        "Which quarters did the dropped inflation rule call high-inflation?", code, inspect_code(code)
    )
    assert dropped == []


def test_a_qualified_sql_column_is_replaced_with_the_same_alias() -> None:
    history = FlagHistory()
    for turn, rule in ((2, "high - low >= 0.6"), (7, "(high - low) / open >= 0.02")):
        code = f"con.execute('CREATE OR REPLACE TABLE days AS SELECT *, {rule} AS wide FROM quotes')"
        history.record(turn, code, inspect_code(code))
    code = "r = con.execute('SELECT COUNT(*) FROM days d WHERE d.high - d.low >= 0.6').fetchone()"
    found = history.restated("How many wide days are there now?", code, inspect_code(code))
    assert [(f.before, f.after) for f in found] == [("d.high - d.low >= 0.6", "d.wide")]


@pytest.mark.parametrize(
    ("flag", "question", "term"),
    [
        ("high_infl", "the share of high-inflation quarters", "high-inflation"),
        ("at_risk", "how many at-risk patients", "risk"),
        ("poor_vis", "the poor-visibility hours", "poor-visibility"),
        ("long_haul", "the long flights that haul cargo", None),  # parts too far apart or out of order
        ("fit", "the profit per member", None),
    ],
)
def test_the_flag_binds_to_the_question_only_by_its_whole_name(
    flag: str, question: str, term: str | None
) -> None:
    assert names_term(flag, question) == term


@pytest.mark.parametrize(
    ("assigned", "found"),
    [
        ("orders['price'] >= 100", True),
        ("lambda d: d['price'] >= 100", True),
        ("orders['pricey']", False),
    ],
)
def test_the_replaced_rule_put_in_the_flags_place_by_assign(assigned: str, found: bool) -> None:
    """`orders.assign(pricey=orders['price'] >= 100).groupby(...)`: the statement then reads `pricey`,
    the replaced rule, although it never writes the column back."""
    session = _session()
    code = (
        "import json\n"
        f"by_region = orders.assign(pricey={assigned}).groupby('region').agg(n_pricey=('pricey', 'sum'))\n"
        "result = {'north': int(by_region.loc['North', 'n_pricey'])}\nprint(json.dumps(result))"
    )
    findings = session.turn("Redo the regional count with pricey orders as the term now stands.", code)
    assert bool([f for f in findings if KIND in f.evidence]) is found
