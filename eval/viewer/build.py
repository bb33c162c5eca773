"""Build the static viewer folder for a run: `index.html`, `tasks/<task>.html`, `assets/`.

    report = build_view("runs/eval/x")                      # -> runs/eval/x/view/index.html
    report = build_view("/tmp/synth-view", out="/tmp/sv", config=load_config(overrides=["jobs=2"]))

Tasks are built in parallel processes (`jobs`, default the CPU count), in chunks: a chunk reads
its arms' traces and stores, lays out all their state graphs with a single `dot` process and
writes the pages. An arm whose files cannot be read still gets a section that says why, and
the build report lists it, so one damaged folder does not hide the rest of the run. The output
folder carries a marker file; a rebuild replaces only a folder that has it.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path

from eval.viewer.config import ViewerConfig, ViewerError
from eval.viewer.graph import find_dot, render_svgs, to_dot
from eval.viewer.model import RunSource, TaskSource
from eval.viewer.overview import overview_page
from eval.viewer.sources import load_run
from eval.viewer.states import StateGraph, state_graph
from eval.viewer.task_page import ArmView, task_page
from eval.viewer.timeline import Entry, timeline
from stateguard.artifacts.run_folder import TRACE_FILE, RolloutFolder
from stateguard.trace import read_trace

__all__ = ["MARKER", "BuildReport", "build_view"]

MARKER = ".stateguard-view"
ASSETS = Path(__file__).with_name("assets")


@dataclass(frozen=True)
class BuildReport:
    out: Path
    index: Path
    kind: str
    tasks: int
    arms: int
    states: int
    seconds: float
    problems: list[str]

    def line(self) -> str:
        warn = f"; {len(self.problems)} arm(s) unreadable, see their sections" if self.problems else ""
        return (
            f"viewer: {self.tasks} tasks, {self.arms} arms, {self.states} states -> {self.index} "
            f"(built in {self.seconds:.1f}s; open it in a browser, no network needed){warn}"
        )


def _arm_view(task: TaskSource, index: int, cfg: ViewerConfig) -> tuple[ArmView, str | None]:
    source = task.arms[index]
    if source.folder is None:
        note = f"{task.task_id}/{source.name}: no {TRACE_FILE} (recorded folder {source.result.run_dir})"
        return ArmView(source, StateGraph([], [], {}), [Entry(0, None, "note", note, "error")], None), note
    try:
        events = read_trace(RolloutFolder(source.folder).trace)
        graph = state_graph(events, RolloutFolder(source.folder).store)
        return ArmView(source, graph, timeline(events, text_chars=cfg.text_chars), None), None
    except (OSError, ValueError, sqlite3.Error, ViewerError) as exc:
        note = f"{source.folder}: {exc}"
        return ArmView(
            source, StateGraph([], [], {}), [Entry(0, None, "note", f"unreadable: {exc}", "error")], None
        ), note


def build_tasks(
    run: RunSource, jobs: list[tuple[TaskSource, Path]], cfg: ViewerConfig
) -> tuple[int, list[str]]:
    """Write the pages of a chunk of tasks; returns (states drawn, problems). Runs in a worker process.

    All graphs of the chunk go through one `dot` process: starting dot costs ~25 ms, laying out
    a 35-state graph ~5 ms, so one process per task would double the build time of a large run."""
    pages, problems = [], []
    for task, path in jobs:
        views = []
        for i in range(len(task.arms)):
            view, problem = _arm_view(task, i, cfg)
            views.append(view)
            if problem:
                problems.append(problem)
        pages.append((task, path, views))
    drawn = [(i, v) for _, _, views in pages for i, v in enumerate(views) if v.graph.nodes]
    svgs = render_svgs([to_dot(v.graph, f"a{i}", label_chars=cfg.label_chars) for i, v in drawn], dot=cfg.dot)
    for (_, view), svg in zip(drawn, svgs, strict=True):
        view.svg = svg
    for task, path, views in pages:
        path.write_text(task_page(run, task, views, value_chars=cfg.value_chars), encoding="utf-8")
    return sum(len(v.graph.nodes) for _, _, views in pages for v in views), problems


def _page_names(tasks: list[TaskSource]) -> dict[str, str]:
    names: dict[str, str] = {}
    used: set[str] = set()
    for task in tasks:
        base = re.sub(r"[^A-Za-z0-9._-]+", "_", task.task_id).strip("._") or "task"
        name, n = base, 1
        while name.lower() in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name.lower())
        names[task.task_id] = f"{name}.html"
    return names


def _prepare(out: Path, run_root: Path) -> Path:
    out = out.resolve()
    if out == run_root.resolve() or run_root.resolve().is_relative_to(out):
        raise ViewerError(
            f"--out {out} would hold the run folder itself; pick a new folder, e.g. {run_root}/view"
        )
    if out.exists():
        if not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).is_file()):
            raise ViewerError(
                f"{out} exists and is not a viewer folder (no {MARKER}); pass another --out or delete it"
            )
        shutil.rmtree(out)
    (out / "tasks").mkdir(parents=True)
    shutil.copytree(ASSETS, out / "assets")
    (out / MARKER).write_text("built by python -m eval.viewer; safe to delete\n", encoding="utf-8")
    return out


def build_view(
    run_dir: str | Path, out: str | Path | None = None, config: ViewerConfig | None = None
) -> BuildReport:
    start = time.perf_counter()
    cfg = config or ViewerConfig()
    run = load_run(run_dir)
    find_dot(cfg.dot)  # fail before writing anything when Graphviz is missing
    folder = _prepare(Path(out or cfg.out or run.root / "view"), run.root)
    names = _page_names(run.tasks)
    # a task page needs the run's kind, root and reference arm, not every other task
    light = dataclasses.replace(run, tasks=[], summary=None, config_text="")
    jobs = [(task, folder / "tasks" / names[task.task_id]) for task in run.tasks]
    workers = min(cfg.workers, len(jobs))
    chunks = [c for c in (jobs[i :: workers * 2] for i in range(workers * 2)) if c] if workers > 1 else [jobs]
    pages = {t.task_id: f"tasks/{names[t.task_id]}" for t in run.tasks}
    index = folder / "index.html"
    if workers > 1:
        # A fork server, not a fork of this process: forked from a parent that runs other threads
        # (a test runner, DuckDB's or Arrow's pools) a child can crash in its first garbage collection.
        context = get_context("forkserver" if "forkserver" in get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = [pool.submit(build_tasks, light, chunk, cfg) for chunk in chunks]
            overview = overview_page(run, pages, resamples=cfg.resamples)  # while the workers build
            index.write_text(overview, encoding="utf-8")
            outcomes = [f.result() for f in futures]
    else:
        outcomes = [build_tasks(light, jobs, cfg)]
        index.write_text(overview_page(run, pages, resamples=cfg.resamples), encoding="utf-8")
    states = sum(drawn for drawn, _ in outcomes)
    problems = [p for _, trouble in outcomes for p in trouble]
    arms = sum(len(t.arms) for t in run.tasks)
    return BuildReport(
        folder, index, run.kind, len(run.tasks), arms, states, time.perf_counter() - start, problems
    )
