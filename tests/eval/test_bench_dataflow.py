"""The dataflow benchmark (`python -m eval.perf.dataflow`) runs on a small frame and prints its table."""

from __future__ import annotations

from eval.perf import dataflow


def test_bench_rows_and_table() -> None:
    rows = dataflow.run(rows=2_000, samples=2)
    assert [r.cell for r in rows] == list(dataflow.CELLS)
    for r in rows:
        assert r.samples == 2
        assert 0 < r.work_ms[1] <= r.work_ms[0] and r.work_ms[1] < r.recorded_ms[1], r
        assert r.plain_ms[1] > 0 and r.recorded_ms[1] > 0
    table = dataflow.render(rows)
    assert table.count("\n") == len(rows) + 1 and "recording work" in table
