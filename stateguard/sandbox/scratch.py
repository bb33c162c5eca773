"""The scratch dir under bubblewrap: a size-capped tmpfs inside the sandbox, mirrored to the host.

The cap has to be a filesystem limit (a per-file rlimit does not bound many files), so the
kernel writes into a tmpfs of `scratch_mb` mounted at the scratch dir's own path. The host
scratch dir stays what the rest of the project reads (DAComp-DE collects the SQL files the agent
wrote there, people open run folders):

- `seed` (kernel side, before any cell): copies the host scratch dir, bound read-only at
  `SEED_DIR`, into the fresh tmpfs, so files survive a kernel restart;
- `Mirror.sync` (parent side, after every cell and before the kernel is closed): makes the host
  dir equal to the tmpfs, read through `/proc/<pid>/root` (its class docstring says how: both
  sides through directory fds with O_NOFOLLOW, a directory-by-directory diff, change stamps that
  a cell cannot put back, per-name problems reported with the rest still copied). Only
  directories and regular files are copied (symlinks, FIFOs and devices are skipped: a link to
  /etc/shadow must not become a host file someone later follows); a hard link is copied once
  and its other names reported; the host copy holds at most `scratch_mb` of apparent size
  (sparse files count at their full length), the rest is reported by name;
- `check_host_scratch` (parent side, before the first kernel): a host scratch dir the tmpfs
  could not hold as it is (over `scratch_mb`, a FIFO, socket or device, a hard-linked file) is
  refused with an error naming it, before anything could overwrite the original.

The kernel also sets RLIMIT_FSIZE to `scratch_mb` (`guards.apply_process_limits`): one file
cannot be made larger than the tmpfs, sparse or not.

A kernel that dies takes its tmpfs with it: files written by the cell that was running when it
died are lost (everything earlier was mirrored). `Mirror.sync` bounds its walk (`MAX_ENTRIES`,
`MAX_DEPTH`) and says what it skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
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


_HOST_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
STAMP_TRUST_NS = 200_000_000  # a host dir stamp younger than this is not trusted to mean "unchanged"
# A file stamp is only as fine as the clock that set it: before Linux 6.13 (no multigrain timestamps)
# ctime moves once per tick (at most 10 ms), so a same-size rewrite in the tick of the last sync keeps
# the whole stamp. A file changed this recently when a sync starts is copied again at the next sync.
FRESH_NS = 20_000_000
TEMP_PREFIX = ".sg-mirror-"  # + 16 hex digits: 27 characters, far inside NAME_MAX


class Mirror:
    """Parent side: keeps `host` equal to the sandbox tmpfs (see the module docstring).

    Both trees are walked through directory fds, one name at a time with O_NOFOLLOW, so a link
    planted on either side is an entry to replace or skip, never a path to follow. Each directory
    is listed on both sides: what the sandbox no longer has is removed from the host, and a host
    entry that is missing or differs from what the last sync wrote is written again (a host
    scratch deleted between cells comes back whole). A file is copied when its change stamp in
    the tmpfs differs from the last sync's: inode, size, mtime and ctime. A cell can put mtime
    back, not ctime (the kernel sets it on every write and on every utime), so a same-size rewrite
    with its old mtime is still seen; a file changed within `FRESH_NS` of a sync is copied again at
    the next one, whatever its stamp (a coarse clock can give a rewrite the same ctime). Every
    problem is reported by name and the rest is copied.
    """

    def __init__(self, host: Path, budget_bytes: int | None = None):
        self.host = host
        self.budget_bytes = budget_bytes  # apparent bytes the host copy may hold (scratch_mb)
        # relative path -> (sandbox stamp, host stamp) after the last copy
        self._copied: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        # host dir -> (its stamp, its listing) when the last sync left it unchanged: not listed again
        self._listings: dict[str, tuple[tuple[int, int, int], dict[str, os.stat_result]]] = {}
        self._next_listings: dict[str, tuple[tuple[int, int, int], dict[str, os.stat_result]]] = {}
        self.skipped: list[str] = []

    def sync(self, scratch_fd: int) -> list[str]:
        """Copy changes from the sandbox's scratch dir (an fd from `open_scratch`) to the host dir;
        returns notes (what was skipped or restored, each by name)."""
        self.skipped = []
        self._now = time.time_ns()  # before any stat of this sync: "fresh" errs towards copying again
        self._entries = 0
        self._bytes = 0
        self._links: dict[tuple[int, int], str] = {}
        copied: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._next_listings = {}
        try:
            host_fd = os.open(self.host, _HOST_DIR_FLAGS)
        except FileNotFoundError:
            self.host.mkdir(parents=True, exist_ok=True)
            host_fd = os.open(self.host, _HOST_DIR_FLAGS)
            if self._copied:
                self.skipped.append(f"the host scratch dir {self.host} had disappeared; it was written again")
        try:
            self._walk(scratch_fd, host_fd, "", copied, 0)
        finally:
            os.close(host_fd)
        self._copied = copied
        self._listings = self._next_listings
        return self.skipped

    def _walk(
        self,
        src_fd: int,
        host_fd: int,
        rel: str,
        copied: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
        depth: int,
    ) -> None:
        with os.scandir(src_fd) as it:  # scandir reads its own duplicate of the fd (and rewinds it)
            wanted = {e.name: e.stat(follow_symlinks=False) for e in it}
        before = _dir_stamp(host_fd)
        cached = self._listings.get(rel)
        if cached is not None and cached[0] == before:
            present = dict(cached[1])  # the host dir has not changed since the last sync listed it
        else:
            with os.scandir(host_fd) as it:
                present = {e.name: e.stat(follow_symlinks=False) for e in it}
        listing = dict(present)
        for name, info in wanted.items():
            child = f"{rel}/{name}" if rel else name
            self._entries += 1
            if self._entries > MAX_ENTRIES:
                self.skipped.append(f"more than {MAX_ENTRIES} entries: the rest is not mirrored")
                wanted = {n: i for n, i in wanted.items() if n in present}  # keep, do not delete, the rest
                break
            try:
                if stat.S_ISDIR(info.st_mode):
                    if depth >= MAX_DEPTH:
                        self.skipped.append(f"{child}: deeper than {MAX_DEPTH} levels (not mirrored)")
                        continue
                    self._directory(src_fd, host_fd, name, child, present.get(name), copied, depth)
                elif stat.S_ISREG(info.st_mode):
                    try:
                        self._file(src_fd, host_fd, name, child, info, present.get(name), copied)
                    except OSError:
                        # No stale copy stays behind under the name of a file that was not mirrored.
                        old = present.pop(name, None)
                        if old is not None:
                            with contextlib.suppress(OSError):
                                _remove(host_fd, name, old)
                        raise
                else:
                    self.skipped.append(f"{child}: not a regular file or directory (not mirrored)")
            except OSError as exc:  # this entry only: the others are still copied
                self.skipped.append(f"{child}: not mirrored ({exc.strerror or exc})")
        for name, info in present.items():
            keep = name in wanted and (
                stat.S_ISDIR(wanted[name].st_mode) or stat.S_ISREG(wanted[name].st_mode)
            )
            if not keep:
                try:
                    _remove(host_fd, name, info)
                except OSError as exc:
                    self.skipped.append(
                        f"{rel + '/' if rel else ''}{name}: could not be removed from the host ({exc.strerror or exc})"
                    )
        # Remember the listing when this sync changed nothing in the dir and its stamp is old enough
        # to be trusted (timestamps are coarse: a change in the same tick would keep the stamp).
        if _dir_stamp(host_fd) == before and time.time_ns() - before[1] > STAMP_TRUST_NS:
            self._next_listings[rel] = (before, listing)

    def _directory(
        self,
        src_fd: int,
        host_fd: int,
        name: str,
        child: str,
        host_info: os.stat_result | None,
        copied: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
        depth: int,
    ) -> None:
        if host_info is not None and not stat.S_ISDIR(host_info.st_mode):
            _remove(host_fd, name, host_info)  # a file, or a link planted where a directory belongs
            host_info = None
        if host_info is None:
            os.mkdir(name, 0o755, dir_fd=host_fd)
        sub_src = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
        try:
            sub_host = os.open(name, _HOST_DIR_FLAGS, dir_fd=host_fd)
            try:
                self._walk(sub_src, sub_host, child, copied, depth + 1)
            finally:
                os.close(sub_host)
        finally:
            os.close(sub_src)

    def _file(
        self,
        src_fd: int,
        host_fd: int,
        name: str,
        child: str,
        info: os.stat_result,
        host_info: os.stat_result | None,
        copied: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
    ) -> None:
        if info.st_nlink > 1:
            first = self._links.setdefault((info.st_dev, info.st_ino), child)
            if first != child:
                raise OSError(0, f"a hard link to {first}, which is mirrored once (copy the file instead)")
        self._bytes += info.st_size  # apparent size: a sparse file costs the host what it would write
        if self.budget_bytes is not None and self._bytes > self.budget_bytes:
            self._bytes -= info.st_size
            raise OSError(
                0,
                f"{info.st_size} bytes would take the host copy past scratch_mb ({self.budget_bytes >> 20} MiB)",
            )
        stamp = _stamp(info)
        host_stamp = _host_stamp(host_info)
        # Recorded as compared, unless fresh: then with a mark no real stamp has, so the next sync
        # copies it again.
        recorded = stamp + (-1,) if self._now - info.st_ctime_ns < FRESH_NS else stamp
        if self._copied.get(child) == (stamp, host_stamp):
            copied[child] = (recorded, host_stamp)  # unchanged on both sides
            return
        copied[child] = (recorded, self._copy(src_fd, host_fd, name, host_info))

    def _copy(
        self, src_fd: int, host_fd: int, name: str, host_info: os.stat_result | None
    ) -> tuple[int, ...]:
        """Write the sandbox file `name` into the host dir under a fresh temporary name, then rename
        it over the entry (a link there is replaced, not followed); returns the host copy's stamp."""
        src = os.open(name, _FILE_FLAGS, dir_fd=src_fd)
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                raise OSError(0, "replaced while it was being copied (not mirrored)")
            temp, out = _create_temp(host_fd)
            try:
                try:
                    while chunk := os.read(src, CHUNK):
                        view = memoryview(chunk)
                        while view:
                            view = view[os.write(out, view) :]
                    done = os.fstat(out)
                finally:
                    os.close(out)
                if host_info is not None and stat.S_ISDIR(host_info.st_mode):
                    shutil.rmtree(name, dir_fd=host_fd)  # a directory the sandbox has replaced by a file
                os.rename(temp, name, src_dir_fd=host_fd, dst_dir_fd=host_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=host_fd)
                raise
            return (done.st_ino, done.st_size, done.st_mtime_ns)
        finally:
            os.close(src)


def _dir_stamp(fd: int) -> tuple[int, int, int]:
    info = os.fstat(fd)
    return (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    """What says a sandbox file is unchanged since the last copy: a cell can put mtime back, not ctime."""
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _host_stamp(info: os.stat_result | None) -> tuple[int, ...]:
    if info is None or not stat.S_ISREG(info.st_mode):
        return ()
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _create_temp(dir_fd: int) -> tuple[str, int]:
    """A new file in dir_fd under a random short name (O_EXCL: never an existing entry or link)."""
    for _ in range(16):
        name = TEMP_PREFIX + os.urandom(8).hex()
        try:
            return name, os.open(name, _TEMP_FLAGS, 0o644, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise OSError(0, "no free temporary name in the host dir")


def _remove(dir_fd: int, name: str, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def check_host_scratch(host: Path, scratch_mb: int) -> None:
    """Before the first kernel: the host scratch dir must fit the sandbox's tmpfs and hold only
    directories and regular files, or the sandbox copy would differ from it and the first mirror
    would overwrite the host original. Raises ValueError naming the file and the fix."""
    problems: list[str] = []
    total = 0
    for root, dirs, files in os.walk(host):
        for name in sorted(dirs + files):
            path = Path(root) / name
            info = path.lstat()
            rel = path.relative_to(host)
            if stat.S_ISLNK(info.st_mode) or stat.S_ISDIR(info.st_mode):
                continue  # links are not copied into the sandbox; directories are walked
            if not stat.S_ISREG(info.st_mode):
                problems.append(f"{rel} is a {_kind(info.st_mode)}, which the sandbox cannot hold")
            elif info.st_nlink > 1:
                problems.append(
                    f"{rel} has {info.st_nlink} hard links (the sandbox would hold one copy per link)"
                )
            else:
                total += info.st_size
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
    if total > scratch_mb * 1024 * 1024:
        problems.append(f"its files add up to {total / 2**20:.1f} MiB, over scratch_mb={scratch_mb}")
    if problems:
        raise ValueError(
            f"the scratch dir {host} cannot be copied into the sandbox unchanged: {'; '.join(problems[:5])}. "
            "Nothing was changed; move those files out of it, or raise SandboxLimits.scratch_mb"
        )


def _kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return kind
    return "special file"


def open_scratch(proc_root: str, scratch: Path) -> int:
    """An fd on the sandbox's scratch tmpfs, reached through `/proc/<pid>/root` without following links."""
    root = os.open(proc_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return open_inside(root, scratch)
    finally:
        os.close(root)
