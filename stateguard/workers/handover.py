"""A worker that replays the scripted worker up to a repair hint, then lets an LLM worker continue.

The hint-response experiment (`eval.perf.hint_response`, issue 30) asks how a real model answers
a repair hint, on turns chosen so that the hint is known to be right (a declared mistake) or known
to be wrong (the clean reference). Waiting for such hints in whole real-model runs gives almost no
samples, so the turn is set up instead:

* every turn before `turn`, and the first attempt of `turn` itself, are run by the scripted worker
  (reference code, or the variant's faulty code at `turn`), in the same workspace;
* each of those cells, its output and the turn's answer are written into the LLM worker's history
  as the model's own replies (`LLMWorker.adopt_cell`, `adopt_answer`), in the protocol's format;
* once the first attempt of `turn` is answered, `hint` is injected into the LLM worker, which works
  on from there (its own code, its own answer) until it is done.

    worker = HandoverWorker(scripted, llm, turn=7, hint=hint, code_reply=lambda c: f"<python>\\n{c}\\n</python>")
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stateguard.hints import Hint
from stateguard.observation import WorkerStep
from stateguard.task import AgentTask
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workers.scripted import ScriptedWorker
from stateguard.workspace import LiveWorkspace

__all__ = ["HandoverWorker", "answer_reply", "fenced_code"]


def fenced_code(code: str) -> str:
    """A code reply in the default protocol's form (a fenced python block)."""
    return f"```python\n{code}\n```"


def answer_reply(answer: Any) -> str:
    """An answer reply: the answer as JSON inside <answer> (every protocol here reads that tag)."""
    text = answer if isinstance(answer, str) else json.dumps(answer, default=str)
    return f"<answer>\n{text}\n</answer>"


class HandoverWorker:
    """Implements `WorkerAdapter`: `scripted` until `turn`'s first attempt is answered, then `llm`
    after `hint` (see the module docstring). `model_cells` lists what the LLM worker did after the
    hint: each step's code (empty for a reply without code), output, error, whether it answered, and
    the worker's failure when the step was no model reply (a failed call, a spent time cap)."""

    def __init__(
        self,
        scripted: ScriptedWorker,
        llm: LLMWorker,
        *,
        turn: int,
        hint: Hint,
        code_reply: Callable[[str], str] = fenced_code,
    ):
        if hint.kind != "repair":
            raise ValueError(f"HandoverWorker hands over at a repair hint, got a {hint.kind} hint")
        self.scripted, self.llm = scripted, llm
        self.hand_at, self.hint = turn, hint
        self.code_reply = code_reply
        self.handed_over = False
        self.first_answer: Any = None  # the answer of `turn`'s first attempt (before the hint)
        self.model_cells: list[dict[str, Any]] = []

    # -- contract
    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        self.scripted.start(task, workspace)
        self.llm.start(task, workspace)
        self.handed_over = False

    def inject(self, message: WorkerMessage) -> None:
        if message.kind == "turn":
            if self.handed_over:
                raise ValueError(f"HandoverWorker: the experiment ends with turn {self.hand_at}")
            self.scripted.inject(message)
            self.llm.inject(message)
        elif self.handed_over:
            self.llm.inject(message)
        else:
            self.scripted.inject(message)

    def step(self, index: int) -> WorkerStep | None:
        if self.handed_over:
            step = self.llm.step(index)
            if step is not None:
                self.model_cells.append(
                    {
                        "code": step.action,
                        "output": step.output[-1500:],
                        "error": step.error,
                        "answered": bool(step.meta.get("final")),
                        "failure": step.meta.get("worker_failure"),  # model_call, time_cap, turn_share
                    }
                )
            return step
        step = self.scripted.step(index)
        if step is None:
            return None
        output = "\n".join(x for x in (step.output, step.error or "") if x)
        self.llm.adopt_cell(self.code_reply(step.action), output, step.success)
        if self.scripted.done() and step.turn is not None:
            answer = self.scripted.answers.get(step.turn)
            self.llm.adopt_answer(answer_reply(answer), answer)
            if step.turn == self.hand_at:
                self.first_answer = answer
                self.handed_over = True
                self.llm.inject(WorkerMessage.from_hint(self.hint))
                step = step.model_copy(update={"meta": {**step.meta, "hint": self.hint.render()}})
        return step

    def done(self) -> bool:
        return self.llm.done() if self.handed_over else self.scripted.done()

    def final_answer(self) -> dict[int, Any]:
        return self.llm.final_answer()

    def snapshot(self) -> Any:
        return {
            "scripted": self.scripted.snapshot(),
            "llm": self.llm.snapshot(),
            "handed_over": self.handed_over,
        }

    def restore(self, token: Any) -> None:
        self.scripted.restore(token["scripted"])
        self.llm.restore(token["llm"])
        self.handed_over = token["handed_over"]
