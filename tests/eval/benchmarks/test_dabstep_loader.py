"""Reading DABstep task files and checking the context folder; errors name the file and the fix.

Format tests write invented rows in the published layout into a temporary folder. The published
dev and full task files are read in place from ../shared/benchmarks (tests/support/published.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from eval.benchmarks.dabstep import (
    CONTEXT_FILES,
    DabstepDataMissing,
    check_context,
    load_split,
    load_tasks,
    resolve_root,
)
from eval.benchmarks.dabstep import loader as dabstep_loader
from tests.support.published import digest, published

ROW = {
    "task_id": "5",
    "question": "Which card scheme is used most?",
    "level": "easy",
    "answer": "SchemeA",
    "guidelines": "Give the scheme name only.",
}
# The first published dev task's question and guidelines, pinned by digest (not copied).
DEV_FIRST_QUESTION = "d6a47c3b7f73d312ab4c3067f5cae95f18d62d9aa264e678be9a806edbf400f5"
DEV_FIRST_GUIDELINES = "803387a38360265c9340b79b2a093baaf9a57ce2c7219d6debcd80507e83955a"


def write_lines(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.published_data
def test_published_dev_fields_and_levels() -> None:
    tasks = load_split(published("dabstep"), "dev")
    assert len(tasks) == 10
    assert [t.level for t in tasks].count("easy") == 3
    first = tasks[0]
    assert (first.task_id, first.level, first.answer) == ("5", "easy", "NL")
    assert digest(first.question) == DEV_FIRST_QUESTION
    assert digest(first.guidelines) == DEV_FIRST_GUIDELINES
    assert all(t.has_answer for t in tasks)


def test_invented_rows_in_the_published_layout(tmp_path: Path) -> None:
    second = {**ROW, "task_id": "17", "level": "hard", "answer": "0.25", "guidelines": ""}
    write_lines(tmp_path / "tasks" / "dev.jsonl", json.dumps(ROW), json.dumps(second))
    tasks = load_split(tmp_path, "dev")
    assert [(t.task_id, t.level, t.answer, t.has_answer) for t in tasks] == [
        ("5", "easy", "SchemeA", True),
        ("17", "hard", "0.25", True),
    ]
    assert tasks[0].question == ROW["question"] and tasks[0].guidelines == ROW["guidelines"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"bad\.jsonl:2: not valid JSON"),
        ("[1, 2]", r"bad\.jsonl:2: expected a JSON object, got list"),
        (json.dumps({**ROW, "task_id": "6", "level": "medium"}), r"bad\.jsonl:2: field 'level'"),
        (
            json.dumps({k: v for k, v in ROW.items() if k != "question"} | {"task_id": "7"}),
            "field 'question'",
        ),
        (json.dumps({**ROW, "extra": 1, "task_id": "8"}), "field 'extra'"),
        (json.dumps(ROW), r"bad\.jsonl:2: task_id 5 already on line 1"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, line: str, message: str) -> None:
    path = write_lines(tmp_path / "bad.jsonl", json.dumps(ROW), line)
    with pytest.raises(ValueError, match=message):
        load_tasks(path)


def test_integer_task_ids_and_blank_lines_are_accepted(tmp_path: Path) -> None:
    write_lines(tmp_path / "tasks" / "all.jsonl", json.dumps({**ROW, "task_id": 5, "answer": ""}), "")
    (task,) = load_split(tmp_path, "all")
    assert task.task_id == "5" and not task.has_answer


def test_hub_layout_with_an_inner_data_folder(tmp_path: Path) -> None:
    write_lines(tmp_path / "dabstep" / "data" / "tasks" / "dev.jsonl", json.dumps(ROW))
    assert resolve_root(tmp_path / "dabstep") == tmp_path / "dabstep" / "data"
    assert [t.task_id for t in load_split(tmp_path / "dabstep", "dev")] == ["5"]
    flat = tmp_path / "flat"
    write_lines(flat / "tasks" / "dev.jsonl", json.dumps(ROW))
    assert resolve_root(flat) == flat  # the flat layout (tasks/ at the root) is used as given


def test_missing_split_names_both_file_names_and_the_fetch_command(tmp_path: Path) -> None:
    with pytest.raises(
        DabstepDataMissing, match=r"no dev\.jsonl or dev\.dsgym_snapshot\.jsonl.*make data BENCH=dabstep"
    ):
        load_split(tmp_path, "dev")
    with pytest.raises(ValueError, match="unknown DABstep split 'test'"):
        load_split(tmp_path, "test")  # type: ignore[arg-type]


def make_context(folder: Path, skip: str | None = None) -> Path:
    folder.mkdir(parents=True)
    for name in CONTEXT_FILES:
        if name != skip:
            (folder / name).write_text("x\n")
    return folder


def test_complete_context_lists_every_file(tmp_path: Path) -> None:
    context = check_context(make_context(tmp_path / "context"))
    assert sorted(context.files) == sorted(CONTEXT_FILES)
    assert context.files["fees.json"] == tmp_path / "context" / "fees.json"


@pytest.mark.parametrize("missing", ["payments.csv", "manual.md"])
def test_missing_context_file_is_named_with_the_fix(tmp_path: Path, missing: str) -> None:
    folder = make_context(tmp_path / "context", skip=missing)
    with pytest.raises(
        DabstepDataMissing, match=f"missing DABstep context file '{missing}'.*make data BENCH=dabstep"
    ):
        check_context(folder)


def test_missing_context_folder(tmp_path: Path) -> None:
    with pytest.raises(DabstepDataMissing, match="no DABstep context folder.*make data BENCH=dabstep"):
        check_context(tmp_path / "nowhere")


def test_verify_rejects_a_payments_table_that_is_not_the_published_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_context(tmp_path / "context")
    with pytest.raises(ValueError, match="not the published payments table"):
        check_context(folder, verify=True)
    payload = (folder / "payments.csv").read_bytes()
    monkeypatch.setattr(dabstep_loader, "PAYMENTS_BYTES", len(payload))
    monkeypatch.setattr(dabstep_loader, "PAYMENTS_SHA256", hashlib.sha256(payload).hexdigest())
    assert check_context(folder, verify=True).files["payments.csv"].name == "payments.csv"


@pytest.mark.published_data
def test_published_copy_has_450_tasks_and_lacks_payments() -> None:
    shared = published("dabstep")
    tasks = load_split(shared, "all")
    assert len(tasks) == 450
    assert (sum(t.level == "easy" for t in tasks), sum(t.level == "hard" for t in tasks)) == (72, 378)
    assert not any(t.has_answer for t in tasks)
    if not (shared / "context" / "payments.csv").exists():
        with pytest.raises(DabstepDataMissing, match="payments.csv"):
            check_context(shared / "context")
