"""Fixtures of the reward tests: real-harness sales runs (see reward_world) and a whole demo run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from stateguard.flows import LONGDS
from stateguard.lifecycle import Regime
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import load_task
from stateguard.trace import TraceEvent, read_trace
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.training.rewards.reward_world import CORRECT, Sales

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def sales() -> Callable[..., Sales]:
    """Factory: sales(threshold=..., regime=..., path=...) -> a Sales run with its prefix done and marked."""

    def make(
        threshold: int = CORRECT, regime: Regime = Regime.TURN_ALIGNED, path: Path | None = None
    ) -> Sales:
        run = Sales(regime, path)
        run.prefix(threshold)
        run.mark()
        return run

    return make


@pytest.fixture(scope="session")
def six_turn_trace(tmp_path_factory: pytest.TempPathFactory) -> list[TraceEvent]:
    """The demo task run end to end: scripted worker with the stale fault at turn 5, rules manager."""
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    run_dir = tmp_path_factory.mktemp("six_turn") / "stateguard"
    worker = ScriptedWorker(FaultModel(faults=[Fault(kind="stale", turn=5)]), reference=task)
    rollout(task, worker, DictWorkspace(), flow=LONGDS, manager=RulesManager(), run_dir=run_dir)
    return read_trace(run_dir / "trace.jsonl")
