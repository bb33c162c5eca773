"""The persistent record store: typed records, scoped retrieval, corrections with lineage, no silent
overwrite (enforced by SQLite itself), and the state store's durability under SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from statewise.records import Authority, Evidence, OpRecord, Provenance, covers
from statewise.store import RecordStore, RecordStoreError

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def rec(
    key: str, value: object, scope: str = "shop/eu", prov: str | None = None, age: float = 10
) -> OpRecord:
    return OpRecord(
        key=key,
        value=value,
        type="unit",
        scope=scope,
        observed_at=NOW - timedelta(days=age),
        ttl_days=30,
        provenance=Provenance(source="task-1", scope=prov or scope),
        authority=Authority.OBSERVED,
    )


def ev(key: str, value: object, scope: str) -> Evidence:
    return Evidence(
        key=key,
        scope=scope,
        value=value,
        source="probe",
        detail="schema says so",
        observed_at=NOW,
        authority=Authority.VERIFIED,
    )


def test_scopes_cover_and_bad_scopes_are_refused() -> None:
    assert covers("*", "a/b") and covers("a", "a/b") and covers("a/b", "a/b")
    assert not covers("a/b", "a") and not covers("a/b", "a/bc") and not covers("a", "ab")
    with pytest.raises(ValueError, match="scope 'a//b'"):
        rec("k", 1, scope="a//b")


def test_a_known_premise_is_changed_only_through_a_correction(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.sqlite")
    first = store.add(rec("table.unit", "cents"))
    with pytest.raises(RecordStoreError, match="correct\\(old_id"):
        store.add(rec("table.unit", "dollars"))
    corr = store.correct(
        first.id, "dollars", ev("table.unit", "dollars", "shop/eu"), reason="stale", at=NOW, task_id="t9"
    )
    versions = store.lineage("table.unit")
    assert [(v.value, v.status.value, v.version) for v in versions] == [
        ("cents", "superseded", 1),
        ("dollars", "active", 2),
    ]
    assert versions[1].supersedes == first.id and versions[1].authority is Authority.VERIFIED
    assert corr.old_record == first.id and corr.new_records == [versions[1].id] and corr.task_id == "t9"
    assert store.correction_of(versions[1].id) == corr
    assert store.evidence(key="table.unit")[0].id == corr.evidence_id
    with pytest.raises(RecordStoreError, match="superseded"):
        store.correct(first.id, "x", ev("table.unit", "x", "shop/eu"), reason="again", at=NOW)
    store.close()


def test_sqlite_refuses_in_place_updates_and_deletes(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.sqlite")
    store.add(rec("k", 1))
    db = sqlite3.connect(tmp_path / "r.sqlite")
    for sql in (
        "UPDATE records SET record = '{}'",
        "DELETE FROM records",
        "UPDATE records SET key = 'other'",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            db.execute(sql)
    db.close()
    store.close()


def test_a_wrong_scope_correction_narrows_the_old_record_and_leaves_other_keys_alone() -> None:
    store = RecordStore()
    broad = store.add(rec("table.unit", "cents", scope="shop", prov="shop/eu"))
    other = store.add(rec("table.delimiter", ";", scope="shop"))
    assert [r.id for r in store.retrieve("shop/us", keys=["table.unit"])] == [broad.id]
    store.correct(
        broad.id,
        "dollars",
        ev("table.unit", "dollars", "shop/us"),
        reason="scope",
        at=NOW,
        narrow_to="shop/eu",
    )
    assert [r.value for r in store.retrieve("shop/us", keys=["table.unit"])] == ["dollars"]
    assert [r.value for r in store.retrieve("shop/eu", keys=["table.unit"])] == [
        "cents"
    ]  # still true where observed
    assert store.retrieve("shop/apac", keys=["table.unit"]) == []  # no evidence there: nothing is assumed
    assert (
        store.get(other.id).status.value == "active"
        and store.retrieve("shop/us", keys=["table.delimiter"])[0].id == other.id
    )
    with pytest.raises(RecordStoreError, match="narrow_to"):
        store.correct(
            other.id, ",", ev("table.delimiter", ",", "shop/us"), reason="x", at=NOW, narrow_to="shop/us"
        )
    store.close()


def test_retrieval_prefers_the_most_specific_scope_and_logs_what_a_task_read() -> None:
    store = RecordStore()
    store.add(rec("k", "broad", scope="shop"))
    narrow = store.add(rec("k", "narrow", scope="shop/eu", age=50))
    got = store.retrieve("shop/eu", task_id="t1")
    assert [r.id for r in got] == [narrow.id]
    assert store.retrievals("t1") == [(narrow.id, "k", "shop/eu")]
    assert store.retrievals("t2") == []
    store.close()


def test_copy_is_independent_and_read_only_open_writes_nothing(tmp_path: Path) -> None:
    store = RecordStore(tmp_path / "r.sqlite")
    first = store.add(rec("k", 1))
    copy = store.copy()
    copy.correct(first.id, 2, ev("k", 2, "shop/eu"), reason="x", at=NOW)
    assert [r.value for r in store.records()] == [1] and [r.value for r in copy.records()] == [2]
    store.close()
    ro = RecordStore.open_read_only(tmp_path / "r.sqlite")
    assert [r.value for r in ro.records()] == [1]
    with pytest.raises(sqlite3.OperationalError):
        ro.add(rec("k2", 1))
    ro.close()
    with pytest.raises(RecordStoreError, match="no record store"):
        RecordStore.open_read_only(tmp_path / "missing.sqlite")


CHILD = r"""
import sys
from datetime import datetime, UTC
from statewise.records import Authority, Evidence, OpRecord, Provenance
from statewise.store import RecordStore
store = RecordStore(sys.argv[1])
now = datetime(2025, 6, 1, tzinfo=UTC)
n = len(store.records(active_only=False))
while True:
    n += 1
    r = store.add(OpRecord(key=f"k{n}", value="x" * 3000, type="t", scope="p/a", observed_at=now,
                           provenance=Provenance(source="s", scope="p/b"), authority=Authority.OBSERVED))
    e = Evidence(key=r.key, scope="p/a/c", value=n, source="probe", observed_at=now, authority=Authority.VERIFIED)
    store.correct(r.id, n, e, reason="stale", at=now, narrow_to="p/a/d" if n % 2 else None)
    print(n, flush=True)
"""


def test_sigkill_mid_correction_leaves_whole_corrections(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    rng = random.Random(3)
    for _ in range(5):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env)
        assert child.stdout is not None
        child.stdout.readline()
        time.sleep(rng.uniform(0.02, 0.2))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        store = RecordStore(path)
        corrections = store.corrections()
        superseded = {r.id for r in store.records(active_only=False) if r.status.value == "superseded"}
        # A version is superseded only with its correction; a narrowed one always is (an override beside it is not).
        assert superseded <= {c.old_record for c in corrections}
        for c in corrections:
            assert c.new_records and all(store.get(i).supersedes == c.old_record for i in c.new_records)
            assert (c.old_record in superseded) == (len(c.new_records) == 2)
            assert store.evidence(key=store.get(c.old_record).key)[0].id == c.evidence_id
        store.close()
    assert len(corrections) >= 2
