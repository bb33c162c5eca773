"""A scripted chat model and a one-task LLM-worker run, shared by the worker's tests.

`ScriptedModel` stands in for an OpenAI-compatible endpoint: it answers with its replies in order
(the last one repeats), optionally after a delay, and keeps every request it was sent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from eval.benchmarks.longds.prompts import longds_protocol
from stateguard.task import AgentTask, AgentTurn, prelude
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workspace import DictWorkspace


class _Reply:
    def __init__(self, content: str):
        self.message = {"role": "assistant", "content": content}


class ScriptedModel:
    """Replies in order (the last one repeats), each after `delay_s`; keeps every request."""

    def __init__(self, *replies: str, delay_s: float = 0.0):
        self.replies, self.delay_s = list(replies), delay_s
        self.requests: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], **_: Any) -> _Reply:
        self.requests.append([dict(m) for m in messages])
        if self.delay_s:
            time.sleep(self.delay_s)
        return _Reply(self.replies.pop(0) if len(self.replies) > 1 else self.replies[0])


def run_first_turn(
    tmp_path: Path, model: ScriptedModel, questions: list[str], max_steps: int, **options: Any
) -> tuple[LLMWorker, list[Any]]:
    """A task over four setosa flowers (`data/iris.json`) with these questions; the worker runs
    turn 1 for at most `max_steps` steps. Returns the worker and the steps it took."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "iris.json").write_text(json.dumps([{"species": "setosa"}] * 4))
    task = AgentTask(
        task_id="t",
        turns=[AgentTurn(turn_id=i + 1, question=q) for i, q in enumerate(questions)],
        base_path=str(tmp_path),
    )
    ws = DictWorkspace()
    assert ws.run_cell(prelude(task)).ok
    worker = LLMWorker(model, protocol=longds_protocol(str(tmp_path / "data")), **options)
    worker.start(task, ws)
    worker.inject(WorkerMessage.user_turn(task.turn(1)))
    steps = []
    for i in range(max_steps):
        step = worker.step(i)
        if step is None:
            break
        steps.append(step)
    return worker, steps
