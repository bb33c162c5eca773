"""The harness cycle's breakdown (eval/perf/cycle_parts.py): counts per cycle, and nothing left patched."""

from __future__ import annotations

from pathlib import Path

from eval.perf.cycle_parts import render, run
from stateguard import Harness, StateStore
from stateguard.trace import Trace


def test_the_breakdown_counts_what_one_cycle_does_and_restores_everything(tmp_path: Path) -> None:
    originals = (Harness.apply, StateStore.commit, Trace.emit, Trace.emit_known)
    result = run(size=60, samples=20, work_dir=str(tmp_path), warmup=3)
    parts = {p.part: p for p in result.parts}
    # One cycle: four actions, one commit with its one SQL COMMIT, nine trace events (each of a
    # shape the warm-up cycles validated, so none goes through the validating `emit`).
    assert parts["harness: apply (all four actions)"].calls_per_cycle == 4
    assert parts["store: commit"].calls_per_cycle == 1
    assert parts["sql: COMMIT"].calls_per_cycle == 1
    assert parts["trace: emit_known (a shape seen before)"].calls_per_cycle == 9
    assert "trace: emit (validated)" not in parts
    assert (
        parts["harness: apply (all four actions)"].cpu_ms_per_cycle
        >= parts["store: commit"].cpu_ms_per_cycle
        > 0
    )
    assert result.trace_off_ms > 0 and result.trace_on_ms > 0
    assert (Harness.apply, StateStore.commit, Trace.emit, Trace.emit_known) == originals
    assert "| trace: emit_known (a shape seen before) | 9.0 |" in render(result)
