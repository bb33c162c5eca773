"""The nineteenth round: a bound bound through the column an earlier flag is cut at, counts "of those"
through subqueries and named masks, typed-in lists counted by a column of the data's side, standing
scopes kept through flag tests and named masks, and flags recorded through a mask or a table's star."""

from __future__ import annotations

import pytest

from stateguard.inspection.code_model import CodeSemantics
from stateguard.inspection.inspect import inspect_code
from stateguard.verification import carried, flag_bounds, listed_joins, standing
from stateguard.verification.bind_shape import _merge_as_stated
from stateguard.verification.binder import Binder
from stateguard.verification.extract import RULE_VERSION, comparisons, scopes
from stateguard.verification.superseded import FlagHistory, _sql_flags
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import Session

# --- a bound through an earlier flag's cut ----------------------------------------------------------


def _history(*cells: str) -> FlagHistory:
    history = FlagHistory()
    for turn, cell in enumerate(cells, 1):
        history.record(turn, cell, inspect_code(cell))
    return history


def test_a_flag_cut_at_the_stated_number_names_the_bound_s_column() -> None:
    history = _history(
        'con.execute("CREATE TABLE f AS SELECT *, coalesce(mspike >= 2.0, false) AS large FROM mg")',
        'mel["thick"] = mel["thickness"] > 4',
    )
    [below] = comparisons("which patients reach 1.1 times their sex's median spike yet stay below 2.0 g/dL")
    code = "rel = con.execute('SELECT * FROM f WHERE mspike >= 1.1 * med AND NOT large').df()"
    assert flag_bounds.bound_column(
        history, "... yet stay below 2.0 g/dL?", below, code, inspect_code(code)
    ) == (
        "mspike",
        1.0,
    )
    # the code tests the column against the number itself: the ordinary bindings read it
    tested = "rel = con.execute('SELECT * FROM f WHERE mspike < 2.0').df()"
    assert (
        flag_bounds.bound_column(history, "... below 2.0 g/dL?", below, tested, inspect_code(tested)) is None
    )
    # the flag read inside a count: the bound qualifies that count, not the rows
    counted = "n = con.execute('SELECT count(*) FILTER (WHERE NOT large) FROM f').fetchone()"
    assert (
        flag_bounds.bound_column(history, "... below 2.0 g/dL?", below, counted, inspect_code(counted))
        is None
    )


def test_a_percentage_bound_takes_the_code_s_fraction_and_two_columns_abstain() -> None:
    history = _history('con.execute("CREATE TABLE b AS SELECT *, salcohol > 0.03 AS drinker FROM budget")')
    [req] = comparisons("an alcohol share of at least twice their region's median but not above 3%")
    code = "x = 1"
    assert flag_bounds.bound_column(history, "but not above 3%", req, code, inspect_code(code)) == (
        "salcohol",
        0.01,
    )
    two = _history('d["a"] = d["x"] > 3', 'd["b"] = d["y"] > 3')
    [three] = comparisons("but under 3")
    assert flag_bounds.bound_column(two, "but under 3", three, code, inspect_code(code)) is None


def test_the_withdrawn_rule_s_rows_must_meet_the_fixed_bound() -> None:
    """Turn 1 defines `pricey` by a fixed cut; turn 2 asks for rows that meet another condition "yet
    cost under $100", which only the flag's cut binds. The code that drops `~pricey` is found."""
    question = "Which orders got a rating of 4 or more yet cost under $100? How many, and their mean rating?"
    faulty = (
        "import json\nsel = orders[orders['rating'] >= 4]\n"
        "result = {'n': len(sel), 'mean_rating': round(float(sel['rating'].mean()), 3)}\nprint(json.dumps(result))"
    )
    for code, found in (
        (faulty, True),
        (faulty.replace("orders['rating'] >= 4]", "(orders['rating'] >= 4) & ~orders['pricey']]"), False),
    ):
        session = Session()
        assert not session.turn(
            "Call an order pricey when its price is 100 or more.", "orders['pricey'] = orders['price'] >= 100"
        )
        assert bool(session.turn(question, code)) is found


def test_a_bound_outside_a_candidate_column_s_values_drops_that_candidate() -> None:
    vocab = Vocabulary(
        tables={
            "t": {
                "nodes": ColumnInfo(kind="num", low=0, high=33),
                "node4": ColumnInfo(kind="num", low=0, high=1),
            }
        }
    )
    binder = Binder(CodeSemantics(), vocab)
    assert binder.within("nodes", 7.0, scaled=False) and not binder.within("node4", 7.0, scaled=False)
    assert binder.within("node4", 7.0)  # 7 in thousands would fit: only the plain form decides a binding


def test_a_rule_named_by_what_became_of_it() -> None:
    for text in (
        "the position rule we dropped",
        "the rule that was withdrawn",
        "the withdrawn cut",
        "the rule we just withdrew",
    ):
        assert RULE_VERSION.search(text), text
    assert not RULE_VERSION.search("Drop the Boeings and look at those that seat more than 100")


# --- counts "of those" ---------------------------------------------------------------------------


def test_a_subquery_of_the_select_list_that_never_tests_the_column() -> None:
    sql = "SELECT count(*), (SELECT count(*) FILTER (WHERE u75) FROM men) FROM men WHERE age < 25"
    assert carried.untested_subqueries(sql, "age") == ["SELECT COUNT(*) FILTER(WHERE u75) FROM men"]
    kept = "SELECT count(*), (SELECT count(*) FROM men WHERE age < 25 AND u75) FROM men WHERE age < 25"
    assert carried.untested_subqueries(kept, "age") == []


@pytest.mark.parametrize(
    ("question", "first"),
    [
        (
            "Marginal adhesion of 5 or higher: how many samples? And how many of those turned out malignant?",
            "5 or higher",
        ),
        (
            "How many heads are sixty or older, and, among those older heads, how many are women?",
            "sixty or older",
        ),
        (
            "Count the people who put in 2,000 hours or more. Of them, how many had at most twelve years of school?",
            "2,000 hours or more",
        ),
    ],
)
def test_a_pair_of_counts_said_in_other_ways(question: str, first: str) -> None:
    assert [r.text for r in carried.carried_bounds(question)] == [first]


def test_two_unrelated_counts_in_one_sentence_carry_nothing() -> None:
    assert carried.carried_bounds("How many flights left late, and how many arrived early?") == []


@pytest.mark.parametrize(
    ("second", "found"),
    [
        ("int((long_hours & low_school).sum())", False),  # the second count reads the first one's mask
        ("int(low_school.sum())", True),  # it counts the whole frame
    ],
)
def test_a_second_count_through_named_masks(second: str, found: bool) -> None:
    code = (
        "import json\nlong_hours = orders['price'] >= 100\nlow_school = orders['rating'] <= 3\n"
        f"result = {{'n_pricey': int(long_hours.sum()), 'n_of_those_low': {second}}}\nprint(json.dumps(result))"
    )
    question = "Count the orders priced at 100 or more. Of them, how many are rated 3 or lower?"
    assert bool(Session().turn(question, code)) is found


# --- typed-in lists, standing scopes, flags ------------------------------------------------------------


def test_a_count_of_the_data_side_expects_empty_entries() -> None:
    sql = "SELECT d.label, count(b.sample) AS n FROM dx_list d LEFT JOIN bx b USING (class) GROUP BY d.label"
    assert listed_joins.counts_matches(sql, "dx_list", {"class", "label"})
    star = "SELECT d.label, count(*) AS n FROM dx_list d JOIN bx b USING (class) GROUP BY d.label"
    assert not listed_joins.counts_matches(star, "dx_list", {"class", "label"})
    own = "SELECT count(d.label) FROM dx_list d JOIN bx b USING (class)"
    assert not listed_joins.counts_matches(own, "dx_list", {"class", "label"})


def test_a_pandas_join_is_re_run_with_the_stated_how() -> None:
    assert (
        _merge_as_stated("book.set_index('k').join(k, how='inner')", "left")
        == "book.set_index('k').join(k, how='left')"
    )
    assert _merge_as_stated("book.join(k)", "outer") == "book.join(k, how='outer')"


@pytest.mark.parametrize(
    "said",
    [
        "The remaining questions concern only men who were not unemployed in 1975; keep them as `worked75`.",
        "Workers with fewer than five years of experience drop out of everything below; keep the others.",
        "Until further notice, only barium-free fragments are analysed.",
    ],
)
def test_standing_scopes_said_in_other_words(said: str) -> None:
    assert standing._STANDING.search(said)


def test_a_standing_scope_kept_by_a_flag_test_or_a_named_mask() -> None:
    assert standing._flag_test("NOT u75") == "u75" and standing._flag_test("e.high") == "high"
    assert standing._flag_test("TRUE") is None and standing._flag_test("a > 1") is None
    code = 'worked = ps["hours"] > 0\nworkers = ps.loc[worked].copy()\n'
    assert standing._masked_subsets(code, inspect_code(code)) == [("ps", "workers", ("hours",))]


def test_flags_recorded_through_a_mask_and_a_table_s_star() -> None:
    history = _history('rich = mz["income"] >= 30000\nmz["well_off"] = rich')
    assert [v.text for v in history.versions["well_off"]] == ['mz["income"] >= 30000']
    sql = "SELECT s.* REPLACE (s.V1 >= m.med + 2 AS bulky) FROM scored s JOIN med m ON m.class = s.class"
    assert _sql_flags(sql) == [("bulky", "s.V1 >= m.med + 2")]


def test_a_column_s_own_name_in_a_list_of_names_is_no_scope() -> None:
    vocab = Vocabulary(tables={"ps": {"married": ColumnInfo(kind="cat", values=["married", "divorced"])}})
    assert scopes("Build the codebook `status_book` (married, label) and merge", vocab, ["ps"]) == []
    [req] = scopes("Only the married people, please", vocab, ["ps"])
    assert req.values == ["married"]


# --- after fresh26's first look --------------------------------------------------------------------


def test_one_and_a_half_times_is_a_multiple_not_a_bound() -> None:
    said = "a county-year is high-crime when its rate is at least one and a half times the median rate"
    assert comparisons(said) == []


@pytest.mark.parametrize(
    ("field", "share"),
    [("pct_low_light", True), ("share_frugal", True), ("fraction_x", True), ("n_pctymle_07_to_09", False)],
)
def test_a_share_is_named_by_a_whole_word(field: str, share: bool) -> None:
    from stateguard.verification.vocabulary import names_share

    assert names_share(field) is share


def test_a_column_clipped_from_two_words() -> None:
    from stateguard.verification.vocabulary import resolve_column

    assert resolve_column(["family", "income"], ["faminc", "emr"]) == ["faminc"]
    assert resolve_column(["income"], ["faminc", "income"]) == ["income"]


@pytest.mark.parametrize(("call", "found"), [("'mean'", True), ("'min'", False)])
def test_an_extreme_the_name_states_computed_as_a_mean(call: str, found: bool) -> None:
    from stateguard.verification.named_stats import named_statistics

    code = f"tab = orders.groupby('region').agg(n=('order_id', 'count'), min_rating=('rating', {call}))\n"
    hits = named_statistics("Per region: the number of orders and the smallest rating.", inspect_code(code))
    assert [(r.function, r.fields) for r, _, _ in hits] == ([("min", ["min_rating"])] if found else [])


def test_a_column_named_by_a_word_without_its_vowels() -> None:
    from stateguard.verification.vocabulary import resolve_column

    assert resolve_column(["self-rated", "health"], ["hlth", "hours"]) == ["hlth"]
    assert resolve_column(["region"], ["rgn", "region"]) == ["region"]  # the word itself wins


def test_one_and_a_half_is_no_unstated_number_one() -> None:
    from stateguard.verification.unstated_cutoff import bounds

    assert bounds("its rate is at least one and a half times the median rate") == []
    assert bounds("at least 1.5 times the median") == [(1.5, False, ">=", "at least 1.5")]


# --- after fresh27's first look --------------------------------------------------------------------


def test_a_field_naming_the_group_with_the_extreme_share_is_no_share() -> None:
    from stateguard.verification.vocabulary import names_share

    assert not names_share("year_top_deadly_share") and not names_share("sex_greater_high_share")
    assert names_share("pct_lower_income") and names_share("share_higher_educ")


def test_a_plural_owner_before_a_statistic_is_part_of_its_subject() -> None:
    from stateguard.verification.extract import aggregations

    said = "children, tall children, the fathers' mean height and the median child height"
    assert [(r.function, r.subject) for r in aggregations(said, [])] == [
        ("mean", ["fathers", "height"]),
        ("median", ["child", "height"]),
    ]


def test_an_amount_in_cents_tested_in_dollars() -> None:
    from stateguard.verification import bind_cutoff
    from stateguard.verification.requirements import Kind, Requirement

    req = Requirement(kind=Kind.COMPARISON, text="under 20", op="<", value=20.0)
    assert bind_cutoff.in_code_scale(req, {0.2}).value == 0.2
    assert bind_cutoff.in_code_scale(req, {20.0, 0.2}).value == 20.0  # written as said
