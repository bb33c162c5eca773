"""One RL rollout through the real runtime: the fixed worker prefix, then the sampled manager's window.

    result = run_continuation(spec, task, task_root, prompt, sampled=LLMManager(chat), run_dir=..., ...)
    result.trace_source          # what compute_score reads (training/rewards/verl_score.py)

`stateguard.rollout.rollout()` runs the task with the scripted worker (and the row's faults) and one
manager policy, `WindowManager`, that switches hands:
* activations before the row's decision point are the prefix teacher's (training/rl/prefix.py);
* at the decision point the rebuilt observation is checked against the row's prompt, the trace
  position is noted (`start_seq`: the reward scores the events from there on), and the sampled
  policy takes over;
* the window stays open for the decision's state: the verdict, a repair, the worker's retry and the
  later activations until the state is committed or abandoned, at most `max_activations`;
* when the window closes (the state done, the next turn, the activation limit, or the chat client's
  token/call budget) the trace position is noted again (`end_seq`), the worker is told to stop and the
  manager degrades,
  so the run ends at once with no event the sampled policy did not cause inside the window.

Workspaces: `sandbox` (one limited kernel process per rollout; what RL needs, since the sampled
manager writes probe code) or `dict` (in-process; its cells redirect the process's stdout, so
dict rollouts are serialized by a process-wide lock; for tests and the CPU dry run).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from stateguard.artifacts.events import ActionEvent, ToolEvent
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.observation import ManagerObservation
from stateguard.policies.base import Activation, Degrade, ManagerContext, ManagerPolicy
from stateguard.rollout import rollout
from stateguard.task import AgentTask, Task
from stateguard.trace import read_trace
from stateguard.worker_contract import WorkerAdapter, WorkerMessage
from stateguard.workspace import DictWorkspace, LiveWorkspace
from training.rl.prefix import PrefixMismatch, PrefixPolicy, PrefixSpec, check_prefix

__all__ = ["ContinuationResult", "StoppableWorker", "WindowManager", "run_continuation"]

_DICT_LOCK = threading.Lock()  # DictWorkspace cells redirect sys.stdout: one dict rollout at a time


class StoppableWorker:
    """A worker adapter that can be told to stop: then it is done and ignores new turns."""

    def __init__(self, inner: WorkerAdapter):
        self.inner = inner
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        self.inner.start(task, workspace)

    def step(self, index: int) -> Any:
        return None if self.stopped else self.inner.step(index)

    def inject(self, message: WorkerMessage) -> None:
        if not self.stopped:
            self.inner.inject(message)

    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def restore(self, token: Any) -> None:
        self.inner.restore(token)

    def done(self) -> bool:
        return self.stopped or self.inner.done()

    def final_answer(self) -> dict[int, Any]:
        return self.inner.final_answer()


class WindowManager:
    """Prefix teacher before the decision point, the sampled policy inside the window, then stop."""

    name = "rl-window"

    def __init__(
        self,
        spec: PrefixSpec,
        prompt: Sequence[Mapping[str, Any]],
        sampled: ManagerPolicy,
        worker: StoppableWorker,
        trace_path: Path,
        *,
        max_activations: int,
        prefix_check: bool,
    ):
        self.spec, self.prompt, self.sampled, self.worker = spec, prompt, sampled, worker
        self.prefix = PrefixPolicy(spec)
        self.trace_path = trace_path
        self.max_activations = max_activations
        self.prefix_check = prefix_check
        self.count = 0
        self.start_seq: int | None = None
        self.end_seq: int | None = None
        self.closed_by: str | None = None
        self.window_activations = 0
        self.prefix_s = 0.0
        self._t0 = time.perf_counter()

    def _seq(self) -> int:
        with self.trace_path.open("rb") as fh:
            return sum(1 for line in fh if line.strip())

    def close(self, reason: str) -> None:
        """End the window here (idempotent): later events are not the sampled policy's."""
        if self.closed_by is None and self.start_seq is not None:
            self.closed_by, self.end_seq = reason, self._seq()
            self.worker.stop()

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        index, self.count = self.count, self.count + 1
        turn = ctx.turn.turn_id if ctx.turn is not None else None
        if index < self.spec.decision_point:
            yield from self.prefix.activate(obs, ctx)
            return
        if index == self.spec.decision_point:
            where = f"{self.spec.task_id} turn {turn} activation {index}"
            if turn != self.spec.turn:
                raise PrefixMismatch(f"{where}: the row's decision point is in turn {self.spec.turn}")
            if self.prefix_check:
                check_prefix(obs, self.prompt, where)
            self.start_seq, self.prefix_s = self._seq(), time.perf_counter() - self._t0
        elif self.closed_by is None and turn != self.spec.turn:
            self.close("turn_done")
        elif self.closed_by is None and obs.stage == "idle":
            self.close(
                "state_done"
            )  # the decision's state was committed or abandoned (segment flows: same turn)
        elif self.closed_by is None and self.window_activations >= self.max_activations:
            self.close("max_activations")
        if self.closed_by is not None:
            yield Degrade(reason=f"RL continuation window closed ({self.closed_by})")
            return
        self.window_activations += 1
        yield from self.sampled.activate(obs, ctx)


class ContinuationResult(BaseModel):
    run_dir: str
    start_seq: int
    end_seq: int | None = Field(description="first event after the window; None if the run ended inside it")
    closed_by: Literal["turn_done", "state_done", "max_activations", "budget", "run_end"]
    window_activations: int
    actions: list[dict[str, Any]] = Field(
        description="the window's manager proposals with the harness verdicts"
    )
    trace_source: dict[str, Any] = Field(description="extra_info['stateguard_trace'] for compute_score")
    prefix_s: float
    total_s: float

    @property
    def decision(self) -> str | None:
        """The first accepted control action of the window (the verdict at the decision point)."""
        return next(
            (a["name"] for a in self.actions if a.get("accepted") and str(a.get("name")).isupper()), None
        )


def make_workspace(kind: str, task_root: Path, run_dir: Path) -> LiveWorkspace:
    if kind == "dict":
        return DictWorkspace()
    from stateguard.sandbox import SandboxWorkspace  # one kernel process per rollout

    return SandboxWorkspace(task_root / "agent", run_dir / "scratch", run_dir / "checkpoints")


def run_continuation(
    spec: PrefixSpec,
    task: Task,
    task_root: Path,
    prompt: Sequence[Mapping[str, Any]],
    *,
    sampled: ManagerPolicy,
    run_dir: Path,
    workspace: str = "sandbox",
    max_activations: int = 6,
    prefix_check: bool = True,
    transport: str = "inline",
    keep_run: bool = False,
    window: list[WindowManager] | None = None,
) -> ContinuationResult:
    """Rebuild the prefix, let `sampled` act in the window, and return where the window is in the trace.

    `window`, when given, receives the WindowManager before the run starts (the chat client closes it
    when its budget is spent).
    """
    start = time.perf_counter()
    # The worker the synthesis ran (synthesis.teacher.teacher_worker): same faults, response model, resistance.
    worker = StoppableWorker(spec.worker(task))
    trace_path = RolloutFolder(run_dir).trace
    manager = WindowManager(
        spec, prompt, sampled, worker, trace_path, max_activations=max_activations, prefix_check=prefix_check
    )
    if window is not None:
        window.append(manager)
    live = make_workspace(workspace, task_root, run_dir)
    lock = _DICT_LOCK if workspace == "dict" else threading.Lock()
    try:
        with lock:
            rollout(
                task.agent_view(), worker, live, flow=spec.flow, manager=manager, run_dir=run_dir
            )  # the flow the trajectory was synthesized under (its plan)
    finally:
        live.close()
    if manager.start_seq is None:
        raise PrefixMismatch(
            f"{spec.task_id}: the run ended before activation {spec.decision_point} (the decision point)"
        )
    events = read_trace(trace_path)
    kept = events[: manager.end_seq] if manager.end_seq is not None else events
    actions = [
        {
            "kind": e.kind,
            "name": e.data.name,
            "accepted": e.data.accepted,
            "stage": e.data.stage,
            "feedback": e.data.feedback,
        }
        if isinstance(e, ActionEvent)
        else {"kind": e.kind, "name": e.data.name, "accepted": True, "stage": None, "feedback": None}
        for e in kept[manager.start_seq :]
        if isinstance(e, ActionEvent | ToolEvent)
    ]
    if transport == "inline":
        source: dict[str, Any] = {
            "events": [e.model_dump(mode="json") for e in kept],
            "start_seq": manager.start_seq,
        }
    else:
        window_path = RolloutFolder(run_dir).window_trace
        window_path.write_text("".join(e.model_dump_json() + "\n" for e in kept), encoding="utf-8")
        source = {"path": str(window_path.resolve()), "start_seq": manager.start_seq}
    if not keep_run and transport == "inline":
        shutil.rmtree(run_dir, ignore_errors=True)
    return ContinuationResult(
        run_dir=str(run_dir),
        start_seq=manager.start_seq,
        end_seq=manager.end_seq,
        closed_by=manager.closed_by or "run_end",
        window_activations=manager.window_activations,
        actions=actions,
        trace_source=source,
        prefix_s=round(manager.prefix_s, 3),
        total_s=round(time.perf_counter() - start, 3),
    )
