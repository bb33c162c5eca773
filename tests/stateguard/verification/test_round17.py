"""The seventeenth round: a row mask or a subset under any name the turn's words do not keep, built and
never read; "of exactly those" and "of that fast group" refer back to the first count's rows."""

from __future__ import annotations

import pytest

from stateguard.verification import carried, dead_subsets, unstated_cutoff
from stateguard.verification.extract import comparisons

MASKED = """bb["power"] = bb["homer86"] >= 20
is_nl = bb["league86"] == "N"
result = {"n_power": int(bb["power"].sum()), "pct_nl_power": float(bb["power"].mean() * 100)}
"""


def test_an_unused_row_mask_and_the_reads_it_would_select() -> None:
    found = dead_subsets.unused(MASKED, "What percentage of the National League players are power hitters?")
    assert found is not None and (found.name, found.frame, found.columns, found.values) == (
        "is_nl",
        "bb",
        ("league86",),
        ("N",),
    )
    assert found.after == (
        'result = {"n_power": int(bb[is_nl]["power"].sum()), "pct_nl_power": float(bb[is_nl]["power"].mean() * 100)}'
    )


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (MASKED.replace('bb["power"].mean()', 'bb.loc[is_nl, "power"].mean()'), ""),  # the mask is read
        (MASKED, "Keep the mask as `is_nl` for later."),  # a name the words keep
        (
            MASKED.replace('is_nl = bb["league86"] == "N"', 'is_nl = bb["league86"] == other["x"]'),
            "",
        ),  # two frames
        (MASKED.replace('is_nl = bb["league86"] == "N"', 'is_nl = bb["league86"] + 1'), ""),  # no mask
    ],
)
def test_no_unused_mask(code: str, said: str) -> None:
    assert dead_subsets.unused(code, said) is None


def test_a_named_subset_is_unused_unless_the_words_keep_it() -> None:
    code = 'women = sat.query("sex == \'female\'")\nresult = {"pct": 100 * sat["strong"].mean()}\n'
    assert dead_subsets.unused(code, "Which percentage of the women are marked?") is not None
    assert dead_subsets.unused(code, "Keep the women in a frame `women`.") is None
    assert dead_subsets.unused(code, "Put them into women, then ...") is None


@pytest.mark.parametrize(
    "question",
    [
        "How many machines cost more than 2500? And of exactly those, how many lack a CD-ROM drive?",
        "How many machines cost more than 2500? And of that expensive group, how many lack a CD-ROM drive?",
    ],
)
def test_a_second_count_refers_back_in_more_words(question: str) -> None:
    bounds = carried.carried_bounds(question)
    assert [(b.op, b.value) for b in bounds] == [(">", 2500.0)]


# -- after fresh22's first look: the readings behind its two false repairs -------------------------------


def test_a_number_past_ten_in_words_is_named() -> None:
    said = "How many wives have sixteen or more years of schooling? And of that group, how many have a child aged five or younger?"
    assert {16.0, 5.0} <= unstated_cutoff.mentioned([said])
    assert unstated_cutoff.mentioned(["twenty-five of them"]) >= {25.0}
    code = "SELECT count(*), sum(CASE WHEN child5 > 0 THEN 1 ELSE 0 END) FROM wives WHERE education >= 16"
    assert unstated_cutoff.changed(said, [said], code) is None  # 16 is the stated "sixteen"


@pytest.mark.parametrize(
    "clause",
    [
        "among wives with at least one child under six, what proportion (between 0 and 1) work full-year?",
        "what share, between 0 and 1, of them are late",
    ],
)
def test_an_answers_scale_and_a_bound_on_what_is_counted_are_no_row_bounds(clause: str) -> None:
    found = [(r.op, r.value, r.upper) for r in comparisons(clause)]
    assert (">=", 0.0, 1.0) not in found and ("<", 6.0, None) not in found
    assert comparisons("the orders priced between 0 and 1 dollar")[0].upper == 1.0  # a bound on rows
