"""Round 43: two readings that fresh61's first look showed to be false repairs on clean runs.

- "(highest first, lower obs first on ties)" named the value 'first' of a column `half`: "first" or
  "last" right after a ranking word is the ranking's direction, not a value.
- "in the worst-placed quarter of its own map: order the readings of each map (each col, ...)" was
  read as the group `year` (described as "the map's year"), while the rule names the group `col` by
  its very name; two readings, none is taken. (Turn 12, which says "their own map" without the gloss,
  is still read as `year`: the description's words keep "map" and lose the possessive.)
"""

from __future__ import annotations

import pytest

from stateguard.verification import extract, rule_windows
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

RUNS = Vocabulary(
    tables={
        "settled": {
            "obs": ColumnInfo(kind="num", low=1, high=100),
            "half": ColumnInfo(kind="text", values=["first", "second"]),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "values"),
    [
        ("list the obs of the five highest readings (highest first, lower obs first on ties)", []),
        ("which maker has the most of them (alphabetically first on a tie)", []),
        ("how many runs of the first half are high", [["first"]]),
        ("and the runs of the last half", []),  # 'last' is no value of `half`
    ],
)
def test_first_after_a_ranking_word_is_a_direction(clause: str, values: list[list[str]]) -> None:
    assert [r.values for r in extract.scopes(clause, RUNS, ["settled"])] == values


RULE = (
    "She would call a reading astray when it is in the worst-placed quarter of its own map: order the 39 "
    "readings of each map{gloss} by error, largest first, split them into four tiles, and take the first."
)
COLUMNS = ["point", "col", "maker", "year", "era"]
DESCRIBED = {"maker": ("map", "maker")}


@pytest.mark.parametrize(("gloss", "expected"), [(" (each col, as Belin made two)", None), ("", ["maker"])])
def test_a_group_named_by_a_columns_very_name_elsewhere_leaves_two_readings(
    gloss: str, expected: list[str] | None
) -> None:
    stated = rule_windows.stated_group(
        RULE.format(gloss=gloss), COLUMNS, DESCRIBED, ["lat", "long", "err"], None, ["year"], ["col", "point"]
    )
    assert (stated.keys if stated else None) == expected


def test_the_very_name_the_reading_took_keeps_it() -> None:
    rule = "a reading is astray when its error is twice the mean error of the same col, taken for each col"
    stated = rule_windows.stated_group(rule, ["col", "year"], {}, ["err"], None, [], [])
    assert stated is not None and stated.keys == ["col"]
