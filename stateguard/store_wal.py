"""WAL checkpoints off the commit path: a background connection folds the log into the database.

SQLite's default (`wal_autocheckpoint=1000`) runs a checkpoint inside whichever commit pushes the
log past 1,000 pages, so one commit in a few hundred pays for copying the whole log back (the
store's p99). The store turns automatic checkpoints off and hands them to this checkpointer: the
committing thread only counts its write transactions and, every `every` of them, wakes a daemon
thread that runs `PRAGMA wal_checkpoint(PASSIVE)` on its own connection. PASSIVE never waits for
the writer and never blocks it, so a commit never waits for a checkpoint; the log is durable on
its own (that is what WAL means), so when the checkpoint runs changes nothing about what survives
a crash. Closing the store stops the thread first, so the store's own last close still folds the
log in and deletes it.

    wal = WalCheckpointer(path); wal.wrote()   # after each write transaction; wal.close() at the end
"""

from __future__ import annotations

import sqlite3
import threading

__all__ = ["WalCheckpointer"]


class WalCheckpointer:
    """Counts write transactions on a WAL store and checkpoints in a background thread."""

    def __init__(self, path: str, *, every: int = 200):
        self.path = path
        self.every = every
        self.checkpoints = 0  # finished background checkpoints (tests read it)
        self._pending = 0
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None

    def wrote(self) -> None:
        """One write transaction committed; every `every` of them, ask for a checkpoint. The thread
        starts on the first request, so a short run (most rollouts) never starts one."""
        self._pending += 1
        if self._pending < self.every:
            return
        self._pending = 0
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="stateguard-wal-checkpoint", daemon=True)
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.OperationalError:
                    pass  # busy or locked: the next request (or the store's close) checkpoints instead
        finally:
            db.close()

    def close(self) -> None:
        """Stop the thread (its connection closes before the store's, so the store's close is the
        last one and checkpoints what is left)."""
        if self._thread is not None:
            self._stop = True
            self._wake.set()
            self._thread.join()
            self._thread = None
