"""A turn whose time runs out right after a successful cell still gets to answer (issue 30).

On a loaded 2-core machine the 1.5B model's code for iris turns 1-3 ran right in the StateGuard
arm, and each time the turn's share of the time cap ran out before the call that would have
answered from that output, so three right computations were scored as missing answers. The
worker now grants one last call, told to answer; a turn whose latest cell failed ends at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stateguard.workers.llm_worker import LAST_CALL, LLMWorker
from tests.stateguard.workers.scripted_model import ScriptedModel, run_first_turn


def SlowModel(*replies: str) -> ScriptedModel:
    """Replies in order, each after 0.05 s (so a tiny time cap is spent by one call)."""
    return ScriptedModel(*replies, delay_s=0.05)


def _run(tmp_path: Path, model: ScriptedModel) -> tuple[LLMWorker, list[Any]]:
    return run_first_turn(tmp_path, model, ["How many flowers?", "Species?"], 10, task_time_cap_s=0.02)


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
