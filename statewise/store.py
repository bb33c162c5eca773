"""Durable store of persistent operational records: one SQLite file (WAL mode) that outlives tasks.

The same durability rules as the state store (`stateguard.store`): every write is one SQL
transaction (BEGIN IMMEDIATE ... COMMIT), so a process killed at any moment reopens to whole
records and whole corrections; `synchronous=NORMAL` survives a killed process, FULL also power loss.

Nothing is overwritten silently. Record rows are append-only: SQLite triggers refuse deleting a
row or changing anything but `status`, and `status` may only go active -> superseded, inside
`correct`, which in the same transaction writes the new version(s) and a `Correction` row
linking the old version, the evidence, the scope and the time. At most one version of a
(key, scope) is active (a partial unique index), so `add` of a known premise fails and names
`correct` as the way to change it.

    store = RecordStore("runs/statewise/records.sqlite")
    rec = store.add(OpRecord(key="table.unit", value="cents", type="unit", scope="shop/orders_eu", ...))
    store.retrieve("shop/orders_eu", task_id="t1")          # most specific active version per key
    store.correct(rec.id, "dollars", evidence, reason="stale: schema says dollars", at=now)
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from stateguard.store import immediate_transaction
from statewise.records import (
    Correction,
    Evidence,
    OpRecord,
    Provenance,
    RecordStatus,
    covers,
    depth,
    overlaps,
)

STORE_SCHEMA = "statewise/1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, key TEXT NOT NULL, scope TEXT NOT NULL,
    status TEXT NOT NULL, record TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_active ON records(key, scope) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS rec_key ON records(key, status);
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'statewise records are append-only: supersede with correct()'); END;
CREATE TRIGGER IF NOT EXISTS records_only_supersede BEFORE UPDATE ON records
WHEN NOT (OLD.status = 'active' AND NEW.status = 'superseded' AND OLD.id = NEW.id AND OLD.key = NEW.key
          AND OLD.scope = NEW.scope AND OLD.record = NEW.record)
BEGIN SELECT RAISE(ABORT, 'statewise records are append-only: supersede with correct()'); END;
CREATE TABLE IF NOT EXISTS evidence(
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, key TEXT NOT NULL, scope TEXT NOT NULL, record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ev_key ON evidence(key);
CREATE TABLE IF NOT EXISTS corrections(
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, old_record TEXT NOT NULL, record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS corr_old ON corrections(old_record);
CREATE TABLE IF NOT EXISTS correction_outputs(correction_id TEXT NOT NULL, record_id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS corr_out ON correction_outputs(record_id);
CREATE TABLE IF NOT EXISTS retrievals(
    seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL, record_id TEXT NOT NULL, key TEXT NOT NULL, scope TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS retr_task ON retrievals(task_id);
"""


class RecordStoreError(ValueError):
    """A write that would break a store rule; the message says what to do instead."""


class RecordStore:
    """SQLite-backed persistent record store. One writer per file; safe to reopen after a crash."""

    def __init__(self, path: str | Path = ":memory:", *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.executescript(_SCHEMA)
        found = self._meta("schema_version")
        if found is None:
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (STORE_SCHEMA,)
            )
        elif found != STORE_SCHEMA:
            raise RecordStoreError(
                f"{self.path}: record store schema {found!r}, this code reads {STORE_SCHEMA!r}; "
                "use a new store file or the version that wrote it"
            )

    @classmethod
    def open_read_only(cls, path: str | Path) -> RecordStore:
        """An existing store opened for reading (reports): nothing is created or written."""
        file = Path(path).resolve()
        if not file.is_file():
            raise RecordStoreError(f"{file}: no record store here")
        store = cls.__new__(cls)
        store.path = str(file)
        store._db = sqlite3.connect(f"file:{quote(str(file))}?mode=ro", uri=True, isolation_level=None)
        if store._meta("schema_version") != STORE_SCHEMA:
            store.close()
            raise RecordStoreError(f"{file}: not a StateWise record store of schema {STORE_SCHEMA!r}")
        return store

    def copy(self) -> RecordStore:
        """An in-memory copy (the no-persistence ablation repairs a copy and throws it away)."""
        other = RecordStore(":memory:")
        self._db.backup(other._db)
        return other

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------------ plumbing
    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate_transaction(self._db)

    @staticmethod
    def _next_id(db: sqlite3.Connection, table: str, prefix: str) -> str:
        top = db.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {table}").fetchone()[0]  # noqa: S608 - fixed names
        return f"{prefix}{int(top) + 1}"

    def _insert_record(self, db: sqlite3.Connection, record: OpRecord) -> OpRecord:
        stored = record.model_copy(update={"id": self._next_id(db, "records", "r")})
        try:
            db.execute(
                "INSERT INTO records(id, key, scope, status, record) VALUES(?, ?, ?, ?, ?)",
                (stored.id, stored.key, stored.scope, stored.status.value, stored.canonical_json()),
            )
        except sqlite3.IntegrityError:
            raise RecordStoreError(
                f"an active record for key {record.key!r} in scope {record.scope!r} exists already; "
                "change it with correct(old_id, value, evidence, ...) so the lineage is kept"
            ) from None
        return stored

    def _insert_evidence(self, db: sqlite3.Connection, evidence: Evidence) -> Evidence:
        if evidence.id:
            if db.execute("SELECT 1 FROM evidence WHERE id=?", (evidence.id,)).fetchone() is None:
                raise RecordStoreError(
                    f"evidence {evidence.id!r} is not in this store; pass it without an id"
                )
            return evidence
        stored = evidence.model_copy(update={"id": self._next_id(db, "evidence", "e")})
        db.execute(
            "INSERT INTO evidence(id, key, scope, record) VALUES(?, ?, ?, ?)",
            (stored.id, stored.key, stored.scope, stored.canonical_json()),
        )
        return stored

    # ------------------------------------------------------------------ writes
    def add(self, record: OpRecord) -> OpRecord:
        """Store a new premise (version 1). Refuses a (key, scope) that already has an active version."""
        if record.id:
            raise RecordStoreError(f"record {record.id!r} already has an id; add() takes new records only")
        with self._transaction() as db:
            return self._insert_record(
                db,
                record.model_copy(update={"status": RecordStatus.ACTIVE, "version": 1, "supersedes": None}),
            )

    def add_evidence(self, evidence: Evidence) -> Evidence:
        with self._transaction() as db:
            return self._insert_evidence(db, evidence)

    def correct(
        self,
        old_id: str,
        value: Any,
        evidence: Evidence,
        *,
        reason: str,
        at: datetime,
        task_id: str = "",
        narrow_to: str | None = None,
        ttl_days: float | None = None,
    ) -> Correction:
        """Repair one record from evidence, in one transaction, with lineage.

        The evidence's scope is where the correction holds. When it equals the record's scope the
        record gets a new version carrying `value`. When the evidence is about a narrower scope,
        the record's value is kept where it may still hold: `narrow_to` (its provenance scope)
        re-issues it there and supersedes the broad version; without `narrow_to` the broad version
        stays active and the evidence scope gets its own record, which retrieval prefers.
        """
        with self._transaction() as db:
            old = self._load(db, old_id)
            if old.status is not RecordStatus.ACTIVE:
                raise RecordStoreError(
                    f"record {old_id} is {old.status.value}; correct the active version of "
                    f"{old.key!r} instead ({self._active_id(db, old.key, old.scope)})"
                )
            ev = self._insert_evidence(db, evidence)
            if not covers(old.scope, ev.scope):
                raise RecordStoreError(f"evidence scope {ev.scope!r} is outside record scope {old.scope!r}")
            fresh = OpRecord(
                key=old.key,
                value=value,
                type=old.type,
                scope=ev.scope,
                observed_at=ev.observed_at,
                ttl_days=old.ttl_days if ttl_days is None else ttl_days,
                authority=ev.authority,
                provenance=Provenance(source=ev.source, scope=ev.scope, detail=f"evidence {ev.id}"),
            )
            written: list[OpRecord] = []
            if ev.scope == old.scope:
                self._supersede(db, old.id)
                written.append(
                    self._insert_record(
                        db, fresh.model_copy(update={"version": old.version + 1, "supersedes": old.id})
                    )
                )
            else:
                if narrow_to is not None:
                    if not (covers(old.scope, narrow_to) and not overlaps(narrow_to, ev.scope)):
                        raise RecordStoreError(
                            f"narrow_to {narrow_to!r} must lie inside {old.scope!r} and apart "
                            f"from the evidence scope {ev.scope!r}"
                        )
                    self._supersede(db, old.id)
                    written.append(
                        self._insert_record(
                            db,
                            old.model_copy(
                                update={
                                    "id": "",
                                    "scope": narrow_to,
                                    "version": old.version + 1,
                                    "supersedes": old.id,
                                }
                            ),
                        )
                    )
                written.append(self._insert_record(db, fresh.model_copy(update={"supersedes": old.id})))
            corr = Correction(
                id=self._next_id(db, "corrections", "c"),
                old_record=old.id,
                new_records=[w.id for w in written],
                evidence_id=ev.id,
                scope=ev.scope,
                reason=reason,
                at=at,
                task_id=task_id,
            )
            db.execute(
                "INSERT INTO corrections(id, old_record, record) VALUES(?, ?, ?)",
                (corr.id, corr.old_record, corr.canonical_json()),
            )
            db.executemany(
                "INSERT INTO correction_outputs(correction_id, record_id) VALUES(?, ?)",
                [(corr.id, w.id) for w in written],
            )
            return corr

    def confirm(self, record_id: str, evidence: Evidence, *, at: datetime, task_id: str = "") -> Correction:
        """The authority confirmed the value: a new version with the same value and fresh metadata."""
        old = self.get(record_id)
        if evidence.scope != old.scope:
            evidence = evidence.model_copy(update={"scope": old.scope})
        return self.correct(record_id, old.value, evidence, reason="confirmed", at=at, task_id=task_id)

    def _supersede(self, db: sqlite3.Connection, record_id: str) -> None:
        db.execute("UPDATE records SET status='superseded' WHERE id=? AND status='active'", (record_id,))

    def log_retrieval(self, task_id: str, records: list[OpRecord]) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO retrievals(task_id, record_id, key, scope) VALUES(?, ?, ?, ?)",
                [(task_id, r.id, r.key, r.scope) for r in records],
            )

    # ------------------------------------------------------------------ reads
    def _load(self, db: sqlite3.Connection, record_id: str) -> OpRecord:
        row = db.execute("SELECT record, status FROM records WHERE id=?", (record_id,)).fetchone()
        if row is None:
            raise KeyError(f"no record {record_id!r}")
        return OpRecord.model_validate_json(row[0]).model_copy(update={"status": RecordStatus(row[1])})

    def _active_id(self, db: sqlite3.Connection, key: str, scope: str) -> str | None:
        row = db.execute(
            "SELECT id FROM records WHERE key=? AND scope=? AND status='active'", (key, scope)
        ).fetchone()
        return None if row is None else str(row[0])

    def get(self, record_id: str) -> OpRecord:
        return self._load(self._db, record_id)

    def records(self, *, key: str | None = None, active_only: bool = True) -> list[OpRecord]:
        sql, args = "SELECT record, status FROM records", []
        where = (["status='active'"] if active_only else []) + (["key=?"] if key is not None else [])
        args = [key] if key is not None else []
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._db.execute(sql + " ORDER BY seq", args).fetchall()
        return [
            OpRecord.model_validate_json(r[0]).model_copy(update={"status": RecordStatus(r[1])}) for r in rows
        ]

    def retrieve(
        self, scope: str, *, keys: list[str] | None = None, task_id: str | None = None
    ) -> list[OpRecord]:
        """Per key, the active version that applies to `scope`: the most specific, then the newest.
        With `task_id` the retrieval is logged (later tasks' reuse of corrections is measured on it)."""
        best: dict[str, OpRecord] = {}
        for rec in self.records():
            if (keys is not None and rec.key not in keys) or not covers(rec.scope, scope):
                continue
            cur = best.get(rec.key)
            if cur is None or (depth(rec.scope), rec.observed_at) > (depth(cur.scope), cur.observed_at):
                best[rec.key] = rec
        chosen = sorted(best.values(), key=lambda r: r.key)
        if task_id is not None:
            self.log_retrieval(task_id, chosen)
        return chosen

    def evidence(self, *, key: str | None = None, scope: str | None = None) -> list[Evidence]:
        """Evidence about `key` whose scope overlaps `scope` (all of it without filters), oldest first."""
        rows = self._db.execute(
            "SELECT record FROM evidence" + (" WHERE key=?" if key else "") + " ORDER BY seq",
            [key] if key else [],
        ).fetchall()
        found = [Evidence.model_validate_json(r[0]) for r in rows]
        return [e for e in found if scope is None or overlaps(e.scope, scope)]

    def lineage(self, key: str) -> list[OpRecord]:
        """Every version of `key`, active and superseded, oldest first."""
        return self.records(key=key, active_only=False)

    def corrections(self, *, task_id: str | None = None) -> list[Correction]:
        rows = self._db.execute("SELECT record FROM corrections ORDER BY seq").fetchall()
        found = [Correction.model_validate_json(r[0]) for r in rows]
        return [c for c in found if task_id is None or c.task_id == task_id]

    def correction_of(self, record_id: str) -> Correction | None:
        """The correction that wrote `record_id`, if a repair produced it."""
        row = self._db.execute(
            "SELECT c.record FROM corrections c JOIN correction_outputs o ON o.correction_id = c.id "
            "WHERE o.record_id=?",
            (record_id,),
        ).fetchone()
        return None if row is None else Correction.model_validate_json(row[0])

    def retrievals(self, task_id: str) -> list[tuple[str, str, str]]:
        """(record id, key, scope) retrieved by a task, in order."""
        rows = self._db.execute(
            "SELECT record_id, key, scope FROM retrievals WHERE task_id=? ORDER BY seq", (task_id,)
        ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    def active_snapshot(self) -> dict[tuple[str, str], str]:
        """(key, scope) -> canonical JSON of the active version: what 'untouched' is checked against."""
        return {(r.key, r.scope): r.canonical_json() for r in self.records()}
