"""Typed results of an evaluation run, one file per (task, arm), written atomically.

    write_result(run_dir, result)          # <run_dir>/results/<task_id>__<arm>.json (tmp + rename)
    results = read_results(run_dir)        # every finished (task, arm), sorted

A killed run leaves only whole result files, so `--resume` skips exactly the finished pairs and
counts nothing twice. `make tables` and the viewer read these files and nothing else (plus the
traces they point to).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from stateguard.records import Record

__all__ = ["ArmResult", "read_results", "result_path", "write_result"]


class ArmResult(Record):
    bench: str
    task_id: str
    arm: str
    domain: str = "all"
    level: str = "all"
    correct: dict[int, bool | None] = Field(description="Per turn: True/False, None = excluded (judge failed).")
    parents: dict[int, list[int]] = Field(default_factory=dict, description="Pa(t), shared by every arm.")
    answers: dict[int, object] = Field(default_factory=dict)
    repairs: int = 0
    manager_calls: int = 0
    committed_states: int = 0
    stale_states: int = 0
    degraded: bool = False
    wall_s: float = 0.0
    run_dir: str = Field(description="Folder with this arm's trace.jsonl, states.sqlite and result.json.")
    error: str | None = Field(default=None, description="Why the rollout failed (its turns count as wrong).")
    variant: str = Field(default="clean", description="Fault variant of the task (clean = no mistake injected).")
    base_task: str = Field(default="", description="Task id shared by the variants of one task ('' = task_id).")
    split: str = Field(default="all", description="Benchmark split (dev / heldout), reported apart.")
    faults: list[dict[str, object]] = Field(default_factory=list, description="The scripted worker's declared mistakes.")


def result_path(run_dir: str | Path, task_id: str, arm: str) -> Path:
    return Path(run_dir) / "results" / f"{task_id}__{arm}.json"


def write_result(run_dir: str | Path, result: ArmResult) -> Path:
    path = result_path(run_dir, result.task_id, result.arm)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(result.model_dump_json(indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # atomic: readers see the old state or the whole new file
    return path


def read_results(run_dir: str | Path) -> list[ArmResult]:
    folder = Path(run_dir) / "results"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no results; is {run_dir} a run folder of `make eval`?")
    out = [ArmResult.model_validate_json(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    return sorted(out, key=lambda r: (r.bench, r.task_id, r.arm))
