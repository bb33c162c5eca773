"""Finding LongDS tasks in the published layout, their data folders, and the DSGym-style turn prompts."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from eval.benchmarks.longds import (
    STEPS_PER_TURN,
    LongDSDataMissing,
    build_turn_prompts,
    discover_tasks,
    load_longds_task,
    parse_reply,
    require_data,
    task_ref,
)
from eval.benchmarks.longds.prompts import information_message, system_prompt
from stateguard.flows import LONGDS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "longds"
SHARED = Path(__file__).resolve().parents[4] / "shared" / "benchmarks" / "longds" / "samples"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A dataset root with the two fixture tasks, a third in another domain, and data for task2 only."""
    shutil.copytree(FIXTURES / "task", tmp_path / "task")
    sports = tmp_path / "task" / "longds" / "sports" / "nba" / "task10"
    sports.mkdir(parents=True)
    shutil.copy(FIXTURES / "task" / "longds" / "education" / "bi" / "task1" / "task.json", sports)
    (tmp_path / "task" / "longds" / "sports" / "nba" / "notes").mkdir()  # not a task folder
    data = tmp_path / "data" / "longds" / "education" / "bi" / "task2" / "data"
    data.mkdir(parents=True)
    (data / "bi.csv").write_text("a,b\n1,2\n")
    return tmp_path


def test_discover_orders_by_domain_dataset_and_number(root: Path) -> None:
    refs = discover_tasks(root)
    assert [r.task_id for r in refs] == ["education/bi/task1", "education/bi/task2", "sports/nba/task10"]
    assert [r.task_id for r in discover_tasks(root, domains=("sports",))] == ["sports/nba/task10"]


def test_paths_follow_the_published_layout(root: Path) -> None:
    ref = task_ref(root, "education/bi/task2")
    assert ref.task_dir == root / "task" / "longds" / "education" / "bi" / "task2"
    assert ref.data_dir == root / "data" / "longds" / "education" / "bi" / "task2" / "data"
    task = load_longds_task(ref, need_data=True)
    assert task.task_id == "education/bi/task2"
    assert task.base_path == str(ref.base_path)
    assert [t.turn_id for t in task.turns] == list(range(1, 31))
    assert task.turn(3).answer == {"answer_type": "imputation_report", "mean_used_for_imputation": 75.8533,
                                   "rows_imputed": 2, "baseline_sample_size": 77}  # fmt: skip
    assert require_data(ref) == ref.data_dir


def test_missing_data_names_the_path_and_the_fix(root: Path) -> None:
    ref = task_ref(root, "education/bi/task1")
    assert len(load_longds_task(ref).turns) == 4  # parsing needs no data
    with pytest.raises(LongDSDataMissing, match=r"data/longds/education/bi/task1/data: data folder .* missing.*make data BENCH=longds"):
        load_longds_task(ref, need_data=True)
    ref.data_dir.mkdir(parents=True)
    with pytest.raises(LongDSDataMissing, match="is empty"):
        require_data(ref)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: discover_tasks(r / "nowhere"), r"nowhere/task/longds: no LongDS task folder.*make data BENCH=longds"),
        (lambda r: discover_tasks(r, domains=("geoscience",)), r"no task\*/task.json found in domains \['geoscience'\]"),
        (lambda r: load_longds_task(task_ref(r, "education/bi/task9")), r"task9/task.json: LongDS task education/bi/task9 not found"),
        (lambda r: task_ref(r, "education/task1"), "expected '<domain>/<dataset>/task<N>'"),
    ],
)
def test_errors_name_what_is_missing(root: Path, call: Callable[[Path], object], message: str) -> None:
    with pytest.raises((LongDSDataMissing, ValueError), match=message):
        call(root)


def test_turn_prompts_open_one_conversation(root: Path) -> None:
    task = load_longds_task(task_ref(root, "education/bi/task2"))
    prompts = build_turn_prompts(task, data_dir="/data/longds/education/bi/task2/data")
    assert len(prompts) == 30 and STEPS_PER_TURN == LONGDS.baseline_budget == LONGDS.stateguard_budget == 40
    first, second = prompts[0], prompts[1]
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert "/data/longds/education/bi/task2/data" in first.messages[0]["content"]
    assert "at most 40 steps per question" in first.messages[0]["content"]
    assert [m["role"] for m in second.messages] == ["user"]  # system prompt on the first turn only
    assert first.messages[1]["content"] == task.turns[0].context + "\nQuestion: " + task.turns[0].question
    assert prompts[3].messages[0]["content"] == "\nQuestion: " + task.turns[3].question  # blank context kept
    assert {p.task_id for p in prompts} == {"education/bi/task2"}  # one workspace key per task
    assert {p.max_steps for p in prompts} == {40}


@pytest.mark.parametrize(
    ("text", "code", "answer"),
    [
        ("<reasoning>look</reasoning>\n<python>\nprint(1)\n</python>", "print(1)", None),
        ("<reasoning>done</reasoning><answer> 77 rows </answer>", None, "77 rows"),
        ("<python>x = 1</python><answer>1</answer>", None, "1"),  # an answer ends the turn
        ("<python>a()</python><python>b()</python>", "a()", None),
        ("I think it is 3", None, None),  # neither: a format error for the runner
    ],
)
def test_parse_reply(text: str, code: str | None, answer: str | None) -> None:
    reply = parse_reply(text)
    assert (reply.code, reply.answer) == (code, answer)


def test_information_and_system_text() -> None:
    assert information_message("3 rows") == "\n<information>3 rows</information>\n"
    assert "<answer>" in system_prompt("/d", 7) and "at most 7 steps" in system_prompt("/d", 7)


def test_staged_samples_load_in_full() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"staged LongDS samples not present at {SHARED} (fixtures tested above)")
    refs = discover_tasks(SHARED)
    assert [r.task_id for r in refs] == ["education/bi/task1", "education/bi/task2"]
    assert [len(load_longds_task(r).turns) for r in refs] == [27, 30]
    with pytest.raises(LongDSDataMissing, match="make data BENCH=longds"):
        require_data(refs[0])
