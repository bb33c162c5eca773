"""The fifteenth round: an amount of money as a stated number, a stated bound the code writes in
thousands, and a subset of rows a turn builds and never reads while its answer reads the whole frame."""

from __future__ import annotations

import pytest

from stateguard.verification import bind_cutoff, dead_subsets, stated_sides, unstated_cutoff
from stateguard.verification.requirements import Kind, Requirement
from tests.stateguard.verification.conftest import session_with

# -- money, and numbers in thousands -------------------------------------------------------------------


def test_an_amount_of_money_is_a_stated_number() -> None:
    assert unstated_cutoff.bounds("husbands who earn less than $10,000 a year") == [
        (10000.0, False, "<", "less than $10,000")
    ]
    flipped = stated_sides.flipped("How many earn more than $20,000?", "_h = w[w['hincome'] < 20]")
    assert flipped is not None and flipped.after == "> 20"


@pytest.mark.parametrize(
    ("said", "code", "after"),
    [
        ("earns less than $10,000 a year", "w['low'] = w['hincome'] < 12", "< 10"),  # a column in thousands
        ("grew by more than 5%", "n = len(d[d['g'] > 0.03])", "> 0.05"),  # a percentage as a fraction
        ("weigh less than 2 kg", "n = len(d[d['kg'] < 1])", "< 2"),  # as said
    ],
)
def test_the_stated_number_is_written_in_the_codes_scale(said: str, code: str, after: str) -> None:
    found = unstated_cutoff.changed(said, [said], code)
    assert found is not None and found.after == after


def test_a_bound_in_thousands_is_rescaled_only_when_one_scale_fits() -> None:
    req = Requirement(kind=Kind.COMPARISON, text="under $10,000", op="<", value=10000.0)
    assert bind_cutoff.in_code_scale(req, {10.0, 100.0}).value == 10.0
    assert bind_cutoff.in_code_scale(req, {10000.0, 10.0}).value == 10000.0  # written as said
    assert bind_cutoff.in_code_scale(req, {10.0, 0.01}).value == 10000.0  # two scales fit
    assert bind_cutoff.in_code_scale(req, {12.0}).value == 10000.0  # none fits
    pct = Requirement(kind=Kind.COMPARISON, text="over 5%", op=">", value=5.0, percent=True)
    assert bind_cutoff.in_code_scale(pct, {0.005}) == pct  # a percentage has its own scale
    assert bind_cutoff.scale_for(req, 10.0) == 1e-3
    assert bind_cutoff.scale_for(req, 12.0) == 1.0


THOUSANDS = "wives = pd.DataFrame({'hincome': [3, 8, 9, 11, 15, 20, 25, 9.5, 30, 13], 'kids': ['yes'] * 3 + ['no'] * 7})"
LOW_INCOME = (
    "Mark a household as low-income when the husband earns less than $10,000 a year (a boolean column "
    "`low_inc`). How many households are low-income?"
)


@pytest.mark.parametrize(("cut", "flagged"), [("10", False), ("12", True)])
def test_a_money_bound_on_a_column_in_thousands(cut: str, flagged: bool) -> None:
    session = session_with(THOUSANDS)
    code = (
        f'wives["low_inc"] = wives["hincome"] < {cut}\n'
        'import json\nprint(json.dumps({"n_low": int(wives["low_inc"].sum())}))\n'
    )
    findings = session.turn(
        LOW_INCOME, code, context="hincome: the husband's income, thousands of dollars a year"
    )
    assert bool(findings) is flagged
    # the stated bound read in the column's scale: as written at 10, the unstated 12 against 10 otherwise
    notes = " ".join(session.verifier.last.notes)
    assert ("`< 12`, a number no text names" in notes) is flagged


# -- a subset built and never read ---------------------------------------------------------------------

DEAD = """_kids = wives[wives["kids"] == "yes"]
result = {"n_low": int(wives["low"].sum()), "pct_kids_low": 100 * wives["low"].mean()}
"""


def test_an_unused_subset_and_the_reads_it_would_replace() -> None:
    found = dead_subsets.unused(DEAD)
    assert found is not None
    assert (found.name, found.frame, found.columns, found.values) == ("_kids", "wives", ("kids",), ("yes",))
    assert found.after == (
        'result = {"n_low": int(_kids["low"].sum()), "pct_kids_low": 100 * _kids["low"].mean()}'
    )


@pytest.mark.parametrize(
    "code",
    [
        DEAD.replace('100 * wives["low"]', '100 * _kids["low"]'),  # the subset is read
        DEAD.replace("result =", "wives = wives.dropna()\nresult ="),  # the frame is bound again
        DEAD.replace('wives[wives["kids"] == "yes"]', 'wives["kids"]'),  # a column, no subset of rows
        "_kids = wives[wives['kids'] == 'yes']\nresult = {'n': len(people)}",  # the frame is never read again
        '_old = wives.loc[wives["low"]]\n' + DEAD,  # two unused subsets: which one was meant
    ],
)
def test_no_unused_subset(code: str) -> None:
    assert dead_subsets.unused(code) is None


@pytest.mark.parametrize(
    ("subset", "flagged"), [("wives['kids'] == 'yes'", True), ("wives['hincome'] > 0", False)]
)
def test_an_unused_subset_is_a_finding_only_when_reading_it_changes_the_answer(
    subset: str, flagged: bool
) -> None:
    session = session_with(THOUSANDS, "wives['low'] = wives['hincome'] < 10")
    code = (
        f"_sub = wives[{subset}]\n"
        "import json\n"
        "print(json.dumps({'pct_low': round(100 * float(wives['low'].mean()), 2)}))\n"
    )
    findings = session.turn("What percentage of the households with children are low-income?", code)
    assert bool(findings) is flagged
