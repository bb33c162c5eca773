"""Benchmarks by name, for `bench=<name>` (each lives in its own folder under eval/benchmarks)."""

from __future__ import annotations

from eval.benchmarks.base import Benchmark

__all__ = ["BENCHMARKS", "get_benchmark"]

BENCHMARKS = ("synth", "dev", "longds", "dabstep", "dacomp_de")


def get_benchmark(name: str) -> Benchmark:
    if name == "synth":
        from eval.benchmarks.synth import SynthBench

        return SynthBench()
    if name == "dev":
        from eval.benchmarks.dev.bench import DevBench

        return DevBench()
    if name == "longds":
        from eval.benchmarks.longds.bench import LongDSBench

        return LongDSBench()
    if name == "dabstep":
        from eval.benchmarks.dabstep.bench import DabstepBench

        return DabstepBench()
    if name == "dacomp_de":
        from eval.benchmarks.dacomp_de.bench import DACompDEBench

        return DACompDEBench()
    raise ValueError(f"bench={name!r}: use one of {', '.join(BENCHMARKS)}")
