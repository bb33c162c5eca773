"""Stated bounds whose words name no column, bound through the code (`bind_loose.py`): to the flag
the sentence defines, or to the code's one test against the stated number. A finding needs the
answer to change when the code is written as stated."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.bind_loose import _by_number, _flags, code_tests
from stateguard.verification.extract import comparisons
from stateguard.verification.requirements import Kind
from tests.stateguard.verification.conftest import WITHOUT_UNSTATED, Session

DEFINE = (
    "Call an order pricey when the shopper pays 200 or more, and add that as a boolean column "
    "`pricey` to `orders`. How many pricey orders are there?"
)


def _flag_turn(test: str) -> str:
    return (
        "import json\n"
        f'orders["pricey"] = orders["price"] {test}\n'
        'result = {"n_pricey": int(orders["pricey"].sum())}\n'
        "print(json.dumps(result))"
    )


@pytest.mark.parametrize(("test", "found"), [(">= 200", False), ("<= 200", True), ("> 250", True)])
def test_a_definition_whose_words_name_no_column_is_bound_to_the_flag_it_defines(
    test: str, found: bool
) -> None:
    session = Session()
    findings = session.turn(DEFINE, _flag_turn(test))
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["orders"]
        assert "price >= 200" in findings[0].evidence
    notes = " ".join(session.verifier.last.notes)
    assert "price >= 200" in notes and ("as stated" in notes) is not found


@pytest.mark.parametrize(
    "question",
    [
        # a second bound in the condition: which one the flag is cannot be told
        DEFINE.replace("200 or more,", "200 or more and rates it at least 2,"),
        # the frame points at another version of the rule
        "The withdrawn rule called an order pricey when the shopper paid 200 or more. How many "
        "orders does `pricey` mark?",
        # no flag of that name in the code and no backticked flag
        "Call an order dear when the shopper pays 200 or more. How many are there?",
    ],
)
def test_a_definition_that_does_not_settle_the_flag_abstains(question: str) -> None:
    # the code's flag is at another number, so only the definition could bind it
    session = Session(WITHOUT_UNSTATED)
    assert session.turn(question, _flag_turn("> 250")) == []
    assert not any("bound through the code" in n for n in session.verifier.last.notes)


def test_a_number_that_names_two_bounds_of_the_question_binds_neither() -> None:
    question = "Which orders cost 200 or more under the old rule but less than 200 now? How many?"
    code = 'import json\nresult = {"n": int((orders["price"] < 200).sum())}\nprint(json.dumps(result))'
    session = Session()
    assert session.turn(question, code) == []
    assert not any("bound through the code" in n for n in session.verifier.last.notes)


def test_a_wrong_flag_the_answer_does_not_read_is_no_finding() -> None:
    code = (
        "import json\n"
        'orders["pricey"] = orders["price"] <= 200\n'
        'result = {"n_orders": len(orders)}\n'
        "print(json.dumps(result))"
    )
    session = Session()
    assert session.turn(DEFINE, code) == []
    assert any("reports the same answer; no finding" in n for n in session.verifier.last.notes)


COUNT = "How many orders are there, and how many of those sit no higher than 3 on the satisfaction scale?"


@pytest.mark.parametrize(("test", "found"), [("<= 3", False), (">= 3", True)])
def test_a_bound_is_bound_by_its_number_to_the_code_s_one_test_against_it(test: str, found: bool) -> None:
    code = (
        "import json\n"
        f'result = {{"n": len(orders), "n_low": int((orders["rating"] {test}).sum())}}\n'
        "print(json.dumps(result))"
    )
    assert bool(Session().turn(COUNT, code)) is found


def test_two_tests_against_the_stated_number_bind_neither() -> None:
    sem = inspect_code(
        'a = (orders["rating"] >= 3).sum()\nb = (orders["price"] >= 3).sum()\nc = orders[orders["rating"] < 4]'
    )
    req = next(r for r in comparisons("no higher than 3 on the scale") if r.kind is Kind.COMPARISON)
    assert _by_number(req, code_tests(sem)) is None
    one = inspect_code('a = (orders["rating"] >= 3).sum()\nc = orders[orders["rating"] < 4]')
    site = _by_number(req, code_tests(one))
    assert site is not None and (site.column, site.op, site.value) == ("rating", ">=", 3.0)


def test_sql_tests_are_found_in_where_flags_and_conditional_counts() -> None:
    sem = inspect_code(
        'con.execute("CREATE TABLE m AS SELECT *, temp >= 25 AS warm FROM sst")\n'
        'n = con.execute("SELECT SUM(CASE WHEN selfLR <= 4 THEN 1 ELSE 0 END) FROM v WHERE PID = 3").fetchone()'
    )
    found = {(s.column, s.op, s.value) for s in code_tests(sem)}
    assert found == {("temp", ">=", 25.0), ("selfLR", "<=", 4.0)}
    flags = _flags(sem)
    assert [(s.column, s.value) for s in flags["warm"]] == [("temp", 25.0)]


def test_counts_in_words_are_bounds_and_a_ranking_size_is_not() -> None:
    assert [(r.op, r.value, r.subject) for r in comparisons("women who have two or more children")] == [
        (">=", 2.0, ["children"])
    ]
    assert [(r.op, r.value) for r in comparisons("years with at least three warm months")] == [(">=", 3.0)]
    assert comparisons("the two largest regions") == []


def test_two_statistics_of_one_quantity_joined_by_and_are_both_read() -> None:
    from stateguard.verification.extract import aggregations

    got = [(r.function, r.subject) for r in aggregations("What are the mean and the median rating", [])]
    assert got == [("mean", ["rating"]), ("median", ["rating"])]
    # a reference value before the pair is no statistic asked
    assert [r.function for r in aggregations("heavier than their cohort mean and the median weight", [])] == [
        "median"
    ]


def test_the_second_of_two_coordinated_statistics_computed_otherwise_is_a_finding() -> None:
    code = (
        "import json\n"
        'result = {"mean_rating": orders["rating"].mean(), "median_rating": orders["rating"].mean()}\n'
        "print(json.dumps(result))"
    )
    findings = Session().turn("What are the mean and the median rating of the orders?", code)
    assert findings and "median" in findings[0].reason


def test_a_bound_after_an_exclusion_word_in_its_clause_is_not_bound_through_the_code() -> None:
    """'Drop the North orders and look at those above 200': the exclusion names other rows; the
    ordinary reading would negate the bound, so the code route abstains."""
    question = "Drop the garden orders and count the others that cost more than 200. How many?"
    code = (
        "import json\n"
        "_rest = orders[orders['category'] != 'garden']\n"
        "result = {'n': int((_rest['price'] > 200).sum())}\n"
        "print(json.dumps(result))"
    )
    session = Session()
    assert session.turn(question, code) == []
    assert not any("bound through the code" in n for n in session.verifier.last.notes)


def test_a_flag_redefined_on_a_derived_frame_keeps_its_earlier_rule_on_record() -> None:
    """The flag was first set on `orders`, then carried to `kept` and redefined there; a turn that
    writes the first rule out on `kept` computes with the replaced rule (superseded.py)."""
    session = Session()
    assert (
        session.turn(
            "Flag an order as pricey when its price is 200 or more (column `pricey`). How many?",
            "import json\norders['pricey'] = orders['price'] >= 200\n"
            "print(json.dumps({'n': int(orders['pricey'].sum())}))",
        )
        == []
    )
    assert (
        session.turn(
            "Keep the rated orders in `kept` and redefine `pricey` there: 250 or more. How many now?",
            "import json\nkept = orders[orders['rating'].notna()].copy()\nkept['pricey'] = kept['price'] >= 250\n"
            "print(json.dumps({'n': int(kept['pricey'].sum())}))",
        )
        == []
    )
    findings = session.turn(
        "How many pricey orders does `kept` hold, and what is their mean rating?",
        "import json\n_p = kept[kept['price'] >= 200]\n"
        "print(json.dumps({'n': len(_p), 'mean_rating': float(_p['rating'].mean())}))",
    )
    assert findings and "replaced" in findings[0].reason


def _rollback_session() -> Session:
    session = Session()
    for question, code in [
        (
            "Flag an order as pricey when its price is 200 or more (column `pricey`). How many?",
            "import json\norders['pricey'] = orders['price'] >= 200\nprint(json.dumps({'n': int(orders['pricey'].sum())}))",
        ),
        (
            "Redefine `pricey`: the order's price is above its region's median price. How many now?",
            "import json\norders['pricey'] = orders['price'] > orders.groupby('region')['price'].transform('median')\n"
            "print(json.dumps({'n': int(orders['pricey'].sum())}))",
        ),
    ]:
        assert session.turn(question, code) == []
    return session


RESTORE = "Restore the price-based `pricey` flag. As in Task 1: how many pricey orders are there?"


@pytest.mark.parametrize(
    ("rule", "found"),
    [
        ("orders['price'] >= 200", False),  # the earlier rule, as it was
        ("orders['price'] <= 200", True),  # put back the other way round
        ("orders['price'].between(250, 400)", True),  # put back at other numbers
    ],
)
def test_a_rollback_that_puts_back_no_rule_of_the_run_is_a_finding(rule: str, found: bool) -> None:
    session = _rollback_session()
    code = f"import json\norders['pricey'] = {rule}\nprint(json.dumps({{'n': int(orders['pricey'].sum())}}))"
    findings = session.turn(RESTORE, code)
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["orders"] and "restore the earlier definition" in findings[0].reason


def test_a_rollback_that_states_a_new_number_is_a_new_rule() -> None:
    session = _rollback_session()
    question = "Restore a price-based `pricey` flag, now at 250 or more. How many pricey orders?"
    code = "import json\norders['pricey'] = orders['price'] >= 250\nprint(json.dumps({'n': int(orders['pricey'].sum())}))"
    assert session.turn(question, code) == []


def test_a_bound_on_rows_the_sentence_then_sets_aside_is_not_bound_through_the_code() -> None:
    """ "A shopper paying under 20 is a tester; set those orders aside": the bound names the rows
    left out, so the code's `price >= 20` is no reversed test of it (nor is a query that lost it)."""
    session = Session()
    question = (
        "An order from a shopper paying under 20 is a test purchase; set those orders aside from here on. "
        "How many orders are left and what is their mean rating?"
    )
    code = (
        "import json\n"
        "kept = orders[orders['price'] >= 20]\n"
        "result = {'n': len(kept), 'mean_rating': round(float(kept['rating'].mean()), 3)}\n"
        "print(json.dumps(result))"
    )
    assert session.turn(question, code) == []
    assert not any("bound through the code" in n for n in session.verifier.last.notes)


@pytest.mark.parametrize(("cond", "found"), [("rating <= 3", False), ("rating < 3", True)])
def test_a_bound_inside_a_query_string_is_probed_on_the_frame(cond: str, found: bool) -> None:
    """`orders.query("rating < 3")` for "scored 3 or less": the name inside the string is the
    frame's column, so the probe reads `orders["rating"]` (a bare `rating` is no Python name)."""
    session = Session()
    code = (
        "import json\n"
        f'low = orders.query("{cond}")\n'
        "result = {'n_low': int(len(low))}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn("How many orders scored 3 or less?", code)
    assert bool(findings) is found
    assert all("error" not in str(o) for o in session.verifier.last.outcomes.values())
