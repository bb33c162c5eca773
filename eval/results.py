"""Typed results of an evaluation run, one file per (task, arm), written atomically.

    write_result(run_dir, result)          # <run_dir>/results/<task_id>__<arm>.json (tmp + rename)
    results = read_results(run_dir)        # every finished (task, arm), sorted; a bad file is named
    outcome = run_job(...)                 # JobOutcome: one rollout's raw outcome, before scoring
    good, bad = scan_results(run_dir)      # resume: valid results, and the files that are not

A killed run leaves only whole result files, so `resume=true` skips exactly the finished pairs and
counts nothing twice. A file that is not a valid result anyway (truncated, edited, written by
another version) is never skipped silently: `scan_results` reports it, and the runner moves it to
`results/invalid/` and reruns its pair. `make tables` and the viewer read these files and nothing
else (plus the traces they point to); they refuse a bad file, naming it and the fix.

Each result has a `status`: `ok`; `degraded` (the rollout finished but the manager or the
workspace ran impaired: `degraded_reasons` says how; its turns are scored); `crashed` (the
rollout raised or its worker process died: `error` says why; it has no verdicts, is left out of
accuracy and DCR, counted apart, and rerun by `resume=true`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from stateguard.artifacts.run_folder import RunFolder
from stateguard.records import Record

__all__ = ["ArmResult", "ResultFileError", "read_results", "result_path", "scan_results", "write_result"]

Status = Literal["ok", "degraded", "crashed"]


class ResultFileError(ValueError):
    """A results file is not a valid result; the message names it and the fix."""


class JobOutcome(BaseModel):
    """What one (task, arm) job hands the parent process (`eval.runner.run_job`, or the pool's crash
    record for a job whose worker died): the raw answers and counters, scored into an ArmResult there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answers: dict[int, Any] = Field(default_factory=dict)
    repairs: int = 0
    manager_calls: int = 0
    manager_fallbacks: int = 0
    manager_usage: dict[str, int | float] = Field(default_factory=dict)
    committed_states: int = 0
    stale_states: int = 0
    degraded: bool = False
    degraded_reasons: list[str] = Field(default_factory=list)
    degraded_turns: list[int] = Field(default_factory=list)
    attempts: int = Field(default=1, ge=1)
    wall_s: float = 0.0
    error: str | None = Field(default=None, description="Why the rollout crashed; None when it ran.")

    @classmethod
    def crash(cls, error: str, attempts: int = 1, wall_s: float = 0.0) -> JobOutcome:
        return cls(error=error, attempts=attempts, wall_s=wall_s)

    def counters(self) -> dict[str, Any]:
        """The ArmResult fields this outcome fills (answers and error are placed by the scorer)."""
        return self.model_dump(exclude={"answers", "error"})


class ArmResult(Record):
    bench: str
    task_id: str
    arm: str
    domain: str = "all"
    level: str = "all"
    status: Status = Field(
        default="ok",
        description="ok | degraded (scored, see degraded_reasons) | crashed (not scored, see error)",
    )
    correct: dict[int, bool | None] = Field(
        description="Per turn: True/False, None = excluded (judge failed); empty when the rollout crashed."
    )
    parents: dict[int, list[int]] = Field(default_factory=dict, description="Pa(t), shared by every arm.")
    answers: dict[int, object] = Field(default_factory=dict)
    repairs: int = 0
    manager_calls: int = Field(
        default=0, description="Model calls that got a real answer (completions only)."
    )
    manager_fallbacks: int = Field(
        default=0, description="Manager activations that ended without the policy's decision."
    )
    manager_usage: dict[str, int | float] = Field(
        default_factory=dict,
        description="A model-backed manager's counters (stateguard.policies.usage.ManagerUsage).",
    )
    committed_states: int = 0
    stale_states: int = 0
    degraded: bool = False
    degraded_reasons: list[str] = Field(default_factory=list, description="Why the rollout ran impaired.")
    degraded_turns: list[int] = Field(
        default_factory=list,
        description="Turns in which no worker code ran (failed model calls, refused replies, a spent time "
        "cap): scored as they ended, counted apart in the reports.",
    )
    attempts: int = Field(
        default=1, description="Rollouts run for this result (> 1: its worker process died)."
    )
    wall_s: float = 0.0
    run_dir: str = Field(description="Folder with this arm's trace.jsonl, states.sqlite and result.json.")
    error: str | None = Field(default=None, description="Why the rollout crashed (its turns are not scored).")
    variant: str = Field(
        default="clean", description="Fault variant of the task (clean = no mistake injected)."
    )
    base_task: str = Field(
        default="", description="Task id shared by the variants of one task ('' = task_id)."
    )
    split: str = Field(default="all", description="Benchmark split (dev / heldout), reported apart.")
    faults: list[dict[str, object]] = Field(
        default_factory=list, description="The scripted worker's declared mistakes."
    )

    @model_validator(mode="before")
    @classmethod
    def _derive_status(cls, data: Any) -> Any:
        """Files from before `status` existed: a failed rollout was one with an `error` (its turns
        were marked wrong then; they are read as not scored now)."""
        if isinstance(data, dict) and "status" not in data:
            data = {
                **data,
                "status": "crashed"
                if data.get("error")
                else "degraded"
                if data.get("degraded") or data.get("degraded_reasons")
                else "ok",
            }
            if data["status"] == "crashed":
                data["correct"] = {}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ArmResult:
        if (self.status == "crashed") != (self.error is not None):
            raise ValueError(
                f"status {self.status!r} with error {self.error!r}: a crashed result, and only it, "
                "carries an error"
            )
        if self.status == "crashed" and any(v is not None for v in self.correct.values()):
            raise ValueError("a crashed result has no verdicts")
        return self


def result_path(run_dir: str | Path, task_id: str, arm: str) -> Path:
    return RunFolder(Path(run_dir)).result(task_id, arm)


def write_result(run_dir: str | Path, result: ArmResult) -> Path:
    path = result_path(run_dir, result.task_id, result.arm)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(result.model_dump_json(indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # atomic: readers see the old state or the whole new file
    return path


def _load(path: Path) -> ArmResult:
    """One results file, or ResultFileError saying what is wrong with it."""
    try:
        result = ArmResult.from_json(path.read_bytes(), source=str(path))
    except (ValidationError, ValueError, UnicodeDecodeError) as exc:
        what = (
            str(exc).splitlines()[0]
            if not isinstance(exc, ValidationError)
            else (
                f"{exc.error_count()} invalid field(s), first "
                f"'{'.'.join(str(p) for p in exc.errors()[0]['loc'])}': {exc.errors()[0]['msg']}"
            )
        )
        raise ResultFileError(what if what.startswith(str(path)) else f"{path}: {what}") from None
    if path.name != f"{result.task_id}__{result.arm}.json":
        raise ResultFileError(
            f"{path}: holds the result of {result.task_id}/{result.arm}, not of its file name"
        )
    return result


def scan_results(run_dir: str | Path) -> tuple[list[ArmResult], list[tuple[Path, str]]]:
    """Valid results, and (file, what is wrong) for each results file that is not one."""
    folder = RunFolder(Path(run_dir)).results
    good: list[ArmResult] = []
    bad: list[tuple[Path, str]] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            good.append(_load(path))
        except (ResultFileError, OSError) as exc:
            bad.append((path, str(exc)))
    return sorted(good, key=lambda r: (r.bench, r.task_id, r.arm)), bad


def read_results(run_dir: str | Path) -> list[ArmResult]:
    folder = RunFolder(Path(run_dir)).results
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no results; is {run_dir} a run folder of `make eval`?")
    good, bad = scan_results(run_dir)
    if bad:
        more = f" ({len(bad)} bad files)" if len(bad) > 1 else ""
        raise ResultFileError(
            f"{bad[0][1]}{more}; `make eval ARGS='resume=true run_dir={run_dir}'` (with the run's "
            f"options) moves invalid results to {folder}/invalid/ and reruns them"
        )
    return good
