"""Benchmarks by name: the one registry `bench=<name>` and `make eval BENCH=<name>` read.

    from eval.benchmarks.registry import BENCHMARKS, get_benchmark, register_benchmark
    register_benchmark("mine", MyBench)     # then: make eval BENCH=mine (with configs/bench/mine.yaml)
    bench = get_benchmark("synth")          # a Benchmark (eval.benchmarks.base) for eval.runner

Each benchmark is one folder under eval/benchmarks/. A factory returns either a `Benchmark`, whose
tasks `eval.runner` rolls out in the baseline and StateGuard arms, or a `StandaloneBenchmark`: an
experiment of another shape (StateWise: cases and conditions over a record store) that has its own
Hydra entry point and config; `python -m eval.benchmarks NAME [overrides]` (`make eval BENCH=NAME`)
runs either kind. Factories import their folder only when called, so listing the names is cheap.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from dataclasses import dataclass

from eval.benchmarks.base import Benchmark

__all__ = ["BENCHMARKS", "BenchmarkFactory", "StandaloneBenchmark", "get_benchmark", "register_benchmark"]


@dataclass(frozen=True)
class StandaloneBenchmark:
    """A benchmark run by its own entry point: `module` has a Hydra `main()` with its own config."""

    name: str
    module: str

    def main(self) -> None:
        """Run the entry point on the command line in `sys.argv`, exactly as `python -m <module>`."""
        runpy.run_module(self.module, run_name="__main__", alter_sys=True)


BenchmarkFactory = Callable[[], Benchmark | StandaloneBenchmark]


def _synth() -> Benchmark:
    from eval.benchmarks.synth import SynthBench

    return SynthBench()


def _dev() -> Benchmark:
    from eval.benchmarks.dev.bench import DevBench

    return DevBench()


def _natural() -> Benchmark:
    from eval.benchmarks.natural.bench import NaturalBench

    return NaturalBench()


def _longds() -> Benchmark:
    from eval.benchmarks.longds.bench import LongDSBench

    return LongDSBench()


def _dabstep() -> Benchmark:
    from eval.benchmarks.dabstep.bench import DabstepBench

    return DabstepBench()


def _dacomp_de() -> Benchmark:
    from eval.benchmarks.dacomp_de.bench import DACompDEBench

    return DACompDEBench()


BENCHMARKS: dict[str, BenchmarkFactory] = {
    "synth": _synth,
    "dev": _dev,
    "natural": _natural,
    "longds": _longds,
    "dabstep": _dabstep,
    "dacomp_de": _dacomp_de,
    "statewise": lambda: StandaloneBenchmark("statewise", "eval.benchmarks.statewise.run"),
}


def register_benchmark(name: str, factory: BenchmarkFactory) -> None:
    """Add a benchmark under `name`; a name already taken is an error (remove it first)."""
    if name in BENCHMARKS:
        raise ValueError(f"benchmark {name!r} is already registered; pick another name")
    BENCHMARKS[name] = factory


def get_benchmark(name: str) -> Benchmark:
    """The benchmark `eval.runner` rolls out; a standalone one is refused with the command that runs it."""
    factory = BENCHMARKS.get(name)
    if factory is None:
        raise ValueError(f"bench={name!r}: use one of {', '.join(BENCHMARKS)}")
    bench = factory()
    if isinstance(bench, StandaloneBenchmark):
        raise ValueError(
            f"bench={name!r} has its own entry point ({bench.module}); run it with "
            f"`make eval BENCH={name}` or `python -m eval.benchmarks {name}`"
        )
    return bench
