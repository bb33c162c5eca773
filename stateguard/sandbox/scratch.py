"""The scratch dir under bubblewrap: a size-capped tmpfs inside the sandbox, mirrored to the host.

The cap has to be a filesystem limit (a per-file rlimit does not bound many files), so the
kernel writes into a tmpfs of `scratch_mb` mounted at the scratch dir's own path. The host
scratch dir stays what the rest of the project reads (DAComp-DE collects the SQL files the agent
wrote there, people open run folders):

- `seed` (kernel side, before any cell): copies the host scratch dir, bound read-only at
  `SEED_DIR`, into the fresh tmpfs, so files survive a kernel restart;
- `Mirror.sync` (parent side, after every cell and before the kernel is closed): makes the host
  dir equal to the tmpfs, read through `/proc/<pid>/root`. Only directories and regular files
  are copied (symlinks, FIFOs and devices are skipped: a link to /etc/shadow must not become a
  host file someone later follows). Every step opens the next name relative to the previous
  directory fd with O_NOFOLLOW, so a cell racing the copy with renames and symlinks cannot send
  the parent outside the tmpfs. Unchanged files (same size and mtime) are not copied again.

A kernel that dies takes its tmpfs with it: files written by the cell that was running when it
died are lost (everything earlier was mirrored). `Mirror.sync` bounds its walk (`MAX_ENTRIES`,
`MAX_DEPTH`) and says what it skipped.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

MAX_ENTRIES = 100_000
MAX_DEPTH = 64
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1 << 20


def seed(source: Path, scratch: Path) -> list[str]:
    """Kernel side: copy the host scratch (read-only view) into the empty tmpfs; returns problems."""
    problems: list[str] = []
    if not source.is_dir():
        return problems
    for root, dirs, files in os.walk(source):
        rel = Path(root).relative_to(source)
        (scratch / rel).mkdir(exist_ok=True)
        for name in files:
            src = Path(root) / name
            if src.is_symlink() or not src.is_file():
                continue
            try:
                shutil.copy2(src, scratch / rel / name)
            except OSError as exc:  # e.g. the host copy is larger than scratch_mb
                problems.append(f"{rel / name}: {exc.strerror or exc}")
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
    return problems


def open_inside(root_fd: int, path: Path) -> int:
    """A directory fd for `path` below root_fd, opening one component at a time without following links."""
    fd = os.dup(root_fd)
    for part in path.parts[1:] if path.is_absolute() else path.parts:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nxt
    return fd


class Mirror:
    """Parent side: keeps `host` equal to the sandbox tmpfs (see the module docstring)."""

    def __init__(self, host: Path):
        self.host = host
        self._seen: dict[str, tuple[int, int]] = {}  # relative path -> (size, mtime_ns) last copied
        self.skipped: list[str] = []

    def sync(self, scratch_fd: int) -> list[str]:
        """Copy changes from the sandbox's scratch dir (an fd from `open_scratch`) to the host dir;
        returns notes (what was skipped)."""
        self.skipped = []
        present: dict[str, tuple[int, int]] = {}
        self._walk(scratch_fd, "", present, 0)
        self._remove_missing(present)
        self._seen = present
        return self.skipped

    def _walk(self, dir_fd: int, rel: str, present: dict[str, tuple[int, int]], depth: int) -> None:
        # Runs after every cell: plain strings, and the host is touched only for what changed.
        if rel and self._seen.get(rel + "/") is None:
            target = self.host / rel
            if target.is_symlink() or (target.exists() and not target.is_dir()):
                target.unlink()  # a file the sandbox has since replaced by a directory
            target.mkdir(parents=True, exist_ok=True)
        with os.scandir(dir_fd) as entries:  # scandir works on its own dup of the fd (and rewinds it): ours stays ours
            for entry in entries:
                if len(present) >= MAX_ENTRIES:
                    self.skipped.append(f"more than {MAX_ENTRIES} entries: the rest is not mirrored")
                    return
                child = f"{rel}/{entry.name}" if rel else entry.name
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    if depth >= MAX_DEPTH:
                        self.skipped.append(f"{child}: deeper than {MAX_DEPTH} levels")
                        continue
                    try:
                        sub = os.open(entry.name, _DIR_FLAGS, dir_fd=dir_fd)
                    except OSError:
                        continue  # replaced while we looked
                    try:
                        self._walk(sub, child, present, depth + 1)
                    finally:
                        os.close(sub)
                    present[child + "/"] = (0, 0)
                elif stat.S_ISREG(info.st_mode):
                    key = (info.st_size, info.st_mtime_ns)
                    present[child] = key
                    if self._seen.get(child) != key:
                        self._copy(dir_fd, entry.name, Path(child))
                else:
                    self.skipped.append(f"{child}: not a regular file or directory (not mirrored)")

    def _copy(self, dir_fd: int, name: str, child: Path) -> None:
        try:
            src = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except OSError:
            return  # removed or replaced by a link since the listing
        target = self.host / child
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                return
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)  # a directory the sandbox has since replaced by a file
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".mirror-partial")
            with open(partial, "wb") as out:
                while chunk := os.read(src, CHUNK):
                    out.write(chunk)
            partial.replace(target)
        finally:
            os.close(src)

    def _remove_missing(self, present: dict[str, tuple[int, int]]) -> None:
        """Files and dirs the sandbox removed go on the host too (deepest first)."""
        for key in sorted(set(self._seen) - set(present), key=len, reverse=True):
            path = self.host / key.rstrip("/")
            if key.endswith("/"):
                if path.is_dir() and not path.is_symlink() and f"{key.rstrip('/')}" not in present:
                    shutil.rmtree(path, ignore_errors=True)
            elif f"{key}/" not in present:
                path.unlink(missing_ok=True)


def open_scratch(proc_root: str, scratch: Path) -> int:
    """An fd on the sandbox's scratch tmpfs, reached through `/proc/<pid>/root` without following links."""
    root = os.open(proc_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return open_inside(root, scratch)
    finally:
        os.close(root)
