"""Round 25: a 0/1 column named by the word the task's text describes it with ("the contiguous
pairs" for `contig (1 if the two are contiguous)`), a range tested as its outside inside a
conditional count (`NOT BETWEEN`), and the entries a count is written out over said "so that every
phase reports ..."."""

from __future__ import annotations

import pytest

from stateguard.verification import extract, share_base
from stateguard.verification.bind import aggregate_test_as_stated
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary


def _vocab(words: dict[str, tuple[str, ...]]) -> Vocabulary:
    return Vocabulary(
        tables={
            "pairs": {
                "contig": ColumnInfo(kind="num", low=0, high=1),
                "major": ColumnInfo(kind="num", low=0, high=1),
                "years": ColumnInfo(kind="num", low=0, high=120),
                "settled": ColumnInfo(kind="other", values=["False", "True"]),
            }
        },
        column_words=words,
    )


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ({"contig": ("two", "contiguous"), "major": ("major", "power")}, [("settled", "contig", "1")]),
        # two 0/1 columns described with the word: which one is open
        ({"contig": ("two", "contiguous"), "major": ("contiguous", "power")}, []),
        # no description: the word names no column
        ({}, []),
    ],
)
def test_a_zero_one_column_named_by_the_word_its_description_uses(
    words: dict[str, tuple[str, ...]], expected: list[tuple[str, str, str]]
) -> None:
    question = "Give the percentage of contiguous pairs that are settled."
    found = share_base.subgroup_shares(question, _vocab(words), ["pairs"], ["pct_contiguous_settled"])
    assert [(s.flag, s.column, s.value) for s in found] == expected


RANGE = Requirement(kind=Kind.COMPARISON, text="from -6.5 to -6.0", op=">=", value=-6.5, upper=-6.0)


@pytest.mark.parametrize(
    ("sql", "stated"),
    [
        (
            "SELECT count_if(lincomep NOT BETWEEN -6.5 AND -6.0) FROM core",
            "SELECT count_if(lincomep BETWEEN -6.5 AND -6) FROM core",
        ),
        ("SELECT count_if(lincomep BETWEEN -6.5 AND -6.0) FROM core", None),
    ],
)
def test_a_range_tested_as_its_outside_inside_a_conditional_count(sql: str, stated: str | None) -> None:
    assert aggregate_test_as_stated(sql, "lincomep", RANGE) == stated


@pytest.mark.parametrize(
    ("clause", "kept"),
    [
        (
            "merge the firm-years onto it, so that every phase reports its number of firm-years, a phase with none at 0",
            "phase",
        ),
        ("for every region give the count, with 0 for a region without orders", "region"),
        # no zero written out: nothing says an entry with none is kept
        ("merge the firm-years onto it, so that every phase reports its number of firm-years", None),
    ],
)
def test_the_entries_a_count_is_written_out_over_said_so_that_every(clause: str, kept: str | None) -> None:
    assert extract._kept_entries(clause.lower()) == kept


# After fresh35's first look: its nine false repairs, each an older reading.


def test_a_value_that_is_a_word_of_a_flag_s_name_is_no_scope() -> None:
    vocab = Vocabulary(
        tables={
            "marked": {
                "vote": ColumnInfo(kind="text", values=["Bush", "Clinton", "Perot"]),
                "far_clinton": ColumnInfo(kind="other", values=["False", "True"]),
            }
        }
    )
    said = "Whose voters are most often far from Clinton, and how many far-from-Clinton voters are there?"
    assert not [r for r in extract.scopes(said, vocab, ["marked"]) if "Clinton" in r.values]
    # the value said on its own still scopes the turn
    assert [r.values for r in extract.scopes("How many Clinton voters are there?", vocab, ["marked"])] == [
        ["Clinton"]
    ]


def test_farthest_first_ranks_down_and_nearest_first_ranks_up() -> None:
    far = "List the ids of the five voters farthest from Bush (farthest first, lowest id first when tied)"
    near = "List the ids of the five voters nearest to Bush (nearest first)"
    assert [r.descending for r in extract.rankings(far)] == [True]
    assert [r.descending for r in extract.rankings(near)] == [False]


@pytest.mark.parametrize(
    "after",
    [
        " has to show up with 0 matches",
        " stays in with 0.",
        " must remain with no rows",
        " appears with zero",
    ],
)
def test_an_entry_that_shows_up_with_nothing_is_kept_empty(after: str) -> None:
    assert extract._KEPT_EMPTY.match(after)


def test_a_group_named_by_part_of_one_name_and_whole_by_another_description_is_no_reading() -> None:
    from stateguard.verification import rule_windows

    columns = ["edlevel", "educ", "age"]
    described = {"edlevel": ("education", "level"), "educ": ("years", "schooling")}
    rule = "below 70 per cent of the median income of respondents at the same education level"
    assert rule_windows.stated_group(rule, columns, described) is None
    # without the description, the name's word reads the group as before
    assert rule_windows.stated_group(rule, columns, {}) == rule_windows.Stated(
        "educ", "at the same education level"
    )


def test_a_season_two_descriptions_speak_of_is_no_group() -> None:
    from stateguard.verification import rule_windows

    text = (
        "Columns: Round (matchday of the season, 1 to 38), Year (the calendar year in which the season "
        "started, so 1963 is the 1963-64 season)."
    )
    vocab = Vocabulary(
        tables={
            "games": {
                "Round": ColumnInfo(kind="num", low=1, high=38),
                "Year": ColumnInfo(kind="num", low=1963, high=2008),
            }
        }
    ).with_descriptions(text)
    assert "season" in vocab.column_words["Year"] and "season" in vocab.column_words["Round"]
    rule = "a match is goal-rich when its total is at least double the median total of all matches in the same season"
    assert rule_windows.stated_group(rule, ["Round", "Year"], vocab.column_words) is None


def test_total_beside_a_statistic_s_short_form_is_the_quantity() -> None:
    from stateguard.verification.named_stats import stated_by

    assert stated_by("med_total") == set()
    assert stated_by("avg_total") == {"mean"}
    assert stated_by("total_goals") == {"sum"}
