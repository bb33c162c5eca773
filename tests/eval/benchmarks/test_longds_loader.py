"""Finding LongDS tasks in the published layout, their data folders, and the DSGym-style turn prompts.

Format tests use the invented tasks in tests/eval/fixtures/longds_layout (same layout and fields,
our own bakery data). The published sample tasks are read in place from ../shared/benchmarks
(tests/support/published.py) and checked in full at the end.
"""

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
from tests.support.published import digest, published

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "longds_layout"
BAKERY = FIXTURES / "task" / "longds" / "retail" / "bakery"
SAMPLES = "longds/samples"
# Turn 3 of the published education/bi/task2: its answer record, pinned by digest (not copied).
SAMPLE_TASK2_TURN3_ANSWER = "56757824186a8982afa0da722e311bd3c70b0b3415fdb93b8f6dd3b286c1bb8b"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A dataset root with the two fixture tasks, a third in another domain, and data for task2 only."""
    shutil.copytree(FIXTURES / "task", tmp_path / "task")
    sports = tmp_path / "task" / "longds" / "sports" / "nba" / "task10"
    sports.mkdir(parents=True)
    shutil.copy(BAKERY / "task1" / "task.json", sports)
    (tmp_path / "task" / "longds" / "sports" / "nba" / "notes").mkdir()  # not a task folder
    data = tmp_path / "data" / "longds" / "retail" / "bakery" / "task2" / "data"
    data.mkdir(parents=True)
    (data / "bakery_sales.csv").write_text("a,b\n1,2\n")
    return tmp_path


def test_discover_orders_by_domain_dataset_and_number(root: Path) -> None:
    refs = discover_tasks(root)
    assert [r.task_id for r in refs] == ["retail/bakery/task1", "retail/bakery/task2", "sports/nba/task10"]
    assert [r.task_id for r in discover_tasks(root, domains=("sports",))] == ["sports/nba/task10"]


def test_paths_follow_the_published_layout(root: Path) -> None:
    ref = task_ref(root, "retail/bakery/task2")
    assert ref.task_dir == root / "task" / "longds" / "retail" / "bakery" / "task2"
    assert ref.data_dir == root / "data" / "longds" / "retail" / "bakery" / "task2" / "data"
    task = load_longds_task(ref, need_data=True)
    assert task.task_id == "retail/bakery/task2"
    assert task.base_path == str(ref.base_path)
    assert [t.turn_id for t in task.turns] == list(range(1, 7))
    assert task.turn(3).answer == {"answer_type": "share", "croissant_pct": 17.25, "items_total": 430}
    assert require_data(ref) == ref.data_dir


def test_missing_data_names_the_path_and_the_fix(root: Path) -> None:
    ref = task_ref(root, "retail/bakery/task1")
    assert [t.turn_id for t in load_longds_task(ref).turns] == [1, 2, 3, 7]  # parsing needs no data
    with pytest.raises(
        LongDSDataMissing,
        match=r"data/longds/retail/bakery/task1/data: data folder .* missing.*make data BENCH=longds",
    ):
        load_longds_task(ref, need_data=True)
    ref.data_dir.mkdir(parents=True)
    with pytest.raises(LongDSDataMissing, match="is empty"):
        require_data(ref)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda r: discover_tasks(r / "nowhere"),
            r"nowhere/task/longds: no LongDS task folder.*make data BENCH=longds",
        ),
        (
            lambda r: discover_tasks(r, domains=("geoscience",)),
            r"no task\*/task.json found in domains \['geoscience'\]",
        ),
        (
            lambda r: load_longds_task(task_ref(r, "retail/bakery/task9")),
            r"task9/task.json: LongDS task retail/bakery/task9 not found",
        ),
        (lambda r: task_ref(r, "retail/task1"), "expected '<domain>/<dataset>/task<N>'"),
    ],
)
def test_errors_name_what_is_missing(root: Path, call: Callable[[Path], object], message: str) -> None:
    with pytest.raises((LongDSDataMissing, ValueError), match=message):
        call(root)


def _check_turn_prompts(task_id: str, turns: int, prompts: list, data_dir: str, blank: int) -> None:
    """One conversation: system prompt on the first turn only, `context\nQuestion: q` per turn."""
    task_turns = [p.turn_id for p in prompts]
    assert len(prompts) == turns and task_turns == sorted(task_turns)
    assert STEPS_PER_TURN == LONGDS.baseline_budget == LONGDS.stateguard_budget == 40
    first, second = prompts[0], prompts[1]
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert data_dir in first.messages[0]["content"]
    assert "at most 40 steps per question" in first.messages[0]["content"]
    assert [m["role"] for m in second.messages] == ["user"]  # system prompt on the first turn only
    assert {p.task_id for p in prompts} == {task_id}  # one workspace key per task
    assert {p.max_steps for p in prompts} == {40}
    assert prompts[blank].messages[0]["content"].startswith("\nQuestion: ")  # blank context kept


def test_turn_prompts_open_one_conversation(root: Path) -> None:
    task = load_longds_task(task_ref(root, "retail/bakery/task2"))
    prompts = build_turn_prompts(task, data_dir="/data/longds/retail/bakery/task2/data")
    _check_turn_prompts("retail/bakery/task2", 6, prompts, "/data/longds/retail/bakery/task2/data", blank=3)
    assert (
        prompts[0].messages[1]["content"] == task.turns[0].context + "\nQuestion: " + task.turns[0].question
    )
    assert prompts[3].messages[0]["content"] == "\nQuestion: " + task.turns[3].question


@pytest.mark.parametrize(
    ("text", "code", "answer"),
    [
        ("<reasoning>look</reasoning>\n<python>\nprint(1)\n</python>", "print(1)", None),
        ("<reasoning>done</reasoning><answer> 77 rows </answer>", None, "77 rows"),
        # both: the worker runs the code and drops the answer (issue 34)
        ("<python>x = 1</python><information>1</information><answer>1</answer>", "x = 1", "1"),
        ("<python>a()</python><python>b()</python>", "a()", None),
        ("I think it is 3", None, None),  # neither: a format error for the runner
        # what real small models write (issue 30): <python> closed by a fence, then an answer
        (
            "<reasoning>r</reasoning>\n<python>\nimport duckdb\nx = 1\n```\n\n<answer>3</answer>",
            "import duckdb\nx = 1",
            "3",
        ),
        ("Run this:\n```python\nprint(2)\n```\n", "print(2)", None),  # a fenced block and no tag
        ("<python>\n```python\nprint(3)\n```\n</python>", "print(3)", None),  # a fence inside the tags
        ("<python>\nprint(4)", "print(4)", None),  # cut off at the token cap
        ("```sql\nselect 1\n```", None, None),  # SQL is not Python: still a format error
    ],
)
def test_parse_reply(text: str, code: str | None, answer: str | None) -> None:
    reply = parse_reply(text)
    assert (reply.code, reply.answer) == (code, answer)


def test_information_and_system_text() -> None:
    assert information_message("3 rows") == "\n<information>3 rows</information>\n"
    assert "<answer>" in system_prompt("/d", 7) and "at most 7 steps" in system_prompt("/d", 7)


@pytest.mark.published_data
def test_published_samples_load_in_full() -> None:
    root = published(SAMPLES)  # also checks both task files against their pinned versions
    refs = discover_tasks(root)
    assert [r.task_id for r in refs] == ["education/bi/task1", "education/bi/task2"]
    assert [len(load_longds_task(r).turns) for r in refs] == [27, 30]
    task2 = load_longds_task(refs[1])
    assert [t.turn_id for t in task2.turns] == list(range(1, 31))
    assert digest(task2.turn(3).answer) == SAMPLE_TASK2_TURN3_ANSWER
    assert task2.base_path == str(refs[1].base_path)
    with pytest.raises(LongDSDataMissing, match="make data BENCH=longds"):
        require_data(refs[0])
    with pytest.raises(LongDSDataMissing, match=r"education/bi/task2/data: data folder .* missing"):
        load_longds_task(refs[1], need_data=True)


@pytest.mark.published_data
def test_published_sample_turn_prompts() -> None:
    ref = task_ref(published(SAMPLES), "education/bi/task2")
    task = load_longds_task(ref)
    prompts = build_turn_prompts(task, data_dir="/data/longds/education/bi/task2/data")
    _check_turn_prompts("education/bi/task2", 30, prompts, "/data/longds/education/bi/task2/data", blank=3)
    assert (
        prompts[0].messages[1]["content"] == task.turns[0].context + "\nQuestion: " + task.turns[0].question
    )
    assert task.turns[3].context == ""
    assert prompts[3].messages[0]["content"] == "\nQuestion: " + task.turns[3].question
