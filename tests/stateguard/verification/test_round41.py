"""Round 41: words the scope reader binds count as bound in the whole-clause check, "on average" is
the statistic and not a category value, a value before its own column's word ("the high-NO2 days")
names that value, and "N % of the <whole>" bounds the one column the task describes as a percentage
of that whole.

Written from misses of fresh58 and fresh59 after their first looks (dropped filters and bounds that
the reader abstained on); each test runs a right and a wrong version of one turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.verification import extract
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import sandboxed, session_with

KIDS = """
import json
kids = pd.DataFrame({
    "kid": np.arange(120),
    "sex": np.where(np.arange(120) % 3 == 0, "female", "male"),
    "learner": np.where(np.arange(120) % 4 == 0, "slow", "average"),
    "absent": (np.arange(120) * 7) % 61,
})
kids["persistent"] = kids["absent"] >= 20
"""

SHARE_OF_SLOW = (
    "How many persistent absentees are there, how many days did they miss on average, and what "
    "percentage of the slow learners is persistent?"
)
SHARE_CODE = """
base = {base}
result = {{"n_persistent": int(kids["persistent"].sum()),
          "mean_absent": float(kids.loc[kids["persistent"], "absent"].mean()),
          "pct_slow_persistent": float(100 * base["persistent"].mean())}}
print(json.dumps(result))
"""


@pytest.mark.parametrize(("base", "caught"), [('kids[kids["learner"] == "slow"]', False), ("kids", True)])
def test_on_average_is_the_statistic_not_the_learner_value(base: str, caught: bool) -> None:
    session = session_with(KIDS)
    findings = session.turn(SHARE_OF_SLOW, SHARE_CODE.format(base=base))
    assert bool(findings) is caught, findings


GIRLS = "Only the girls: how many are there, and how many of them were away 30 days or more?"
GIRLS_CODE = """
girls = {base}
result = {{"n_girls": len(girls), "n_of_those_30_plus": int((girls["absent"] >= 30).sum())}}
print(json.dumps(result))
"""


@pytest.mark.parametrize(("base", "caught"), [('kids[kids["sex"] == "female"]', False), ("kids", True)])
def test_an_everyday_word_for_a_value_is_a_bound_word(base: str, caught: bool) -> None:
    session = session_with(KIDS)
    findings = session.turn(GIRLS, GIRLS_CODE.format(base=base))
    assert bool(findings) is caught, findings


def _vocab(**columns: ColumnInfo) -> Vocabulary:
    return Vocabulary(tables={"days": dict(columns)})


def test_a_value_before_its_own_columns_word_names_the_value() -> None:
    vocab = _vocab(
        no2=ColumnInfo(kind="num", low=5, high=120),
        no2_band=ColumnInfo(kind="text", values=["high", "low", "moderate"]),
        dusty=ColumnInfo(kind="text", values=["False", "True"]),
    )
    read = extract.scopes("what percentage of the high-NO2 days is dusty", vocab, ["days"])
    assert [(r.columns, r.values) for r in read] == [(["no2_band"], ["high"])]
    # another column's word after the hyphen is no such compound
    assert extract.scopes("what percentage of the high-dust days is dusty", vocab, ["days"]) == []
    # a count of the category per group counts it; it is no scope of the turn (two clean runs'
    # "each band shows its number of days and of low-ozone days")
    counted = "so that each band shows its number of days and of high-NO2 days, gridlock with 0"
    assert extract.scopes(counted, vocab, ["days"]) == []


def test_on_average_is_no_value_of_a_column() -> None:
    vocab = _vocab(learner=ColumnInfo(kind="text", values=["average", "slow"]))
    read = extract.scopes("how many days did they miss on average", vocab, ["days"])
    assert read == []
    # the value said as the data writes it still binds
    read = extract.scopes("how many of the average learners were away", vocab, ["days"])
    assert [(r.columns, r.values) for r in read] == [(["learner"], ["average"])]


BURNS = """
import json
patients = pd.DataFrame({"pid": np.arange(150), "Z4": (np.arange(150) * 13) % 90 + 2})
"""
CONTEXT = "Columns: pid (the patient number) and Z4 (percentage of the body surface burned)."


@pytest.mark.parametrize(("cond", "caught"), [("< 10", False), ("> 10", True)])
def test_a_percentage_of_a_described_whole_bounds_that_column(
    tmp_path: Path, cond: str, caught: bool
) -> None:
    session, ws = sandboxed(tmp_path, BURNS)  # the changed answer is found by re-running the turn
    try:
        code = f'result = {{"n_under_10": int((patients["Z4"] {cond}).sum())}}\nprint(json.dumps(result))'
        findings = session.turn(
            "Separately: how many patients had less than 10 % of the body burned?", code, context=CONTEXT
        )
        assert bool(findings) is caught, findings
        if caught:
            assert any("Z4 < 10" in f.evidence for f in findings), findings
    finally:
        ws.close()


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("how many had 20 % of the body or more burned", (">=", 20.0)),
        ("how many had at least 10 % of the body surface burned", (">=", 10.0)),
        ("how many had less than 10 % of the body burned", ("<", 10.0)),
        # no comparator, or one on each side: no one bound
        ("how many had 10 % of the body burned", None),
        ("how many had at least 10 % of the body or more burned", None),
        # words the column's description does not hold: a ratio to another quantity, no reading
        ("how many had at least 10 % of the firm's market value", None),
    ],
)
def test_percent_bounds_read_only_a_described_percentage(
    clause: str, expected: tuple[str, float] | None
) -> None:
    vocab = _vocab(Z4=ColumnInfo(kind="num", low=2, high=95)).with_descriptions(CONTEXT)
    read = extract.percent_bounds(clause, vocab)
    got = [(r.op, r.value) for r in read]
    assert got == ([expected] if expected else [])
    assert all(r.subject == ["Z4"] for r in read)


def test_the_whole_clause_check_binds_the_everyday_word_the_scope_reader_took() -> None:
    vocab = _vocab(sex=ColumnInfo(kind="text", values=["female", "male"]))
    question = "Only the girls: how many are there, and how many of them were away 30 days or more?"
    (scope,) = [r for r in extract.scopes(question, vocab, ["days"])]
    assert scope.values == ["female"]
    assert extract.unbound_words("Only the girls", vocab, ["days"]) == []
    assert extract.parses_whole(question, scope, vocab, ["days"])
    # a word for a value the data does not hold stays unbound
    assert extract.unbound_words(
        "Only the boys", _vocab(kind=ColumnInfo(kind="text", values=["a", "b"])), ["days"]
    )
