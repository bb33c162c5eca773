"""The pre-run binding check (paper A.6): a broken binding stops the run before the worker's first step.

Workspaces that lose checkpoints are small DictWorkspace subclasses (test doubles, named so);
the manager is the scripted `ExhaustRepairs` policy of test_rollback_rewind.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.flows import LONGDS
from stateguard.harness import Harness, HarnessConfig
from stateguard.preflight import START_CHECKPOINT, BindingError, bind_run
from stateguard.rollout import rollout
from stateguard.state import AnalyticalState
from stateguard.store import StateStore
from stateguard.trace import read_trace
from stateguard.workers.scripted import ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.stateguard.test_rollback_rewind import TASK, ExhaustRepairs


class ForgetfulWorkspace(DictWorkspace):
    """Test double: takes checkpoints but never reports holding one (a misconfigured checkpoint dir)."""

    def has_checkpoint(self, checkpoint_id: str) -> bool:
        return False


class LosesOneCheckpoint(DictWorkspace):
    """Test double: loses checkpoint `lost` after it was taken (e.g. a cleaned-up folder)."""

    def __init__(self, lost: str):
        super().__init__()
        self.lost = lost

    def has_checkpoint(self, checkpoint_id: str) -> bool:
        return checkpoint_id != self.lost and super().has_checkpoint(checkpoint_id)


def kinds(run_dir: Path) -> list[str]:
    return [e.kind for e in read_trace(run_dir / "trace.jsonl")]


def test_a_workspace_that_cannot_hold_checkpoints_fails_up_front(tmp_path: Path) -> None:
    worker = ScriptedWorker(reference=TASK)
    with pytest.raises(
        BindingError, match=f"took checkpoint {START_CHECKPOINT} but does not report holding it"
    ):
        rollout(
            TASK,
            worker,
            ForgetfulWorkspace(),
            flow=LONGDS,
            manager=ExhaustRepairs(2, "margin"),
            run_dir=tmp_path,
        )
    seen = kinds(tmp_path)
    assert seen[-1] == "binding_failed" and "worker_step" not in seen and "review" not in seen
    assert worker.answers == {}


def test_the_baseline_arm_needs_no_checkpoint(tmp_path: Path) -> None:
    result = rollout(
        TASK, ScriptedWorker(reference=TASK), ForgetfulWorkspace(), flow=LONGDS, run_dir=tmp_path
    )
    assert sorted(result.answers) == [1, 2, 3]
    (bound,) = [e.payload for e in read_trace(tmp_path / "trace.jsonl") if e.kind == "binding_checked"]
    assert bound["start_checkpoint"] is None and bound["checks"][0].startswith(
        "executor: the worker runs code"
    )


def test_a_committed_state_whose_checkpoint_is_gone_fails_up_front() -> None:
    store = StateStore(":memory:")
    store.reserve_id()
    store.commit(AnalyticalState(id="S1", issue="earlier work", checkpoint_id="ckpt-S1"))
    ws, worker = DictWorkspace(), ScriptedWorker(reference=TASK)
    harness = Harness(store, HarnessConfig(regime="turn_aligned"), workspace=ws, worker=worker)
    worker.start(TASK.agent_view(), ws)
    with pytest.raises(
        BindingError, match="committed state S1 names checkpoint ckpt-S1, which the workspace does not hold"
    ):
        bind_run(harness, worker, ws, manager=True)
    ws.snapshot("ckpt-S1")
    assert bind_run(harness, worker, ws, manager=True).start_checkpoint == START_CHECKPOINT
    assert harness.last_valid_checkpoint == "ckpt-S1"  # the store's latest state stays the rollback target


def test_executor_and_harness_must_share_the_run_workspace_and_worker() -> None:
    ws, other, worker = DictWorkspace(), DictWorkspace(), ScriptedWorker(reference=TASK)
    worker.start(TASK.agent_view(), other)  # the worker runs its code somewhere else
    harness = Harness(
        StateStore(":memory:"), HarnessConfig(regime="turn_aligned"), workspace=ws, worker=worker
    )
    with pytest.raises(
        BindingError, match="the worker executes in DictWorkspace .* not in the run's workspace"
    ):
        bind_run(harness, worker, ws, manager=False)
    worker.start(TASK.agent_view(), ws)
    loose = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"), workspace=ws)
    with pytest.raises(BindingError, match="bound to another worker"):
        bind_run(loose, worker, ws, manager=False)
    with pytest.raises(BindingError, match="bound to another workspace"):
        bind_run(harness, worker, other, manager=False)


def test_a_checkpoint_lost_mid_run_stops_the_rollback_instead_of_abandoning_quietly(tmp_path: Path) -> None:
    ws = LosesOneCheckpoint("ckpt-S1")
    with pytest.raises(
        BindingError, match="rollback of S2: the workspace no longer holds checkpoint ckpt-S1"
    ):
        rollout(
            TASK,
            ScriptedWorker(reference=TASK),
            ws,
            flow=LONGDS,
            manager=ExhaustRepairs(2, "margin"),
            run_dir=tmp_path,
        )
    assert "rollback" not in kinds(tmp_path)
