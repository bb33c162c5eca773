"""The sandbox kernel: one persistent child process that holds a workspace namespace.

Started by `SandboxWorkspace` as `python -m stateguard.sandbox.kernel CMD_FD` (inside the
bubblewrap sandbox of `isolation.py`, or as a plain child with isolation="process"), with
cwd = scratch dir and a minimal environment. Like a notebook kernel it answers requests one at
a time: run a cell, read/list/delete variables, dump or load a checkpoint, run a probe in a
fork (`probe_fork.py`). Requests arrive on a socket, each with its own reply pipe (`protocol.py`), so a cell's
prints cannot corrupt them and stray writes cannot reach a later reply. A cell that rewrites
this module's objects (or the other code that answers) trips `tripwire.py`, checked in the request
loop before every reply: the kernel reports `kernel_tampered` and exits (docs/design_sandbox.md,
"Who answers the parent", lists what the check does not see).

Start-up order matters: pandas/numpy/cloudpickle are imported (by the modules below) BEFORE the
memory cap and the audit hook, so that their import-time file use is not refused. Every fd the
kernel did not ask for is closed first, and the kernel shuts down its sending side of the
request socket, so nothing in it can talk to the parent except through a reply pipe.
"""

from __future__ import annotations

import builtins
import contextlib
import linecache
import os
import signal
import socket
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

from stateguard.dataflow import CellRecorder
from stateguard.sandbox import policy, tripwire
from stateguard.sandbox.guards import (
    BoundedText,
    CellTimers,
    Redirected,
    ThreadSweep,
    apply_process_limits,
)
from stateguard.sandbox.probe_fork import ProbeForks
from stateguard.sandbox.protocol import (
    ChannelClosed,
    FrameReader,
    receive_reply_channel,
    send_blob,
    send_message,
    write_all,
)
from stateguard.sandbox.scratch import seed
from stateguard.sandbox.snapshot import differing_names, dump_namespace, load_namespace
from stateguard.sandbox.values import content_hash, to_json_value
from stateguard.workspace import SummaryCache, VariableSummary, _value_repr

_THIS_FILE = __file__
# Bound before any cell: a cell that replaces os.fork must not make the kernel report a process of
# its own as the waiting probe child (the tripwire watches these names).
_fork, _kill = os.fork, os.kill
_MISSING = object()
MIB = 1024 * 1024
_BLOB = "\0blob"  # a snapshot reply's payload and parts, sent by the loop as blob frames after the reply


def _user_traceback(exc: BaseException) -> str:
    """The traceback from the cell's first frame on: the kernel's own frames are noise."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _THIS_FILE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb, limit=8))


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


class Kernel:
    def __init__(self, config: dict[str, Any], sock: socket.socket, reader: FrameReader):
        self.sock = sock
        self.reader = reader
        self.reply_fd = -1  # the current request's reply pipe
        self.nonce: Any = None  # the current request's nonce, echoed in its reply
        self._listing: list[dict[str, Any]] | None = None
        self._watch: Any = None  # (check, record) of the tripwire, set when the loop starts
        # A variable's summary is recomputed only when its value may have changed (SummaryCache);
        # the JSON-ready dict of each reused summary is kept beside it.
        self._summaries = SummaryCache()
        self._dumped: dict[str, tuple[VariableSummary, dict[str, Any]]] = {}
        self._unpicklable: list[str] = []  # what the last checkpoint skipped, tested first by the next
        limits = config["limits"]
        self.max_output = int(limits["max_output_chars"])
        self.grace = float(limits["grace_seconds"])
        self.memory_mb = int(limits["memory_mb"])
        self.checkpoint_mb = int(limits["checkpoint_mb"])
        # Probe children: forked on a probe's path, or in advance when the kernel is idle (probe_fork.py).
        self.probes = ProbeForks(self, limits.get("probe_prefork", "off"))
        self.namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        self.flow = CellRecorder()  # statement-level dataflow, the same code as DictWorkspace's
        self.flow.attach(self.namespace)
        isolated = config.get("isolation") == "bwrap"
        self.notes = (
            seed(Path(config["seed_dir"]), Path(config["scratch_dir"])) if config.get("seed_dir") else []
        )
        os.chdir(config["scratch_dir"])
        apply_process_limits(
            int(limits["memory_mb"]),
            int(limits["max_processes"]) if isolated else None,
            int(limits["scratch_mb"]) if isolated else None,
        )
        self.timers = CellTimers(
            float(limits["cpu_seconds_per_cell"]), float(limits["wall_seconds_per_cell"])
        )
        self.threads = ThreadSweep()
        task = config.get("task_data_dir")
        rules = policy.build_policy(
            Path(config["scratch_dir"]),
            Path(task) if task else None,
            bool(limits["network"]),
            isolated=isolated,
        )
        trusted = [Kernel._fork_probe.__code__, Kernel._kill_probe.__code__]
        self._enter_probe_mode = policy.install(rules, trusted)
        # Cells import the modules they wrote, as in a notebook; only now, after the kernel's own
        # imports (PYTHONSAFEPATH kept the scratch dir off sys.path until here).
        sys.path.insert(0, str(config["scratch_dir"]))

    # --- loop -------------------------------------------------------------------------------
    def serve(self) -> None:
        handlers = {
            "run": self.run,
            "get": self.get,
            "list": self.list_variables,
            "delete": self.delete,
            "snapshot": self.snapshot,
            "restore": self.restore,
            "probe": self.probe,
            "verify": self.verify,
        }
        # The tripwire's record and its check are locals of this frame, taken before any cell runs:
        # a cell that rewrites the kernel's objects cannot replace a check already running here.
        watch = tripwire.arm(
            self,
            handlers,
            (send_message, send_blob, write_all, Kernel.serve, ProbeForks._answer, ProbeForks._wait),
        )
        check, report, exit_now = tripwire.verify, tripwire.report, os._exit
        check_code = tripwire.code_pointer(check)  # the check's own code, compared before it runs
        check_code_at_start = check_code.value
        self._watch = (check, watch)  # the probes' children check with the same record
        probes = self.probes
        while True:
            try:
                self.reply_fd = receive_reply_channel(self.sock)
                request = self.reader.read_message()
            except ChannelClosed:
                return  # the parent closed the workspace (or died)
            self.nonce = request.get("nonce")
            handler = handlers.get(str(request.get("op")))
            reply_fd, nonce = self.reply_fd, self.nonce
            try:
                try:
                    reply = (
                        handler(request)
                        if handler
                        else {"ok": False, "error": f"unknown op {request.get('op')!r}"}
                    )
                except Exception as exc:  # a kernel-side failure (e.g. MemoryError while pickling) is a reply
                    reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "kernel_error": True}
                # Before any reply: did the request's code (a cell, a repr, an unpickled value) rewrite
                # what answers? Then no reply of this kernel can be believed: report it and stop.
                tampered = (
                    check(watch)
                    if check_code.value == check_code_at_start
                    else "the tripwire's check was replaced"
                )
                if tampered is not None:
                    report(reply_fd, nonce, tampered)
                    exit_now(tripwire.EXIT_TAMPERED)
                blobs: Any = reply.pop(_BLOB, ())
                send_message(reply_fd, {**reply, "nonce": nonce})
                for blob in blobs:
                    send_blob(reply_fd, blob)
            finally:
                # End of reply: the parent now expects end-of-file. (If the cell closed the fd itself,
                # the parent has seen a short or missing reply.)
                with contextlib.suppress(OSError):
                    os.close(reply_fd)
            probes.reap()  # between requests: the probe children that answered finish exiting

    def _names(self) -> list[str]:
        return sorted(k for k in self.namespace if not k.startswith("__"))

    # --- cells ------------------------------------------------------------------------------
    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        self._listing = None  # the cell may change any value
        self.probes.changed()  # so no probe runs in a copy of the namespace from before it
        if request.get("reap"):
            _reap()  # children the parent killed after the last cell must not hold process slots
        code = str(request["code"])
        self.flow.check_values = bool(request.get("check_values", True))
        out, err = BoundedText(self.max_output), BoundedText(self.max_output)
        value = error = tb = None
        # Tracebacks show the cell's lines: linecache serves "<cell>" from here.
        linecache.cache["<cell>"] = (len(code), None, code.splitlines(keepends=True), "<cell>")
        start = time.perf_counter()
        failed = True
        try:
            with Redirected(out, err), self.timers.armed("cell"):
                prepared = self.flow.start(code, self.namespace)
                exec(prepared.body, self.namespace)
                if prepared.last is not None:
                    result = eval(prepared.last, self.namespace)
                    value = None if result is None else _value_repr(result, min(2000, self.max_output))
            failed = False
        except BaseException as exc:  # SystemExit/KeyboardInterrupt end the cell, not the kernel
            error, tb = f"{type(exc).__name__}: {exc}", _user_traceback(exc)
            if isinstance(exc, MemoryError):
                error += (
                    f" (sandbox: the process is capped at memory_mb={self.memory_mb} MiB of address space)"
                )
        wall = time.perf_counter() - start
        threads = (
            self.threads.sweep()
        )  # before the dataflow's fingerprints: a stopped thread changes nothing after them
        facts = self.flow.finish(failed=failed)
        self._summaries.prune(self.namespace)  # no value the cell let go is kept alive by the cache
        hashes = self._hashes(facts.roots_written()) if request.get("hashes") else {}
        return {
            "probe_child": self.probes.ready(),
            "hashes": hashes,
            "ok": error is None,
            "stdout": out.getvalue(),
            "stderr": err.getvalue(),
            "value": value,
            "error": error,
            "traceback": tb,
            "wall_s": wall,
            "flow": facts.model_dump(mode="json"),
            "names": self._names(),
            "threads": threads,
        }

    def _hashes(self, names: list[str]) -> dict[str, str]:
        """Content hashes of the data values a cell wrote, which the parent keeps to check a replay
        (functions, classes and modules are left out: their pickles differ between processes).
        The listing cache keeps them for the listing that usually follows."""
        values = ((n, self.namespace.get(n, _MISSING)) for n in names)
        kept = [
            (n, v)
            for n, v in values
            if v is not _MISSING and not isinstance(v, types.ModuleType | type) and not callable(v)
        ]
        return {n: h for n, h in self._summaries.hashes(kept).items() if h}

    def get(self, request: dict[str, Any]) -> dict[str, Any]:
        name = str(request["name"])
        if name not in self.namespace:
            return {"ok": False, "missing": True, "error": f"KeyError: {name!r}"}
        value = self.namespace[name]
        # A frame the last listing hashed is not hashed again (a 336k-row frame: tens of ms).
        return {"ok": True, "value": to_json_value(value, lambda: self._summaries.known_hash(name, value))}

    def list_variables(self, request: dict[str, Any]) -> dict[str, Any]:
        # The whole listing is kept until the namespace may change; after a change only the values
        # that may differ are described again (hashing and printing a frame costs milliseconds).
        listing = self._listing
        if listing is None:
            summaries = self._summaries.listing((k, self.namespace[k]) for k in self._names())
            dumped = {}
            for summary in summaries:
                known = self._dumped.get(summary.name)
                dumped[summary.name] = (
                    known if known is not None and known[0] is summary else (summary, summary.model_dump())
                )
            self._dumped = dumped
            listing = self._listing = [entry for _, entry in dumped.values()]
        return {"ok": True, "variables": listing}

    def delete(self, request: dict[str, Any]) -> dict[str, Any]:
        self._listing = None
        self.probes.changed()
        removed = [n for n in request["names"] if isinstance(n, str) and n in self.namespace]
        for name in removed:
            del self.namespace[name]
        self._summaries.forget(removed)
        self.probes.ready()
        return {"ok": True, "removed": removed, "names": self._names()}

    # --- checkpoints ------------------------------------------------------------------------
    def snapshot(self, request: dict[str, Any]) -> dict[str, Any]:
        # "parts" (key -> size, what the parent holds): large arrays travel as parts (parts.py), each
        # sent once per rollout; without it (a replay's retaken snapshot) one self-contained payload.
        held = request.get("parts")
        held = (
            {str(k): int(v) for k, v in held.items() if isinstance(v, int)}
            if isinstance(held, dict)
            else None
        )
        copy = bool(request.get("connections"))
        payload, saved, skipped, parts = dump_namespace(
            self.namespace, held, self._unpicklable, copy_connections=copy
        )
        # in place: the tripwire watches what the attributes are; a copied connection stays a
        # suspect for the next checkpoint, which may not copy it
        self._unpicklable[:] = sorted(set(skipped) | set(self._unpicklable)) if copy else skipped
        total = payload.nbytes + (sum(parts.refs.values()) if parts is not None else 0)
        if total > self.checkpoint_mb * MIB:
            return {
                "ok": False,
                "error": f"the checkpoint would be {total / MIB:.0f} MiB, over checkpoint_mb="
                f"{self.checkpoint_mb} (delete large variables first, or raise the limit)",
            }
        new = parts.sent() if parts is not None else []
        # The blobs (the payload, then each new part) are sent by the request loop, after the
        # tripwire's check (pickling runs the values' own __reduce__ code).
        return {
            "ok": True,
            "saved": saved,
            "skipped": skipped,
            "size": payload.nbytes,
            "parts": [[key, len(data)] for key, data in new],
            "refs": sorted(parts.refs) if parts is not None else [],
            _BLOB: [payload, *(data for _, data in new)],
        }

    def _read_checkpoint(self, request: dict[str, Any]) -> tuple[bytearray, dict[str, bytearray]]:
        """A checkpoint's blobs: its payload, then one per part key the request names (all of them
        read, even if loading will fail)."""
        payload = self.reader.read_blob()
        keys = request.get("parts") or []
        return payload, {str(key): self.reader.read_blob() for key in keys}

    def restore(self, request: dict[str, Any]) -> dict[str, Any]:
        self._listing = None
        self.probes.changed()
        payload, parts = self._read_checkpoint(request)  # always consume the blobs, even if loading fails
        self.namespace, failed = load_namespace(payload, self.namespace, parts)
        self._summaries.clear()  # every value is a new object
        self.flow.attach(self.namespace)
        self.probes.ready()
        return {"ok": True, "names": self._names(), "failed": failed}

    def verify(self, request: dict[str, Any]) -> dict[str, Any]:
        """Which values differ from a checkpoint's (the parent checks a replay with this)."""
        payload, parts = self._read_checkpoint(request)
        return {"ok": True, "differ": differing_names(payload, self.namespace, content_hash, parts)}

    # --- probes -----------------------------------------------------------------------------
    def _fork_probe(self) -> int:
        return _fork()  # allowed by the audit hook only from this code object

    def _kill_probe(self, pid: int) -> None:
        _kill(pid, signal.SIGKILL)

    def probe(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run code in a copy-on-write fork: it sees every value and can change none of them."""
        return self.probes.run(str(request["code"]), self.nonce)


def main(argv: list[str]) -> None:
    cmd_fd = int(argv[1])
    # Nothing inherited by accident (bwrap's info and seccomp fds, a parent's stray fds) stays open.
    os.closerange(3, cmd_fd)
    os.closerange(cmd_fd + 1, 1 << 16)
    sock = socket.socket(fileno=cmd_fd)
    sock.shutdown(socket.SHUT_WR)  # requests only: nothing here can write to the parent on this socket
    reader = FrameReader(cmd_fd)
    reply_fd = receive_reply_channel(sock)
    config = reader.read_message()
    kernel = Kernel(config, sock, reader)
    send_message(
        reply_fd,
        {"ok": True, "ready": True, "pid": os.getpid(), "notes": kernel.notes, "nonce": config.get("nonce")},
    )
    os.close(reply_fd)
    kernel.serve()


if __name__ == "__main__":
    main(sys.argv)
