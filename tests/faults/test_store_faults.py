"""Fault suite, state store: damaged files are refused with the path and the fix, never read as if
whole (0-byte file, garbage in the pages, rewritten rows, garbage in or loss of the WAL)."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from stateguard.state import AnalyticalState, Conclusion, Relation, VariableRef
from stateguard.store import StateStore, StoreCorrupt, StoreError


def _fill(store: StateStore, n: int) -> None:
    for k in range(1, n + 1):
        sid = store.reserve_id()
        rels = (
            [Relation(type="progress", related_state_id=store.latest_id())]
            if k > 1
            else [Relation(type="init")]
        )
        store.commit(
            AnalyticalState(
                id=sid,
                issue=f"issue {k} " + "x" * 300,
                relations=rels,
                used_variables=[VariableRef(name=f"v{k % 7}", version=sid, value=[k] * 20)],
                conclusions=[Conclusion(text=f"c{k}")],
            )
        )


def _live_copy(tmp_path: Path, n: int = 40) -> Path:
    """The files of a store whose writer is still running (its commits are in the WAL), as a
    killed process leaves them."""
    src = tmp_path / "live" / "states.sqlite"
    store = StateStore(src)
    _fill(store, n)
    dst = tmp_path / "copy"
    dst.mkdir()
    for f in src.parent.iterdir():
        shutil.copyfile(f, dst / f.name)
    store.close()
    assert (dst / "states.sqlite-wal").stat().st_size > 0
    return dst / "states.sqlite"


def _ids(path: Path) -> list[str]:
    store = StateStore.open_read_only(path)
    try:
        return store.ids()
    finally:
        store.close()


def test_a_zero_byte_file_is_not_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "states.sqlite"
    path.write_bytes(b"")
    for opener in (StateStore, StateStore.open_read_only):
        with pytest.raises(StoreCorrupt, match=r"states\.sqlite: the file is empty \(0 bytes\).*Delete it"):
            opener(path)
    assert path.stat().st_size == 0  # refused before anything was written
    path.unlink()
    store = StateStore(path)  # no file: a new store is created
    assert len(store) == 0
    store.close()


def test_live_wal_copy_opens_whole(tmp_path: Path) -> None:
    path = _live_copy(tmp_path)
    assert len(_ids(path)) == 40
    store = StateStore(path)
    assert len(store) == 40
    store.close()


@pytest.mark.parametrize("where", ["header", "middle", "lost"])
def test_wal_damage_is_refused_not_silently_dropped(tmp_path: Path, where: str) -> None:
    path = _live_copy(tmp_path)
    wal = Path(f"{path}-wal")
    if where == "lost":
        wal.unlink()
    else:
        with wal.open("r+b") as f:
            f.seek(0 if where == "header" else wal.stat().st_size // 2)
            f.write(os.urandom(256))
    with pytest.raises(
        StoreCorrupt, match=r"40 states were committed to this store but only \d+ can be read"
    ) as exc:
        StateStore.open_read_only(path)
    assert str(path) in str(exc.value)
    with pytest.raises(StoreCorrupt, match="write-ahead log"):
        StateStore(path)
    if where != "lost":
        assert Path(f"{path}-wal.damaged").stat().st_size > 0  # kept for inspection
    with pytest.raises(StoreCorrupt, match="40 states were committed"):  # and it stays refused
        StateStore(path)


def test_unreadable_commit_counter_is_refused(tmp_path: Path) -> None:
    path = _live_copy(tmp_path)
    Path(f"{path}-commits").write_bytes(b"\x00garbage")
    with pytest.raises(StoreCorrupt, match=r"states\.sqlite-commits: the commit counter.*delete this file"):
        StateStore(path)


def test_store_without_counter_starts_counting(tmp_path: Path) -> None:
    path = _live_copy(tmp_path)
    Path(f"{path}-commits").unlink()
    store = StateStore(path)
    store.close()
    assert Path(f"{path}-commits").read_text() == "stateguard-commits 000000000040\n"


def test_rewritten_committed_state_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "states.sqlite"
    store = StateStore(path)
    _fill(store, 5)
    store.close()
    db = sqlite3.connect(path)  # what an agent with the file at hand could do
    db.execute("UPDATE variables SET value='[999]' WHERE state=3")
    db.commit()
    db.close()
    for opener in (StateStore, StateStore.open_read_only):
        with pytest.raises(StoreCorrupt, match=r"committed state\(s\) S3 changed on disk after their commit"):
            opener(path)


def test_foreign_sqlite_file_is_not_adopted(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not a StateGuard state store"):
        StateStore(path)
    db = sqlite3.connect(path)
    assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["t"]  # nothing added
    db.close()


def test_random_garbage_in_the_file_is_refused_or_harmless(tmp_path: Path) -> None:
    """60 overwrites of 100 random bytes anywhere past the header: each store is refused, or every
    table reads back exactly as committed (the bytes hit unused space). 0 silent wrong reads."""
    path = tmp_path / "states.sqlite"
    store = StateStore(path)
    _fill(store, 120)
    store.close()
    original = path.read_bytes()

    def tables() -> dict[str, list[tuple[object, ...]]]:
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            # Every table, in its key's order (relations and variables have no rowid).
            return {
                t: db.execute(f"SELECT * FROM {t} ORDER BY {key}").fetchall()  # noqa: S608 - fixed names
                for t, key in (
                    ("states", "num"),
                    ("relations", "upstream, state, pos"),
                    ("variables", "name, is_read, version, state, pos"),
                    ("invalid", "rowid"),
                    ("meta", "key"),
                )
            }
        finally:
            db.close()

    reference = tables()
    rng = random.Random(12)
    refused = 0
    for _ in range(60):
        path.write_bytes(original)
        with path.open("r+b") as f:
            f.seek(rng.randrange(4096, len(original) - 100))
            f.write(rng.randbytes(100))
        damaged = path.read_bytes()
        try:
            StateStore.open_read_only(path).close()
        except StoreError as exc:
            assert str(path) in str(exc) and "Rerun the rollout" in str(exc)
            refused += 1
            continue
        path.write_bytes(damaged)
        assert tables() == reference
    assert refused >= 40  # most overwrites hit live data
