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
