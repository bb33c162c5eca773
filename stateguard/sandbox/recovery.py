"""Rebuilding a workspace whose kernel died: replay its history, checked, or say what was lost.

A checkpoint cannot hold everything: a DuckDB connection, an open file or a generator is not
picklable, and whatever the cells did since the last checkpoint is not in it. So the workspace
keeps its history (`History`): every cell with a digest of how it ended (ok or the error, the
printed output, the shown value), every delete, snapshot and restore. After a death,
`replay` runs that history again in a fresh kernel that starts from the scratch dir as it was
when the workspace was created:

- each cell must end exactly as it did (same digest), otherwise the replay has diverged
  (unseeded randomness, the clock, files changed from outside);
- snapshots that a later restore uses are taken again into a private folder, so restores load
  what they loaded then (the harness drops its transaction checkpoints right away);
- at the last snapshot whose file is still on disk, the rebuilt values are compared with the
  file's (`verify`, data values only: frames, arrays, numbers, strings, containers).

A replay that passes rebuilds live objects too (the connection and every table created in it).
One that cannot run (replay off, over `replay_seconds`, a restore of a checkpoint no longer
available) or diverges falls back to restoring the last checkpoint; the workspace is then marked
degraded with the reason (`SandboxWorkspace.degraded_reasons`).

The cell that was running when the kernel died is not replayed: it failed, visibly.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from stateguard.sandbox.checkpoints import BlobFile, CheckpointRefused
from stateguard.sandbox.process import KernelDied, KernelProcess
from stateguard.sandbox.replies import RunReply


class Op(BaseModel):
    kind: Literal["cell", "delete", "snapshot", "restore"]
    code: str = ""
    digest: str = ""
    names: list[str] = []
    checkpoint: str = ""
    connections: bool = False  # a snapshot that copied the DuckDB connection (duckdb_copy.py)


def outcome_digest(reply: RunReply) -> str:
    """How a cell ended, as far as a replay must reproduce it (stderr and timings are left out).
    The fields are a bool and strings (or None), whose repr is exact and the same in every process;
    computed after every cell, so no JSON encoding (a third of the cost)."""
    key = (reply.ok, reply.error, reply.stdout, reply.value)
    return hashlib.blake2b(repr(key).encode(), digest_size=12).hexdigest()


@dataclass
class History:
    ops: list[Op] = field(default_factory=list)

    def cell(self, code: str, reply: RunReply) -> None:
        # Built from typed fields after every cell: validating them again would cost as much as the digest.
        self.ops.append(Op.model_construct(kind="cell", code=code, digest=outcome_digest(reply)))

    def delete(self, names: list[str]) -> None:
        self.ops.append(Op(kind="delete", names=list(names)))

    def snapshot(self, checkpoint: str, connections: bool = False) -> None:
        self.ops.append(Op(kind="snapshot", checkpoint=checkpoint, connections=connections))

    def restore(self, checkpoint: str) -> None:
        self.ops.append(Op(kind="restore", checkpoint=checkpoint))

    @property
    def cells(self) -> int:
        return sum(op.kind == "cell" for op in self.ops)


class ReplayFailed(RuntimeError):
    """The history could not be replayed faithfully; the message says where and why."""


@dataclass
class ReplayPlan:
    """What a replay needs besides the ops: which snapshots to retake, which file to verify against."""

    retake: set[int]  # op indexes of snapshots some later restore uses
    verify_at: int | None  # op index of the last snapshot whose file is still the one it wrote
    external: set[str]  # checkpoints restored without being taken in this history (older files)


def plan(history: History, exists: Callable[[str], bool]) -> ReplayPlan:
    last_taken: dict[str, int] = {}
    retake: set[int] = set()
    external: set[str] = set()
    for i, op in enumerate(history.ops):
        if op.kind == "snapshot":
            last_taken[op.checkpoint] = i
        elif op.kind == "restore":
            if op.checkpoint in last_taken:
                retake.add(last_taken[op.checkpoint])
            elif exists(op.checkpoint):
                external.add(op.checkpoint)
            else:
                raise ReplayFailed(
                    f"checkpoint {op.checkpoint!r}, restored at step {i + 1}, no longer exists"
                )
    alive = [i for c, i in last_taken.items() if exists(c)]
    return ReplayPlan(retake=retake, verify_at=max(alive) if alive else None, external=external)


def replay(
    kernel: KernelProcess,
    history: History,
    *,
    checkpoint_path: Callable[[str], BlobFile],
    exists: Callable[[str], bool],
    private_dir: Path,
    cell_timeout: float,
    admin_timeout: float,
    budget_s: float,
) -> str:
    """Replay `history` into a fresh `kernel`; returns a one-line summary or raises `ReplayFailed`."""
    the_plan = plan(history, exists)
    deadline = time.monotonic() + budget_s
    shutil.rmtree(private_dir, ignore_errors=True)
    private_dir.mkdir(parents=True)
    retaken: dict[str, BlobFile] = {}
    cell_no = 0
    verified = None
    try:
        for i, op in enumerate(history.ops):
            if time.monotonic() > deadline:
                raise ReplayFailed(
                    f"it took longer than replay_seconds={budget_s:g} (stopped at step {i + 1})"
                )
            if op.kind == "cell":
                cell_no += 1
                reply = kernel.request({"op": "run", "code": op.code}, cell_timeout)
                if outcome_digest(reply) != op.digest:
                    got = "ok" if reply.ok else reply.error
                    raise ReplayFailed(
                        f"cell {cell_no} ended differently on replay ({got}; different output or error)"
                    )
            elif op.kind == "delete":
                kernel.request({"op": "delete", "names": op.names}, admin_timeout)
            elif op.kind == "snapshot":
                if i in the_plan.retake:
                    retaken[op.checkpoint] = _retake(kernel, private_dir, op, admin_timeout)
                if i == the_plan.verify_at:
                    reply = kernel.request(
                        {"op": "verify"}, admin_timeout, blob=checkpoint_path(op.checkpoint)
                    )
                    differ = list(reply.differ)
                    if not reply.ok or differ:
                        raise ReplayFailed(
                            f"values differ from checkpoint {op.checkpoint!r}: {', '.join(differ) or reply}"
                        )
                    verified = op.checkpoint
            else:
                source = retaken.get(op.checkpoint) or checkpoint_path(op.checkpoint)
                reply = kernel.request({"op": "restore"}, admin_timeout, blob=source)
                if not reply.ok:
                    raise ReplayFailed(f"restoring {op.checkpoint!r} failed on replay: {reply.error}")
    except KernelDied as exc:
        raise ReplayFailed(f"the kernel died during the replay ({exc})") from None
    except CheckpointRefused as exc:
        raise ReplayFailed(str(exc)) from None
    finally:
        shutil.rmtree(private_dir, ignore_errors=True)
    checked = f"; values match checkpoint {verified!r}" if verified else ""
    return f"rebuilt by replaying {cell_no} cell(s) and {len(history.ops) - cell_no} other step(s): every cell ended as before{checked}"


def _retake(kernel: KernelProcess, private_dir: Path, op: Op, timeout: float) -> BlobFile:
    reply = kernel.request({"op": "snapshot", "connections": op.connections}, timeout, blob_follows=True)
    if not reply.ok:
        raise ReplayFailed(f"snapshot {op.checkpoint!r} failed on replay: {reply.error}")
    path = private_dir / f"{len(list(private_dir.iterdir()))}.pkl"
    with path.open("wb") as out:
        size = kernel.read_blob_into(out, timeout, reply.size)
    return BlobFile(path, size)
