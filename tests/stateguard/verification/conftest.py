"""A small pandas analysis (orders and customers) run in a DictWorkspace, and a helper that runs
the semantic verifier's fragments on one turn with the real tools (no harness)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.state import AnalyticalState, Constraint
from stateguard.store import StateStore
from stateguard.verification.finding import Finding
from stateguard.verification.verifier import SemanticConfig, SemanticVerifier, constraint_text, run_fragment
from stateguard.workspace import DictWorkspace

SETUP = """
import pandas as pd, numpy as np
rng = np.random.default_rng(0)
n = 400
orders = pd.DataFrame({
    "order_id": np.arange(n),
    "region": rng.choice(["North", "South", "East", "West"], n),
    "category": rng.choice(["toys", "books", "garden"], n),
    "price": np.where(rng.random(n) < 0.1, np.nan, rng.uniform(5, 300, n).round(2)),
    "rating": rng.uniform(1, 5, n).round(1),
    "customer_id": rng.integers(0, 60, n),
})
customers = pd.DataFrame({"customer_id": np.arange(0, 50), "segment": rng.choice(["retail", "business"], 50)})
"""


# A session whose checks leave out the unstated-cutoff rule: for tests of another rule's reading of a
# cut-off the code does not apply as stated (the unstated-cutoff rule would catch those turns too).
WITHOUT_UNSTATED = SemanticConfig(unstated_cutoffs=False)


class Session:
    """One workspace; each `turn` runs code and returns the verifier's findings for it."""

    def __init__(self, config: SemanticConfig | None = None) -> None:
        self.ws = DictWorkspace()
        assert self.ws.run_cell(SETUP).ok
        self.store = StateStore(":memory:")
        self.verifier = SemanticVerifier(config)
        self.index = 0
        self.turn_id = 0

    def turn(self, question: str, code: str, context: str = "", own_context: str = "") -> list[Finding]:
        result = self.ws.run_cell(code)
        assert result.ok, result.error
        self.turn_id += 1
        step = WorkerStep(
            index=self.index,
            turn=self.turn_id,
            action=code,
            output=result.stdout,
            meta={"writes": cell_dataflow(code).writes},
        )
        self.index += 1
        ctx: Any = SimpleNamespace(
            task=SimpleNamespace(turns=[SimpleNamespace(context=context)]),
            workspace=self.ws,
            store=self.store,
            steps={step.index: step},
        )
        turn = SimpleNamespace(question=question, turn_id=self.turn_id, context=own_context)
        obs: Any = SimpleNamespace(current_draft=None)
        findings = run_fragment(
            self.verifier.verify(obs, ctx, turn, [step]),
            store=self.store,
            steps={step.index: step},
            workspace=self.ws,
        )
        if not findings:  # commit the state with its requirements, as the rules manager would
            state_id = self.store.reserve_id()
            texts = dict.fromkeys(constraint_text(r) for r in self.verifier.last.requirements)
            self.store.commit(
                AnalyticalState(id=state_id, issue=question, constraints=[Constraint(text=t) for t in texts])
            )
            self.verifier.remember(turn, state_id)
        return list(findings)


# The orders as a DuckDB table `o` on a connection `con` (for SQL turns).
DUCKDB_ORDERS = "import duckdb\ncon = duckdb.connect()\ncon.execute('CREATE TABLE o AS SELECT * FROM orders')"


def session_with(*cells: str, config: SemanticConfig | None = None) -> Session:
    """A fresh session whose workspace also ran `cells` (each must succeed)."""
    session = Session(config)
    for cell in cells:
        assert session.ws.run_cell(cell).ok
    return session


def sandboxed(tmp_path: Path, *cells: str) -> tuple[Session, SandboxWorkspace]:
    """A session on a real sandboxed kernel (SQL re-runs need the probe's own database copy), with the
    orders frame and a DuckDB table `o` of it, then `cells`."""
    limits = SandboxLimits(cpu_seconds_per_cell=60, wall_seconds_per_cell=90, memory_mb=2048)
    ws = SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits)
    session = Session()
    session.ws = ws  # type: ignore[assignment]
    for cell in (SETUP, DUCKDB_ORDERS, *cells):
        assert ws.run_cell(cell).ok
    return session, ws


@pytest.fixture
def session() -> Session:
    return Session()


def flag_history(*versions: tuple[int, str, str]) -> Any:
    """A `FlagHistory` that recorded each (turn, code, question) in order, as committed turns are."""
    from stateguard.inspection.inspect import inspect_code
    from stateguard.verification.superseded import FlagHistory

    history = FlagHistory()
    for turn, code, question in versions:
        history.record(turn, code, inspect_code(code), question)
    return history
