"""`make eval`: run agents with and without StateGuard on a benchmark, resumably, in parallel.

    python -m eval.runner                                   # synth, both arms, scripted worker + rules
    python -m eval.runner bench=longds bench.data_dir=data/longds worker=llm manager=llm
    python -m eval.runner run_dir=runs/eval/x resume=true   # continue a killed run
    python -m eval.runner limit=3 'task_ids=[penguins_s224049_t26]' workers=2

Every (task, arm) pair is one job: a rollout (`stateguard.rollout`) with the benchmark's flow,
in its own folder `<run_dir>/tasks/<task_id>/<arm>/` (trace.jsonl, states.sqlite, result.json),
then scored by the benchmark's scorer and written atomically to `<run_dir>/results/`. Jobs run
in a process pool (`workers`) or on Ray (`backend=ray`); the parent scores and writes, so each
result is written once. With `resume=true` finished pairs are skipped and half-done folders are
cleared and rerun, so a killed run loses at most the jobs in flight and counts nothing twice.
The resolved config is saved as `<run_dir>/config.yaml`; the summary table (accuracy, DCR,
repairs, manager calls, wall time per arm) is printed and saved as `<run_dir>/summary.json`.

Arms: `baseline` (worker + harness), `stateguard` (+ the `manager` policy), and the ablations
`observer` (a model without state), `freeform` (free-form memory), `llm`, `hierarchical`.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from eval.benchmarks.base import EvalTask
from eval.benchmarks.registry import get_benchmark
from eval.benchmarks.variants import variant_fields
from eval.components import check_workspace, make_manager, make_worker, make_workspace
from eval.report import RunSummary, render_summary, summarize
from eval.results import ArmResult, read_results, result_path, write_result
from stateguard.flows import FlowConfig
from stateguard.lifecycle import Regime
from stateguard.rollout import rollout
from stateguard.trace import Trace

__all__ = ["ARMS", "run", "run_job"]

log = logging.getLogger(__name__)
ARMS = ("baseline", "stateguard", "observer", "freeform", "llm", "hierarchical")


def _manager_kind(arm: str, cfg: dict[str, Any]) -> str | None:
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}: use one of {', '.join(ARMS)}")
    return None if arm == "baseline" else str(cfg["manager"]) if arm == "stateguard" else arm


def run_job(task: EvalTask, arm: str, flow: FlowConfig, cfg: dict[str, Any], arm_dir: str) -> dict[str, Any]:
    """One rollout; returns the raw outcome (the parent scores it). Never raises for a task."""
    out = Path(arm_dir)
    if out.exists():
        shutil.rmtree(out)  # a half-done folder from a killed run
    start = time.perf_counter()
    calls = Trace(out / "llm_calls.jsonl")
    kind = _manager_kind(arm, cfg)
    name = (cfg.get("bench") or {}).get("name")
    bench = get_benchmark(str(name)) if name else None  # its optional hooks: worker_protocol, collect
    try:
        workspace = make_workspace(str(cfg["workspace"]), task.data_dir, out, cfg.get("sandbox"))
        try:
            native = getattr(bench, "worker_protocol", None)
            worker = make_worker(str(cfg["worker"]), trace=calls, faults=task.faults, seed=int(cfg["seed"]),
                                 protocol=native(task) if native else None, response=cfg.get("response"))  # fmt: skip
            manager = None if kind is None else make_manager(kind, trace=calls, context_budget_tokens=int(
                cfg["harness"]["context_budget_tokens"]), semantic=cfg.get("semantic"))
            result = rollout(task.task, worker, workspace, flow=flow, manager=manager, run_dir=out,
                             harness_config=dict(cfg["harness"]))  # fmt: skip
        finally:
            workspace.close()
        answers = result.answers
        collect = getattr(bench, "collect", None)
        if collect is not None:  # e.g. DAComp-DE: the SQL files the agent wrote in its scratch folder
            answers = collect(task, out, answers)
    except Exception as exc:  # noqa: BLE001 - a failing task is recorded, the run goes on
        return {"answers": {}, "error": f"{type(exc).__name__}: {exc}", "wall_s": time.perf_counter() - start}
    finally:
        calls.close()
    return {"answers": answers, "repairs": result.repairs, "manager_calls": result.manager_llm_calls,
            "committed_states": len(result.committed_states), "stale_states": len(result.stale_states),
            "degraded": result.degraded, "wall_s": time.perf_counter() - start, "error": None}  # fmt: skip


def _select(tasks: list[EvalTask], cfg: DictConfig) -> list[EvalTask]:
    wanted = [str(t) for t in cfg.get("task_ids") or []]
    if wanted:
        known = {t.task_id for t in tasks} | {t.base_task for t in tasks}  # a task id selects all its variants
        missing = [t for t in wanted if t not in known]
        if missing:
            raise ValueError(f"task_ids {missing} are not in bench={cfg.bench.name} (it has {len(known)} tasks)")
        tasks = [t for t in tasks if t.task_id in wanted or t.base_task in wanted]
    limit = cfg.get("limit")
    return tasks[: int(limit)] if limit else tasks


def _jobs_out(jobs: list[tuple[EvalTask, str]], cfg: DictConfig, flow: FlowConfig, run_dir: Path,
              ) -> Iterator[tuple[EvalTask, str, dict[str, Any]]]:  # fmt: skip
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    dirs = {(t.task_id, a): str(run_dir / "tasks" / t.task_id / a) for t, a in jobs}
    workers = int(cfg.workers)
    if cfg.backend == "ray":
        from stateguard.parallel import map_tasks

        def one(job: tuple[EvalTask, str]) -> dict[str, Any]:
            return run_job(job[0], job[1], flow, plain, dirs[(job[0].task_id, job[1])])

        for (task, arm), outcome in map_tasks(one, jobs, in_flight=workers):
            yield task, arm, outcome
    elif workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            futures = {pool.submit(run_job, t, a, flow, plain, dirs[(t.task_id, a)]): (t, a) for t, a in jobs}
            for fut in as_completed(futures):
                task, arm = futures[fut]
                yield task, arm, fut.result()
    else:
        for task, arm in jobs:
            yield task, arm, run_job(task, arm, flow, plain, dirs[(task.task_id, arm)])


def _flow(cfg: DictConfig, default: FlowConfig) -> FlowConfig:
    """The benchmark's flow (Table 3) unless `flow=turn_aligned|segment` overrides the regime."""
    kind = cfg.get("flow")
    if kind in (None, "", "default"):
        return default
    if kind == "turn_aligned":
        return default.model_copy(update={"name": f"{default.name}-turn", "regime": Regime.TURN_ALIGNED})
    if kind == "segment":
        return FlowConfig(name=f"{default.name}-segment{cfg.review_every}", regime=Regime.SEGMENT_INDUCED,
                          review_every=int(cfg.review_every), budget_unit="task",
                          baseline_budget=10_000, stateguard_budget=10_000)  # fmt: skip
    raise ValueError(f"flow={kind!r}: use default, turn_aligned or segment")


def run(cfg: DictConfig) -> RunSummary:
    run_dir = Path(cfg.run_dir)
    bench = get_benchmark(str(cfg.bench.name))
    flow = _flow(cfg, bench.flow)
    arms = [str(a) for a in cfg.arms]
    for arm in arms:
        _manager_kind(arm, {"manager": cfg.manager})
    check_workspace(str(cfg.workspace), OmegaConf.to_container(cfg.get("sandbox") or {}, resolve=True))  # type: ignore[arg-type]
    tasks = _select(bench.load(cfg.bench), cfg)
    if not cfg.resume and (run_dir / "results").is_dir() and any((run_dir / "results").iterdir()):
        raise FileExistsError(f"{run_dir} already holds results; pass resume=true to continue it, or another run_dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True), encoding="utf-8")
    jobs = [(t, a) for t in tasks for a in arms if not result_path(run_dir, t.task_id, a).is_file()]
    done = len(tasks) * len(arms) - len(jobs)
    running: dict[str, list[int]] = {a: [0, 0] for a in arms}
    start = time.perf_counter()
    with tqdm(total=len(tasks) * len(arms), initial=done, desc=f"eval {bench.name}", unit="run",
              disable=not cfg.progress) as bar:  # fmt: skip
        for task, arm, outcome in _jobs_out(jobs, cfg, flow, run_dir):
            if outcome["error"] is None:
                correct = bench.score(task, outcome["answers"])
            else:  # a failed rollout: every unit of the task is wrong
                units = getattr(bench, "units", None)
                correct = dict.fromkeys(units(task) if units else [t.turn_id for t in task.task.turns], False)
            write_result(run_dir, ArmResult(
                bench=bench.name, task_id=task.task_id, arm=arm, domain=task.domain, level=task.level,
                correct=correct, parents=task.parents, answers=outcome["answers"],
                run_dir=str(run_dir / "tasks" / task.task_id / arm), **variant_fields(task),
                **{k: outcome[k] for k in ("repairs", "manager_calls", "committed_states", "stale_states",
                                           "degraded", "wall_s", "error") if k in outcome},
            ))  # fmt: skip
            if outcome["error"]:
                log.warning("%s/%s failed: %s", task.task_id, arm, outcome["error"])
            scored = [v for v in correct.values() if v is not None]
            running[arm][0] += sum(scored)
            running[arm][1] += len(scored)
            bar.set_postfix({a: f"{c / n:.0%}" for a, (c, n) in running.items() if n})
            bar.update()
    wanted = {t.task_id for t in tasks}
    results = [r for r in read_results(run_dir) if r.task_id in wanted and r.arm in arms]
    summary = summarize(results, seed=int(cfg.seed), resamples=int(cfg.bootstrap_resamples))
    summary.wall_s = round(time.perf_counter() - start, 2)
    (run_dir / "summary.json").write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    after_run = getattr(bench, "after_run", None)
    if after_run is not None:  # DABstep: leaderboard JSONL per arm; DAComp-DE: dacomp_de_summary.json
        after_run(run_dir)
    return summary


@hydra.main(version_base=None, config_path="../configs", config_name="eval")
def main(cfg: DictConfig) -> None:
    summary = run(cfg)
    print(render_summary(summary))
    print(f"\nrun folder: {cfg.run_dir} (results/, tasks/<task>/<arm>/trace.jsonl; `make tables RUN={cfg.run_dir}`)")


if __name__ == "__main__":
    main()
