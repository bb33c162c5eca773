"""Typed records that every raw-task reader returns, and the small file helpers they share.

A `RawTask` is one task from a public benchmark, in a source-neutral shape that later synthesis
stages consume: what the user asks (`questions`, in order), the background shown with it
(`context`), the files it works on (`data_files`, paths relative to `root`) and, where the
published release carries them, the gold answers. Anything source-specific stays in `metadata`.

Readers never need the benchmark's data to be complete: the index files alone give a valid
`RawTask` whose question texts or files are missing; `DataFile.present` and `RawQuestion.text`
say what was actually found on disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SourceName = Literal["dsbench_analysis", "dsbench_modeling", "bird_interact", "ida_bench"]

FileRole = Literal[
    "table",  # a data table the agent analyses (CSV, parquet, ...)
    "workbook",  # a spreadsheet given to the agent
    "image",  # a figure that is part of the question
    "document",  # other agent-visible material (text, pdf, ...)
    "train",  # modelling: training split
    "test",  # modelling: test split without labels
    "sample_submission",  # modelling: the submission format
    "schema",  # database schema description
    "column_meanings",  # per-column descriptions of a database
    "knowledge",  # external knowledge base entries
    "ground_truth",  # hidden: gold labels or gold answer files
    "metric",  # hidden: the scoring script or its baseline
    "other",
]

AnswerKind = Literal["value", "sql", "submission_file"]

# Roles whose files must never be shown to an agent solving the task.
HIDDEN_ROLES: frozenset[str] = frozenset({"ground_truth", "metric"})


class SourceFormatError(ValueError):
    """A benchmark file does not have the published layout; the message names file and place."""


class DataFile(BaseModel):
    """One file a task refers to, relative to `RawTask.root`."""

    model_config = ConfigDict(frozen=True)

    path: str = Field(description="Path relative to the task's root, '/'-separated.")
    role: FileRole
    present: bool = Field(description="Whether the file existed when the task was read.")

    @property
    def hidden(self) -> bool:
        """True for gold answers and scoring material."""
        return self.role in HIDDEN_ROLES


class RawQuestion(BaseModel):
    """One question (turn) of a task, with its gold answer when the release has one."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    text: str | None = Field(default=None, description="None when only the index was available.")
    answer: Any = Field(default=None, description="Gold answer as published (value, SQL list, or file path).")
    answer_kind: AnswerKind | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def has_answer(self) -> bool:
        return self.answer is not None


class RawTask(BaseModel):
    """A task from one of the paper's raw sources (DSBench, BIRD-INTERACT, IDA-Bench)."""

    model_config = ConfigDict(frozen=True)

    source: SourceName
    task_id: str
    root: str = Field(description="Folder that `data_files` paths are relative to.")
    context: str = Field(default="", description="Background text shown with the questions.")
    questions: list[RawQuestion]
    data_files: list[DataFile] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def path_of(self, data_file: DataFile) -> Path:
        """Absolute location of one of this task's files."""
        return Path(self.root) / data_file.path

    def files(self, *roles: str, present_only: bool = False) -> list[DataFile]:
        """The task's files with any of `roles` (all files when none are given)."""
        return [
            f for f in self.data_files if (not roles or f.role in roles) and (f.present or not present_only)
        ]

    @property
    def visible_files(self) -> list[DataFile]:
        """Files an agent may see (gold answers and scoring material left out)."""
        return [f for f in self.data_files if not f.hidden]

    @property
    def answers(self) -> list[Any]:
        return [q.answer for q in self.questions]


def shared_benchmarks_dir() -> Path:
    """`../shared/benchmarks` next to the repository (read-only benchmark samples; may be absent)."""
    return Path(__file__).resolve().parents[3] / "shared" / "benchmarks"


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSON-lines file."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SourceFormatError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
            if not isinstance(value, dict):
                raise SourceFormatError(
                    f"{path}:{number}: expected a JSON object, got {type(value).__name__}"
                )
            yield number, value


def read_json(path: Path) -> Any:
    """Parse a JSON file; errors name the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceFormatError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc


def read_text(path: Path) -> str | None:
    """File text, or None when the file is absent."""
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def relative(path: Path, root: Path) -> str:
    """`path` relative to `root`, '/'-separated."""
    return path.relative_to(root).as_posix()


def list_files(folder: Path) -> list[Path]:
    """All regular files under `folder` (recursively), sorted; empty when the folder is absent."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
