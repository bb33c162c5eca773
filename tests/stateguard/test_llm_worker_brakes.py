"""The LLM worker facing a real small model (issue 34): prompt, reply parsing, loop brakes, caps.

A fake client plays the model's replies in order, so each test pins one behaviour seen with
Qwen2.5-Coder-1.5B: a `/` on the str BASE_PATH, an answer written next to code (with an output
it invented), an answer with no code behind it, the same failing code sent again and again,
fenced JSON answers, a prompt that outgrew the window, a task that never ends.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.longds.prompts import longds_protocol
from stateguard.answers import last_json, parse_answer
from stateguard.llm.client import ContextOverflow
from stateguard.task import AgentTask, AgentTurn, prelude
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workers.protocol import DEFAULT_SYSTEM, WorkerProtocol
from stateguard.workspace import DictWorkspace

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "eval" / "benchmarks" / "demo" / "six_turn"


class _Reply:
    def __init__(self, content: str):
        self.message = {"role": "assistant", "content": content}


class FakeModel:
    """Replies in order (the last one repeats); records every request's messages."""

    def __init__(self, replies: list[str], *, delay_s: float = 0.0, window_chars: int | None = None):
        self.replies, self.delay_s, self.window_chars = list(replies), delay_s, window_chars
        self.requests: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], **_: Any) -> _Reply:
        self.requests.append([dict(m) for m in messages])
        time.sleep(self.delay_s)
        size = sum(len(str(m.get("content") or "")) for m in messages)
        if self.window_chars is not None and size > self.window_chars:
            raise ContextOverflow(
                "prompt exceeds the model's context", status=400, body="context window of 100"
            )
        return _Reply(self.replies.pop(0) if len(self.replies) > 1 else self.replies[0])


def _task(*questions: str) -> AgentTask:
    turns = [AgentTurn(turn_id=i, question=q) for i, q in enumerate(questions, 1)]
    return AgentTask(task_id="t", turns=turns, base_path=str(DEMO))


def _run_turn(worker: LLMWorker, task: AgentTask, turn: int, start: int = 0, limit: int = 40) -> list[Any]:
    worker.inject(WorkerMessage.user_turn(task.turn(turn)))
    steps = []
    for i in range(start, start + limit):
        step = worker.step(i)
        if step is None:
            break
        steps.append(step)
    return steps


def _started(model: FakeModel, task: AgentTask, **kw: Any) -> tuple[LLMWorker, DictWorkspace]:
    ws = DictWorkspace()
    assert ws.run_cell(prelude(task)).ok
    worker = LLMWorker(model, **kw)
    worker.start(task, ws)
    return worker, ws


def test_prompt_says_base_path_is_text_and_its_example_loads_the_data() -> None:
    """Old prompt: 'data files are under BASE_PATH/data' -> the model wrote BASE_PATH / 'x' (TypeError)."""
    assert "BASE_PATH is a str" in DEFAULT_SYSTEM
    example = re.search(r'pd\.read_csv\(f"\{BASE_PATH\}/data/<file>\.csv"\)', DEFAULT_SYSTEM)
    assert example is not None
    ws = DictWorkspace()
    ws.run_cell(prelude(_task("q")))
    result = ws.run_cell("n = len(" + example.group(0).replace("<file>", "sales") + ")\nn")
    assert result.ok and result.value == "10"


@pytest.mark.parametrize("protocol", ["default", "longds"])
def test_code_wins_over_an_answer_in_the_same_reply(protocol: str) -> None:
    """Old: the invented answer was accepted and the code never ran."""
    if protocol == "default":
        first = '```python\nx = 40 + 2\nprint(x)\n```\nOutput: 99\n<answer>{"x": 99}</answer>'
        second = '<answer>{"x": 42}</answer>'
        chosen = WorkerProtocol()
    else:
        first = '<python>\nx = 40 + 2\nprint(x)\n</python>\n<information>99</information>\n<answer>{"x": 99}</answer>'
        second = '<answer>{"x": 42}</answer>'
        chosen = longds_protocol(str(DEMO / "data"))
    model = FakeModel([first, second])
    task = _task("What is x?")
    worker, ws = _started(model, task, protocol=chosen)
    steps = _run_turn(worker, task, 1)
    assert worker.final_answer() == {1: {"x": 42}}
    assert steps[0].action.strip().startswith("x = 40 + 2") and steps[0].meta.get("answer_dropped") is True
    kept = model.requests[1][-2]["content"]  # the first reply as the history keeps it
    assert "99" not in kept and "<answer>" not in kept
    assert "ignored" in model.requests[1][-1]["content"]


def test_an_answer_with_no_executed_code_is_not_accepted() -> None:
    """Old: a bare answer ended the turn as answered."""
    model = FakeModel(['<answer>{"n_orders": 12}</answer>'])
    task = _task("How many orders?")
    worker, _ = _started(model, task, max_refusals=3)
    steps = _run_turn(worker, task, 1)
    assert worker.final_answer() == {}  # unanswered
    assert len(steps) == 3 and all(s.meta["executed"] is False and s.meta["refused"] for s in steps)
    assert steps[-1].meta["turn_end"] is True
    assert "no code has run successfully" in model.requests[1][-1]["content"]


def test_an_answer_after_successful_code_is_accepted() -> None:
    model = FakeModel(["```python\nn = 10\nprint(n)\n```", '<answer>{"n_orders": 10}</answer>'])
    task = _task("How many orders?")
    worker, _ = _started(model, task)
    _run_turn(worker, task, 1)
    assert worker.final_answer() == {1: {"n_orders": 10}}


def test_identical_failing_code_is_refused_not_rerun() -> None:
    """Old: the same TypeError-raising code ran 26 times."""
    bad = "```python\nsales = pd.read_csv(BASE_PATH / 'data/sales.csv')\n```"
    model = FakeModel([bad])
    task = _task("Load the sales data.")
    worker, ws = _started(model, task, max_refusals=3)
    cells_before = ws.run_cell("1").cell_id
    steps = _run_turn(worker, task, 1)
    ran = [s for s in steps if s.action]
    assert len(ran) == 1 and "TypeError" in (ran[0].error or "")
    assert len(steps) == 4 and all(s.meta.get("refused") for s in steps[1:])
    assert ws.run_cell("1").cell_id == cells_before + 2  # one worker cell ran, not four
    refusal = model.requests[2][-1]["content"]
    assert "Not run" in refusal and "TypeError" in refusal
    assert worker.done() and worker.final_answer() == {}


def test_same_code_runs_again_after_a_success_in_between() -> None:
    """The brake is for a loop: once something succeeded the workspace changed, so a retry may work."""
    model = FakeModel(
        [
            "```python\ny = z + 1\n```",
            "```python\nz = 1\n```",
            "```python\ny = z + 1\nprint(y)\n```",
            '<answer>{"y": 2}</answer>',
        ]
    )
    task = _task("y?")
    worker, _ = _started(model, task)
    steps = _run_turn(worker, task, 1)
    assert [s.success for s in steps[:3]] == [False, True, True] and worker.final_answer() == {1: {"y": 2}}


def test_worker_task_time_cap_ends_the_remaining_turns() -> None:
    """Old: no cap on the worker; a looping turn burned 40 steps (25-37 minutes)."""
    model = FakeModel(["```python\nprint(1)\n```"], delay_s=0.05)
    task = _task("first", "second")
    worker, _ = _started(model, task, task_time_cap_s=0.12)
    steps = _run_turn(worker, task, 1)
    assert steps[-1].meta.get("worker_failure") == "time_cap" and steps[-1].meta["turn_end"]
    assert 2 <= len(model.requests) <= 4
    calls = len(model.requests)
    later = _run_turn(worker, task, 2, start=100)
    assert len(later) == 1 and later[0].meta["worker_failure"] == "time_cap"
    assert len(model.requests) == calls  # no model call once the cap is spent


def test_fenced_json_answer_is_parsed() -> None:
    """Old: last_json read only JSON that runs to the end of the text, so every answer was None."""
    fenced = 'Here it is:\n```json\n{"n_orders": 10, "revenue": 1060.0}\n```\nDone.'
    assert last_json(fenced) == {"n_orders": 10, "revenue": 1060.0}
    assert last_json('```json\n{"a": 1}\n```\n```json\n{"a": 2}\n```') == {"a": 2}
    assert last_json("no json here") is None
    assert parse_answer("{'n_orders': 10, 'above': True}") == {"n_orders": 10, "above": True}
    model = FakeModel(["```python\nprint(10)\n```", '<answer>\n```json\n{"n_orders": 10}\n```\n</answer>'])
    task = _task("How many orders?")
    worker, _ = _started(model, task)
    _run_turn(worker, task, 1)
    assert worker.final_answer() == {1: {"n_orders": 10}}


def test_context_overflow_compacts_earlier_turns_and_retries() -> None:
    """Old: once the prompt outgrew the window every later call was refused."""
    long_output = "print('x' * 3000)"
    replies = [f"```python\n{long_output}\n```", '<answer>{"a": 1}</answer>'] * 3
    model = FakeModel(replies, window_chars=5000)
    task = _task("one", "two", "three")
    worker, _ = _started(model, task)
    for turn, start in ((1, 0), (2, 10), (3, 20)):
        steps = _run_turn(worker, task, turn, start=start)
        assert not any("model call failed" in (s.error or "") for s in steps), steps
    assert worker.final_answer() == {1: {"a": 1}, 2: {"a": 1}, 3: {"a": 1}}
    assert worker.messages[1]["content"].endswith(
        "one"
    )  # the full history is kept; only what is sent shrinks


def test_code_identical_to_the_cell_that_just_succeeded_is_refused() -> None:
    """Old (issue 30): Qwen2.5-Coder-0.5B sent one successful block five times, until the task's
    time cap was spent, and every later turn ended unanswered."""
    block = "```python\nn = 10\n```"
    model = FakeModel([block, block, "```python\nprint(n)\n```", '<answer>{"n": 10}</answer>'])
    task = _task("How many?")
    worker, ws = _started(model, task)
    steps = _run_turn(worker, task, 1)
    assert [bool(s.action) for s in steps] == [True, False, True, False]
    assert steps[1].meta.get("refused") and "Not run" in model.requests[2][-1]["content"]
    assert "printed nothing" in model.requests[2][-1]["content"]
    assert worker.final_answer() == {1: {"n": 10}}


def test_a_successful_repeat_loop_ends_the_turn_and_leaves_time_for_the_next() -> None:
    model = FakeModel(["```python\nprint(1)\n```"])
    task = _task("First?", "Second?")
    worker, _ = _started(model, task, max_refusals=3)
    steps = _run_turn(worker, task, 1)
    assert len(steps) == 4 and sum(bool(s.action) for s in steps) == 1 and worker.done()
    assert "1" in model.requests[2][-1]["content"]  # the refusal shows the output it already had
    worker.inject(WorkerMessage.user_turn(task.turn(2)))
    assert worker.step(10) is not None and not worker.done()  # the next turn starts afresh


class _NewErrorEachCall(FakeModel):
    """A model that never gets it right and never repeats itself: each reply is new failing code,
    so no repeat brake stops it (the 1.5B model's column-name guesses on iris turn 2)."""

    def chat(self, messages: list[dict[str, Any]], **kw: Any) -> _Reply:
        super().chat(messages, **kw)
        return _Reply(f"```python\nprint(guess_{len(self.requests)})\n```")


def test_a_stuck_turn_ends_at_its_share_of_the_cap_and_later_turns_still_run() -> None:
    """Old: a turn could spend the task's whole cap, and every later turn ended with no model call."""
    model = _NewErrorEachCall(["unused"], delay_s=0.05)
    task = _task("first", "second", "third")
    worker, _ = _started(model, task, task_time_cap_s=0.9, turn_share=1.0)
    first = _run_turn(worker, task, 1)
    assert first[-1].meta.get("worker_failure") == "turn_share" and first[-1].meta["turn_end"]
    assert worker.model_s < 0.6  # about a third of the cap, not all of it
    calls = len(model.requests)
    second = _run_turn(worker, task, 2, start=100)
    assert len(model.requests) > calls  # the next turn still reached the model
    assert second[-1].meta.get("worker_failure") == "turn_share"


def test_turn_share_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="turn_share"):
        LLMWorker(FakeModel(["x"]), task_time_cap_s=10, turn_share=0.5)


def test_a_labelled_text_answer_is_scored_by_its_values() -> None:
    """Old: 'Number of flowers: 150' lines were kept as text; the field judge found no JSON and
    scored the 1.5B model's right iris turn-1 answer wrong."""
    from eval.scorers.fields import judge_fields

    answer = (
        "<reasoning>\nThe output shows it.\n</reasoning>\n<answer>\nNumber of flowers: 150\n"
        "Species: ['setosa', 'versicolor', 'virginica']\nLength: 3, dtype: str\n</answer>"
    )
    model = FakeModel(["```python\nprint(150)\n```", answer])
    task = _task("Load the flowers. How many are there, and which species appear?")
    worker, _ = _started(model, task)
    _run_turn(worker, task, 1)
    got = worker.final_answer()[1]
    assert got["Number of flowers"] == 150 and got["Species"] == ["setosa", "versicolor", "virginica"]
    expected = {"answer_type": "overview", "n_flowers": 150, "species": ["setosa", "versicolor", "virginica"]}
    assert judge_fields(expected, got)
    assert not judge_fields({**expected, "n_flowers": 151}, got)


def test_a_repeated_key_error_is_refused_with_a_hint_to_print_the_names() -> None:
    """Old: the refusal only repeated 'KeyError: ...'; the 1.5B model resent `petal_length` code
    on iris turn after turn and never printed the columns it had."""
    bad = "```python\ndf = pd.DataFrame({'petalLength': [1.0]})\nprint(df['petal_length'].sum())\n```"
    model = FakeModel([bad])
    task = _task("Total petal length?")
    worker, _ = _started(model, task, max_refusals=1)
    steps = _run_turn(worker, task, 1)
    assert steps[-1].meta.get("refused")
    refusal = worker.messages[-1]["content"]
    assert "KeyError" in refusal and ".columns" in refusal
    other = FakeModel(["```python\nprint(1 / 0)\n```"])
    worker, _ = _started(other, task, max_refusals=1)
    assert _run_turn(worker, task, 1)[-1].meta.get("refused")
    assert "ZeroDivisionError" in worker.messages[-1]["content"]
    assert ".columns" not in worker.messages[-1]["content"]  # only a KeyError gets the hint


def test_an_answer_copied_from_the_instructions_is_refused() -> None:
    """Old: the 1.5B model's driving answer 'The answer, in the form the question requires, and
    nothing else.' (the system prompt's placeholder) was accepted as its answer."""
    protocol = longds_protocol("/data")
    placeholder = "<answer>\nThe answer, in the form the question requires, and nothing else.\n</answer>"
    model = FakeModel(["<python>\nprint(3)\n</python>", placeholder, "<answer>\nCount: 3\n</answer>"])
    task = _task("How many?")
    worker, _ = _started(model, task, protocol=protocol)
    steps = _run_turn(worker, task, 1)
    assert steps[1].meta.get("refused") and "placeholder" in model.requests[2][-1]["content"]
    assert worker.final_answer() == {1: {"Count": 3}}
