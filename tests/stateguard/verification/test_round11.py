"""The eleventh round: a named SQL window read as its definition, pandas comparison methods read as
comparisons, more comparatives and copulas, and a relative rule's multiple of a statistic against the
code's one multiplied comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_multiples
from stateguard.verification.extract import comparisons
from tests.stateguard.verification.conftest import sandboxed, session_with

WHOLE_SERIES = (
    "From now on an order is pricey when it costs more than the average price (taken over the whole series)."
)


@pytest.mark.parametrize(("window", "found"), [("()", False), ("(PARTITION BY category)", True)])
def test_a_named_sql_window_is_read_as_its_definition(tmp_path: Path, window: str, found: bool) -> None:
    session, ws = sandboxed(tmp_path)
    code = (
        "import json\n"
        'con.execute("CREATE OR REPLACE TABLE p AS SELECT *, price > AVG(price) OVER w AS pricey '
        f'FROM o WINDOW w AS {window}")\n'
        "n = con.execute('SELECT COUNT(*) FILTER (WHERE pricey) FROM p').fetchone()[0]\n"
        "print(json.dumps({'n_pricey': int(n)}))"
    )
    with ws:
        assert session.turn("How many orders?", "import json\nprint(json.dumps({'n': 1}))") == []
        findings = session.turn(
            "Flag `pricey` in a table `p` that way. How many orders are pricey?",
            code,
            own_context=WHOLE_SERIES,
        )
    assert bool(findings) is found
    if found:
        assert "whole series" in findings[0].reason


# -- pandas' comparison methods, and "strictly" ---------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "flagged"),
    [
        ("orders['price'] > 50", False),
        ("orders['price'].gt(50)", False),  # read as `> 50`: the rule is kept, no missing filter
        ("orders['price'].gt(60)", True),
        ("orders['price'].le(50)", True),  # the other side
    ],
)
def test_a_restored_rule_said_strictly_binds_through_a_method_comparison(expr: str, flagged: bool) -> None:
    session = session_with()
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    code = (
        f"import json\norders['pricey'] = {expr}\nkept = orders[orders['rating'] > 2]\n"
        "print(json.dumps({'n': int(kept['pricey'].sum())}))"
    )
    findings = session.turn(
        "Set `pricey` back to that rule. How many orders rated above 2 are pricey?",
        code,
        own_context="Go back to the plain line: pricey means a price strictly above 50.",
    )
    assert bool(findings) is flagged
    if flagged:
        assert "the question asks for: above 50" in findings[0].reason


def test_a_pandas_comparison_method_is_a_condition_and_a_flag() -> None:
    sem = inspect_code("air['smoggy'] = air['ozone'].gt(80)\nhot = air[air['temp'].ge(90)]")
    flag, hot = sem.selections[0], sem.selections[1]
    assert flag.flag == ("air", "smoggy", True)
    assert [(c.column, c.op, c.value) for c in flag.conditions] == [("ozone", ">", 80.0)]
    assert [(c.column, c.op, c.value) for c in hot.conditions] == [("temp", ">=", 90.0)]


# -- the multiple of a statistic a relative rule states --------------------------------------------


@pytest.mark.parametrize(
    ("rule", "multiple", "op"),
    [
        ("a day is smoggy when its ozone is at least twice the median ozone of its own month", 2.0, ">="),
        ("when its share reaches at least one and a half times the pooled share of its band", 1.5, ">="),
        (
            "at least 10 percent below the median mpg of its class, i.e. no more than 0.9 times that median",
            0.9,
            "<=",
        ),
        ("an event is notable when its count exceeds 1.25 times the average count of its zone", 1.25, ">"),
        ("a store is small when its sales are under half the median sales of its region", 0.5, "<"),
    ],
)
def test_a_rules_multiple_is_read_whole(rule: str, multiple: float, op: str) -> None:
    said = rule_multiples.stated(rule)
    assert said is not None and (said.multiple, said.op) == (multiple, op)


@pytest.mark.parametrize(
    "rule",
    [
        "at least twice the median ozone, or 1.5 times the mean ozone",  # two multiples: which one?
        "more than half of the days were dry",  # no statistic after it
        "The 1.5 times rule flagged too many; go back to 80 ppb.",  # a name, no comparator or statistic
    ],
)
def test_a_rule_without_one_multiple_of_a_statistic_reads_nothing(rule: str) -> None:
    assert rule_multiples.stated(rule) is None


RELATIVE = (
    "From now on an order is pricey when its price is at least 1.5 times the median price of its own region."
)


@pytest.mark.parametrize(
    ("test", "found"),
    [
        ("orders['price'] >= 1.5 * orders['reg_med']", False),
        ("orders['price'] >= orders['reg_med'] * 1.5", False),
        ("orders['price'] >= 1.2 * orders['reg_med']", True),  # another multiple
        ("orders['price'] <= 1.5 * orders['reg_med']", True),  # the other side
        ("orders['price'].ge(orders['reg_med'] * 2)", True),
    ],
)
def test_a_relative_rule_applied_with_another_multiple(test: str, found: bool) -> None:
    session = session_with()
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    code = (
        "import json\n"
        "orders['reg_med'] = orders.groupby('region')['price'].transform('median')\n"
        f"orders['pricey'] = {test}\n"
        "print(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )
    findings = session.turn(
        "Keep the region median as `reg_med`, redefine `pricey` that way. How many orders are pricey now?",
        code,
        own_context=RELATIVE,
    )
    assert bool(findings) is found
    if found:
        assert "price" in findings[0].reason


# -- more comparatives, and copulas that carry no content ------------------------------------------


@pytest.mark.parametrize(
    ("clause", "op", "value"),
    [
        ("on how many days was the wind no stronger than 6 mph", "<=", 6.0),
        ("days with wind stronger than 10 mph", ">", 10.0),
        ("laps slower than 90 seconds", "<", 90.0),
        ("tickets no cheaper than 20 dollars", ">=", 20.0),
    ],
)
def test_comparatives_of_strength_speed_and_price_are_bounds(clause: str, op: str, value: float) -> None:
    (req,) = comparisons(clause)
    assert (req.op, req.value) == (op, value)


def test_a_copula_binds_to_nothing_and_leaves_the_clause_whole() -> None:
    from stateguard.verification.extract import unbound_words
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(tables={"air": {"ozone": ColumnInfo(kind="num")}})
    assert unbound_words("days whose ozone stayed at or below 80", vocab, ["air"]) == []
    assert unbound_words("days whose ozone strictly exceeded 80", vocab, ["air"]) == []


# -- after fresh16's first look ----------------------------------------------------------------------


def test_rows_a_bound_names_and_the_next_sentence_drops_bind_no_bound() -> None:
    from stateguard.verification.extract import excluded_after

    question = (
        "Patients followed for less than 30 days tell us little. For everything after this, drop them: "
        "keep the rest as `cohort`. How many patients are in the cohort?"
    )
    assert excluded_after(question, "less than 30")
    # two sentences on, a pronoun no longer points back at the bound's rows
    far = "Orders under 30 are small. They are common. Drop them from the list."
    assert not excluded_after(far, "under 30")
    assert not excluded_after("Count the orders under 30. How many are there?", "under 30")


@pytest.mark.parametrize(
    ("clause", "bound"),
    [
        ("How many mothers saw a physician at least twice in the first trimester?", (">=", 2.0)),
        ("customers who ordered more than once", (">", 1.0)),
        ("a day whose ozone is at least twice the median ozone", None),  # a multiple of a statistic
        ("at least twice as many orders", None),
    ],
)
def test_once_and_twice_are_numbers_of_a_bound_unless_they_multiply(clause: str, bound: tuple | None) -> None:
    found = [(r.op, r.value) for r in comparisons(clause)]
    assert found == ([bound] if bound else [])
