"""Entries a question keeps even where the data lacks them ("keeping firms the file lacks"): when
the noun is the key both join sides share, the side to keep is the list the code typed in."""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification.extract import joins
from tests.stateguard.verification.conftest import Session

QUESTION = (
    "Put the segments in a DataFrame `segs` (segment, label) and attach each segment's number of "
    "customers to it, keeping segments the customer table lacks. How many segments have no customers?"
)


def _code(how: str) -> str:
    return (
        "import json\n"
        'segs = pd.DataFrame({"segment": ["retail", "business", "public"], "label": ["R", "B", "P"]})\n'
        '_n = customers.groupby("segment").size().rename("n").reset_index()\n'
        f'per_seg = segs.merge(_n, on="segment", how="{how}")\n'
        'result = {"n_without": int(per_seg["n"].isna().sum()), "n_segments": len(per_seg)}\n'
        "print(json.dumps(result))"
    )


@pytest.mark.parametrize(("how", "found"), [("left", False), ("inner", True)])
def test_the_typed_list_is_the_side_a_keep_phrase_keeps(how: str, found: bool) -> None:
    findings = Session().turn(QUESTION, _code(how))
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["per_seg"]


def test_keep_phrases_with_a_word_of_absence_name_the_kept_entries() -> None:
    assert [
        (r.how, r.subject)
        for r in joins("attach the figures, keeping a member even when the table does not cover it")
    ] == [("left", ["member"])]
    assert [(r.how, r.subject) for r in joins("attach the profiles, keeping firms the file lacks")] == [
        ("left", ["firms"])
    ]
    assert joins("keeping the rows of 2007") == []
    assert joins("Keep the orders without duplicate rows") == []  # no join in the clause


def test_frames_and_tables_built_from_written_values_are_listed() -> None:
    sem = inspect_code(
        'a = pd.DataFrame({"k": [1, 2]})\nb = pd.DataFrame(df[["k"]])\nc = pd.DataFrame([(1, "x")], columns=["k", "v"])\n'
        "con.execute(\"CREATE OR REPLACE TABLE ev AS SELECT * FROM (VALUES (1, 'a')) t(k, v)\")\n"
        'con.execute("CREATE TABLE big AS SELECT * FROM flights")'
    )
    assert sem.listed == ["a", "c", "ev"]


def test_rows_described_by_what_they_lack_are_no_entries_of_a_list() -> None:
    """ "keeping the years without a crisis": the kept rows are the data's, described by the other
    side lacking them; no kept noun is read (the plain keep-unmatched reading stays)."""
    (req,) = joins("join the crisis list to the yearly rows, keeping the years without a crisis")
    assert (req.how, req.subject) == ("left", [])


def test_a_noun_that_names_no_side_without_words_of_absence_is_not_given_to_the_typed_list() -> None:
    """ "keeping every day" in a join of the daily orders to a typed table of segments: the days are
    the data's rows; the typed table is not the side to keep, so a left join of the data is clean."""
    question = "Put the segments in a small table `segs` and join it to the customers by segment (keeping every day)."
    code = (
        "import json\n"
        'segs = pd.DataFrame({"segment": ["retail", "business", "public"], "label": ["R", "B", "P"]})\n'
        'per_row = customers.merge(segs, on="segment", how="left")\n'
        'print(json.dumps({"n": len(per_row)}))'
    )
    assert Session().turn(question, code) == []
