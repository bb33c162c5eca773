"""DAComp-DE as a runner benchmark: the agent writes a SQL pipeline, scored per table (CFS and CS).

    make eval BENCH=dacomp_de ARGS='worker=llm'                   # data/dacomp_de/{tasks,gold}
    make eval BENCH=dacomp_de ARGS='worker=llm bench.kinds=[impl]'
    python -m eval.benchmarks.dacomp_de.bench runs/eval/dacomp_de-<time>   # Impl CFS/CS, Evol CFS per arm

Each task folder (task.py) becomes a one-turn `Task`: the turn carries the change request
(question.md, evolution) or the contract (docs/data_contract.yaml, implementation), the track's
own instructions (`prompts.TRACK_INSTRUCTIONS`), the rules for the SQL files and the answer
format. The LLM worker runs a CodeAct loop (`worker_protocol` -> `prompts.dacomp_protocol`:
`<execute_ipython>` actions, `OBSERVATION:` replies, `<finish>`). The sandbox mounts the task
folder read-only (`BASE_PATH`); the agent works in its current directory, the sandbox's writable
scratch folder (`<run_dir>/tasks/<task>/<arm>/scratch`), writing `sql/<layer>/<table>.sql`, one
SELECT per file. It ends with `<finish>{"sql_dir": "<absolute path of that sql folder>"}</finish>`;
a folder outside `<run_dir>/tasks/<task>/` (such as the task folder's own sql/) is not used.

Scoring (`score`) rebuilds the submission: the task folder's `sql/` with the agent's files laid
over it (a file the agent did not write stays as shipped, as in the benchmark's working copy),
then `evaluate_submission` in CFS and CS mode against the gold DuckDB. The scored units are the
configured tables, numbered 1..N in the evaluation config's order (`table_units`); a unit is
correct when its table matches gold under CFS. Pa(T) for DCR comes from the reference SQL
(`deps.table_dependencies` over the task folder's `sql/`, or `bench.reference_sql_dir`),
passing through tables the config does not score; an implementation task whose folder ships no
SQL has no Pa(T) (no DCR) unless `reference_sql_dir` supplies a reference pipeline.

The example's CFS and CS scores are saved per (task, answer) under
`<run_dir>/dacomp_de_scores/<task>/`; `task_scores(run_dir)`, `after_run` (writes
`<run_dir>/dacomp_de_summary.json`) and the command above read them back. Level = impl | evol,
domain = the project (e.g. lever).

Hooks for a runner that knows the arm folder: `collect(task, arm_dir, answers)` points an answer
without a usable `sql_dir` at `<arm_dir>/scratch/sql`; `units(task)` lists every table unit.

Only `worker=llm` and `workspace=sandbox` can run it (no reference code to replay; the dict
workspace would write into the runner's own directory, shared by the arms); `load` refuses the
others, a missing worker endpoint, and missing tasks, gold databases or evaluation config
(`bench.eval_config`, default `<data_dir>/evaluation_config_compare.yaml`), before any rollout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.dacomp_de.config import ExampleSpec, load_eval_config
from eval.benchmarks.dacomp_de.deps import table_dependencies
from eval.benchmarks.dacomp_de.prompts import TRACK_INSTRUCTIONS, dacomp_protocol
from eval.benchmarks.dacomp_de.scorer import SCORING_VERSION, ExampleScore, evaluate_submission
from eval.benchmarks.dacomp_de.task import (
    DACompTask,
    TaskFolderError,
    find_tasks,
    gold_db_path,
    load_task,
    read_sql,
)
from eval.results import ArmResult, read_results
from stateguard.flows import DACOMP_DE
from stateguard.llm import EndpointConfig
from stateguard.task import Task, Turn
from stateguard.workers.protocol import WorkerProtocol

__all__ = ["DACompDEBench", "DACompRunScore", "merged_sources", "table_units", "task_scores", "unit_parents"]

log = logging.getLogger(__name__)
TURN = 1
SCORES_DIR = "dacomp_de_scores"
Sources = dict[str, dict[str, str]]

CONTEXT_TEXT = """This is a DAComp-DE data-engineering task ({kind}). The task folder is BASE_PATH \
({root}) and is read-only: it holds run.py, config/layer_dependencies.yaml, {spec}, the raw data in \
{start_db} (schema raw) and the pipeline's existing SQL under sql/<layer>/ (if any).

How to submit: under your current working directory (writable), write one file per table, \
sql/<layer>/<table>.sql, with layer staging, intermediate or marts. Each file holds one DuckDB SELECT: no \
trailing semicolon, no dbt ref(); read upstream tables as <layer>.<table> and raw inputs as raw.<table>. A \
table whose file you do not write keeps the task folder's SQL. To test, copy {start_db} into your working \
directory and build your tables in that copy with duckdb; open the original only with read_only=True.
When the pipeline is complete, print os.path.abspath('sql') and reply with \
<finish>{{"sql_dir": "<that absolute path>"}}</finish>."""


def _require(cfg: Mapping[str, Any]) -> None:
    """Fail before any rollout on a worker or workspace this benchmark cannot use."""
    worker, workspace = cfg.get("worker"), cfg.get("workspace")
    if worker is not None and str(worker) != "llm":
        raise ValueError(
            f"bench=dacomp_de needs worker=llm (worker={worker} replays reference code, and DAComp-DE "
            "ships none); set worker=llm and STATEGUARD_WORKER_BASE_URL / STATEGUARD_WORKER_MODEL"
        )
    if workspace is not None and str(workspace) != "sandbox":
        raise ValueError(
            f"bench=dacomp_de needs workspace=sandbox (workspace={workspace} runs in the runner's process, "
            "so the agent's SQL files would land in the runner's directory, shared by both arms)"
        )
    if worker is not None:
        EndpointConfig.from_env("worker")  # names the missing variable now, not after the first task


def table_units(example: ExampleSpec) -> dict[str, int]:
    """Configured table -> unit id (1..N in the evaluation config's layer and table order)."""
    return {table: i for i, table in enumerate(example.tables(), start=1)}


def unit_parents(example: ExampleSpec, reference: Sources) -> dict[int, list[int]]:
    """Pa(T) over units: the nearest scored tables a table's reference SQL reads (through unscored ones)."""
    units = table_units(example)
    stem_to_table = {(spec.sql_name or table).lower(): table for table, (_, spec) in example.tables().items()}
    graph = table_dependencies(reference)

    def scored_ancestors(stem: str, seen: set[str]) -> set[str]:
        found: set[str] = set()
        for parent in graph.parents.get(stem, []):
            if parent in seen:
                continue
            seen.add(parent)
            found |= {stem_to_table[parent]} if parent in stem_to_table else scored_ancestors(parent, seen)
        return found

    out: dict[int, list[int]] = {}
    for stem, table in stem_to_table.items():
        parents = sorted(units[t] for t in scored_ancestors(stem, {stem}) if t != table)
        if parents:
            out[units[table]] = parents
    return out


def merged_sources(base: Sources, agent: Sources) -> Sources:
    """The task folder's SQL with the agent's files laid over it (a moved table leaves its old layer)."""
    written = {table for tables in agent.values() for table in tables}
    out = {layer: {t: sql for t, sql in tables.items() if t not in written} for layer, tables in base.items()}
    for layer, tables in agent.items():
        out.setdefault(layer, {}).update(tables)
    return {layer: tables for layer, tables in out.items() if tables}


def answers_digest(answers: Mapping[Any, Any]) -> str:
    """Names the saved score of one answer; equal answers (hence equal submissions) share it."""
    text = json.dumps({str(k): v for k, v in answers.items()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: DACompTask
    example: ExampleSpec
    gold_db: Path
    units: dict[str, int]


class DACompRunScore(BaseModel):
    """One (task, arm): the example's CFS and CS scores and the table verdicts behind them."""

    model_config = ConfigDict(frozen=True)

    scoring_version: str = SCORING_VERSION
    task_id: str
    arm: str = ""
    kind: Literal["impl", "evol"]
    digest: str = Field(description="answers_digest of the answer scored.")
    sql_dir: str | None = Field(description="The agent's sql folder laid over the task's SQL, if any.")
    note: str | None = Field(default=None, description="Why the agent's folder was not used, if it was not.")
    units: dict[str, int] = Field(default_factory=dict, description="Table -> unit id in ArmResult.correct.")
    cfs: ExampleScore | None = None
    cs: ExampleScore | None = None
    error: str | None = Field(default=None, description="The rollout crashed: the example is not scored.")

    @property
    def cfs_score(self) -> float | None:
        return None if self.error or self.cfs is None else self.cfs.score

    @property
    def cs_score(self) -> float | None:
        return None if self.error or self.cs is None else self.cs.score


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _turn(task: DACompTask, max_spec_chars: int) -> Turn:
    root = task.root.resolve()
    spec = task.spec_file.read_text(encoding="utf-8")
    rel = task.spec_file.relative_to(task.root).as_posix()
    if len(spec) > max_spec_chars:
        spec = spec[:max_spec_chars] + f"\n[... truncated; read the whole file at BASE_PATH/{rel}]"
    if task.kind == "evol":
        question = f"Change the existing pipeline as {rel} requests:\n\n{spec.strip()}"
    else:
        question = f"Implement the pipeline that {rel} specifies:\n\n{spec.strip()}"
    question = f"{question}\n\n{TRACK_INSTRUCTIONS[task.kind]}"
    kind = "evolution: change an existing pipeline" if task.kind == "evol" else "implementation: build it"
    context = CONTEXT_TEXT.format(kind=kind, root=root, spec=rel, start_db=task.start_db.name)
    return Turn(turn_id=TURN, context=context, question=question, answer=None)


class DACompDEBench(Benchmark):
    name = "dacomp_de"
    flow = DACOMP_DE
    scoring_version = SCORING_VERSION

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._run_dir: Path | None = None
        self._modes: tuple[str, ...] = ("cfs", "cs")
        self._timeout_s = 300.0
        self._keep_builds = False
        self.scores: dict[tuple[str, str], DACompRunScore] = {}  # (task_id, digest) -> score, this process

    # -- loading
    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        _require(cfg)
        data_dir = Path(cfg.get("data_dir") or "data/dacomp_de")
        tasks_dir = data_dir / "tasks" if (data_dir / "tasks").is_dir() else data_dir
        gold_dir = Path(cfg.get("gold_dir") or data_dir / "gold")
        config = load_eval_config(cfg.get("eval_config") or data_dir / "evaluation_config_compare.yaml")
        kinds = [str(k) for k in cfg.get("kinds") or ("impl", "evol")]
        if set(kinds) - {"impl", "evol"}:
            raise ValueError(f"bench.kinds={kinds}: use impl and/or evol")
        self._modes = tuple(str(m) for m in cfg.get("modes") or ("cfs", "cs"))
        if "cfs" not in self._modes or set(self._modes) - {"cfs", "cs"}:
            raise ValueError(f"bench.modes={list(self._modes)}: use [cfs] or [cfs, cs] (CFS scores units)")
        self._timeout_s = float(cfg.get("timeout_s") or 300)
        self._keep_builds = bool(cfg.get("keep_builds", False))
        self._run_dir = Path(cfg["run_dir"]).resolve() if cfg.get("run_dir") else None
        reference_dir = Path(cfg["reference_sql_dir"]) if cfg.get("reference_sql_dir") else None
        folders = find_tasks(tasks_dir)
        if not folders:
            raise TaskFolderError(
                f"{tasks_dir}: no dacomp-de-<impl|evol>-NNN task folders (with run.py) found; "
                "`make data BENCH=dacomp_de` fetches them"
            )
        out = []
        for folder in folders:
            task = load_task(folder)
            if task.kind not in kinds:
                continue
            example = config.example(task.example_id)
            gold = gold_db_path(gold_dir, task.example_id, example.database_file)
            reference = read_sql((reference_dir / task.example_id if reference_dir else folder) / "sql")
            units = table_units(example)
            self._entries[task.example_id] = _Entry(task=task, example=example, gold_db=gold, units=units)
            root = folder.resolve()
            turn = _turn(task, int(cfg.get("max_spec_chars") or 20000))
            agent_task = Task(task_id=task.example_id, turns=[turn], base_path=str(root))
            out.append(
                EvalTask(
                    task_id=task.example_id,
                    task=agent_task,
                    data_dir=root,
                    domain=task.project,
                    level=task.kind,
                    parents=unit_parents(example, reference),
                )
            )
        if not out:
            raise TaskFolderError(f"{tasks_dir}: no task of kinds {kinds}; check bench.kinds")
        return out

    def worker_protocol(self, task: EvalTask) -> WorkerProtocol:
        """The CodeAct loop of the benchmark's agents (`prompts.py`); the track rides in the turn."""
        return dacomp_protocol()

    def _entry(self, task: EvalTask) -> _Entry:
        if task.task_id not in self._entries:
            raise KeyError(f"task {task.task_id} was not loaded by this DACompDEBench; call load() first")
        return self._entries[task.task_id]

    # -- the agent's submission
    def submission_dir(self, task: EvalTask, answers: Mapping[int, Any]) -> tuple[Path | None, str | None]:
        """(the agent's sql folder, None) or (None, why it cannot be used)."""
        answer = answers.get(TURN)
        raw = answer.get("sql_dir") if isinstance(answer, dict) else None
        if not isinstance(raw, str) or not raw.strip():
            return None, "the answer names no sql_dir"
        path = Path(raw.strip()).expanduser()
        if not path.is_absolute():
            return None, f"sql_dir {raw!r} is not an absolute path"
        path = path.resolve()
        if self._run_dir is not None:
            mine = (self._run_dir / "tasks" / task.task_id).resolve()
            if not path.is_relative_to(mine):
                return None, f"sql_dir {path} is outside this task's run folder {mine}"
        if path.name != "sql" and (path / "sql").is_dir():
            path = path / "sql"  # the working folder that holds sql/ was named
        if not path.is_dir():
            return None, f"sql_dir {path} is not a folder"
        return path, None

    def collect(self, task: EvalTask, arm_dir: str | Path, answers: Mapping[int, Any]) -> dict[int, Any]:
        """For a runner that knows the arm folder: point the answer at `<arm_dir>/scratch/sql` when
        the agent wrote files there but did not name them (or named an unusable folder)."""
        out = dict(answers)
        found = Path(arm_dir).resolve() / "scratch" / "sql"
        if self.submission_dir(task, out)[0] is None and found.is_dir():
            previous = out.get(TURN)
            out[TURN] = {**(previous if isinstance(previous, dict) else {}), "sql_dir": str(found)}
        return out

    def units(self, task: EvalTask) -> list[int]:
        """Every scored unit of a task (its tables), e.g. to mark them all wrong when a rollout failed."""
        return sorted(self._entry(task).units.values())

    def after_run(self, run_dir: str | Path) -> list[Path]:
        """Write `<run_dir>/dacomp_de_summary.json`: CFS/CS per (task, arm) and the per-arm means."""
        scores = task_scores(run_dir)
        rows = [
            {
                "task_id": s.task_id,
                "arm": s.arm,
                "kind": s.kind,
                "cfs": s.cfs_score,
                "cs": s.cs_score,
                "note": s.note,
                "error": s.error,
            }
            for s in scores
        ]
        payload = {"scoring_version": SCORING_VERSION, "arms": summarize_scores(scores), "tasks": rows}
        path = Path(run_dir) / "dacomp_de_summary.json"
        _write_atomic(path, json.dumps(payload, indent=1) + "\n")
        return [path]

    # -- scoring
    def score(self, task: EvalTask, answers: Mapping[int, Any]) -> dict[int, bool | None]:
        entry = self._entry(task)
        sql_dir, note = self.submission_dir(task, answers)
        if note is not None:
            log.warning("%s: %s; the task folder's SQL is scored as shipped", task.task_id, note)
        sources = merged_sources(read_sql(entry.task.root / "sql"), read_sql(sql_dir) if sql_dir else {})
        digest = answers_digest(answers)
        saved = self._run_dir / SCORES_DIR / task.task_id / f"{digest}.json" if self._run_dir else None
        with tempfile.TemporaryDirectory(prefix="dacomp_de_") as tmp:
            work = saved.with_suffix("") if saved is not None and self._keep_builds else Path(tmp)
            result = evaluate_submission(
                entry.example,
                sources,
                entry.task.start_db,
                entry.gold_db,
                work,
                modes=self._modes,
                timeout_s=self._timeout_s,
            )
        record = DACompRunScore(
            task_id=task.task_id,
            kind=entry.task.kind,
            digest=digest,
            note=note,
            units=entry.units,
            sql_dir=None if sql_dir is None else str(sql_dir),
            cfs=result.cfs,
            cs=result.cs,
        )
        self.scores[(task.task_id, digest)] = record
        if saved is not None:
            _write_atomic(saved, record.model_dump_json(indent=1) + "\n")
        matched = result.cfs.table_correct()
        return {unit: matched.get(table, False) for table, unit in entry.units.items()}


def task_scores(run_dir: str | Path, results: Iterable[ArmResult] | None = None) -> list[DACompRunScore]:
    """CFS and CS per (task, arm) of a DAComp-DE run, from the scores `score` saved.

    A crashed rollout is not scored (cfs = cs = None, its `error` kept), as in the run's summary; a
    result whose saved score is missing gets cfs = cs = None and a note. Both are left out of the
    means rather than counted as 0.
    """
    folder = Path(run_dir) / SCORES_DIR
    out = []
    for r in results if results is not None else read_results(run_dir):
        if r.bench != DACompDEBench.name:
            continue
        kind: Literal["impl", "evol"] = "evol" if r.level == "evol" else "impl"
        digest = answers_digest(r.answers)
        path = folder / r.task_id / f"{digest}.json"
        if r.error:
            out.append(
                DACompRunScore(
                    task_id=r.task_id, arm=r.arm, kind=kind, digest=digest, sql_dir=None, error=r.error
                )
            )
        elif path.is_file():
            saved = DACompRunScore.model_validate_json(path.read_text(encoding="utf-8"))
            out.append(saved.model_copy(update={"arm": r.arm}))
        else:
            note = f"{path}: no saved score (the run was scored elsewhere, or the file was removed)"
            out.append(
                DACompRunScore(
                    task_id=r.task_id, arm=r.arm, kind=kind, digest=digest, sql_dir=None, note=note
                )
            )
    return out


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 2) if kept else None


def summarize_scores(scores: Iterable[DACompRunScore]) -> dict[str, dict[str, float | None]]:
    """Per arm, the paper's three columns: Impl CFS, Impl CS, Evol CFS (means over examples)."""
    by_arm: dict[str, list[DACompRunScore]] = {}
    for s in scores:
        by_arm.setdefault(s.arm, []).append(s)
    return {
        arm: {
            "impl_cfs": _mean([s.cfs_score for s in rows if s.kind == "impl"]),
            "impl_cs": _mean([s.cs_score for s in rows if s.kind == "impl"]),
            "evol_cfs": _mean([s.cfs_score for s in rows if s.kind == "evol"]),
        }
        for arm, rows in sorted(by_arm.items())
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="CFS / CS per arm of a DAComp-DE run folder.")
    parser.add_argument("run_dir", help="a `make eval BENCH=dacomp_de` run folder (holds results/)")
    args = parser.parse_args(argv)
    summary = summarize_scores(task_scores(args.run_dir))
    print(f"{'arm':<14}{'Impl CFS':>10}{'Impl CS':>10}{'Evol CFS':>10}")
    for arm, row in summary.items():
        cells = "".join(f"{'-' if v is None else f'{v:.2f}':>10}" for v in row.values())
        print(f"{arm:<14}{cells}")


if __name__ == "__main__":
    main()
