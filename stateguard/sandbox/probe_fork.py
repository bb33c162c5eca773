"""The kernel's probe children: each probe runs in a copy-on-write fork of the kernel.

Used by `kernel.py` for its `probe` request. A probe's child sees every value of the namespace and
can change none of the kernel's: it closes the kernel's channels (the request socket and the reply
pipe of the request it was forked in), enters the audit hook's probe mode (every
write refused), arms the probe's CPU and wall timers, runs the code, checks the tripwire on itself,
and writes its result to a pipe that it then closes. The kernel answers on that end-of-file, kills
a child that passes the probe's wall limit, and reaps the children that answered once the reply is
sent, so their exit (the unmapping of a copy of the whole kernel) is off the request's path.

The fork is much of the probe's cost (the copy of the kernel's page tables; the rest is the child's
copy-on-write faults as the code runs: docs/results/performance.md). `SandboxLimits.probe_prefork`
takes it off the probe's path: at the end of a request that changed the namespace the kernel forks
a *waiting* child, a copy of the namespace as it is then, in probe mode and blocked on a pipe until
the next probe hands it the code. The rules that keep it correct and contained:

- A request that may change the namespace (a cell, a restore, a delete: the requests after which
  the kernel's listing is described again) discards the waiting child before it runs (SIGKILL,
  then reaped), so a probe never sees an older namespace than a fork made on its own path would.
  get, list, snapshot and verify only read values (the code of a value's repr or pickling that runs
  there is treated as the listing cache treats it: as changing nothing).
- The probe's code reaches the waiting child together with the probe request's nonce, and the
  child echoes it in its result: bytes that other code in the kernel (a value's repr during a
  listing) wrote into the child's pipe make that probe fail, never answer with their result.
- One waiting child per namespace version: a probe uses it or forks on its path as before; a second
  probe of the same version forks on its path.
- It is forked at the end of the change, before its reply, which carries its pid for a cell: the
  parent kills every process a cell leaves running, except this one (so the cell's round trip
  carries the fork the probe no longer does).
- Mode "off" never forks in advance; "always" after every change; "adaptive" only when the
  namespace version before the change was probed, so a run that never probes never forks in
  advance, and each fork made in vain follows a probe that was asked.
- Code running in the kernel between requests (a thread a cell left running) is outside what this
  guards, as it is for every reply of the kernel.

Not a new boundary: the waiting child is the same process a probe's fork is, made earlier.
"""

from __future__ import annotations

import contextlib
import gc
import json.decoder
import os
import select
import signal
import socket
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from stateguard.sandbox.guards import BoundedText, CellTimers, Redirected
from stateguard.sandbox.protocol import encode_json, write_all
from stateguard.sandbox.values import to_json_value

PreforkMode = Literal["off", "adaptive", "always"]

# json's C scanner, bound before any cell runs: a cell's patch of json.loads must not reach a
# probe's result (the reply encoder is bound the same way, protocol.encode_json).
_scan_json = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__


def _decode_json(data: bytes) -> Any:
    text = data.decode()
    value, end = _scan_json(text, 0)
    if end != len(text):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def _read_to_end(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class ProbeHost(Protocol):
    """What a probe's child needs of the kernel (read when the child runs: a restore replaces the
    namespace, the loop sets the tripwire's record and each request its reply pipe)."""

    sock: socket.socket
    reply_fd: int
    namespace: dict[str, Any]
    max_output: int
    timers: CellTimers
    grace: float
    _watch: Any
    _enter_probe_mode: Callable[[], None]

    def _fork_probe(self) -> int: ...  # the only code the audit hook lets fork

    def _kill_probe(self, pid: int) -> None: ...  # the only code the audit hook lets kill (children)


class ProbeForks:
    """The kernel's probe children: the waiting one (forked in advance) and those still exiting."""

    def __init__(self, host: ProbeHost, mode: PreforkMode):
        self._host = host
        self.mode: PreforkMode = mode
        self.exiting: list[int] = []  # children that answered, reaped once the reply is sent
        self._waiting: tuple[int, int, int] | None = None  # (pid, code pipe's write end, result's read end)
        self._probed = False  # a probe was asked of the current namespace version
        self._wanted = False  # a waiting child should be forked for the current namespace version

    @property
    def waiting_pid(self) -> int | None:
        return self._waiting[0] if self._waiting is not None else None

    # --- the kernel's side --------------------------------------------------------------------
    def changed(self) -> None:
        """Call before a request that may change the namespace: the waiting child is discarded, and
        whether the next version gets one is decided."""
        self._discard()
        self._wanted = self.mode == "always" or (self.mode == "adaptive" and self._probed)
        self._probed = False

    def ready(self) -> int | None:
        """Call at the end of a request that changed the namespace, before its reply: fork the
        waiting child if this version wants one; its pid (as the kernel numbers it), which a cell's
        reply carries so that the parent does not take it for a process the cell left running."""
        if self._wanted and self._waiting is None:
            self._wanted = False  # one try per version: a failed fork (process cap) is not retried
            self._fork_waiting()
        return self.waiting_pid

    def reap(self) -> None:
        """Between requests (the reply sent): reap the children that answered, off every path."""
        while self.exiting:
            with contextlib.suppress(ChildProcessError):  # a `reap` request may have collected it
                os.waitpid(self.exiting.pop(), 0)

    def run(self, code: str, nonce: Any) -> dict[str, Any]:
        """Run `code` in a child: the waiting one if there is one, else one forked now."""
        self._probed, self._wanted = True, False
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            pid, code_fd, result_fd = waiting
            try:
                write_all(code_fd, encode_json({"code": code, "nonce": nonce}).encode())
                handed = True
            except OSError:  # it is gone (killed from inside the kernel): fork one as without it
                handed = False
            os.close(code_fd)
            if handed:
                return self._collect(pid, result_fd, nonce)
            os.close(result_fd)
            self._end(pid)
        read_fd, write_fd = os.pipe()
        pid = self._host._fork_probe()
        if pid == 0:
            try:
                gc.disable()  # walking every object would copy every page it touches
                os.close(read_fd)
                # The probe must not hold the kernel's channels: the request socket, this request's reply pipe.
                self._host.sock.close()
                os.close(self._host.reply_fd)
                self._answer(code, nonce, write_fd)
            finally:
                os._exit(0)  # never return into the kernel loop from the fork
        os.close(write_fd)
        return self._collect(pid, read_fd, nonce)

    def _fork_waiting(self) -> None:
        fds: list[int] = []
        try:
            fds += os.pipe()
            fds += os.pipe()
            pid = self._host._fork_probe()
        except OSError:  # out of fds or processes: the next probe forks on its path (and says why)
            for fd in fds:
                os.close(fd)
            return
        code_read, code_write, result_read, result_write = fds
        if pid == 0:
            try:
                gc.disable()
                os.close(code_write)
                os.close(result_read)
                # The kernel's channels: the request socket and the reply pipe of the change.
                self._host.sock.close()
                os.close(self._host.reply_fd)
                self._wait(code_read, result_write)
            finally:
                os._exit(0)
        os.close(code_read)
        os.close(result_write)
        self._waiting = (pid, code_write, result_read)

    def _discard(self) -> None:
        if self._waiting is None:
            return
        (pid, code_fd, result_fd), self._waiting = self._waiting, None
        os.close(code_fd)
        os.close(result_fd)
        self._end(pid)

    def _end(self, pid: int) -> None:
        """Kill a child and reap it now: no cell runs beside a copy of the namespace it changes."""
        # (PermissionError: the audit hook's answer for a pid that is no longer a child, reaped already.)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            self._host._kill_probe(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)

    def _collect(self, pid: int, read_fd: int, nonce: Any) -> dict[str, Any]:
        """The child's result, or why there is none; a child past the wall limit is killed."""
        timers = self._host.timers
        deadline = time.monotonic() + timers.wall_seconds + self._host.grace / 2
        chunks: list[bytes] = []
        timed_out = False
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([read_fd], [], [], remaining)[0]:
                    timed_out = True
                    self._host._kill_probe(pid)
                    break
                chunk = os.read(read_fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(read_fd)
        if timed_out:
            os.waitpid(pid, 0)
            return {
                "ok": False,
                "error": f"TimeoutError: sandbox: the probe did not finish within "
                f"{timers.wall_seconds:g} s and was killed",
            }
        try:
            result = dict(_decode_json(b"".join(chunks)))
        except (ValueError, TypeError, StopIteration):  # StopIteration: the scanner found no value
            _, status = os.waitpid(pid, 0)  # it ended without a whole result: say how
            return {
                "ok": False,
                "error": f"SandboxError: the probe process {_describe_exit(status)} without a result",
            }
        self.exiting.append(pid)  # it answered: reaped when the kernel is idle, off this request's path
        if result.pop("nonce", None) != nonce:
            return {
                "ok": False,
                "error": "SandboxError: the waiting probe process ran code this probe did not send "
                "(something in the kernel wrote to its pipe); its result was dropped",
            }
        return result

    # --- the child's side -----------------------------------------------------------------------
    def _wait(self, code_fd: int, write_fd: int) -> None:
        """The waiting child: probe mode now, then block until the kernel hands over a probe's code
        (end-of-file without code: discarded, or the kernel is gone)."""
        self._host._enter_probe_mode()
        data = _read_to_end(code_fd)
        os.close(code_fd)
        if not data:
            return
        try:
            message = dict(_decode_json(data))
            code, nonce = str(message["code"]), message.get("nonce")
        except (ValueError, TypeError, KeyError, StopIteration):
            write_all(write_fd, encode_json({"ok": False, "error": "SandboxError: no whole probe"}).encode())
            return
        self._answer(code, nonce, write_fd, entered=True)

    def _answer(self, code: str, nonce: Any, write_fd: int, *, entered: bool = False) -> None:
        host = self._host
        if not entered:
            host._enter_probe_mode()
        out, err = BoundedText(host.max_output), BoundedText(host.max_output)
        try:
            with Redirected(out, err), host.timers.armed("probe"):
                exec(compile(code, "<probe>", "exec"), host.namespace)
                value = to_json_value(host.namespace.get("result"))
            reply = {"ok": True, "stdout": out.getvalue(), "value": value}
            tampered = host._watch[0](host._watch[1]) if host._watch else None
            if tampered is not None:  # the probe's code rewrote what builds this reply: refuse it
                reply = {"ok": False, "stdout": "", "error": f"SandboxError: kernel_tampered: {tampered}"}
        except BaseException as exc:
            reply = {"ok": False, "stdout": out.getvalue(), "error": f"{type(exc).__name__}: {exc}"}
        reply["nonce"] = nonce
        write_all(write_fd, encode_json(reply).encode())
        # End of result now: the kernel answers on this end-of-file instead of waiting for the exit,
        # whose unmapping of a copy-on-write image of the whole kernel costs milliseconds.
        os.close(write_fd)
