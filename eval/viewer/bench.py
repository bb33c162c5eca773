"""Viewer benchmark: fabricate a 68-task x 35-turn evaluation run from a real one, time the build.

    python -m eval.viewer.bench                         # makes a small real run first (~10 s), then times
    python -m eval.viewer.bench --source runs/eval/x --tasks 68 --turns 35 --browser

The real run's longest task is stretched to `--turns` turns by replaying its turns cyclically
with every turn, worker-step and state number shifted (so states, relations, variable versions
and checkpoints stay consistent: the replayed states are committed into a fresh store through
StateStore.commit), then copied under `--tasks` task ids with the run's layout (results/,
tasks/<task>/<arm>/, summary.json). The build is timed with the configured parallelism;
`--browser` also times opening the largest task page and the overview in headless Chromium.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from eval.report import summarize
from eval.results import read_results, write_result
from eval.viewer.build import build_view
from eval.viewer.config import load_config
from stateguard.artifacts.events import (
    AnswersEvent,
    RepairEvent,
    StateCommittedEvent,
    WorkerStepEvent,
    parse_event,
    state_id_of,
)
from stateguard.artifacts.run_folder import RolloutFolder, RunFolder
from stateguard.store import StateStore
from stateguard.trace import TraceEvent, read_trace

_STATE = re.compile(r"\bS([1-9][0-9]*)\b")
_TURN_KEYS = frozenset({"turn", "turn_id"})
_STEP_KEYS = frozenset(
    {"index", "step_id", "source_step_start", "source_step_end", "pending_start_step", "pending_end_step"}
)


def _shift(value: Any, turns: int, steps: int, states: int) -> Any:
    """A copy of a trace payload with turn, step and state numbers moved on by the given offsets."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(item, int) and not isinstance(item, bool) and key in _TURN_KEYS:
                out[key] = item + turns
            elif isinstance(item, int) and not isinstance(item, bool) and key in _STEP_KEYS:
                out[key] = item + steps
            else:
                out[key] = _shift(item, turns, steps, states)
        return out
    if isinstance(value, list):
        return [_shift(item, turns, steps, states) for item in value]
    if isinstance(value, str) and states:
        return _STATE.sub(lambda m: f"S{int(m.group(1)) + states}", value)
    return value


def stretch(events: list[TraceEvent], turns: int) -> list[dict[str, Any]]:
    """The trace replayed to `turns` turns: prefix, turn blocks cycled with shifted numbers, suffix."""
    starts = [i for i, e in enumerate(events) if e.kind == "turn_start"]
    end = next((i for i, e in enumerate(events) if e.kind == "run_end"), len(events))
    if not starts:
        raise ValueError("the source trace has no turn_start events; pick a turn-aligned run")
    blocks = [events[a:b] for a, b in zip(starts, [*starts[1:], end], strict=True)]
    n = len(blocks)
    n_steps = 1 + max((e.data.index for e in events if isinstance(e, WorkerStepEvent)), default=-1)
    ids = [state_id_of(e) or "" for e in events]
    n_states = max((int(m.group(1)) for m in map(_STATE.fullmatch, ids) if m), default=0)
    span = (events[-1].ts or 0.0) - (events[0].ts or 0.0)
    out: list[dict[str, Any]] = [e.model_dump(mode="json") for e in events[: starts[0]]]
    for t in range(turns):
        cycle = t // n
        for e in blocks[t % n]:
            row = e.model_dump(mode="json")
            row["data"] = _shift(row["data"], cycle * n, cycle * n_steps, cycle * n_states)
            row["ts"] = None if e.ts is None else e.ts + cycle * span
            out.append(row)
    for e in events[end:]:
        row = e.model_dump(mode="json")
        if isinstance(e, AnswersEvent):
            given = e.data.answers
            row["data"] = {"answers": {str(t): given.get(str((t - 1) % n + 1)) for t in range(1, turns + 1)}}
        row["ts"] = None if e.ts is None else e.ts + (turns // n) * span
        out.append(row)
    for seq, row in enumerate(out):
        row["seq"] = seq
    return out


def _write_arm(rows: list[dict[str, Any]], folder: Path) -> tuple[int, int, int]:
    """Write trace.jsonl and a store with the replayed commits; returns (committed, stale, repairs)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(r, sort_keys=True, default=str) for r in rows) + "\n"
    rollout = RolloutFolder(folder)
    rollout.trace.write_text(text, encoding="utf-8")
    events = [parse_event(r) for r in rows]
    store = StateStore(rollout.store)
    try:
        for e in events:
            if isinstance(e, StateCommittedEvent):
                store.commit(e.data.state)
        return len(store), len(store.invalid_states()), sum(isinstance(e, RepairEvent) for e in events)
    finally:
        store.close()


def fabricate(source: Path, dest: Path, *, tasks: int, turns: int) -> Path:
    """A run folder with `tasks` copies of the source's longest task stretched to `turns` turns."""
    if dest.exists():
        if not (dest / ".viewer-bench").is_file():
            raise SystemExit(f"{dest} exists and was not made by this benchmark; pass another --work")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / ".viewer-bench").write_text("fabricated by python -m eval.viewer.bench\n", encoding="utf-8")
    results = read_results(source)
    longest = max(results, key=lambda r: len(r.correct)).task_id
    arms = [r for r in results if r.task_id == longest]
    n = len(arms[0].correct)
    for r in arms:
        rows = stretch(read_trace(RunFolder(source).rollout(longest, r.arm).trace), turns)
        for i in range(tasks):
            task_id = f"{longest}_x{i:02d}"
            arm_dir = RunFolder(dest).rollout(task_id, r.arm).root
            committed, stale, repairs = _write_arm(rows, arm_dir)
            correct = {t: r.correct.get((t - 1) % n + 1) for t in range(1, turns + 1)}
            parents = {
                t: [p + (t - 1) // n * n for p in r.parents.get((t - 1) % n + 1, [])]
                for t in range(1, turns + 1)
            }
            write_result(
                dest,
                r.model_copy(
                    update={
                        "task_id": task_id,
                        "correct": correct,
                        "parents": parents,
                        "answers": {},
                        "run_dir": str(arm_dir),
                        "committed_states": committed,
                        "stale_states": stale,
                        "repairs": repairs,
                        "wall_s": round(r.wall_s * turns / n, 2),
                    }
                ),
            )
    summary = summarize(read_results(dest), resamples=10_000)
    RunFolder(dest).summary.write_text(summary.model_dump_json(indent=1) + "\n", encoding="utf-8")
    if RunFolder(source).config.is_file():
        shutil.copy(RunFolder(source).config, RunFolder(dest).config)
    return dest


def _make_source(folder: Path) -> Path:
    cmd = [sys.executable, "-m", "eval.runner", f"run_dir={folder}", "limit=2", "workers=1", "progress=false"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"could not make a source run ({' '.join(cmd)}):\n{done.stderr[-2000:]}")
    return folder


def _open_times(out: Path) -> tuple[str, float, float]:
    from eval.viewer.browser import headless_chromium, open_page

    largest = max((out / "tasks").glob("*.html"), key=lambda p: p.stat().st_size)  # the viewer's pages
    with headless_chromium() as driver:
        open_page(driver, out / "index.html")  # warm the browser once
        task_s = max(open_page(driver, largest) for _ in range(3))
        index_s = open_page(driver, out / "index.html")
    return largest.name, task_s, index_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.viewer.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, help="a finished eval run folder (default: make one, ~10 s)")
    parser.add_argument("--tasks", type=int, default=68)
    parser.add_argument("--turns", type=int, default=35)
    parser.add_argument("--work", type=Path, help="folder for the fabricated run (default: a temporary one)")
    parser.add_argument("--browser", action="store_true", help="also time opening pages in headless Chromium")
    parser.add_argument(
        "overrides", nargs="*", metavar="key=value", help="viewer options (configs/view.yaml)"
    )
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="viewer-bench-"))
    source = args.source or _make_source(work / "source")
    run = fabricate(source, work / "run", tasks=args.tasks, turns=args.turns)
    cfg = load_config(overrides=args.overrides)
    report = build_view(run, out=work / "view", config=cfg)
    size = sum(p.stat().st_size for p in report.out.rglob("*") if p.is_file()) / 1e6
    line = (
        f"viewer bench: {report.tasks} tasks x {args.turns} turns, {report.arms} arms, "
        f"{report.states} states, {cfg.workers} jobs: built in {report.seconds:.2f}s ({size:.0f} MB) "
        f"-> {report.index}"
    )
    if args.browser:
        page, task_s, index_s = _open_times(report.out)
        line += f"; largest task page {page} opened in {task_s:.2f}s, overview in {index_s:.2f}s"
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
