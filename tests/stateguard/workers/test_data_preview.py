"""The LLM worker sees the data before it guesses (issue 30).

Qwen2.5-Coder-1.5B, run as the worker on iris, indexed `petal_length` where the records have
`petalLength`, turn after turn. The worker now opens a task with a preview of its data files
and every later turn with the session's data frames; these tests pin what the model is shown,
that the preview fits a small served window, and that it changes nothing in the workspace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.longds.prompts import longds_protocol
from stateguard.task import AgentTask, AgentTurn, prelude
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.data_preview import FILES_HEADER, FRAMES_HEADER, files_probe, preview_text
from stateguard.workers.llm_worker import LLMWorker
from stateguard.workspace import DictWorkspace, ProbeResult
from tests.stateguard.workers.scripted_model import ScriptedModel as Model

RECORDS = [
    {"sepalLength": 5.1, "petalLength": 1.4, "species": "setosa"},
    {"sepalLength": 7.0, "petalLength": 4.7, "species": "versicolor"},
    {"sepalLength": 6.3, "petalLength": 6.0, "species": "virginica"},
    {"sepalLength": 4.9, "petalLength": 1.5, "species": "setosa"},
]


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "iris.json").write_text(json.dumps(RECORDS))
    (tmp_path / "data" / "colours.csv").write_text("species,colour\nsetosa,blue\nvirginica,purple\n")
    return tmp_path


def _started(tmp_path: Path, model: Model, **kw: Any) -> tuple[LLMWorker, DictWorkspace, AgentTask]:
    task = AgentTask(
        task_id="t",
        turns=[
            AgentTurn(turn_id=1, question="How many flowers are there?"),
            AgentTurn(turn_id=2, question="Mean petal length per species?"),
        ],
        base_path=str(_folder(tmp_path)),
    )
    ws = DictWorkspace()
    assert ws.run_cell(prelude(task)).ok
    worker = LLMWorker(model, protocol=longds_protocol(f"{task.base_path}/data"), **kw)
    worker.start(task, ws)
    return worker, ws, task


def _turn(worker: LLMWorker, task: AgentTask, turn: int) -> None:
    worker.inject(WorkerMessage.user_turn(task.turn(turn)))
    for i in range(10):
        if worker.step(i) is None:
            break


LOAD = '<python>\nflowers = pd.DataFrame(json.load(open(f"{BASE_PATH}/data/iris.json")))\nprint(len(flowers))\n</python>'


def test_first_turn_shows_each_data_file_with_its_real_column_names(tmp_path: Path) -> None:
    model = Model(LOAD, "<answer>4</answer>")
    worker, _, task = _started(tmp_path, model)
    _turn(worker, task, 1)
    opening = model.requests[0][1]["content"]
    assert opening.startswith(FILES_HEADER)
    assert (
        "iris.json (JSON: a list of 4 records (dicts), fields): sepalLength (float64), petalLength (float64)"
        in opening
    )
    assert "colours.csv (2 rows x 2 columns)" in opening
    assert "versicolor" in opening  # the first rows are shown too
    assert opening.rstrip().endswith("Question: How many flowers are there?")  # the question comes last


def test_later_turns_show_the_sessions_frames_not_the_files_again(tmp_path: Path) -> None:
    model = Model(
        LOAD,
        "<answer>4</answer>",
        "<python>\nprint(flowers.petalLength.mean())\n</python>",
        "<answer>3.4</answer>",
    )
    worker, _, task = _started(tmp_path, model)
    _turn(worker, task, 1)
    _turn(worker, task, 2)
    second = next(m["content"] for m in model.requests[-1] if "Mean petal length" in str(m["content"]))
    assert second.startswith(FRAMES_HEADER)
    assert "flowers: DataFrame 4x3, columns sepalLength, petalLength, species" in second
    assert FILES_HEADER not in second


def test_preview_changes_nothing_in_the_workspace(tmp_path: Path) -> None:
    worker, ws, task = _started(tmp_path, Model(LOAD, "<answer>4</answer>"))
    before = {v.name: v.content_hash for v in ws.list_variables()}
    worker.inject(WorkerMessage.user_turn(task.turn(1)))
    assert {v.name: v.content_hash for v in ws.list_variables()} == before


def test_preview_off_and_failed_probe_leave_the_turn_as_it_was(tmp_path: Path) -> None:
    model = Model(LOAD, "<answer>4</answer>")
    worker, _, task = _started(tmp_path, model, preview_chars=0)
    _turn(worker, task, 1)
    assert model.requests[0][1]["content"].startswith("\nQuestion:")
    assert preview_text(ProbeResult(ok=False, error="NameError: BASE_PATH"), FILES_HEADER, 100) == ""


@pytest.mark.parametrize("budget", [600, 1600])
def test_preview_stays_within_its_budget_on_many_wide_files(tmp_path: Path, budget: int) -> None:
    """A folder of wide tables must not blow up the prompt (the served window is 8,192 tokens)."""
    (tmp_path / "data").mkdir()
    header = ",".join(f"a_rather_long_column_name_{i}" for i in range(60))
    for k in range(8):
        rows = "\n".join(",".join(str(i * j) for i in range(60)) for j in range(5))
        (tmp_path / "data" / f"table{k}.csv").write_text(f"{header}\n{rows}\n")
    ws = DictWorkspace({"BASE_PATH": str(tmp_path)})
    text = preview_text(ws.run_probe(files_probe(budget)), FILES_HEADER, budget + 400)
    assert f"{tmp_path}/data/table0.csv (5 rows x 60 columns)" in text
    assert "table7.csv" in text  # described or at least named
    assert len(text) <= budget + 400
    assert len(text) / 3 < 1000  # tokens at the client's conservative 3 characters per token
