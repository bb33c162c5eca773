"""Round 34: group phrases read to their end, and gates that see what a constraint saw.

Written from fresh45's first look, whose four false repairs on clean runs each came from a phrase read
in part or a gate that could not read its evidence:

* "that same day", "the very same ward": "same" after any determiner that points back is a group
  phrase's "the same" (a chain's second key, or an unread group);
* "the mean of their treatment and day": the words after the "and" are a second key, read by name
  or by the task's words for a column, or the group is not read at all;
* a statistic's word ends a group phrase: in "their cell's median angle" the group is the cell, and
  the angle is the measure;
* an item checked as the state's executable constraint fails with what its probe observed in the
  message; that is read back, so the typed-in-list gate decides on it as on a probe's outcome;
* a grouping phrase that names no column by name ("per hospital group") binds the one column whose
  description in the task's text says every word of it; R's dotted names (`hos.cat`) describe the
  underscored column a frame keeps (`hos_cat`).
"""

from __future__ import annotations

import pytest

from stateguard.verification import emptied, probes, rule_windows
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import Session

TREES = ["treat", "Time", "tree"]
TREE_WORDS = {"Time": ("day", "measurement", "counted")}


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        # a participle ends the first phrase; "that same day" is the second key, by its description
        (
            "a tree is large when its size beats the mean size of the trees under the same treatment "
            "measured that same day by half a unit",
            ["treat", "Time"],
        ),
        ("above the mean size of the trees under the same treatment on the very same day", ["treat", "Time"]),
        # "that same <words>" naming nothing, right after a phrase read: not one key alone
        ("above the mean size of the trees under the same treatment measured that same week", None),
    ],
)
def test_that_same_is_a_the_same(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, TREES, TREE_WORDS, ["size"])
    assert (found.keys if found is not None else None) == keys


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        # the second key by the task's words for `Time` ("the day of the measurement")
        ("half a unit above the mean of their treatment and day but under 5.8", ["treat", "Time"]),
        ("half a unit above the mean of their treatment and day.", ["treat", "Time"]),
        # a second noun naming no column: the group is not read whole, so not at all
        ("half a unit above the mean of their treatment and weather but under 5.8", None),
        # the clause goes on after the "and": the first phrase alone, as before
        ("half a unit above the mean of their treatment and then flagged", ["treat"]),
    ],
)
def test_a_second_noun_after_and_is_a_key_or_the_group_is_unread(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, TREES, TREE_WORDS, ["size"])
    assert (found.keys if found is not None else None) == keys


def test_a_statistic_word_ends_the_group_phrase() -> None:
    # `angle` holds whole degrees in a short range, so it could name a group: the statistic's word
    # before it says it is the measure, and "cell" names no column
    columns = ["recipe", "temperature", "angle"]
    rule = "broke 4 degrees or more short of their cell's median angle"
    assert rule_windows.stated_group(rule, columns, {}, ["replicate"]) is None
    # the possessor naming a column is read
    found = rule_windows.stated_group("4 degrees short of their recipe's median angle", columns, {}, [])
    assert found is not None and found.keys == ["recipe"]


def test_a_constraint_failure_is_read_back_as_the_probe_saw_it() -> None:
    message = (
        "AssertionError: requirement not met: {'sites': [{'rows': 204, 'rows_breaking_requirement': 203}]}"
    )
    outcome = probes.constraint_outcome(False, message)
    assert outcome.violated is True and outcome.observed["sites"] == [
        {"rows": 204, "rows_breaking_requirement": 203}
    ]
    assert outcome.observed["constraint"] == message
    # the typed-in list's one entry (Toronto) is all that meets the scope: the gate now sees it
    assert emptied.entries_only(outcome.observed, 1)
    assert not emptied.entries_only(
        probes.constraint_outcome(False, message.replace("203", "150")).observed, 1
    )
    # a message that is no literal, or a passing check: the message only
    assert probes.constraint_outcome(False, "requirement not met: {'x': np.float64(1.0)}").observed == {
        "constraint": "requirement not met: {'x': np.float64(1.0)}"
    }
    assert probes.constraint_outcome(True, None) == probes.ProbeOutcome(
        violated=False, observed={"constraint": None}
    )


def test_an_r_dotted_name_describes_the_underscored_column() -> None:
    vocab = Vocabulary(tables={"cgd": {c: ColumnInfo(kind="text") for c in ["hos_cat", "center"]}})
    text = "Columns: center (the hospital), hos.cat (the hospital group: US or Europe)."
    words = vocab.with_descriptions(text).column_words
    assert words["hos_cat"][:2] == ("hospital", "group") and words["center"] == ("hospital",)


HOSPITALS = (
    "Columns: rec (the interval), center (the hospital), hos.cat (the hospital group: US:NIH, US:other or "
    "Europe), weight (kg)."
)
FRAME = (
    "cgd = pd.DataFrame({'rec': range(8), 'center': ['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd'],"
    " 'hos_cat': ['US', 'US', 'EU', 'EU', 'US', 'US', 'EU', 'EU'], 'weight': [50, 60, 70, 80, 55, 65, 75, 85]})"
)


@pytest.mark.parametrize(("key", "caught"), [("hos_cat", False), ("center", True)])
def test_a_grouping_phrase_binds_the_column_its_words_describe(key: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(FRAME).ok
    code = f"per_group = cgd.groupby('{key}').agg(med=('weight', 'median'))\nprint(per_group)"
    findings = session.turn("The median weight per hospital group?", code, context=HOSPITALS)
    assert bool(findings) is caught
    if caught:
        assert "per hospital group" in findings[0].reason


def test_a_one_word_or_cut_short_phrase_binds_no_described_key() -> None:
    from stateguard.verification.bind_shape import _described_key

    vocab = Vocabulary(
        tables={"t": {c: ColumnInfo(kind="text") for c in ["hos_cat", "center", "ndi"]}},
        column_words={
            "hos_cat": ("hospital", "group"),
            "center": ("hospital",),
            "ndi": ("income", "per", "head"),
        },
    )
    pool = ["hos_cat", "center", "ndi"]
    assert _described_key(["hospital", "group"], pool, vocab) == "hos_cat"
    # one word, or words cut short around a function word: no key
    assert _described_key(["hospital"], pool, vocab) is None
    assert _described_key(["head", "and", "the"], pool, vocab) is None


@pytest.mark.parametrize(
    ("values", "keys"),
    [
        ({"treat": ("placebo", "rIFN-g"), "inherit": ("X-linked", "autosomal")}, ["treat", "inherit"]),
        # no column holds a placebo (or control) among a few values: "arm" names nothing
        ({"treat": ("drug A", "drug B"), "inherit": ("X-linked", "autosomal")}, None),
    ],
)
def test_the_same_arm_is_the_column_holding_a_placebo(
    values: dict[str, tuple[str, ...]], keys: list[str] | None
) -> None:
    rule = "at least 1.75 times the median length of the records in the same arm with the same pattern of inheritance"
    found = rule_windows.stated_group(rule, ["treat", "inherit"], {}, ["days"], values)
    assert (found.keys if found is not None else None) == keys


def test_a_phrase_read_by_a_name_and_a_description_together() -> None:
    from stateguard.verification.vocabulary import named_and_described

    described = {"age_group": ("five", "bands"), "age": ("age", "class")}
    assert named_and_described(["age", "band"], ["age", "age_group", "sex"], described) == ["age_group"]
    # all words from the name alone, or from the description alone: not this reading
    assert named_and_described(["age", "group"], ["age", "age_group"], described) == []
    rule = "three times the median count of the cells of the same sex in the same age band"
    found = rule_windows.stated_group(
        rule, ["sex", "method", "age_group"], described, ["deaths"], None, [], ["age"]
    )
    assert found is not None and found.keys == ["sex", "age_group"]
    # a column named by the whole phrase is meant
    named = rule_windows.stated_group(rule, ["sex", "age_band", "age_group"], described, ["deaths"])
    assert named is not None and named.keys == ["sex", "age_band"]


LATE = (
    "late = pd.DataFrame({'treat': ['o', 'o', 'c', 'c', 'o', 'c'], 'day': [1, 2, 1, 2, 1, 2],"
    " 'size': [5.0, 6.0, 4.0, 7.0, 5.5, 6.5]})"
)
CELLS = (
    "import json\n"
    "cells = late.groupby(['treat', 'day'])['size'].mean().rename('cell').reset_index()\n"
    "joined = late.merge(cells, on=['treat', 'day'])\n"
    "above = joined[joined['size'] >= joined['cell']]\n"
)


@pytest.mark.parametrize(("stat", "caught"), [("mean", False), ("median", True)])
def test_a_reported_statistic_other_than_the_stated_one_is_re_run(stat: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(LATE).ok
    code = (
        CELLS
        + f"result = {{'n': len(above), 'mean_size': float(above['size'].{stat}())}}\nprint(json.dumps(result))"
    )
    findings = session.turn("How many rows are at or above their cell, and their mean size?", code)
    assert bool(findings) is caught
    if caught:
        assert "mean" in findings[0].reason


def test_a_reported_statistic_the_turn_also_says_is_not_re_run() -> None:
    session = Session()
    assert session.ws.run_cell(LATE).ok
    # "the median" is the cell's statistic, "their mean size" the reported one: the words say both
    code = (
        "import json\n"
        "cells = late.groupby(['treat', 'day'])['size'].median().rename('cell').reset_index()\n"
        "joined = late.merge(cells, on=['treat', 'day'])\n"
        "above = joined[joined['size'] >= joined['cell']]\n"
        "print(json.dumps({'n': len(above), 'mean_size': float(above['size'].mean())}))"
    )
    question = "Which rows reach their cell's median size? How many, and their mean size?"
    assert session.turn(question, code) == []


# -- a stated quantile ----------------------------------------------------------------------------

P80 = "a wage is high when it is at or above the 80th percentile of the wages of the same sex"


@pytest.mark.parametrize(
    ("code", "after"),
    [
        # another statistic: re-run as the stated quantile
        (
            "t = con.execute('SELECT *, w >= avg(w) OVER (PARTITION BY sex) AS high FROM t')",
            "quantile_cont(w, 0.8) OVER",
        ),
        (
            'df["high"] = df["w"] >= df.groupby(["sex"])["w"].transform("mean")',
            '.groupby(["sex"])["w"].transform(lambda _s: _s.quantile(0.8))',
        ),
        # another fraction: re-run at the stated one, in the code's own quantile function
        (
            "t = con.execute('SELECT *, w >= quantile_disc(w, 0.75) OVER (PARTITION BY sex) AS high FROM t')",
            "quantile_disc(w, 0.8) OVER",
        ),
        (
            'p = df.groupby("sex")["w"].quantile(0.7)\ndf["high"] = df["w"] >= df["sex"].map(p)',
            'p = df.groupby("sex")["w"].quantile(0.8)',
        ),
        # the stated quantile already: nothing to re-run
        ('df["high"] = df["w"] >= df.groupby(["sex"])["w"].transform(lambda s: s.quantile(0.8))', None),
    ],
)
def test_a_stated_quantile_is_re_run_where_the_code_takes_another(code: str, after: str | None) -> None:
    from stateguard.verification import rule_statistics

    found = rule_statistics.changed(P80, code)
    assert (found.site.after if found is not None else None) == after
    if found is not None:
        assert rule_statistics.requirement(found).describe() == "the 80th percentile of w"


@pytest.mark.parametrize(
    ("rule", "p"),
    [
        ("at or above the upper quartile (the 75th percentile, interpolated) of the ages of ...", 0.75),
        ("at or above the upper age quartile of their gender and race", 0.75),
        ("below the lower quartile of its region", 0.25),
        # two fractions, or the median by its percentile: no quantile read
        ("above the 80th percentile, or the 90th for the oldest", None),
        ("above the 50th percentile of its region", None),
    ],
)
def test_the_stated_quantile_is_one_fraction(rule: str, p: float | None) -> None:
    from stateguard.verification import rule_statistics

    said = rule_statistics.stated(rule)
    assert (said.p if said is not None else None) == p


def test_an_update_from_a_grouped_quantile_is_a_site() -> None:
    from stateguard.verification import rule_statistics

    code = (
        'con.execute("""\nUPDATE tagged SET older = tagged.age >= q.q3\n'
        "FROM (SELECT gender, race, quantile_cont(age, 0.8) AS q3 FROM tagged GROUP BY gender, race) q\n"
        'WHERE q.gender = tagged.gender AND q.race = tagged.race\n""")'
    )
    found = rule_statistics.changed(
        "at or above the upper quartile of the ages of the same gender and race", code
    )
    assert found is not None and "quantile_cont(age, 0.75) AS q3" in found.site.after


# -- after fresh46's look (tuned on it) --------------------------------------------------------------


def test_a_column_named_by_the_words_whole_beats_one_a_word_begins() -> None:
    from stateguard.verification.vocabulary import resolve_column

    assert resolve_column(["price"], ["price", "pricey", "carat"]) == ["price"]
    assert resolve_column(["prices"], ["price", "pricey"]) == ["price"]
    assert resolve_column(["pricey", "stones"], ["price", "pricey"]) == ["pricey"]
    # no whole name among them: both, as before
    assert resolve_column(["south"], ["south66", "south76"]) == ["south66", "south76"]


DRG = ["gender", "type1", "age75"]
DRG_WORDS = {"type1": ("emergency", "urgent", "admission", "elective"), "age75": ("patient", "over")}


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        # the words go on past the pattern's three: "and age group" is read, a second key
        (
            "at least twice the average of their admission type and age group but less than 10 days",
            ["type1", "age75"],
        ),
        # a gloss whose two sides one column's description holds reads "the same way", and chains
        (
            "at least twice the average stay of the patients admitted the same way (elective or emergency) "
            "in the same age group",
            ["type1", "age75"],
        ),
        # a gloss naming nothing: the group it says is unread, so no group at all
        (
            "at least twice the average stay of the patients admitted the same way (daytime or night) "
            "in the same age group",
            None,
        ),
    ],
)
def test_a_phrase_read_to_its_end(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, DRG, DRG_WORDS, ["los"])
    assert (found.keys if found is not None else None) == keys


def test_a_described_reading_without_its_leading_count_leaves_a_name_unread() -> None:
    # "number of years" names `year`, but "years of schooling" is `education`'s description: no key
    columns = ["sex", "year", "education"]
    described = {"education": ("years", "schooling"), "year": ("survey", "year")}
    rule = "above the average score of the respondents of the same sex with the same number of years of schooling"
    assert rule_windows.stated_group(rule, columns, described, ["vocabulary"]) is None
    # the survey year said as such is read
    plain = "above the average score of the respondents of the same sex in the same survey year"
    found = rule_windows.stated_group(plain, columns, described, ["vocabulary"])
    assert found is not None and found.keys == ["sex", "year"]


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        (
            "longer than the upper quartile of the spells of people of the same sex who are out of work for the same reason",
            ["sex", "reason"],
        ),
        # a comparison or a number between the two phrases: two parts of the rule, no reading
        ("of the same sex, longer than 26 weeks for the same reason", None),
        ("of the same sex. Then count the spells for the same reason", None),
    ],
)
def test_two_phrases_of_one_peer_clause_are_two_keys(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, ["sex", "reason", "race"], {}, ["duration"])
    assert (found.keys if found is not None else None) == keys


STAYS = "stays = pd.DataFrame({'los': [3, 12, 8, 15, 2, 9], 'type1': [0, 1, 0, 1, 0, 1]})"


@pytest.mark.parametrize(("divide", "caught"), [(True, False), (False, True)])
def test_a_stated_number_the_code_divides_by_is_no_cut_off(divide: bool, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(STAYS).ok
    weeks = "stays['weeks'] = stays['los'] / 7\n" if divide else "stays['weeks'] = stays['los'] * 0.142857\n"
    code = weeks + "n = int((stays['los'] >= 10).sum())\nprint(json.dumps({'n': n}))"
    question = "Add weeks (the stay in weeks, days over 7). How many stays are over 7?"
    findings = session.turn(question, "import json\n" + code)
    assert bool(findings) is caught


GEMS = "gems = pd.DataFrame({'clarity': ['a', 'b', 'a', 'b'], 'carat': [0.31, 1.02, 0.5, 2.25], 'price': [500, 3000, 900, 9000]})"


def test_per_a_measure_of_fractional_values_is_a_rate() -> None:
    session = Session()
    assert session.ws.run_cell(GEMS).ok
    code = (
        "gems['ppc'] = gems['price'] / gems['carat']\n"
        "tab = gems.groupby('clarity').agg(mean_ppc=('ppc', 'mean'))\nprint(tab)"
    )
    assert session.turn("Summarise by clarity: the average price per carat.", code) == []


def test_a_group_noun_named_whole_is_no_better_than_a_short_form() -> None:
    from stateguard.verification.vocabulary import resolve_column

    # "ulceration status": `status` (the patient's vital status) is said whole, `ulcer` in short form
    assert resolve_column(["ulceration", "status"], ["ulcer", "status"]) == ["ulcer", "status"]


def test_two_coordinated_keys_with_two_readings_of_one_are_none() -> None:
    described = {"age_group": ("five", "bands"), "age": ("age", "class")}
    rule = "three times the median of their sex and age band yet fewer than 200 deaths"
    # "age band": `age` by its name in part, `age_group` by name and description: no reading
    assert (
        rule_windows.stated_group(
            rule, ["sex", "method", "age_group"], described, ["deaths"], None, [], ["age"]
        )
        is None
    )
