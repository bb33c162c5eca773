"""`make eval`: run agents with and without StateGuard on a benchmark, resumably, in parallel.

    python -m eval.runner                                   # synth, both arms, scripted worker + rules
    python -m eval.runner bench=longds bench.data_dir=data/longds worker=llm manager=llm
    python -m eval.runner run_dir=runs/eval/x resume=true   # continue a killed run
    python -m eval.runner limit=3 'task_ids=[penguins_s224049_t26]' workers=2

Every (task, arm) pair is one job: a rollout (`stateguard.rollout`) with the benchmark's flow,
in its own folder `<run_dir>/tasks/<task_id>/<arm>/` (trace.jsonl, states.sqlite, result.json),
then scored by the benchmark's scorer and written atomically to `<run_dir>/results/`. Jobs run
in worker processes (`workers`; `eval.jobs`: a worker that dies has its job retried, and no
worker outlives the runner) or on Ray (`backend=ray`); `workers=1` runs them in the runner's own
process. The parent scores and writes, so each result is written once.

Start-up checks everything it can before the first task (`prepare`): the typed config
(`eval.config`), the benchmark's files, each task's data folder, the reference code the scripted
worker replays, the LLM endpoints the arms need, and on resume the saved config and every results
file. Any problem stops the run with exit status 2 and a message naming the file or key and the
fix. With `resume=true` finished pairs are skipped; crashed pairs, half-done folders and results
files that do not parse (moved to `results/invalid/`, and named) are rerun; a config that differs
from the saved `config.yaml` in anything that changes results is refused unless
`resume_with_changed_config=true` (the new one is then saved beside it, never over it).
The summary table (accuracy, DCR, repairs, manager calls, degraded and crashed rollouts, wall
time per arm) is printed and saved as `<run_dir>/summary.json`; the exit status is 1 when a
rollout crashed.

Arms: `baseline` (worker + harness), `stateguard` (+ the `manager` policy), and the ablations
`observer` (a model without state), `freeform` (free-form memory), `llm`, `hierarchical`.
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
import yaml
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.registry import get_benchmark
from eval.benchmarks.variants import unmatched_selection, variant_fields
from eval.components import (
    check_components,
    check_workspace,
    endpoint_settings,
    llm_settings,
    make_manager,
    make_worker,
    make_workspace,
    quiet_http_logs,
)
from eval.config import ConfigError, EvalConfig, JobSettings, arm_names, changed_keys, validate_config
from eval.jobs import exit_on_signals, run_in_pool
from eval.report import RunSummary, render_summary, summarize
from eval.results import ArmResult, JobOutcome, read_results, scan_results, write_result
from stateguard.artifacts.run_folder import RolloutFolder, RunFolder
from stateguard.flows import FlowConfig
from stateguard.lifecycle import Regime
from stateguard.llm import EndpointConfig
from stateguard.policies.registry import MODEL_MANAGERS
from stateguard.rollout import rollout
from stateguard.trace import Trace
from stateguard.workers.registry import MODEL_WORKERS

__all__ = ["Prepared", "execute", "prepare", "run", "run_cli", "run_job"]

log = logging.getLogger(__name__)


def _manager_kind(arm: str, manager: str) -> str | None:
    """The manager policy an arm runs (`manager` is the config's choice for the stateguard arm)."""
    if arm not in (names := arm_names()):
        raise ValueError(f"arm {arm!r}: use one of {', '.join(names)}")
    return None if arm == "baseline" else manager if arm == "stateguard" else arm


def _clear(folder: Path) -> None:
    """Remove a half-done arm folder; a kernel of a dead worker may still be leaving it, so retry."""
    for attempt in range(5):
        try:
            shutil.rmtree(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))


def _drop_checkpoints(folder: Path) -> None:
    """A finished rollout's workspace checkpoints are only needed inside it; a synth run leaves
    gigabytes of them (every checkpoint copies the small values and refers to the large arrays'
    parts), so they go, parts included, unless `keep_checkpoints`."""
    from stateguard.sandbox.checkpoints import remove_all  # the sandbox's file layout, not re-listed here

    remove_all(folder)


def run_job(task: EvalTask, arm: str, flow: FlowConfig, job: JobSettings, arm_dir: str) -> JobOutcome:
    """One rollout; returns the raw outcome (the parent scores it). Never raises for a task: a
    rollout that raises is returned as crashed, with the error. `job` was checked at start-up."""
    out = Path(arm_dir)
    start = time.perf_counter()
    calls: Trace | None = None
    try:
        _clear(out)  # a half-done folder from a killed run
        calls = Trace(RolloutFolder(out).llm_calls)
        kind = _manager_kind(arm, job.manager)
        bench = get_benchmark(job.bench) if job.bench else None
        workspace = make_workspace(job.workspace, task.data_dir, out, job.sandbox)
        try:
            worker = make_worker(
                job.worker,
                trace=calls,
                faults=task.faults,
                seed=job.seed,
                reference=task.task,
                protocol=bench.worker_protocol(task) if bench else None,
                response=job.response,
                endpoint=job.worker_llm,
            )
            manager = (
                None
                if kind is None
                else make_manager(
                    kind,
                    trace=calls,
                    context_budget_tokens=(job.harness.context_budget_tokens),
                    llm=job.llm,
                    semantic=job.semantic,
                )
            )
            result = rollout(
                task.task.agent_view(),
                worker,
                workspace,
                flow=flow,
                manager=manager,
                run_dir=out,
                harness_config=job.harness.model_dump(),
                arm=arm,
            )
        finally:
            workspace.close()
            if not job.keep_checkpoints:
                _drop_checkpoints(RolloutFolder(out).checkpoints)
        # e.g. DAComp-DE: the SQL files the agent wrote in its scratch folder
        answers = bench.collect(task, out, result.answers) if bench else result.answers
    except Exception as exc:  # noqa: BLE001 - a crashed task is recorded, the run goes on
        return JobOutcome.crash(f"{type(exc).__name__}: {exc}", 1, time.perf_counter() - start)
    finally:
        if calls is not None:
            calls.close()
    reasons = list(getattr(result, "degraded_reasons", []) or [])
    return JobOutcome(
        answers=answers,
        repairs=result.repairs,
        manager_calls=result.manager_llm_calls,
        manager_fallbacks=result.manager_fallbacks,
        manager_usage=result.manager_usage,
        committed_states=len(result.committed_states),
        stale_states=len(result.stale_states),
        degraded=bool(result.degraded or reasons),
        degraded_reasons=reasons,
        degraded_turns=sorted(getattr(result, "degraded_turns", {}) or {}),
        wall_s=time.perf_counter() - start,
    )


def _select(tasks: list[EvalTask], cfg: EvalConfig) -> list[EvalTask]:
    # dev ids may be written as the README names them (transport/driving/task1) or as stored (`__`)
    wanted = [str(t).replace("/", "__") for t in cfg.task_ids]
    if wanted:
        known = {t.task_id for t in tasks} | {
            t.base_task for t in tasks
        }  # a task id selects all its variants
        missing = [t for t in wanted if t not in known]
        if missing:
            raise ConfigError(
                f"task_ids {missing} are not in bench={cfg.bench.name} (it has {len(known)} tasks, "
                f"e.g. {sorted(known)[:3]})"
            )
        tasks = [t for t in tasks if t.task_id in wanted or t.base_task in wanted]
    return tasks[: cfg.limit] if cfg.limit else tasks


def _flow(cfg: EvalConfig, default: FlowConfig) -> FlowConfig:
    """The benchmark's flow (Table 3) unless `flow=turn_aligned|segment` overrides the regime."""
    if cfg.flow == "default":
        return default
    if cfg.flow == "turn_aligned":
        return default.model_copy(update={"name": f"{default.name}-turn", "regime": Regime.TURN_ALIGNED})
    return FlowConfig(
        name=f"{default.name}-segment{cfg.review_every}",
        regime=Regime.SEGMENT_INDUCED,
        review_every=cfg.review_every,
        budget_unit="task",
        baseline_budget=10_000,
        stateguard_budget=10_000,
    )


def _check_tasks(tasks: list[EvalTask], cfg: EvalConfig) -> None:
    """What a rollout would otherwise find out one task at a time, scoring it 0."""
    for t in tasks:
        if not Path(t.data_dir).is_dir():
            raise FileNotFoundError(
                f"task {t.task_id}: its data folder {t.data_dir} is missing; fetch or rebuild the "
                f"benchmark's data (bench.data_dir={cfg.bench.model_dump().get('data_dir')})"
            )
        if cfg.worker == "scripted":
            empty = [turn.turn_id for turn in t.task.turns if not turn.code.strip()]
            if empty:
                raise ValueError(
                    f"task {t.task_id}: turn(s) {empty[:5]} have no reference `code`, which the scripted "
                    "worker replays; fill it in the task's task.json, or run worker=llm"
                )


def _check_endpoints(cfg: EvalConfig) -> None:
    """The environment variables of every model the arms call, before the first task."""
    kinds = {_manager_kind(a, cfg.manager) for a in cfg.arms}
    if kinds & MODEL_MANAGERS:
        EndpointConfig.from_env("manager")
    if cfg.worker in MODEL_WORKERS:
        EndpointConfig.from_env("worker")


def _move_aside(path: Path) -> Path:
    folder = path.parent / "invalid"
    folder.mkdir(exist_ok=True)
    n = 1
    while (folder / f"{path.name}.{n}").exists():
        n += 1
    dest = folder / f"{path.name}.{n}"
    path.replace(dest)
    return dest


def _resume(run_dir: Path, cfg: EvalConfig, plain: dict[str, Any], notes: list[str]) -> None:
    """Check a resumed run folder: saved config, results files. Fills `notes` with what it did."""
    saved_file = RunFolder(run_dir).config
    if saved_file.is_file():
        try:
            saved = yaml.safe_load(saved_file.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{saved_file}: unreadable ({exc}); restore it, or start a new run_dir"
            ) from None
        changed = changed_keys(saved, plain)
        if changed and not cfg.resume_with_changed_config:
            raise ConfigError(
                f"{run_dir}: resuming with a config that differs from the saved {saved_file.name} "
                "would mix results of two setups:\n  "
                + "\n  ".join(changed)
                + "\nresume with the saved values (drop those overrides), use a new run_dir, or pass "
                "resume_with_changed_config=true to continue anyway"
            )
        if changed:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            resumed = RunFolder(run_dir).resume_config(stamp)
            resumed.write_text(yaml.safe_dump(plain, sort_keys=False), "utf-8")
            notes.append(
                f"resumed with a changed config ({'; '.join(changed)}); {saved_file.name} keeps the original, "
                f"the new one is {resumed.name}"
            )
    for leftover in RunFolder(run_dir).results.glob("*.tmp*"):
        leftover.unlink()  # a write cut short before its rename: never a result
    _, bad = scan_results(run_dir)
    for path, why in bad:
        dest = _move_aside(path)
        notes.append(f"invalid result file, moved to {dest.relative_to(run_dir)} and rerun: {why}")


@dataclass
class Prepared:
    cfg: EvalConfig
    job: JobSettings
    plain: dict[str, Any]
    run_dir: Path
    bench: Benchmark
    flow: FlowConfig
    tasks: list[EvalTask]
    jobs: list[tuple[EvalTask, str]]
    notes: list[str] = field(default_factory=list)


def prepare(raw: DictConfig) -> Prepared:
    """Every start-up check; raises (ConfigError, ValueError, FileNotFoundError, ...) naming the fix."""
    cfg = validate_config(raw)
    plain: dict[str, Any] = OmegaConf.to_container(raw, resolve=True)  # type: ignore[assignment]
    run_dir = Path(cfg.run_dir)
    bench = get_benchmark(cfg.bench.name)
    flow = _flow(cfg, bench.flow)
    job = JobSettings.from_config(cfg)
    check_workspace(cfg.workspace, job.sandbox or {})
    try:  # the LLM call policy, manager knobs and component blocks, before any task starts
        llm_settings(job.llm)
        endpoint_settings(job.worker_llm)
        check_components(response=job.response, semantic=job.semantic)
    except ValueError as exc:
        raise ConfigError(f"{exc} (configs/eval.yaml or a command-line override)") from None
    loaded = bench.load(raw.bench)
    unknown = unmatched_selection(raw.bench.get("variants", "all"), loaded)
    if unknown:
        raise ConfigError(
            f"bench.variants: {', '.join(map(repr, unknown))} matches no variant of any task of bench="
            f"{cfg.bench.name}; use all, clean, a variant name declared in the tasks' faults.json, or a "
            "fault label (stale, precision, exec_error, counterfactual, counterfactual:<semantic>; docs/faults.md)"
        )
    tasks = _select(loaded, cfg)
    if not tasks:
        raise ValueError(
            f"bench={cfg.bench.name} has no tasks to run (check limit, task_ids and bench.variants)"
        )
    _check_tasks(tasks, cfg)
    _check_endpoints(cfg)
    folder = RunFolder(run_dir)
    has_results = folder.results.is_dir() and any(folder.results.glob("*.json"))
    if not cfg.resume and has_results:
        raise FileExistsError(
            f"{run_dir} already holds results; pass resume=true to continue it, or another run_dir"
        )
    notes: list[str] = []
    if cfg.resume:
        _resume(run_dir, cfg, plain, notes)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not folder.config.is_file() or not has_results:
        folder.config.write_text(OmegaConf.to_yaml(raw, resolve=True), encoding="utf-8")
    good, _ = scan_results(run_dir)
    finished = {(r.task_id, r.arm) for r in good if r.status != "crashed"}
    crashed = sorted(f"{r.task_id}/{r.arm}" for r in good if r.status == "crashed")
    if crashed and cfg.resume:
        notes.append(f"rerunning {len(crashed)} crashed rollout(s): {', '.join(crashed[:5])}")
    jobs: list[tuple[EvalTask, str]] = [
        (t, str(a)) for t in tasks for a in cfg.arms if (t.task_id, a) not in finished
    ]
    return Prepared(cfg, job, plain, run_dir, bench, flow, tasks, jobs, notes)


def _one(pair: tuple[EvalTask, str], flow: FlowConfig, job: JobSettings, run_dir: str) -> JobOutcome:
    task, arm = pair
    return run_job(task, arm, flow, job, str(RunFolder(Path(run_dir)).rollout(task.task_id, arm).root))


def _jobs_out(p: Prepared) -> Iterator[tuple[EvalTask, str, JobOutcome]]:
    workers, args = p.cfg.workers, (p.flow, p.job, str(p.run_dir))
    if p.cfg.backend == "ray":
        from stateguard.parallel import map_tasks

        def one(job: tuple[EvalTask, str]) -> JobOutcome:
            return _one(job, *args)

        def lost(_job: tuple[EvalTask, str], exc: BaseException) -> JobOutcome:
            return JobOutcome.crash(f"the Ray task failed: {type(exc).__name__}: {exc}", 1)

        for (task, arm), outcome in map_tasks(one, p.jobs, in_flight=workers, on_error=lost):
            yield task, arm, outcome
    elif workers > 1:
        for (task, arm), outcome in run_in_pool(
            _one, p.jobs, *args, workers=workers, retries=p.cfg.job_retries
        ):
            yield task, arm, outcome
    else:
        for task, arm in p.jobs:
            yield task, arm, _one((task, arm), *args)


def _record(p: Prepared, task: EvalTask, arm: str, outcome: JobOutcome) -> ArmResult:
    error = outcome.error
    correct: dict[int, bool | None] = {}
    if error is None:
        try:
            correct = p.bench.score(task, outcome.answers)
        except Exception as exc:  # noqa: BLE001 - a judge that fails leaves the pair unscored, to rerun
            error = f"scoring failed: {type(exc).__name__}: {exc}"
    status = "crashed" if error is not None else "degraded" if outcome.degraded else "ok"
    result = ArmResult(
        bench=p.bench.name,
        task_id=task.task_id,
        arm=arm,
        domain=task.domain,
        level=task.level,
        status=status,
        correct=correct,
        parents=task.parents,
        answers=outcome.answers,
        error=error,
        run_dir=str(RunFolder(p.run_dir).rollout(task.task_id, arm).root),
        **variant_fields(task),
        **outcome.counters(),
    )
    write_result(p.run_dir, result)
    if error is not None:
        log.warning("%s/%s crashed (not scored): %s", task.task_id, arm, error)
    elif status == "degraded":
        log.warning("%s/%s degraded: %s", task.task_id, arm, "; ".join(result.degraded_reasons))
    return result


def execute(p: Prepared) -> RunSummary:
    for note in p.notes:
        log.warning(note)
    total = len(p.tasks) * len(p.cfg.arms)
    running: dict[str, list[int]] = {a: [0, 0] for a in p.cfg.arms}
    start = time.perf_counter()
    with tqdm(
        total=total,
        initial=total - len(p.jobs),
        desc=f"eval {p.bench.name}",
        unit="run",
        disable=not p.cfg.progress,
    ) as bar:
        for task, arm, outcome in _jobs_out(p):
            result = _record(p, task, arm, outcome)
            scored = [v for v in result.correct.values() if v is not None]
            running[arm][0] += sum(scored)
            running[arm][1] += len(scored)
            bar.set_postfix({a: f"{c / n:.0%}" for a, (c, n) in running.items() if n})
            bar.update()
    wanted = {t.task_id for t in p.tasks}
    results = [r for r in read_results(p.run_dir) if r.task_id in wanted and r.arm in p.cfg.arms]
    summary = summarize(results, seed=p.cfg.seed, resamples=p.cfg.bootstrap_resamples)
    summary.wall_s = round(time.perf_counter() - start, 2)
    summary.notes = list(p.notes)
    RunFolder(p.run_dir).summary.write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    p.bench.after_run(p.run_dir)  # DABstep: leaderboard JSONL per arm; DAComp-DE: dacomp_de_summary.json
    return summary


def run(cfg: DictConfig) -> RunSummary:
    return execute(prepare(cfg))


def run_cli(cfg: DictConfig) -> int:
    """What `python -m eval.runner` does: 2 on a start-up problem (one message, no traceback), 1 when
    a rollout crashed, else 0."""
    try:
        prepared = prepare(cfg)
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = execute(prepared)
    print(render_summary(summary))
    print(
        f"\nrun folder: {cfg.run_dir} (results/, tasks/<task>/<arm>/trace.jsonl; `make tables RUN={cfg.run_dir}`)"
    )
    crashed = sum(a.crashed_tasks for a in summary.arms)
    if crashed:
        print(
            f"error: {crashed} rollout(s) crashed and were not scored; `make eval ARGS='resume=true "
            f"run_dir={cfg.run_dir}'` (with the same options) reruns them",
            file=sys.stderr,
        )
    return 1 if crashed else 0


_COMPOSED = [False]  # set once Hydra has composed the config and called `main`


@hydra.main(version_base=None, config_path="../configs", config_name="eval")
def main(cfg: DictConfig) -> None:
    _COMPOSED[0] = True
    quiet_http_logs()
    exit_on_signals()
    sys.exit(run_cli(cfg))


def _check_run_dir(argv: list[str]) -> str | None:
    """Hydra creates `run_dir` (its run.dir) before `main` runs, and a path it cannot create ends
    in a traceback there: create it here first, and say what is wrong with it."""
    for arg in argv:
        key, _, value = arg.lstrip("+").partition("=")
        if key == "run_dir" and value and "$" not in value:
            try:
                Path(value).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                return (
                    f"run_dir={value}: the run folder cannot be created ({exc.strerror or exc}); "
                    "pass a folder you can write, e.g. run_dir=runs/eval/mine"
                )
    return None


def cli(argv: list[str]) -> None:
    """`python -m eval.runner`: start-up mistakes exit 2, Hydra's own (an unknown key or group) too."""
    problem = _check_run_dir(argv)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(2)
    try:
        main()
    except SystemExit as exc:
        if exc.code == 1 and not _COMPOSED[0]:  # Hydra refused the command line; its message is above
            print(
                "error: the command line names a key or a config choice that does not exist (Hydra's message "
                "above names it); the keys are in configs/eval.yaml, the benchmark choices in configs/bench/",
                file=sys.stderr,
            )
            sys.exit(2)
        raise


if __name__ == "__main__":
    cli(sys.argv[1:])
