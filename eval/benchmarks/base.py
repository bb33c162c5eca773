"""What the runner needs from a benchmark: its tasks as `EvalTask`s, its flow, and a scorer.

    bench = get_benchmark("synth")                 # eval.benchmarks.registry
    tasks = bench.load(cfg.bench)                  # list[EvalTask], sorted by task_id
    per_turn = bench.score(tasks[0], answers)      # {turn_id: True | False | None (excluded)}

An `EvalTask` carries everything one rollout of one arm needs and nothing hidden reaches the
worker through it: the `Task` (questions, and the reference code the scripted worker replays),
the agent-visible data folder the sandbox mounts, the parent sets Pa(t) used by DCR, and the
scripted worker's mistakes when the benchmark ships them.

Optional hooks, declared here with do-nothing defaults that a benchmark inherits by subclassing
`Benchmark` and overrides when it needs them: `worker_protocol(task)` (the LLM worker's native
prompt and reply format, e.g. LongDS's DSGym-style tags; None = the generic one),
`collect(task, arm_dir, answers)` (gather what the agent produced, e.g. SQL files in its scratch
folder) and `after_run(run_dir)` (benchmark-specific outputs, e.g. DABstep's leaderboard files).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from stateguard.flows import FlowConfig
from stateguard.task import Task
from stateguard.workers.faults import Fault
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["Benchmark", "EvalTask"]


class EvalTask(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    task_id: str
    task: Task
    data_dir: Path = Field(description="Agent-visible folder mounted read-only in the sandbox.")
    domain: str = "all"
    level: str = "all"
    parents: dict[int, list[int]] = Field(default_factory=dict, description="Pa(t) for DCR (C.4).")
    faults: list[Fault] = Field(
        default_factory=list, description="The scripted worker's mistakes, if shipped."
    )
    variant: str = Field(
        default="clean", description="Fault variant (eval.benchmarks.variants); clean = none."
    )
    base_task: str = Field(
        default="", description="Task id shared by all variants of one task ('' = task_id)."
    )
    split: str = Field(default="all", description="Benchmark split, e.g. dev / heldout (reported apart).")


class Benchmark(Protocol):
    name: str
    flow: FlowConfig
    scoring_version: str

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]: ...

    def score(self, task: EvalTask, answers: Mapping[int, Any]) -> dict[int, bool | None]: ...

    def worker_protocol(self, task: EvalTask) -> WorkerProtocol | None:
        """The LLM worker's prompt and reply format for this benchmark; None = the generic one."""
        return None

    def collect(self, task: EvalTask, arm_dir: str | Path, answers: Mapping[int, Any]) -> dict[int, Any]:
        """The answers to score, given the arm folder the rollout wrote; by default the worker's own."""
        return dict(answers)

    def after_run(self, run_dir: str | Path) -> list[Path]:
        """Benchmark-specific files written once a run ends; returns their paths (none by default)."""
        return []
