"""`SandboxWorkspace`: a `LiveWorkspace` whose namespace lives in a separate, isolated process.

The parent (this object) keeps the dataflow graph, the checkpoint files, the history of what
changed the namespace and the bookkeeping for recovery; the kernel process (`kernel.py`, inside
the bubblewrap sandbox of `isolation.py` unless `isolation="process"` was chosen) holds the
values and runs cells and probes. Values reach the parent only as JSON (see
`values.to_json_value`); checkpoint bytes are copied to `checkpoint_dir/<id>.pkl` and only ever
unpickled by a kernel. Under bubblewrap the scratch dir is a size-capped tmpfs that is mirrored
to the host scratch dir after every cell (`scratch.Mirror`).

If the kernel dies (segfault, OOM kill, `os._exit`, SIGKILL from inside or outside, a kill by
the parent because a cell ignored its wall limit or broke the protocol), the next or ongoing
call starts a fresh kernel and rebuilds the workspace (`recovery.py`): by replaying the history,
checked cell by cell, or, when that is not possible, by restoring the most recent checkpoint and
adding what was lost to `degraded_reasons`. `run_cell` of the cell that was running returns
ok=False with the cause and notes; other calls record the notes for the next `run_cell` (and in
`restarts`).

No kernel death and no malformed or forged reply raises out of this class: a request that kills
the rebuilt kernel too (a value whose `__repr__` trips the kernel's tripwire every time it is
listed) ends as a degraded answer the caller can use, with the reason in `degraded_reasons`:
`list_variables` names the variables without describing them, `get_value` returns a summary that
says the value was not read, `delete_variables` removes nothing, `run_probe` fails. `snapshot`
and `restore` cannot hand back a degraded checkpoint: they raise their documented refusals
(`RuntimeError`, `CheckpointRefused`), with the workspace already rebuilt.

Not thread-safe by design of the protocol (one request at a time); a lock serializes callers.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import weakref
from pathlib import Path
from typing import Any, Literal

from stateguard.dataflow import DataflowGraph, cell_dataflow
from stateguard.encodable import encodable
from stateguard.sandbox.checkpoints import BlobFile, CheckpointFiles, CheckpointInfo, CheckpointRefused
from stateguard.sandbox.isolation import check_isolation, sandbox_uid
from stateguard.sandbox.limits import SandboxLimits, check_network
from stateguard.sandbox.process import KernelDied, KernelProcess
from stateguard.sandbox.recovery import History, Op, ReplayFailed, replay
from stateguard.sandbox.scratch import Mirror, check_host_scratch
from stateguard.workspace import (
    CellResult,
    ProbeResult,
    ValueSummary,
    VariableSummary,
    cell_names,
    unencodable_code_result,
)

_DEFAULT_LIMITS = SandboxLimits()
ADMIN_TIMEOUT_S = 60.0  # snapshot/restore/list may take longer than a cell limit on large data


def _close_kernel(holder: list[KernelProcess]) -> None:
    for kernel in holder:
        kernel.kill()
        kernel.close()


class SandboxWorkspace:
    """See the module docstring; `runtime_hashing=False` skips the dataflow's value checks (fingerprints
    of variables handed to calls, content equality of rewritten ones; for benchmarks)."""

    def __init__(
        self,
        task_data_dir: Path | None,
        scratch_dir: Path,
        checkpoint_dir: Path,
        limits: SandboxLimits = _DEFAULT_LIMITS,
        *,
        runtime_hashing: bool = True,
    ):
        check_isolation(limits.isolation)  # refuse before creating anything
        check_network(limits)  # (model_copy(update=...) skips the model's own check)
        self.task_data_dir = None if task_data_dir is None else Path(task_data_dir).resolve()
        self.scratch_dir = Path(scratch_dir).resolve()
        self.checkpoint_dir = Path(checkpoint_dir).resolve()
        self.scratch_dir.mkdir(parents=True, exist_ok=True)
        if limits.isolation == "bwrap":
            check_host_scratch(self.scratch_dir, limits.scratch_mb)  # before anything is copied
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        self.limits = limits
        self.runtime_hashing = runtime_hashing
        self.dataflow = DataflowGraph()
        self.restarts: list[str] = []  # one description per kernel death
        self.degraded_reasons: list[str] = []  # what a recovery could not rebuild (empty: healthy)
        self._cells = 0
        self._names: list[str] = []  # user variables after the last call, for loss reports
        self.checkpoints = CheckpointFiles(self.checkpoint_dir)
        self._private = self.checkpoint_dir / ".sandbox"  # not a valid checkpoint id: no clash
        self.history = History()
        self._hashes: dict[str, str] = {}  # variable -> content hash after the cell that last wrote it
        self._pending_notes: list[str] = []
        # Bumped by whatever can change the namespace (a cell, a delete, a restore, a recovery): a
        # listing or value that killed the kernel twice is not asked for again until it moves, so a
        # caller that lists after every step does not rebuild the kernel twice per step.
        self._epoch = 0
        self._unreadable: dict[str, tuple[int, str]] = {}  # "" (the listing) or a name -> (epoch, why)
        self._base_scratch = self._save_base_scratch()
        self.mirror = (
            Mirror(self.scratch_dir, limits.scratch_mb * 1024 * 1024) if limits.isolation == "bwrap" else None
        )
        self._uid = sandbox_uid()  # one per workspace: a replayed cell sees the same uid
        self._lock = threading.RLock()
        self._closed = False
        self._holder: list[KernelProcess] = [self._start()]
        self._finalizer = weakref.finalize(self, _close_kernel, self._holder)
        self._pending_notes += self.kernel.start_notes

    @property
    def isolation(self) -> Literal["bwrap", "process"]:
        return self.limits.isolation

    # --- process ----------------------------------------------------------------------------
    def _start(self, *, seed: Path | None | Literal["host"] = "host") -> KernelProcess:
        """A new kernel; its scratch starts as the host scratch dir (`"host"`), a copy, or empty (None)."""
        return KernelProcess(
            scratch_dir=self.scratch_dir,
            task_data_dir=self.task_data_dir,
            limits=self.limits,
            log_path=self.checkpoint_dir / "kernel.stderr.log",
            private_dir=self._private,
            seed_dir=self.scratch_dir if seed == "host" else seed,
            uid=self._uid,
        )

    def _save_base_scratch(self) -> Path | None:
        """A copy of the scratch dir as it is now, where a replay starts from (None: it is empty).
        Only what a sandbox scratch can hold is copied (directories, regular files, links as
        links): a FIFO, socket or device planted in the host dir, which the mirror leaves in place
        while the kernel is dead, is left out and named in a note instead of failing the recovery."""
        base = self._private / "base-scratch"
        shutil.rmtree(base, ignore_errors=True)
        if not any(self.scratch_dir.iterdir()):
            return None
        left_out: list[str] = []

        def special(directory: str, names: list[str]) -> set[str]:
            skip = set()
            for name in names:
                try:
                    mode = os.lstat(os.path.join(directory, name)).st_mode
                except OSError:
                    mode = 0  # gone meanwhile: nothing to copy
                if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                    skip.add(name)
                    left_out.append(os.path.relpath(os.path.join(directory, name), self.scratch_dir))
            return skip

        try:
            shutil.copytree(self.scratch_dir, base, symlinks=True, ignore=special)
        except OSError as exc:  # shutil.Error included: files that changed while they were copied
            self._pending_notes.append(f"scratch: the copy a replay starts from is incomplete ({exc})"[:500])
        if left_out:
            self._pending_notes.append(
                "scratch: not a regular file or directory, left out of the copy a replay starts from: "
                + ", ".join(sorted(left_out)[:10])
            )
        return base

    def _sync_scratch(self) -> list[str]:
        """Bubblewrap: mirror the sandbox's scratch tmpfs to the host scratch dir."""
        kernel = self._holder[0]
        if self.mirror is None or not kernel.alive():
            return []  # after a death: what the dying cell wrote is not copied out
        try:
            fd = kernel.scratch_fd()
            skipped = self.mirror.sync(fd) if fd is not None else []
        except OSError as exc:  # the sandbox went away before we got in
            return [f"the scratch dir could not be copied out of the sandbox ({exc.strerror or exc})"]
        shown = [f"scratch: {s}" for s in skipped[:10]]
        if len(skipped) > 10:
            shown.append(f"scratch: {len(skipped) - 10} more problem(s) not shown")
        return shown

    @property
    def kernel(self) -> KernelProcess:
        if self._closed:
            raise RuntimeError("the sandbox workspace is closed")
        return self._holder[0]

    @property
    def pid(self) -> int:
        return self.kernel.pid

    def _cell_timeout(self) -> float:
        return self.limits.wall_seconds_per_cell + self.limits.grace_seconds

    def _admin_timeout(self) -> float:
        return max(ADMIN_TIMEOUT_S, self._cell_timeout())

    def _call(
        self,
        message: dict[str, Any],
        timeout: float,
        *,
        blob: BlobFile | None = None,
        blob_follows: bool = False,
        retry: bool = True,
    ) -> Any:
        """One request; a dead kernel is replaced first, and a death during the call (a malformed reply
        included) is recovered and the request asked once more of the rebuilt kernel: these requests
        read or change nothing a replay has not already rebuilt. A second failure is raised."""
        if not self.kernel.alive():
            self._pending_notes += self._recover(self.kernel.describe_exit(), lost_upto=self._cells)
        try:
            return self.kernel.request(message, timeout, blob=blob, blob_follows=blob_follows)
        except KernelDied as exc:
            self._pending_notes += self._recover(str(exc), lost_upto=self._cells)
            if not retry:
                raise
        try:
            return self.kernel.request(message, timeout, blob=blob, blob_follows=blob_follows)
        except KernelDied as exc:
            self._pending_notes += self._recover(str(exc), lost_upto=self._cells)
            raise

    def _ask(self, message: dict[str, Any], what: str) -> tuple[Any, str]:
        """`_call` for the requests that answer with data (a listing, a value, a delete): (reply, "")
        or, when the kernel died on the request twice, (None, why), the workspace rebuilt and the
        failure added to `degraded_reasons` (the caller answers with what it knows)."""
        try:
            return self._call(message, self._admin_timeout()), ""
        except KernelDied as exc:
            why = f"the kernel died on it twice, the second time: {exc}"[:600]
            self.degraded_reasons.append(f"workspace: {what} failed: {why}")
            self._pending_notes.append(f"{what} failed: {why}")
            return None, why

    def _record_hashes(self, names: list[str], written: dict[str, str]) -> None:
        """The hashes a replay must reproduce: kept per variable, dropped when it goes."""
        alive = set(names)
        self._hashes = {n: h for n, h in self._hashes.items() if n in alive}
        self._hashes.update({n: h for n, h in written.items() if n in alive})

    # --- recovery ---------------------------------------------------------------------------
    def _recover(self, cause: str, *, lost_upto: int) -> list[str]:
        """Replace the dead kernel and rebuild the workspace: replay, else the last checkpoint."""
        self.restarts.append(cause)
        self._epoch += 1
        notes = [f"{cause}; a fresh sandbox process was started"]
        if self.kernel.tampered is not None:
            # Whatever ran changed how the kernel answers: its request is not replayed (that would
            # redo the change) and the run says so, even if the rest is rebuilt faithfully.
            self.degraded_reasons.append(
                f"workspace: kernel_tampered: {self.kernel.tampered}; the request that did it failed "
                "and is not replayed"
            )
        rebuilt, how = self._replay()
        if rebuilt:
            self._sync_scratch()
            return notes + [f"the workspace was {how}"]
        notes.append(how)
        return notes + self._restore_last_checkpoint(cause, lost_upto=lost_upto, why=how)

    def _replay(self) -> tuple[bool, str]:
        """Rebuild by replaying the history in a kernel started from the base scratch: (True, summary),
        or (False, why not) with a fresh kernel on the host scratch in place."""
        if not self.limits.replay:
            self._replace_kernel()
            return False, "replay not possible: it is switched off (SandboxLimits.replay=False)"
        aside = self.scratch_dir.with_name(self.scratch_dir.name + ".before-replay")
        if self.mirror is None:  # process isolation: the kernel writes the host dir itself
            shutil.rmtree(aside, ignore_errors=True)
            self.scratch_dir.rename(aside)
            _copy_or_make(self._base_scratch, self.scratch_dir)
        try:
            self._replace_kernel(seed=self._base_scratch)
            summary = replay(
                self.kernel,
                self.history,
                checkpoint_path=self.checkpoints.verified,
                exists=self.checkpoints.exists,
                private_dir=self._private / "replay",
                cell_timeout=self._cell_timeout(),
                admin_timeout=self._admin_timeout(),
                budget_s=self.limits.replay_seconds,
            )
            listing = self.kernel.request({"op": "delete", "names": []}, self._admin_timeout())
            self._names = list(listing.names)
            summary += self._check_replayed_hashes()
        except (ReplayFailed, KernelDied, OSError) as exc:
            if self.mirror is None:
                shutil.rmtree(self.scratch_dir, ignore_errors=True)
                aside.rename(self.scratch_dir)
            self._replace_kernel()
            return False, f"replay not possible: {exc}"
        if self.mirror is None:
            shutil.rmtree(aside, ignore_errors=True)
        return True, summary

    def _check_replayed_hashes(self) -> str:
        """The replayed values must hash as they did before the kernel died (a cell that printed
        nothing but drew a random number ends "as before" and still differs); raises ReplayFailed
        naming the variables that changed or are missing."""
        if not self._hashes:
            return ""
        listing = self.kernel.request({"op": "list"}, self._admin_timeout())
        now = {v.name: v.content_hash for v in listing.variables}
        changed = sorted(n for n, h in self._hashes.items() if now.get(n) != h)
        if changed:
            raise ReplayFailed(
                f"the replayed values differ from those before the kernel died: {', '.join(changed[:20])}"
            )
        return f"; {len(self._hashes)} variable(s) hash as before the kernel died"

    def _restore_last_checkpoint(self, cause: str, *, lost_upto: int, why: str) -> list[str]:
        """The fallback: the most recent checkpoint, and an exact account of what that loses."""
        before = set(self._names)
        notes: list[str] = []
        lost_effects = ""
        checkpoint = self.checkpoints.for_recovery()
        self._names = []
        load_notes: list[str] = []
        if checkpoint is None:
            notes.append("no checkpoint to restore: the workspace is empty and every earlier cell is lost")
            lost_effects = f"cells 1..{lost_upto}" if lost_upto else ""
        else:
            try:
                load_notes = self._load(checkpoint)
            except RuntimeError as exc:  # KernelDied included
                # The checkpoint itself does not load: start empty rather than loop on it.
                if not self.kernel.alive():
                    self._replace_kernel()
                notes.append(f"restoring checkpoint {checkpoint!r} failed ({exc}); the workspace is empty")
                lost_effects = f"cells 1..{lost_upto}" if lost_upto else ""
                checkpoint = None
        if checkpoint is not None:
            info = self.checkpoints.info(checkpoint)
            since = info.after_cell if info is not None else 0
            if lost_upto > since:
                reverted = sorted(
                    {w for cell, _, writes in self.dataflow.history() if cell > since for w in writes}
                    & set(self._names)
                )
                lost_effects = f"cells {since + 1}..{lost_upto}"
                notes.append(
                    f"restored checkpoint {checkpoint!r}; the effects of cells {since + 1}..{lost_upto} (everything "
                    "since that checkpoint) are lost"
                    + (f"; back at their checkpoint values: {', '.join(reverted)}" if reverted else "")
                )
            else:
                notes.append(f"restored checkpoint {checkpoint!r}")
        notes += load_notes
        lost = sorted(before - set(self._names))
        if lost:
            notes.append(f"lost (not in the checkpoint): {', '.join(lost)}")
            self.dataflow.forget(lost)
        if lost or lost_effects:
            what = "; ".join(
                x
                for x in (
                    f"lost variables: {', '.join(lost)}" if lost else "",
                    f"lost effects of {lost_effects}" if lost_effects else "",
                )
                if x
            )
            self.degraded_reasons.append(f"workspace: {cause}; {why}; {what}")
        # From here the state is "that checkpoint restored into an empty kernel": replay from there.
        self.history = History([Op(kind="restore", checkpoint=checkpoint)] if checkpoint else [])
        self._base_scratch = self._save_base_scratch()
        return notes

    def _replace_kernel(self, *, seed: Path | None | Literal["host"] = "host") -> None:
        old = self._holder[0]
        old.kill()
        old.close()
        self._holder[0] = self._start(seed=seed)
        self._pending_notes += self._holder[0].start_notes

    def _load(self, checkpoint_id: str) -> list[str]:
        blob = self.checkpoints.verified(checkpoint_id)  # CheckpointRefused: swapped, renamed, altered
        reply = self.kernel.request({"op": "restore"}, self._admin_timeout(), blob=blob)
        if not reply.ok:
            raise RuntimeError(f"restoring checkpoint {checkpoint_id!r} failed in the sandbox: {reply.error}")
        self._names = list(reply.names)
        self._hashes = {}  # the checkpoint's values: a replay restores the same verified file
        self.checkpoints.current = checkpoint_id
        notes = list(reply.failed.values())
        info = self.checkpoints.info(checkpoint_id)
        if info is not None and info.skipped:
            notes.append(
                f"not in checkpoint {checkpoint_id!r} (could not be pickled; kept live where they still exist, "
                f"not rolled back): {', '.join(sorted(info.skipped))}"
            )
        return notes

    # --- cells ------------------------------------------------------------------------------
    def run_cell(self, code: str) -> CellResult:
        with self._lock:
            self._cells += 1
            self._epoch += 1
            cell_id = self._cells
            if not encodable(code):
                return unencodable_code_result(cell_id, code)
            notes, self._pending_notes = self._pending_notes, []
            # Should the kernel die, the cell's text is all there is: its names, checked before it ran.
            static = cell_dataflow(code)
            stale = {r: self.dataflow.stale_reasons(r) for r in static.reads if self.dataflow.is_stale(r)}
            base = {"cell_id": cell_id, "reads": static.reads, "stale_reads": stale}
            if not self.kernel.alive():  # died between calls: run on rebuilt state only, else report
                cause = self.kernel.describe_exit()
                degraded = len(self.degraded_reasons)
                notes += self._recover(cause, lost_upto=cell_id - 1)
                notes, self._pending_notes = notes + self._pending_notes, []  # what the rebuild noted
                if len(self.degraded_reasons) > degraded:
                    return CellResult(**base, ok=False, error=f"SandboxDied: {cause}", notes=notes)
            request = {
                "op": "run",
                "code": code,
                "check_values": self.runtime_hashing,
                "hashes": self.limits.replay,
                "reap": self.kernel.reap,
            }
            self.kernel.reap = False
            try:
                reply = self.kernel.request(request, self._cell_timeout())
            except KernelDied as exc:  # a malformed reply included: the kernel was killed for it
                cause = str(exc)
                notes += self._recover(cause, lost_upto=cell_id)
                notes, self._pending_notes = notes + self._pending_notes, []  # what the rebuild noted
                return CellResult(**base, ok=False, error=f"SandboxDied: {cause}", notes=notes)
            self._names = reply.names
            self._record_hashes(reply.names, reply.hashes)
            self.history.cell(code, reply)
            self.kernel.probe_child = reply.probe_child
            notes += self.kernel.end_cell() + self._sync_scratch() + _thread_notes(reply.threads)
            stale = self.dataflow.apply(cell_id, reply.flow)
            reads, writes = cell_names(code, reply.flow)
            cap = self.limits.max_output_chars + 200
            return CellResult(
                cell_id=cell_id,
                ok=reply.ok,
                stdout=reply.stdout[:cap],
                stderr=reply.stderr[:cap],
                value=reply.value,
                error=reply.error,
                traceback=reply.traceback,
                wall_s=reply.wall_s,
                reads=reads,
                writes=writes,
                stale_reads=stale,
                notes=notes,
            )

    def _known_unreadable(self, key: str) -> str | None:
        marked = self._unreadable.get(key)
        return marked[1] if marked is not None and marked[0] == self._epoch else None

    def _mark_unreadable(self, key: str, why: str) -> None:
        self._unreadable = {k: v for k, v in self._unreadable.items() if v[0] == self._epoch}
        self._unreadable[key] = (self._epoch, why)

    def get_value(self, name: str) -> Any:
        """The value as JSON: plain data as-is, numpy scalars as numbers, anything else a summary dict
        (`ValueSummary`; type "unknown" and the reason in its head when the kernel could not read it)."""
        with self._lock:
            why = self._known_unreadable(name)
            if why is None:
                reply, why = self._ask({"op": "get", "name": name}, f"reading {name!r}")
                if reply is not None:
                    if reply.missing:
                        raise KeyError(name)
                    return reply.value
                self._mark_unreadable(name, why)
            return ValueSummary(type="unknown", head=f"not read: {why}").as_value()

    def list_variables(self) -> list[VariableSummary]:
        """One summary per variable; when the kernel dies on the listing twice, the variables the
        rebuilt kernel holds, each of type "unknown" with the reason as its head (not described)."""
        with self._lock:
            why = self._known_unreadable("")
            if why is None:
                reply, why = self._ask({"op": "list"}, "listing the variables")
                if reply is not None:
                    return list(reply.variables)
                self._mark_unreadable("", why)
            return [
                VariableSummary(name=n, type="unknown", head=f"not described: {why}") for n in self._names
            ]

    def delete_variables(self, names: list[str]) -> list[str]:
        """The names removed; none when the kernel died on the delete twice (the rebuilt workspace
        still holds them, and `degraded_reasons` says so)."""
        with self._lock:
            reply, _ = self._ask({"op": "delete", "names": list(names)}, f"deleting {', '.join(names)[:200]}")
            if reply is None:
                return []
            self._epoch += 1
            removed = [n for n in reply.removed if n in names]
            self._names = list(reply.names)
            self._record_hashes(self._names, {})
            self.history.delete(list(names))
            self.dataflow.forget(removed)
            return removed

    def run_probe(self, code: str) -> ProbeResult:
        """Run code in a forked copy of the kernel: reads everything, changes nothing, same limits."""
        with self._lock:
            try:
                reply = self._call({"op": "probe", "code": code}, self._cell_timeout(), retry=False)
            except KernelDied as exc:
                return ProbeResult(ok=False, error=f"SandboxDied: {exc}")
            cap = self.limits.max_output_chars + 200
            return ProbeResult(ok=reply.ok, stdout=reply.stdout[:cap], value=reply.value, error=reply.error)

    # --- checkpoints ------------------------------------------------------------------------
    def snapshot(self, checkpoint_id: str, *, copy_connections: bool = False) -> None:
        """Write the namespace to checkpoint_dir/<id>.pkl (large arrays unchanged since an earlier
        checkpoint are not written again: `checkpoints.py`, parts); unpicklable names are listed in
        `checkpoint_info`. With `copy_connections` a DuckDB connection is kept as a copy of its
        tables and views where that copy rebuilds it exactly (`duckdb_copy.py`); it costs a read
        of every table, so the harness's per-state checkpoints do without."""
        with self._lock:
            self.checkpoints.path(checkpoint_id)  # validate the id before asking the kernel
            try:
                reply = self._call(
                    {
                        "op": "snapshot",
                        "parts": self.checkpoints.held_parts(),
                        "connections": copy_connections,
                    },
                    self._admin_timeout(),
                    blob_follows=True,
                )
            except KernelDied as exc:  # twice: the workspace is rebuilt, the checkpoint not taken
                raise RuntimeError(f"snapshot {checkpoint_id!r} failed: {exc}") from None
            if not reply.ok:
                raise RuntimeError(f"snapshot {checkpoint_id!r} failed in the sandbox: {reply.error}")
            timeout = self._admin_timeout()
            try:
                size = self.checkpoints.receive(
                    checkpoint_id,
                    lambda out: self.kernel.read_blob_into(out, timeout, reply.size, last=not reply.parts),
                    new_parts=reply.parts,
                    refs=reply.refs,
                    read_part_into=lambda out, n, last: self.kernel.read_blob_into(
                        out, timeout, n, last=last
                    ),
                )
            except (KernelDied, CheckpointRefused) as exc:
                # CheckpointRefused: parts not as sent and held, which only a damaged kernel says.
                self.kernel.kill()
                self._pending_notes += self._recover(str(exc), lost_upto=self._cells)
                raise RuntimeError(f"snapshot {checkpoint_id!r} failed: {exc}") from None
            self.checkpoints.record(
                CheckpointInfo(
                    checkpoint_id=checkpoint_id,
                    saved=reply.saved,
                    skipped=reply.skipped,
                    size_bytes=size,
                    after_cell=self._cells,
                )
            )
            self.history.snapshot(checkpoint_id, copy_connections)
            if reply.skipped:
                self._pending_notes.append(
                    f"checkpoint {checkpoint_id!r} cannot keep (not restorable): "
                    + "; ".join(f"{k}: {v}" for k, v in sorted(reply.skipped.items()))
                )

    def checkpoint_info(self, checkpoint_id: str) -> CheckpointInfo | None:
        return self.checkpoints.info(checkpoint_id)

    def restore(self, checkpoint_id: str) -> None:
        with self._lock:
            if not self.has_checkpoint(checkpoint_id):
                raise KeyError(f"no workspace checkpoint {checkpoint_id!r}")
            if not self.kernel.alive():
                self._pending_notes += self._recover(self.kernel.describe_exit(), lost_upto=self._cells)
            self._epoch += 1
            try:
                self._pending_notes += self._load(checkpoint_id)
                self.history.restore(checkpoint_id)
            except KernelDied as exc:  # loading it killed the kernel (a value whose unpickling trips it)
                self._pending_notes += self._recover(str(exc), lost_upto=self._cells)
                raise CheckpointRefused(
                    f"checkpoint {checkpoint_id!r} could not be loaded, the workspace was rebuilt without it: {exc}"
                ) from None

    def drop_checkpoint(self, checkpoint_id: str) -> None:
        with self._lock:
            self.checkpoints.drop(checkpoint_id)

    def has_checkpoint(self, checkpoint_id: str) -> bool:
        return self.checkpoints.exists(checkpoint_id)

    # --- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        """End the kernel process. Checkpoint files stay in checkpoint_dir (a later workspace can restore them)."""
        with self._lock:
            if not self._closed:
                self._sync_scratch()  # what the last cells wrote, before the tmpfs goes
                self._finalizer()
                self._closed = True

    def __enter__(self) -> SandboxWorkspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _thread_notes(threads: dict[str, list[str]]) -> list[str]:
    notes = []
    if threads.get("stopped"):
        notes.append(
            f"sandbox: stopped background thread(s) still running when the cell ended: {', '.join(threads['stopped'])}"
        )
    if threads.get("running"):
        notes.append(
            f"sandbox: background thread(s) could not be stopped and keep running between cells (they may change "
            f"values outside any cell; the kernel tries again after every cell): {', '.join(threads['running'])}"
        )
    return notes


def _copy_or_make(source: Path | None, target: Path) -> None:
    if source is None:
        target.mkdir(parents=True)
    else:
        shutil.copytree(source, target, symlinks=True)
