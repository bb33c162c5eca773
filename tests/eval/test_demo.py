"""The built-in demo (`make eval` for now) and the README example produce the documented results."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

from hydra import compose, initialize_config_dir

from eval.demo import EXPECTED, render, run
from stateguard.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]


def _cfg(**overrides: object):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("demo", overrides=[f"{k}={v}" for k, v in overrides.items()])


def test_demo_baseline_propagates_and_stateguard_repairs(tmp_path: Path) -> None:
    result = run(_cfg(run_dir=str(tmp_path)))
    assert result.baseline == [500.0, 200.0, 0.4, 450.0, 50.0]
    assert result.stateguard == EXPECTED
    assert result.repairs == 1
    assert result.stale_states == ["S1", "S2", "S3"]
    text = render(result)
    assert "50x" in text and "built-in" in text

    events = read_trace(tmp_path / "stateguard" / "trace.jsonl")
    kinds = [e.kind for e in events]
    repair = next(e for e in events if e.kind == "repair")
    assert repair.data["state_id"] == "S5" and repair.data["mode"] == "light"
    committed = [e.data["state"] for e in events if e.kind == "state_committed"]
    assert [s["id"] for s in committed] == ["S1", "S2", "S3", "S4", "S5"]
    assert committed[3]["relations"] == [{"type": "invalidate", "related_state_id": "S1"}]
    # After the repair, turn 5 uses a margin computed in S5, not the stale margin@S2.
    assert {v["name"]: v["version"] for v in committed[4]["used_variables"]}["margin"] == "S5"
    assert kinds.count("run_end") == 1
    assert not (tmp_path / "baseline" / "trace.jsonl").read_text().count('"kind":"repair"')


def test_demo_with_a_repair_budget_of_one_still_repairs(tmp_path: Path) -> None:
    # Budget 1: the first repair is light and suffices; the result must be unchanged.
    result = run(_cfg(run_dir=str(tmp_path), repair_budget=1))
    assert result.stateguard == EXPECTED


def test_bench_config_composes() -> None:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("bench", overrides=["sizes=[10]", "samples=3"])
    assert list(cfg.sizes) == [10] and cfg.thread_length == 10


def test_readme_example_prints_the_stale_states(capsys) -> None:
    runpy.run_path(str(ROOT / "docs" / "example_invalidate.py"))
    out = capsys.readouterr().out
    assert "current: revenue@S4" in out
    assert "stale states: ['S1', 'S2', 'S3']" in out
    assert "stale variables: ['revenue@S1', 'margin@S2', 'ratio@S3']" in out
    readme = (ROOT / "README.md").read_text()
    body = (ROOT / "docs" / "example_invalidate.py").read_text().split('"""', 2)[2].strip()
    assert body in readme, "README example drifted from docs/example_invalidate.py"


def test_bench_runs_tiny(tmp_path: Path) -> None:
    from eval.bench.runtime import render as render_bench
    from eval.bench.runtime import run as run_bench

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("bench", overrides=["sizes=[30,60]", "samples=5", f"work_dir={tmp_path}"])
    rows = run_bench(cfg)
    assert {(r.operation.split()[0], r.size) for r in rows} >= {("OPEN+UPDATE+COMMIT", 30), ("OPEN+UPDATE+COMMIT", 60)}
    assert all(r.median_ms <= r.p99_ms for r in rows)
    assert "| OPEN+UPDATE+COMMIT (harness) |" in render_bench(rows)
    json.dumps([r.model_dump() for r in rows])
