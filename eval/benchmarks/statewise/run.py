"""`make eval BENCH=statewise`: the StateWise benchmark, all conditions, ablations and sequences.

    python -m eval.benchmarks.statewise.run                              # dev split, scripted planner
    python -m eval.benchmarks.statewise.run split=heldout workers=1
    python -m eval.benchmarks.statewise.run limit=5 'conditions=[corrupted,statewise]' sequences=false
    STATEGUARD_WORKER_BASE_URL=http://127.0.0.1:8765/v1 STATEGUARD_WORKER_MODEL=local \
        python -m eval.benchmarks.statewise.run planner=llm limit=3      # any OpenAI-compatible endpoint plans

Every case is one job (all conditions in turn, in the worker's sandboxes); every sequence is
another. Each job's results are written atomically to `<run_dir>/results/<job>.jsonl`, so
`resume=true` skips finished jobs. The tables (Markdown, side by side with the paper's figures)
go to `<run_dir>/tables.md` and are printed; the numbers to `<run_dir>/summary.json`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel
from tqdm import tqdm

from eval.benchmarks.statewise.case import Case
from eval.benchmarks.statewise.execute import (
    CONDITIONS,
    RunResult,
    Runtime,
    run_case,
    run_sequence,
    sequence_condition,
)
from eval.benchmarks.statewise.generate import generate, summary
from eval.benchmarks.statewise.metrics import (
    ConditionRow,
    SequenceRow,
    condition_rows,
    render_tables,
    sequence_rows,
)
from stateguard.artifacts.run_folder import RunFolder

log = logging.getLogger(__name__)
_RUNTIME: Runtime | None = None  # a pool worker's runtime, for the (work dir, planner) in _RUNTIME_KEY
_RUNTIME_KEY: dict[str, tuple[str, str]] = {}


class StatewiseSummary(BaseModel):
    split: str
    planner: str
    cases: dict[str, Any]
    conditions: list[ConditionRow]
    sequences: list[SequenceRow]
    held_out: bool
    wall_s: float
    tables: str


def _planner_factory(kind: str) -> Any:
    if kind == "scripted":
        return None  # Runtime's default: the scripted planner
    if kind != "llm":
        raise ValueError(f"planner={kind!r}: use scripted or llm")
    from stateguard.llm import EndpointConfig, LLMClient
    from statewise.llm_planner import LLMPlanner

    client = LLMClient(EndpointConfig.from_env("worker", temperature=0.0, max_tokens=400, timeout_s=900.0))
    return lambda interface: LLMPlanner(client, interface.spec)


def _job(
    kind: str, case: Case, conditions: list[str], work: str, planner: str, runtime: Runtime | None = None
) -> list[dict[str, Any]]:
    """One job; in a pool worker the process's runtime (its sandboxes) is reused across its jobs."""
    global _RUNTIME
    if runtime is None:
        key = (work, planner)
        if _RUNTIME is None or _RUNTIME_KEY.get("key") != key:
            if _RUNTIME is not None:
                _RUNTIME.close()
            _RUNTIME = Runtime(Path(work) / f"w{os.getpid()}", planner_factory=_planner_factory(planner))
            _RUNTIME_KEY["key"] = key
        runtime = _RUNTIME
    runner = run_case if kind == "case" else run_sequence
    return [r.model_dump(mode="json") for r in runner(runtime, case, conditions)]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(path)


def _select(cfg: DictConfig) -> list[Case]:
    splits = ["dev", "heldout"] if cfg.split == "all" else [str(cfg.split)]
    cases = [c for s in splits for c in generate(s, tuple(cfg.interfaces))]
    if cfg.case_ids:
        wanted = {str(c) for c in cfg.case_ids}
        unknown = wanted - {c.case_id for c in cases}
        if unknown:
            raise ValueError(f"case_ids {sorted(unknown)} are not in split={cfg.split}")
        cases = [c for c in cases if c.case_id in wanted]
    if cfg.limit:
        per: dict[str, int] = {}
        kept = []
        for c in cases:
            per[c.interface] = per.get(c.interface, 0) + 1
            if per[c.interface] <= int(cfg.limit):
                kept.append(c)
        cases = kept
    return cases


def run(cfg: DictConfig) -> StatewiseSummary:
    conditions = [str(c) for c in cfg.conditions]
    seq_conditions = [str(c) for c in cfg.sequence_conditions] if cfg.sequences else []
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:
        raise ValueError(f"unknown conditions {unknown}: use {', '.join(CONDITIONS)}")
    for name in seq_conditions:
        sequence_condition(name)  # names both parts or fails naming the bad one
    _planner_factory(str(cfg.planner))  # a missing endpoint fails here, before any job
    run_dir = Path(cfg.run_dir)
    results_dir = RunFolder(run_dir).results
    if not cfg.resume and results_dir.is_dir() and any(results_dir.iterdir()):
        raise FileExistsError(
            f"{run_dir} already holds results; pass resume=true to continue it, or another run_dir"
        )
    results_dir.mkdir(parents=True, exist_ok=True)
    RunFolder(run_dir).config.write_text(OmegaConf.to_yaml(cfg, resolve=True), encoding="utf-8")
    cases = _select(cfg)
    jobs = [("case", c, conditions) for c in cases] + [
        ("seq", c, seq_conditions) for c in cases if c.later and seq_conditions
    ]
    todo = [j for j in jobs if not (results_dir / f"{j[1].case_id}.{j[0]}.jsonl").is_file()]
    start = time.perf_counter()
    work = str((run_dir / "work").resolve())
    with tqdm(
        total=len(jobs), initial=len(jobs) - len(todo), desc="statewise", unit="job", disable=not cfg.progress
    ) as bar:
        if int(cfg.workers) > 1 and len(todo) > 1:
            with ProcessPoolExecutor(max_workers=int(cfg.workers), mp_context=get_context("spawn")) as pool:
                futures = {
                    pool.submit(_job, k, c, conds, work, str(cfg.planner)): (k, c) for k, c, conds in todo
                }
                for fut in as_completed(futures):
                    kind, case = futures[fut]
                    _write(results_dir / f"{case.case_id}.{kind}.jsonl", fut.result())
                    bar.update()
        else:
            local = Runtime(Path(work) / "local", planner_factory=_planner_factory(str(cfg.planner)))
            try:
                for kind, case, conds in todo:
                    rows_out = _job(kind, case, conds, work, str(cfg.planner), runtime=local)
                    _write(results_dir / f"{case.case_id}.{kind}.jsonl", rows_out)
                    bar.update()
            finally:
                local.close()
    singles: list[RunResult] = []
    seq_results: list[RunResult] = []
    for kind, case, _conds in jobs:
        path = results_dir / f"{case.case_id}.{kind}.jsonl"
        rows_ = [
            RunResult.model_validate_json(line)
            for line in path.read_text(encoding="utf-8").splitlines()
            if line
        ]
        (singles if kind == "case" else seq_results).extend(rows_)
    rows = condition_rows(singles, conditions)
    seq_rows = sequence_rows(seq_results, seq_conditions)
    title = f"StateWise benchmark, split={cfg.split}, planner={cfg.planner} ({len(cases)} cases)"
    tables = render_tables(rows, seq_rows, title=title)
    out = StatewiseSummary(
        split=str(cfg.split),
        planner=str(cfg.planner),
        cases=summary(cases),
        conditions=rows,
        sequences=seq_rows,
        held_out=cfg.split != "dev",
        wall_s=round(time.perf_counter() - start, 1),
        tables=tables,
    )
    RunFolder(run_dir).summary.write_text(out.model_dump_json(indent=1) + "\n", encoding="utf-8")
    (run_dir / "tables.md").write_text(tables, encoding="utf-8")
    return out


@hydra.main(version_base=None, config_path="../../../configs", config_name="statewise")
def main(cfg: DictConfig) -> None:
    out = run(cfg)
    print(out.tables)
    print(
        f"cases: {json.dumps(out.cases['kind'])} {json.dumps(out.cases['interface'])}; sequences: {out.cases['sequences']}"
    )
    print(f"run folder: {cfg.run_dir} (results/*.jsonl, summary.json, tables.md); {out.wall_s} s")


if __name__ == "__main__":
    main()
