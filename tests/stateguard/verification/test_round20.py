"""The twentieth round: the statistic a relative rule states, bounds said as "from N up" and "A through
B", a term defined as "anything over N", flagged rows counted by another property, a rule's group read
from the task's description of a column or "that year", and standing scopes named by the child's
backticked name or its singular."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_multiples, rule_statistics, rule_windows, standing
from stateguard.verification.extract import comparisons, extract, flag_scopes
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import WITHOUT_UNSTATED, Session

# --- the statistic a relative rule states ----------------------------------------------------------

_RULE = (
    "a journal is pricey when its price is at least 1.5 times the median price of all journals in its field"
)


@pytest.mark.parametrize(
    ("code", "call", "after"),
    [
        (
            'con.execute("CREATE TABLE jp AS SELECT *, price >= 1.5 * avg(price) OVER (PARTITION BY field) AS pricey FROM j")',
            "avg(price) OVER",
            "median(price) OVER",
        ),
        (
            'con.execute("""CREATE TABLE k AS SELECT j.*, j.price >= 1.5 * g.m AS pricey FROM j\n'
            'JOIN (SELECT field, max(price) AS m FROM j GROUP BY field) g USING (field)""")',
            "(SELECT field, max(price) AS m FROM j GROUP BY field)",
            "(SELECT field, median(price) AS m FROM j GROUP BY field)",
        ),
        (
            'j["pricey"] = j["price"] >= 1.5 * j.groupby("field")["price"].transform("mean")',
            '.groupby("field")["price"].transform("mean")',
            """.groupby("field")["price"].transform('median')""",
        ),
        (
            'meds = j.groupby("field")["price"].mean()\nj["pricey"] = j["price"] >= 1.5 * j["field"].map(meds)',
            'meds = j.groupby("field")["price"].mean()',
            'meds = j.groupby("field")["price"].median()',
        ),
    ],
)
def test_the_rule_s_statistic_is_re_run_as_stated(code: str, call: str, after: str) -> None:
    found = rule_statistics.changed(_RULE, code)
    assert found is not None
    assert (found.stated.function, found.site.text, found.site.after) == ("median", call, after)


def test_the_rule_s_own_statistic_or_an_unclear_one_is_left_alone() -> None:
    code = 'j["pricey"] = j["price"] >= 1.5 * j.groupby("field")["price"].transform("median")'
    assert rule_statistics.changed(_RULE, code) is None
    # the words name both statistics in one multiple, or none: nothing is stated
    both = "at least twice the mean or the median price of its field"
    assert rule_statistics.stated(both) is None
    assert rule_statistics.stated("at least twice the typical price of its field") is None
    # the statistic is of another column than the one the rule compares
    other = 'j["pricey"] = j["price"] >= 1.5 * j.groupby("field")["cites"].transform("mean")'
    assert rule_statistics.changed(_RULE, other) is None
    # a second statistic the rule could be built on: which one is not known
    two = code.replace('"median")', '"mean")') + '\nj["x"] = j.groupby("field")["price"].transform("max")'
    assert rule_statistics.changed(_RULE, two) is None


def test_the_rule_s_statistic_said_in_the_question_of_a_withdrawn_rule() -> None:
    rule = "which adults spend at least eight times their rating's median yet no more than $1,000?"
    code = (
        'medians = mx.groupby("health")["med"].mean()\n'
        'relative = adults["med"] >= 8 * adults["health"].map(medians)\n'
        'rows = adults[relative & ~adults["heavy"]]\nn = len(rows)\nmean_med = rows["med"].mean()'
    )
    found = rule_statistics.changed(rule, code)
    assert found is not None and found.site.after == 'medians = mx.groupby("health")["med"].median()'
    # "eight times" is a multiple the rule states too
    stated = rule_multiples.stated(rule)
    assert stated is not None and stated.multiple == 8.0


def test_a_rule_built_on_another_statistic_is_found_and_its_retry_passes() -> None:
    question = (
        "Flag pricey orders: at least 1.5 times the median price of their category. How many are pricey?"
    )
    wrong = (
        'orders["pricey"] = orders["price"] >= 1.5 * orders.groupby("category")["price"].transform("mean")\n'
        "import json\nprint(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )
    findings = Session().turn(question, wrong)
    assert any("at least 1.5 times the median price" in f.reason for f in findings)
    right = wrong.replace('transform("mean")', 'transform("median")')
    assert not Session().turn(question, right)


# --- bounds said in other ways --------------------------------------------------------------------


def test_from_a_number_up_or_down_is_a_bound_and_up_to_is_not() -> None:
    [up] = comparisons("Call a child tall from 70 inches up.")
    assert (up.op, up.value, up.subject) == (">=", 70.0, [])
    [down] = comparisons("short stays are those from 10 days down")
    assert (down.op, down.value) == ("<=", 10.0)
    assert [(r.op, r.value) for r in comparisons("prices from 5 up to 10")] == [("<=", 10.0)]


def test_a_span_of_years_said_with_through() -> None:
    [req] = [r for r in extract("From here on we study 1984 through 1988 only, as `later`.") if r.value]
    assert (req.op, req.value, req.upper, req.subject) == (">=", 1984.0, 1988.0, ["year"])
    [plain] = comparisons("ages 3 through 7")
    assert (plain.value, plain.upper) == (3.0, 7.0) and plain.subject != ["year"]


def test_a_term_defined_as_anything_over_a_number_parses_whole() -> None:
    vocab = Vocabulary(tables={"mx": {"med": ColumnInfo(kind="num", low=0, high=9000)}})
    [req] = [
        r
        for r in extract("Heavy spending is again anything over $1,000.", vocab=vocab, tables=["mx"])
        if r.value
    ]
    assert (req.op, req.value) == (">", 1000.0)


def test_a_moved_end_that_narrows_a_range_is_found() -> None:
    question = "From now on keep the orders rated 2 through 4 as `mid`. How many are there?"
    code = (
        "mid = orders[orders['rating'].between(2.5, 4)].copy()\n"
        "import json\nprint(json.dumps({'n_mid': len(mid)}))"
    )
    findings = Session(WITHOUT_UNSTATED).turn(question, code)
    assert findings
    assert not Session(WITHOUT_UNSTATED).turn(question, code.replace("between(2.5, 4)", "between(2, 4)"))


# --- flagged rows counted by another property ------------------------------------------------------


def test_how_many_flagged_ones_had_something_is_a_scope_of_the_flag() -> None:
    vocab = Vocabulary(tables={"later": {"deadly": ColumnInfo(kind="bool", values=["False", "True"])}})
    [req] = flag_scopes(
        "and how many deadly ones in `later` had mandatory community service", vocab, ["later"]
    )
    assert req.columns == ["deadly"]
    # counting the flagged rows themselves states no scope of another count
    assert flag_scopes("How many deadly state-years are there", vocab, ["later"]) == []


# --- the group a rule's statistic is taken over ----------------------------------------------------


def test_a_rule_s_group_said_as_that_year_or_by_the_task_s_description() -> None:
    stated = rule_windows.stated_group(
        "at least 1.2 times the median rate of all states in that year", ["year"]
    )
    assert stated is not None and stated.column == "year"
    context = "Columns: sp (colour form, B blue or O orange), sex (M or F), CW (carapace width)."
    vocab = Vocabulary(
        tables={
            "crabs": {"sp": ColumnInfo(kind="text", values=["B", "O"]), "sex": ColumnInfo(kind="text")},
            "forms": {"form": ColumnInfo(kind="text")},
        }
    ).with_descriptions(context)
    assert vocab.column_words["sp"] == ("colour", "form")
    rule = "large when its width is at least 1.1 times the median width of the crabs of its colour form"
    # only the tables the turn reads: `forms.form` is not a column of the crabs
    stated = rule_windows.stated_group(rule, rule_windows.groupable(vocab, ["crabs"]), vocab.column_words)
    assert stated is not None and stated.column == "sp"


# --- standing scopes named by the child ------------------------------------------------------------


def _scope(parent: str, child: str) -> standing.Scope:
    return standing.Scope(6, parent, child, False, columns=("age",))


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("plus how many adult heavy spenders are women", True),
        ("and the number of tall daughters in `bigfam`", True),
        ("and the number of tall daughters in `bigfam` against all of `kids`", False),
        ("and how many people overall are women", False),
    ],
)
def test_a_child_named_by_its_singular_or_in_backticks(question: str, named: bool) -> None:
    child = "adults" if "adult" in question or "people" in question else "bigfam"
    parent = "mx" if child == "adults" else "kids"
    assert standing._names_child_only(question, _scope(parent, child)) is named


def test_a_statement_of_the_turn_reading_the_parent_is_found_beside_one_reading_the_child() -> None:
    history = standing.StandingScopes()
    made = 'adults = mx.loc[mx["age"] >= 18].copy()'
    history.record(6, "Only adults count from now on; keep them as `adults`.", made, inspect_code(made))
    code = 'n_by = adults.loc[adults["heavy"], "health"].value_counts()\nn_women = int((mx["heavy"] & mx["sex"].eq("f")).sum())'
    [scope] = history.bypassed(
        "the heavy spenders per rating, plus how many adult heavy spenders are women", code
    )
    assert (scope.parent, scope.child) == ("mx", "adults")
