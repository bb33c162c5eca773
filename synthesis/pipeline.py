"""`make synth`: build many long-horizon tasks, verify each by replay, and summarize.

    python -m synthesis.pipeline                       # configs/synth.yaml
    python -m synthesis.pipeline synth=debug           # two small tasks, well under a minute
    python -m synthesis.pipeline tasks_per_dataset=50 workers=2 out_dir=runs/synth-big

For each dataset and index i < tasks_per_dataset, the task's seed and turn count are derived
from (master seed, dataset, i) by SHA-256, so one master seed always yields the same task list
and, since `build_task` is deterministic, the same bytes. Each task is built
(`synthesis.tasks.build_task`, which also writes its stage fingerprints) and, with
verify_replay, replayed from scratch (`synthesis.replay.verify_replay`); a task that fails to
build or to replay is removed and listed under `dropped` with its reason. A passing replay
leaves `hidden/replay.json`; on a rerun, a task folder with a complete manifest, fingerprints
and a valid marker is skipped. `<out_dir>/synth_summary.json` holds the counts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Literal

import hydra
from omegaconf import DictConfig
from pydantic import BaseModel, Field
from tqdm import tqdm

from stateguard.artifacts.export_summary import SYNTH_SUMMARY_FILE, SynthExport
from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.run_folder import CorpusFolder
from stateguard.artifacts.task_folder import TaskFolder
from synthesis.freeze import FreezeError, bench_manifest, check_frozen, write_frozen
from synthesis.replay import has_valid_marker, verify_replay, write_marker
from synthesis.shapes import SHAPES, build_shaped_task, shaped_task_id
from synthesis.source_threads import register
from synthesis.sources.external import SourceDataset, prepare_sources
from synthesis.sources.tabular import get_info, package_dir
from synthesis.tasks import build_task

__all__ = [
    "DroppedTask",
    "SynthResult",
    "TaskOutcome",
    "TaskSpec",
    "main",
    "plan_from_config",
    "plan_specs",
    "run",
    "synth_one",
]

log = logging.getLogger(__name__)
SUMMARY = SYNTH_SUMMARY_FILE


class TaskSpec(BaseModel):
    dataset: str
    index: int
    seed: int
    turns: int
    task_id: str
    shape: str = "longds"  # longds (turn-aligned) | dabstep | dacomp_de (segment-induced, synthesis.shapes)
    source: SourceDataset | None = (
        None  # a raw-task source table (B.1), registered in the worker before building
    )


class TaskOutcome(BaseModel):
    task_id: str
    dataset: str
    status: Literal["built", "skipped", "dropped"]
    reason: str | None = None
    relation_counts: dict[str, int] = Field(default_factory=dict)


class DroppedTask(BaseModel):
    task_id: str
    dataset: str
    reason: str


class SynthResult(BaseModel):
    out_dir: str
    seed: int
    requested: int
    built: int
    skipped: int
    by_dataset: dict[str, int] = Field(description="verified tasks present per dataset (built + skipped)")
    by_source: dict[str, int] = Field(
        default_factory=dict,
        description="verified tasks per raw-task source (dsbench, bird_interact, ida_bench)",
    )
    relation_counts: dict[str, int] = Field(description="relation types summed over the verified tasks")
    tasks: list[str]
    dropped: list[DroppedTask]
    elapsed_s: float
    export: SynthExport | None = Field(default=None, description="summary of the SFT/RL export, when enabled")
    bench_sha256: str | None = Field(
        default=None, description="SHA-256 of the benchmark manifest (freeze != off)"
    )


def _derive(seed: int, dataset: str, index: int) -> int:
    digest = hashlib.sha256(f"synth:{seed}:{dataset}:{index}".encode()).hexdigest()
    return int(digest[:16], 16)


def plan_specs(
    datasets: list[str],
    tasks_per_dataset: int,
    turns: tuple[int, int],
    seed: int,
    shapes: dict[str, int] | None = None,
    dataset_scale: dict[str, float] | None = None,
) -> list[TaskSpec]:
    """The task list for a master seed; duplicates (same dataset, seed and turns) are kept once.
    `shapes` adds, per dataset, that many segment-shaped tasks of each shape (synthesis.shapes).
    `dataset_scale` multiplies a dataset's counts (rounded): a costly dataset can be drawn less
    often; since seeds derive from the index, a scaled-down dataset's tasks are a prefix of its
    full list."""
    lo, hi = turns
    if lo > hi:
        raise ValueError(f"turns.min={lo} is larger than turns.max={hi}")
    scale = dict(dataset_scale or {})
    for key, factor in scale.items():
        if key not in datasets:
            raise ValueError(
                f"dataset_scale.{key}: not one of datasets={list(datasets)}; remove it or add the dataset"
            )
        if not factor >= 0:
            raise ValueError(f"dataset_scale.{key}={factor}: use a factor >= 0 (1 = the full count)")

    def count(dataset: str, n: int) -> int:
        return round(n * scale.get(dataset, 1.0))

    specs: list[TaskSpec] = []
    seen: set[str] = set()
    for dataset in datasets:
        name = get_info(dataset).name
        for i in range(count(dataset, tasks_per_dataset)):
            h = _derive(seed, name, i)
            task_seed, n_turns = h % 1_000_000, lo + (h >> 32) % (hi - lo + 1)
            task_id = f"{name}_s{task_seed}_t{n_turns}"  # what build_task names the folder
            if task_id not in seen:
                seen.add(task_id)
                specs.append(TaskSpec(dataset=name, index=i, seed=task_seed, turns=n_turns, task_id=task_id))
        for shape, n_shape in sorted((shapes or {}).items()):
            if shape not in SHAPES:
                raise ValueError(f"shapes.{shape}: unknown task shape; known: {sorted(SHAPES)}")
            for i in range(count(dataset, int(n_shape))):
                task_seed = _derive(seed, f"{name}:{shape}", i) % 1_000_000
                task_id = shaped_task_id(name, shape, task_seed)
                if task_id not in seen:
                    seen.add(task_id)
                    specs.append(
                        TaskSpec(dataset=name, index=i, seed=task_seed, turns=0, task_id=task_id, shape=shape)
                    )
    return specs


def plan_from_config(cfg: DictConfig) -> list[TaskSpec]:
    """`plan_specs` for a `configs/synth.yaml` composition (datasets, counts, shapes, scale)."""
    return plan_specs(
        list(cfg.datasets),
        int(cfg.tasks_per_dataset),
        (int(cfg.turns.min), int(cfg.turns.max)),
        int(cfg.seed),
        {str(k): int(v) for k, v in (cfg.get("shapes") or {}).items()},
        {str(k): float(v) for k, v in (cfg.get("dataset_scale") or {}).items()},
    )


def plan_source_specs(
    sources: list[SourceDataset], tasks_per_table: int, turns: tuple[int, int], seed: int
) -> list[TaskSpec]:
    """Turn-aligned tasks over the raw-task source tables (synthesis.sources.external), seeded like
    `plan_specs`: `tasks_per_table` per table."""
    lo, hi = turns
    specs: list[TaskSpec] = []
    for sd in sources:
        name = sd.info.name
        for i in range(tasks_per_table):
            h = _derive(seed, name, i)
            task_seed, n_turns = h % 1_000_000, lo + (h >> 32) % (hi - lo + 1)
            specs.append(
                TaskSpec(
                    dataset=name,
                    index=i,
                    seed=task_seed,
                    turns=n_turns,
                    task_id=f"{name}_s{task_seed}_t{n_turns}",
                    source=sd,
                )
            )
    return specs


def _data_bytes(dataset: str) -> int:
    """Size on disk of a dataset's table files: what a task over it costs to build and replay."""
    try:
        info = get_info(dataset)
        folder = package_dir(info)
    except (ImportError, LookupError, ValueError, OSError):  # unknown or not installed: no estimate
        return 0
    return sum((folder / t.file).stat().st_size for t in info.tables if (folder / t.file).is_file())


def longest_first(specs: list[TaskSpec]) -> list[TaskSpec]:
    """The order to hand tasks to a pool: the costliest first (table bytes x turns), so that on two
    workers the last task to finish is a cheap one, not one of the large nyc tasks started last.
    Only the order of work changes: outcomes are sorted by task id and each task's bytes depend only
    on its spec."""
    size: dict[str, int] = {}
    for s in specs:
        if s.dataset not in size:
            size[s.dataset] = _data_bytes(s.dataset) if s.source is None else 0
    return sorted(specs, key=lambda s: (-size[s.dataset] * max(s.turns, 1), s.task_id))


def _relation_counts(root: Path) -> dict[str, int]:
    graph = load_graph(TaskFolder(root))
    return dict(Counter(rel.type.value for stage in graph.stages for rel in stage.relations))


def is_complete(root: Path) -> bool:
    """A finished task: manifest, per-turn fingerprints and a replay marker that still matches."""
    folder = TaskFolder(root)
    return folder.manifest.is_file() and folder.fingerprints.is_file() and has_valid_marker(root)


def synth_one(spec: TaskSpec, out_dir: str, verify: bool = True, worker_faults: int = 0) -> TaskOutcome:
    """Build (or skip) one task and verify it; never raises for a bad task -- it is dropped."""
    if spec.source is not None:
        register(spec.source)
    root = Path(out_dir) / spec.task_id
    if is_complete(root) and (not worker_faults or TaskFolder(root).faults.is_file()):
        return TaskOutcome(
            task_id=spec.task_id,
            dataset=spec.dataset,
            status="skipped",
            relation_counts=_relation_counts(root),
        )

    def drop(reason: str) -> TaskOutcome:
        shutil.rmtree(root, ignore_errors=True)
        return TaskOutcome(task_id=spec.task_id, dataset=spec.dataset, status="dropped", reason=reason)

    try:
        if spec.shape == "longds":
            built = build_task(
                out_dir,
                dataset=spec.dataset,
                seed=spec.seed,
                turns=spec.turns,
                worker_faults=worker_faults,
                verified_later=verify,  # verify_replay below is then the task's fresh run
            )
        else:
            built = build_shaped_task(
                out_dir,
                shape=spec.shape,  # type: ignore[arg-type]
                dataset=spec.dataset,
                seed=spec.seed,
                worker_faults=worker_faults,
            )
    except Exception as exc:  # noqa: BLE001 - any build failure drops the task, with its reason
        return drop(f"build failed: {type(exc).__name__}: {exc}")
    if built != root:
        return drop(f"build_task wrote {built.name}, expected {spec.task_id}")
    if verify:
        report = verify_replay(root)
        if not report.ok:
            return drop(f"replay failed: {report.summary()}")
        write_marker(root, report)
    return TaskOutcome(
        task_id=spec.task_id, dataset=spec.dataset, status="built", relation_counts=_relation_counts(root)
    )


def run(cfg: DictConfig) -> SynthResult:
    start = time.perf_counter()
    out_dir = Path(cfg.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = plan_from_config(cfg)
    src_cfg = cfg.get("sources") or {}
    folders = {k: src_cfg.get(k) for k in ("dsbench", "bird_interact", "ida_bench")}
    if any(folders.values()):
        tables = prepare_sources(
            folders,
            out_dir / "_sources",
            max_tables=int(src_cfg.get("max_tables", 20)),
            max_rows=int(src_cfg.get("max_rows", 20_000)),
        )
        specs += plan_source_specs(
            tables,
            int(src_cfg.get("tasks_per_table", 1)),
            (int(cfg.turns.min), int(cfg.turns.max)),
            int(cfg.seed),
        )
    verify = bool(cfg.verify_replay)
    faults = int(cfg.get("worker_faults", 0))
    workers = int(cfg.workers)
    outcomes: list[TaskOutcome] = []
    backend = str(cfg.get("backend", "process"))
    if backend not in ("process", "ray"):
        raise ValueError(f"backend={backend!r}: use process or ray")
    with tqdm(total=len(specs), desc="synth", unit="task", disable=not cfg.get("progress", True)) as bar:
        if backend == "ray":
            from stateguard.parallel import map_tasks  # needs the `rl` extra (ray)

            for _spec, outcome in map_tasks(
                synth_one, specs, str(out_dir), verify, faults, in_flight=workers
            ):
                outcomes.append(outcome)
                bar.update()
        elif workers > 1 and len(specs) > 1:
            # spawn, not fork: a forked child of a multithreaded parent (pytest, Ray, torch) can crash
            # in its first garbage collection (seen as a segfault inside sqlglot's deepcopy).
            with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
                futures = [
                    pool.submit(synth_one, s, str(out_dir), verify, faults) for s in longest_first(specs)
                ]
                for fut in as_completed(futures):
                    outcomes.append(fut.result())
                    bar.update()
        else:
            for s in specs:
                outcomes.append(synth_one(s, str(out_dir), verify, faults))
                bar.update()
    outcomes.sort(key=lambda o: o.task_id)
    kept = [o for o in outcomes if o.status != "dropped"]
    dropped = [
        DroppedTask(task_id=o.task_id, dataset=o.dataset, reason=o.reason or "")
        for o in outcomes
        if o.status == "dropped"
    ]
    by_source = {s.task_id: s.source.source for s in specs if s.source is not None}
    for d in dropped:
        log.warning("dropped %s: %s", d.task_id, d.reason)
    relations: Counter[str] = Counter()
    for o in kept:
        relations.update(o.relation_counts)
    result = SynthResult(
        out_dir=str(out_dir),
        seed=int(cfg.seed),
        requested=len(specs),
        built=sum(o.status == "built" for o in outcomes),
        skipped=sum(o.status == "skipped" for o in outcomes),
        by_dataset=dict(sorted(Counter(o.dataset for o in kept).items())),
        by_source=dict(sorted(Counter(by_source[o.task_id] for o in kept if o.task_id in by_source).items())),
        relation_counts=dict(sorted(relations.items())),
        tasks=[o.task_id for o in kept],
        dropped=dropped,
        elapsed_s=round(time.perf_counter() - start, 3),
    )
    freeze = str(cfg.get("freeze", "off"))
    if freeze not in ("off", "check", "update"):
        raise ValueError(f"freeze={freeze!r}: use off, check or update")
    if freeze != "off":
        result.bench_sha256 = _freeze(cfg, out_dir, result, freeze)
    export_cfg = cfg.get("export")
    if export_cfg is not None and export_cfg.get("enabled") and result.tasks:
        from synthesis.export import export  # needs the `train` extra (datasets); imported only when used

        cap = export_cfg.get("max_trajectories")
        summary = export(
            out_dir,
            Path(export_cfg.out_dir),
            seed=int(cfg.seed),
            repairs=int(export_cfg.repairs),
            autos=int(export_cfg.get("autos", 1)),
            benign=int(export_cfg.get("benign", 1)),
            heavy=int(export_cfg.get("heavy", 1)),
            abandon=int(export_cfg.get("abandon", 1)),
            max_trajectories=None if cap is None else int(cap),
            workers=workers,
            backend=backend,
            progress=bool(cfg.get("progress", True)),
            teacher=str(export_cfg.get("teacher", "rules")),
            started=start,
        )
        result.export = SynthExport(**summary, out_dir=str(export_cfg.out_dir))
    (out_dir / SUMMARY).write_text(result.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return result


def _freeze(cfg: DictConfig, out_dir: Path, result: SynthResult, mode: str) -> str:
    """Check (or, deliberately, rewrite) the frozen record of this benchmark; see synthesis.freeze."""
    if result.dropped:
        raise FreezeError(
            f"{len(result.dropped)} task(s) dropped ({result.dropped[0].task_id}: "
            f"{result.dropped[0].reason}); a frozen benchmark must build every task"
        )
    manifest = bench_manifest(out_dir, result.tasks)
    (out_dir / "bench_manifest.json").write_bytes(
        json.dumps(manifest, indent=1, sort_keys=True).encode() + b"\n"
    )
    if mode == "update":
        digest = write_frozen(manifest, cfg.frozen_manifest)
        log.warning(
            "frozen benchmark record rewritten: %s (sha256 %s); put this hash in frozen_sha256",
            cfg.frozen_manifest,
            digest,
        )
        return digest
    return check_frozen(manifest, cfg.frozen_manifest, cfg.get("frozen_sha256"))


def render(result: SynthResult) -> str:
    lines = [
        f"synth: {len(result.tasks)}/{result.requested} tasks verified in {result.out_dir} "
        f"(built {result.built}, skipped {result.skipped}, dropped {len(result.dropped)}) in {result.elapsed_s:.1f}s",
        f"by dataset: {json.dumps(result.by_dataset)}",
        *([f"by raw-task source: {json.dumps(result.by_source)}"] if result.by_source else []),
        f"relations: {json.dumps(result.relation_counts)}",
    ]
    lines += [f"dropped {d.task_id}: {d.reason}" for d in result.dropped]
    if result.bench_sha256 is not None:
        lines.append(f"benchmark manifest sha256: {result.bench_sha256}")
    if result.export is not None:
        e = result.export
        lines.append(
            f"export: {e.kept}/{e.trajectories} trajectories kept; SFT samples "
            f"{json.dumps(e.sft_samples)}; RL prompts {e.rl_prompts} -> {e.out_dir}"
        )
        stats = CorpusFolder(Path(e.out_dir)).corpus_stats_table
        if stats.is_file():
            lines += ["", "corpus statistics (next to the paper's D.2):", stats.read_text(encoding="utf-8")]
    return "\n".join(lines)


@hydra.main(version_base=None, config_path="../configs", config_name="synth")
def main(cfg: DictConfig) -> None:
    print(render(run(cfg)))


if __name__ == "__main__":
    main()
