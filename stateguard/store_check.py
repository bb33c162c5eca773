"""Integrity checks a state store passes before anyone reads or writes it.

    check_file(path, creating=...)      # a 0-byte or missing file where a store was expected
    check_pages(db, path)               # PRAGMA quick_check: torn or overwritten pages
    check_rows(columns, digests, path)  # each state's rows against the SHA-256 taken at its commit
                                        # (the columns of each layout: store_schema.py)
    counter = CommitCounter(path)       # <store>-commits: how many states were ever committed
    counter.check(db_states, path, db)  # fewer states than committed: the WAL lost commits

Why a commit counter outside the database: SQLite replays the write-ahead log only up to the
first frame whose checksum fails and silently ignores the rest, so garbage written into the
`-wal` file drops every later commit without any error (a damaged WAL header drops them all).
Nothing inside the database can notice, because the lost commits are exactly what is missing.
The counter is a one-line file next to the store, rewritten in place after every commit
(`pwrite`, no fsync: it is as durable as the WAL itself with `synchronous=NORMAL`); a store that
holds fewer states than it says were committed is refused. Killed between the commit and the
counter write, the store holds one state more than the counter, which is fine.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "COUNTER_SUFFIX",
    "CommitCounter",
    "StoreCorrupt",
    "StoreError",
    "check_file",
    "check_pages",
    "check_rows",
    "damage_fix",
    "row_digest",
]

COUNTER_SUFFIX = "-commits"
_LINE = "stateguard-commits {:012d}\n"
_PARSE = re.compile(r"^stateguard-commits (\d{12})\n$")


class StoreError(ValueError):
    """A commit or query that would break a store invariant, or a store that cannot be opened; the
    message says how to fix it. (Defined here so that `StoreCorrupt` can be one; `stateguard.store`
    exports it.)"""


class StoreCorrupt(StoreError):
    """The store file (or its WAL, or its commit counter) is damaged; the message names the fix."""


def damage_fix(path: str) -> str:
    folder = Path(path).parent
    return (
        f"its states cannot be trusted. Rerun the rollout that wrote it (delete {folder} first; "
        "`make eval ... resume=true` reruns an eval task whose folder is gone), or restore the file "
        "from a copy"
    )


def check_file(path: Path, *, creating: bool) -> None:
    """A store file that exists must have content: SQLite writes its header page when the store is
    created, so a 0-byte file is a truncated store (or a crash before the first write), never an
    empty one. `creating=False` also requires the file to exist."""
    if not path.exists():
        if not creating:
            raise StoreCorrupt(
                f"{path}: no state store here (a run's arm folder holds states.sqlite next to trace.jsonl)"
            )
        return
    if not path.is_file():
        raise StoreCorrupt(f"{path}: not a file; point at the states.sqlite of a run")
    if path.stat().st_size == 0:
        raise StoreCorrupt(
            f"{path}: the file is empty (0 bytes) where a state store was expected: a truncated store or a "
            "crash before its first write. Delete it to start a new, empty store, or restore it from a copy"
        )


def check_pages(db: sqlite3.Connection, path: str) -> None:
    """`PRAGMA quick_check` (b-tree structure, page and record formats; O(file size))."""
    try:
        rows = [str(r[0]) for r in db.execute("PRAGMA quick_check(5)").fetchall()]
    except sqlite3.DatabaseError as exc:
        raise StoreCorrupt(
            f"{path}: not a StateGuard state store, or a damaged one ({exc}); {damage_fix(path)}"
        ) from None
    if rows != ["ok"]:
        raise StoreCorrupt(
            f"{path}: the store is damaged (quick_check: {'; '.join(rows)}); {damage_fix(path)}"
        )


def row_digest(*columns: str | bytes) -> str:
    """SHA-256 over a state's row as committed: id, issue, conclusions, record (SQLite keeps TEXT as
    UTF-8, so the digest of the strings at commit equals that of the stored bytes)."""
    parts = [c.encode("utf-8") if isinstance(c, str) else bytes(c) for c in columns]
    return hashlib.sha256(b"\x00".join(parts)).hexdigest()


def check_rows(
    columns: dict[str, list[bytes]], digests: Iterable[tuple[str, str | bytes]], path: str
) -> None:
    """Every committed state's rows still hash to the digest taken at its commit (`columns`: per
    state id, the bytes of its row, relation rows and variable rows, as read back). quick_check
    sees page structure only; bytes overwritten inside a record, in the issue and conclusions the
    manager's index shows, or in a variable's value would otherwise be read back as committed.
    A digest may come as bytes (read as a BLOB: damaged text need not be UTF-8)."""
    bad = [
        str(sid)
        for sid, digest in digests
        if row_digest(*columns.get(str(sid), []))
        != (digest if isinstance(digest, str) else bytes(digest).decode("ascii", "replace"))
    ]
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise StoreCorrupt(
            f"{path}: committed state(s) {shown} changed on disk after their commit (their "
            f"digests no longer match); {damage_fix(path)}"
        )


class CommitCounter:
    """`<store>-commits`: the number of committed states, kept outside the database."""

    def __init__(self, store_path: str, *, writable: bool):
        self.path = Path(store_path + COUNTER_SUFFIX)
        self._fd: int | None = None
        self.writable = writable

    def read(self) -> int | None:
        """The recorded count, or None when there is no counter file (a store from before it existed)."""
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return None
        match = _PARSE.match(text.decode("ascii", errors="replace"))
        if match is None:
            raise StoreCorrupt(
                f"{self.path}: the commit counter of the store is unreadable ({text[:40]!r}); it guards against a "
                "damaged write-ahead log silently dropping commits. If you know the store is intact, delete this "
                "file (it is recreated from the store); otherwise rerun the rollout that wrote the store"
            )
        return int(match.group(1))

    def check(self, states: int, store_path: str, *, wal_copy: bool) -> None:
        """Refuse a store holding fewer states than were committed to it. With `wal_copy`, the WAL
        file is copied aside first (closing the connection would fold what is left of it into the
        database and delete it)."""
        counted = self.read()
        if counted is None or states >= counted:
            return
        wal = Path(store_path + "-wal")
        kept = ""
        if wal_copy and wal.is_file():
            aside = wal.with_name(wal.name + ".damaged")
            shutil.copyfile(wal, aside)
            kept = f" The write-ahead log was copied to {aside} for inspection."
        raise StoreCorrupt(
            f"{store_path}: {counted} states were committed to this store but only {states} can be read: the "
            f"write-ahead log ({wal.name}) is damaged or was lost, and SQLite dropped every commit after the damage."
            f"{kept} {damage_fix(store_path)[0].upper()}{damage_fix(store_path)[1:]}"
        )

    def write(self, committed: int) -> None:
        """Record `committed` states (called after each commit; a few microseconds)."""
        if not self.writable:
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(self._fd, _LINE.format(committed).encode("ascii"), 0)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
