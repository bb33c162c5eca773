"""Durable store of committed analytical states: one SQLite file (WAL mode) per run.

Committed states are immutable rows; a commit is one SQL transaction, so a process killed at any
moment reopens to the last whole commit. Every runtime query goes through a key (the tables
and what each is keyed by: store_schema.py): state by id, the latest state, a variable's current
version and lineage, readers of a version, downstream relations, and the set of invalid
states/variables; what one state lists (its upstream states, the variables it defines) is read
from its record. Invalidation is maintained incrementally at commit time, so "is this stale?"
never scans the store.

    store = StateStore("runs/demo/states.sqlite")
    store.commit(state); store.current_version("revenue"); store.invalidated_by("S5")
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import OrderedDict, deque
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from stateguard.records import SCHEMA_VERSION
from stateguard.state import STATE_ID_RE, AnalyticalState, RelationType, state_id, state_number
from stateguard.store_check import CommitCounter, StoreCorrupt, StoreError, check_file, check_pages
from stateguard.store_schema import (
    check_digests,
    create,
    migrate,
    record_text,
    state_digest,
    store_layout,
    value_text,
)
from stateguard.store_wal import WalCheckpointer

__all__ = [
    "immediate_transaction",
    "IndexEntry",
    "Invalidation",
    "Lineage",
    "StateStore",
    "StoreCorrupt",
    "StoreError",
    "VersionInfo",
]

# Committed states a store keeps parsed (an OPEN loads the states it relates to, which the
# previous COMMIT or the worker's last turn usually touched); about 2 kB each.
_LOADED_KEPT = 256
# Variable versions `has_version` found committed, kept as (name, version) pairs.
_VERSIONS_KEPT = 4096


class _Pinned:
    """`StateStore.pinned_heads()`'s block, as a class (a generator-based context manager costs a
    generator and two resumptions, and the harness opens one per action)."""

    __slots__ = ("_store",)

    def __init__(self, store: StateStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        self._store._pins += 1

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        store = self._store
        store._pins -= 1
        if not store._pins:
            store._pinned = False


def _number(sid: object) -> int:
    """The number of state id `sid`, 0 for anything that is not a state id (no state has it)."""
    match = STATE_ID_RE.match(sid) if type(sid) is str else None
    return int(match.group(1)) if match else 0


def _json_scalar(value: object) -> bool:
    """Whether `value` reads back from JSON as itself and is immutable (text, an integer, a
    bool, a finite float or None; not NaN, a container, or an object `default=str` turns into text)."""
    if value is None or type(value) in (str, int, bool):
        return True
    return type(value) is float and math.isfinite(value)


class immediate_transaction:  # noqa: N801 - used as the function it was: `with immediate_transaction(db) as db:`
    """One write transaction that takes the write lock at once (no upgrade deadlock between
    readers), rolled back on any exception. Shared by the state store and StateWise's record store.
    A class rather than a generator-based context manager: that costs a generator and two
    resumptions per block, and the store opens one per commit."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        # An exception from the block propagates after the rollback; one from COMMIT propagates
        # with the transaction still open, as it did from the generator.
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")


class IndexEntry(BaseModel):
    """One row of the compact committed-state index (paper Eq. 16)."""

    model_config = ConfigDict(frozen=True)
    id: str
    issue: str
    conclusions: list[str]


class VersionInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    version: str
    value: object
    read_by: list[str]
    invalid: bool


class Lineage(BaseModel):
    """All committed versions of one variable name, oldest first."""

    model_config = ConfigDict(frozen=True)
    name: str
    versions: list[VersionInfo]

    @property
    def current(self) -> str | None:
        return self.versions[-1].version if self.versions else None


class Invalidation(BaseModel):
    """What an Invalidate relation made stale, transitively (states and `name@Sk` versions)."""

    model_config = ConfigDict(frozen=True)
    invalidated_by: str
    states: list[str]
    variables: list[str]


class StateStore:
    """SQLite-backed committed-state store. One writer per file; safe to reopen after a crash."""

    def __init__(self, path: str | Path = ":memory:", *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"):
        """Open the store at `path`, creating it when the file does not exist. An existing file must
        be an intact StateGuard store: a 0-byte file, damaged pages (`PRAGMA quick_check`), a
        write-ahead log that lost commits, or a foreign SQLite file raise StoreCorrupt/StoreError
        naming the path and the fix, before anything is written."""
        self.path = str(path)
        memory = self.path == ":memory:"
        existing = not memory and Path(self.path).exists()
        if not memory:
            check_file(Path(self.path), creating=True)
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._counter = CommitCounter(self.path, writable=not memory)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._wal: WalCheckpointer | None = None
        self._seen: tuple[int, int, str | None, int, int] | None = None
        # Whether the `invalid` table may hold a row: refreshed with `_heads`, set by `_mark`.
        # While it holds none, a commit's staleness checks need no query (most runs never invalidate).
        self._any_invalid = True
        # Inside `pinned_heads()`: the depth of nested blocks, and whether the heads were already
        # checked against other connections in the outermost one.
        self._pins = 0
        self._pinned = False
        self._loaded: OrderedDict[str, AnalyticalState] = OrderedDict()
        self._versions: OrderedDict[tuple[str, str], None] = OrderedDict()  # `has_version` said yes
        self._index: list[IndexEntry] = []  # `index()` so far: committed states are only ever appended
        try:
            layout = self._verify(wal_copy=True) if existing else None
            self._db.execute("PRAGMA journal_mode=WAL")
            if not memory:
                # Checkpoints run in a background connection, never inside a commit (store_wal.py).
                self._db.execute("PRAGMA wal_autocheckpoint=0")
                self._wal = WalCheckpointer(self.path)
            # NORMAL survives a killed process (the WAL is intact); FULL also survives power loss.
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            if layout is None:
                with self._transaction() as db:
                    create(db)
                    if self._meta("schema_version") is None:
                        self._set_meta("schema_version", SCHEMA_VERSION)
            found = self._meta("schema_version")
            if found != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: store schema_version is {found!r}, this code reads {SCHEMA_VERSION!r}; "
                    "use a new run directory or the StateGuard version that wrote it"
                )
            if layout == 1:  # written by an earlier StateGuard: rewritten in place, in one transaction
                with self._transaction() as db:
                    migrate(db, self.path)
                self._wrote()
            if not memory and self._counter.read() is None:
                self._counter.write(len(self))  # a store from before the counter: start counting now
        except BaseException:
            self.close()
            raise

    def _verify(self, *, wal_copy: bool) -> int | None:
        """Integrity of an existing file: pages, lost commits, that it is a StateGuard store, then
        each state's rows against the digest taken at its commit. Returns the store's layout
        (store_schema.py; None when it holds no tables yet)."""
        check_pages(self._db, self.path)
        tables = {str(r[0]) for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        states = (
            int(self._db.execute("SELECT COUNT(*) FROM states").fetchone()[0]) if "states" in tables else 0
        )
        self._counter.check(states, self.path, wal_copy=wal_copy)
        if "meta" not in tables:
            raise StoreError(
                f"{self.path}: a SQLite file but not a StateGuard state store (no meta table); "
                "point at a run's states.sqlite, or use a new path"
            )
        layout = store_layout(self._db, tables, self.path)
        check_digests(self._db, layout, tables, self.path)
        return layout

    @classmethod
    def open_read_only(cls, path: str | Path) -> StateStore:
        """An existing store opened for reading only (viewers, reports): nothing is created or
        switched. A cleanly closed store is opened immutable, so nothing is written next to it;
        one with a live WAL file is opened in read-only mode, so its last commits are seen. The
        same integrity checks as a writable open run first (0-byte file, quick_check, lost
        commits), so a damaged store is refused rather than shown partly."""
        file = Path(path).resolve()
        check_file(file, creating=False)
        wal = file.with_name(file.name + "-wal")
        mode = "mode=ro" if wal.is_file() and wal.stat().st_size else "immutable=1"
        store = cls.__new__(cls)
        store.path = str(file)
        store._counter = CommitCounter(str(file), writable=False)
        store._wal = None
        store._seen = None
        store._any_invalid = True
        store._pins = 0
        store._pinned = False
        store._loaded = OrderedDict()
        store._versions = OrderedDict()
        store._index = []
        store._db = sqlite3.connect(f"file:{quote(str(file))}?{mode}", uri=True, isolation_level=None)
        try:
            try:
                layout = store._verify(wal_copy=False)
                found = store._meta("schema_version")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"{file}: not a StateGuard state store ({exc})") from None
            if found != SCHEMA_VERSION:
                raise StoreError(
                    f"{file}: store schema_version {found!r}, this code reads {SCHEMA_VERSION!r}"
                )
            if layout == 1:
                # Written by an earlier StateGuard, and nothing may be written next to it: read a
                # copy, migrated in memory (a snapshot: later commits to the file are not seen).
                copy = sqlite3.connect(":memory:", isolation_level=None)
                store._db.backup(copy)
                store._db.close()
                store._db = copy
                with store._transaction() as db:
                    migrate(db, str(file))
            elif layout is None:
                raise StoreError(f"{file}: a state store without tables; point at a run's states.sqlite")
        except BaseException:
            store.close()
            raise
        return store

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        if self._wal is not None:
            self._wal.close()
        self._db.close()
        self._counter.close()

    def pinned_heads(self) -> AbstractContextManager[None]:
        """A block (one harness action) in which the heads are checked against other connections'
        commits once, at their first use, instead of at every call: OPEN alone asks for the next id
        three times and the latest id once. What the block reads is then one view of the store, as
        of that check, plus this connection's own writes (which keep the heads current
        themselves). A commit checks again inside its write transaction, where it matters: no
        other connection can commit there, and the ids must increase."""
        return _Pinned(self)

    def _heads(self, *, check: bool = False) -> tuple[int, str | None, int, int]:
        """(top committed number, latest id, committed count, last reserved number), read once and
        then kept up to date by this connection's own writes. `PRAGMA data_version` changes only
        when another connection commits, so a second writer or a reader of a live store still sees
        fresh values, at the price of one pragma instead of three queries; inside `pinned_heads`
        the pragma runs once per block (`check=True` runs it anyway)."""
        seen = self._seen
        if self._pinned and seen is not None and not check:
            return seen[1], seen[2], seen[3], seen[4]
        version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
        if seen is None or seen[0] != version:
            # Ids only increase, so the top number is also the latest state.
            top, count = self._db.execute("SELECT COALESCE(MAX(num), 0), COUNT(*) FROM states").fetchone()
            reserved = int(self._meta("last_reserved") or 0)
            self._any_invalid = self._db.execute("SELECT 1 FROM invalid LIMIT 1").fetchone() is not None
            seen = self._seen = (
                version,
                int(top),
                state_id(int(top)) if top else None,
                int(count),
                reserved,
            )
        self._pinned = self._pins > 0
        return seen[1], seen[2], seen[3], seen[4]

    def _wrote(self) -> None:
        if self._wal is not None:
            self._wal.wrote()

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        # UPDATE first: it rewrites one page, where INSERT OR REPLACE deletes and re-inserts the
        # row and so also rewrites its key's index page (one more WAL frame per reserved id).
        if self._db.execute("UPDATE meta SET value=? WHERE key=?", (value, key)).rowcount == 0:
            self._db.execute("INSERT INTO meta(key, value) VALUES(?, ?)", (key, value))

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate_transaction(self._db)

    # ------------------------------------------------------------------ ids
    def peek_next_id(self) -> str:
        """The id the next `reserve_id` will return."""
        top, _, _, last = self._heads()
        return state_id(max(last, top) + 1)

    def reserve_id(self) -> str:
        """Allocate the next state id. Ids are never reused, even for abandoned drafts."""
        sid = self.peek_next_id()
        number = state_number(sid)
        # Written at once (its own small transaction): an id handed out is never handed out again,
        # even after a crash before the state is committed or abandoned.
        self._set_meta("last_reserved", str(number))
        self._wrote()
        if self._seen is not None:
            self._seen = (*self._seen[:4], number)
        return sid

    # ------------------------------------------------------------------ writes
    def commit(self, state: AnalyticalState) -> None:
        """Persist a state atomically after checking every reference it makes.

        Raises StoreError (and writes nothing) when the id is not newer than every committed
        state, a relation points at itself or at a state that is not committed, or a variable
        claims a version that no committed state defined. The digest of every row written is
        kept, so damage on disk is found when the store is next opened.
        """
        sid = state.id
        number = state_number(sid)
        # json.dumps' text of a list of strings (sorted keys and `default` change nothing in it).
        conclusions = value_text([c.text for c in state.conclusions])
        record = record_text(state)
        # The digest's columns (store_schema.py) are built beside the rows, as texts.
        parts = [sid, state.issue, conclusions, record]
        relations = []
        for pos, rel in enumerate(state.relations):
            up, kind = rel.related_state_id, rel.type.value
            relations.append((0 if up is None else state_number(up), number, pos, kind))
            parts += (up or "", kind)
        variables = []
        for pos, var in enumerate(state.used_variables):
            version = state_number(var.version)
            value = value_text(var.value)
            defined = version == number
            variables.append((var.name, 0 if defined else 1, version, number, pos, value))
            parts += (var.name, var.version, str(version), "1" if defined else "0", value)
        digest = state_digest(parts)
        with self._transaction() as db:
            committed = self._check_new_state(db, state) + 1
            db.execute(
                "INSERT INTO states(num, issue, conclusions, record, sha256) VALUES(?, ?, ?, ?, ?)",
                (number, state.issue, conclusions, record, digest),
            )
            db.executemany("INSERT INTO relations(upstream, state, pos, type) VALUES(?, ?, ?, ?)", relations)
            db.executemany(
                "INSERT INTO variables(name, is_read, version, state, pos, value) VALUES(?, ?, ?, ?, ?, ?)",
                variables,
            )
            self._propagate_invalidity(db, state)
        self._counter.write(committed)
        self._wrote()
        if all(_json_scalar(v.value) for v in state.used_variables):
            # What `load` would parse from the row (its values survive JSON unchanged), with lists
            # of its own: the next OPEN relates to this state, and the caller keeps its object.
            self._keep(
                state.model_copy(update={k: list(v) for k, v in state.__dict__.items() if type(v) is list})
            )
        if self._seen is not None:
            version, top, _, _, reserved = self._seen
            self._seen = (version, max(top, number), state.id, committed, reserved)

    def _check_new_state(self, db: sqlite3.Connection, state: AnalyticalState) -> int:
        """Refuse `state` (StoreError) unless its id is new and its references are committed;
        returns the number of states committed before it."""
        number = state_number(state.id)
        # Inside the write transaction no other connection can commit, so the heads (refreshed
        # here if another one did since) give the top committed number and the count without a query.
        top, _, count, _ = self._heads(check=True)
        if number <= top:
            raise StoreError(
                f"cannot commit {state.id}: ids must increase and {state_id(top)} is already committed"
            )
        for rel in state.relations:
            up = rel.related_state_id
            if up is None:
                continue
            if up == state.id:
                raise StoreError(f"{state.id} lists itself as related state; relations point upstream only")
            if (
                up not in self._loaded
                and db.execute("SELECT 1 FROM states WHERE num=?", (_number(up),)).fetchone() is None
            ):
                raise StoreError(
                    f"{state.id} relates to {up}, which is not a committed state; "
                    "reference only earlier committed states (drafts and abandoned states cannot be related)"
                )
        for var in state.used_variables:
            if var.version == state.id:
                continue
            if not self.has_version(var.name, var.version):
                raise StoreError(
                    f"{state.id} reads {var.key}, but no committed state defined that version; "
                    f"use a committed version (see current_version({var.name!r})) or let the harness assign one"
                )
        return count

    def _propagate_invalidity(self, db: sqlite3.Connection, state: AnalyticalState) -> None:
        """Keep the `invalid` table current after inserting `state` (inside the commit transaction).

        Staleness spreads along what a state actually used: a read of a stale variable version
        makes the reader stale; a relation to a stale state makes the downstream state stale
        unless it read variables of that state and all of them are still valid (it demonstrably
        used only unaffected results). When S_k invalidates S_j and redefines some of S_j's
        variables, exactly those versions are superseded; when it redefines none, the change is
        to an assumption of S_j as a whole and all of S_j's variables are superseded.
        """
        reads = [v for v in state.used_variables if v.version != state.id]
        causes: set[tuple[str, str]] = set()
        if self._any_invalid:  # `_check_new_state` refreshed it inside this transaction
            for var in reads:
                causes.update(self._causes(db, "variable", var.key))
            for rel in state.relations:
                up = rel.related_state_id
                if rel.type is RelationType.INVALIDATE or up is None:
                    continue
                if not any(v.version == up for v in reads):
                    causes.update(self._causes(db, "state", up))
        for by, root in causes:
            self._mark(db, state.id, by, root, names=None, pending=state)
        defined = {v.name for v in state.defined_variables()}
        for rel in state.relations:
            if rel.type is RelationType.INVALIDATE and rel.related_state_id is not None:
                target = rel.related_state_id
                theirs = set(self._defined_names(target, state))
                self._close_over(db, target, pending=state, superseded=(defined & theirs) or None)

    def _defined_names(self, sid: str, pending: AnalyticalState) -> list[str]:
        """The names of the variables state `sid` defines, in its list's order: from `pending` (the
        state being committed, never kept before its commit ends) or a committed state's record."""
        state = pending if sid == pending.id else self.load(sid)
        return [v.name for v in state.used_variables if v.version == sid]

    def _causes(self, db: sqlite3.Connection, kind: str, key: str) -> list[tuple[str, str]]:
        return [
            (str(a), str(b))
            for a, b in db.execute(
                "SELECT invalidated_by, root FROM invalid WHERE kind=? AND key=?", (kind, key)
            )
        ]

    def _mark(
        self,
        db: sqlite3.Connection,
        sid: str,
        by: str,
        root: str,
        *,
        names: set[str] | None,
        pending: AnalyticalState,
    ) -> bool:
        """Mark a state stale (and its defined variables, or only `names`); False if already marked."""
        cur = db.execute(
            "INSERT OR IGNORE INTO invalid(kind, key, invalidated_by, root) VALUES('state', ?, ?, ?)",
            (sid, by, root),
        )
        if cur.rowcount == 0:
            return False
        self._any_invalid = True  # kept even if this transaction rolls back: it only costs queries
        for name in self._defined_names(sid, pending):
            if names is None or name in names:
                db.execute(
                    "INSERT OR IGNORE INTO invalid(kind, key, invalidated_by, root) VALUES('variable', ?, ?, ?)",
                    (f"{name}@{sid}", by, root),
                )
        return True

    def _close_over(
        self, db: sqlite3.Connection, root: str, *, pending: AnalyticalState, superseded: set[str] | None
    ) -> None:
        """Breadth-first over readers of stale versions and downstream relations; cost ~ closure size.
        `pending` is the invalidating state, being committed: it is never marked itself."""
        by, pending_number = pending.id, state_number(pending.id)
        if not self._mark(db, root, by, root, names=superseded, pending=pending):
            return
        queue = deque([root])
        while queue:
            sid = queue.popleft()
            number = state_number(sid)
            stale_names = [
                name
                for name in self._defined_names(sid, pending)
                if db.execute(
                    "SELECT 1 FROM invalid WHERE kind='variable' AND key=? AND invalidated_by=?",
                    (f"{name}@{sid}", by),
                ).fetchone()
            ]
            nxt: list[str] = []
            for name in stale_names:
                nxt += [
                    state_id(r[0])
                    for r in db.execute(
                        "SELECT state FROM variables WHERE name=? AND is_read=1 AND version=? ORDER BY state, pos",
                        (name, number),
                    )
                ]
            # In the order layout 1's index on (upstream, type) gave: by type, then commit order.
            for (down,) in db.execute(
                "SELECT state FROM relations WHERE upstream=? AND type!='invalidate' ORDER BY type, state, pos",
                (number,),
            ).fetchall():
                if down == pending_number:
                    continue  # never marked (below), and its record is not kept before its commit ends
                if not any(v.version == sid for v in self.load(state_id(down)).used_variables):
                    nxt.append(state_id(down))
            for candidate in nxt:
                if candidate != by and self._mark(db, candidate, by, root, names=None, pending=pending):
                    queue.append(candidate)

    # ------------------------------------------------------------------ reads
    def __len__(self) -> int:
        return self._heads()[2]

    def __contains__(self, sid: object) -> bool:
        if sid in self._loaded:  # a kept state is committed, and a commit is never undone
            return True
        return self._db.execute("SELECT 1 FROM states WHERE num=?", (_number(sid),)).fetchone() is not None

    def load(self, sid: str) -> AnalyticalState:
        """The committed state `sid` (KeyError when it is not committed). Committed rows never
        change, so the last `_LOADED_KEPT` states loaded are kept and handed out again: the caller
        gets a shared frozen record and must not edit its lists in place (nothing does; copy it
        with `model_copy(update=...)` to derive another)."""
        state = self._loaded.get(sid)
        if state is not None:
            self._loaded.move_to_end(sid)
            return state
        row = self._db.execute("SELECT record FROM states WHERE num=?", (_number(sid),)).fetchone()
        if row is None:
            raise KeyError(f"no committed state {sid!r} in {self.path}")
        state = AnalyticalState.model_validate_json(row[0])
        self._keep(state)
        return state

    def _keep(self, state: AnalyticalState) -> None:
        self._loaded[state.id] = state
        if len(self._loaded) > _LOADED_KEPT:
            self._loaded.popitem(last=False)

    def raw_record(self, sid: str) -> str:
        """The exact bytes stored for a committed state (used to prove immutability)."""
        row = self._db.execute("SELECT record FROM states WHERE num=?", (_number(sid),)).fetchone()
        if row is None:
            raise KeyError(sid)
        return str(row[0])

    def latest_id(self) -> str | None:
        return self._heads()[1]

    def ids(self) -> list[str]:
        return [state_id(r[0]) for r in self._db.execute("SELECT num FROM states ORDER BY num")]

    def index(self, *, last: int | None = None) -> list[IndexEntry]:
        """Compact committed index (id, issue, conclusions), oldest first; `last` keeps the newest N.

        The harness asks for it at every manager activation. Committed rows never change and are
        never deleted (`seq` counts them), so the entries read once are kept and only the states
        committed since (by this connection or another: `_heads`; ids only increase, so those are
        the numbers above the last kept one) are read; the entries are shared frozen records, as
        `load`'s are."""
        count = self._heads()[2]
        if len(self._index) > count:  # cannot happen to an append-only table; read it afresh if it does
            self._index = []
        if len(self._index) < count:
            after = state_number(self._index[-1].id) if self._index else 0
            rows = self._db.execute(
                "SELECT num, issue, conclusions FROM states WHERE num > ? ORDER BY num", (after,)
            ).fetchall()
            self._index += [
                IndexEntry(id=state_id(r[0]), issue=r[1], conclusions=json.loads(r[2])) for r in rows
            ]
        if last is None or last < 0:  # SQLite's LIMIT with a negative number is no limit
            return list(self._index)
        return self._index[max(len(self._index) - last, 0) :] if last else []

    def current_version(self, name: str) -> str | None:
        """Newest committed version key of a variable (e.g. 'revenue@S5'), or None if never defined."""
        row = self._db.execute(
            "SELECT version FROM variables WHERE name=? AND is_read=0 ORDER BY version DESC LIMIT 1", (name,)
        ).fetchone()
        return None if row is None else f"{name}@{state_id(row[0])}"

    def has_version(self, name: str, version: str) -> bool:
        """Did committed state `version` define variable `name`?"""
        kept = self._loaded.get(version)
        if kept is not None:  # a committed state's variables are fixed: its record answers exactly
            return any(v.name == name and v.version == version for v in kept.used_variables)
        key = (name, version)
        if key in self._versions:  # a yes never turns into a no: committed rows are never deleted
            self._versions.move_to_end(key)
            return True
        number = _number(version)
        row = self._db.execute(
            "SELECT 1 FROM variables WHERE name=? AND is_read=0 AND version=? AND state=?",
            (name, number, number),
        ).fetchone()
        if row is None:
            return False
        # An UPDATE reuses a version and its COMMIT checks it again, often the same one turn after
        # turn (a variable carried along unchanged): remember the yes.
        self._versions[key] = None
        if len(self._versions) > _VERSIONS_KEPT:
            self._versions.popitem(last=False)
        return True

    def lineage(self, name: str) -> Lineage:
        versions = []
        for number, value in self._db.execute(
            "SELECT version, value FROM variables WHERE name=? AND is_read=0 ORDER BY version", (name,)
        ).fetchall():
            readers = [
                state_id(r[0])
                for r in self._db.execute(
                    "SELECT state FROM variables WHERE name=? AND is_read=1 AND version=? ORDER BY state, pos",
                    (name, number),
                )
            ]
            key = f"{name}@{state_id(number)}"
            versions.append(
                VersionInfo(
                    version=key, value=json.loads(value), read_by=readers, invalid=self.is_invalid(key)
                )
            )
        return Lineage(name=name, versions=versions)

    def upstream(self, sid: str) -> list[tuple[str, RelationType]]:
        """Directly related upstream states of `sid` with the relation type, in its record's order
        (empty when `sid` is not committed)."""
        try:
            state = self.load(sid)
        except KeyError:
            return []
        return [(r.related_state_id, r.type) for r in state.relations if r.related_state_id is not None]

    def downstream(self, sid: str) -> list[tuple[str, RelationType]]:
        """States that relate to `sid`, by relation type and then in commit order."""
        return [
            (state_id(down), RelationType(t))
            for down, t in self._db.execute(
                "SELECT state, type FROM relations WHERE upstream=? ORDER BY type, state, pos",
                (_number(sid),),
            )
        ]

    def invalidated_by(self, sid: str) -> Invalidation:
        """States and variable versions made stale (transitively) by the Invalidate relations of `sid`."""
        rows = self._db.execute(
            "SELECT kind, key FROM invalid WHERE invalidated_by=? ORDER BY rowid", (sid,)
        ).fetchall()
        return Invalidation(
            invalidated_by=sid,
            states=[k for kind, k in rows if kind == "state"],
            variables=[k for kind, k in rows if kind == "variable"],
        )

    def is_invalid(self, key: str) -> bool:
        """`key` is a state id ('S3') or a variable version ('revenue@S3')."""
        if not self._any_invalid:
            # Nothing was ever invalidated, as of the heads: a check of them (free inside a
            # `pinned_heads` block that already made it) tells whether another connection did since.
            self._heads()
            if not self._any_invalid:
                return False
        kind = "variable" if "@" in key else "state"
        return (
            self._db.execute("SELECT 1 FROM invalid WHERE kind=? AND key=? LIMIT 1", (kind, key)).fetchone()
            is not None
        )

    def invalid_states(self) -> list[str]:
        return [
            str(r[0])
            for r in self._db.execute("SELECT DISTINCT key FROM invalid WHERE kind='state' ORDER BY rowid")
        ]

    def why_invalid(self, key: str) -> list[tuple[str, str]]:
        """(invalidating state, invalidated root) pairs that explain why `key` is stale."""
        kind = "variable" if "@" in key else "state"
        return [
            (str(a), str(b))
            for a, b in self._db.execute(
                "SELECT invalidated_by, root FROM invalid WHERE kind=? AND key=?", (kind, key)
            )
        ]
