"""Round 32: the group of a redefined rule, read where earlier rounds abstained.

A definition update that takes its statistic over a group the words do not bind is not checked, and a
wrong key there spreads into every later turn that reads the flag. Four readings:

* a second group phrase coordinated with "and the same ..." states a second key;
* a parenthesis right after a group phrase that says its two sides ("(first-born or not)") and holds
  one column's very name glosses the group; the name beats a reading by a part of another name;
* "the same sex" is a 0/1 code column named for one sex (`male`, 1 for a boy);
* "whose fathers held the same class of job": the owner tells apart two columns whose descriptions
  both hold the phrase.
"""

from __future__ import annotations

import pytest

from stateguard.verification import rule_windows
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
