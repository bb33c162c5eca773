"""LongDS as a runner benchmark: any folder in the published layout, LLM judge or field judge.

    make eval ARGS='bench=longds bench.data_dir=data/longds'                      # endpoints
    make eval ARGS='bench=longds bench.data_dir=<dir> worker=scripted bench.judge=fields'   # offline

Tasks come from `loader.discover_tasks` (domain = the LongDS domain, level = its dataset), Pa(t)
from the `# Depends on ...` comments of the reference code (`deps.parse_dependencies`, frozen per
task and shared by every arm). Flow: turn-aligned, 40 worker steps per turn (Table 3). The judge
is `fields` (deterministic, offline) or `llm` (STATEGUARD_JUDGE_* endpoint, official criteria;
unparseable verdicts are excluded, not counted wrong).

Faults: a task folder may declare the scripted worker's mistakes in `faults.json` next to its
`task.json` (docs/faults.md); each declared variant runs as its own task `<task>~<variant>`
beside the clean one. `bench.variants=[clean]` runs clean only; `'bench.faults=[{kind: stale,
turn: 9}]'` replaces the declared variants.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.longds.deps import parse_dependencies
from eval.benchmarks.longds.judge import FieldJudge, LLMJudge, TurnJudge, judge_turns
from eval.benchmarks.longds.loader import LongDSDataMissing, discover_tasks, load_longds_task, require_data
from eval.benchmarks.longds.prompts import longds_protocol
from eval.benchmarks.variants import expand_variants, read_faults_file, select_variants
from stateguard.artifacts.task_folder import FAULTS_FILE
from stateguard.flows import LONGDS
from stateguard.llm import EndpointConfig, LLMClient
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["LongDSBench"]


class LongDSBench(Benchmark):
    name = "longds"
    flow = LONGDS
    scoring_version = "longds-judge/1"

    def __init__(self) -> None:
        self._judge: TurnJudge | None = None
        self._judge_kind = "fields"

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        root = cfg.get("data_dir")
        if not root:
            raise LongDSDataMissing(
                "bench.data_dir is not set: point it at a folder holding task/longds/... and "
                "data/longds/... (`make data BENCH=longds` fetches the published one)"
            )
        self._judge_kind = str(cfg.get("judge", "llm"))
        if self._judge_kind not in ("llm", "fields"):
            raise ValueError(f"bench.judge={self._judge_kind!r}: use llm or fields")
        if self._judge_kind == "llm":
            EndpointConfig.from_env("judge")  # fail now, naming the variables, not after the first task
        refs = discover_tasks(
            Path(root).resolve()
        )  # BASE_PATH must not depend on the sandbox's working folder
        if not refs:
            raise LongDSDataMissing(
                f"{root}: no task/longds/<domain>/<dataset>/taskN/task.json found; "
                "`make data BENCH=longds` fetches the published tasks"
            )
        out = []
        for ref in refs:
            task = load_longds_task(ref, need_data=True)
            turns = [{"turn_id": t.turn_id, "code": t.code} for t in task.turns]
            base = EvalTask(
                task_id=ref.task_id.replace("/", "__"),
                task=task,
                data_dir=require_data(ref),
                domain=ref.domain,
                level=ref.dataset,
                parents=parse_dependencies(turns),
            )
            declared = read_faults_file(ref.task_dir / FAULTS_FILE).variants
            out += expand_variants(base, select_variants(declared, cfg), split=self.split_of(ref.task_id))
        return out

    def split_of(self, task_id: str) -> str:
        """The split a task belongs to (the published LongDS has one; `dev` declares a held-out part)."""
        return "all"

    def worker_protocol(self, task: EvalTask) -> WorkerProtocol:
        """DSGym-style dialogue for the LLM worker (system prompt once, `Question:` turns, tags)."""
        return longds_protocol(str(task.data_dir))

    def _get_judge(self) -> TurnJudge:
        if self._judge is None:
            self._judge = (
                FieldJudge()
                if self._judge_kind == "fields"
                else LLMJudge(LLMClient(EndpointConfig.from_env("judge")))
            )
        return self._judge

    def score(self, task: EvalTask, answers: Mapping[int, Any]) -> dict[int, bool | None]:
        judgement = judge_turns(self._get_judge(), task.task.turns, answers)
        return {v.turn_id: v.correct for v in judgement.verdicts}
