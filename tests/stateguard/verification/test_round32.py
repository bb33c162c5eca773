"""Round 32: the group of a redefined rule, read where earlier rounds abstained.

A definition update that takes its statistic over a group the words do not bind is not checked, and a
wrong key there spreads into every later turn that reads the flag. Four readings:

* a second group phrase coordinated with "and the same ..." states a second key;
* a parenthesis right after a group phrase that says its two sides ("(first-born or not)") and holds
  one column's very name glosses the group; the name beats a reading by a part of another name;
* "the same sex" is a 0/1 code column named for one sex (`male`, 1 for a boy);
* "whose fathers held the same class of job": the owner tells apart two columns whose descriptions
  both hold the phrase.

After fresh42's look (tuned on it): an entry "reported as 0" or "listed with 0" is no scope; a
fraction before a distance ("three quarters of a standard deviation", "half a visit") scales it;
two keys in one phrase ("the same gender and race", "their centre-and-baseline group") and a band
column named by the bin noun ("the same neuroticism band"); British spellings of column words; a
grouped object bound to a name, and an UPDATE ... FROM a subquery grouped by two keys, re-run as
stated.
"""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_offsets, rule_windows
from stateguard.verification.extract import scopes
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, american, resolve_column
from tests.stateguard.verification.conftest import Session

BABIES = ["male", "first", "birthyr", "midage"]
BABY_WORDS = {"male": ("boy",), "first": ("mother", "first", "child"), "birthyr": ("year", "birth", "minus")}


def test_a_second_group_phrase_after_and_the_same_states_a_second_key() -> None:
    rule = "under 80% of the median weight of the babies of the same sex and the same birth year"
    found = rule_windows.stated_group(rule, BABIES, BABY_WORDS)
    assert found is not None and found.keys == ["male", "birthyr"]
    # one group phrase only: one key
    one = "under 80% of the median weight of the babies of the same birth year"
    found = rule_windows.stated_group(one, BABIES, BABY_WORDS)
    assert found is not None and found.keys == ["birthyr"]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        # the gloss names `first`; the words alone read `birthyr` by "birth"
        (
            "at most 0.8 times the median weight of babies of the same birth order (first-born or not)",
            ["first"],
        ),
        ("of the women with the same citizenship (Swiss or foreign)", ["foreign"]),
        # a parenthesis that says no two sides is no gloss
        ("of the babies of the same birth order (lightest first, lower id on ties)", ["birthyr"]),
        # a gloss whose words name two columns says neither
        ("of the women with the same citizenship (first or foreign)", None),
    ],
)
def test_a_parenthesis_that_says_the_two_sides_glosses_the_group(
    rule: str, expected: list[str] | None
) -> None:
    columns = [*BABIES, "foreign"]
    found = rule_windows.stated_group(rule, columns, BABY_WORDS)
    assert (found.keys if found else None) == expected


@pytest.mark.parametrize(
    ("columns", "values", "expected"),
    [
        (["male", "first"], {}, ["male"]),  # a 0/1 code column named for one sex
        (["female", "first"], {}, ["female"]),
        # a text column named `male` holding other values is not the sex
        (["male", "first"], {"male": ("yes", "no", "unknown")}, None),
        (["first", "midage"], {}, None),  # no column says a sex
    ],
)
def test_the_same_sex_is_a_code_column_named_for_one_sex(
    columns: list[str], values: dict[str, tuple[str, ...]], expected: list[str] | None
) -> None:
    rule = "below 70% of the median weight of the babies of the same sex"
    found = rule_windows.stated_group(rule, columns, {}, [], values)
    assert (found.keys if found else None) == expected


def test_the_owner_of_a_group_tells_two_described_columns_apart() -> None:
    described = {
        "occupation": ("respondent", "own", "class", "job"),
        "focc": ("his", "father", "class", "job"),
    }
    columns = ["occupation", "focc", "race"]
    rule = (
        "at least 3 more years of school than the median of the men whose fathers held the same class of job"
    )
    found = rule_windows.stated_group(rule, columns, described)
    assert found is not None and found.keys == ["focc"]
    # no owner: two descriptions hold "class of job", two readings, none taken
    plain = "at least 3 more years of school than the median of the men with the same class of job"
    assert rule_windows.stated_group(plain, columns, described) is None
    # an owner neither description holds decides nothing
    other = (
        "at least 3 more years of school than the median of the men whose uncles held the same class of job"
    )
    assert rule_windows.stated_group(other, columns, described) is None


def test_one_phrase_matched_twice_is_read_once() -> None:
    # "of their cell type's median": the possessive and the "of their" readings find the same words
    rule = "fell under 85% of their cell type's median score"
    found = rule_windows.stated_group(rule, ["celltype", "treat"], {})
    assert found is not None and found.keys == ["celltype"]


def _premium(keys: list[str]) -> str:
    return (
        f"orders['premium'] = orders['price'] >= 1.5 * orders.groupby({keys!r})['price'].transform('median')\n"
        "result = {'n_premium': int(orders['premium'].sum())}\nimport json\nprint(json.dumps(result))"
    )


@pytest.mark.parametrize(
    ("keys", "caught"),
    [
        (["region", "category"], False),
        (["category", "region"], False),
        (["region"], True),
        (["category"], True),
    ],
)
def test_a_redefined_rule_over_two_coordinated_groups_is_re_run_as_stated(
    keys: list[str], caught: bool
) -> None:
    rule = (
        "New rule: an order is premium at 1.5 times the median price of the orders in the same region and "
        "the same category."
    )
    session = Session()
    assert not session.turn("How many orders are there?", "n = len(orders)\nprint(n)")
    question = "Update `premium` under the new rule. How many are premium now?"
    findings = session.turn(question, _premium(keys), own_context=rule)
    assert bool(findings) is caught
    if caught:
        assert "over each region and category" in findings[0].reason


def test_a_column_that_is_both_codes_and_calendar_years_is_one_reading() -> None:
    # `year` holds a short run of election years in one table and calendar years in another: it is
    # listed as a code column and as a year column, and is still one column
    rule = "at least 8 points above the median share of all states at that same election"
    described = {"year": ("election", "year"), "state": ("state", "name")}
    found = rule_windows.stated_group(rule, ["state", "year"], described, ["share"], {}, ["year"])
    assert found is not None and found.keys == ["year"]


# -- after fresh42's look -------------------------------------------------------------------------

ARMS = Vocabulary(
    tables={"book": {"label": ColumnInfo(kind="text", values=["active drug", "placebo", "low dose"])}}
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        (
            'for each label, the number of patients and their mean age, with "low dose" reported as 0 patients',
            False,
        ),
        ('each label gets its number of patients; "low dose" must be listed with 0 patients', False),
        ('"low dose" is kept with no patients', False),
        ('what is the mean age of the patients on "low dose"', True),
        ('how many "low dose" patients were reported as the top 5', True),
    ],
)
def test_an_entry_reported_or_listed_with_a_zero_is_no_scope(clause: str, scoped: bool) -> None:
    found = [r for r in scopes(clause, ARMS, ["book"]) if r.columns == ["label"]]
    assert bool(found) is scoped


@pytest.mark.parametrize(
    ("rule", "distance", "sd"),
    [
        ("at least three quarters of a standard deviation above the mean of the students", 0.75, True),
        ("at least half of a standard deviation above their group's mean", 0.5, True),
        ("at least two thirds of an SD above the mean", 2 / 3, True),
        ("at least half a visit above the mean number of good visits", 0.5, False),
        ("at least one standard deviation above the mean", 1.0, True),
    ],
)
def test_a_fraction_said_before_a_distance_scales_it(rule: str, distance: float, sd: bool) -> None:
    found = rule_offsets.stated(rule)
    assert found is not None and abs(found.distance - distance) < 1e-9 and found.sd is sd and found.up


def test_a_part_of_a_distance_said_otherwise_is_not_read() -> None:
    # "most of a standard deviation": a part with no number; the whole distance is not what is said
    assert rule_offsets.stated("at least most of a standard deviation above the mean") is None
    assert rule_offsets.stated("a bit above the mean") is None


@pytest.mark.parametrize(
    ("rule", "columns", "expected"),
    [
        (
            "the mean of their centre-and-baseline group",
            ["center", "baseline", "treat"],
            ["center", "baseline"],
        ),
        ("the mean of their sex-and-band group", ["sex", "band"], ["sex", "band"]),
        # one part names nothing: the whole phrase is unread, not its other part alone
        ("the mean of their centre-and-baseline group", ["baseline", "treat"], None),
        (
            "the ages of the recipients of the same gender and race.",
            ["gender", "race", "age"],
            ["gender", "race"],
        ),
        # the phrase goes on past what its words hold ("model year"): read to its end (round 35)
        (
            "the median of the cars of the same origin and model year",
            ["origin", "model_year"],
            ["origin", "model_year"],
        ),
        (
            "the students of the same sex in the same neuroticism band",
            ["sex", "band", "neuroticism"],
            ["sex", "band"],
        ),
        # a code names its own thing; only a band (bracket, tier) bins another
        (
            "the median of all wives whose husbands have the same occupation code",
            ["occupation", "code"],
            ["occupation"],
        ),
    ],
)
def test_two_keys_in_one_phrase_and_a_band_column(
    rule: str, columns: list[str], expected: list[str] | None
) -> None:
    found = rule_windows.stated_group(rule, columns, {})
    assert (found.keys if found else None) == expected


def test_british_spellings_name_american_column_names() -> None:
    assert resolve_column(["centre"], ["center", "baseline"]) == ["center"]
    assert resolve_column(["colour"], ["color", "cut"]) == ["color"]
    assert resolve_column(["hour"], ["hr", "cut"]) == []  # a short word is not respelled
    assert american("theatre") == "theater" and american("labour") == "labor" and american("more") == "more"


GROUPED = """\
peers = students.groupby(["sex", "volunteer"])["extraversion"]
students["outgoing"] = students["extraversion"] >= peers.transform("mean") + 0.75 * peers.transform("std")
"""


def test_a_grouped_object_bound_to_a_name_is_regrouped_on_its_own_line() -> None:
    stated = rule_windows.Stated("sex", "of the same sex in the same band", ("band",))
    site = rule_windows.code_site(inspect_code(GROUPED), stated, GROUPED)
    assert site is not None and site.keys == ["sex", "volunteer"]
    assert site.before == 'students.groupby(["sex", "volunteer"])["extraversion"]'
    assert site.fixed == "students.groupby(['sex', 'band'])[\"extraversion\"]"
    assert site.probe_suffix == '.transform("mean")'
    right = GROUPED.replace('"volunteer"', '"band"')
    assert rule_windows.code_site(inspect_code(right), stated, right) is None


UPDATE_TWO_KEYS = '''con.execute("""
UPDATE tagged SET older = tagged.age >= q.q3_age
FROM (SELECT race, quantile_cont(age, 0.75) AS q3_age FROM tagged GROUP BY race) q
WHERE q.race = tagged.race
""")'''


def test_an_update_from_a_grouped_subquery_is_regrouped_by_two_stated_keys() -> None:
    import duckdb

    stated = rule_windows.Stated("gender", "of the same gender and race", ("race",))
    found = rule_windows.joined_site(UPDATE_TWO_KEYS, inspect_code(UPDATE_TWO_KEYS), stated)
    assert found is not None and found.keys == ["race"]
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE tagged AS SELECT * FROM (VALUES (1, 1, 20), (1, 1, 60), (2, 1, 30), (2, 1, 31), (1, 2, 50), "
        "(2, 2, 52)) t(gender, race, age)"
    )
    con.execute("ALTER TABLE tagged ADD COLUMN older BOOLEAN")
    con.execute(UPDATE_TWO_KEYS.split('"""')[1])
    assert con.execute("SELECT count_if(older) FROM tagged").fetchone() == (2,)
    con.execute(found.after)
    assert con.execute("SELECT count_if(older) FROM tagged").fetchone() == (4,)
    right = (
        UPDATE_TWO_KEYS.replace("SELECT race,", "SELECT gender, race,")
        .replace("GROUP BY race", "GROUP BY gender, race")
        .replace("WHERE q.race = tagged.race", "WHERE q.gender = tagged.gender AND q.race = tagged.race")
    )
    assert rule_windows.joined_site(right, inspect_code(right), stated) is None
