"""Round 44: from fresh61's one false repair left and the rule thresholds fresh60 and fresh61 missed.

- A column described by an attribute of something ("year (the map's year)") is not named by its owner
  in a group phrase: "the worst-placed quarter of their own map" is no group of `year`. An identifier
  ("fi (the firm's id)") is named by its owner: "each firm" is a group of `fi`.
- A multiple said as a percentage with a one-word comparative ("at least 25 % faster than the median
  top speed") or of the row's value a period before ("30 % more than the same firm did in the year
  before") is read like "25 percent above the median".
- A distance from an extreme ("no more than 8 points below the highest Gore share of any state in its
  region") is read like a distance from the mean.
- A cut on a ranking ("one of the eight countries with the highest rates", "the top five") states the
  number the code's rank is compared with.
"""

from __future__ import annotations

import pytest

from stateguard.verification import rule_multiples, rule_offsets, rule_windows, unstated_cutoff
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, owners_of

MAPS = Vocabulary(
    tables={
        "later": {
            "col": ColumnInfo(kind="num", low=2, high=12),
            "maker": ColumnInfo(kind="text", values=["Belin", "Coronelli"]),
            "year": ColumnInfo(kind="num", low=1688, high=1812),
            "fi": ColumnInfo(kind="num", low=1, high=30),
            "err": ColumnInfo(kind="num", low=0, high=9),
        }
    }
).with_descriptions(
    "Columns: col (the column of the original table), maker (the engraver), year (the map's year, NA on "
    "the true rows), fi (the firm's id) and err (degrees off)."
)


@pytest.mark.parametrize(
    ("phrase", "owners"),
    [
        ("the map's year", ["map"]),
        ("the firm's id", []),
        ("the driver's study number", []),
        ("the interviewer's rating of the respondent's answers", ["interviewer", "respondent"]),
        ("degrees off", []),
    ],
)
def test_the_owner_of_an_attribute_but_not_of_an_identifier(phrase: str, owners: list[str]) -> None:
    assert owners_of(phrase) == owners


def test_group_words_leave_out_the_owner_of_an_attribute() -> None:
    assert MAPS.column_words["year"] == ("map", "year")  # still words of the task
    assert MAPS.owners == {"year": ("map",)}
    assert "year" in MAPS.group_words() and "map" not in MAPS.group_words()["year"]
    assert MAPS.group_words()["fi"] == ("firm",)


@pytest.mark.parametrize(("described", "expected"), [("column_words", ["year"]), ("group_words", None)])
def test_their_own_map_is_no_group_of_the_maps_year(described: str, expected: list[str] | None) -> None:
    words = MAPS.column_words if described == "column_words" else MAPS.group_words()
    stated = rule_windows.stated_group(
        "which readings are in the worst-placed quarter of their own map, yet less than 1.5 degrees off?",
        ["col", "maker"],
        words,
        ["err"],
        None,
        [],
        ["year", "fi"],
    )
    assert (stated.keys if stated else None) == expected


def test_each_firm_still_names_the_firms_id() -> None:
    stated = rule_windows.stated_group(
        "a year is heavy when its investment is at least twice the median investment of the same firm",
        ["maker"],
        MAPS.group_words(),
        ["err"],
        None,
        [],
        ["fi"],
    )
    assert stated is not None and stated.keys == ["fi"]


@pytest.mark.parametrize(
    ("rule", "multiple", "op"),
    [
        (
            "a species is fast when it sprints at least 25 % faster than the median top speed of its nine "
            "neighbours",
            1.25,
            ">=",
        ),
        (
            "a car is thirsty when its mpg is at least 20 percent lower than the median mpg of its class",
            0.8,
            "<=",
        ),
        (
            "a year is heavy when the firm invested at least 30 % more than the same firm did in the year "
            "before",
            1.3,
            ">=",
        ),
        (
            "a month is busy when its visits are at least 50 % more than the previous month's visits",
            1.5,
            ">=",
        ),
    ],
)
def test_a_percentage_with_a_comparative_or_of_the_period_before(rule: str, multiple: float, op: str) -> None:
    stated = rule_multiples.stated(rule)
    assert stated is not None and (stated.multiple, stated.op) == (pytest.approx(multiple), op)


@pytest.mark.parametrize(
    "rule",
    [
        "a year is heavy when the firm invested at least 30 % more than the others did",
        "a species is fast when it runs 25 % faster than a horse",
    ],
)
def test_a_percentage_of_neither_a_statistic_nor_an_earlier_value_is_not_read(rule: str) -> None:
    assert rule_multiples.stated(rule) is None


RULE_HEAVY = (
    "calling a year heavy when the firm invested at least 30 % more than the same firm did in the year before"
)


@pytest.mark.parametrize(("k", "after"), [("1.2", "panel.inv >= 1.3 *"), ("1.3", None)])
def test_the_lag_multiple_is_checked_against_the_code(k: str, after: str | None) -> None:
    code = f"con.execute('UPDATE panel SET heavy = coalesce(panel.inv >= {k} * p.prev_inv, false) FROM p')"
    found = rule_multiples.changed(RULE_HEAVY, code)
    assert (found.after if found else None) == after


RULE_BLUE = (
    "calling a seat blue when the state's Gore share is no more than 8 points below the highest Gore share "
    "of any state in the same census region"
)


def test_a_distance_below_the_highest() -> None:
    stated = rule_offsets.stated(RULE_BLUE)
    assert stated is not None and (stated.distance, stated.up) == (8.0, False)


@pytest.mark.parametrize(("k", "changed"), [("5", True), ("8", False)])
def test_the_distance_from_the_highest_is_checked_against_the_code(k: str, changed: bool) -> None:
    code = (
        "con.execute('''UPDATE senators SET blue = gorevote >= (SELECT max(s2.gorevote) FROM senators s2\n"
        f"    WHERE s2.region = senators.region) - {k}''')"
    )
    found = rule_offsets.changed(RULE_BLUE, code)
    assert (found is not None) == changed
    if found is not None:
        assert found.after.rstrip().endswith("- 8")


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        (
            "a country is severe when it is one of the eight countries with the highest rates of its region",
            8.0,
        ),
        ("keep the players among the 10 best scorers", 10.0),
        ("list the top five teams", 5.0),
        ("one of the eight countries of its region", None),  # no ranking said
    ],
)
def test_a_cut_on_a_ranking_is_a_bound(text: str, bound: float | None) -> None:
    ranked = [x for x, _, op, _ in unstated_cutoff.bounds(text) if op == "<="]
    assert ranked == ([bound] if bound is not None else [])


RULE_SEVERE = (
    "She would call a country severe when it is one of the eight countries with the highest infant-mortality "
    "rates of its region (ranked from the highest rate down)."
)
SEVERE = 'place = nations.groupby("region")["infant"].rank(method="min", ascending=False)\nnations["severe"] = place <= {k}\n'


@pytest.mark.parametrize(("k", "after"), [(6, "<= 8"), (8, None)])
def test_the_rank_cut_is_checked_against_the_code(k: int, after: str | None) -> None:
    found = unstated_cutoff.changed(RULE_SEVERE, [RULE_SEVERE], SEVERE.format(k=k))
    assert (found.after if found else None) == after


def test_a_correlated_subquery_matched_on_two_keys_is_the_rules_statistic() -> None:
    code = (
        "con.execute('''UPDATE senators SET blue = gorevote >= (SELECT max(s2.gorevote) FROM senators s2\n"
        "    WHERE s2.region = senators.region AND s2.party = senators.party) - 8''')"
    )
    found = rule_windows._correlated(code, "region")
    assert found is not None
    assert [k.lower() for k in found.keys] == ["region", "party"]
    assert found.after == "s2.region = senators.region"
    one_key = code.replace(" AND s2.party = senators.party", "")
    assert rule_windows._correlated(one_key, "region").keys == ["region"]  # type: ignore[union-attr]
    # two outer tables are no one correlated statistic
    assert rule_windows._correlated(code.replace("= senators.party", "= votes.party"), "region") is None


RUNS = Vocabulary(
    tables={
        "runs": {
            "expt": ColumnInfo(kind="num", low=1, high=5),
            "run": ColumnInfo(kind="num", low=1, high=20),
            "speed": ColumnInfo(kind="num", low=620, high=1070),
        }
    }
)


def test_a_lower_cased_column_is_described_by_its_r_name() -> None:
    text = (
        "Columns: Speed (the measured speed in km/s less 299,000), Run (the run within its experiment, 1 to "
        "20) and Expt (the experiment, 1 to 5)."
    )
    words = RUNS.with_descriptions(text).column_words
    assert words["expt"] == ("experiment",)
    assert words["speed"][:2] == ("measured", "speed")
    stated = rule_windows.stated_group(
        "at least 60 above the median of all the earlier runs of the same experiment",
        ["expt", "run"],
        words,
        ["speed"],
        None,
        [],
        [],
    )
    assert stated is not None and stated.keys == ["expt"]


def test_an_r_name_spelled_two_ways_or_a_column_described_as_written_is_not_read_again() -> None:
    two = RUNS.with_descriptions("EXPT (the experiment) and Expt (the trial)").column_words
    assert "expt" not in two
    own = RUNS.with_descriptions("expt (the experiment) and Expt (the trial)").column_words
    assert own["expt"] == ("experiment",)
