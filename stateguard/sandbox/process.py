"""Parent-side handle on one kernel process: start it, ask it things against deadlines, kill it.

The kernel gets a minimal environment (no API keys or tokens of the parent leak into it),
cwd = scratch dir, stdout discarded, stderr to a log file next to the checkpoints (start-up
failures and faulthandler dumps land there), single-threaded BLAS, and, when the network is
off and `unshare -n` works on this host (probed once per process), an empty network namespace.
Without `unshare` the audit hook's socket refusal is the only network barrier: weaker, since a
C extension opening sockets itself would not be stopped.

Any failure to get a well-formed answer in time (EOF, broken pipe, deadline, malformed frame)
becomes `KernelDied` with a description of how the process ended; the workspace then restarts.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, BinaryIO

import stateguard
from stateguard.sandbox.limits import SandboxLimits
from stateguard.sandbox.protocol import (
    ChannelClosed,
    DeadlineExceeded,
    FrameReader,
    ProtocolError,
    send_blob_file,
    send_message,
)

STARTUP_TIMEOUT_S = 60.0
_PACKAGE_ROOT = str(Path(stateguard.__file__).resolve().parent.parent)


class KernelDied(RuntimeError):
    """The kernel process is gone (or was killed because it stopped answering)."""


@functools.cache
def network_namespace_available() -> bool:
    """Whether `unshare -n` can start a process in a fresh network namespace here."""
    exe = shutil.which("unshare")
    if exe is None:
        return False
    try:
        return subprocess.run([exe, "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def child_environment(scratch_dir: Path) -> dict[str, str]:
    scratch = str(scratch_dir)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "MPLCONFIGDIR": scratch,
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": _PACKAGE_ROOT,
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "PYTHONFAULTHANDLER": "1",
        # One thread per kernel: predictable CPU accounting, and fork-safe probes.
        "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1",
        # Each malloc arena reserves address space that RLIMIT_AS counts.
        "MALLOC_ARENA_MAX": "2",
    }  # fmt: skip


class KernelProcess:
    def __init__(
        self, *, scratch_dir: Path, task_data_dir: Path | None, limits: SandboxLimits, log_path: Path
    ):
        self.limits = limits
        self.network_namespace = not limits.network and network_namespace_available()
        argv = [sys.executable, "-m", "stateguard.sandbox.kernel"]
        cmd_read, self._cmd_fd = os.pipe()
        reply_read, reply_write = os.pipe()
        argv += [str(cmd_read), str(reply_write)]
        if self.network_namespace:
            argv = [shutil.which("unshare") or "unshare", "-n", *argv]
        self._log: IO[bytes] = log_path.open("wb")
        try:
            self.proc = subprocess.Popen(
                argv, pass_fds=(cmd_read, reply_write), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self._log, cwd=scratch_dir, env=child_environment(scratch_dir), start_new_session=True,
            )  # fmt: skip
        finally:
            os.close(cmd_read)
            os.close(reply_write)
        self.log_path = log_path
        self.reader = FrameReader(reply_read)
        self._exit_note: str | None = None
        self._closed = False
        config = {
            "scratch_dir": str(scratch_dir),
            "task_data_dir": None if task_data_dir is None else str(task_data_dir),
            "limits": limits.model_dump(),
        }
        try:
            ready = self.request(config, STARTUP_TIMEOUT_S)
            if not ready.get("ready"):
                raise KernelDied(f"the sandbox kernel did not start: {ready}")
        except KernelDied:
            self.kill()
            self.close()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, message: dict[str, Any], timeout: float, *, blob: Path | None = None) -> dict[str, Any]:
        """Send one request (plus an optional blob file) and return the JSON reply."""
        deadline = time.monotonic() + timeout
        try:
            send_message(self._cmd_fd, message)
            if blob is not None:
                send_blob_file(self._cmd_fd, blob)
            return self.reader.read_message(deadline)
        except Exception as exc:
            raise self._failure(exc, timeout) from exc

    def read_blob_into(self, out: BinaryIO, timeout: float) -> int:
        try:
            return self.reader.read_blob_into(out, time.monotonic() + timeout)
        except Exception as exc:
            raise self._failure(exc, timeout) from exc

    def _failure(self, exc: Exception, timeout: float) -> KernelDied:
        if isinstance(exc, DeadlineExceeded):
            self.kill()
            self._exit_note = f"it did not answer within {timeout:g} s, so it was killed (SIGKILL)"
        elif isinstance(exc, ChannelClosed | BrokenPipeError):
            self._wait(2.0)
        elif isinstance(exc, ProtocolError):
            self.kill()
            self._exit_note = f"it broke the protocol ({exc}), so it was killed (SIGKILL)"
        else:
            self.kill()
            self._exit_note = (
                f"talking to it failed ({type(exc).__name__}: {exc}), so it was killed (SIGKILL)"
            )
        return KernelDied(self.describe_exit())

    def _wait(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def describe_exit(self) -> str:
        code = self.proc.poll()
        if self._exit_note:
            how = self._exit_note
        elif code is None:
            how = "it is still running but stopped answering"
        elif code < 0:
            how = f"it was killed by signal {signal.Signals(-code).name}"
        else:
            how = f"it exited with status {code}"
        tail = self.log_tail()
        return f"the sandbox process (pid {self.pid}) died: {how}" + (
            f"; its stderr ends with: {tail}" if tail else ""
        )

    def log_tail(self, chars: int = 600) -> str:
        try:
            text = self.log_path.read_bytes()[-chars:].decode(errors="replace").strip()
        except OSError:
            return ""
        # faulthandler dumps are long; the first line names the fault.
        return text.splitlines()[0] if text.startswith("Fatal Python error") else text

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        """Closing the request pipe ends the kernel's loop; kill it if it does not leave quickly."""
        if self._closed:
            return  # the fd numbers may already belong to someone else
        self._closed = True
        for fd in (self._cmd_fd, self.reader.fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._wait(2.0)
        self._log.close()
