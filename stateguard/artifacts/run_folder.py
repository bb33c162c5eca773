"""Where each file of a run lives: the rollout folder one (task, arm) writes, the evaluation run
folder that holds many of them, and the synthesis corpus folder. The only place these names are
spelled.

    <rollout>/trace.jsonl        stateguard.trace (events: stateguard.artifacts.events)
    <rollout>/states.sqlite      stateguard.store.StateStore
    <rollout>/result.json        stateguard.rollout.RolloutResult
    <rollout>/llm_calls.jsonl    model calls of both roles (trace events `llm_call`)
    <rollout>/checkpoints/       workspace snapshots

    <run>/config.yaml                      the composed Hydra config (resume compares it)
    <run>/tasks/<task_id>/<arm>/           one rollout folder per (task, arm)
    <run>/results/<task_id>__<arm>.json    eval.results.ArmResult
    <run>/summary.json                     eval.report.RunSummary

    <out>/corpus/runs/<task_id>/<variant>/ rollout folders of the trajectory export
    <out>/corpus/records/<task_id>.jsonl   a RecordsKey line, then TrajectoryRecord lines
                                           (stateguard.artifacts.corpus_records)

    RolloutFolder(Path(r.run_dir)).trace; RunFolder(run_dir).rollout(task_id, arm)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CHECKPOINTS_DIR",
    "CONFIG_FILE",
    "LLM_CALLS_FILE",
    "RECORDS_DIR",
    "RESULTS_DIR",
    "RESULT_FILE",
    "RUNS_DIR",
    "STORE_FILE",
    "SUMMARY_FILE",
    "TASKS_DIR",
    "TRACE_FILE",
    "WINDOW_TRACE_FILE",
    "CorpusFolder",
    "RolloutFolder",
    "RunFolder",
]

TRACE_FILE = "trace.jsonl"
STORE_FILE = "states.sqlite"
RESULT_FILE = "result.json"
LLM_CALLS_FILE = "llm_calls.jsonl"
WINDOW_TRACE_FILE = "window_trace.jsonl"  # training.rl.continuation: the events an RL reward scores
CHECKPOINTS_DIR = "checkpoints"
CONFIG_FILE = "config.yaml"
TASKS_DIR = "tasks"
RESULTS_DIR = "results"
SUMMARY_FILE = "summary.json"
RUNS_DIR = "runs"
RECORDS_DIR = "records"


@dataclass(frozen=True)
class RolloutFolder:
    """The folder one `stateguard.rollout.rollout` call writes."""

    root: Path

    @property
    def trace(self) -> Path:
        return self.root / TRACE_FILE

    @property
    def store(self) -> Path:
        return self.root / STORE_FILE

    @property
    def result(self) -> Path:
        return self.root / RESULT_FILE

    @property
    def llm_calls(self) -> Path:
        return self.root / LLM_CALLS_FILE

    @property
    def checkpoints(self) -> Path:
        return self.root / CHECKPOINTS_DIR

    @property
    def window_trace(self) -> Path:
        return self.root / WINDOW_TRACE_FILE

    def holds_run(self) -> bool:
        """A rollout already wrote here (any of its files exists)."""
        return any(p.exists() for p in (self.store, self.trace, self.result))


@dataclass(frozen=True)
class RunFolder:
    """An evaluation run folder (`make eval`, `python -m eval.runner`)."""

    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def tasks(self) -> Path:
        return self.root / TASKS_DIR

    @property
    def results(self) -> Path:
        return self.root / RESULTS_DIR

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY_FILE

    def rollout(self, task_id: str, arm: str) -> RolloutFolder:
        return RolloutFolder(self.tasks / task_id / arm)

    def result(self, task_id: str, arm: str) -> Path:
        return self.results / f"{task_id}__{arm}.json"

    def resume_config(self, stamp: str) -> Path:
        """Where a resumed run keeps the config it was resumed with."""
        return self.root / f"config.resume-{stamp}.yaml"


@dataclass(frozen=True)
class CorpusFolder:
    """The trajectory export's folder (`<synth out>/corpus`)."""

    root: Path

    @property
    def runs(self) -> Path:
        return self.root / RUNS_DIR

    @property
    def records(self) -> Path:
        return self.root / RECORDS_DIR

    def rollout(self, task_id: str, variant: str) -> RolloutFolder:
        return RolloutFolder(self.runs / task_id / variant)

    def record_file(self, task_id: str) -> Path:
        return self.records / f"{task_id}.jsonl"
