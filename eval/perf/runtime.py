"""Runtime micro-benchmarks: commit cycle, hint packing and invalidation vs. store size.

The store is pre-filled with interleaved analysis threads of `thread_length` states (Progress /
Branch inside a thread, variables versioned per thread), so every state has a bounded related
set while the store grows. Each row is then measured `samples` times at each size; a flat row
across sizes means the cost follows the related states, not the store.

    python -m eval.perf.runtime                 # or: make bench
    python -m eval.perf.runtime sizes=[100,1000] samples=50
    python -m eval.perf.runtime sizes=[100000] samples=800 reuse_prefill=true   # fill once, then copy
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import hydra
from omegaconf import DictConfig
from pydantic import BaseModel

from stateguard import Harness, HarnessConfig, StateStore, WorkerStep
from stateguard.actions import RawAction
from stateguard.hints import state_hint
from stateguard.state import AnalyticalState, Conclusion, Relation, RelationType, VariableRef
from stateguard.store_check import COUNTER_SUFFIX
from stateguard.store_schema import LAYOUT, LAYOUT_KEY


class Row(BaseModel):
    operation: str
    size: int
    median_ms: float
    p99_ms: float
    cpu_median_ms: float = 0.0  # this thread's CPU time: what a loaded machine disturbs least
    cpu_p99_ms: float = 0.0


def _prefill(store: StateStore, n: int, thread_length: int, rng: random.Random) -> list[list[str]]:
    """Commit n states as interleaved threads; returns the state ids of each thread."""
    threads: list[list[str]] = []
    open_threads: list[int] = []
    for _ in range(n):
        if not open_threads or (len(open_threads) < 4 and rng.random() < 0.3):
            threads.append([])
            open_threads.append(len(threads) - 1)
        t = rng.choice(open_threads)
        members = threads[t]
        sid = store.reserve_id()
        latest = store.latest_id()
        if members:
            up = members[-1]
            rels = [
                Relation(
                    type=RelationType.PROGRESS if up == latest else RelationType.BRANCH, related_state_id=up
                )
            ]
            reads = [VariableRef(name=f"t{t}_v{(len(members) - 1) % 3}", version=up, value=len(members))]
        else:
            rels, reads = [Relation(type=RelationType.INIT)], []
        defined = [VariableRef(name=f"t{t}_v{len(members) % 3}", version=sid, value=len(members) + 1)]
        store.commit(
            AnalyticalState(
                id=sid,
                issue=f"thread {t} step {len(members)}",
                used_variables=reads + defined,
                conclusions=[Conclusion(text=f"value {len(members) + 1}")],
                relations=rels,
            )
        )
        members.append(sid)
        if len(members) >= thread_length:
            open_threads.remove(t)
    return threads


def _measure(fn: Callable[[int], None], samples: int) -> dict[str, float]:
    """Wall and thread-CPU median and p99 of `samples` calls, in ms."""
    walls, cpus = [], []
    for i in range(samples):
        start, cpu = time.perf_counter(), time.thread_time()
        fn(i)
        cpus.append((time.thread_time() - cpu) * 1000)
        walls.append((time.perf_counter() - start) * 1000)
    walls.sort()
    cpus.sort()
    p99 = min(samples - 1, int(0.99 * samples))
    return {
        "median_ms": statistics.median(walls),
        "p99_ms": walls[p99],
        "cpu_median_ms": statistics.median(cpus),
        "cpu_p99_ms": cpus[p99],
    }


def kept_layout(path: Path) -> int | None:
    """The store layout of a closed store file (store_schema.py), None when it cannot be read."""
    try:
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = db.execute("SELECT value FROM meta WHERE key=?", (LAYOUT_KEY,)).fetchone()
        return 1 if row is None else int(row[0])
    except (sqlite3.Error, ValueError):
        return None
    finally:
        db.close()


def _store(n: int, cfg: DictConfig) -> tuple[StateStore, list[list[str]]]:
    """A store pre-filled with n states, and its threads. With `reuse_prefill`, the first run keeps
    a closed copy (`states-<n>-prefill.sqlite` and its threads as JSON) and later runs start from a
    copy of it: filling 10^5 states takes minutes, and two versions compared in turn then time
    the same store. A kept copy of another store layout is filled again (opening it would migrate
    it, and a migrated store's b-trees are not those a run grows)."""
    path = Path(cfg.work_dir) / f"states-{n}.sqlite"
    for suffix in ("", "-wal", "-shm", COUNTER_SUFFIX):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    kept = path.with_name(f"states-{n}-prefill.sqlite")
    kept_threads = kept.with_suffix(".threads.json")
    if cfg.get("reuse_prefill", False) and kept_threads.exists() and kept_layout(kept) == LAYOUT:
        shutil.copyfile(kept, path)
        shutil.copyfile(f"{kept}{COUNTER_SUFFIX}", f"{path}{COUNTER_SUFFIX}")
        return StateStore(path), json.loads(kept_threads.read_text())
    store = StateStore(path)
    threads = _prefill(store, n, cfg.thread_length, random.Random(cfg.seed))
    if cfg.get("reuse_prefill", False):
        store.close()  # folds the log in, so the file alone is the store
        shutil.copyfile(path, kept)
        shutil.copyfile(f"{path}{COUNTER_SUFFIX}", f"{kept}{COUNTER_SUFFIX}")
        kept_threads.write_text(json.dumps(threads))
        store = StateStore(path)
    return store, threads


def harness_cycle(store: StateStore, harness: Harness) -> Callable[[int], None]:
    """One OPEN+UPDATE+FINALIZE+COMMIT cycle per call, each state related to the latest one and
    reading one of its variables (what `make bench` times; `eval/perf/cycle_parts.py` splits it)."""
    step = [0]

    def cycle(i: int) -> None:
        up = store.latest_id()
        harness.turn_start = step[0]  # what begin_review(TURN_START) sets; the observation is not timed here
        assert harness.apply(
            RawAction(
                name="OPEN_STATE", arguments={"issue": f"bench {i}", "relations": [{"related_state_id": up}]}
            )
        ).accepted
        harness.record_step(WorkerStep(index=step[0], action="x = 1", output="1"))
        step[0] += 1
        var = store.load(up).used_variables[-1] if up else None
        used = [{"name": "bench_x", "value": i}]
        if var is not None:
            used.append({"name": var.name, "version": var.version, "value": var.value})
        assert harness.apply(
            RawAction(name="UPDATE_STATE", arguments={"used_variables": used, "conclusions": ["bench"]})
        ).accepted
        assert harness.apply(RawAction(name="FINALIZE_RELATIONS", arguments={"mode": "confirm"})).accepted
        assert harness.apply(RawAction(name="COMMIT_STATE", arguments={})).accepted
        harness.pending_hints.clear()  # the worker adapter would take them; delivery is not timed

    return cycle


def bench_size(n: int, cfg: DictConfig) -> list[Row]:
    store, threads = _store(n, cfg)
    full = [t for t in threads if len(t) >= 3]
    harness = Harness(store, HarnessConfig(regime="turn_aligned"))
    rows = []
    cycle = harness_cycle(store, harness)
    rows.append(
        Row(operation="OPEN+UPDATE+FINALIZE+COMMIT (harness)", size=n, **_measure(cycle, cfg.samples))
    )

    def pack(i: int) -> None:
        thread = full[i % len(full)]
        related = [store.load(s) for s in thread[-2:]]
        hint = state_hint(related, for_state="S0")
        assert hint is not None and hint.render()

    rows.append(Row(operation="state hint: pack 2 related + render", size=n, **_measure(pack, cfg.samples)))

    def invalidate(i: int) -> None:
        target = full[i % len(full)][len(full[i % len(full)]) // 2]
        sid = store.reserve_id()
        store.commit(
            AnalyticalState(
                id=sid, issue="revision", relations=[Relation(type="invalidate", related_state_id=target)]
            )
        )
        assert store.invalidated_by(sid).states[0] == target

    rows.append(
        Row(operation="commit with Invalidate + closure query", size=n, **_measure(invalidate, cfg.samples))
    )

    def lookup(i: int) -> None:
        thread = full[i % len(full)]
        store.is_invalid(thread[-1])
        store.current_version("t0_v1")

    rows.append(Row(operation="is_invalid + current_version", size=n, **_measure(lookup, cfg.samples)))
    store.close()
    return rows


def run(cfg: DictConfig) -> list[Row]:
    Path(cfg.work_dir).mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for n in cfg.sizes:
        rows.extend(bench_size(int(n), cfg))
    return rows


def render(rows: list[Row]) -> str:
    sizes = sorted({r.size for r in rows})
    ops = list(dict.fromkeys(r.operation for r in rows))
    head = "| operation | " + " | ".join(f"{s:,}: wall med / p99 ms (CPU med / p99)" for s in sizes) + " |"
    lines = [head, "|---|" + "---|" * len(sizes)]
    for op in ops:
        cells = {
            r.size: f"{r.median_ms:.3f} / {r.p99_ms:.3f} ({r.cpu_median_ms:.3f} / {r.cpu_p99_ms:.3f})"
            for r in rows
            if r.operation == op
        }
        lines.append(f"| {op} | " + " | ".join(cells[s] for s in sizes) + " |")
    return "\n".join(lines)


@hydra.main(version_base=None, config_path="../../configs", config_name="perf")
def main(cfg: DictConfig) -> None:
    print(render(run(cfg)))


if __name__ == "__main__":
    main()
