"""Find and read LongDS-Bench tasks in the published layout.

The dataset (`zjunlp/LongDS` on Hugging Face) keeps the reference side and the agent-visible
data apart:

    <root>/task/longds/{domain}/{dataset}/taskN/task.json    turns with reference code + answers
    <root>/data/longds/{domain}/{dataset}/taskN/data/...      CSV files the agent works on

The reference code reads `f"{BASE_PATH}/data/<file>"`, so BASE_PATH is the task's folder under
`data/longds`. Six domains: education, commerce, society, business, geoscience, sports.

    refs = discover_tasks(root)                      # sorted LongDSTaskRef list
    task = load_longds_task(refs[0])                 # stateguard.task.Task, BASE_PATH set
    data_dir = require_data(refs[0])                 # raises, naming the path and the fix
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.task_folder import TASK_FILE
from stateguard.task import Task, load_task

DOMAINS: tuple[str, ...] = ("education", "commerce", "society", "business", "geoscience", "sports")
FETCH_HINT = "run `make data BENCH=longds` to fetch the LongDS data"

_TASK_DIR = re.compile(r"^task(\d+)$")


class LongDSDataMissing(FileNotFoundError):
    """A LongDS file or folder is absent; the message names it and how to fetch it."""


class LongDSTaskRef(BaseModel):
    """Where one LongDS task lives: its reference folder and its data folder."""

    model_config = ConfigDict(frozen=True)

    root: Path = Field(description="Dataset root holding task/ and data/.")
    domain: str
    dataset: str
    task: str = Field(description="Folder name, e.g. 'task1'.")

    @property
    def task_id(self) -> str:
        """Stable id, e.g. 'education/bi/task1'; also the key of the task's one workspace."""
        return f"{self.domain}/{self.dataset}/{self.task}"

    @property
    def task_dir(self) -> Path:
        return self.root / "task" / "longds" / self.domain / self.dataset / self.task

    @property
    def base_path(self) -> Path:
        """BASE_PATH of the reference code: the folder that holds `data/`."""
        return self.root / "data" / "longds" / self.domain / self.dataset / self.task

    @property
    def data_dir(self) -> Path:
        return self.base_path / "data"


def _task_number(name: str) -> int:
    match = _TASK_DIR.match(name)
    return int(match.group(1)) if match else -1


def discover_tasks(root: str | Path, *, domains: tuple[str, ...] | None = None) -> list[LongDSTaskRef]:
    """Every `taskN` folder that holds a task.json, sorted by domain, dataset and N.

    `domains` restricts the search (names from DOMAINS or any folder present). Raises
    LongDSDataMissing when `<root>/task/longds` is absent or holds no task.
    """
    root = Path(root)
    base = root / "task" / "longds"
    if not base.is_dir():
        raise LongDSDataMissing(f"{base}: no LongDS task folder here; {FETCH_HINT}")
    refs: list[LongDSTaskRef] = []
    for path in base.glob(f"*/*/task*/{TASK_FILE}"):
        task_dir = path.parent
        if _task_number(task_dir.name) < 0:
            continue
        domain, dataset = task_dir.parent.parent.name, task_dir.parent.name
        if domains is None or domain in domains:
            refs.append(LongDSTaskRef(root=root, domain=domain, dataset=dataset, task=task_dir.name))
    if not refs:
        wanted = f" in domains {list(domains)}" if domains else ""
        raise LongDSDataMissing(f"{base}: no task*/task.json found{wanted}; {FETCH_HINT}")
    return sorted(refs, key=lambda r: (r.domain, r.dataset, _task_number(r.task)))


def task_ref(root: str | Path, task_id: str) -> LongDSTaskRef:
    """The reference for an id such as 'education/bi/task1'."""
    parts = task_id.strip("/").split("/")
    if len(parts) != 3 or _task_number(parts[2]) < 0:
        raise ValueError(f"LongDS task id {task_id!r}: expected '<domain>/<dataset>/task<N>'")
    return LongDSTaskRef(root=Path(root), domain=parts[0], dataset=parts[1], task=parts[2])


def require_data(ref: LongDSTaskRef) -> Path:
    """The task's data folder; raises LongDSDataMissing naming it when absent or empty."""
    data_dir = ref.data_dir
    if not data_dir.is_dir():
        raise LongDSDataMissing(
            f"{data_dir}: data folder of LongDS task {ref.task_id} is missing; {FETCH_HINT}"
        )
    if not any(data_dir.iterdir()):
        raise LongDSDataMissing(
            f"{data_dir}: data folder of LongDS task {ref.task_id} is empty; {FETCH_HINT}"
        )
    return data_dir


def load_longds_task(ref: LongDSTaskRef, *, need_data: bool = False) -> Task:
    """Read the task's turns; BASE_PATH points at its data side.

    With `need_data`, the data folder must exist (running the task needs it; parsing, scoring
    and dependency extraction do not).
    """
    if not (ref.task_dir / TASK_FILE).is_file():
        raise LongDSDataMissing(
            f"{ref.task_dir / TASK_FILE}: LongDS task {ref.task_id} not found; {FETCH_HINT}"
        )
    if need_data:
        require_data(ref)
    return load_task(ref.task_dir, task_id=ref.task_id, base_path=str(ref.base_path))
