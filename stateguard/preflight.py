"""The pre-run binding check (paper A.6): before a task starts, the parts a rollback needs are bound.

`rollout` calls `bind_run` after the task prelude ran and the worker started, before the worker's
first step. It verifies, and raises `BindingError` naming what is wrong, that
  * executor: the worker runs its code in the workspace the harness checks, probes and restores
    (an adapter that exposes its executor as `.ws` must hold that very workspace);
  * harness: the harness is bound to the same workspace, store and worker as the run;
  * store: every committed state's checkpoint is present in the workspace (a reused store whose
    checkpoints are gone would turn a later rollback into a quiet abandon);
  * checkpoints (only with a manager and `on_budget_exhausted="rollback"`): the workspace takes a
    start checkpoint and then reports holding it, and the worker's `snapshot()` / `restore()`
    round-trip; that start checkpoint, with the worker's snapshot, is where a rollback goes
    when no state has been committed yet.
The baseline arm (no manager) never rolls back, so it takes no checkpoint; the other checks run.

    report = bind_run(harness, worker, workspace, manager=True)   # BindingReport(checks=[...])
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.harness import BindingError, Harness
from stateguard.worker_contract import WorkerAdapter
from stateguard.workspace import Workspace

__all__ = ["START_CHECKPOINT", "BindingError", "BindingReport", "bind_run"]

START_CHECKPOINT = "ckpt-start"


class BindingReport(BaseModel):
    """What the check verified (also written to the trace as `binding_checked`)."""

    model_config = ConfigDict(frozen=True)

    checks: list[str] = Field(description="One line per verified binding.")
    start_checkpoint: str | None = Field(description="The rollback target before the first commit, if any.")


def _executor(worker: Any) -> Any:
    """The workspace an adapter executes in, if it says (wrappers expose the adapter as `.inner`)."""
    seen = 0
    while worker is not None and seen < 8:
        if hasattr(worker, "ws"):
            return worker.ws
        worker, seen = getattr(worker, "inner", None), seen + 1
    return None


def bind_run(
    harness: Harness, worker: WorkerAdapter, workspace: Workspace, *, manager: bool
) -> BindingReport:
    """Verify the bindings of one run (see the module docstring); raise BindingError on the first
    broken one. With a manager and rollback configured, binds the start checkpoint."""
    checks: list[str] = []
    if harness.workspace is not workspace:
        raise BindingError(
            "the harness is bound to another workspace than the run's; build both from one object"
        )
    if harness.worker is not worker:
        raise BindingError("the harness is bound to another worker than the run's (pass worker= to Harness)")
    executor = _executor(worker)
    if executor is not None and executor is not workspace:
        raise BindingError(
            f"the worker executes in {type(executor).__name__} object {id(executor):#x}, not in the run's workspace "
            f"{id(workspace):#x}: the manager would check and roll back a namespace the worker does not use"
        )
    checks.append(
        "executor: the worker runs code in the run's workspace"
        if executor is not None
        else "executor: the worker does not expose its executor (not checked)"
    )
    missing = [
        (s.id, s.checkpoint_id)
        for s in (harness.store.load(i) for i in harness.store.ids())
        if s.checkpoint_id and not workspace.has_checkpoint(s.checkpoint_id)
    ]
    if missing:
        state, ckpt = missing[0]
        raise BindingError(
            f"committed state {state} names checkpoint {ckpt}, which the workspace does not hold "
            f"({len(missing)} such state(s)); a rollback to it would silently become a plain abandon. "
            "Start the task with a fresh store, or restore the workspace's checkpoint folder."
        )
    checks.append(f"store: {len(harness.store)} committed state(s), every checkpoint present")
    start: str | None = None
    if manager and harness.config.on_budget_exhausted == "rollback":
        if not isinstance(workspace, Workspace):
            raise BindingError(
                f"{type(workspace).__name__} cannot take checkpoints; rollback needs a Workspace"
            )
        try:
            workspace.snapshot(START_CHECKPOINT)
        except Exception as exc:  # the workspace says why
            raise BindingError(f"the workspace cannot take the start checkpoint: {exc}") from exc
        if not workspace.has_checkpoint(START_CHECKPOINT):
            raise BindingError(
                f"the workspace took checkpoint {START_CHECKPOINT} but does not report holding it; "
                "rollbacks would find no checkpoint"
            )
        token = worker.snapshot()
        worker.restore(token)  # at the start this changes nothing; it proves restore accepts a token
        harness.worker_checkpoints[START_CHECKPOINT] = worker.snapshot()
        if harness.last_valid_checkpoint is None:
            harness.last_valid_checkpoint = START_CHECKPOINT
        start = START_CHECKPOINT
        checks.append(f"checkpoints: {START_CHECKPOINT} taken and held; worker snapshot/restore bound to it")
    report = BindingReport(checks=checks, start_checkpoint=start)
    harness.trace.emit("binding_checked", **report.model_dump(mode="json"))
    return report
