"""Reader for DSBench (Jing et al.): its data-analysis and data-modeling task layouts.

Published layout (github.com/LiqiangJing/DSBench; the `data/` parts come from data.zip on
Hugging Face `liqiang888/DSBench` and may be absent):

    data_analysis/
      data.json                      JSON lines, one task each:
                                     {"id": "00000001", "name", "url", "txt", "year",
                                      "questions": ["question6", ...], "answers": ["D", 1661626, ...]}
      data/<id>/introduction.txt     background shared by the task's questions
      data/<id>/<question>.txt       one file per entry of "questions"
      data/<id>/*.xlsx|xlsb|xlsm     workbooks given to the agent (names containing "answer" are
                                     solution workbooks and are hidden)
      data/<id>/*.jpg|png            figures that belong to the question
    data_modeling/
      data.json                      JSON lines: {"name", "url", "size": "93.08 kB", "year"}
      data/task/<name>.txt           task description (the prompt)
      data/data_resplit/<name>/      train.csv, test.csv and a sample-submission CSV
                                     (also accepted directly under data_modeling/data_resplit/)
      data/answers/<name>/test_answer.csv   hidden test labels

`answers` align with `questions` by position and are kept exactly as published: letters for
multiple choice, numbers, free text such as "$5753961", or objects with several fields.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from synthesis.sources.records import (
    DataFile,
    FileRole,
    RawQuestion,
    RawTask,
    SourceFormatError,
    iter_jsonl,
    list_files,
    read_text,
    relative,
)

WORKBOOK_SUFFIXES = (".xlsx", ".xlsb", ".xlsm", ".xls")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


class AnalysisEntry(BaseModel):
    """One line of data_analysis/data.json."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    name: str
    url: str = ""
    txt: str = ""
    year: int | None = None
    questions: list[str]
    answers: list[Any] = Field(default_factory=list)


class ModelingEntry(BaseModel):
    """One line of data_modeling/data.json (a Kaggle competition)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    url: str = ""
    size: str = ""
    year: int | None = None


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kMGT]?B)\s*$", re.IGNORECASE)
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def parse_size(text: str) -> int | None:
    """Bytes in a Kaggle size label such as '93.08 kB' or '1.08 GB' (decimal units); None if unreadable."""
    match = _SIZE.match(text)
    if not match:
        return None
    return round(float(match.group(1)) * _UNITS[match.group(2).upper()])


def _index_path(root: Path) -> Path:
    path = root / "data.json" if root.is_dir() else root
    if not path.is_file():
        raise FileNotFoundError(f"DSBench index not found: {path}")
    return path


def _entries(path: Path, model: type[BaseModel]) -> list[tuple[int, Any]]:
    out = []
    for number, raw in iter_jsonl(path):
        try:
            out.append((number, model.model_validate(raw)))
        except ValidationError as exc:
            raise SourceFormatError(f"{path}:{number}: not a DSBench {model.__name__}: {exc}") from exc
    return out


def _analysis_file_role(path: Path) -> FileRole:
    name = path.name.lower()
    suffix = path.suffix.lower()
    if suffix in WORKBOOK_SUFFIXES:
        return "ground_truth" if "answer" in name else "workbook"
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in (".csv", ".tsv", ".parquet"):
        return "table"
    return "document"


def read_dsbench_analysis(root: str | Path) -> list[RawTask]:
    """Tasks of DSBench data_analysis; `root` is the folder holding data.json (or the file itself).

    One RawTask per line of data.json, its questions in the listed order with their answers.
    Question texts, the introduction and files come from `<root>/data/<id>/` when present.
    """
    index = _index_path(Path(root))
    base = index.parent
    tasks = []
    seen: set[str] = set()
    for number, entry in _entries(index, AnalysisEntry):
        if entry.answers and len(entry.answers) != len(entry.questions):
            raise SourceFormatError(
                f"{index}:{number}: task {entry.id} has {len(entry.questions)} questions "
                f"but {len(entry.answers)} answers"
            )
        if entry.id in seen:
            raise SourceFormatError(f"{index}:{number}: duplicate task id {entry.id}")
        seen.add(entry.id)
        folder = base / "data" / entry.id
        answers = entry.answers or [None] * len(entry.questions)
        questions = [
            RawQuestion(
                question_id=qid,
                text=read_text(folder / f"{qid}.txt"),
                answer=answer,
                answer_kind="value" if answer is not None else None,
            )
            for qid, answer in zip(entry.questions, answers, strict=True)
        ]
        skip = {f"{qid}.txt" for qid in entry.questions} | {"introduction.txt"}
        files = [
            DataFile(path=relative(p, base), role=_analysis_file_role(p), present=True)
            for p in list_files(folder)
            if p.name not in skip
        ]
        introduction = read_text(folder / "introduction.txt")
        tasks.append(
            RawTask(
                source="dsbench_analysis",
                task_id=entry.id,
                root=str(base),
                context=(introduction or entry.txt).strip(),
                questions=questions,
                data_files=files,
                metadata={
                    "name": entry.name,
                    "url": entry.url,
                    "year": entry.year,
                    "texts_present": folder.is_dir(),
                    **(entry.model_extra or {}),
                },
            )
        )
    return tasks


def _resplit_folder(base: Path, name: str) -> Path:
    for candidate in (base / "data" / "data_resplit" / name, base / "data_resplit" / name):
        if candidate.is_dir():
            return candidate
    return base / "data" / "data_resplit" / name


def _modeling_file_role(path: Path) -> FileRole:
    name = path.name.lower()
    if name == "train.csv":
        return "train"
    if name == "test.csv":
        return "test"
    if "sample" in name or "submission" in name:
        return "sample_submission"
    return "table" if path.suffix.lower() in (".csv", ".tsv", ".parquet") else "other"


def read_dsbench_modeling(root: str | Path) -> list[RawTask]:
    """Tasks of DSBench data_modeling; `root` is the folder holding data.json (or the file itself).

    The question is the competition description (`data/task/<name>.txt`, None when absent);
    the answer is the path of the hidden `test_answer.csv`, given whenever that file exists.
    """
    index = _index_path(Path(root))
    base = index.parent
    tasks = []
    for _number, entry in _entries(index, ModelingEntry):
        description_path = base / "data" / "task" / f"{entry.name}.txt"
        resplit = _resplit_folder(base, entry.name)
        answer_path = base / "data" / "answers" / entry.name / "test_answer.csv"
        files = [
            DataFile(path=relative(p, base), role=_modeling_file_role(p), present=True)
            for p in list_files(resplit)
        ]
        if not files:  # the two names the layout fixes, marked missing (the sample file's name varies)
            files = [
                DataFile(
                    path=relative(resplit / name, base), role=_modeling_file_role(Path(name)), present=False
                )
                for name in ("train.csv", "test.csv")
            ]
        files.append(
            DataFile(path=relative(answer_path, base), role="ground_truth", present=answer_path.is_file())
        )
        text = read_text(description_path)
        tasks.append(
            RawTask(
                source="dsbench_modeling",
                task_id=entry.name,
                root=str(base),
                questions=[
                    RawQuestion(
                        question_id="submission",
                        text=text.strip() if text is not None else None,
                        answer=relative(answer_path, base) if answer_path.is_file() else None,
                        answer_kind="submission_file" if answer_path.is_file() else None,
                    )
                ],
                data_files=files,
                metadata={
                    "url": entry.url,
                    "size": entry.size,
                    "size_bytes": parse_size(entry.size),
                    "year": entry.year,
                    "metric_script": f"evaluation/{entry.name}_eval.py",
                    "texts_present": text is not None,
                    **(entry.model_extra or {}),
                },
            )
        )
    return tasks


def read_dsbench(root: str | Path) -> list[RawTask]:
    """Both DSBench parts under `root` (which holds data_analysis/ and/or data_modeling/)."""
    root = Path(root)
    parts = [root / "data_analysis", root / "data_modeling"]
    if not any((p / "data.json").is_file() for p in parts):
        raise FileNotFoundError(f"no DSBench data_analysis/data.json or data_modeling/data.json under {root}")
    tasks: list[RawTask] = []
    if (parts[0] / "data.json").is_file():
        tasks += read_dsbench_analysis(parts[0])
    if (parts[1] / "data.json").is_file():
        tasks += read_dsbench_modeling(parts[1])
    return tasks
