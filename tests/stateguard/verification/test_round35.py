"""Round 35: a number said twice, a coordination read past the pattern's words, the grouping the code
states exactly, and a statistic that names a rule.

Written from fresh47's first look, whose three false repairs on clean runs each read words that name
something other than a requirement:

* "treats the bottom mark, 1, as low ... how many lecturers got at least one": the number the code
  tests is also said with no side, so the bound's side says nothing about the code's one test of it;
* "the mean hours of their number of children and year": an "and" right after the pattern's words
  joins a second key, as one inside them does;
* "the year with the most of them", where the code counts per year and, on the way, takes a statistic
  per number of children and year: the grouping by the stated key alone is the one asked for;
* "high meaning the specimen-and-batch median rule": a statistic right before a rule's noun names the
  rule and asks for no statistic.
"""

from __future__ import annotations

import pytest

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification import extract, rule_windows, stated_sides
from tests.stateguard.verification.conftest import Session


@pytest.mark.parametrize(
    ("said", "caught"),
    [
        # the bound's number is said again with no side: the code's one test may be that mention's
        ("Treat the bottom mark, 1, as low. How many lecturers got at least one?", False),
        # said once, on one side: the code keeps the other
        ("How many lecturers gave a mark of at least 1?", True),
    ],
)
def test_a_number_said_apart_from_its_bound_states_no_side(said: str, caught: bool) -> None:
    code = "low = marks[marks['y'] <= 1]\nn = low['d'].nunique()"
    assert (stated_sides.flipped(said, code) is not None) is caught


MARKS = "marks = pd.DataFrame({'d': [1, 1, 2, 3, 3, 4], 'y': [1, 5, 2, 1, 4, 3]})"


def test_a_count_of_at_least_one_is_no_bound_on_the_rule() -> None:
    session = Session()
    assert session.ws.run_cell(MARKS).ok
    code = (
        "import json\nmarks['low'] = marks['y'] <= 1\n"
        "print(json.dumps({'n_low': int(marks['low'].sum()), 'n_lect': int(marks.loc[marks['low'], 'd'].nunique())}))"
    )
    question = (
        "The office treats the bottom mark, 1, as a low mark. Add a boolean low. How many marks are low "
        "and how many different lecturers got at least one?"
    )
    assert session.turn(question, code) == []


PANEL = ["kids", "year", "age"]
PANEL_WORDS = {"kids": ("number", "children"), "year": ("survey", "year")}


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        # the pattern's words end right before the "and": the second key is read all the same
        (
            "at least 10% above the mean hours of their number of children and year but short of 2,500 hours",
            ["kids", "year"],
        ),
        # a word after the "and" that names nothing: the group is unread, not the first key alone
        (
            "at least 10% above the mean hours of their number of children and weather but short of 2,500",
            None,
        ),
    ],
)
def test_an_and_right_after_the_pattern_joins_a_second_key(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, PANEL, PANEL_WORDS, ["hours"])
    assert (found.keys if found is not None else None) == keys


HOURS = (
    "panel = pd.DataFrame({'kids': [0, 0, 1, 1, 2, 2, 0, 1], 'year': [1, 2, 1, 2, 1, 2, 1, 2],"
    " 'hours': [2000, 2600, 1800, 2400, 2100, 1500, 2300, 2500]})"
)


@pytest.mark.parametrize(("exact", "caught"), [(True, False), (False, True)])
def test_the_grouping_by_the_stated_key_alone_is_the_one_asked(exact: bool, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(HOURS).ok
    step = (
        "cell = panel.groupby(['kids', 'year'])['hours'].mean().rename('m').reset_index()\n"
        "joined = panel.merge(cell, on=['kids', 'year'])\nhigh = joined[joined['hours'] >= joined['m']]\n"
    )
    if exact:
        answer = "top = int(high['year'].value_counts().idxmax())\n"
    else:
        # the answer itself counted per number of children and year: not per year
        answer = "per = high.groupby(['kids', 'year']).size().rename('n').reset_index()\ntop = int(per.loc[per['n'].idxmax(), 'year'])\n"
    code = "import json\n" + step + answer + "print(json.dumps({'n': len(high), 'top_year': top}))"
    findings = session.turn("How many rows are high, and which year has the most of them?", code)
    assert bool(findings) is caught


def test_a_statistic_before_a_rule_noun_names_the_rule() -> None:
    assert LEXICON.statistics_in("high meaning the specimen-and-batch median rule", asked=True) == set()
    assert LEXICON.statistics_in("high meaning the specimen-and-batch median rule") == {"median"}
    assert LEXICON.statistics_in("the median concentration under the mean-line", asked=True) == {"median"}
    reqs = extract.aggregations("Redo the table, high meaning the specimen-and-batch median rule.", [])
    assert reqs == []
    reqs = extract.aggregations("Redo the table with the median concentration of each lab.", [])
    assert [r.function for r in reqs] == ["median"]


LABS = "early = pd.DataFrame({'Lab': ['a', 'a', 'b', 'b', 'b'], 'Conc': [1.0, 9.0, 2.0, 3.0, 10.0], 'high': [False, True, False, False, True]})"


@pytest.mark.parametrize(
    ("question", "caught"),
    [
        (
            "Redo lab_tab on early, high meaning the specimen-and-batch median rule. Which lab has the largest share of high readings?",
            False,
        ),
        (
            "Redo lab_tab on early with the median concentration. Which lab has the largest share of high readings?",
            True,
        ),
    ],
)
def test_a_rule_named_by_a_statistic_asks_for_no_statistic(question: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(LABS).ok
    code = (
        "import json\nlab_tab = early.groupby('Lab').agg(n=('Conc', 'size'), n_high=('high', 'sum'), conc=('Conc', 'mean'))\n"
        "top = (lab_tab['n_high'] / lab_tab['n']).idxmax()\n"
        "print(json.dumps({'conc': lab_tab['conc'].round(2).to_dict(), 'top': top}))"
    )
    assert bool(session.turn(question, code)) is caught


SURVEY = (
    "survey = pd.DataFrame({'vote88': [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3],"
    " 'female': [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],"
    " 'age': [30, 22, 70, 60, 40, 20, 45, 55, 25, 19, 60, 33]})"
)


def _older(keys: list[str], sheet: bool = False) -> str:
    typed = (
        "ballot = pd.DataFrame({'vote88': [1, 2, 3], 'candidate': ['Salinas', 'Clouthier', 'Cardenas']})\n"
    )
    return (
        "import json\n"
        + (typed if sheet else "")
        + f"medians = survey.groupby({keys!r})['age'].median().rename('median_age').reset_index()\n"
        f"ref = survey[{keys!r}].merge(medians, on={keys!r}, how='left')['median_age']\n"
        "survey['older'] = survey['age'].to_numpy() >= 1.4 * ref.to_numpy()\n"
        "print(json.dumps({'n_older': int(survey['older'].sum())}))"
    )


@pytest.mark.parametrize(("keys", "caught"), [(["vote88", "female"], False), (["vote88"], True)])
def test_a_merge_of_the_rows_own_key_columns_is_regrouped_too(keys: list[str], caught: bool) -> None:
    # `survey[["vote88"]].merge(medians, on=["vote88"])`: the picked key columns are re-run as stated
    session = Session()
    assert session.ws.run_cell(SURVEY).ok
    question = (
        "Redefine older: a respondent is older when his or her age is at least 1.4 times the median age of "
        "the respondents of the same sex who voted for the same candidate. How many are older now?"
    )
    described = "Columns: vote88 (the candidate voted for), female (1 for a woman, 0 for a man) and age."
    findings = session.turn(question, _older(keys), context=described)
    assert bool(findings) is caught


def test_a_group_key_is_a_column_of_the_rows_the_statistic_is_taken_over() -> None:
    # a typed-in sheet beside the rows has a column named `candidate`: not the statistic's key, which
    # is `vote88`, described as the candidate voted for
    session = Session()
    assert session.ws.run_cell(SURVEY).ok
    question = "Which respondents are at least 1.4 times the median age of their sex and candidate? How many are there?"
    context = "Columns: vote88 (the candidate voted for), female (1 for a woman, 0 for a man) and age."
    assert session.turn(question, _older(["vote88", "female"], sheet=True), context=context) == []
    assert session.turn(question, _older(["vote88"], sheet=True), context=context) != []


def test_words_run_together_are_a_columns_name() -> None:
    from stateguard.verification.bind_shape import _resolve_key

    assert _resolve_key("town size", ["school", "townsize"]) == ["townsize"]
    assert _resolve_key("town size", ["school", "town_size"]) == ["town_size"]
    # one word is no run of words: "size" alone names no `townsize`
    assert _resolve_key("size", ["school", "townsize"]) == []


def test_a_test_for_a_missing_match_expects_unmatched_entries() -> None:
    from stateguard.inspection.inspect import inspect_code
    from stateguard.verification import listed_joins

    sql = (
        "SELECT count(*) FROM labs l LEFT JOIN (SELECT Lab, count(*) AS k FROM early WHERE high GROUP BY Lab) h "
        "ON h.Lab = l.Lab WHERE h.k IS NULL"
    )
    assert listed_joins.tests_missing(sql, "labs", {"lab", "city"})
    # the list's own column tested for a missing value: unmatched data rows, not entries
    assert not listed_joins.tests_missing(
        sql.replace("h.k IS NULL", "l.city IS NULL"), "labs", {"lab", "city"}
    )
    code = f'n = con.execute("""{sql}""").fetchone()[0]'
    (sel,) = [s for s in inspect_code(code).selections if s.joins]
    assert listed_joins.expects_unmatched(code, sel, {"lab", "city"}, "labs")


def test_a_frame_of_values_built_by_range_and_repetition_is_typed_in() -> None:
    from stateguard.inspection.inspect import inspect_code

    code = (
        'waves = pd.DataFrame({"year": list(range(1979, 1990)), "mode": ["in person"] * 2 + ["phone"] * 9})\n'
        'other = pd.DataFrame({"year": panel["year"].unique()})'
    )
    assert inspect_code(code).listed == ["waves"]


SPELLS = (
    "spells = pd.DataFrame({'race': ['white', 'nonwhite', 'white', 'nonwhite', 'white', 'white'],"
    " 'agency': [True, True, False, False, True, False]})"
)


@pytest.mark.parametrize(("scoped", "caught"), [(True, False), (False, True)])
def test_a_brief_asides_framing_leaves_its_scope_read(scoped: bool, caught: bool) -> None:
    # "for a moment" says how long the focus lasts, no condition: the clause parses whole, so the value
    # it names scopes the turn
    session = Session()
    assert session.ws.run_cell(SPELLS).ok
    rows = "spells[spells['race'] == 'nonwhite']" if scoped else "spells"
    code = f"import json\nsub = {rows}\nprint(json.dumps({{'n': len(sub), 'n_agency': int(sub['agency'].sum())}}))"
    question = "Looking at the nonwhite respondents for a moment: how many are there, and how many went to an agency?"
    assert bool(session.turn(question, code)) is caught


# After fresh48's look (tuned on fresh48 from here)

INFERT = ["education", "age", "parity", "induced", "spontaneous", "stratum"]
INFERT_WORDS = {
    "education": ("schooling", "group", "yrs"),
    "induced": ("prior", "induced", "abortions"),
    "spontaneous": ("prior", "spontaneous", "abortions"),
}


@pytest.mark.parametrize(
    ("rule", "columns", "described", "keys"),
    [
        # a possessive opens the second key's words, read on to their end
        (
            "the median length of all quarrels that share its international flag and its colonial flag.",
            ["international", "colonial", "revolution"],
            {},
            ["international", "colonial"],
        ),
        # a hyphenated second key and a count after it
        (
            "at least 4 years above the median age of their schooling group and spontaneous-abortion count, yet under 35",
            INFERT,
            INFERT_WORDS,
            ["education", "spontaneous"],
        ),
        # "education level": `educ` by a word of its name, `edlevel` by its description: no pair
        (
            "more visits than the 90th percentile of their sex and education level, yet fewer than 12",
            ["female", "edlevel", "educ"],
            {"edlevel": ("education", "level"), "female": ("woman", "man")},
            None,
        ),
    ],
)
def test_a_second_key_read_to_its_end(
    rule: str, columns: list[str], described: dict[str, tuple[str, ...]], keys: list[str] | None
) -> None:
    found = rule_windows.stated_group(rule, columns, described, ["months", "age", "docvis"])
    assert (found.keys if found is not None else None) == keys


def test_a_bound_after_a_comma_names_no_attribute_before_it() -> None:
    clause = "which person-years had more visits than the 90th percentile of their sex and education level, yet fewer than 12"
    assert [r.subject for r in extract.comparisons(clause)] == [[]]
    assert [r.subject for r in extract.comparisons("the ones with a bill length of at least 40")] == [
        ["bill", "length"]
    ]


def test_or_better_states_a_number_without_a_side() -> None:
    from stateguard.verification import unstated_cutoff

    assert unstated_cutoff.bounds("The advisers call a math SAT of 700 or better strong.") == [
        (700.0, False, None, "700 or better")
    ]
    # the number the code does not hold is re-run; no side is read from the words
    code = "marked = students.assign(strong=students['sat'] >= 650)"
    found = unstated_cutoff.changed("The advisers call a math SAT of 700 or better strong.", [], code)
    assert found is not None and (found.before, found.after) == (">= 650", ">= 700")
    assert (
        stated_sides.flipped("The advisers call a math SAT of 700 or better strong.", "x = s['sat'] <= 700")
        is None
    )


def test_a_distance_written_before_the_statistic_is_a_site() -> None:
    from stateguard.verification import rule_offsets

    rule = "a score is strong when it is at least 60 points higher than the average SAT of the students of the same sex"
    code = "UPDATE marked SET strong = sat >= 40 + (SELECT avg(p.sat) FROM marked p WHERE p.sex = marked.sex)"
    found = rule_offsets.changed(rule, code)
    assert found is not None and found.after.replace(" ", "") == ">=60+"
    assert rule_offsets.changed(rule, code.replace("40", "60")) is None


def test_a_count_in_how_many_of_those_is_of_the_first_counts_rows() -> None:
    from stateguard.verification import counted_rows

    assert counted_rows.count_of_those(
        "The self-employed, briefly: how many person-years are there, and in how many of those did the person see a doctor at least three times?"
    )


def test_a_tie_break_is_no_earlier_version() -> None:
    from stateguard.inspection.inspect import inspect_code
    from stateguard.verification.superseded import FlagHistory

    history = FlagHistory()
    first = 'panel["frequent"] = panel["docvis"] >= 12'
    history.record(2, first, inspect_code(first), "Call a person-year frequent at 12 or more visits.")
    second = 'panel["frequent"] = panel["docvis"] > cut'
    history.record(7, second, inspect_code(second), "Redefine frequent the epidemiologist's way.")
    code = 'tab = working.assign(frequent=working["docvis"] >= 12).groupby("year")["frequent"].mean()'
    question = "Redo the table, frequent in the new sense. Which year has the biggest share of frequent person-years (earlier year on a tie)?"
    (found,) = history.restated(question, code, inspect_code(code))
    assert found.before == 'working["docvis"] >= 12'
    # an earlier version asked for by name is computed on purpose
    assert (
        history.restated(
            "Which year had the most frequent person-years under the earlier rule?", code, inspect_code(code)
        )
        == []
    )


def test_a_missing_value_test_in_pandas_expects_unmatched_entries() -> None:
    from stateguard.inspection.inspect import inspect_code
    from stateguard.verification import listed_joins

    code = (
        'levels_k = schooling.set_index("edlevel").join(k, how="left")\n'
        'n_none = int(levels_k["k"].isna().sum())'
    )
    (sel,) = [s for s in inspect_code(code).selections if s.joins]
    assert listed_joins.expects_unmatched(code, sel, {"edlevel", "label"})
    # the list's own column tested: unmatched data, not entries
    own = code.replace('levels_k["k"]', 'levels_k["label"]')
    (sel,) = [s for s in inspect_code(own).selections if s.joins]
    assert not listed_joins.expects_unmatched(own, sel, {"edlevel", "label"})


def test_a_postfix_bound_after_a_comma() -> None:
    from stateguard.verification import unstated_cutoff

    said = "Call a quarrel long when it went on for three years, 36 months, or more."
    assert unstated_cutoff.bounds(said) == [(36.0, False, ">=", "36 months, or more")]


def test_a_run_of_nouns_cut_short_by_the_window_is_read_to_its_end() -> None:
    columns = ["education", "parity", "induced", "spontaneous"]
    described = {
        "education": ("schooling", "group"),
        "parity": ("her", "number", "earlier", "births"),
        "spontaneous": ("prior", "spontaneous", "abortions"),
        "induced": ("prior", "induced", "abortions"),
    }
    rule = "the median age of the women who had the same number of prior spontaneous abortions."
    found = rule_windows.stated_group(rule, columns, described, ["age"])
    assert found is not None and found.keys == ["spontaneous"]  # not `parity` by "number" alone


WOMEN = "women = pd.DataFrame({'woman_id': range(1, 9), 'age': [21, 44, 35, 29, 40, 38, 26, 33], 'birth_year': [1966, 1943, 1952, 1958, 1947, 1949, 1961, 1954]})"


@pytest.mark.parametrize(
    ("key", "ascending", "caught"),
    [
        ("age", "[False, True]", False),
        ("age", "[True, True]", True),
        # a birth year: the oldest come first when it is smallest; no reading of the words for it
        ("birth_year", "[True, True]", False),
    ],
)
def test_a_superlative_of_age_ranks_an_age_key(key: str, ascending: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(WOMEN).ok
    code = (
        f"import json\neldest = women.sort_values([{key!r}, 'woman_id'], ascending={ascending})\n"
        "print(json.dumps({'top3': eldest['woman_id'].head(3).tolist()}))"
    )
    question = "Which three woman_ids are the oldest (smaller id first on ties)?"
    assert bool(session.turn(question, code)) is caught


def test_a_sort_cut_by_head_through_its_name() -> None:
    from stateguard.verification import ranking_sides

    code = (
        'eldest = df.sort_values(["age", "id"], ascending=[True, True])\ntop = eldest["id"].head(5).tolist()'
    )
    assert ranking_sides.first_key(code) == "age"
    found = ranking_sides.turned(code, descending=True, through_name=True)
    assert found is not None and "ascending=[False, True]" in found[1]
    # without it, only a sort cut right away (a ranked frame is the ranking check's)
    assert ranking_sides.turned(code, descending=True) is None
    # the sorted frame read whole, no head: not a ranking cut to its top rows
    assert ranking_sides.first_key(code.replace('eldest["id"].head(5)', 'eldest["id"]')) is None


@pytest.mark.parametrize(
    ("text", "earlier"),
    [
        ("their mean age, their median number of earlier births, and how many", False),
        ("how many had prior abortions", False),
        ("how many were older under the earlier rule", True),
        ("the rule we dropped", True),
        ("the earlier versions of it", True),
    ],
)
def test_an_earlier_word_before_a_plural_noun_describes_data(text: str, earlier: bool) -> None:
    from stateguard.verification.superseded import _points_earlier

    assert _points_earlier(text) is earlier


VISITS = (
    "panel = pd.DataFrame({'female': [0, 0, 0, 0, 0, 1, 1, 1, 1, 1] * 3,"
    " 'docvis': [0, 1, 2, 3, 9, 1, 2, 4, 6, 12, 0, 2, 3, 5, 8, 1, 3, 5, 7, 15, 1, 1, 2, 4, 10, 2, 2, 6, 8, 20]})"
)


@pytest.mark.parametrize(
    ("statistic", "words"),
    [
        (".quantile(0.8)", "the cut-off (threshold) applied to docvis"),
        (".median()", "the aggregation computes a different statistic"),
    ],
)
def test_a_quantile_at_another_fraction_is_another_cut_off(statistic: str, words: str) -> None:
    session = Session()
    assert session.ws.run_cell(VISITS).ok
    code = (
        f"import json\np90 = panel.groupby('female')['docvis']{statistic}.rename('p90')\n"
        "cut = panel[['female']].join(p90, on='female')['p90']\n"
        "panel['frequent'] = panel['docvis'] > cut\nprint(json.dumps({'n': int(panel['frequent'].sum())}))"
    )
    question = (
        "Redefine frequent: a person-year is frequent when its visits are strictly more than the 90th "
        "percentile of the visits of the same sex. How many are frequent?"
    )
    findings = session.turn(question, code)
    assert findings and words in findings[0].reason
