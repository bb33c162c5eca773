"""Sandbox micro-benchmarks: isolation cost, probe latency vs. a fresh interpreter, dataflow cost.

- Kernel start and the round trip of a trivial cell (`x = 1`) under each isolation mode:
  `bwrap` (the bubblewrap sandbox, the default) and `process` (the weaker opt-in mode, a plain
  child process as before bubblewrap). The round trip includes the per-request reply pipe, the
  background-thread sweep and, under bwrap, mirroring the scratch tmpfs to the host (also timed
  with 200 files in scratch).

- `run_probe` forks the live kernel (copy-on-write), so a verification program over a loaded
  100k-row DataFrame should cost milliseconds; the alternative without a live kernel is a fresh
  interpreter that imports pandas and loads the same CSV (`fresh python`). A probe after a cell,
  the pattern of a worker's turn preview, is timed with the kernel's probe child forked on the
  probe's path (`probe_prefork="off"`) and forked in advance at the end of the cell ("adaptive",
  the default, once the workspace has been probed), taking turns; the cell's round trip beside
  it shows where the fork went.
- Every cell records its dataflow in the kernel; its value checks (fingerprints of variables
  handed to calls, content equality of rewritten ones) can be turned off with
  `SandboxWorkspace(..., runtime_hashing=False)`. The overhead row compares the same ~10 ms cell
  with and without them (`python -m eval.perf.dataflow` measures the whole recording).
- Kernel start, snapshot and restore of the same frame, for scale.

    python -m eval.perf.sandbox                  # or: make bench
    python -m eval.perf.sandbox --rows 20000 --probes 20 --starts 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from stateguard.sandbox import SandboxLimits, SandboxWorkspace

CELL = "top = df.sort_values('b').groupby('k')['b'].agg(['mean', 'std', 'count'])"  # reads df, ~10 ms
PROBE = "result = float(df['b'].mean())"


class Row(BaseModel):
    operation: str
    samples: int
    p50_ms: float
    p95_ms: float


def _timed(fn: Callable[[], object], samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _row(operation: str, times: list[float]) -> Row:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return Row(operation=operation, samples=len(times), p50_ms=statistics.median(ordered), p95_ms=p95)


def _write_data(task: Path, rows: int) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "a": np.arange(rows),
            "b": rng.random(rows),
            "k": rng.integers(0, 50, rows),
            "s": rng.choice(["north", "south", "east", "west"], rows),
        }
    )
    path = task / "data.csv"
    frame.to_csv(path, index=False)
    return path


def _isolation_rows(root: Path, starts: int, cells: int) -> list[Row]:
    """Kernel start and trivial-cell round trip per isolation mode, interleaved so load hits both alike."""
    start_ms: dict[str, list[float]] = {"bwrap": [], "process": []}
    for i in range(starts):
        for mode in start_ms:
            t = time.perf_counter()
            limits = SandboxLimits.model_validate({"isolation": mode})
            SandboxWorkspace(
                None, root / f"start-{mode}{i}" / "s", root / f"start-{mode}{i}" / "c", limits
            ).close()
            start_ms[mode].append((time.perf_counter() - t) * 1000)
    spaces = {
        mode: SandboxWorkspace(
            None,
            root / f"rt-{mode}" / "s",
            root / f"rt-{mode}" / "c",
            SandboxLimits.model_validate({"isolation": mode}),
        )
        for mode in start_ms
    }
    trip: dict[str, list[float]] = {mode: [] for mode in spaces}
    try:
        for ws in spaces.values():
            ws.run_cell("x = 1")
        for _ in range(cells):
            for mode, ws in spaces.items():
                trip[mode] += _timed(lambda ws=ws: ws.run_cell("x = 1"), 1)  # type: ignore[misc]
        many = spaces["bwrap"]
        many.run_cell(
            "import os\nos.makedirs('files', exist_ok=True)\nfor i in range(200):\n    open(f'files/{i}.txt', 'w').write(str(i))"
        )
        with_files = _timed(lambda: many.run_cell("x = 1"), cells)
    finally:
        for ws in spaces.values():
            ws.close()
    return [
        _row("kernel start, isolation=bwrap (python + pandas + audit hook)", start_ms["bwrap"]),
        _row("kernel start, isolation=process", start_ms["process"]),
        _row("cell round trip `x = 1`, isolation=bwrap", trip["bwrap"]),
        _row("cell round trip `x = 1`, isolation=process", trip["process"]),
        _row("cell round trip `x = 1`, bwrap, 200 files in scratch (mirror walk)", with_files),
    ]


def _workspace(root: Path, name: str, hashing: bool, limits: SandboxLimits | None = None) -> SandboxWorkspace:
    ws = SandboxWorkspace(
        root / "task",
        root / name / "scratch",
        root / name / "checkpoints",
        limits or SandboxLimits(),
        runtime_hashing=hashing,
    )
    loaded = ws.run_cell("import pandas as pd\ndf = pd.read_csv('../../task/data.csv')\ndf.shape")
    if not loaded.ok:
        raise RuntimeError(f"loading the benchmark data failed: {loaded.error}")
    return ws


def _prefork_rows(root: Path, rows: int, probes: int) -> list[Row]:
    """A cell (`i = n`) then a probe, with the probe's child forked on its path and in advance."""
    modes = ("off", "adaptive")
    spaces = {m: _workspace(root, f"prefork-{m}", True, SandboxLimits(probe_prefork=m)) for m in modes}
    probe_ms: dict[str, list[float]] = {m: [] for m in modes}
    cell_ms: dict[str, list[float]] = {m: [] for m in modes}
    try:
        for ws in spaces.values():
            ws.run_cell(CELL)
            ws.run_probe(PROBE)  # warm-up; and "adaptive" forks in advance from now on
        for n in range(probes):
            for mode, ws in spaces.items():
                cell_ms[mode] += _timed(lambda ws=ws, n=n: ws.run_cell(f"i = {n}"), 1)  # type: ignore[misc]
                probe_ms[mode] += _timed(lambda ws=ws: ws.run_probe(PROBE), 1)  # type: ignore[misc]
    finally:
        for ws in spaces.values():
            ws.close()
    out = []
    for mode in modes:
        out.append(
            _row(f"run_probe after a cell, {rows:,}-row DataFrame, probe_prefork={mode}", probe_ms[mode])
        )
        out.append(_row(f"  the cell `i = n` before it, probe_prefork={mode}", cell_ms[mode]))
    return out


def run(
    rows: int = 100_000,
    probes: int = 50,
    cells: int = 30,
    fresh: int = 5,
    work_dir: Path | None = None,
    starts: int = 5,
) -> list[Row]:
    root = Path(tempfile.mkdtemp(prefix="sandbox-bench-", dir=work_dir))
    try:
        (root / "task").mkdir()
        data = _write_data(root / "task", rows)
        out: list[Row] = _isolation_rows(root, starts, cells)

        hashed, plain = _workspace(root, "hashed", True), _workspace(root, "plain", False)
        try:
            for ws in (hashed, plain):  # warm-up: first groupby/sort pay one-off costs
                ws.run_cell(CELL)
                ws.run_probe(PROBE)
            out.append(
                _row(
                    f"run_probe over a {rows:,}-row DataFrame, one after another (fork on each)",
                    _timed(lambda: hashed.run_probe(PROBE), probes),
                )
            )
            out += _prefork_rows(root, rows, probes)
            script = f"import pandas as pd; df = pd.read_csv({str(data)!r}); print(float(df['b'].mean()))"
            out.append(
                _row(
                    "fresh python: import pandas + read_csv + same probe",
                    _timed(
                        lambda: subprocess.run(
                            [sys.executable, "-c", script], check=True, capture_output=True
                        ),
                        fresh,
                    ),
                )
            )
            walls: list[float] = []
            with_hash = _timed(lambda: walls.append(hashed.run_cell(CELL).wall_s * 1000), cells)
            without = _timed(lambda: plain.run_cell(CELL).wall_s, cells)
            out.append(_row("cell body alone (wall_s inside the kernel)", walls))
            out.append(_row("cell round trip, dataflow without value checks", without))
            out.append(_row("cell round trip, dataflow with value checks", with_hash))
            overhead = [w - o for w, o in zip(sorted(with_hash), sorted(without), strict=True)]
            out.append(_row("value checks' cost per cell (quantile difference)", overhead))
            out.append(_row(f"snapshot ({rows:,}-row frame)", _timed(lambda: hashed.snapshot("bench"), 5)))
            out.append(_row(f"restore ({rows:,}-row frame)", _timed(lambda: hashed.restore("bench"), 5)))
        finally:
            hashed.close()
            plain.close()
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def render(rows: list[Row]) -> str:
    lines = ["| operation | samples | p50 ms | p95 ms |", "|---|---|---|---|"]
    lines += [f"| {r.operation} | {r.samples} | {r.p50_ms:.2f} | {r.p95_ms:.2f} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the benchmark DataFrame")
    parser.add_argument("--probes", type=int, default=50, help="timed run_probe calls")
    parser.add_argument("--cells", type=int, default=30, help="timed cells per dataflow variant")
    parser.add_argument("--fresh", type=int, default=5, help="timed fresh-interpreter runs")
    parser.add_argument("--starts", type=int, default=5, help="timed kernel starts per isolation mode")
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="where the temporary task/scratch dirs go"
    )
    args = parser.parse_args(argv)
    print(render(run(args.rows, args.probes, args.cells, args.fresh, args.work_dir, args.starts)))


if __name__ == "__main__":
    main()
