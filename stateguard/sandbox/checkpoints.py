"""Parent-side checkpoint bookkeeping: one `<id>.pkl` file per checkpoint, and what each holds.

The files are opaque bytes to the parent (it never unpickles them); only a kernel loads them.
Each file ends with its identity (the checkpoint id, the size and the XXH3-128 digest of the
bytes): `verified` refuses a file swapped, renamed, truncated or altered on the host before a
kernel loads a byte of it. The digest is not keyed, so whoever can write the file can also write
a matching identity: it finds damage and mix-ups, not a deliberate forgery (no digest without a
key could; the sandbox itself cannot reach these files). XXH3 reads at memory speed where SHA-256
cost about 1.2 s of CPU per GB here, and `make eval` checkpoints about 5 GB (eleventh round of
docs/results/performance.md).
A file is written under a temporary name and renamed into place, so a kernel dying mid-transfer
never leaves a truncated checkpoint. Files outlive the workspace: a later workspace on the same
directory can restore them (its `checkpoint_info` is then unknown, the values are not).

`for_recovery` picks what a restarted kernel restores: the checkpoint last taken or restored if
it still exists, else the newest remaining one.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import xxhash
from pydantic import BaseModel

_CHECKPOINT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}")


class CheckpointInfo(BaseModel):
    checkpoint_id: str
    saved: list[str]
    skipped: dict[str, str]  # name -> why it could not be pickled (absent after a restore)
    size_bytes: int
    after_cell: int  # the last cell run when the checkpoint was taken


MAGIC = b"SGCKPT02"  # 01: the identity carried a SHA-256 (refused now: "take the checkpoint again")
_TRAILER = struct.Struct(">Q")


class CheckpointRefused(RuntimeError):
    """A checkpoint file that is not the checkpoint it is named after (swapped, renamed, corrupted)."""


@dataclass(frozen=True)
class BlobFile:
    """The first `size` bytes of `path`: what is streamed to a kernel."""

    path: Path
    size: int


def _digest() -> xxhash.xxh3_128:
    return xxhash.xxh3_128()


class _Hashing:
    """A binary writer that hashes what passes through it."""

    def __init__(self, out: BinaryIO):
        self.out = out
        self.digest = _digest()

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        return self.out.write(data)


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
        """Stream a checkpoint into place via `read_into(file)`; returns its size. The file ends
        with its identity (checkpoint id, size and XXH3-128 digest of the bytes), checked by `verified`."""
        path = self.path(checkpoint_id)
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("wb") as out:
                hashing = _Hashing(out)
                size = read_into(hashing)  # type: ignore[arg-type]
                identity = json.dumps(
                    {"checkpoint_id": checkpoint_id, "size": size, "xxh3_128": hashing.digest.hexdigest()}
                ).encode()
                out.write(identity + _TRAILER.pack(len(identity)) + MAGIC)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(path)
        return size

    def verified(self, checkpoint_id: str) -> BlobFile:
        """The checkpoint's bytes, after checking that the file is this checkpoint, whole; raises
        CheckpointRefused naming what is wrong (a file swapped or renamed on the host, a truncated
        or altered one, one written before files carried their identity)."""
        path = self.path(checkpoint_id)
        with path.open("rb") as f:
            total = f.seek(0, os.SEEK_END)
            tail = _TRAILER.size + len(MAGIC)
            if total < tail:
                raise CheckpointRefused(f"{path}: too short to be a checkpoint file ({total} bytes)")
            f.seek(total - tail)
            end = f.read(tail)
            if end[-len(MAGIC) :] != MAGIC:
                raise CheckpointRefused(
                    f"{path}: no identity record at its end (not written by this version, or truncated); "
                    "take the checkpoint again"
                )
            (length,) = _TRAILER.unpack(end[: _TRAILER.size])
            if length > min(4096, total - tail):
                raise CheckpointRefused(f"{path}: a damaged identity record")
            f.seek(total - tail - length)
            try:
                identity = json.loads(f.read(length))
                owner, size, digest = (
                    identity["checkpoint_id"],
                    int(identity["size"]),
                    str(identity["xxh3_128"]),
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise CheckpointRefused(f"{path}: a damaged identity record ({exc})") from None
            if owner != checkpoint_id:
                raise CheckpointRefused(
                    f"{path} holds checkpoint {owner!r}, not {checkpoint_id!r} (renamed or swapped on the host)"
                )
            if size != total - tail - length:
                raise CheckpointRefused(f"{path}: {total - tail - length} bytes where {size} were written")
            f.seek(0)
            hashed = _digest()
            remaining = size
            while remaining:
                chunk = f.read(min(1 << 20, remaining))
                if not chunk:
                    break
                hashed.update(chunk)
                remaining -= len(chunk)
            if hashed.hexdigest() != digest:
                raise CheckpointRefused(f"{path}: its bytes do not match the hash recorded when it was taken")
        return BlobFile(path, size)

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
