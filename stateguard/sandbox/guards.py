"""Kernel-side guards for one cell or probe: CPU and wall timers, bounded output, process rlimits,
and the sweep of background threads a cell leaves behind.

The timers raise `TimeoutError("sandbox: ...")` inside the running cell and keep re-raising
every `REPEAT_S` seconds until the cell returns, so a cell that swallows the first one with a
bare `except:` still gets interrupted. A signal is only handled between bytecodes: one long C
call (a huge sort, a blocking read) is not interrupted, and code that swallows every
TimeoutError or resets the timers is not either. Both cases are what the parent's hard deadline
(wall + grace, then SIGKILL and a restart) is for.

Background threads: a Python thread a cell starts could keep running between cells and change
workspace values outside any cell. After every cell `ThreadSweep` asks each such thread to stop
(an asynchronous SystemExit), waits `STOP_WAIT_S`, and withdraws the request from threads still
running (blocked in native code: a late SystemExit could kill, say, an idle executor worker the
moment it picks up work). The cell's reply names the threads stopped and those still running;
the parent reports the latter. Native threads of libraries (DuckDB, Arrow) are not Python
threads and are not touched.
"""

from __future__ import annotations

import ctypes
import io
import resource
import signal
import sys
import threading
import time
from types import FrameType
from typing import IO, Any

REPEAT_S = 0.25
MIB = 1024 * 1024
STOP_WAIT_S = 0.1


class BoundedText(io.TextIOBase):
    """A text sink that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int):
        super().__init__()
        self._limit = limit
        self._parts: list[str] = []
        self._kept = 0
        self._dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self._limit - self._kept
        if room > 0:
            self._parts.append(text[:room])
            self._kept += min(room, len(text))
        self._dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def getvalue(self) -> str:
        text = "".join(self._parts)
        if self._dropped:
            text += f"\n... [{self._dropped} more characters dropped (max_output_chars={self._limit})]"
        return text


class CellTimers:
    """ITIMER_PROF (CPU) and ITIMER_REAL (wall) that raise only while a cell is running."""

    def __init__(self, cpu_seconds: float, wall_seconds: float):
        self.cpu_seconds = cpu_seconds
        self.wall_seconds = wall_seconds
        self._armed = False
        self._what = "cell"
        signal.signal(signal.SIGPROF, self._on_cpu)
        signal.signal(signal.SIGALRM, self._on_wall)

    def _on_cpu(self, signum: int, frame: FrameType | None) -> None:
        # A tick that lands in kernel code after the cell returned must not raise there.
        if self._armed:
            raise TimeoutError(
                f"sandbox: the {self._what} used more than {self.cpu_seconds:g} s of CPU time (cpu_seconds_per_cell)"
            )

    def _on_wall(self, signum: int, frame: FrameType | None) -> None:
        if self._armed:
            raise TimeoutError(
                f"sandbox: the {self._what} ran longer than {self.wall_seconds:g} s (wall_seconds_per_cell)"
            )

    def armed(self, what: str = "cell") -> Armed:
        return Armed(self, what)


class Armed:
    """The timers armed for one cell or probe. A plain context manager, not `contextlib`'s: whether
    a cell raised must be decided by the sandbox's own code (watched by the tripwire), not by a
    stdlib class that a cell could patch to swallow its exception."""

    def __init__(self, timers: CellTimers, what: str):
        self._timers, self._what = timers, what

    def __enter__(self) -> None:
        timers = self._timers
        timers._what = self._what
        timers._armed = True
        signal.setitimer(signal.ITIMER_PROF, timers.cpu_seconds, REPEAT_S)
        signal.setitimer(signal.ITIMER_REAL, timers.wall_seconds, REPEAT_S)

    def __exit__(self, *exc_info: object) -> None:  # None: the cell's exception goes on
        self._timers._armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)


class Redirected:
    """`sys.stdout`/`sys.stderr` sent to a cell's buffers for one block (instead of `contextlib`'s
    redirect_stdout, for the same reason as `Armed`)."""

    def __init__(self, out: IO[str] | io.TextIOBase, err: IO[str] | io.TextIOBase):
        self._to: tuple[Any, Any] = (out, err)
        self._saved: tuple[Any, Any] | None = None

    def __enter__(self) -> None:
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout, sys.stderr = self._to

    def __exit__(self, *exc_info: object) -> None:
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved


def _lower(kind: int, cap: int) -> None:
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(kind, (cap, cap))  # soft and hard: code in a cell cannot raise them again


def apply_process_limits(
    memory_mb: int, max_processes: int | None = None, file_mb: int | None = None
) -> None:
    """No core dumps (a crashing cell must not write a multi-GB file), the address-space cap,
    (in the sandbox, where the uid is the kernel's own) the process cap, and the largest file
    (RLIMIT_FSIZE: no file, sparse or not, larger than the scratch tmpfs; writes past it fail
    with EFBIG, since Python ignores SIGXFSZ)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower(resource.RLIMIT_AS, memory_mb * MIB)
    if file_mb is not None:
        _lower(resource.RLIMIT_FSIZE, file_mb * MIB)
    if max_processes is not None:
        _lower(resource.RLIMIT_NPROC, max_processes)


def _async_raise(ident: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc) if exc else None)


class ThreadSweep:
    """Stops the Python threads cells leave running (see the module docstring)."""

    def __init__(self) -> None:
        self._main = threading.main_thread()

    def sweep(self) -> dict[str, list[str]]:
        alive = [
            t
            for t in threading.enumerate()
            if t is not self._main
            and t.is_alive()
            and t.ident is not None
            and not isinstance(t, threading._DummyThread)
        ]
        if not alive:
            return {}
        for thread in alive:
            _async_raise(thread.ident or 0, SystemExit)
        deadline = time.monotonic() + STOP_WAIT_S
        for thread in alive:
            thread.join(max(0.0, deadline - time.monotonic()))
        running = [t for t in alive if t.is_alive()]
        for thread in running:
            _async_raise(thread.ident or 0, None)  # withdraw: see the module docstring
        return {"stopped": [t.name for t in alive if t not in running], "running": [t.name for t in running]}
