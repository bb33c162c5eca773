"""The state store's tables (layout 2), the digest a commit takes, and the migration from layout 1.

A commit writes one row per state, relation and used variable. Layout 1 (the store's first) kept
each kind in a rowid table with its own indexes: a commit touched about 18 b-tree pages (the
states row and two unique indexes, a relation and two indexes, each variable and three indexes,
the digest and its key). Layout 2 keeps one b-tree per kind, keyed by what the queries ask:

    states     num (S<num>; ids only increase, so it is also commit order) -> the row and its digest
    relations  (upstream, state, pos)              downstream(S): the states that relate to S
    variables  (name, is_read, version, state, pos)   current version and lineage of a name (is_read=0),
                                                   whether name@Sk was defined, the readers of name@Sk

What a state itself lists (its upstream states, the variables it defines or reads) is read from
its record, which the digest covers as it covers the rows. A store of layout 1 is migrated when
it is opened for writing (one transaction; its digests are checked before and after), and in
memory when it is opened read-only, so nothing is written next to it.

    layout = store_layout(db, tables, path)   # None (no store yet), 1 or 2
    check_digests(db, layout, tables, path)   # each state's rows against its digest
    migrate(db, path)                         # layout 1 -> 2, inside the caller's transaction
    record_text(state), value_text(value)     # what a states row and a variables row hold
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from stateguard.records import json_dump
from stateguard.store_check import StoreError, check_rows

__all__ = [
    "LAYOUT",
    "LAYOUT_KEY",
    "SCHEMA",
    "check_digests",
    "create",
    "migrate",
    "record_text",
    "state_digest",
    "store_layout",
    "value_text",
]

LAYOUT = 2
LAYOUT_KEY = "store_layout"  # in `meta`; a store without it is of layout 1

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # sha256: `state_digest` at commit; NULL only for a state migrated from a store older than digests.
    "CREATE TABLE IF NOT EXISTS states(num INTEGER PRIMARY KEY, issue TEXT NOT NULL, "
    "conclusions TEXT NOT NULL, record TEXT NOT NULL, sha256 TEXT)",
    # upstream: the related state's number, 0 for none (Init); pos: the relation's place in the state.
    "CREATE TABLE IF NOT EXISTS relations(upstream INTEGER NOT NULL, state INTEGER NOT NULL, "
    "pos INTEGER NOT NULL, type TEXT NOT NULL, PRIMARY KEY(upstream, state, pos)) WITHOUT ROWID",
    # is_read: 0 where the state defines the version (version = state), 1 where it reads an earlier one.
    "CREATE TABLE IF NOT EXISTS variables(name TEXT NOT NULL, is_read INTEGER NOT NULL, "
    "version INTEGER NOT NULL, state INTEGER NOT NULL, pos INTEGER NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY(name, is_read, version, state, pos)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS invalid(kind TEXT NOT NULL, key TEXT NOT NULL, invalidated_by TEXT NOT NULL, "
    "root TEXT NOT NULL, PRIMARY KEY(kind, key, invalidated_by))",
    "CREATE INDEX IF NOT EXISTS invalid_by ON invalid(invalidated_by)",
]

# Per layout: the digest of each state, and the bytes it covers in the order `state_digest` takes
# them (the state's id, issue, conclusions, record; per relation its upstream id or '' and type;
# per variable its name, version, version number, 1 if defined here else 0, and value). Layout 2
# rebuilds the texts layout 1 stored (`S` || number, `1 - is_read`), so a state's digest is the
# same in both and a migration copies it.
_DIGESTS = {
    1: "SELECT id, sha256 FROM digests",
    2: "SELECT 'S' || num, CAST(sha256 AS BLOB) FROM states WHERE sha256 IS NOT NULL",
}
_COLUMNS = {
    1: [
        "SELECT id, CAST(id AS BLOB), CAST(issue AS BLOB), CAST(conclusions AS BLOB), "
        "CAST(record AS BLOB) FROM states ORDER BY seq",
        "SELECT state_id, CAST(COALESCE(upstream_id, '') AS BLOB), CAST(type AS BLOB) FROM relations ORDER BY rowid",
        "SELECT state_id, CAST(name AS BLOB), CAST(version AS BLOB), CAST(version_num AS BLOB), "
        "CAST(defined AS BLOB), CAST(value AS BLOB) FROM variables ORDER BY rowid",
    ],
    2: [
        "SELECT 'S' || num, CAST('S' || num AS BLOB), CAST(issue AS BLOB), CAST(conclusions AS BLOB), "
        "CAST(record AS BLOB) FROM states ORDER BY num",
        "SELECT 'S' || state, CAST(CASE upstream WHEN 0 THEN '' ELSE 'S' || upstream END AS BLOB), "
        "CAST(type AS BLOB) FROM relations ORDER BY state, pos",
        "SELECT 'S' || state, CAST(name AS BLOB), CAST('S' || version AS BLOB), CAST(version AS BLOB), "
        "CAST(1 - is_read AS BLOB), CAST(value AS BLOB) FROM variables ORDER BY state, pos",
    ],
}

# Layout 1 -> 2: the old tables renamed aside, the new ones filled from them (positions in rowid
# order, which was each state's list order), then the old ones dropped with their indexes.
_MIGRATE = [
    "ALTER TABLE states RENAME TO v1_states",
    "ALTER TABLE relations RENAME TO v1_relations",
    "ALTER TABLE variables RENAME TO v1_variables",
    *SCHEMA,
    "INSERT INTO states(num, issue, conclusions, record, sha256) SELECT s.num, s.issue, s.conclusions, "
    "s.record, {digest} FROM v1_states s ORDER BY s.seq",
    "INSERT INTO relations(upstream, state, pos, type) SELECT "
    "COALESCE(CAST(substr(upstream_id, 2) AS INTEGER), 0), CAST(substr(state_id, 2) AS INTEGER), "
    "ROW_NUMBER() OVER (PARTITION BY state_id ORDER BY rowid) - 1, type FROM v1_relations",
    "INSERT INTO variables(name, is_read, version, state, pos, value) SELECT name, 1 - defined, "
    "version_num, CAST(substr(state_id, 2) AS INTEGER), "
    "ROW_NUMBER() OVER (PARTITION BY state_id ORDER BY rowid) - 1, value FROM v1_variables",
    "DROP TABLE v1_states",
    "DROP TABLE v1_relations",
    "DROP TABLE v1_variables",
    "DROP TABLE IF EXISTS digests",
]


def _one_shot(item_separator: str, default: Callable[[Any], Any]) -> Callable[[Any], str]:
    """`json.dumps(value, sort_keys=True, separators=(item_separator, <its key separator>),
    default=default)`, byte for byte, with the C encoder made once instead of per call (a
    commit encodes its record and each variable's value). The encoder keeps no marks of the
    containers it is inside, so it holds no state and any thread may use it: a value holding a
    cycle recurses until RecursionError and is then encoded by `json.dumps` itself, which raises
    what it always raised."""
    key_separator = ":" if item_separator == "," else ": "
    options: dict[str, Any] = {
        "sort_keys": True,
        "separators": (item_separator, key_separator),
        "default": default,
    }
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C module
        return lambda value: json.dumps(value, **options)
    fast = make(
        None,
        default,
        json.encoder.encode_basestring_ascii,
        None,
        key_separator,
        item_separator,
        True,
        False,
        True,
    )

    def encode(value: Any) -> str:
        try:
            return "".join(fast(value, 0))
        except RecursionError:
            return json.dumps(value, **options)

    return encode


# A state's record: `Record.canonical_json()`'s bytes (sorted keys, no spaces; a record's JSON dump
# holds only JSON values, and anything else fails as `json.dumps` fails on it).
_record = _one_shot(",", json.JSONEncoder().default)
# A variable's value as its row holds it: anything that is not JSON is written as its text.
value_text = _one_shot(", ", str)


def record_text(record: Any) -> str:
    """The text a states row holds for `record`: exactly `record.canonical_json()`."""
    return _record(json_dump(record))


def state_digest(parts: Iterable[str]) -> str:
    """SHA-256 of a state's columns joined by NUL, in `_COLUMNS`' order (the bytes
    `store_check.row_digest` hashes for them; SQLite keeps TEXT as UTF-8)."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def store_layout(db: sqlite3.Connection, tables: set[str], path: str) -> int | None:
    """The layout of the store on `db` (which has a `meta` table): None when it holds no states
    table yet, 1 for a store written before layouts were recorded, else the recorded one."""
    row = db.execute("SELECT value FROM meta WHERE key=?", (LAYOUT_KEY,)).fetchone()
    if row is None:
        return 1 if "states" in tables else None
    if str(row[0]) not in ("1", "2"):
        raise StoreError(
            f"{path}: store layout {row[0]!r} is not one this code reads (1, migrated when opened, and "
            f"{LAYOUT}); a newer StateGuard wrote it: open it with that version, or use a new run directory"
        )
    return int(row[0])


def check_digests(db: sqlite3.Connection, layout: int | None, tables: set[str], path: str) -> None:
    """Every committed state's rows still hash to the digest taken at its commit (StoreCorrupt
    naming the states and the fix when not)."""
    if layout is None or (layout == 1 and "digests" not in tables):
        return  # no states, or a store from before digests
    columns: dict[str, list[bytes]] = {}
    for query in _COLUMNS[layout]:
        for row in db.execute(query):
            cols = columns.get(row[0])
            if cols is None:
                cols = columns[str(row[0])] = []
            cols.extend(row[1:])
    check_rows(columns, db.execute(_DIGESTS[layout]), path)


def create(db: sqlite3.Connection) -> None:
    """The tables of a new store (inside the caller's transaction)."""
    for statement in SCHEMA:
        db.execute(statement)
    _set_layout(db)


def migrate(db: sqlite3.Connection, path: str) -> None:
    """Rewrite a layout-1 store as layout 2, inside the caller's transaction (a failure leaves it
    as it was). Its digests were checked by the caller; they are checked again on the new tables,
    so a state whose rows did not carry over exactly stops the migration."""
    tables = {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    digest = "(SELECT d.sha256 FROM digests d WHERE d.id = s.id)" if "digests" in tables else "NULL"
    for statement in _MIGRATE:
        db.execute(statement.format(digest=digest))
    _set_layout(db)
    check_digests(db, LAYOUT, tables, path)


def _set_layout(db: sqlite3.Connection) -> None:
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (LAYOUT_KEY, str(LAYOUT)))
