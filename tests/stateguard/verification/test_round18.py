"""The eighteenth round: flags defined in longhand (`CASE WHEN`, `SELECT * REPLACE`, `.ge(...)`), a group
statistic joined or looked up back onto the rows, a rank column's window, numbers up to ninety in words,
a bound against a named line, "reach" as at least, and standing scopes said in other words."""

from __future__ import annotations

import pytest

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.inspect import inspect_code
from stateguard.verification import carried, rule_windows, standing, stated_sides
from stateguard.verification.bind_shape import _turn_window
from stateguard.verification.extract import comparisons, word_number
from stateguard.verification.superseded import KIND, FlagHistory, _sql_flags, names_term
from stateguard.verification.unstated_cutoff import bounds
from stateguard.verification.vocabulary import column_tokens
from tests.stateguard.verification.conftest import Session

# --- flags written longhand ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("select", "flags"),
    [
        (
            "SELECT *, CASE WHEN hours >= 1800 THEN TRUE ELSE FALSE END AS full_year FROM w",
            [("full_year", "hours >= 1800")],
        ),
        ("SELECT *, CASE WHEN a > 1 THEN 1 ELSE 0 END AS f FROM t", [("f", "a > 1")]),
        ("SELECT *, IF(a > 1, TRUE, FALSE) AS f FROM t", [("f", "a > 1")]),
        (
            "SELECT * REPLACE (kappa >= 2 * MEDIAN(kappa) OVER (PARTITION BY yr) AS raised) FROM s",
            [("raised", "kappa >= 2 * MEDIAN(kappa) OVER (PARTITION BY yr)")],
        ),
        ("SELECT *, CASE WHEN a > 1 THEN 'big' ELSE 'small' END AS size FROM t", []),  # a label, no flag
        ("SELECT *, CASE WHEN a > 1 THEN 1 WHEN a > 0 THEN 0 END AS f FROM t", []),  # two branches
    ],
)
def test_a_sql_flag_written_longhand_is_its_condition(select: str, flags: list[tuple[str, str]]) -> None:
    assert _sql_flags(select) == flags


def test_a_case_when_flag_restated_after_its_update_is_found() -> None:
    history = FlagHistory()
    first = (
        "cx.execute('CREATE OR REPLACE TABLE wh AS SELECT *, "
        "CASE WHEN hours >= 1800 THEN TRUE ELSE FALSE END AS full_year FROM wives')"
    )
    second = (
        "cx.execute('CREATE OR REPLACE TABLE wh AS SELECT * REPLACE "
        "(hours >= 1.3 * MEDIAN(hours) OVER (PARTITION BY occupation) AS full_year) FROM wh')"
    )
    history.record(2, first, inspect_code(first))
    history.record(7, second, inspect_code(second))
    code = "n = cx.execute('SELECT COUNT(*) FROM wh WHERE hours >= 1800').fetchone()[0]"
    found = history.restated("How many full-year workers are there as now defined?", code, inspect_code(code))
    assert [(f.before, f.after, f.old.turn, f.current.turn) for f in found] == [
        ("hours >= 1800", "full_year", 2, 7)
    ]


DEFINE = "Call an order pricey when its price is at least 100. How many are pricey? Report `n_pricey`."
REDEFINE = "Pricey now means at least 1.5 times its category's median price. How many now? Report `n_pricey`."
USE = "What is the mean rating of the pricey orders under the current definition? Report `mean_rating`."


def test_a_pandas_method_rule_restated_as_an_operator_is_a_finding() -> None:
    session = Session()
    define = "import json\norders['pricey'] = orders.price.ge(100)\nprint(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    redefine = (
        "import json\nmed = orders.groupby('category')['price'].transform('median')\n"
        "orders['pricey'] = orders['price'] >= 1.5 * med\nprint(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )
    assert session.turn(DEFINE, define) == []
    assert session.turn(REDEFINE, redefine) == []
    wrong = (
        "import json\nsel = orders[orders['price'] >= 100]\n"
        "print(json.dumps({'mean_rating': round(float(sel['rating'].mean()), 3)}))"
    )
    findings = session.turn(USE, wrong)
    assert [f.variables for f in findings if KIND in f.evidence] == [["sel"]]
    right = wrong.replace("orders['price'] >= 100", "orders['pricey']")
    assert session.turn(USE, right) == []


def test_a_restated_method_call_takes_its_closing_parenthesis() -> None:
    history = FlagHistory()
    for turn, rule in ((2, "males.wage.ge(2.0)"), (7, "males['wage'] >= males['med'] + 0.3")):
        code = f"males['well_paid'] = {rule}"
        history.record(turn, code, inspect_code(code))
    code = "wp = late[late.wage.ge(2.0)]\nresult = len(wp)"
    found = history.restated("How many late person-years are well paid now?", code, inspect_code(code))
    assert [(f.before, f.after) for f in found] == [("late.wage.ge(2.0)", "late.well_paid")]


# --- a group statistic joined back ---------------------------------------------------------------

COLUMNS = ["occupation", "nonwhite", "owned", "mode", "income_band", "sample_yr", "sex", "industry"]


@pytest.mark.parametrize(
    ("rule", "column"),
    [
        (
            "at least 1.3 times the median hours of all wives whose husbands have the same occupation code",
            "occupation",
        ),
        ("which trips cost at least three times their mode's median price", "mode"),
        (
            "reach 1.3 times the median hours for their husband's occupation yet work under 1,800 hours",
            "occupation",
        ),
        ("clear their industry's median log wage by 0.3", "industry"),
        ("at least twice the median of their income level", None),  # no column named whole
    ],
)
def test_the_group_a_rule_states(rule: str, column: str | None) -> None:
    stated = rule_windows.stated_group(rule, COLUMNS)
    assert (stated.column if stated else None) == column


def test_a_column_named_with_a_year_binds_to_its_word() -> None:
    cols = ["posit86", "team86", "education", "gender"]
    assert column_tokens("posit86") == ["posit", "86"]
    said = "a player whose home runs exceed 1.5 times the median of all players listed at the same position"
    assert rule_windows.stated_group(said, cols) == rule_windows.Stated("posit86", "at the same position")
    said = "at least 10% above the median SAT-Q of all respondents with the same education level"
    stated = rule_windows.stated_group(said, cols)
    assert stated is not None and stated.column == "education"


def _sel(code: str):
    return inspect_code(code)


def test_a_cte_grouped_by_other_keys_is_rejoined_over_the_stated_group() -> None:
    code = (
        "cx.execute('''CREATE OR REPLACE TABLE wh AS\n"
        "WITH m AS (SELECT occupation, nonwhite, MEDIAN(hours) AS med FROM w GROUP BY occupation, nonwhite)\n"
        "SELECT w.*, w.hours >= 1.3 * m.med AS fy FROM w JOIN m USING (occupation, nonwhite)''')"
    )
    stated = rule_windows.Stated("occupation", "the same occupation")
    found = rule_windows.joined_site(code, _sel(code), stated)
    assert found is not None and found.keys == ["occupation", "nonwhite"] and found.sel is not None
    assert "GROUP BY occupation)" in found.after and "USING (occupation)" in found.after
    assert "nonwhite" not in found.after
    # an ON join keeps its aliases
    on = code.replace(
        "USING (occupation, nonwhite)", "ON m.occupation = w.occupation AND m.nonwhite = w.nonwhite"
    )
    found = rule_windows.joined_site(on, _sel(on), stated)
    assert found is not None and "ON m.occupation = w.occupation" in found.after
    # grouped as stated: nothing to re-run; a window in the turn is `code_site`'s
    right = code.replace(", nonwhite", "")
    assert rule_windows.joined_site(right, _sel(right), stated) is None
    windowed = code + "\ncx.execute('SELECT MEDIAN(x) OVER (PARTITION BY sex) FROM w')"
    assert rule_windows.joined_site(windowed, _sel(windowed), stated) is None


@pytest.mark.parametrize(
    ("code", "before", "after"),
    [
        (
            'med = trips.groupby("income_band")["price"].median()\n'
            'trips["pricey"] = trips["price"] >= 3 * trips["income_band"].map(med)\n',
            '"income_band")["price"].median()\ntrips["pricey"] = trips["price"] >= 3 * trips["income_band"',
            '\'mode\')["price"].median()\ntrips["pricey"] = trips["price"] >= 3 * trips[\'mode\'',
        ),
        (
            'by_mode = trips.groupby("income_band")["price"].median().rename("m")\n'
            'cand = diy.join(by_mode, on="income_band")\n',
            '"income_band")["price"].median().rename("m")\ncand = diy.join(by_mode, on="income_band"',
            "'mode')[\"price\"].median().rename(\"m\")\ncand = diy.join(by_mode, on='mode'",
        ),
    ],
)
def test_a_pandas_group_statistic_looked_up_by_other_keys(code: str, before: str, after: str) -> None:
    found = rule_windows.joined_site(code, _sel(code), rule_windows.Stated("mode", "their mode's median"))
    assert found is not None and (found.before, found.after, found.sel) == (before, after, None)
    assert found.names[0] in ("med", "by_mode") and len(found.names) == 2


def test_a_looked_up_statistic_on_keys_that_disagree_is_left_alone() -> None:
    code = 'med = t.groupby("a")["x"].median()\nt["f"] = t["x"] > t["b"].map(med)\n'
    assert rule_windows.joined_site(code, _sel(code), rule_windows.Stated("mode", "")) is None


def test_a_group_statistic_over_another_key_is_a_finding_end_to_end() -> None:
    session = Session()
    question = (
        "Which orders cost at least twice their category's median price? How many are there? Report `n`."
    )
    wrong = (
        "import json\nmed = orders.groupby('region')['price'].median()\n"
        "big = orders[orders['price'] >= 2 * orders['region'].map(med)]\nprint(json.dumps({'n': len(big)}))"
    )
    findings = session.turn(question, wrong)
    assert len(findings) == 1 and set(findings[0].variables) == {"med", "big"}
    right = wrong.replace("'region'", "'category'")
    assert Session().turn(question, right) == []


# --- numbers, lines, sides -------------------------------------------------------------------------


def test_numbers_in_words_up_to_ninety_and_whole_compounds() -> None:
    found = bounds("wives with sixteen or more years of schooling, aged twenty-five or older, under forty")
    assert sorted((x, op) for x, _, op, _ in found) == [(16.0, ">="), (25.0, ">="), (40.0, "<")]


def test_a_bound_against_a_named_line() -> None:
    found = bounds("A kappa above the laboratory's reference limit of 1.94 mg/dL counts as raised.")
    assert [(x, op) for x, _, op, _ in found] == [(1.94, ">")]
    assert bounds("above the median of 5 groups") == []  # no line named


def test_reach_is_at_least() -> None:
    assert ">=" in LEXICON.ops_of("reaches")


def test_a_case_elsewhere_on_the_line_does_not_hide_a_flipped_side() -> None:
    code = (
        'n = cx.execute("""SELECT count(*), sum(CASE WHEN child5 > 0 THEN 1 ELSE 0 END) '
        'FROM wives WHERE education <= 16""").fetchone()'
    )
    found = stated_sides.flipped("How many wives have sixteen or more years of schooling?", code)
    assert found is not None and found.after.endswith(">= 16")
    inside = (
        'n = cx.execute("""SELECT sum(CASE WHEN education <= 16 THEN 1 ELSE 0 END) FROM wives""").fetchone()'
    )
    assert stated_sides.flipped("How many wives have sixteen or more years of schooling?", inside) is None


def test_a_rank_columns_window_is_turned_the_stated_way() -> None:
    sql = "SELECT hh FROM (SELECT hh, ROW_NUMBER() OVER (ORDER BY income, hh) AS rk FROM p) WHERE rk <= 5 ORDER BY rk"
    assert _turn_window(sql, True) == sql.replace("ORDER BY income, hh", "ORDER BY income DESC, hh")
    assert _turn_window(sql.replace("income,", "income DESC,"), False) == sql


# --- standing scopes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "standing_said"),
    [
        ("every question after this one is about 1984 through 1987 only. Keep those rows as `late`.", True),
        ("each later step after this one uses the kept rows", True),
        ("How many questions are there after this?", False),
    ],
)
def test_a_scope_said_to_stand_for_every_later_question(question: str, standing_said: bool) -> None:
    assert bool(standing._STANDING.search(question)) is standing_said


@pytest.mark.parametrize(
    ("question", "back"),
    [
        (
            "Looking at prime-age full-year workers under the current definition, what is their mean age?",
            False,
        ),
        ("How many full-time staff are there?", False),
        ("Count the full table again.", True),
        ("Use the whole sample.", True),
    ],
)
def test_full_year_names_rows_and_the_full_table_brings_them_back(question: str, back: bool) -> None:
    assert standing._brings_back(question) is back


# --- after fresh23's first look ----------------------------------------------------------------------


def test_a_bound_with_no_subject_binds_only_to_a_cut_off_it_can_be() -> None:
    from stateguard.inspection.code_model import CodeSemantics
    from stateguard.verification.binder import Binder
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(tables={"flagged": {"age": ColumnInfo(kind="num", low=24, high=96)}})
    binder = Binder(CodeSemantics(), vocab)
    assert not binder.within("age", 14.0)  # "from 12 up to 14 g/dL" is no cut-off on age
    assert binder.within("age", 70.0)
    assert binder.within("age", 7000.0) is False
    assert binder.within("dose", 14.0)  # no known range
    assert binder.within("age", 0.05)  # in thousands: 50
    assert not binder.within("age", 0.05, scaled=False)  # only as said


def test_a_range_from_one_number_up_to_another_with_a_unit() -> None:
    [req] = comparisons("how many of them have a hemoglobin from 12 up to 14 g/dL, both ends included")
    assert (req.op, req.value, req.upper, req.subject) == (">=", 12.0, 14.0, ["hemoglobin"])


def test_compound_numbers_in_words() -> None:
    assert word_number("sixty-five") == 65.0 and word_number("twenty one") == 21.0
    assert word_number("forty") == 40.0 and word_number("sixty-fives") is None
    found = bounds("Sixty-five or older at the operation: how many patients?")
    assert [(x, op) for x, _, op, _ in found] == [(65.0, ">=")]


def test_out_of_that_group_refers_back() -> None:
    assert carried._BACK_FIRST.match("And out of that group, how many drew unemployment insurance?")
    assert carried.refers_back("how many of them, out of those, drew benefits")


@pytest.mark.parametrize(
    ("said", "column"),
    [
        ("at least twice the median alcohol share of all households in its region", "region"),
        ("at least twice the median thickness of all patients with the same ulceration status", "ulcer"),
        ("at least 10% above the median BMI of all women in her age band", "age_band"),
        ("at least 1.3 times the median price of all listings with the same amount of RAM", "ram"),
        ("the median of all wives whose husbands have the same occupation code", "occupation"),
    ],
)
def test_more_group_phrases(said: str, column: str) -> None:
    stated = rule_windows.stated_group(
        said, ["region", "ulcer", "sex", "age", "age_band", "occupation", "code", "ram", "screen"]
    )
    assert stated is not None and stated.column == column


def test_everything_that_follows_is_a_standing_scope() -> None:
    assert standing._STANDING.search("Everything that follows is about the patients diagnosed before 75")


def test_a_flag_set_by_update_and_by_np_where_is_a_definition() -> None:
    history = FlagHistory()
    first = 'conn.execute("UPDATE budget SET drinker = salcohol > 0.03")'
    second = (
        'conn.execute("""UPDATE budget SET drinker = budget.salcohol >= 2 * r.med\n'
        "FROM (SELECT region, median(salcohol) AS med FROM budget GROUP BY region) r\n"
        'WHERE budget.region = r.region""")'
    )
    history.record(2, first, inspect_code(first))
    history.record(7, second, inspect_code(second))
    assert [v.text for v in history.versions["drinker"]] == [
        "salcohol > 0.03",
        "budget.salcohol >= 2 * r.med",
    ]
    code = "n = conn.execute(\"SELECT count(*) FROM families WHERE salcohol > 0.03 AND occupation = 'blue'\").fetchone()"
    found = history.restated(
        "the count of drinking families under the current rule", code, inspect_code(code)
    )
    assert [(f.before, f.after, f.current.holder) for f in found] == [
        ("salcohol > 0.03", "drinker", "budget")
    ]
    pandas = FlagHistory()
    code = 'mel["thick"] = np.where(mel["thickness"] > 4, True, False)'
    pandas.record(2, code, inspect_code(code))
    assert [v.text for v in pandas.versions["thick"]] == ['mel["thickness"] > 4']


@pytest.mark.parametrize(
    ("flag", "question", "term"),
    [
        ("drinker", "the drinking flag as it now stands", "drinking"),
        ("raised", "the raised subjects", "raised"),
        ("thick", "how many are thickset", "thickset"),  # a prefix, as before
        ("drinker", "the drifting boats", None),  # another word of the same start
    ],
)
def test_a_flag_is_named_by_a_word_of_its_stem(flag: str, question: str, term: str | None) -> None:
    assert names_term(flag, question) == term


def test_a_where_through_coalesce_keeps_the_unmatched_rows() -> None:
    from stateguard.verification.sql_edit import unfilter_kept_side

    zero = (
        "SELECT count(*) FROM codes e LEFT JOIN (SELECT ethn, count(*) AS k FROM w WHERE high GROUP BY ethn) h "
        "ON h.ethn = e.ethn WHERE coalesce(h.k, 0) = 0"
    )
    assert unfilter_kept_side(zero, "left") is None
    strong = "SELECT count(*) FROM e LEFT JOIN v ON v.id = e.id WHERE v.strong"
    assert (
        unfilter_kept_side(strong, "left") == "SELECT COUNT(*) FROM e LEFT JOIN v ON v.id = e.id AND v.strong"
    )


def test_rows_named_before_a_colon_are_the_first_count() -> None:
    question = (
        "Wives with thirteen or more years of school: how many are there, and how many of them did paid work?"
    )
    assert carried.count_pair(question) == (
        "Wives with thirteen or more years of school",
        "how many of them did paid work",
    )
    assert [(r.op, r.value) for r in carried.carried_bounds(question)] == [(">=", 13.0)]
    assert carried.count_pair("Wives with a degree: how many worked?") is None  # one count only
