"""Round 37: a numbered family of indicator columns beside its base column, a rule named by the act that
proposed it, group phrases that run on ("part of the day", "in their year"), values named by their
role or by a description's word, and an UPDATE that sets a flag on every row.

Written from fresh51's first look, whose one clean-run false repair read "the same travel band" as
`travel3` (the last of `travel1 to travel3 (one indicator per band)`, which alone took the
description's words) while the code grouped by `travel`, and from the turns that look missed.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from stateguard.inspection.code_sql import sql_selections
from stateguard.inspection.inspect import inspect_code
from stateguard.verification import extract, probes, rule_offsets, rule_windows, superseded
from stateguard.verification.bind import RequirementBinder
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, resolve_column
from tests.stateguard.verification.conftest import Session, sandboxed

VISITS_TEXT = (
    "Columns: anvisits (the visitor's trips to the river that year), income (the household income bracket, "
    "1 to 4), income1 to income4 (one indicator per bracket), travel (the travel time from home, 1 to 3: "
    "under a quarter hour, a quarter hour to 4 hours, 4 hours or more) and travel1 to travel3 (one "
    "indicator per band)."
)
VISITS_COLUMNS = ["anvisits", "income", "income1", "income2", "income3", "income4"]
VISITS_COLUMNS += ["travel", "travel1", "travel2", "travel3"]


def _visits_vocab() -> Vocabulary:
    num = ColumnInfo(kind="num", low=0, high=4)
    return Vocabulary(tables={"visits": dict.fromkeys(VISITS_COLUMNS, num)}).with_descriptions(VISITS_TEXT)


def test_a_description_after_a_range_of_names_belongs_to_none_of_them() -> None:
    vocab = _visits_vocab()
    assert "travel3" not in vocab.column_words and "income4" not in vocab.column_words
    assert vocab.column_words["travel"][:2] == ("travel", "time")
    assert "band" in vocab.described  # still the task's word


def test_a_numbered_column_is_read_only_when_its_number_is_said() -> None:
    assert resolve_column(["income", "bracket"], VISITS_COLUMNS) == ["income"]
    assert resolve_column(["travel", "band"], ["travel", "travel3"]) == ["travel"]
    assert "travel3" in resolve_column(["travel", "3"], ["travel", "travel3"])
    # a family without its base column is still read by its words
    assert resolve_column(["score"], ["score1"]) == ["score1"]


VISITS = (
    "visits = pd.DataFrame({'anvisits': [1, 3, 9, 30, 2, 4, 12, 40, 5, 6, 7, 60],"
    " 'income': [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2], 'travel': [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3]})\n"
    "for k in (1, 2, 3):\n    visits[f'travel{k}'] = (visits['travel'] == k).astype(int)\n"
    "for k in (1, 2, 3, 4):\n    visits[f'income{k}'] = (visits['income'] == k).astype(int)"
)
RULE = (
    "a visitor is a regular when their trips exceed the 80th percentile of trips among the visitors in the "
    "same income bracket and the same travel band"
)


@pytest.mark.parametrize(("keys", "caught"), [('["income", "travel"]', False), ('["income"]', True)])
def test_the_same_travel_band_is_the_base_column_not_its_indicator(keys: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(VISITS).ok
    first = "import json\nvisits['regular'] = visits['anvisits'] >= 25\nprint(json.dumps({'n': int(visits['regular'].sum())}))"
    assert not session.turn(
        "A regular makes 25 trips or more. How many regulars are there?", first, context=VISITS_TEXT
    )
    code = (
        "import json\n"
        f'p80 = visits.groupby({keys})["anvisits"].transform(lambda s: s.quantile(0.8))\n'
        'visits["regular"] = visits["anvisits"] > p80\n'
        'print(json.dumps({"n_regular": int(visits["regular"].sum())}))'
    )
    findings = session.turn("Switch regular in `visits` to the economist's rule. How many regulars are there?", code,
                            context=VISITS_TEXT, own_context=f"The economist's rule: {RULE}.")  # fmt: skip
    assert bool(findings) is caught


@pytest.mark.parametrize(
    "text",
    ["the comparison we dropped", "the suggestion we put aside", "the proposal that was withdrawn"],
)
def test_a_rule_named_by_the_act_that_proposed_it_is_a_version(text: str) -> None:
    assert extract.RULE_VERSION.search(text)


def test_a_group_phrase_runs_on_through_of_the() -> None:
    rule = "which participants scored at least 8 above the median TA of their form and part of the day, yet under 20?"
    columns = ["EA", "TA", "condition", "scale", "part", "assistant"]
    described = {"scale": ("msq", "original", "form", "questionnaire"), "condition": ("study", "condition")}
    found = rule_windows.stated_group(rule, columns, described, [], {}, [], ["participant_no"])
    assert found is not None and found.keys == ["scale", "part"]


def test_their_year_is_a_shared_time() -> None:
    rule = (
        "which firm-years had a log R&D at least one point above the average of their sector in their year?"
    )
    described = {"sector": ("code", "firm", "main", "industry"), "geo": ("code", "firm", "home", "region")}
    found = rule_windows.stated_group(rule, ["sector", "geo"], described, ["rdexp"], {}, ["year"], ["fi"])
    assert found is not None and found.keys == ["sector", "year"]
    # a possessive statistic of a year is still the row's own year
    assert (
        rule_windows.stated_group("above their year's median", ["sector"], {}, [], {}, ["year"], []) is None
    )
    own = "when the mean of that year's rate and the two years before is under 2.1"
    assert rule_windows.stated_group(own, ["code"], {}, ["tfr"], {}, ["year"], []) is None


FIRMS = Vocabulary(
    tables={
        "filings": {
            "sector": ColumnInfo(kind="num", low=1, high=15),
            "geo": ColumnInfo(kind="num", low=1, high=4),
        }
    }
).with_descriptions(
    "Columns: sector (a code from 1 to 15 for the firm's main industry), geo (a code from 1 to 4 for the "
    "firm's home region)."
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        ("Only the firms of region code 3, the largest group: how many firm-years", [("geo", "3")]),
        # a description's word without "code" (a point of a measure: "day 201 on"), a word two
        # descriptions say, a list of numbers, a number out of range: no value
        ("the firms of region 2", []),
        ("the firms of code 3", []),
        ("the firms of region code 3 onwards", []),
        ("the firms of region 3, 4 and 5", []),
        ("the firms of region 9", []),
    ],
)
def test_a_word_only_one_description_says_then_a_number_is_a_value(
    clause: str, scoped: list[tuple[str, str]]
) -> None:
    found = [(c, v) for r in extract.scopes(clause, FIRMS, None) for c in r.columns for v in r.values]
    assert found == scoped


CELLS = Vocabulary(
    tables={
        "cells": {
            "parent": ColumnInfo(kind="num", low=58, high=75),
            "par": ColumnInfo(kind="text", values=["Father", "Mother"]),
            "status": ColumnInfo(kind="text", values=["Alive", "Death"]),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        ("Just the cells with a mother as the parent: how many are there", [("par", "Mother")]),
        ("the cells whose parent is a mother", [("par", "Mother")]),
        ("the cells with a Mother parent", [("par", "Mother")]),
        # a common noun with no role word beside it is no value
        ("how many cells does a mother hold", []),
        ("the dates of death", []),
    ],
)
def test_a_value_said_in_lower_case_with_its_role_is_the_value(
    clause: str, scoped: list[tuple[str, str]]
) -> None:
    found = [(c, v) for r in extract.scopes(clause, CELLS, None) for c in r.columns for v in r.values]
    assert found == scoped


def test_a_distance_in_full_points() -> None:
    found = rule_offsets.stated(
        "a firm-year is heavy when its log R&D is at least one full point above the average"
    )
    assert found is not None and (found.distance, found.up) == (1.0, True)


def test_an_earlier_word_before_a_word_of_the_data_points_at_no_version() -> None:
    question = "how many of the tense participants filled in the original form?"
    assert superseded._points_earlier(question)
    assert not superseded._points_earlier(question, frozenset({"original", "form", "msq"}))
    # a rule's noun after it still points back, whatever the data's words
    assert superseded._points_earlier("under the original rule", frozenset({"rule"}))


def test_a_quantity_named_between_a_comparator_and_its_number_is_the_bounds_subject() -> None:
    found = [
        r
        for c in extract.clauses("how many of them sit below a log R&D of 6.5")
        for r in extract.comparisons(c)
    ]
    assert [(r.op, r.value, r.subject) for r in found] == [("<", 6.5, ["log", "R&D"])]
    assert not [r for c in extract.clauses("over the course of 10 years") for r in extract.comparisons(c)]


def test_an_update_of_every_row_is_read_as_the_table_with_its_flag() -> None:
    (sel,) = sql_selections("UPDATE marked SET tall = child >= 70")
    assert sel.target == "marked" and sel.sources == ["marked"]
    assert [(c.column, c.op, c.value) for c in sel.flags["tall"]] == [("child", ">=", 70.0)]
    # an update of some rows, or from another table, keeps other rows' values: not read as a flag
    assert not any(
        s.flags for s in sql_selections("UPDATE marked SET tall = child >= 70 WHERE par = 'Mother'")
    )
    joined = "UPDATE m SET tall = m.child >= w.x FROM (SELECT 1 AS x) w WHERE w.x = 1"
    assert not any(s.flags for s in sql_selections(joined))


@pytest.mark.parametrize(("side", "caught"), [(">=", False), ("<=", True)])
def test_a_flag_set_by_an_update_is_rerun_as_stated(tmp_path: Path, side: str, caught: bool) -> None:
    session, ws = sandboxed(
        tmp_path, "con.execute('CREATE TABLE marked AS SELECT *, rating >= 4 AS good FROM o')"
    )
    try:
        code = (
            "import json\n"
            f"con.execute('UPDATE marked SET good = rating {side} 3')\n"
            "n = con.execute('SELECT count_if(good) FROM marked').fetchone()[0]\n"
            "print(json.dumps({'n_good': n}))"
        )
        findings = session.turn(
            "Reset good in `marked` to a rating of 3 or more. How many orders are good?", code
        )
    finally:
        ws.close()
    assert bool(findings) is caught
    if caught:
        assert "reversed" in findings[0].reason


JOINED = (
    "WITH cell AS (SELECT sector, {key} AS year, avg(rdexp) AS m FROM marked GROUP BY sector, {key}) "
    "SELECT count(*) FROM recent r JOIN cell c ON c.sector = r.sector AND c.year = r.{key} "
    "WHERE r.rdexp >= c.m + 1"
)


def test_a_grouped_key_renamed_in_the_joined_select_is_its_column() -> None:
    found = rule_windows._sql_joined(JOINED.format(key="geo"), ["sector", "year"])
    assert found is not None and found[0] == ["sector", "geo"]
    assert "GROUP BY sector, year" in found[1] and "c.year = r.year" in found[1]
    assert "geo" not in found[1]
    same = rule_windows._sql_joined(
        JOINED.format(key="year").replace("year AS year", "year"), ["sector", "year"]
    )
    assert same is not None and same[0] == ["sector", "year"]


def test_an_edit_applies_to_a_cell_that_mixes_its_quotes() -> None:
    cell = 'import json\nx = {"a": [1, 2]}\nprint(json.dumps({"n": len(x["a"]) + len(x[\'a\'])}))'
    src = probes.answer_probe(
        [cell], probes.SpanEdit(kind="text", before="x['a']) + len(x['a']", after="x['a']"), None
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(src, "<probe>", "exec"), {})
    applied, printed = probes.parse_answer(out.getvalue())
    assert applied == 1 and json.loads(printed.strip()) == {"n": 2}


def test_a_counting_word_after_the_number_is_no_noun_it_counts() -> None:
    # found in the synthetic benchmark with semantic verification on: "(only countries with a
    # population of at least 800,000 count)" bound the bound to `n_countries` by the verb "count"
    (bound,) = [
        r
        for c in extract.clauses("only countries with a population of at least 800,000 count")
        for r in extract.comparisons(c)
    ]
    vocab = Vocabulary(
        tables={
            "kept": {"pop": ColumnInfo(kind="num"), "lifeExp": ColumnInfo(kind="num")},
            "by_continent": {"continent": ColumnInfo(kind="text"), "n_countries": ColumnInfo(kind="num")},
        }
    )
    code = (
        'con.execute("CREATE TABLE by_continent AS SELECT continent, COUNT(*) AS n_countries FROM kept '
        'GROUP BY continent")\n'
        'rows = con.execute("SELECT continent, n_countries FROM by_continent ORDER BY continent").fetchall()'
    )
    binder = RequirementBinder(inspect_code(code), vocab, frozenset())
    assert bound.after == ["count"]
    assert binder.resolve(bound) == ["pop"]


# Read from fresh53's first look (its three false repairs); fresh53 is a seen split from here on.


def test_a_group_word_that_is_another_columns_name_reads_no_described_key() -> None:
    session = Session()
    setup = (
        "games = pd.DataFrame({'player': ['A', 'A', 'B', 'B', 'B'], 'homeruns': [0, 2, 1, 1, 3],"
        " 'month': ['May', 'June', 'May', 'May', 'June']})"
    )
    assert session.ws.run_cell(setup).ok
    code = (
        "import json\n"
        "by_player = {k: int(v) for k, v in games.groupby('player')['homeruns'].sum().items()}\n"
        "print(json.dumps({'homeruns_by_player': by_player}))"
    )
    context = "Columns: homeruns (home runs the player hit in that game), month and player ('A' or 'B')."
    assert not session.turn("How many home runs did each player hit?", code, context=context)


def test_that_players_average_is_a_group_of_its_own() -> None:
    rule = (
        "a game is big when its home runs reach at least 2.5 times that player's average home runs per game "
        "in the same month"
    )
    found = rule_windows.stated_group(rule, ["month", "player"], {}, ["homeruns"], {}, [], ["gameno"])
    assert found is not None and found.keys == ["player", "month"]


def test_a_name_with_a_number_after_a_bound_is_no_subject() -> None:
    clause = "with e4 (a boolean, at least one e4 allele) and a boolean old"
    found = [r for c in extract.clauses(clause) for r in extract.comparisons(c)]
    assert [(r.value, r.subject) for r in found] == [(1.0, [])]
    # a plain noun after the bound is still read
    warm = [
        r for c in extract.clauses("the stations with at least 5 warm days") for r in extract.comparisons(c)
    ]
    assert [r.subject for r in warm] == [["warm", "days"]]


def test_a_grouped_key_held_constant_in_a_joined_select_is_no_key() -> None:
    # read from fresh52's misses after its look: `0 AS year` joined on `c.year = 0`
    held = (
        JOINED.format(key="year")
        .replace("year AS year, ", "0 AS year, ")
        .replace("GROUP BY sector, year", "GROUP BY sector")
    )
    held = held.replace("c.year = r.year", "c.year = 0")
    found = rule_windows._sql_joined(held, ["sector", "year"])
    assert found is not None and found[0] == ["sector"]
    assert "GROUP BY sector, year" in found[1] and "c.year = r.year" in found[1]
    assert "0 AS year" not in found[1]
    # a constant the join does not hold the key to is still no equal-key join: not read
    assert rule_windows._sql_joined(held.replace("c.year = 0", "c.year = 1"), ["sector", "year"]) is None
