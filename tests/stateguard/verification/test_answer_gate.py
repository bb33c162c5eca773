"""The answer gate: a broken requirement is a finding only when the turn's code, re-run in a probe
as the requirement states it, reports another answer. Ratings carry one decimal, so a cut-off of
3.8 and the stated 4 differ in rows but not in the highest price among them (3.5 differs in both)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.verification.verifier import SemanticConfig, SemanticVerifier
from tests.stateguard.verification.conftest import (
    DUCKDB_ORDERS,
    SETUP,
    WITHOUT_UNSTATED,
    Session,
    session_with,
)

QUESTION = "What is the highest price among orders rated at least 4? Report `max_price`."
SAME = "the turn's code written as stated reports the same answer"


def _pandas(cut: str) -> str:
    return (
        "import json\n"
        f"big = orders[orders.rating >= {cut}]\n"
        "result = {'max_price': float(big.price.max())}\nprint(json.dumps(result))"
    )


def _sql(cut: str) -> str:
    return (
        "import json\n"
        f"rows = con.execute('SELECT price FROM o WHERE rating >= {cut} AND price IS NOT NULL').fetchall()\n"
        "result = {'max_price': float(max(r[0] for r in rows))}\nprint(json.dumps(result))"
    )


@pytest.mark.parametrize(("cut", "found"), [("3.8", False), ("3.5", True), ("4", False)])
def test_a_cut_off_that_leaves_the_answer_as_stated_is_no_finding(cut: str, found: bool) -> None:
    session = Session()
    findings = session.turn(QUESTION, _pandas(cut))
    assert bool(findings) is found
    gated = [n for n in session.verifier.last.notes if SAME in n]
    assert bool(gated) is (cut == "3.8")
    assert session.ws.get_value("big")["rating"].min() == float(cut)  # the probe changed nothing live


def test_the_gate_can_be_switched_off() -> None:
    session = Session()
    session.verifier = SemanticVerifier(SemanticConfig(answer_gate=False))
    findings = session.turn(QUESTION, _pandas("3.8"))
    assert len(findings) == 1 and "kept_as_written" in findings[0].evidence


def test_sql_is_not_replayed_where_a_probe_would_write_through_the_live_connection() -> None:
    """An in-process workspace shares the connection with its probes: no replay, the finding stays."""
    session = session_with(DUCKDB_ORDERS, config=WITHOUT_UNSTATED)
    findings = session.turn(QUESTION, _sql("3.8"))
    assert len(findings) == 1 and not [n for n in session.verifier.last.notes if SAME in n]


@pytest.mark.parametrize(("cut", "found"), [("3.8", False), ("3.5", True)])
def test_sql_is_replayed_with_the_stated_query_in_a_sandbox_probe(
    tmp_path: Path, cut: str, found: bool
) -> None:
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits) as ws:
        session = Session()
        session.ws = ws  # type: ignore[assignment]
        assert ws.run_cell(SETUP).ok
        assert ws.run_cell(DUCKDB_ORDERS).ok
        findings = session.turn(QUESTION, _sql(cut))
        assert bool(findings) is found
        assert bool([n for n in session.verifier.last.notes if SAME in n]) is (not found)
        # the live table is untouched by the replay
        assert ws.run_cell("n_live = con.execute('SELECT COUNT(*) FROM o').fetchone()[0]").ok
        assert ws.get_value("n_live") == 400


def test_cells_that_write_sql_are_not_replayed_where_a_probe_would_write_through() -> None:
    """A pandas edit too: re-running cells that also write a table in the live database would
    write it again; the gate does not run, so the finding stays on the probe's evidence."""
    session = session_with(DUCKDB_ORDERS)
    code = "con.execute('CREATE OR REPLACE TABLE log AS SELECT 1 AS x')\n" + _pandas("3.8")
    findings = session.turn(QUESTION, code)
    assert len(findings) == 1 and not [n for n in session.verifier.last.notes if SAME in n]
