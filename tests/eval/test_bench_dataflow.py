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


def test_new_text_analyzes_every_recorded_run_afresh(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    analyses: list[str] = []
    real = dataflow.CellRecorder.start

    def counted(self, code, namespace):  # type: ignore[no-untyped-def]
        before = self.plans.misses
        prepared = real(self, code, namespace)
        if self.plans.misses > before:
            analyses.append(code)
        return prepared

    monkeypatch.setattr(dataflow.CellRecorder, "start", counted)
    dataflow.run(rows=500, samples=2)
    reused = len(analyses)
    analyses.clear()
    dataflow.run(rows=500, samples=2, new_text=True)
    cells = len(dataflow.CELLS)
    assert reused == cells  # one analysis per cell: the warm-up's first run; the rest reuse it
    assert len(analyses) == cells * (1 + 2)  # ... and with --new-text, every timed run as well
