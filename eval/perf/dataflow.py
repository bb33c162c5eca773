"""Dataflow recording cost: the same cells run plainly and with statement-level recording, in one run.

With recording, a workspace analyzes and instruments the cell, runs it with its markers, resolves
the run-time facts (fingerprints of variables handed to calls, content equality of rewritten
ones), passes them through JSON as the sandbox does, and applies them to the graph. Without,
it parses, compiles and runs the cell. Both run here on one namespace, alternating sample by
sample so that machine noise hits both alike; the table gives medians and the added cost.

    python -m eval.perf.dataflow                 # or: make bench
    python -m eval.perf.dataflow --rows 100000 --samples 40
    python -m eval.perf.dataflow --new-text      # every run analyzes its cell afresh

A workspace reuses a cell's analysis when the same text runs again (`stateguard/dataflow/plans.py`);
the timed runs repeat one text, so by default they measure that reuse. `--new-text` empties the
recorder's plan cache before each recorded run: the cost of a cell the workspace has not seen.

Targets (issue 13): at most +10% on a ~10 ms cell that reads a 100k-row frame, at most +1 ms on
a trivial cell.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from stateguard.dataflow import CellFacts, CellRecorder, DataflowGraph
from stateguard.dataflow.plans import PlanCache
from stateguard.workspace import split_last_expression

CELLS = {
    "~10 ms cell reading a 100k-row frame": "top = df.sort_values('b').groupby('k')['b'].agg(['mean', 'std', 'count'])",
    "trivial cell": "x = 1",
    "4-statement pandas cell (filter, new column, groupby)": (
        "kept = df[df['b'] > 0.5]\nkept['c'] = kept['b'] * 2\nsummary = kept.groupby('k')['c'].mean()\nn = len(summary)"
    ),
    "pure-Python loop, 20k iterations": "total = 0\nfor i in range(20000):\n    total += i * 2",
}


class Row(BaseModel):
    cell: str
    samples: int
    plain_ms: tuple[float, float]  # (median, minimum)
    recorded_ms: tuple[float, float]
    work_ms: tuple[float, float]  # the recording's own work, timed inside the recorded run

    def work_pct(self, i: int) -> float:
        return 100 * self.work_ms[i] / self.plain_ms[i]

    def added_ms(self, i: int) -> float:
        return self.recorded_ms[i] - self.plain_ms[i]

    def added_pct(self, i: int) -> float:
        return 100 * self.added_ms(i) / self.plain_ms[i]


def _frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "a": np.arange(rows),
            "b": rng.random(rows),
            "k": rng.integers(0, 50, rows),
            "s": rng.choice(["north", "south", "east", "west"], rows),
        }
    )


def _plain(code: str, namespace: dict[str, Any]) -> None:
    body, last = split_last_expression(code)
    exec(compile(body, "<cell>", "exec"), namespace)
    if last is not None:
        eval(compile(last, "<cell>", "eval"), namespace)


def _recorded(
    code: str, namespace: dict[str, Any], recorder: CellRecorder, graph: DataflowGraph, cell: int
) -> float:
    """Runs the cell with recording; returns the ms spent on recording alone (analysis and
    instrumentation, resolution, JSON, graph), i.e. everything but running the instrumented cell."""
    t0 = time.perf_counter()
    prepared = recorder.start(code, namespace)
    t1 = time.perf_counter()
    failed = True
    try:
        exec(prepared.body, namespace)
        if prepared.last is not None:
            eval(prepared.last, namespace)
        failed = False
    finally:
        t2 = time.perf_counter()
        facts = recorder.finish(failed)
    graph.apply(cell, CellFacts.model_validate(facts.model_dump(mode="json")))
    return (t1 - t0 + time.perf_counter() - t2) * 1000


def measure(
    code: str, frame: pd.DataFrame, samples: int, new_text: bool = False
) -> tuple[list[float], list[float], list[float]]:
    plain_ns: dict[str, Any] = {"df": frame, "pd": pd, "np": np}
    recorded_ns: dict[str, Any] = dict(plain_ns)
    recorder, graph = CellRecorder(), DataflowGraph()
    recorder.attach(recorded_ns)
    for i in range(3):  # warm-up: first sorts/groupbys pay one-off costs
        _plain(code, plain_ns)
        _recorded(code, recorded_ns, recorder, graph, i)
    plain: list[float] = []
    recorded: list[float] = []
    work: list[float] = []
    for i in range(samples):
        start = time.perf_counter()
        _plain(code, plain_ns)
        plain.append((time.perf_counter() - start) * 1000)
        if new_text:
            recorder.plans = PlanCache()
        start = time.perf_counter()
        work.append(_recorded(code, recorded_ns, recorder, graph, 10 + i))
        recorded.append((time.perf_counter() - start) * 1000)
    return plain, recorded, work


def run(rows: int = 100_000, samples: int = 40, new_text: bool = False) -> list[Row]:
    frame = _frame(rows)
    out = []
    for name, code in CELLS.items():
        plain, recorded, work = measure(code, frame, samples, new_text)
        out.append(
            Row(
                cell=name,
                samples=samples,
                plain_ms=(statistics.median(plain), min(plain)),
                recorded_ms=(statistics.median(recorded), min(recorded)),
                work_ms=(statistics.median(work), min(work)),
            )
        )
    return out


def render(rows: list[Row]) -> str:
    """Medians, and minima (on a busy machine the minimum is the cleaner view of the intrinsic cost).

    "added" is the end-to-end difference (recorded run minus plain run: the markers' cost included,
    and every scheduling hiccup of either); "recording work" times only what the recorder does
    around the instrumented run, so it stays readable when the machine is loaded."""
    lines = [
        "| cell | samples | plain ms (p50 / min) | with dataflow ms (p50 / min) | added ms (p50 / min) "
        "| added % (p50 / min) | recording work ms (p50 / min) | recording work % of plain (p50 / min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.cell} | {r.samples} | {r.plain_ms[0]:.3f} / {r.plain_ms[1]:.3f} | "
            f"{r.recorded_ms[0]:.3f} / {r.recorded_ms[1]:.3f} | {r.added_ms(0):.3f} / {r.added_ms(1):.3f} | "
            f"{r.added_pct(0):.1f} / {r.added_pct(1):.1f} | {r.work_ms[0]:.3f} / {r.work_ms[1]:.3f} | "
            f"{r.work_pct(0):.1f} / {r.work_pct(1):.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the benchmark DataFrame")
    parser.add_argument("--samples", type=int, default=40, help="timed runs per cell and variant")
    parser.add_argument(
        "--new-text", action="store_true", help="analyze every recorded run afresh (no reused plan)"
    )
    args = parser.parse_args(argv)
    print(render(run(args.rows, args.samples, args.new_text)))


if __name__ == "__main__":
    main()
