"""Kernel-side guards for one cell or probe: CPU and wall timers, bounded output, process rlimits.

The timers raise `TimeoutError("sandbox: ...")` inside the running cell and keep re-raising
every `REPEAT_S` seconds until the cell returns, so a cell that swallows the first one with a
bare `except:` still gets interrupted. A signal is only handled between bytecodes: one long C
call (a huge sort, a blocking read) is not interrupted, and code that swallows every
TimeoutError or resets the timers is not either. Both cases are what the parent's hard deadline
(wall + grace, then SIGKILL and a restart) is for.
"""

from __future__ import annotations

import io
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

REPEAT_S = 0.25
MIB = 1024 * 1024


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

    @contextmanager
    def armed(self, what: str = "cell") -> Iterator[None]:
        self._what = what
        self._armed = True
        signal.setitimer(signal.ITIMER_PROF, self.cpu_seconds, REPEAT_S)
        signal.setitimer(signal.ITIMER_REAL, self.wall_seconds, REPEAT_S)
        try:
            yield
        finally:
            self._armed = False
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)


def apply_process_limits(memory_mb: int) -> None:
    """No core dumps (a crashing cell must not write a multi-GB file), and the address-space cap."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cap = memory_mb * MIB
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
