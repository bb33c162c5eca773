"""A worker that repeats its mistake after a repair hint: what the heavy and abandon scenarios need.

    worker = teacher_worker(task_faults, resist="light", reference=task)  # repeats θ' after a light hint

An agent told that a value is wrong does not always fix it: it may re-run the same analysis and
report the same result. `ResistingWorker` wraps the scripted worker and, for a hint whose mode
the scenario resists (`light`: only light hints; `all`: every hint), re-runs the faulted turn's
θ' instead of recomputing it with the reference code. A heavy repair deletes the named
variables from the workspace, so the worker that resisted the light hint has to rebuild them and
this time takes the hint (heavy scenario); the abandon scenario resists every hint until the
harness refuses further repairs. The synthesis teacher and the RL prefix replay build their
worker here, with the same response model, so a row's prefix reproduces exactly.
"""

from __future__ import annotations

from typing import Any, Literal

from stateguard.observation import WorkerStep
from stateguard.task import AgentTask, Task
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.faults import Fault, counterfactual_code
from stateguard.workers.response import ResponseModel
from stateguard.workers.scripted import FaultModel, ScriptedWorker
from stateguard.workspace import LiveWorkspace

__all__ = ["ResistingWorker", "Resist", "teacher_worker"]

Resist = Literal["none", "light", "all"]


class ResistingWorker:
    """`WorkerAdapter` over a ScriptedWorker that repeats θ' for the hints it resists."""

    def __init__(self, inner: ScriptedWorker, resist: Resist = "none"):
        self.inner = inner
        self.resist = resist
        self.resisted: list[str] = []  # modes of the hints answered by repeating the mistake

    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        self.inner.start(task, workspace)

    def inject(self, message: WorkerMessage) -> None:
        hint = message.hint
        if message.kind == "repair_hint" and hint is not None and self._resists(hint.mode or "light"):
            turn = self._faulted_turn()
            if turn is not None:
                self._repeat(turn, hint.mode or "light")
                return
        self.inner.inject(message)

    def _resists(self, mode: str) -> bool:
        return self.resist == "all" or (self.resist == "light" and mode == "light")

    def _faulted_turn(self) -> int | None:
        return max(self.inner.faulted) if self.inner.faulted else None

    def _repeat(self, turn_id: int, mode: str) -> None:
        """Drop what is queued for this turn and later, and queue θ' of the turn again."""
        inner = self.inner
        fault: Fault = inner.faulted[turn_id]
        turn = inner.task.turn(turn_id)
        later = {t for t in inner._run_turns if t >= turn_id}
        inner._queue = [c for c in inner._queue if c.turn not in later]
        inner._queue.extend(
            inner._cells(turn, counterfactual_code(turn.code, fault), "faulty", {"resisted": mode})
        )
        self.resisted.append(mode)

    def step(self, index: int) -> WorkerStep | None:
        return self.inner.step(index)

    def done(self) -> bool:
        return self.inner.done()

    def final_answer(self) -> dict[int, Any]:
        return self.inner.final_answer()

    def snapshot(self) -> Any:
        return {"inner": self.inner.snapshot(), "resisted": list(self.resisted)}

    def restore(self, token: Any) -> None:
        self.inner.restore(token["inner"])


def teacher_worker(
    faults: list[Fault], resist: Resist = "none", *, reference: Task
) -> ScriptedWorker | ResistingWorker:
    """The scripted worker synthesis runs (and RL replays): the teacher's repair names the known
    intervention, so the permissive response model applies, and no false alarm is simulated."""
    inner = ScriptedWorker(
        FaultModel(faults=faults), ResponseModel(identify="variable", p_flip=0.0), reference=reference
    )
    return inner if resist == "none" else ResistingWorker(inner, resist)
