"""Groupings whose keys the row count alone does not tell apart: groups numbered by another order
under the same labels, an extra key that splits the stated groups, a key spelled by initials, and a
SQL grouping whose LIMIT keeps only the top group."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.verification.bind_shape import _resolve_key
from stateguard.verification.extract import groupings
from tests.stateguard.verification.conftest import SETUP, Session, session_with

# numbered in file order: runs of rows that share a customer are one "visit"
VISITS = 'orders["visit"] = (orders["customer_id"] != orders["customer_id"].shift()).cumsum() % 9 + 1'
CODE = (
    "import json\n"
    "per_visit = orders.groupby({key})['rating'].mean()\n"
    "result = {{'per_visit': {{str(k): round(float(v), 3) for k, v in per_visit.items()}}, "
    "'top': str(per_visit.idxmax())}}\n"
    "print(json.dumps(result))"
)
QUESTION = "For every visit, give the mean rating in `per_visit`. Which visit has the highest mean rating?"


@pytest.mark.parametrize(
    ("key", "found"),
    [
        ('"visit"', False),
        ('orders["visit"].astype(str).radd("v")', False),  # the same groups under other labels: names
        ('orders["visit"].map(lambda v: 10 - v)', True),  # the same groups, each under another's number
    ],
)
def test_groups_under_each_others_labels_are_the_wrong_grouping(key: str, found: bool) -> None:
    session = session_with(VISITS)
    findings = session.turn(QUESTION, CODE.format(key=key))
    assert bool(findings) is found
    if found:
        assert "'relabelled_groups': 8" in findings[0].evidence  # 5 keeps its number


def test_a_key_spelled_by_the_initials_of_the_stated_words() -> None:
    assert _resolve_key("prime minister", ["pm", "yr", "bond"]) == ["pm"]
    assert _resolve_key("prime minister", ["prime_minister", "pm"]) == ["prime_minister"]
    assert _resolve_key("minister", ["pm"]) == []  # one word spells nothing


@pytest.mark.parametrize(
    ("keys", "found"),
    [
        ('"segment"', False),
        ('["segment", "seg_code"]', False),  # a label carried along: the same groups
        ('["segment", "region"]', True),  # splits each segment by region
    ],
)
def test_an_extra_key_that_splits_the_stated_groups(keys: str, found: bool) -> None:
    session = session_with(
        "seg = orders.merge(customers, on='customer_id', how='inner')\n"
        "seg['seg_code'] = seg['segment'].map({'retail': 1, 'business': 2})"
    )
    code = (
        "import json\n"
        f"n_by = seg[seg['rating'] > 2].groupby({keys}).size().rename('n').reset_index()\n"
        "result = {'n_by_segment': {r.segment: int(r.n) for r in n_by.itertuples()}}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn("How many orders rated above 2 are there for each customer segment?", code)
    assert bool(findings) is found
    if found:
        assert "'result_rows': 8, 'stated_key_combinations': 2" in findings[0].evidence


def test_the_noun_that_holds_the_most_of_them_is_a_grouping() -> None:
    assert [r.keys for r in groupings("and the year that holds the most of them (earliest on a tie)")] == [
        ["year"]
    ]
    assert [r.keys for r in groupings("the month with the most of those")] == [["month"]]
    assert groupings("the year that had the highest index") == []


YEARS = (
    "import duckdb\ncon = duckdb.connect()\n"
    "con.execute(\"CREATE TABLE m AS SELECT DATE '2001-01-01' + INTERVAL (i) MONTH AS d, "
    "year(DATE '2001-01-01' + INTERVAL (i) MONTH) AS yr, month(DATE '2001-01-01' + INTERVAL (i) MONTH) AS mo, "
    '(i * 37) % 100 AS idx FROM range(60) t(i)")'
)


@pytest.mark.parametrize(
    ("key", "found"),
    [("yr", False), ("year(d)", False), ("mo", True)],
)
def test_a_top_group_query_is_counted_before_its_limit(tmp_path: Path, key: str, found: bool) -> None:
    """ "the year that holds the most of them": `GROUP BY mo ... LIMIT 1` makes 12 groups where
    the kept rows hold 5 years; the LIMIT leaves one row either way, so the groups are counted."""
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits) as ws:
        session = Session()
        session.ws = ws  # type: ignore[assignment]
        assert ws.run_cell(SETUP).ok and ws.run_cell(YEARS).ok
        code = (
            "import json\n"
            f'_n = con.execute("SELECT COUNT(*) FROM m WHERE idx > 50").fetchone()[0]\n'
            f'_top = con.execute("SELECT {key} FROM m WHERE idx > 50 GROUP BY {key} '
            f'ORDER BY COUNT(*) DESC, {key} LIMIT 1").fetchone()[0]\n'
            "result = {'n_high': _n, 'top_year': _top}\nprint(json.dumps(result))"
        )
        question = "How many months have an index above 50, and the year that holds the most of them?"
        findings = session.turn(question, code)
    assert bool(findings) is found
    if found:
        assert "'result_rows': 12, 'stated_key_combinations': 5" in findings[0].evidence


@pytest.mark.parametrize(
    ("clause", "keys"),
    [
        ("Split by the SOUTH code, build `by_south` with the number of states", [["south"]]),
        ("for every value of the prestige flag, store in `by_prestige` the number", [["prestige"]]),
        ("Within each teaching method (the psi value), put into `per_method` the count", [["psi"]]),
        ("the number of states split by region", [["region"]]),
        ("for each year (2001 to 2005) the mean", [["year"]]),  # a parenthesis of numbers names no column
    ],
)
def test_grouping_keys_named_by_their_kind_or_in_a_parenthesis(clause: str, keys: list[list[str]]) -> None:
    assert [r.keys for r in groupings(clause)] == keys


@pytest.mark.parametrize(("key", "found"), [("segment", False), ("region", False), ("category", True)])
def test_another_column_with_as_many_groups_is_checked_by_its_split(key: str, found: bool) -> None:
    """`groupby("flag")` for "per segment": two groups either way, so the row count cannot tell;
    how the two keys split the rows does. (`region` has four groups: the row count already tells.)"""
    session = session_with(
        "seg = orders.merge(customers, on='customer_id', how='inner')\n"
        "seg['category'] = seg['category'].where(seg['category'] == 'toys', 'other')"
    )
    code = (
        "import json\n"
        f"by_seg = seg.groupby({key!r})['rating'].mean()\n"
        "result = {'by_segment': {str(k): round(float(v), 3) for k, v in by_seg.items()}}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn("What is the mean rating for each customer segment?", code)
    assert bool(findings) is (found or key == "region")
    if found:
        assert "group_partition" in findings[0].evidence


@pytest.mark.parametrize(("call", "found"), [("nsmallest", False), ("nlargest", True)])
def test_a_ranking_written_straight_into_the_answer_is_put_the_stated_way_round(
    call: str, found: bool
) -> None:
    """`orders.nlargest(5, "rating")["order_id"]` inside the reported dict for "the five lowest
    rated orders (lowest first)": no ranked frame to read; the call is flipped and the answer changes."""
    code = (
        "import json\n"
        f'result = {{"n": len(orders), "low5": orders.{call}(5, "rating")["order_id"].tolist()}}\n'
        "print(json.dumps(result))"
    )
    findings = Session().turn(
        "How many orders are there? List the five orders with the lowest rating (lowest first).", code
    )
    assert bool(findings) is found
    if found:
        assert "'code_ranks': 'largest first'" in findings[0].evidence


def test_a_sql_key_with_as_many_groups_is_checked_by_its_pairs(tmp_path: Path) -> None:
    """`GROUP BY grp` where the kept rows hold as many years as groups: the counts agree, the
    pairs of (year, grp) do not."""
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits) as ws:
        session = Session()
        session.ws = ws  # type: ignore[assignment]
        assert ws.run_cell(SETUP).ok and ws.run_cell(YEARS).ok
        assert ws.run_cell("con.execute('CREATE OR REPLACE TABLE m AS SELECT *, (mo % 5) AS grp FROM m')").ok
        found = {}
        for key in ("yr", "grp"):
            code = (
                "import json\n"
                f'_top = con.execute("SELECT {key} FROM m GROUP BY {key} ORDER BY COUNT(*) DESC, {key} LIMIT 1").fetchone()[0]\n'
                "result = {'top_year': int(_top)}\nprint(json.dumps(result))"
            )
            found[key] = session.turn(
                "How many months are there, and which year holds the most of them?", code
            )
    assert found["yr"] == [] and found["grp"] and "'key_pairs'" in found["grp"][0].evidence
