"""The built-in demo and the runtime example (docs/design_runtime.md) produce the documented results."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from eval.demo import render, run
from stateguard.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]


def _cfg(**overrides: object):
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("demo", overrides=[f"{k}={v}" for k, v in overrides.items()])


@pytest.mark.parametrize(
    ("flow", "workspace"), [("turn_aligned", "sandbox"), ("segment", "sandbox"), ("turn_aligned", "dict")]
)
def test_demo_prints_per_turn_correctness_side_by_side(tmp_path: Path, flow: str, workspace: str) -> None:
    result = run(_cfg(run_dir=str(tmp_path), workspace=workspace, flow=flow))
    assert result.baseline == {1: True, 2: True, 3: True, 4: True, 5: False, 6: False}
    late = flow == "segment"  # the review comes after turn 5's answer was submitted: only turn 6 is saved
    assert result.stateguard == {t: not (late and t == 5) for t in range(1, 7)}
    assert result.repairs == 1 and result.stale_states[:2] == ["S1", "S2"]
    text = render(result)
    assert (
        "accuracy: baseline 67%, +StateGuard 83%" if late else "accuracy: baseline 67%, +StateGuard 100%"
    ) in text
    assert "6    WRONG     ok" in text and ("5    WRONG     WRONG" if late else "5    WRONG     ok") in text
    events = read_trace(tmp_path / "stateguard" / "trace.jsonl")
    assert sum(e.kind == "repair" for e in events) == 1
    assert json.loads((tmp_path / "baseline" / "result.json").read_text())["arm"] == "baseline"


def test_demo_rejects_unknown_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="use one of sandbox, dict"):
        run(_cfg(run_dir=str(tmp_path), workspace="docker"))


def test_bench_config_composes() -> None:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("perf", overrides=["sizes=[10]", "samples=3"])
    assert list(cfg.sizes) == [10] and cfg.thread_length == 10


def test_runtime_example_prints_the_stale_states(capsys) -> None:
    runpy.run_path(str(ROOT / "docs" / "example_invalidate.py"))
    out = capsys.readouterr().out
    assert "current: revenue@S4" in out
    assert "stale states: ['S1', 'S2', 'S3']" in out
    assert "stale variables: ['revenue@S1', 'margin@S2', 'ratio@S3']" in out
    shown = (ROOT / "docs" / "design_runtime.md").read_text()
    body = (ROOT / "docs" / "example_invalidate.py").read_text().split('"""', 2)[2].strip()
    assert body in shown, "docs/design_runtime.md's example drifted from docs/example_invalidate.py"


def test_bench_runs_tiny(tmp_path: Path) -> None:
    from eval.perf.runtime import render as render_bench
    from eval.perf.runtime import run as run_bench

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("perf", overrides=["sizes=[30,60]", "samples=5", f"work_dir={tmp_path}"])
    rows = run_bench(cfg)
    assert {(r.operation.split()[0], r.size) for r in rows} >= {
        ("OPEN+UPDATE+FINALIZE+COMMIT", 30),
        ("OPEN+UPDATE+FINALIZE+COMMIT", 60),
    }
    assert all(r.median_ms <= r.p99_ms and 0 < r.cpu_median_ms <= r.cpu_p99_ms for r in rows)
    assert "| OPEN+UPDATE+FINALIZE+COMMIT (harness) |" in render_bench(rows)
    json.dumps([r.model_dump() for r in rows])


def test_bench_reuses_a_filled_store(tmp_path: Path) -> None:
    """`reuse_prefill=true` fills the store once and starts the next run from a copy of it: the
    same states and threads, and the kept copy is never written to."""
    from eval.perf.runtime import _store

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        cfg = compose("perf", overrides=["sizes=[40]", f"work_dir={tmp_path}", "reuse_prefill=true"])
    first, threads = _store(40, cfg)
    ids = first.ids()
    first.commit(first.load(ids[-1]).model_copy(update={"id": first.reserve_id(), "relations": []}))
    first.close()
    kept = (tmp_path / "states-40-prefill.sqlite").read_bytes()
    again, threads_again = _store(40, cfg)
    assert again.ids() == ids and threads_again == threads and len(ids) == 40
    again.close()
    assert (tmp_path / "states-40-prefill.sqlite").read_bytes() == kept
