"""Benchmarks by name: the one registry `bench=<name>` and `make eval BENCH=<name>` read.

    from eval.benchmarks.registry import BENCHMARKS, get_benchmark, register_benchmark
    bench = get_benchmark("synth")          # a Benchmark (eval.benchmarks.base) for eval.runner
    register_benchmark("mine", MyBench)     # a benchmark that lives outside eval/benchmarks/

A benchmark is one folder under eval/benchmarks/, found by its path (lm-eval's way): the folder's
name is the benchmark's name, and the registry lists every folder that holds one, so adding a
benchmark is adding its folder (and its configs/bench/<name>.yaml). In the folder, `bench.py` (or
the package's `__init__.py`) defines the `Benchmark` whose `name` is the folder's; a folder with a
`run.py` and no `bench.py` is a `StandaloneBenchmark`, an experiment of another shape with its own
Hydra entry point and config (StateWise: cases and conditions over a record store).
`python -m eval.benchmarks NAME [overrides]` (`make eval BENCH=NAME`) runs either kind. Listing
reads folder names only; a benchmark's module is imported when its factory is called.
"""

from __future__ import annotations

import importlib
import runpy
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from eval.benchmarks.base import Benchmark
from stateguard.registry import add

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

_FOLDER = Path(__file__).resolve().parent


def _from_folder(name: str, root: Path = _FOLDER) -> Benchmark | StandaloneBenchmark:
    """The benchmark of eval/benchmarks/<name>/: a standalone entry point, or the class in its
    `bench.py` (else its package) whose `name` is the folder's."""
    folder = root / name
    if (folder / "run.py").is_file() and not (folder / "bench.py").is_file():
        return StandaloneBenchmark(name, f"eval.benchmarks.{name}.run")
    module_name = (
        f"eval.benchmarks.{name}.bench" if (folder / "bench.py").is_file() else f"eval.benchmarks.{name}"
    )
    module = importlib.import_module(module_name)
    found = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and getattr(obj, "name", None) == name
        and callable(getattr(obj, "load", None))
    ]
    if len(found) != 1:
        raise ValueError(
            f"eval/benchmarks/{name}/: {module_name} should define one Benchmark class with name = {name!r} "
            f"(found {len(found)}); see docs/extending.md"
        )
    bench: Benchmark = found[0]()
    return bench


def _folders(root: Path = _FOLDER) -> dict[str, BenchmarkFactory]:
    """Every folder of eval/benchmarks/ (`root`) that holds a benchmark (a package, or a `run.py`)."""
    names = sorted(
        d.name
        for d in root.iterdir()
        if d.is_dir() and any((d / f).is_file() for f in ("__init__.py", "bench.py", "run.py"))
    )
    return {name: partial(_from_folder, name, root) for name in names}


BENCHMARKS: dict[str, BenchmarkFactory] = _folders()


def register_benchmark(name: str, factory: BenchmarkFactory) -> None:
    """Add a benchmark that lives outside eval/benchmarks/ under `name`; a taken name is an error."""
    add(BENCHMARKS, name, factory, axis="benchmark")


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
