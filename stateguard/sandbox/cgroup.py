"""One resource envelope for the kernel's whole process tree: a cgroup per kernel, where there is one.

Per-process rlimits bound each process, not the sandbox: four processes of `memory_mb` each, or
a `memfd_create` file (shared memory, charged to no process's address space), go past them. The
kernel's cgroup bounds the tree together, counted by the operating system:

- memory: `memory_mb` for everything the tree holds in RAM — process memory, shared memory,
  memfd files and the files in its tmpfs mounts (scratch, /tmp, /dev/shm). Past it the kernel's
  OOM killer ends a process of the tree (the sandbox kernel recovers like any death);
- pids: `max_processes` processes and threads;
- cpuacct: CPU time of the tree, children included (reported per cell by `cpu_seconds`).

cgroup v1 (a hierarchy per controller, as on this project's machines, as root) and cgroup v2
(one unified hierarchy with the controllers enabled for our subtree, or a delegated slice) are
both used; the new cgroup is created below the one this process is in. `Envelope.create` returns
None where neither is writable, and `why_unavailable` says why: the workspace then records and
shows the degradation (per-process limits only).

The parent moves the sandbox's pid 1 (and anything it has started) into the cgroup before it
sends the kernel its configuration, so nothing the cells start is ever outside it.

    envelope = try_create(memory_mb=2048, max_processes=64)   # None: no cgroup here (why_unavailable())
    envelope.add(pid); envelope.pids(); envelope.cpu_seconds(); envelope.remove()
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
MIB = 1024 * 1024
_V1 = ("memory", "pids", "cpuacct")


def _own_paths() -> dict[str, str]:
    """controller -> this process's cgroup path in that hierarchy ('' for the v2 unified one)."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                out[name] = path
    return out


def _write(path: Path, value: str) -> None:
    path.write_text(value)


class Envelope:
    def __init__(self, dirs: dict[str, Path], version: int):
        self.dirs = dirs  # controller -> cgroup dir (v2: one dir under every key)
        self.version = version
        self._procs = str(dirs["pids"] / "cgroup.procs") if "pids" in dirs else ""
        self._count_fd: int | None = None

    @property
    def description(self) -> str:
        return f"cgroup v{self.version} ({', '.join(sorted(self.dirs))})"

    @classmethod
    def create(cls, memory_mb: int, max_processes: int) -> Envelope:
        """A new cgroup with the limits set; raises OSError (see `why_unavailable`) where there is none."""
        name = f"stateguard-{os.getpid()}-{secrets.token_hex(4)}"
        own = _own_paths()
        unified = ROOT / "cgroup.controllers"
        if unified.is_file() and {"memory", "pids"} <= set(unified.read_text().split()):
            base = ROOT / own.get("", "/").lstrip("/")
            made = base / name
            made.mkdir()
            envelope = cls({"memory": made, "pids": made, "cpu": made}, 2)
            try:
                _write(made / "memory.max", str(memory_mb * MIB))
                with contextlib.suppress(OSError):
                    _write(made / "memory.swap.max", "0")
                _write(made / "pids.max", str(max_processes))
            except OSError:
                envelope.remove()
                raise
            return envelope
        dirs: dict[str, Path] = {}
        try:
            for controller in _V1:
                mount = ROOT / controller
                if not (mount / "cgroup.procs").is_file():
                    raise OSError(f"no cgroup v1 '{controller}' hierarchy at {mount}")
                made = mount / own.get(controller, "/").lstrip("/") / name
                made.mkdir()
                dirs[controller] = made
            envelope = cls(dirs, 1)
            _write(dirs["memory"] / "memory.limit_in_bytes", str(memory_mb * MIB))
            with contextlib.suppress(OSError):  # absent without swap accounting
                _write(dirs["memory"] / "memory.memsw.limit_in_bytes", str(memory_mb * MIB))
            _write(dirs["pids"] / "pids.max", str(max_processes))
        except OSError:
            cls(dirs, 1).remove()
            raise
        return envelope

    def add(self, pid: int) -> None:
        """Move a process (not its existing children: move parents first) into every controller."""
        for path in {*self.dirs.values()}:
            _write(path / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        """The processes in the cgroup (read after every cell: plain os calls, about 40 us here)."""
        with contextlib.suppress(OSError, ValueError):
            fd = os.open(self._procs, os.O_RDONLY | os.O_CLOEXEC)
            try:
                data = b""
                while chunk := os.read(fd, 65536):
                    data += chunk
            finally:
                os.close(fd)
            return [int(p) for p in data.split()]
        return []

    def count(self) -> int | None:
        """Tasks (processes and threads) in the cgroup now, zombies included: one pread, about 3 us."""
        with contextlib.suppress(OSError, ValueError):
            if self._count_fd is None:
                self._count_fd = os.open(self.dirs["pids"] / "pids.current", os.O_RDONLY | os.O_CLOEXEC)
            return int(os.pread(self._count_fd, 64, 0))
        return None

    def cpu_seconds(self) -> float | None:
        """CPU time of the whole tree so far (children included), or None if unreadable."""
        with contextlib.suppress(OSError, ValueError):
            if self.version == 1:
                return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
            for line in (self.dirs["cpu"] / "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
        return None

    def oom_kills(self) -> int:
        """How many processes the memory limit has ended so far."""
        with contextlib.suppress(OSError, ValueError):
            name = "memory.oom_control" if self.version == 1 else "memory.events"
            for line in (self.dirs["memory"] / name).read_text().splitlines():
                key, value = line.split()
                if key == "oom_kill":
                    return int(value)
        return 0

    def remove(self) -> None:
        """Delete the cgroup (its processes must be gone; a busy one is left for the OS to clean up)."""
        if self._count_fd is not None:
            os.close(self._count_fd)
            self._count_fd = None
        for path in {*self.dirs.values()}:
            with contextlib.suppress(OSError):
                path.rmdir()


_UNAVAILABLE: list[str] = []


def why_unavailable() -> str:
    return _UNAVAILABLE[0] if _UNAVAILABLE else ""


def try_create(memory_mb: int, max_processes: int) -> Envelope | None:
    """An envelope, or None (and `why_unavailable` set) where cgroups cannot be used here."""
    try:
        return Envelope.create(memory_mb, max_processes)
    except OSError as exc:
        if not _UNAVAILABLE:
            _UNAVAILABLE.append(f"{type(exc).__name__}: {exc}"[:200])
        return None
