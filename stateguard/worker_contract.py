"""The worker adapter contract (paper A.6): start, step, inject, snapshot, restore, done, final_answer.

Any native agent is wrapped to this contract; the rollout loop and the harness only ever talk
to it. Messages reach the worker through `inject`: user turns, and the manager's state and repair
hints in the fixed reference-only wording of `stateguard.hints`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from stateguard.hints import Hint
from stateguard.observation import WorkerStep
from stateguard.task import AgentTask, AgentTurn
from stateguard.workspace import LiveWorkspace


class WorkerMessage(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["turn", "state_hint", "repair_hint"]
    text: str
    turn: AgentTurn | None = None
    hint: Hint | None = None

    @classmethod
    def from_hint(cls, hint: Hint) -> WorkerMessage:
        return cls(
            kind="state_hint" if hint.kind == "state" else "repair_hint", text=hint.render(), hint=hint
        )

    @classmethod
    def user_turn(cls, turn: AgentTurn) -> WorkerMessage:
        return cls(kind="turn", text=turn.prompt(), turn=turn)


@runtime_checkable
class WorkerAdapter(Protocol):
    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        """Bind to a task and its workspace (the prelude has already run). The task is the agent view:
        no reference code, no answers (a worker that replays the reference takes it by name when
        it is built, as `ScriptedWorker(..., reference=task)` does)."""

    def step(self, index: int) -> WorkerStep | None:
        """Take one action and return it (with its executor result); None if there is nothing to do."""

    def inject(self, message: WorkerMessage) -> None:
        """Receive a user turn or a manager hint (append-only context)."""

    def snapshot(self) -> Any:
        """Opaque copy of the worker's own context (not the workspace). The harness takes one with
        every workspace checkpoint (each commit, and the run's start checkpoint)."""

    def restore(self, token: Any) -> None:
        """Rewind the context to `token` (a rollback to the checkpoint taken with it), so the
        abandoned work is gone from what the worker sees next. Answers already submitted stay:
        a rollback rewinds the analysis, it cannot take back an answer the benchmark recorded."""

    def done(self) -> bool:
        """The current turn's work is finished (the worker has answered)."""

    def final_answer(self) -> dict[int, Any]:
        """Latest answer per turn id (a later recomputation replaces an earlier answer)."""
