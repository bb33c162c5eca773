"""The in-process before/after of the harness cycle (eval/perf/cycle_ab.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import eval.perf.cycle_ab as ab


@pytest.fixture(autouse=True)
def _forget_old_modules():
    """The old versions are registered as `<name>@before` while they run; leave none behind for
    other tests that look through sys.modules."""
    yield
    for name in [n for n in sys.modules if n.endswith("@before")]:
        del sys.modules[name]


def test_changed_modules_are_loaded_apart_and_import_each_other(monkeypatch: pytest.MonkeyPatch) -> None:
    """When a module's text differs, every runtime module runs in its old version, and an old
    module that imports a name from another gets the old object, not this checkout's: an
    unchanged harness must drive the old trace (it ran the new one before, and so compared the
    trace's change with itself)."""
    marked = {"stateguard/store.py", "stateguard/trace.py"}

    def fake_git(*args: str) -> str:
        path = args[-1].split(":", 1)[1]
        text = (ab.ROOT / path).read_text()
        return text + "\nOLD_VERSION = True\n" if path in marked else text

    monkeypatch.setattr(ab, "_git", fake_git)
    assert ab.changed("HEAD") == ["stateguard.store", "stateguard.trace"]
    old = ab.load_before("HEAD")
    assert sorted(old) == sorted(ab.MODULES)
    assert old["stateguard.store"].OLD_VERSION and old["stateguard.trace"].OLD_VERSION
    assert not hasattr(old["stateguard.harness"], "OLD_VERSION")
    assert old["stateguard.harness"].StateStore is old["stateguard.store"].StateStore
    assert old["stateguard.harness"].StateStore is not sys.modules["stateguard.store"].StateStore
    assert old["stateguard.harness"].Trace is old["stateguard.trace"].Trace
    assert old["stateguard.harness"].Trace is not sys.modules["stateguard.trace"].Trace


def test_the_same_code_on_both_sides_runs_every_cycle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ab, "_git", lambda *args: (ab.ROOT / args[-1].split(":", 1)[1]).read_text())
    result = ab.run("HEAD", size=40, rounds=2, block=5, work_dir=str(tmp_path))
    assert result.loaded == [] and result.cycles == 10
    assert result.before_ms[0] > 0 and result.after_ms[0] > 0 and result.ratio[0] > 0
    # wall clock beside CPU: a cycle's wall time is never less than the thread's CPU time in it
    assert result.before_wall_ms[0] >= result.before_ms[0] * 0.99 and result.wall_ratio[1] > 0
    assert "wall (median / p99 ms)" in ab.render(result)
    assert "none differ" in ab.render(result)


def test_cycle_count_runs_the_cycles_it_is_asked_for(tmp_path: Path) -> None:
    """`eval.perf.cycle_count` (what callgrind counts): a copy of the filled store each run, so two
    runs start from the same store and the kept one is not changed."""
    import sqlite3

    from eval.perf import cycle_count

    kept = tmp_path / "states-30-prefill.sqlite"
    assert cycle_count.run(3, size=30, warmup=2, work_dir=str(tmp_path)) == 3
    before = kept.read_bytes()
    assert cycle_count.run(0, size=30, warmup=1, work_dir=str(tmp_path)) == 0
    assert kept.read_bytes() == before
    db = sqlite3.connect(f"file:{kept}?mode=ro", uri=True)
    assert db.execute("SELECT COUNT(*) FROM states").fetchone()[0] == 30
    db.close()


def test_an_old_store_that_cannot_open_this_layout_fills_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the old store refuses this checkout's filled store (an earlier store layout), the old
    side times a store its own code filled, kept per commit and filled once."""
    from omegaconf import OmegaConf

    from eval.perf.runtime import _store
    from stateguard import StateStore
    from stateguard.store import StoreError

    monkeypatch.setattr(ab, "_git", lambda *args: "abc123\n")
    cfg = OmegaConf.create({"work_dir": str(tmp_path), "reuse_prefill": True, "thread_length": 10, "seed": 0})
    _store(30, cfg)[0].close()
    kept = tmp_path / "states-30-prefill.sqlite"
    opened: list[str] = []

    class Old(StateStore):  # opens only the stores it creates itself
        def __init__(self, path: str | Path) -> None:
            opened.append(Path(path).name)
            if Path(path).exists() and "prefill-abc123" not in Path(path).name:
                raise StoreError(f"{path}: a layout this code does not read")
            super().__init__(path)

    assert ab._kept_for("HEAD", StateStore, kept, 30, str(tmp_path)) == kept
    own = ab._kept_for("HEAD", Old, kept, 30, str(tmp_path))
    assert own == tmp_path / "states-30-prefill-abc123.sqlite"
    copy = ab._copy_store(own, tmp_path / "copy.sqlite")
    assert len(copy) == 30
    copy.close()
    made = own.stat().st_mtime_ns
    assert ab._kept_for("HEAD", Old, kept, 30, str(tmp_path)) == own and own.stat().st_mtime_ns == made
    assert opened.count("states-30-prefill-abc123.filling") == 1  # filled once
    assert not list(tmp_path.glob("*probe*")) and not list(tmp_path.glob("*.filling*"))
