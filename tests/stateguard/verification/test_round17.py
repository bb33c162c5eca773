"""The seventeenth round: a row mask or a subset under any name the turn's words do not keep, built and
never read; "of exactly those" and "of that fast group" refer back to the first count's rows."""

from __future__ import annotations

import pytest

from stateguard.verification import carried, dead_subsets

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
