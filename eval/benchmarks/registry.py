"""Benchmarks by name, for `bench=<name>` (each lives in its own folder under eval/benchmarks)."""

from __future__ import annotations

from eval.benchmarks.base import Benchmark

__all__ = ["BENCHMARKS", "get_benchmark"]

BENCHMARKS = ("synth", "longds", "dabstep", "dacomp_de")


def get_benchmark(name: str) -> Benchmark:
    if name == "synth":
        from eval.benchmarks.synth import SynthBench

        return SynthBench()
    if name == "longds":
        from eval.benchmarks.longds.bench import LongDSBench

        return LongDSBench()
    if name in ("dabstep", "dacomp_de"):
        raise NotImplementedError(
            f"bench={name}: its loader and scorer exist (eval/benchmarks/{name}/), but the runner adapter that "
            "drives an LLM worker through its tasks is not built yet; score saved predictions with "
            f"eval.benchmarks.{name}.scorer instead"
        )
    raise ValueError(f"bench={name!r}: use one of {', '.join(BENCHMARKS)}")
