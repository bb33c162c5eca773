"""The twenty-first round: a share asked on the scale 0 to 1, and a rebuilt summary's output whose name
states the statistic it took when the summary was first built."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.policies.checks import _stated_with_units, code_forms
from stateguard.verification import (
    bind_cutoff,
    named_stats,
    rule_multiples,
    rule_statistics,
    rule_windows,
    share_base,
    stated_sides,
    unstated_cutoff,
)
from stateguard.verification.extract import comparisons, extract, scopes
from stateguard.verification.regrouped import GroupingHistory
from stateguard.verification.superseded import FlagHistory
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, described_columns, strictly_named
from tests.stateguard.verification.conftest import Session


@pytest.mark.parametrize(
    ("question", "upper"),
    [
        ("How many are bulky, and which fraction (between 0 and 1) of the samples is that?", 1.0),
        ("what fraction of the adults (0 to 1) does that make", 1.0),
        ("what fraction of the adults (0 to 1) is that, and what percentage of the men", 100.0),
        ("what share of the adults is that", 100.0),
    ],
)
def test_the_scale_a_share_is_asked_in(question: str, upper: float) -> None:
    assert share_base.stated_upper(question) == upper


def test_a_count_reported_as_a_fraction_of_0_to_1_is_found() -> None:
    question = "How many orders are rated 4 or more, and which fraction (0 to 1) of the orders is that?"
    code = (
        "n_top = int((orders['rating'] >= 4).sum())\nfrac = float((orders['rating'] >= 4).{f}())\n"
        "result = {{'n_top': n_top, 'frac_top': frac}}\nimport json\nprint(json.dumps(result))"
    )
    assert Session().turn(question, code.format(f="sum"))
    assert not Session().turn(question, code.format(f="mean"))


def _history(turn: int, code: str) -> GroupingHistory:
    history = GroupingHistory()
    history.record(turn, inspect_code(code))
    return history


def test_a_rebuilt_summary_s_output_keeps_the_statistic_its_name_states() -> None:
    first = 'con.execute("CREATE TABLE beds AS SELECT bedrooms, AVG(price) AS mean_price FROM houses GROUP BY bedrooms")'
    history = _history(3, first)
    again = first.replace("CREATE TABLE", "CREATE OR REPLACE TABLE").replace("AVG(price)", "MEDIAN(price)")
    sem = inspect_code(again)
    question = "Rebuild the bedroom summary (the one from Task 3) on the driveway houses."
    earlier = history.earlier_statistics(question, sem)
    assert earlier == {"mean_price": "mean"}
    [(req, _, agg)] = named_stats.named_statistics(question, sem, earlier)
    assert (req.function, agg.function) == ("mean", "median")
    # a question that does not refer back to the summary reads nothing from its history
    assert history.earlier_statistics("Make a table of prices by bedrooms.", sem) == {}
    # nor does an output over another column now
    other = inspect_code(again.replace("MEDIAN(price)", "MEDIAN(lotsize)"))
    assert history.earlier_statistics(question, other) == {}


def test_a_rebuilt_pandas_summary_is_checked_in_a_session() -> None:
    first = (
        "by_cat = orders.groupby('category').agg(n=('order_id', 'size'), mean_rating=('rating', 'mean'))\n"
        "import json\nprint(json.dumps({'n_cats': len(by_cat)}))"
    )
    session = Session()
    assert not session.turn("Summarise the orders by category in `by_cat`: orders and mean rating.", first)
    again = (
        "by_cat = orders[orders['price'] > 50].groupby('category').agg(n=('order_id', 'size'), "
        "mean_rating=('rating', '{f}'))\nimport json\n"
        "print(json.dumps({{'by_cat': by_cat['mean_rating'].round(3).to_dict()}}))"
    )
    question = "Rebuild `by_cat` for the orders over $50 only. Which category rates best?"
    assert [f.check for f in session.turn(question, again.format(f="median"))]


# --- fresh28's first-look false repairs --------------------------------------------------------------


def test_a_grouping_key_said_after_a_column_s_name_is_two_readings() -> None:
    vocab = Vocabulary(tables={"mv": {"mpaa": ColumnInfo(kind="text"), "rating": ColumnInfo(kind="num")}})
    question = "For the films that have an MPAA rating, make `mpaa_tab` by rating: the number of films."
    assert not [r for r in extract(question, vocab=vocab, tables=["mv"]) if r.kind.value == "grouping"]
    plain = "Make `tab` by rating: the number of films."
    assert [r.keys for r in extract(plain, vocab=vocab, tables=["mv"]) if r.kind.value == "grouping"] == [
        ["rating"]
    ]


def test_a_short_form_gives_way_to_the_column_described_with_every_word() -> None:
    vocab = Vocabulary(
        tables={"cig": {c: ColumnInfo(kind="num") for c in ("packpc", "avgprs")}}
    ).with_descriptions("packpc (packs sold per person), avgprs (average price per pack, including taxes)")
    assert not strictly_named("packpc", ["pack", "price"]) and strictly_named("yr", ["year"])
    assert described_columns(["pack", "price"], ["packpc", "avgprs"], vocab.column_words) == ["avgprs"]
    # two columns before one parenthesis share it: neither is described by it alone
    shared = Vocabulary(tables={"n": {c: ColumnInfo(kind="text") for c in ("south76", "smsa76")}})
    assert shared.with_descriptions("south76 and smsa76 (yes/no: living in the South)").column_words == {}


def test_a_rule_s_statistic_is_read_only_inside_a_multiple() -> None:
    dropped = (
        "The commission wants a price it can print rather than a moving median: dear again at 180 cents."
    )
    assert rule_statistics.stated(dropped) is None


@pytest.mark.parametrize(
    ("question", "read"),
    [
        ("what fraction of the working wives is that (between 0 and 1)", []),
        ("which fraction of `big` is that (0 to 1)", []),
        ("how many wives work between 0 and 1 hours", [(">=", 0.0, 1.0)]),
    ],
)
def test_a_scale_alone_in_parentheses_is_no_bound(
    question: str, read: list[tuple[str, float, float]]
) -> None:
    assert [(r.op, r.value, r.upper) for r in comparisons(question)] == read


def test_a_number_with_a_time_unit_is_held_in_other_units() -> None:
    said = "How many films run for longer than three hours?"
    code = 'epic = mv["length"] > 180\nresult = {"n": int(epic.sum())}'
    assert unstated_cutoff.changed(said, [said], code) is None
    assert unstated_cutoff.changed(said, [said], code.replace("180", "200")) is not None


@pytest.mark.parametrize(
    ("said", "value"),
    [("a dollar eighty or more", 1.8), ("under two dollars fifty cents", 2.5), ("at least eighty", 80.0)],
)
def test_money_in_words(said: str, value: float) -> None:
    [req] = comparisons(said)
    assert req.value == value


def test_per_cent_in_two_words_is_a_percentage() -> None:
    [(x, unit)] = _stated_with_units("priced at least 10 per cent over their year's median")
    assert (x, unit) == (10.0, "percent") and 1.1 in code_forms(x, unit)


# --- fresh28's misses, read after its look ------------------------------------------------------------


def test_a_flag_named_like_an_earlier_version_word_is_still_its_own_name() -> None:
    history = FlagHistory()
    for turn, cell in enumerate(['wt["older"] = wt["age"] >= 48', 'wt["older"] = wt["age"] >= 1.5 * med'], 1):
        history.record(turn, cell, inspect_code(cell))
    code = 'old_fav = fav[fav["age"] >= 48]\nn = len(old_fav)'
    question = "Looking only at the older children of `fav` under the current definition: how many?"
    [found] = history.restated(question, code, inspect_code(code))
    assert (found.before, found.after) == ('fav["age"] >= 48', "fav['older']")
    # a question that points at the earlier rule in other words asks for it
    assert (
        history.restated("the older children under the original 48-month line", code, inspect_code(code))
        == []
    )


def test_a_flag_is_named_by_the_term_its_definition_used() -> None:
    history = FlagHistory()
    defined = 'cn.execute("CREATE TABLE hh AS SELECT *, husby > 45 AS big_earner FROM wives")'
    history.record(
        1, defined, inspect_code(defined), "a husband is a high earner if his income tops 45 thousand"
    )
    again = 'cn.execute("CREATE OR REPLACE TABLE hh AS SELECT * REPLACE (husby >= 1.75 * m AS big_earner) FROM hh")'
    history.record(2, again, inspect_code(again))
    assert history.terms == {"big_earner": ["high earner"]}
    code = 'n = cn.execute("SELECT count(*) FROM workers WHERE husby > 45").fetchone()[0]'
    question = "Among working wives whose husbands are high earners by today's rule: how many?"
    [found] = history.restated(question, code, inspect_code(code))
    assert found.after == "big_earner"


@pytest.mark.parametrize(
    ("rule", "multiple", "op"),
    [
        ("acclaimed when its rating is at least one fifth above the median rating of its year", 1.2, ">="),
        ("a high earner when his income is 1.75 times or more the median income of his region", 1.75, ">="),
        ("low when it is a quarter below the median of its group", 0.75, None),
    ],
)
def test_a_rule_s_multiple_said_as_a_fraction_or_with_its_side_after(
    rule: str, multiple: float, op: str | None
) -> None:
    stated = rule_multiples.stated(rule)
    assert stated is not None and (round(stated.multiple, 9), stated.op) == (multiple, op)


# --- fresh29's first look -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "multiple"),
    [
        ("low when the income falls short of three fifths of the median income of its cover", 0.6),
        ("long when it lasts at least twice as long as the median spell of its group", 2.0),
    ],
)
def test_more_ways_to_say_a_rule_s_multiple(rule: str, multiple: float) -> None:
    stated = rule_multiples.stated(rule)
    assert stated is not None and round(stated.multiple, 9) == multiple
    said = rule_statistics.stated(rule)
    assert said is not None and said.function == "median"


def test_a_rule_s_statistic_is_one_taken_per_row_or_per_group() -> None:
    # the rule named in the context is being dropped; the turn's one mean is a share over all rows
    code = 'frac = con.execute("SELECT avg(CASE WHEN dear THEN 1.0 ELSE 0.0 END) FROM big").fetchone()[0]'
    assert named_stats.only_statistic("a moving median is dropped", inspect_code(code), rule=True) == []
    grouped = (
        'med = dr.groupby("insurance")["income"].transform("mean")\ndr["low"] = dr["income"] < 0.6 * med'
    )
    [(req, _, agg)] = named_stats.only_statistic(
        "three fifths of the median income", inspect_code(grouped), rule=True
    )
    assert (req.function, agg.function) == ("median", "mean")


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("under three thousand dollars", 3000.0),
        ("at least two million residents", 2e6),
        ("under twenty-five thousand", 25e3),
    ],
)
def test_a_number_in_words_with_its_scale(said: str, value: float) -> None:
    [req] = comparisons(said)
    assert req.value == value


def test_an_amount_in_tens_of_thousands() -> None:
    assert bind_cutoff.unit_scale(3000.0, {0.3}) == 1e-4
    assert bind_cutoff.unit_scale(3000.0, {3.0}) == 1e-3  # thousands first


def test_an_entry_kept_with_nothing_is_no_scope() -> None:
    vocab = Vocabulary(
        tables={"cover": {"insurance": ColumnInfo(kind="text", values=["medlevy", "overseas"])}}
    )
    assert scopes("Keep the overseas label with 0 respondents.", vocab, ["cover"]) == []
    [req] = scopes("Only the overseas respondents, please.", vocab, ["cover"])
    assert req.values == ["overseas"]


def test_a_boolean_mask_of_its_own_has_no_rows_to_check() -> None:
    question = "What share, in percent, of the orders from the North are rated 4 or more?"
    code = (
        "north = orders['region'] == 'North'\n"
        "result = {'pct_north_top': float(100 * (orders.loc[north, 'rating'] >= 4).mean())}\n"
        "import json\nprint(json.dumps(result))"
    )
    assert not Session().turn(question, code)


# --- fresh29's misses, read after its look ------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "code", "after"),
    [
        ("How many men had a mother with at least twelve years of school?", 'm = men["med"] > 12', ">= 12"),
        (
            "how many people were 50 or over?",
            'n = con.execute("SELECT count(*) FROM sp WHERE age > 50")',
            ">= 50",
        ),
        ("more than half of the pupils", 'x = d[d["p"] >= 50]', "> 50"),
    ],
)
def test_the_stated_side_with_another_end_is_re_run_with_the_stated_end(
    said: str, code: str, after: str
) -> None:
    found = stated_sides.flipped(said, code)
    assert found is not None and found.after == after


def test_the_stated_end_or_a_contrast_is_left_alone() -> None:
    assert stated_sides.flipped("at least twelve years of school", 'm = men["med"] >= 12') is None
    # "at least 12" and "more than 12" both said: which end is meant is not one reading
    assert stated_sides.flipped("at least 12 years, and how many more than 12", 'm = men["med"] > 12') is None


def test_a_value_as_the_first_part_of_a_compound_adjective() -> None:
    vocab = Vocabulary(tables={"fam": {"sex": ColumnInfo(kind="text", values=["man", "woman"])}})
    [req] = scopes("what percentage of the woman-headed households qualify?", vocab, ["fam"])
    assert req.values == ["woman"]
    assert scopes("how many woman-to-man pairs are there?", vocab, ["fam"]) == []


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("a husband is a high earner if his income tops 45 thousand dollars", [(">", 45.0)]),
        ("children aged 48 months and up", [(">=", 48.0)]),
        ("the top 5 states by income", []),
        ("from 5 and up to 10", [("<=", 10.0)]),
    ],
)
def test_tops_and_and_up(said: str, read: list[tuple[str, float]]) -> None:
    assert [(r.op, r.value) for r in comparisons(said)] == read


def test_a_rule_s_group_by_description_needs_the_words_in_a_row() -> None:
    described = {"age": ("years", "sampling"), "sp": ("colour", "form")}
    columns = ["age", "sp", "sample_yr"]
    assert (
        rule_windows.stated_group("at least 1.5 times the median of their sampling year", columns, described)
        is None
    )
    assert (
        rule_windows.stated_group(
            "1.5 times the median kappa of subjects in the same year", columns, described
        )
        is None
    )
    stated = rule_windows.stated_group(
        "at least 1.1 times the median width of its colour form", columns, described
    )
    assert stated is not None and stated.column == "sp"


def test_a_rule_s_group_said_as_bands_of_a_measure_is_not_read() -> None:
    rule = "at least 3 points above the average Yes share of its council-tax band"
    assert rule_windows.stated_group(rule, ["council"], {}, ["council_tax", "yes_pct"]) is None
    assert (
        rule_windows.stated_group(rule, ["council"], {}) is not None
    )  # without the measures: the old reading


def test_a_rule_s_statistic_taken_by_a_correlated_subquery() -> None:
    rule = "a husband earning at least 1.75 times the median husband's income of his wife's region"
    code = (
        'rows = cn.execute("""SELECT * FROM workers w\\n'
        'WHERE w.husby >= 1.75 * (SELECT avg(h.husby) FROM hh h WHERE h.region = w.region)""").fetchall()'
    )
    found = rule_statistics.changed(rule, code)
    assert found is not None
    assert found.site.after == "(SELECT median(h.husby) FROM hh h WHERE h.region = w.region)"
    # a subquery over all rows (no correlation) is not the rule's group statistic
    overall = code.replace(" WHERE h.region = w.region", "")
    assert rule_statistics.changed(rule, overall) is None
