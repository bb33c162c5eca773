"""A turn whose time runs out right after a successful cell still gets to answer (issue 30).

On a loaded 2-core machine the 1.5B model's code for iris turns 1-3 ran right in the StateGuard
arm, and each time the turn's share of the time cap ran out before the call that would have
answered from that output, so three right computations were scored as missing answers. The
worker now grants one last call, told to answer; a turn whose latest cell failed ends at once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from eval.benchmarks.longds.prompts import longds_protocol
from stateguard.task import AgentTask, AgentTurn, prelude
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.llm_worker import LAST_CALL, LLMWorker
from stateguard.workspace import DictWorkspace


class _Reply:
    def __init__(self, content: str):
        self.message = {"role": "assistant", "content": content}


class SlowModel:
    """Replies in order, each after `delay_s` (so a tiny time cap is spent by one call)."""

    def __init__(self, *replies: str, delay_s: float = 0.05):
        self.replies, self.delay_s = list(replies), delay_s
        self.requests: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], **_: Any) -> _Reply:
        self.requests.append([dict(m) for m in messages])
        time.sleep(self.delay_s)
        return _Reply(self.replies.pop(0) if len(self.replies) > 1 else self.replies[0])


def _run(tmp_path: Path, model: SlowModel) -> tuple[LLMWorker, list[Any]]:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "iris.json").write_text(json.dumps([{"species": "setosa"}] * 4))
    task = AgentTask(
        task_id="t",
        turns=[AgentTurn(turn_id=1, question="How many flowers?"), AgentTurn(turn_id=2, question="Species?")],
        base_path=str(tmp_path),
    )
    ws = DictWorkspace()
    assert ws.run_cell(prelude(task)).ok
    worker = LLMWorker(model, protocol=longds_protocol(str(tmp_path / "data")), task_time_cap_s=0.02)
    worker.start(task, ws)
    worker.inject(WorkerMessage.user_turn(task.turn(1)))
    steps = []
    for i in range(10):
        step = worker.step(i)
        if step is None:
            break
        steps.append(step)
    return worker, steps


CODE = '<python>\nflowers = json.load(open(f"{BASE_PATH}/data/iris.json"))\nprint(len(flowers))\n</python>'


def test_time_spent_after_a_successful_cell_leaves_one_call_to_answer(tmp_path: Path) -> None:
    model = SlowModel(CODE, '<answer>{"n_flowers": 4}</answer>')
    worker, steps = _run(tmp_path, model)
    assert worker.answers == {1: {"n_flowers": 4}}  # the old worker ended the turn unanswered
    assert len(model.requests) == 2
    assert model.requests[1][-1]["content"].endswith(LAST_CALL)  # told to answer now
    assert steps[-1].meta.get("final") is True


def test_code_in_the_last_call_runs_and_the_turn_then_ends(tmp_path: Path) -> None:
    model = SlowModel(CODE, "<python>\nprint(flowers[0])\n</python>", '<answer>{"n_flowers": 4}</answer>')
    worker, steps = _run(tmp_path, model)
    assert len(model.requests) == 2  # no third call
    assert worker.answers == {}
    assert steps[-1].success and steps[-1].meta["turn_end"] is True
    assert steps[-1].meta["worker_failure"] == "time_cap"  # the degradation stays visible


def test_time_spent_after_a_failed_cell_ends_the_turn_at_once(tmp_path: Path) -> None:
    model = SlowModel("<python>\nprint(undefined_name)\n</python>", '<answer>{"n_flowers": 4}</answer>')
    worker, steps = _run(tmp_path, model)
    assert len(model.requests) == 1
    assert worker.answers == {}
    assert steps[-1].meta["worker_failure"] == "time_cap"
