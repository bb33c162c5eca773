"""The twelfth round: a share asked of a subgroup checked against its live base, a flag scope of one
reported value, the withdrawn rule's rows asked with "did it count as", a count of flagged rows
written as a count of the flag's values, a share of a whole outside 0-100, a range with one end
moved, bounds paired with the code off by one or stated in words, a turn's own rule bound through
the code, superlatives as rankings, and standing scopes read around by one statement."""

from __future__ import annotations

import json

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import share_base, standing
from stateguard.verification.extract import current_rule_flags, rankings
from stateguard.verification.vocabulary import Vocabulary
from tests.stateguard.verification.conftest import WITHOUT_UNSTATED, Session, session_with

PRICEY = "orders['pricey'] = orders['price'] > 150"
COUNT = "import json\nprint(json.dumps({'n': len(orders)}))"


def _first(session: Session) -> None:
    assert session.turn("How many orders are there?", COUNT) == []


def _vocab(tables: dict[str, dict[str, dict[str, object]]]) -> Vocabulary:
    return Vocabulary.from_probe(json.dumps(tables))


# -- the base of a share asked of a subgroup ---------------------------------------------------------


@pytest.mark.parametrize(
    ("share", "flagged"),
    [
        ("100 * orders.loc[orders['region'] == 'North', 'pricey'].mean()", False),
        ("100 * orders['pricey'].mean()", True),  # over every order (the scope check sees it too)
        ("100 * (orders['pricey'] & (orders['region'] == 'North')).mean()", True),  # North and pricey, of all
    ],
)
def test_a_share_asked_of_a_subgroup_is_taken_over_that_subgroup(share: str, flagged: bool) -> None:
    session = session_with(PRICEY)
    _first(session)
    code = f"import json\nresult = {{'n_pricey': int(orders['pricey'].sum()), 'pct_pricey_north': {share}}}\nprint(json.dumps(result))"
    findings = session.turn(
        "How many orders are pricey, and what percentage of the North orders are pricey?", code
    )
    assert bool(findings) is flagged


def test_a_share_of_the_women_binds_the_value_the_data_writes() -> None:
    vocab = _vocab(
        {
            "staff": {
                "sex": {"kind": "text", "values": ["Female", "Male"]},
                "well_paid": {"kind": "text", "values": ["False", "True"]},
            }
        }
    )
    found = share_base.subgroup_shares("what percentage of the women are well paid?", vocab, ["staff"])
    assert [(s.flag, s.column, s.value) for s in found] == [("well_paid", "sex", "Female")]
    # a second word of the data in the subgroup ("the female well paid staff") abstains; so does a number
    # word with no flag after the copula
    assert share_base.subgroup_shares("what share of the women are over 50?", vocab, ["staff"]) == []


def test_a_share_of_a_whole_outside_0_100_is_found() -> None:
    session = session_with(PRICEY)
    _first(session)
    q = "What share of the orders (as a percentage) are pricey?"
    ok = "import json\nresult = {'pct_pricey': 100 * orders['pricey'].mean()}\nprint(json.dumps(result))"
    wrong = (
        "import json\nresult = {'pct_pricey': 100 * int(orders['pricey'].sum())}\nprint(json.dumps(result))"
    )
    assert session.turn(q, ok) == []
    assert session.turn(q, wrong)
    # a change in percent is no share of a whole
    assert (
        share_base.share_of_whole_fields("the percentage change of the share of sales", ["pct_change"]) == []
    )


# -- a flag scope of one reported value --------------------------------------------------------------


@pytest.mark.parametrize(
    ("total", "flagged"),
    [("orders.loc[orders['pricey'], 'rating'].sum()", False), ("orders['rating'].sum()", True)],
)
def test_a_value_named_for_the_flag_that_never_reads_it(total: str, flagged: bool) -> None:
    session = session_with(PRICEY)
    _first(session)
    code = (
        "import json\n_n = orders[orders['pricey']].groupby('region').size()\n"
        f"result = {{'n_pricey_by_region': {{k: int(v) for k, v in _n.items()}}, 'total_rating_pricey': float({total})}}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn(
        "Report how many pricey orders each region has, and the total rating of all pricey orders.", code
    )
    assert bool(findings) is flagged


# -- the withdrawn rule's rows -----------------------------------------------------------------------


def test_the_withdrawn_rules_rows_asked_with_did_it_count_as() -> None:
    vocab = _vocab({"cohort": {"frail": {"kind": "text", "values": ["False", "True"]}}})
    clause = (
        "Go back to the averaged-score rule we withdrew: which cohort patients did it count as frail "
        "that the 70-point line does not"
    )
    [req] = current_rule_flags(clause, vocab, ["cohort"])
    assert (req.columns, req.values, req.exclude) == (["frail"], ["True"], True)
    money = (
        "the within-rank rule we dropped: which people did it count as frail that the $120,000 line does not"
    )
    assert current_rule_flags(money, vocab, ["cohort"])[0].exclude
    # the rule in force asking the same: no "did it" of a withdrawn rule, nothing read
    assert (
        current_rule_flags("which patients are frail that the old line does not catch", vocab, ["cohort"])
        == []
    )


# -- a count of flagged rows -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "flagged"),
    [
        ("int(orders['pricey'].sum())", False),
        ("int(orders['pricey'].count())", True),  # every order with a value, true or false
    ],
)
def test_a_count_of_flagged_rows_written_as_a_count_of_values(count: str, flagged: bool) -> None:
    session = session_with(PRICEY)
    _first(session)
    code = f"import json\nresult = {{'n_pricey': {count}}}\nprint(json.dumps(result))"
    findings = session.turn("How many orders are pricey?", code)
    assert bool(findings) is flagged


def test_a_named_aggregation_counting_a_flags_values() -> None:
    session = session_with(PRICEY)
    _first(session)
    code = (
        "import json\nby_region = orders.groupby('region').agg(n=('order_id', 'size'), n_pricey=('pricey', '{fn}'))\n"
        "print(json.dumps({{'by_region': by_region['n_pricey'].astype(int).to_dict()}}))"
    )
    q = "Per region, the number of orders and how many are pricey."
    assert session.turn(q, code.format(fn="sum")) == []
    assert session.turn(q, code.format(fn="count"))


# -- bounds --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("upper", "flagged"), [(100, False), (120, True)])
def test_a_range_with_one_end_moved(upper: int, flagged: bool) -> None:
    session = session_with()
    _first(session)
    code = f"import json\nprint(json.dumps({{'n': int(orders['price'].between(50, {upper}).sum())}}))"
    findings = session.turn("How many orders have a price between 50 and 100 inclusive?", code)
    assert bool(findings) is flagged
    if flagged:
        assert "cut-off" in findings[0].reason


@pytest.mark.parametrize(("bound", "flagged"), [(2, False), (1, True), (4, False)])
def test_a_bound_in_words_off_by_one_in_the_code(bound: int, flagged: bool) -> None:
    session = session_with(config=WITHOUT_UNSTATED)
    _first(session)
    code = (
        "import json\nseen = orders.groupby(['customer_id', 'category']).size().rename('n').reset_index()\n"
        f"twice = seen[seen['n'] >= {bound}]\n"
        "print(json.dumps({'n_twice': len(twice)}))"
    )
    # 1 for "twice" is off by one (bound); 4 is neither near nor off by one (nothing bound)
    findings = session.turn("How many customer and category pairs appear at least twice?", code)
    assert bool(findings) is flagged


@pytest.mark.parametrize(("cut", "flagged"), [(4.0, False), (4.5, True)])
def test_a_bound_of_the_turns_own_rule_that_parses_whole(cut: float, flagged: bool) -> None:
    session = session_with()
    _first(session)
    code = f"import json\norders['liked'] = orders['rating'] >= {cut}\nprint(json.dumps({{'n_liked': int(orders['liked'].sum())}}))"
    findings = session.turn(
        "Redefine `liked` that way. How many orders are liked now?",
        code,
        own_context="An order is now liked when its rating is at least 4.",
    )
    assert bool(findings) is flagged


def test_a_semicolon_clause_s_exclusion_word_leaves_the_bound_alone() -> None:
    session = session_with()
    _first(session)
    code = "import json\norders['cheap'] = orders['price'].fillna(1e9) <= 40\nprint(json.dumps({'n_cheap': int(orders['cheap'].sum())}))"
    findings = session.turn(
        "Mark an order as cheap when its listed amount is 50 or lower; an order without a price is not cheap. "
        "How many orders are cheap?",
        code,
    )
    assert findings and "cut-off" in findings[0].reason


# -- superlatives and rankings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "k", "descending"),
    [
        ("Give the three longest-serving (pids, longest first, lower pid on ties).", 3, True),
        ("Which three cases had the heaviest babies?", 3, True),
        ("which patient was followed longest (lowest pid on a tie)?", 1, True),
        ("the two lightest birds", 2, False),
    ],
)
def test_superlatives_are_rankings(text: str, k: int, descending: bool) -> None:
    [req] = rankings(text)
    assert (req.k, req.descending) == (k, descending)


def test_an_age_or_a_date_superlative_is_no_ranking_direction() -> None:
    assert rankings("Name the three oldest (pids, oldest first)") == []


def test_sort_values_with_a_list_of_directions() -> None:
    sem = inspect_code("h = a.sort_values(['bwt', 'case_id'], ascending=[False, True]).head(3)")
    assert sem.selections[0].order == [("bwt", True), ("case_id", False)]


# -- standing scopes ---------------------------------------------------------------------------------


def test_a_rules_old_version_brings_no_rows_back() -> None:
    assert not standing._brings_back(
        "Revisit the race-relative rule we withdrew: which adult mothers did it call light?"
    )
    assert not standing._brings_back("Under the dropped 50-day line, how many are left?")
    assert standing._brings_back("Count the original rows again, with the teenagers.")
    assert standing._STANDING.search("For everything after this, drop them")


def test_a_statement_reading_around_a_scope_the_question_names_by_the_child() -> None:
    scope = standing.Scope(6, "scored", "cohort", True, ancestors=("patients",))
    assert standing._names_child_only("how many frail cohort patients died in all", scope)
    assert not standing._names_child_only("how many cohort patients, out of all patients", scope)
    assert not standing._names_child_only("the cohort against the whole of `scored`", scope)


# -- fresh17's first-look false repairs, and the subgroup glossed in parentheses ---------------------


def test_a_subgroup_glossed_in_parentheses_and_a_flag_by_its_words_prefixes() -> None:
    vocab = _vocab(
        {
            "marked": {
                "state": {"kind": "text", "values": ["NSW", "Other", "VIC"]},
                "short_surv": {"kind": "text", "values": ["False", "True"]},
            }
        }
    )
    q = "what percentage of the New South Wales (NSW) patients were short survivors?"
    assert [(s.flag, s.column, s.value) for s in share_base.subgroup_shares(q, vocab, ["marked"])] == [
        ("short_surv", "state", "NSW")
    ]
    # an aside in parentheses is no value; a gloss naming no value of the data abstains
    aside = "what share of the patients (as a percentage) were short survivors?"
    assert share_base.subgroup_shares(aside, vocab, ["marked"]) == []
    unknown = "what percentage of the Queensland (QLD) patients were short survivors?"
    assert share_base.subgroup_shares(unknown, vocab, ["marked"]) == []


SQL_PRICEY = (
    "import duckdb\ncon = duckdb.connect()\n"
    "con.execute('CREATE TABLE p AS SELECT *, price > 150 AS pricey FROM orders')"
)


@pytest.mark.parametrize(
    ("base", "flagged"),
    [
        (
            "COUNT(*) FILTER (WHERE region = 'North')",
            False,
        ),  # a scope counted inside a FILTER is no missing one
        ("COUNT(*)", True),  # the base taken over every order
    ],
)
def test_a_value_counted_inside_a_sql_filter(base: str, flagged: bool) -> None:
    session = session_with(SQL_PRICEY)
    _first(session)
    code = (
        'import json\n_r = con.execute("SELECT COUNT(*) FILTER (WHERE pricey), '
        f"100.0 * COUNT(*) FILTER (WHERE pricey AND region = 'North') / {base} FROM p\").fetchone()\n"
        "result = {'n_pricey': _r[0], 'pct_north_pricey': _r[1]}\nprint(json.dumps(result))"
    )
    findings = session.turn(
        "How many orders are pricey, and what percentage of the North orders are pricey?", code
    )
    assert bool(findings) is flagged
    if flagged:
        assert "share_base" in findings[0].evidence


def test_the_stated_number_tested_in_a_select_list_binds_no_other_cut_off() -> None:
    session = session_with(
        "import duckdb\ncon = duckdb.connect()\ncon.execute('CREATE TABLE o AS SELECT * FROM orders')"
    )
    _first(session)
    code = (
        "import json\ncon.execute('CREATE OR REPLACE TABLE p AS SELECT *, price >= 150 AS pricey FROM o')\n"
        "n = con.execute('SELECT COUNT(*) FROM p WHERE rating >= 2 AND pricey').fetchone()[0]\n"
        "print(json.dumps({'n_pricey_rated': n}))"
    )
    findings = session.turn(
        "Redefine `pricey` in `p` that way. How many orders rated 2 or more are pricey?",
        code,
        own_context="The shop changed its mind: pricey means 150 or more dollars a piece.",
    )
    assert findings == []


def test_a_flagged_kept_set_is_no_list_of_entries() -> None:
    from stateguard.verification.extract import _kept_entries

    assert _kept_entries("and the total enrolment of all crowded kept districts") is None
    assert _kept_entries("every label is kept, 0 for a label with none") == "label"
