"""The harness cycle for an instruction counter: open a copy of the filled store, run cycles, exit.

On a loaded machine a clock cannot separate a change of a few percent from the noise;
`valgrind --tool=callgrind` counts the instructions a process runs, which load does not change.
Run this twice per version, with no cycles and with N, under the counter: the difference divided
by N is one cycle's instructions (the start-up, the store's open-time check and the warm-up
cycles cancel). Fix the hash seed and compile the bytecode first, or the two runs differ by more
than the change.

    python -m compileall -q stateguard eval
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/c0 python -m eval.perf.cycle_count --cycles 0
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/c1 python -m eval.perf.cycle_count --cycles 1000
    # (the "Collected" of the second - that of the first) / 1000; callgrind_annotate shows where
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from omegaconf import OmegaConf

from eval.perf.cycle_ab import _copy_store
from eval.perf.runtime import _store, harness_cycle
from stateguard import Harness, HarnessConfig


def run(cycles: int, *, size: int = 100_000, warmup: int = 100, work_dir: str = "runs/bench") -> int:
    """Run `warmup` and then `cycles` harness cycles on a copy of the filled store (filled first
    if `work_dir` has none, as `make bench` fills it); returns the cycles run after the warm-up."""
    cfg = OmegaConf.create({"work_dir": work_dir, "reuse_prefill": True, "thread_length": 10, "seed": 0})
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    _store(size, cfg)[0].close()
    kept = Path(work_dir) / f"states-{size}-prefill.sqlite"
    with tempfile.TemporaryDirectory() as tmp:
        store = _copy_store(kept, Path(tmp) / f"states-{size}-counted.sqlite")
        try:
            cycle = harness_cycle(store, Harness(store, HarnessConfig(regime="turn_aligned")))
            for i in range(warmup + cycles):
                cycle(i)
        finally:
            store.close()
    return cycles


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cycles", type=int, required=True, help="cycles after the warm-up (0 for the baseline)"
    )
    parser.add_argument("--size", type=int, default=100_000, help="committed states before the cycles")
    parser.add_argument("--warmup", type=int, default=100, help="cycles run first, in both runs")
    parser.add_argument(
        "--work-dir", default="runs/bench", help="where the filled store is kept (as make bench)"
    )
    args = parser.parse_args(argv)
    print(f"{run(args.cycles, size=args.size, warmup=args.warmup, work_dir=args.work_dir)} cycles")


if __name__ == "__main__":
    main()
