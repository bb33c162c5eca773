"""Entries a question asks about one by one from a named place ("in every tier of the marketing
sheet", "for every plan in the codebook", "every entry of the target sheet"): the join that builds
the per-entry result must keep that place's side. The place binds by a side's name, the noun by
the side called after it; a LEFT JOIN whose WHERE then tests the other side's columns drops the
unmatched entries again (`sql_edit.unfilter_kept_side`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.verification import sql_edit
from stateguard.verification.extract import aliases, joins
from tests.stateguard.verification.conftest import SETUP, Session


@pytest.mark.parametrize(
    ("clause", "subject"),
    [
        (
            "the number of big spenders in every tier of the marketing sheet, 0 where there are none",
            ["tier", "marketing", "sheet"],
        ),
        ("the number of frequent users for every plan in the codebook", ["plan", "codebook"]),
        ("Counting every cycle on the list, how many cycles have no active year?", ["cycle", "list"]),
        (
            "Put the list in `countries` and attach the makers, keeping every maker on the list",
            ["maker", "countries"],
        ),
    ],
)
def test_every_entry_of_a_named_place_is_a_kept_side(clause: str, subject: list[str]) -> None:
    (req,) = joins(clause)
    assert req.how == "left" and req.subject == subject and not set(req.keys) & set(subject)


def test_a_quantified_noun_without_a_place_is_no_kept_side() -> None:
    assert joins("the mean price of every order") == []
    assert joins("How many orders does every region have?") == []


TIERS = (
    "import json, pandas as pd\n"
    "tiers = pd.DataFrame({'segment': ['retail', 'business', 'public'], 'fee': [1, 2, 3]})\n"
)


def _per_tier(how: str) -> str:
    return (
        "import json\n"
        "_n = customers.groupby('segment').size().rename('n').reset_index()\n"
        f"_table = tiers.merge(_n, on='segment', how='{how}').fillna({{'n': 0}})\n"
        "result = {'per_segment': {s: int(n) for s, n in zip(_table['segment'], _table['n'])}}\n"
        "print(json.dumps(result))"
    )


@pytest.mark.parametrize(("how", "found"), [("left", False), ("inner", True)])
def test_the_side_called_after_the_noun_is_kept_when_an_earlier_turn_typed_it(how: str, found: bool) -> None:
    """`tiers` was typed in by an earlier turn (this turn's code types nothing in); "every segment"
    names `tiers` by name and `_n` only by a column: `tiers` is the side to keep."""
    session = Session()
    assert session.ws.run_cell(TIERS.replace("tiers =", "segments =")).ok
    question = (
        "Only report the number of customers in every segment of the fee sheet, 0 where there are none."
    )
    findings = session.turn(question, _per_tier(how).replace("tiers", "segments"))
    assert bool(findings) is found


@pytest.mark.parametrize(("how", "found"), [("left", False), ("inner", True)])
def test_the_place_names_the_side(how: str, found: bool) -> None:
    """ "every segment of the tier sheet": the noun is a column of both sides, the place is `tiers`."""
    session = Session()
    assert session.ws.run_cell(TIERS).ok
    question = (
        "Only report the number of customers for every segment of the tier sheet, 0 where there are none."
    )
    assert bool(session.turn(question, _per_tier(how))) is found


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT t.k, COUNT(v.k) FROM t LEFT JOIN v ON v.k = t.k WHERE v.ok AND v.k NOT IN (SELECT k FROM x) GROUP BY t.k",
            "SELECT t.k, COUNT(v.k) FROM t LEFT JOIN v ON (v.k = t.k AND v.ok) AND NOT v.k IN (SELECT k FROM x) GROUP BY t.k",
        ),
        (  # a test of the kept side stays in the WHERE
            "SELECT t.k FROM t LEFT JOIN v ON v.k = t.k WHERE v.ok AND t.k > 1",
            "SELECT t.k FROM t LEFT JOIN v ON v.k = t.k AND v.ok WHERE t.k > 1",
        ),
        ("SELECT t.k FROM t LEFT JOIN v ON v.k = t.k WHERE v.k IS NULL", None),  # an anti-join
        ("SELECT t.k FROM t JOIN v ON v.k = t.k WHERE v.ok", None),  # not an outer join
        ("SELECT t.k FROM t LEFT JOIN v ON v.k = t.k WHERE t.k > 1", None),  # nothing to move
    ],
)
def test_unfilter_kept_side_moves_the_other_sides_tests_into_the_join(sql: str, expected: str | None) -> None:
    assert sql_edit.unfilter_kept_side(sql, "left") == expected


@pytest.mark.parametrize(("where", "found"), [("", False), ("WHERE c.segment = 'retail'", True)])
def test_a_left_join_whose_where_drops_the_unmatched_entries(tmp_path: Path, where: str, found: bool) -> None:
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits) as ws:
        session = Session()
        session.ws = ws  # type: ignore[assignment]
        setup = (
            "import duckdb\ncon = duckdb.connect()\ncon.execute('CREATE TABLE c AS SELECT * FROM customers')\n"
            "con.execute(\"CREATE TABLE tiers AS SELECT * FROM (VALUES ('retail', 1), ('business', 2), ('public', 3)) AS t(segment, fee)\")"
        )
        assert ws.run_cell(SETUP).ok and ws.run_cell(setup).ok
        on = "c.segment = t.segment" + (" AND c.segment = 'retail'" if not where else "")
        code = (
            "import json\n"
            f'_rows = con.execute("SELECT t.segment, COUNT(c.customer_id) FROM tiers t LEFT JOIN c ON {on} {where} '
            'GROUP BY t.segment ORDER BY t.segment").fetchall()\n'
            "result = {'retail_by_tier': {r[0]: r[1] for r in _rows}}\nprint(json.dumps(result))"
        )
        question = (
            "Only report the number of retail customers for every entry of the tier sheet, 0 for the others."
        )
        findings = session.turn(question, code)
    assert bool(findings) is found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Put the key in a frame `jobs` (job, label).", {"key": "jobs"}),
        (
            "Type the chancellor list into a table `chancellors`.",
            {"list": "chancellors", "chancellor list": "chancellors"},
        ),
        ("Keep every quarter with a `tight` flag in a table `marked`.", {}),
        ("Store the result as `res`.", {}),
    ],
)
def test_aliases_name_the_frame_a_noun_was_put_in(text: str, expected: dict[str, str]) -> None:
    assert aliases(text) == expected


@pytest.mark.parametrize(("how", "found"), [("left", False), ("inner", True)])
def test_the_place_an_earlier_turn_put_in_a_named_frame_names_that_side(how: str, found: bool) -> None:
    """ "Put the fee sheet in a frame `pricing`", then "every entry of the sheet": the side `pricing`,
    though neither its name nor a column is the noun."""
    session = Session()
    assert session.ws.run_cell(TIERS.replace("tiers =", "pricing =")).ok
    assert session.turn("Put the fee sheet in a frame `pricing` (segment, fee).", "x = 1\nprint('{}')") == []
    question = "Only report the number of customers for every entry of the sheet, 0 where there are none."
    assert bool(session.turn(question, _per_tier(how).replace("tiers", "pricing"))) is found


@pytest.mark.parametrize(
    ("clause", "noun"),
    [
        ("the number of big spenders in each tier of the fee sheet, 0 for a tier with none", "tier"),
        ("For each maker on the list give the planes, listing a maker with no plane with 0", "maker"),
        (
            "For every entry of the key give the count, showing 0 respondents for a code nobody carries",
            "entry",
        ),
    ],
)
def test_each_entry_of_a_place_with_zeros_written_out_is_kept(clause: str, noun: str) -> None:
    (req,) = joins(clause)
    assert req.how == "left" and req.subject[0] == noun


def test_each_entry_without_zeros_written_out_is_no_kept_side() -> None:
    assert joins("the mean price for each region of the file") == []
    assert joins("the number of spenders in each tier of the fee sheet") == []


@pytest.mark.parametrize(("how", "found"), [("left", False), ("inner", True)])
def test_each_tier_with_zeros_keeps_the_tier_side(how: str, found: bool) -> None:
    session = Session()
    assert session.ws.run_cell(TIERS).ok
    question = (
        "Only a report: the number of customers in each segment of the tier sheet, 0 for a segment with none."
    )
    assert bool(session.turn(question, _per_tier(how))) is found


@pytest.mark.parametrize(
    ("clause", "noun"),
    [
        (
            "Give, era by era, the number of years and their mean flow, listing an era with no years as 0",
            "era",
        ),
        (
            "For each phase on the list count the months in it, keeping a phase with no months at 0. How",
            "phase",
        ),
        ("For each band on the list, how many strikes began in it (a band without strikes counts 0)", "band"),
        (
            "For every prime minister on the list, the quarters, counting 0 quarters for anyone the file does not reach",
            "minister",
        ),
    ],
)
def test_more_ways_of_writing_the_zeros_out(clause: str, noun: str) -> None:
    (req,) = joins(clause)
    assert req.how == "left" and req.subject[0] == noun


def test_a_zero_that_is_a_value_is_no_zero_written_out() -> None:
    assert joins("how many days at 0 degrees for each city of the file") == []


def test_a_frame_made_from_a_list_is_that_list() -> None:
    assert aliases("Make a frame `pms` (pm, from_yr) from that list and attach the prime minister.") == {
        "list": "pms"
    }


@pytest.mark.parametrize(
    ("clause", "noun"),
    [
        ("How many bands on the list hold no long strike", "bands"),
        ("and how many eras on the list have no low-water kept year", "eras"),
        ("how many segments of the tier sheet got no customer", "segments"),
        ("How many regions hold none of the file's states", "regions"),
        ("How many phases have no year in the file", "phases"),
        ("For every region, the states it holds (0 for a region with none)", "region"),
        ("For each band, how many students fall in it (0 if none)", "band"),
        ("Phase by phase, the years in it (a phase with no years shows 0 years)", "phase"),
    ],
)
def test_counting_the_entries_of_a_place_that_have_none_keeps_them(clause: str, noun: str) -> None:
    (req,) = joins(clause)
    assert req.how == "left" and req.subject[0] == noun and "have" not in req.subject


def test_counting_entries_of_a_place_without_none_is_no_kept_side() -> None:
    assert joins("How many bands on the list are there") == []
    assert joins("For each band, how many students fall in it (0 for a student with none)") == []
    assert joins("how many bands are empty") == []


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("tiers.merge(_n, on='segment', how='left')", False),
        ("_n.merge(tiers, on='segment', how='left')", True),  # keeps the counted segments only
    ],
)
def test_the_entries_with_none_are_counted_on_the_whole_place(code: str, found: bool) -> None:
    session = Session()
    assert session.ws.run_cell(TIERS).ok
    cell = (
        "import json\n"
        "_n = customers.groupby('segment').size().rename('n').reset_index()\n"
        f"_table = {code}.fillna({{'n': 0}})\n"
        "result = {'n_empty': int((_table['n'] == 0).sum())}\n"
        "print(json.dumps(result))"
    )
    question = "How many segments of the tier sheet have no customer?"
    assert bool(session.turn(question, cell)) is found
