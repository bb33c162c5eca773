"""Reader for IDA-Bench (Li et al.): multi-round guided analysis tasks built from Kaggle notebooks.

Published layout (github.com/lhydave/IDA-Bench, data on Kaggle `lhydave/ida-bench`, unpacked as
`benchmark_final/`):

    benchmark_final/
      meta_info/benchmark_list.json          ["<task id>", ...]
      meta_info/storage/<task id>.json       {"notebook_id", "input_ids": [file names], "num_rounds"}
      storage/<task id>/
        instructions/instructions.md         "**Objective**\\n...\\n\\n**Your Knowledge**\\n..."
        instructions/reference_insights.md   optional: insights the simulated user may reveal
        instructions/shards.md               optional: the knowledge split into shards
        datasets/*                           files the agent works on (incl. sample_submission.csv)
        ground_truth/groundtruth_df.csv      hidden gold labels for the agent's submission
        evaluation/evaluation_metrics.py     hidden `evaluate(ground_truth_path, submission_path)`
        evaluation/numeric_baseline.json     {"score", "is_higher_better", "theoretical_best"}

Each task becomes a RawTask with one question ("objective"); the knowledge section is the
context, the ground-truth file is the answer, and the numeric baseline goes to metadata.
The metric script is listed as a file and never executed here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from synthesis.sources.records import (
    DataFile,
    FileRole,
    RawQuestion,
    RawTask,
    SourceFormatError,
    list_files,
    read_json,
    read_text,
    relative,
)

GROUND_TRUTH = "ground_truth/groundtruth_df.csv"
METRIC_SCRIPT = "evaluation/evaluation_metrics.py"
BASELINE = "evaluation/numeric_baseline.json"


class NumericBaseline(BaseModel):
    """The score a simple baseline reaches, and the best score the metric allows."""

    model_config = ConfigDict(extra="allow", frozen=True)

    score: float
    is_higher_better: bool
    theoretical_best: float

    def skill(self, achieved: float) -> float:
        """Share of the gap from the baseline to the best score that `achieved` closes."""
        gap = self.theoretical_best - self.score
        if gap == 0:
            raise ValueError("baseline already equals the theoretical best")
        return (achieved - self.score) / gap


class TaskMeta(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    notebook_id: str
    input_ids: list[str] = []
    num_rounds: int | None = None


_HEADING = re.compile(r"^\s*\*\*(?P<title>[^*]+?)\*\*\s*$", re.MULTILINE)


def split_instructions(text: str) -> dict[str, str]:
    """Sections of instructions.md keyed by their bold heading (e.g. 'Objective', 'Your Knowledge').

    Text before the first heading is kept under ''.
    """
    sections: dict[str, str] = {}
    matches = list(_HEADING.finditer(text))
    if not matches:
        return {"": text.strip()}
    if text[: matches[0].start()].strip():
        sections[""] = text[: matches[0].start()].strip()
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections[match.group("title").strip()] = text[match.end() : end].strip()
    return sections


def _storage_and_meta(root: Path) -> tuple[Path, Path | None]:
    if (root / "storage").is_dir():
        meta = root / "meta_info"
        return root / "storage", meta if meta.is_dir() else None
    if root.is_dir() and any((p / "instructions").is_dir() for p in root.iterdir() if p.is_dir()):
        return root, None  # given the storage folder itself
    raise FileNotFoundError(f"no IDA-Bench storage/ folder (or task folders with instructions/) under {root}")


def _task_ids(storage: Path, meta: Path | None) -> list[str]:
    listed = meta / "benchmark_list.json" if meta is not None else None
    if listed is not None and listed.is_file():
        ids = read_json(listed)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise SourceFormatError(f"{listed}: expected a JSON list of task ids")
        return sorted(ids)
    return sorted(p.name for p in storage.iterdir() if p.is_dir() and not p.name.startswith("."))


def _role(rel: str) -> FileRole:
    top, _, rest = rel.partition("/")
    name = rest.lower()
    if top == "datasets":
        if "sample_submission" in name:
            return "sample_submission"
        if name.endswith((".csv", ".tsv", ".parquet", ".xlsx", ".json")):
            return "table"
        return "document"
    if top == "ground_truth":
        return "ground_truth"
    if top == "evaluation":
        return "metric"
    return "other"


def _read_model(path: Path, model: type[BaseModel]) -> Any:
    try:
        return model.model_validate(read_json(path))
    except ValidationError as exc:
        raise SourceFormatError(f"{path}: not an IDA-Bench {model.__name__}: {exc}") from exc


def _to_task(task_id: str, storage: Path, meta: Path | None) -> RawTask:
    folder = storage / task_id
    if not folder.is_dir():
        raise SourceFormatError(f"IDA-Bench task {task_id!r} is listed but {folder} does not exist")
    instructions_path = folder / "instructions" / "instructions.md"
    instructions = read_text(instructions_path)
    if instructions is None:
        raise SourceFormatError(f"{instructions_path}: missing (every IDA-Bench task has one)")
    sections = split_instructions(instructions)
    objective = sections.get("Objective", sections.get("", ""))
    knowledge = sections.get("Your Knowledge", "")

    files = [
        DataFile(path=rel, role=_role(rel), present=True)
        for rel in (relative(p, folder) for p in list_files(folder))
        if not rel.startswith("instructions/")
    ]
    present = {f.path for f in files}
    for rel in (GROUND_TRUTH, METRIC_SCRIPT, BASELINE):
        if rel not in present:
            files.append(DataFile(path=rel, role=_role(rel), present=False))

    metadata: dict[str, Any] = {"instructions": sections}
    for name in ("reference_insights", "shards"):
        text = read_text(folder / "instructions" / f"{name}.md")
        if text is not None:
            metadata[name] = text.strip()
    if (folder / BASELINE).is_file():
        metadata["numeric_baseline"] = _read_model(folder / BASELINE, NumericBaseline).model_dump()
    meta_file = meta / "storage" / f"{task_id}.json" if meta is not None else None
    if meta_file is not None and meta_file.is_file():
        info = _read_model(meta_file, TaskMeta)
        metadata.update(notebook_id=info.notebook_id, input_ids=info.input_ids, num_rounds=info.num_rounds)

    has_truth = (folder / GROUND_TRUTH).is_file()
    return RawTask(
        source="ida_bench",
        task_id=task_id,
        root=str(folder),
        context=knowledge,
        questions=[
            RawQuestion(
                question_id="objective",
                text=objective,
                answer=GROUND_TRUTH if has_truth else None,
                answer_kind="submission_file" if has_truth else None,
            )
        ],
        data_files=files,
        metadata=metadata,
    )


def read_ida_bench(root: str | Path) -> list[RawTask]:
    """IDA-Bench tasks under `root` (benchmark_final/, or its storage/ folder), sorted by id."""
    storage, meta = _storage_and_meta(Path(root))
    return [_to_task(task_id, storage, meta) for task_id in _task_ids(storage, meta)]
