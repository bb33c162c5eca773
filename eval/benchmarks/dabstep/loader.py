"""Read DABstep in its published layout: task JSON-lines plus the shared context folder.

The Hugging Face dataset `adyen/DABstep` (CC-BY-4.0) ships, under its `data/` folder,

    <root>/tasks/all.jsonl     450 tasks (72 easy, 378 hard); answers withheld (empty strings)
    <root>/tasks/dev.jsonl     10 dev tasks with their answers
    <root>/context/            payments.csv, fees.json, manual.md, merchant_data.json,
                               merchant_category_codes.csv, acquirer_countries.csv, payments-readme.md

Each task line holds `task_id`, `question`, `level` (easy|hard), `answer` and `guidelines` (the
required answer format). Every task reads the same context files; an agent sees them all.
`make data BENCH=dabstep` fetches the full data into `data/dabstep/` (the root is then
`data/dabstep/data`; `resolve_root` accepts either folder). The staged copies under
`../shared/benchmarks/dabstep` use other file names for the splits, which `split_file` accepts too.

    tasks = load_split("data/dabstep", "dev")
    context = check_context(resolve_root("data/dabstep") / "context")
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Split = Literal["all", "dev"]

FETCH_HINT = "run `make data BENCH=dabstep` to fetch it"

# Accepted file names per split, in order of preference: the published name, then the staged one.
SPLIT_FILES: dict[str, tuple[str, ...]] = {
    "all": ("all.jsonl", "all.official_blank_answers.jsonl"),
    "dev": ("dev.jsonl", "dev.dsgym_snapshot.jsonl"),
}

CONTEXT_FILES: tuple[str, ...] = (
    "payments.csv",
    "fees.json",
    "manual.md",
    "merchant_data.json",
    "merchant_category_codes.csv",
    "acquirer_countries.csv",
    "payments-readme.md",
)

# The published payments table (138k transactions); checked only when asked (`verify=True`).
PAYMENTS_SHA256 = "5fbb26210a45427d7a6560cfab3a362a08e4067f27cd03695f211a51c47ffc25"
PAYMENTS_BYTES = 23_581_339


class DabstepDataMissing(FileNotFoundError):
    """A DABstep file is absent; the message names it and how to fetch it."""


class DabstepTask(BaseModel):
    """One DABstep task as published."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(min_length=1, description="Task id as a string, e.g. '1712'.")
    question: str = Field(min_length=1)
    level: Literal["easy", "hard"]
    answer: str = Field(default="", description="Ground truth; empty when the benchmark withholds it.")
    guidelines: str = Field(default="", description="Required answer format, shown to the agent.")

    @property
    def has_answer(self) -> bool:
        return bool(self.answer.strip())


class DabstepContext(BaseModel):
    """The context folder and the path of each of its files."""

    model_config = ConfigDict(frozen=True)

    folder: Path
    files: dict[str, Path]


def parse_task_line(line: str, *, where: str) -> DabstepTask:
    """One JSON line -> DabstepTask; `where` (file:line) prefixes every error."""
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    if isinstance(raw.get("task_id"), int):
        raw["task_id"] = str(raw["task_id"])
    try:
        return DabstepTask.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(record)"
        raise ValueError(f"{where}: field '{field}': {first['msg']}") from None


def load_tasks(path: str | Path) -> list[DabstepTask]:
    """Every task of one JSON-lines file; blank lines are skipped, task ids must be unique."""
    path = Path(path)
    if not path.is_file():
        raise DabstepDataMissing(f"{path}: no DABstep task file here; {FETCH_HINT}")
    tasks: list[DabstepTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        task = parse_task_line(line, where=f"{path}:{number}")
        if task.task_id in seen:
            raise ValueError(f"{path}:{number}: task_id {task.task_id} already on line {seen[task.task_id]}")
        seen[task.task_id] = number
        tasks.append(task)
    return tasks


def resolve_root(path: str | Path) -> Path:
    """The folder holding tasks/ and context/: `path` itself, or its `data/` (the Hub layout)."""
    path = Path(path)
    if not ((path / "tasks").is_dir() or (path / "context").is_dir()) and (path / "data" / "tasks").is_dir():
        return path / "data"
    return path


def split_file(root: str | Path, split: Split) -> Path:
    """The task file of `split` under `<root>/tasks/` (published or staged name)."""
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown DABstep split {split!r}; use one of {sorted(SPLIT_FILES)}")
    folder = resolve_root(root) / "tasks"
    for name in SPLIT_FILES[split]:
        if (folder / name).is_file():
            return folder / name
    names = " or ".join(SPLIT_FILES[split])
    raise DabstepDataMissing(f"{folder}: no {names} for the DABstep '{split}' split; {FETCH_HINT}")


def load_split(root: str | Path, split: Split) -> list[DabstepTask]:
    return load_tasks(split_file(root, split))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_context(folder: str | Path, *, verify: bool = False) -> DabstepContext:
    """All context files must be present (and payments.csv intact when `verify`).

    Raises DabstepDataMissing naming the first missing file, or ValueError when payments.csv
    differs from the published one.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DabstepDataMissing(f"{folder}: no DABstep context folder here; {FETCH_HINT}")
    files: dict[str, Path] = {}
    for name in CONTEXT_FILES:
        path = folder / name
        if not path.is_file():
            raise DabstepDataMissing(f"{path}: missing DABstep context file '{name}'; {FETCH_HINT}")
        files[name] = path
    if verify:
        payments = files["payments.csv"]
        size = payments.stat().st_size
        if size != PAYMENTS_BYTES or _sha256(payments) != PAYMENTS_SHA256:
            raise ValueError(
                f"{payments}: not the published payments table ({size} bytes, expected "
                f"{PAYMENTS_BYTES} with sha256 {PAYMENTS_SHA256[:12]}…); delete it and {FETCH_HINT}"
            )
    return DabstepContext(folder=folder, files=files)
