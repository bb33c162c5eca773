"""Run a registered benchmark by name: what `make eval BENCH=<name> ARGS='...'` calls.

    python -m eval.benchmarks                        # eval.runner with configs/eval.yaml's default (synth)
    python -m eval.benchmarks dev limit=2            # eval.runner bench=dev limit=2
    python -m eval.benchmarks statewise split=heldout  # a standalone benchmark's own entry point

A name from `eval.benchmarks.registry.BENCHMARKS` may come first; everything else is handed to the
chosen entry point as Hydra overrides. An unknown name exits with status 2 and the list of names.
"""

from __future__ import annotations

import runpy
import sys

from eval.benchmarks.registry import BENCHMARKS, StandaloneBenchmark


def main(argv: list[str]) -> None:
    name = argv[0] if argv and "=" not in argv[0] and not argv[0].startswith("-") else None
    overrides = argv[1:] if name is not None else argv
    if name is not None and name not in BENCHMARKS:
        sys.stderr.write(f"error: benchmark {name!r} is not registered; use one of {', '.join(BENCHMARKS)}\n")
        raise SystemExit(2)
    entry = BENCHMARKS[name]() if name is not None else None
    if isinstance(entry, StandaloneBenchmark):
        sys.argv = [entry.module, *overrides]
        entry.main()
        return
    sys.argv = ["eval.runner", *([f"bench={name}"] if name is not None else []), *overrides]
    runpy.run_module("eval.runner", run_name="__main__", alter_sys=True)  # as `python -m eval.runner`


if __name__ == "__main__":
    main(sys.argv[1:])
