"""Entries a question keeps whole ("keeping every plan even when no customer has it") bound to
the join side that lists them, by its name or by a column only it has (`bind_shape.keep_side`):
a join that does not keep that side is probed both ways and needs a changed answer."""

from __future__ import annotations

import pytest

from stateguard.verification import sql_edit
from tests.stateguard.verification.conftest import Session

QUESTION = (
    "Put the plans in a DataFrame `plans` (segment, label) and attach the customers to it, "
    "keeping every plan even when no customer has it. How many customers does each label have?"
)
BY_LABEL = (
    "Put the codebook in a DataFrame `codebook` (segment, label) and attach the customers to it so that "
    "every label is listed even without customers. How many customers per label?"
)


def _code(frame: str, how: str, left: str | None = None) -> str:
    left = left or frame
    right = "customers" if left == frame else frame
    return "\n".join(
        [
            "import json, pandas as pd",
            f"{frame} = pd.DataFrame({{'segment': ['retail', 'business', 'public'], 'label': ['R', 'B', 'P']}})",
            f"joined = {left}.merge({right}, on='segment', how='{how}')",
            "result = {'per_label': {str(k): int(v) for k, v in joined.groupby('label')['customer_id'].count().items()}}",
            "print(json.dumps(result))",
        ]
    )


@pytest.mark.parametrize(
    ("how", "found"),
    [("left", False), ("outer", False), ("inner", True), ("right", True)],  # right keeps the customers
)
def test_the_side_named_by_the_entries_must_be_kept(how: str, found: bool) -> None:
    findings = Session().turn(QUESTION, _code("plans", how))
    assert bool(findings) is found
    if found:
        assert "every plan kept" in findings[0].evidence and "kept_side probe" in findings[0].evidence
        assert "joined" in findings[0].variables


def test_the_kept_side_may_be_the_right_one() -> None:
    """`customers.merge(segments, how='right')` keeps every segment: no finding; 'left' does not."""
    assert Session().turn(QUESTION, _code("plans", "right", left="customers")) == []
    assert Session().turn(QUESTION, _code("plans", "left", left="customers")) != []


def test_a_column_only_one_side_has_names_it() -> None:
    """ "every label": no side is called labels, only the codebook has a `label` column."""
    assert Session().turn(BY_LABEL, _code("codebook", "right")) != []
    assert Session().turn(BY_LABEL, _code("codebook", "left")) == []


def test_entries_that_name_neither_side_are_those_of_the_list_the_code_typed_in() -> None:
    """ "every plan" where the plans are typed into `codebook` and neither side is called so or has
    a `plan` column: the typed list is the side to keep (`CodeSemantics.listed`), so the right join,
    which keeps the customers, loses a plan; a left join keeps them all."""
    question = QUESTION.replace("`plans`", "`codebook`")
    assert Session().turn(question, _code("codebook", "right")) != []
    assert Session().turn(question, _code("codebook", "left")) == []


def test_a_join_that_loses_no_entry_changes_no_answer_and_is_no_finding() -> None:
    """Every segment has customers here: the inner join keeps them all, the gate sees the same answer."""
    code = _code("plans", "inner").replace("'public'", "'retail'")
    assert Session().turn(QUESTION, code) == []


@pytest.mark.parametrize(
    ("sql", "side", "expected"),
    [
        (
            "SELECT b.band, COUNT(g.x) FROM bands b JOIN gm g ON g.v = b.v GROUP BY b.band",
            "left",
            "LEFT JOIN",
        ),
        ("SELECT b.band FROM gm g RIGHT JOIN bands b ON g.v = b.v", "left", "LEFT JOIN"),
        ("SELECT b.band FROM gm g JOIN bands b ON g.v = b.v", "right", "RIGHT JOIN"),
        ("SELECT * FROM a JOIN b ON a.k = b.k JOIN c ON c.k = a.k", "left", None),  # a chain: abstain
        ("SELECT * FROM a", "left", None),
    ],
)
def test_keep_join_side_rewrites_the_one_join(sql: str, side: str, expected: str | None) -> None:
    out = sql_edit.keep_join_side(sql, side)
    if expected is None:
        assert out is None
    else:
        assert out is not None and expected in out.upper() and out.upper().count("JOIN") == 1


def test_the_list_the_clause_put_the_entries_in_decides_the_side() -> None:
    """ "every segment on the list", the list put in `seglist`: kept is `seglist`, although the
    customers' side is the one a name test would find ("segment" is a column of both, and no
    side is called segments)."""
    question = (
        "Put the list in `seglist` and attach the customers to it, keeping every segment on the list. "
        "How many customers does each label have?"
    )
    assert Session().turn(question, _code("seglist", "right")) != []
    assert Session().turn(question, _code("seglist", "left")) == []


def test_a_noun_that_names_one_side_and_a_column_of_the_other_is_their_shared_key() -> None:
    """ "every segment" with a frame called `segments` whose key `segment` the customers share too:
    the key names no side by itself; the side typed in from written values (`segments`) decides. A
    list built from the data (no typed side) leaves it open, so nothing is asserted."""
    question = QUESTION.replace("every plan", "every segment").replace("`plans`", "`segments`")
    question = question.replace("attach", "put")  # no join verb: the old rule stays out of it
    assert Session().turn(question, _code("segments", "right")) != []
    built = _code("segments", "right").replace(
        "segments = pd.DataFrame({'segment': ['retail', 'business', 'public'], 'label': ['R', 'B', 'P']})",
        "segments = customers[['segment']].drop_duplicates().assign(label='x')",
    )
    assert "drop_duplicates" in built
    assert Session().turn(question, built) == []
