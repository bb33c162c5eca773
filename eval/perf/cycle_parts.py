"""Where the CPU of one harness cycle goes: each action, the store, its SQL statements, the trace.

`make bench` times OPEN+UPDATE+FINALIZE+COMMIT as a whole (`eval.perf.runtime.harness_cycle`).
This runs the same cycle on a store of `size` pre-filled states and times, with the measuring
thread's CPU clock (what a loaded machine disturbs least), every call of the functions in
`PARTS` and every SQL statement the store sends (grouped by its text). Parts nest (an action
holds its store calls and trace events), so the shares do not add up to 100%; each timer costs
about a microsecond. A second pass alternates blocks of cycles with the trace on and off in the
same process (no timers): what the nine trace events of a cycle cost, measured as a difference.

    python -m eval.perf.cycle_parts                          # 10^5 states, reusing make bench's filled store
    python -m eval.perf.cycle_parts --size 1000 --samples 200
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from omegaconf import OmegaConf
from pydantic import BaseModel

import stateguard.harness as harness_module
import stateguard.store as store_module
from eval.perf.runtime import _store, harness_cycle
from stateguard import Harness, HarnessConfig, StateStore
from stateguard.trace import Trace

# (owner, attribute, label): the functions timed per call.
PARTS: list[tuple[Any, str, str]] = [
    (Harness, "apply", "harness: apply (all four actions)"),
    (Harness, "_open", "harness: OPEN_STATE"),
    (Harness, "_update", "harness: UPDATE_STATE"),
    (Harness, "_finalize", "harness: FINALIZE_RELATIONS"),
    (Harness, "_commit", "harness: COMMIT_STATE"),
    (harness_module, "validate_action", "harness: validate_action (arguments)"),
    (Harness, "_snapshot", "harness: pre-action snapshot"),
    (Harness, "record_step", "harness: record_step (worker step)"),
    (StateStore, "commit", "store: commit"),
    (StateStore, "reserve_id", "store: reserve_id"),
    (StateStore, "_check_new_state", "store: reference checks"),
    (StateStore, "_propagate_invalidity", "store: staleness propagation"),
    (store_module, "state_digest", "store: row digest"),
    (Trace, "emit", "trace: emit (validated)"),
    (Trace, "emit_known", "trace: emit_known (a shape seen before)"),
]


class Part(BaseModel):
    part: str
    calls_per_cycle: float
    cpu_ms_per_cycle: float
    share_pct: float  # of the cycle's mean CPU; parts nest, so shares overlap


class Breakdown(BaseModel):
    size: int
    samples: int
    cycle_cpu_median_ms: float
    cycle_cpu_mean_ms: float
    parts: list[Part]
    trace_on_ms: float  # CPU median of the cycle, trace on / off, alternating blocks in one process
    trace_off_ms: float


class _TimedConnection:
    """Stands in for the store's sqlite3 connection and times each statement by its text."""

    def __init__(self, db: Any, spent: dict[str, list[float]]):
        self._db, self._spent = db, spent

    def _timed(self, method: str, sql: str, *args: Any) -> Any:
        start = time.thread_time()
        try:
            return getattr(self._db, method)(sql, *args)
        finally:
            label = ("sql (many): " if method == "executemany" else "sql: ") + re.sub(r"\s+", " ", sql)[:60]
            self._spent.setdefault(label, []).append(time.thread_time() - start)

    def execute(self, sql: str, *args: Any) -> Any:
        return self._timed("execute", sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._timed("executemany", sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


@contextmanager
def _timers(store: StateStore, spent: dict[str, list[float]]) -> Iterator[None]:
    """Wrap every part and the store's connection; everything is put back on exit."""
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in PARTS]

    def timed(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent.setdefault(label, []).append(time.thread_time() - start)

        return wrapper

    db = store._db
    try:
        for (owner, attr, fn), (_, _, label) in zip(saved, PARTS, strict=True):
            setattr(owner, attr, timed(fn, label))
        store._db = _TimedConnection(db, spent)  # type: ignore[assignment]
        yield
    finally:
        store._db = db
        for owner, attr, fn in saved:
            setattr(owner, attr, fn)


def _trace_ablation(cycle: Callable[[int], None], first: int, rounds: int, block: int) -> tuple[float, float]:
    """CPU medians of the cycle with the trace on and off, blocks alternating (on, off, off, on, …)."""
    emit, emit_known = Trace.emit, Trace.emit_known
    cpu: dict[bool, list[float]] = {True: [], False: []}
    i = first
    try:
        for r in range(rounds):
            for on in (True, False) if r % 2 == 0 else (False, True):
                Trace.emit = emit if on else (lambda self, kind, **data: None)  # type: ignore[method-assign,assignment]
                Trace.emit_known = emit_known if on else (lambda self, kind, **data: None)  # type: ignore[method-assign]
                for _ in range(block):
                    start = time.thread_time()
                    cycle(i)
                    cpu[on].append((time.thread_time() - start) * 1000)
                    i += 1
    finally:
        Trace.emit, Trace.emit_known = emit, emit_known  # type: ignore[method-assign]
    return statistics.median(cpu[True]), statistics.median(cpu[False])


def run(size: int = 100_000, samples: int = 800, work_dir: str = "runs/bench", warmup: int = 50) -> Breakdown:
    cfg = OmegaConf.create({"work_dir": work_dir, "reuse_prefill": True, "thread_length": 10, "seed": 0})
    store, _ = _store(size, cfg)
    try:
        cycle = harness_cycle(store, Harness(store, HarnessConfig(regime="turn_aligned")))
        for i in range(warmup):
            cycle(i)
        spent: dict[str, list[float]] = {}
        totals = []
        with _timers(store, spent):
            for i in range(warmup, warmup + samples):
                start = time.thread_time()
                cycle(i)
                totals.append((time.thread_time() - start) * 1000)
        mean = statistics.mean(totals)
        parts = [
            Part(
                part=label,
                calls_per_cycle=len(times) / samples,
                cpu_ms_per_cycle=sum(times) * 1000 / samples,
                share_pct=100 * sum(times) * 1000 / samples / mean,
            )
            for label, times in spent.items()
        ]
        parts.sort(key=lambda p: -p.cpu_ms_per_cycle)
        rounds = max(2, samples // 100)
        on, off = _trace_ablation(cycle, warmup + samples, rounds, block=max(1, samples // rounds))
        return Breakdown(
            size=size,
            samples=samples,
            cycle_cpu_median_ms=statistics.median(totals),
            cycle_cpu_mean_ms=mean,
            parts=parts,
            trace_on_ms=on,
            trace_off_ms=off,
        )
    finally:
        store.close()


def render(b: Breakdown) -> str:
    lines = [
        f"cycle at {b.size:,} states, {b.samples} cycles with timers: CPU median {b.cycle_cpu_median_ms:.3f} ms, "
        f"mean {b.cycle_cpu_mean_ms:.3f} ms",
        f"trace on / off (alternating blocks, no timers): CPU median {b.trace_on_ms:.3f} / {b.trace_off_ms:.3f} ms "
        f"(the trace: {100 * (b.trace_on_ms - b.trace_off_ms) / b.trace_on_ms:.0f}% of the cycle)",
        "",
        "| part | calls / cycle | CPU ms / cycle | % of the cycle (parts nest) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {p.part} | {p.calls_per_cycle:.1f} | {p.cpu_ms_per_cycle:.3f} | {p.share_pct:.0f} |"
        for p in b.parts
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100_000, help="committed states before measuring")
    parser.add_argument(
        "--samples", type=int, default=800, help="timed cycles (and as many for the ablation)"
    )
    parser.add_argument(
        "--work-dir", default="runs/bench", help="where the filled store is kept (as make bench)"
    )
    args = parser.parse_args(argv)
    print(render(run(args.size, args.samples, args.work_dir)))


if __name__ == "__main__":
    main()
