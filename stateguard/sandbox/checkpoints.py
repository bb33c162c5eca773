"""Parent-side checkpoint bookkeeping: one `<id>.pkl` file per checkpoint, and what each holds.

The files are opaque bytes to the parent (it never unpickles them); only a kernel loads them.
A file is written under a temporary name and renamed into place, so a kernel dying mid-transfer
never leaves a truncated checkpoint. Files outlive the workspace: a later workspace on the same
directory can restore them (its `checkpoint_info` is then unknown, the values are not).

`for_recovery` picks what a restarted kernel restores: the checkpoint last taken or restored if
it still exists, else the newest remaining one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel

_CHECKPOINT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}")


class CheckpointInfo(BaseModel):
    checkpoint_id: str
    saved: list[str]
    skipped: dict[str, str]  # name -> why it could not be pickled (absent after a restore)
    size_bytes: int
    after_cell: int  # the last cell run when the checkpoint was taken


class CheckpointFiles:
    def __init__(self, directory: Path):
        self.directory = directory
        self.current: str | None = None  # last taken or restored
        self._infos: dict[str, CheckpointInfo] = {}

    def path(self, checkpoint_id: str) -> Path:
        # Ids become file names: nothing that could climb out of the directory.
        if not _CHECKPOINT_ID.fullmatch(checkpoint_id):
            raise ValueError(f"checkpoint id {checkpoint_id!r} must match {_CHECKPOINT_ID.pattern}")
        return self.directory / f"{checkpoint_id}.pkl"

    def exists(self, checkpoint_id: str) -> bool:
        return _CHECKPOINT_ID.fullmatch(checkpoint_id) is not None and self.path(checkpoint_id).exists()

    def info(self, checkpoint_id: str) -> CheckpointInfo | None:
        return self._infos.get(checkpoint_id)

    def receive(self, checkpoint_id: str, read_into: Callable[[BinaryIO], int]) -> int:
        """Stream a checkpoint into place via `read_into(file)`; returns its size."""
        path = self.path(checkpoint_id)
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("wb") as out:
                size = read_into(out)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(path)
        return size

    def record(self, info: CheckpointInfo) -> None:
        self._infos[info.checkpoint_id] = info
        self.current = info.checkpoint_id

    def drop(self, checkpoint_id: str) -> None:
        self.path(checkpoint_id).unlink(missing_ok=True)
        self._infos.pop(checkpoint_id, None)
        if self.current == checkpoint_id:
            self.current = None

    def for_recovery(self) -> str | None:
        if self.current is not None and self.exists(self.current):
            return self.current
        alive = [c for c in self._infos.values() if self.exists(c.checkpoint_id)]
        return max(alive, key=lambda c: c.after_cell).checkpoint_id if alive else None
