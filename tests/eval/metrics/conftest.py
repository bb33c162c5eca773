"""Real rollouts of the six-turn demo task, shared by the metrics tests.

Both arms run the scripted worker with the demo's stale-inheritance fault at turn 5, in the
in-process DictWorkspace; the StateGuard arm uses the `rules` manager. Known outcome (docs/design_execution.md, "The six-turn demo"):
the baseline gets turns 5 and 6 wrong, StateGuard gets every turn right after one repair.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.flows import LONGDS, FlowConfig
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import Task, load_task
from stateguard.workers import FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

ROOT = Path(__file__).resolve().parents[3]
DEMO_TASK = ROOT / "eval" / "benchmarks" / "demo" / "six_turn"
SEGMENT = FlowConfig(
    name="demo-segment",
    regime="segment_induced",
    review_every=3,
    budget_unit="task",
    baseline_budget=200,
    stateguard_budget=200,
)


def _run(task: Task, flow: FlowConfig, with_manager: bool, run_dir: Path) -> Path:
    workspace = DictWorkspace()
    try:
        rollout(
            task,
            ScriptedWorker(FaultModel(seed=0, faults=[{"kind": "stale", "turn": 5}]), reference=task),
            workspace,
            flow=flow,
            manager=RulesManager() if with_manager else None,
            run_dir=run_dir,
        )
    finally:
        workspace.close()
    return run_dir


@pytest.fixture(scope="session")
def demo_task() -> Task:
    return load_task(DEMO_TASK)


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory: pytest.TempPathFactory, demo_task: Task) -> dict[str, Path]:
    """Run dirs (trace.jsonl, states.sqlite, result.json) keyed '<flow>/<arm>'."""
    root = tmp_path_factory.mktemp("demo_runs")
    runs = {}
    for flow_name, flow in (("turn", LONGDS), ("segment", SEGMENT)):
        for arm in ("baseline", "stateguard"):
            runs[f"{flow_name}/{arm}"] = _run(demo_task, flow, arm == "stateguard", root / flow_name / arm)
    return runs
