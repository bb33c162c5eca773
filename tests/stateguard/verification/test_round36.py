"""Round 36: a strict comparative said with "no", a key phrase another column explains in part, and a
column's every value listed in words that are also the sentence's own.

Written from fresh49's first look, whose clean-run false repairs each came from one of these:

* "no later than half the mean stop of their arm" was read as "later than": the lexicon had the
  negated form of "more than" only;
* "per recurrence number" bound `number` (the tumour count at entry) by a word of its name, though
  "recurrence" is said only of `enum (which recurrence the record is about)`;
* "a score for the answer (no 0, perhaps 1, yes 2)" and "a yes or a perhaps" scoped the turn to
  "perhaps": "no" and "yes" are skipped as values, so the listing looked like one value alone.
"""

from __future__ import annotations

import pytest

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification import extract, rule_multiples, rule_windows
from stateguard.verification.bind_shape import _resolve_key
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, rival_reading
from tests.stateguard.verification.conftest import Session


@pytest.mark.parametrize(
    ("phrase", "op"),
    [
        ("no later than", "<="),
        ("not later than", "<="),
        ("no earlier than", ">="),
        ("not younger than", ">="),
        ("no older than", "<="),
        ("no higher than", "<="),
        # written forms keep their one reading
        ("no more than", "<="),
        ("no less than", ">="),
    ],
)
def test_a_strict_comparative_said_with_no_is_the_other_side(phrase: str, op: str) -> None:
    assert LEXICON.ops_of(phrase) == (op,)


def test_a_negated_temporal_comparative_stays_temporal() -> None:
    assert LEXICON.is_temporal("no later than")
    assert not LEXICON.is_temporal("no older than")


def test_no_later_than_a_multiple_is_at_most_it() -> None:
    found = rule_multiples.stated("records that end no later than half the mean stop of their arm")
    assert found is not None and (found.multiple, found.op) == (0.5, "<=")


RECORDS = (
    "records = pd.DataFrame({'rx': [1, 1, 1, 1, 2, 2, 2, 2], 'stop': [2, 10, 4, 20, 3, 5, 12, 40],"
    " 'event': [1, 1, 1, 0, 1, 1, 1, 0]})"
)


@pytest.mark.parametrize(("side", "caught"), [("<=", False), (">", True)])
def test_no_later_than_half_the_mean_keeps_the_lower_side(side: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(RECORDS).ok
    code = (
        "import json\nm = records.groupby('rx')['stop'].transform('mean')\n"
        f"early = records[(records['event'] == 1) & (records['stop'] {side} 0.5 * m)]\n"
        "print(json.dumps({'n_early': len(early)}))"
    )
    question = "How many records end in a recurrence no later than half the mean stop of their arm?"
    context = "Columns: rx (the arm: 1 placebo, 2 thiotepa), stop (the month the record ends), event."
    assert bool(session.turn(question, code, context=context)) is caught


BLADDER = ["id", "rx", "number", "size", "stop", "event", "enum"]
BLADDER_WORDS = {
    "rx": ("arm", "placebo", "thiotepa"),
    "number": ("many", "tumours", "patient", "had", "entry"),
    "enum": ("which", "recurrence", "record", "about"),
}


def test_a_phrase_another_column_explains_in_part_has_two_readings() -> None:
    assert rival_reading(["recurrence", "number"], "number", BLADDER, BLADDER_WORDS)
    # the matched column's own words explain the rest of the phrase: one reading
    assert not rival_reading(["tumour", "number"], "number", BLADDER, BLADDER_WORDS)
    # a word nobody's description says: one reading ("calendar month" is `month`)
    assert not rival_reading(["calendar", "number"], "number", BLADDER, BLADDER_WORDS)
    # a group noun explains nothing
    assert not rival_reading(["number", "group"], "number", BLADDER, {**BLADDER_WORDS, "enum": ("group",)})


def test_a_grouping_phrase_another_column_explains_names_no_key() -> None:
    assert _resolve_key("recurrence number", BLADDER, BLADDER_WORDS) == []
    assert _resolve_key("recurrence number", BLADDER) == ["number"]
    assert _resolve_key("tumour number", BLADDER, BLADDER_WORDS) == ["number"]


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        (
            "no later than half the mean stop of the records of the same arm with the same recurrence number",
            None,
        ),
        (
            "no later than half the mean stop of the records of the same arm with the same tumour number",
            ["rx", "number"],
        ),
        ("no later than half the mean stop of their arm and recurrence number", None),
    ],
)
def test_a_rule_key_another_column_explains_in_part_is_unread(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, ["id", "rx", "number", "enum"], BLADDER_WORDS, ["size", "stop"])
    assert (found.keys if found is not None else None) == keys


ANSWERS = Vocabulary(
    tables={
        "answers": {
            "resp": ColumnInfo(kind="text", values=["no", "perhaps", "yes"]),
            "situ": ColumnInfo(kind="text", values=["other", "self"]),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        # the codebook of a score: every value of the column, two of them the sentence's own words
        ("Add a score for the answer (no 0, perhaps 1, yes 2) called yes_score", []),
        ("Which answer (no, perhaps, yes) has the largest share of hot answers", []),
        # alternatives counted: no restriction of the turn
        ("how many of them were a yes or a perhaps", []),
        # one value alone still scopes
        ("Only the perhaps answers: how many are there", ["perhaps"]),
    ],
)
def test_a_columns_values_said_in_the_sentences_own_words_count(clause: str, scoped: list[str]) -> None:
    found = [v for r in extract.scopes(clause, ANSWERS, None) for v in r.values]
    assert found == scoped


def test_a_codebook_of_yes_no_and_perhaps_scopes_no_turn() -> None:
    session = Session()
    frame = "answers = pd.DataFrame({'resp': ['no', 'perhaps', 'yes', 'no', 'yes', 'perhaps'], 'anger': [20, 26, 30, 15, 28, 22]})"
    assert session.ws.run_cell(frame).ok
    code = (
        "import json\nanswers['yes_score'] = answers['resp'].map({'no': 0, 'perhaps': 1, 'yes': 2})\n"
        "hot = answers[answers['anger'] >= 25]\n"
        "print(json.dumps({'n_hot': len(hot), 'mean_score': float(hot['yes_score'].mean())}))"
    )
    question = (
        "Make a score for the answer (no 0, perhaps 1, yes 2) called yes_score, and call an answer hot when "
        "the anger score is 25 or higher. How many answers are hot, and what is their average yes_score?"
    )
    assert session.turn(question, code) == []
