"""Parent-side checkpoint bookkeeping: one `<id>.pkl` file per checkpoint, its parts, and what each holds.

The files are opaque bytes to the parent (it never unpickles them); only a kernel loads them.
Each file ends with its identity (the checkpoint id, the size, the parts it refers to and the
XXH3-128 digest of the bytes followed by that list of parts): `verified` refuses a file swapped,
renamed, truncated or altered on the host before a kernel loads a byte of it. The digest is not
keyed, so whoever can write the file can also write a matching identity: it finds damage and
mix-ups, not a deliberate forgery (no digest without a key could; the sandbox itself cannot reach
these files). XXH3 reads at memory speed where SHA-256 cost about 1.2 s of CPU per GB here, and
`make eval` checkpoints gigabytes (eleventh round of docs/results/performance.md).

Parts (`parts.py`): a large array unchanged since the workspace's last checkpoint is not sent or
written again. It lives once in `.parts/<key>.part` (the key is the kernel's content key of the
array; the file ends with its own identity), and each checkpoint that refers to it records its
size and digest. `verified` checks every part a checkpoint refers to, and refuses the checkpoint
when one is missing or does not match. A part is deleted with the last checkpoint of this
workspace that refers to it; parts are never shared between directories (one per workspace).

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
import shutil
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import xxhash
from pydantic import BaseModel

_CHECKPOINT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}")
_PART_KEY = re.compile(r"[0-9a-f]{32}")
PARTS_DIR = ".parts"  # not a valid checkpoint id: no clash with `<id>.pkl`


class CheckpointInfo(BaseModel):
    checkpoint_id: str
    saved: list[str]
    skipped: dict[str, str]  # name -> why it could not be pickled (absent after a restore)
    size_bytes: int
    after_cell: int  # the last cell run when the checkpoint was taken


MAGIC = b"SGCKPT03"  # 03: with parts; 02 (no parts) is still read; 01 (SHA-256) is refused
_MAGICS = (MAGIC, b"SGCKPT02")
PART_MAGIC = b"SGPART01"
_TRAILER = struct.Struct(">Q")
_MAX_IDENTITY = 1 << 20


class CheckpointRefused(RuntimeError):
    """A checkpoint file that is not the checkpoint it is named after (swapped, renamed, corrupted)."""


@dataclass(frozen=True)
class BlobFile:
    """The first `size` bytes of `path`: what is streamed to a kernel; a checkpoint's `parts`
    (key, its part's bytes) follow it, each as a blob of its own."""

    path: Path
    size: int
    parts: tuple[tuple[str, BlobFile], ...] = field(default=())


@dataclass(frozen=True)
class PartRecord:
    size: int
    xxh3_128: str


def _parts_bytes(parts: dict[str, list[object]]) -> bytes:
    """The part list as the checkpoint's digest covers it (after the checkpoint's own bytes)."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()


def _read_identity(
    f: BinaryIO, path: Path, magics: tuple[bytes, ...]
) -> tuple[dict[str, object], int, bytes]:
    """(identity record, size of the bytes before it, magic) of a file ending with one."""
    total = f.seek(0, os.SEEK_END)
    tail = _TRAILER.size + len(MAGIC)
    if total < tail:
        raise CheckpointRefused(f"{path}: too short to be a checkpoint file ({total} bytes)")
    f.seek(total - tail)
    end = f.read(tail)
    magic = end[-len(MAGIC) :]
    if magic not in magics:
        raise CheckpointRefused(
            f"{path}: no identity record at its end (not written by this version, or truncated); "
            "take the checkpoint again"
        )
    (length,) = _TRAILER.unpack(end[: _TRAILER.size])
    if length > min(_MAX_IDENTITY, total - tail):
        raise CheckpointRefused(f"{path}: a damaged identity record")
    f.seek(total - tail - length)
    try:
        identity = json.loads(f.read(length))
        if not isinstance(identity, dict):
            raise TypeError("not an object")
    except (ValueError, TypeError) as exc:
        raise CheckpointRefused(f"{path}: a damaged identity record ({exc})") from None
    return identity, total - tail - length, magic


def _hash_file(f: BinaryIO, size: int, digest: xxhash.xxh3_128) -> None:
    f.seek(0)
    remaining = size
    while remaining:
        chunk = f.read(min(1 << 20, remaining))
        if not chunk:
            break
        digest.update(chunk)
        remaining -= len(chunk)


def _write_identity(out: BinaryIO, identity: dict[str, object], magic: bytes) -> None:
    record = json.dumps(identity).encode()
    out.write(record + _TRAILER.pack(len(record)) + magic)


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
        self.parts_dir = directory / PARTS_DIR
        # The parts this workspace may refer to without sending them again, and which checkpoint
        # refers to which (read from the files already here, then kept up to date).
        self._parts: dict[str, PartRecord] = {}
        self._refs: dict[str, set[str]] = {}
        self._scan()

    def _scan(self) -> None:
        if not self.parts_dir.is_dir():
            return
        for path in self.directory.glob("*.pkl"):
            try:
                with path.open("rb") as f:
                    identity, _, _ = _read_identity(f, path, _MAGICS)
                parts = identity.get("parts") or {}
                assert isinstance(parts, dict)
                records = {str(k): PartRecord(int(v[0]), str(v[1])) for k, v in parts.items()}
            except (OSError, CheckpointRefused, AssertionError, ValueError, TypeError, IndexError, KeyError):
                continue  # a file that is not a checkpoint of ours refers to nothing we keep
            self._refs[path.stem] = set(records)
            self._parts.update(records)

    def path(self, checkpoint_id: str) -> Path:
        # Ids become file names: nothing that could climb out of the directory.
        if not _CHECKPOINT_ID.fullmatch(checkpoint_id):
            raise ValueError(f"checkpoint id {checkpoint_id!r} must match {_CHECKPOINT_ID.pattern}")
        return self.directory / f"{checkpoint_id}.pkl"

    def part_path(self, key: str) -> Path:
        if not _PART_KEY.fullmatch(key):
            raise ValueError(f"part key {key!r} must be 32 hex digits")
        return self.parts_dir / f"{key}.part"

    def exists(self, checkpoint_id: str) -> bool:
        return _CHECKPOINT_ID.fullmatch(checkpoint_id) is not None and self.path(checkpoint_id).exists()

    def info(self, checkpoint_id: str) -> CheckpointInfo | None:
        return self._infos.get(checkpoint_id)

    def held_parts(self) -> dict[str, int]:
        """Part key -> size: what a kernel may refer to without sending it (the snapshot request)."""
        return {key: record.size for key, record in self._parts.items()}

    def receive(
        self,
        checkpoint_id: str,
        read_into: Callable[[BinaryIO], int],
        *,
        new_parts: Sequence[tuple[str, int]] = (),
        refs: Sequence[str] = (),
        read_part_into: Callable[[BinaryIO, int, bool], int] | None = None,
    ) -> int:
        """Stream a checkpoint into place via `read_into(file)`, then each of its `new_parts` (key,
        size) via `read_part_into(file, size, last)`; returns its size, parts included (those it
        refers to, `refs`, new or held). The file ends with its identity (checkpoint id, size, parts
        and their digests, and the XXH3-128 digest of the bytes and the part list), checked by
        `verified`. Raises CheckpointRefused for a reply that refers to a part nobody sent."""
        path = self.path(checkpoint_id)
        new = dict(new_parts)
        unknown = [key for key in refs if key not in new and key not in self._parts]
        if unknown or any(key in self._parts for key in new):
            raise CheckpointRefused(
                f"snapshot {checkpoint_id!r}: its parts are not the ones sent and held "
                f"({', '.join(unknown[:5]) or 'a held part sent again'})"
            )
        partial = path.with_name(path.name + ".partial")
        written: dict[str, PartRecord] = {}
        try:
            with partial.open("wb") as out:
                hashing = _Hashing(out)
                size = read_into(hashing)  # type: ignore[arg-type]
                if new:
                    self.parts_dir.mkdir(exist_ok=True)
                for i, (key, part_size) in enumerate(new_parts):
                    written[key] = self._receive_part(
                        key, _reader(read_part_into, part_size, i == len(new) - 1)
                    )
                records = {**self._parts, **written}
                parts = {key: [records[key].size, records[key].xxh3_128] for key in sorted(refs)}
                hashing.digest.update(_parts_bytes(parts))
                identity = {
                    "checkpoint_id": checkpoint_id,
                    "size": size,
                    "xxh3_128": hashing.digest.hexdigest(),
                }
                _write_identity(out, {**identity, "parts": parts}, MAGIC)
        except BaseException:
            partial.unlink(missing_ok=True)
            for key in written:
                if key not in self._parts:
                    self.part_path(key).unlink(missing_ok=True)
            raise
        partial.replace(path)
        self._parts.update(written)
        replaced = self._refs.get(checkpoint_id, set())  # a checkpoint taken again under its id
        self._refs[checkpoint_id] = set(refs)
        self._collect(replaced)
        return size + sum(records[key].size for key in parts)

    def _receive_part(self, key: str, read_into: Callable[[BinaryIO], int]) -> PartRecord:
        path = self.part_path(key)
        partial = path.with_name(path.name + ".partial")
        try:
            with partial.open("wb") as out:
                hashing = _Hashing(out)
                size = read_into(hashing)  # type: ignore[arg-type]
                digest = hashing.digest.hexdigest()
                _write_identity(out, {"part": key, "size": size, "xxh3_128": digest}, PART_MAGIC)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(path)
        return PartRecord(size, digest)

    def verified(self, checkpoint_id: str) -> BlobFile:
        """The checkpoint's bytes and its parts', after checking that the file is this checkpoint,
        whole, and each part the one it recorded, whole; raises CheckpointRefused naming what is
        wrong (a file swapped or renamed on the host, a truncated or altered one, a part missing or
        altered, one written before files carried their identity)."""
        path = self.path(checkpoint_id)
        with path.open("rb") as f:
            identity, size_before, magic = _read_identity(f, path, _MAGICS)
            try:
                owner, size, digest = (
                    identity["checkpoint_id"],
                    int(identity["size"]),  # type: ignore[call-overload]
                    str(identity["xxh3_128"]),
                )
                parts = identity.get("parts", {}) if magic == MAGIC else {}
                assert isinstance(parts, dict)
                records = {str(k): PartRecord(int(v[0]), str(v[1])) for k, v in parts.items()}
            except (ValueError, KeyError, TypeError, AssertionError, IndexError) as exc:
                raise CheckpointRefused(f"{path}: a damaged identity record ({exc})") from None
            if owner != checkpoint_id:
                raise CheckpointRefused(
                    f"{path} holds checkpoint {owner!r}, not {checkpoint_id!r} (renamed or swapped on the host)"
                )
            if size != size_before:
                raise CheckpointRefused(f"{path}: {size_before} bytes where {size} were written")
            hashed = _digest()
            _hash_file(f, size, hashed)
            if magic == MAGIC:
                hashed.update(_parts_bytes(parts))
            if hashed.hexdigest() != digest:
                raise CheckpointRefused(f"{path}: its bytes do not match the hash recorded when it was taken")
        return BlobFile(
            path,
            size,
            tuple(
                (key, self._verified_part(checkpoint_id, key, record))
                for key, record in sorted(records.items())
            ),
        )

    def _verified_part(self, checkpoint_id: str, key: str, record: PartRecord) -> BlobFile:
        try:
            path = self.part_path(key)
        except ValueError:
            raise CheckpointRefused(
                f"checkpoint {checkpoint_id!r}: a damaged part key {key[:40]!r}"
            ) from None
        try:
            f = path.open("rb")
        except FileNotFoundError:
            raise CheckpointRefused(
                f"checkpoint {checkpoint_id!r}: its part {key} is missing ({path}); take the checkpoint again"
            ) from None
        with f:
            identity, size_before, _ = _read_identity(f, path, (PART_MAGIC,))
            if identity.get("part") != key or record.size != size_before:
                raise CheckpointRefused(
                    f"checkpoint {checkpoint_id!r}: part file {path} is not the part it recorded "
                    f"({size_before} bytes where {record.size} were written)"
                )
            hashed = _digest()
            _hash_file(f, record.size, hashed)
            if hashed.hexdigest() != record.xxh3_128:
                raise CheckpointRefused(
                    f"checkpoint {checkpoint_id!r}: the bytes of its part {path} do not match the hash recorded "
                    "when it was taken"
                )
        return BlobFile(path, record.size)

    def record(self, info: CheckpointInfo) -> None:
        self._infos[info.checkpoint_id] = info
        self.current = info.checkpoint_id

    def drop(self, checkpoint_id: str) -> None:
        self.path(checkpoint_id).unlink(missing_ok=True)
        self._infos.pop(checkpoint_id, None)
        if self.current == checkpoint_id:
            self.current = None
        self._collect(self._refs.pop(checkpoint_id, set()))

    def _collect(self, keys: set[str]) -> None:
        """Delete the parts among `keys` that no checkpoint refers to any more."""
        still = set().union(*self._refs.values()) if self._refs else set()
        for key in keys - still:  # the last checkpoint that referred to it is gone
            self._parts.pop(key, None)
            self.part_path(key).unlink(missing_ok=True)

    def for_recovery(self) -> str | None:
        if self.current is not None and self.exists(self.current):
            return self.current
        alive = [c for c in self._infos.values() if self.exists(c.checkpoint_id)]
        return max(alive, key=lambda c: c.after_cell).checkpoint_id if alive else None


def _reader(
    read_part_into: Callable[[BinaryIO, int, bool], int] | None, size: int, last: bool
) -> Callable[[BinaryIO], int]:
    if read_part_into is None:
        raise ValueError("a snapshot with new parts needs read_part_into")
    return lambda out: read_part_into(out, size, last)


def remove_all(directory: Path) -> None:
    """Delete every checkpoint file of a directory and every part (a finished rollout's)."""
    for pkl in directory.glob("*.pkl"):
        pkl.unlink(missing_ok=True)
    shutil.rmtree(directory / PARTS_DIR, ignore_errors=True)
