"""The kernel's audit hook: defence in depth inside the sandbox, and the barrier of last resort
without it.

Under bubblewrap (isolation="bwrap") the operating system is the boundary: only the
interpreter, the task data and the scratch dir exist, the uid is unprivileged, and no Python
code can change that. The hook then only turns ordinary mistakes into clear errors. With
isolation="process" (no bubblewrap) it is the main file and process barrier, which audit hooks
cannot be (PEP 578): C code that calls libc directly (ctypes, cffi, DuckDB, Arrow, SQLite) is
never seen by it.

Installed once in the kernel process (`install`), after pandas/numpy are imported so their
import-time file use is not refused. From then on every refused operation raises
`PermissionError("sandbox: ...")` in the cell, naming the rule:

- writes (open for writing, create, remove, rename, link, chmod/chown, truncate, utime, mkdir,
  xattrs) only under the scratch dir; task data is read-only;
- reads (open, listdir/scandir, chdir), with isolation="process" only: an allow-list of the
  Python installation, the stateguard package, task data, scratch, /dev/null, /dev/urandom,
  /proc/self, CPU topology, time zones and TLS certificates, checked on `realpath` so a symlink
  planted in scratch cannot reach /etc/shadow (`os.open` with a relative path is refused: it may
  be relative to a dir_fd the event does not carry). Under bwrap whatever exists may be read;
- no processes: os.system, subprocess, exec*, spawn*, posix_spawn, fork, forkpty, kill, killpg,
  pthread_kill; the kernel's own fork (probes) and kill (of its own child) are allowed by checking
  the calling frame's code object against the kernel's trusted functions. The two process calls
  CPython does not audit (`_posixsubprocess.fork_exec`, `signal.pidfd_send_signal`) are deleted
  and their modules cannot be re-imported;
- no sockets or name lookups when the network is off;
- no changing resource limits, no gc object-graph walks;
- no replacing the `__code__` of the kernel's own functions (the way a cell would rewrite the
  kernel's request handlers).
  This closes the most direct route only: module attributes, frame introspection and ctypes still
  reach the kernel's objects; the kernel's tripwire (`tripwire.py`) turns those into a reported
  `kernel_tampered` fault before the next reply (docs/design_sandbox.md lists what it misses).

ctypes is allowed: scikit-learn (threadpoolctl) and other libraries need it, and refusing it
never made the hook a boundary. The hook binds its rules when it is installed, so replacing
names in this module later (`policy._under = ...`) changes nothing.
"""

from __future__ import annotations

import os
import site
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

EXTRA_READ_ROOTS = (
    "/dev/null",
    "/dev/urandom",
    "/proc/self",
    "/sys/devices/system/cpu",
    "/usr/share/zoneinfo",
    "/etc/localtime",
    "/etc/ssl",
    "/usr/share/ca-certificates",
    "/usr/lib/ssl",
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# event -> (path index, dir_fd index, follows symlinks) for each path the event writes. Calls that
# act on the directory entry itself (remove, rename, mkdir) are checked on the entry, so removing
# a symlink that points outside scratch is allowed; calls that follow links are checked on the target.
_WRITE_EVENTS: dict[str, tuple[tuple[int, int | None, bool], ...]] = {
    "os.remove": ((0, 1, False),),
    "os.rmdir": ((0, 1, False),),
    "os.mkdir": ((0, 2, False),),
    "os.rename": ((0, 2, False), (1, 3, False)),
    "os.link": ((0, 2, True), (1, 3, False)),
    "os.symlink": ((1, 2, False),),
    "os.mkfifo": ((0, 2, False),),
    "os.mknod": ((0, 3, False),),
    "os.chmod": ((0, 2, True),),
    "os.chown": ((0, 3, True),),
    "os.chflags": ((0, None, True),),
    "os.lchflags": ((0, None, True),),
    "os.truncate": ((0, None, True),),
    "os.utime": ((0, 3, True),),
    "os.setxattr": ((0, None, True),),
    "os.removexattr": ((0, None, True),),
}
_READ_EVENTS = {"os.listdir": 0, "os.scandir": 0, "os.chdir": 0, "os.listxattr": 0, "os.getxattr": 0}
_PROCESS_EVENTS = frozenset(
    {
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "subprocess.Popen",
        "os.startfile",
        "signal.pthread_kill",
    }
)
_TRUSTED_PROCESS_EVENTS = frozenset({"os.fork", "os.kill"})
_NETWORK_EVENTS = frozenset(
    {
        "socket.__new__",
        "socket.connect",
        "socket.bind",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyname_ex",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
        "socket.sendto",
        "socket.sendmsg",
    }
)
# C functions that start or signal processes WITHOUT raising an audit event. `install` deletes
# them, and refuses re-importing their modules (re-creating an extension module raises "import").
_UNAUDITED = {
    "_posixsubprocess": ("fork_exec",),
    "subprocess": ("_fork_exec",),
    "_signal": ("pidfd_send_signal",),
    "signal": ("pidfd_send_signal",),
}
_NO_REIMPORT = frozenset({"_posixsubprocess", "_signal"})
_FIXED_EVENTS = {
    "resource.setrlimit": "sandbox: resource limits cannot be changed",
    "resource.prlimit": "sandbox: resource limits cannot be changed",
    "gc.get_referrers": "sandbox: walking the object graph (gc.get_referrers/get_objects) is not allowed",
    "gc.get_objects": "sandbox: walking the object graph (gc.get_referrers/get_objects) is not allowed",
}


@dataclass(frozen=True)
class Policy:
    scratch: str
    task_data: str | None
    read_roots: tuple[str, ...]  # empty: reads are not checked (the mount namespace decides)
    network: bool


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def build_policy(scratch: Path, task_data: Path | None, network: bool, *, isolated: bool = False) -> Policy:
    """Resolve every root once; the hook then compares resolved prefixes. `isolated`: under bwrap."""
    import stateguard

    if isolated:
        return Policy(
            scratch=_real(scratch),
            task_data=None if task_data is None else _real(task_data),
            read_roots=(),
            network=network,
        )

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    prefixes = tuple(_real(p) for p in roots)
    # sys.path entries inside the installation (zip, lib-dynload); others (a project root) stay out.
    roots |= {p for p in sys.path if p and _real(p).startswith(prefixes)}
    roots |= {str(Path(stateguard.__file__).parent), *EXTRA_READ_ROOTS, str(scratch)}
    if task_data is not None:
        roots.add(str(task_data))
    real_roots = {_real(r) for r in roots if os.path.exists(r)}
    return Policy(
        scratch=_real(scratch),
        task_data=None if task_data is None else _real(task_data),
        read_roots=tuple(sorted(real_roots)),
        network=network,
    )


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _resolve(path: Any, dir_fd: Any, follow: bool = True) -> str | None:
    """Absolute resolved path of an event argument, or None for an already-open fd.

    With follow=False only the parent directory is resolved: the entry itself may be a symlink.
    """
    if path is None or isinstance(path, int):
        return None
    path = os.fsdecode(path)
    if not os.path.isabs(path):
        base = (
            os.readlink(f"/proc/self/fd/{dir_fd}") if isinstance(dir_fd, int) and dir_fd >= 0 else os.getcwd()
        )
        path = os.path.join(base, path)
    if follow:
        return _real(path)
    head, tail = os.path.split(os.path.normpath(path))
    return _real(path) if tail in ("", ".", "..") else os.path.join(_real(head), tail)


def _strip_unaudited() -> None:
    import shutil
    import subprocess  # noqa: F401 - imported first so it still imports after the strip

    # rmtree's fd-based walk opens entries relative to a dir_fd; the path-based walk is checkable.
    shutil._use_fd_functions = False  # type: ignore[attr-defined]

    for module_name, names in _UNAUDITED.items():
        module = sys.modules.get(module_name)
        for name in names:
            if module is not None and hasattr(module, name):
                delattr(module, name)


def _is_child(pid: Any) -> bool:
    """Whether pid is a child of this process (WNOWAIT: does not reap it)."""
    try:
        os.waitid(os.P_PID, int(pid), os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (ChildProcessError, ValueError, TypeError, OverflowError):
        return False
    return True


def _own_functions() -> frozenset[Any]:
    """Every function (and method) of the stateguard modules loaded in the kernel, the kernel's
    own module (`__main__`) included: the code that reads requests and writes replies."""
    found: set[Any] = set()
    for name, module in list(sys.modules.items()):
        if not (name == "__main__" or name.startswith("stateguard")) or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, types.FunctionType):
                found.add(value)
            elif isinstance(value, type) and value.__module__ == module.__name__:
                found.update(v for v in vars(value).values() if isinstance(v, types.FunctionType))
    return frozenset(found)


def install(policy: Policy, trusted_code: Iterable[CodeType]) -> Callable[[], None]:
    """Add the hook; returns `enter_probe_mode`, which makes every later write refused (forked probes)."""
    _strip_unaudited()
    trusted = frozenset(trusted_code)
    probe_mode = [False]  # a closure cell, not a module global, so cells do not find it by import
    scratch, task = policy.scratch, policy.task_data
    # Bound now: later changes to this module's names must not reach the hook.
    frozen = dict(globals())  # the helpers below see this copy of the module's names, not the module
    under, resolve, is_child = (
        types.FunctionType(f.__code__, frozen, f.__name__, f.__defaults__)
        for f in (_under, _resolve, _is_child)
    )
    real_pid, network = os.getpid, policy.network
    write_events = {k: tuple(v) for k, v in _WRITE_EVENTS.items()}
    read_events, process_events = dict(_READ_EVENTS), frozenset(_PROCESS_EVENTS)
    trusted_events, network_events = frozenset(_TRUSTED_PROCESS_EVENTS), frozenset(_NETWORK_EVENTS)
    no_reimport, fixed = frozenset(_NO_REIMPORT), dict(_FIXED_EVENTS)
    write_flags, read_roots, isabs, getframe = _WRITE_FLAGS, policy.read_roots, os.path.isabs, sys._getframe

    def check_write(op: str, path: str | None) -> None:
        if path is None:
            return
        if probe_mode[0]:
            raise PermissionError(f"sandbox: probes are read-only (refused {op} {path})")
        if task is not None and under(path, task) and not under(path, scratch):
            raise PermissionError(f"sandbox: task data under {task} is read-only (refused {op} {path})")
        if not under(path, scratch):
            raise PermissionError(f"sandbox: writes are allowed only under {scratch} (refused {op} {path})")

    def check_read(op: str, path: str | None) -> None:
        if path is None or not read_roots:
            return
        # /proc/self resolves to /proc/<pid>, and a forked probe has a different pid.
        if any(under(path, root) for root in read_roots) or under(path, f"/proc/{real_pid()}"):
            return
        raise PermissionError(
            f"sandbox: reading {path} is not allowed ({op}); readable are the task data ({task}), "
            f"the scratch dir ({scratch}) and the Python installation"
        )

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            # os.open (mode None) may be relative to a dir_fd the event does not carry: only
            # absolute paths can be checked. (shutil.rmtree is switched to path-based calls.)
            if mode is None and isinstance(path, str | bytes) and not isabs(os.fsdecode(path)):
                raise PermissionError(
                    f"sandbox: os.open needs an absolute path (refused {os.fsdecode(path)!r})"
                )
            resolved = resolve(path, None)
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
                isinstance(flags, int) and flags & write_flags
            )
            if writing:
                check_write("open", resolved)
            else:
                check_read("open", resolved)
        elif event in write_events:
            for path_at, fd_at, follow in write_events[event]:
                dir_fd = args[fd_at] if fd_at is not None and fd_at < len(args) else None
                check_write(event, resolve(args[path_at], dir_fd, follow))
        elif event in read_events:
            check_read(event, resolve(args[read_events[event]] if args else ".", None))
        elif event in process_events:
            # The kernel forks probes and kills them; even its own code may signal only its children.
            trusted_caller = event in trusted_events and getframe(1).f_code in trusted
            if trusted_caller and (event == "os.fork" or is_child(args[0])):
                return
            raise PermissionError(f"sandbox: starting or signalling processes is not allowed ({event})")
        elif event in network_events and not network:
            raise PermissionError(f"sandbox: network access is disabled ({event})")
        elif event == "import" and args and args[0] in no_reimport:
            raise PermissionError(
                f"sandbox: re-importing {args[0]} is not allowed (it has unaudited process calls)"
            )
        elif event in fixed:
            raise PermissionError(fixed[event])
        elif event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__" and args[0] in own:
            # Swapping a function's code in place is how a cell would rewrite the kernel's own
            # request handlers (and every bound method of them). (types.coroutine does it to its
            # own functions, so only the kernel's functions are guarded.)
            raise PermissionError(
                "sandbox: replacing the code of the sandbox kernel's own functions is not allowed"
            )

    own = _own_functions()

    def enter_probe_mode() -> None:
        probe_mode[0] = True

    sys.addaudithook(hook)
    return enter_probe_mode
