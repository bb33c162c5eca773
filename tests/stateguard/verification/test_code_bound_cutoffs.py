"""Bounds bound through the code's own number when the words name no column: a mask of its own
(`low = orders["rating"] > 2` for "rated under 2") and a conditional count in SQL
(`SUM(CASE WHEN rating > 4 ...)` for "rated below 4"). Both re-run the turn as stated and are a
finding only when its answer changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.verification.bind import aggregate_test_as_stated
from stateguard.verification.requirements import Requirement
from stateguard.verification.verifier import SemanticConfig
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, SETUP, Session

MASK_Q = "How many orders are there in all? And how many of those were rated under 2?"


def _mask(op: str) -> str:
    return (
        "import json\n"
        f'low = orders["rating"] {op} 2\n'
        "result = {'n_orders': len(orders), 'n_low': int(low.sum())}\nprint(json.dumps(result))"
    )


@pytest.mark.parametrize(("op", "found"), [("<", False), (">", True), (">=", True)])
def test_a_mask_of_its_own_written_the_other_way_is_a_finding(op: str, found: bool) -> None:
    """The mask is written in double quotes, the inspection's text in single ones: the re-run as
    stated must still find it in the cell (else the answer is unknown and no finding is made)."""
    findings = Session().turn(MASK_Q, _mask(op))
    assert bool(findings) is found
    if found:
        assert findings[0].variables == ["low"] and "kept_as_written" in findings[0].evidence


def test_a_mask_whose_flip_leaves_the_answer_is_no_finding() -> None:
    """The count is of all orders; the mask is computed but never reported: the same answer. (The
    unused mask is the unused-subset rule's finding, left out here: this is the cut-off's gate.)"""
    code = _mask(">").replace("int(low.sum())", "int(len(orders) - 400)")
    assert Session(SemanticConfig(dead_subsets=False)).turn(MASK_Q, code) == []
    assert Session().turn(MASK_Q, code) != []  # the mask the question asks for is never read


SQL_Q = "How many orders are there? And how many of those were rated below 4 points?"


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT COUNT(*), SUM(CASE WHEN o.rating > 4 THEN 1 ELSE 0 END) FROM o", "o.rating < 4"),
        ("SELECT COUNT(*), COUNT(*) FILTER (WHERE rating >= 4) FROM o", "rating < 4"),
        ("SELECT COUNT(*), SUM(CASE WHEN rating < 4 THEN 1 ELSE 0 END) FROM o", None),  # as stated
        ("SELECT SUM(CASE WHEN rating > 4 THEN 1 END), SUM(CASE WHEN price > 4 THEN 1 END) FROM o", None),
        ("SELECT SUM(CASE WHEN NOT (rating > 4) THEN 1 END) FROM o", None),  # under a NOT
        ("SELECT SUM(CASE WHEN rating > 5 THEN 1 END) FROM o", None),  # another number: not bound
    ],
)
def test_aggregate_test_as_stated(sql: str, expected: str | None) -> None:
    req = Requirement(kind="comparison", text="below 4", op="<", value=4.0)
    out = aggregate_test_as_stated(sql, None, req)
    if expected is None:
        assert out is None
    else:
        assert out is not None and expected in out and out.count("4") == sql.count("4")


def _sql(op: str) -> str:
    return (
        "import json\n"
        f"_row = con.execute('SELECT COUNT(*), SUM(CASE WHEN rating {op} 4 THEN 1 ELSE 0 END) FROM o').fetchone()\n"
        "result = {'n_orders': int(_row[0]), 'n_low': int(_row[1])}\nprint(json.dumps(result))"
    )


@pytest.mark.parametrize(("op", "found"), [("<", False), (">", True)])
def test_a_conditional_count_written_the_other_way_is_rerun_in_a_sandbox(
    tmp_path: Path, op: str, found: bool
) -> None:
    """ "points" names no column: the number 4 binds the bound to the one test of `rating` against it."""
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits) as ws:
        session = Session()
        session.ws = ws  # type: ignore[assignment]
        assert ws.run_cell(SETUP).ok and ws.run_cell(DUCKDB_ORDERS).ok
        findings = session.turn(SQL_Q, _sql(op))
        assert bool(findings) is found
        if found:
            assert "rows_as_written" in findings[0].evidence


def test_in_process_the_conditional_count_cannot_be_rerun_and_is_no_finding() -> None:
    """Where probes share the live connection the answer cannot be told: no finding (needs a change)."""
    session = Session()
    assert session.ws.run_cell(DUCKDB_ORDERS).ok
    assert session.turn(SQL_Q, _sql(">")) == []
    assert any("no finding without a changed answer" in n for n in session.verifier.last.notes)
