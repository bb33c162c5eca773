"""Round 45: from the misses of fresh60 and fresh61 after their first looks.

- A dotted R name before a column's description ("state.name and gorevote (Al Gore's percentage of
  the state's vote)") is not the column `name`: the description is `gorevote`'s own.
- "took" and "sit" are light verbs ("where Gore took less than 40 % of the vote", "senators who sit
  for a state"): they bind to nothing and need not.
- A rule's statistic taken over a moving or growing window (`["speed"].rolling(9, center=True)
  .median()`, `.transform(lambda s: s.shift(1).rolling(3).mean())`, `s.expanding().median()`) is a
  statistic the rule's words can be checked against.
"""

from __future__ import annotations

import pytest

from stateguard.verification import extract, rule_statistics, rule_windows
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

SENATE = Vocabulary(
    tables={
        "senators": {
            "name": ColumnInfo(kind="text", values=["AKAKA (D HI)"]),
            "state": ColumnInfo(kind="text", values=["Alaska", "Hawaii"]),
            "gorevote": ColumnInfo(kind="num", low=26, high=61),
        }
    }
)
TEXT = (
    "Columns: y (1 for an aye), name (the senator's surname), state.name and gorevote (Al Gore's percentage "
    "of the state's vote in 2000)."
)


def test_a_dotted_r_name_before_a_description_is_not_a_column() -> None:
    vocab = SENATE.with_descriptions(TEXT)
    assert vocab.column_words["gorevote"] == ("gore", "percentage", "state", "vote")
    # a plain name before "and" still shares the description
    shared = SENATE.with_descriptions("Columns: name and gorevote (the shares).")
    assert "gorevote" not in shared.column_words


@pytest.mark.parametrize(
    ("clause", "unbound"),
    [
        ("how many senators are from a state where Gore took less than 40 % of the vote", []),
        ("how many of them sit for a state where Gore's share stayed below 45 %", []),
        ("how many of them sit for a state where Gore's share stayed below 45 % in the west", ["west"]),
    ],
)
def test_light_verbs_of_a_share_or_a_seat(clause: str, unbound: list[str]) -> None:
    assert extract.unbound_words(clause, SENATE.with_descriptions(TEXT), ["senators"]) == unbound


RULE = "She would call a species fast when it sprints at least 25 % faster than the median top speed of its window."


@pytest.mark.parametrize(
    ("code", "after"),
    [
        (
            'ref = m.sort_values(["weight", "obs"])["speed"].rolling(9, center=True).mean()\n'
            'm["fast"] = m["speed"] >= 1.25 * ref.reindex(m.index)\n',
            '["speed"].rolling(9, center=True).median()',
        ),
        (
            'ref = m.sort_values(["weight", "obs"])["speed"].rolling(9, center=True).median()\n'
            'm["fast"] = m["speed"] >= 1.25 * ref.reindex(m.index)\n',
            None,
        ),
        (
            'ref = m.groupby("size")["speed"].transform(lambda s: s.shift(1).rolling(3).max())\n'
            'm["fast"] = m["speed"] >= 1.25 * ref\n',
            '["speed"].transform(lambda s: s.shift(1).rolling(3).median()',
        ),
        (
            'ref = m.groupby("size")["speed"].transform(lambda s: s.expanding().mean().shift(1))\n'
            'm["fast"] = m["speed"] >= 1.25 * ref\n',
            '["speed"].transform(lambda s: s.expanding().median()',
        ),
    ],
)
def test_a_window_statistic_is_checked_against_the_rule(code: str, after: str | None) -> None:
    found = rule_statistics.changed(RULE, code)
    assert (found.site.after if found else None) == after


GAME = Vocabulary(
    tables={
        "players": {
            "cash": ColumnInfo(kind="num", low=0, high=100),
            "pairing": ColumnInfo(kind="text", values=["both friend", "both foe", "betrayed", "betrayer"]),
            "rich": ColumnInfo(kind="bool"),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "values"),
    [
        ("what percentage of the betrayers played for a rich box", [["betrayer"]]),
        ("what percentage of the betrayer contestants played for a rich box", [["betrayer"]]),
        ("what percentage of the betrayeds played for a rich box", []),  # a participle takes no plural
        ("what percentage of the foes played for a rich box", []),  # 'foe' only in 'both foe'
    ],
)
def test_a_word_value_in_the_plural_names_its_rows(clause: str, values: list[list[str]]) -> None:
    assert [r.values for r in extract.scopes(clause, GAME, ["players"])] == values
    if values:
        assert "betrayers" not in extract.unbound_words(clause, GAME, ["players"])


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        (
            "at least 60 points above the average SAT of the students of the same sex who share the student's major",
            None,
        ),
        ("at least 60 points above the average SAT of the students of the same sex", ["sex"]),
        (
            "at least 60 points above the average SAT of the students of the same sex who share the student's sex",
            ["sex"],
        ),
    ],
)
def test_a_key_shared_in_a_relative_clause_is_not_left_out(rule: str, keys: list[str] | None) -> None:
    stated = rule_windows.stated_group(rule, ["sex", "major", "language"], {}, ["sat"], None, [], [])
    assert (stated.keys if stated else None) == keys


DUST = {"no2": ("nitrogen", "dioxide"), "so2": ("sulphur", "dioxide"), "pm10": ("particulate", "matter")}


@pytest.mark.parametrize(
    ("columns", "keys"),
    [
        (["no2_band", "so2_band", "no2", "so2"], None),  # "bands" names the band columns, not read
        (["no2", "so2"], ["no2", "so2"]),
    ],
)
def test_a_bin_noun_after_two_keys_that_names_other_columns(
    columns: list[str], keys: list[str] | None
) -> None:
    stated = rule_windows.stated_group(
        "which days had a PM10 of at least one and a half times the mean of their nitrogen-dioxide and sulphur "
        "bands, yet below 60?",
        columns,
        DUST,
        ["pm10"],
        None,
        [],
        [],
    )
    assert (stated.keys if stated else None) == keys


PLANES = Vocabulary(
    tables={
        "planes": {
            "maker": ColumnInfo(kind="text", values=["AIRBUS", "BOEING", "EMBRAER"]),
            "seats": ColumnInfo(kind="num", low=2, high=450),
        }
    }
)


def test_a_value_in_capitals_is_not_read_in_the_plural() -> None:
    # "Drop the Boeings ... that seat more than 100": the reader takes no value 'BOEING' from "Boeings",
    # so the whole-clause check must not bind it either (a clean run repaired the seats bound under the
    # frame "Drop ..." when it did)
    clause = "Drop the Boeings and look at the planes of the other makers that seat more than 100"
    assert extract.scopes(clause, PLANES, ["planes"]) == []
    assert "Boeings" in extract.unbound_words(clause, PLANES, ["planes"])
