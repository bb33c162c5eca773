"""The OS boundary around the kernel: the bubblewrap command line, and whether it works here.

`bwrap_command` builds the sandbox one kernel process (and the probes it forks) runs in:

- its own mount namespace on an empty root where only these exist: /usr (read-only, with the
  /bin, /lib… links of a merged-/usr system), the Python installation and the virtual
  environment (read-only), the `stateguard` package (read-only), a few /etc files the dynamic
  linker, time zones and TLS need, a synthetic /etc/passwd, a fresh /proc and a minimal /dev,
  the task data (read-only, at its own path), the scratch dir (a tmpfs of `scratch_mb` at its
  own path, so relative paths keep working) and small private /tmp and /dev/shm. Hidden
  answers, the state store, traces, checkpoints, other tasks and the repository are absent;
- its own pid, ipc, uts and (network off) network namespace with only a loopback device;
- an unprivileged uid with no capabilities and no-new-privileges (bwrap sets it), a seccomp
  filter (`seccomp.py`) and an RLIMIT_NPROC cap (`max_processes`).

Two ways to get the unprivileged uid. A normal user runs bwrap with a user namespace (uid 65534
inside, the user's uid outside). Root cannot use that for the process cap: RLIMIT_NPROC is not
enforced for host uid 0, which is what uid 65534 maps to. So under root bwrap runs without a
user namespace, keeps only CAP_SETUID/SETGID/SETPCAP, and `setpriv` switches to an unused host
uid (one per kernel, so kernels do not share a process count) and clears every capability
before Python starts.

`check_isolation` is the start-up check: `isolation="bwrap"` where bubblewrap does not work is
an error that names the two fixes (install bubblewrap, or opt into `isolation=process`).
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import stateguard

SANDBOX_UID = 65534  # "nobody": the uid inside a user namespace
ROOT_MODE_UIDS = (2_000_000, 1 << 20)  # root mode: a random host uid from [base, base + span)
SEED_DIR = "/run/stateguard-seed"  # read-only copy of the host scratch, copied into the tmpfs at start
MIB = 1024 * 1024
_PACKAGE_DIR = str(Path(stateguard.__file__).resolve().parent)
# /etc entries a scientific Python stack reads; nothing with secrets (no shadow, no ssh, no passwd).
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "pki",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "mime.types",
    "os-release",
)
_USR_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
FIX = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or accept the weaker process isolation "
    "explicitly: sandbox.isolation=process on the command line of make eval / make demo, or "
    "SandboxLimits(isolation='process')"
)


class IsolationUnavailable(RuntimeError):
    """isolation='bwrap' was asked for, and bubblewrap cannot start a sandbox here."""


def interpreter() -> str:
    """This Python, by a path that keeps its virtual environment: the venv dir resolved (it may be a
    symlink), the executable's own name not (resolving it would leave the venv)."""
    exe = Path(sys.executable)
    return str(exe.parent.resolve() / exe.name)


def readonly_roots() -> list[str]:
    """Real paths the kernel needs read-only besides /usr: Python, the venv, site-packages, stateguard."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, _PACKAGE_DIR}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    # A path inside another one (or inside /usr) comes with it.
    kept = [p for p in real if not _under(p, "/usr")]
    return [p for p in kept if not any(o != p and _under(p, o) for o in kept)]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@functools.cache
def _bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv")


def root_mode() -> bool:
    return os.geteuid() == 0


def _namespaces(network: bool) -> list[str]:
    args = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    if root_mode():
        keep = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")  # for setpriv only; it clears them all
        args += ["--cap-drop", "ALL", *[a for cap in keep for a in ("--cap-add", cap)]]
    else:
        args += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--disable-userns"]
    return args + ["--die-with-parent", "--new-session", "--hostname", "sandbox"]


def _user_switch(uid: int) -> list[str]:
    if not root_mode():
        return []
    setpriv = _setpriv()
    if setpriv is None:
        raise IsolationUnavailable(
            f"running as root, the sandbox needs `setpriv` (util-linux) to drop to an unprivileged uid; {FIX}"
        )
    return [
        setpriv,
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def sandbox_uid() -> int:
    """The uid the kernel runs as (a fresh one per kernel under root, see the module docstring)."""
    return ROOT_MODE_UIDS[0] + secrets.randbelow(ROOT_MODE_UIDS[1]) if root_mode() else SANDBOX_UID


def write_etc(directory: Path, uid: int) -> dict[str, Path]:
    """A passwd and group that name only the sandbox user (some libraries look the uid up)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "passwd": f"root:x:0:0::/:/usr/sbin/nologin\nsandbox:x:{uid}:{uid}::/tmp:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nsandbox:x:{uid}:\n",
    }
    out = {}
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        out[name] = path
    return out


class _Mounts:
    """Mount operations in bwrap order: parents before children, missing parents made 0755 (bwrap's
    own default for a directory it has to create is 0700, which the sandbox uid could not enter)."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, list[str]]] = []

    def add(self, dest: str, *args: str) -> None:
        self.ops.append((dest, list(args)))

    def argv(self) -> list[str]:
        out: list[str] = []
        made = {"/"}
        for dest, args in sorted(self.ops, key=lambda op: Path(op[0]).parts):
            for parent in reversed(Path(dest).parents):
                if str(parent) not in made:
                    out += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            out += args
            made.add(dest)
        return out


def bwrap_command(
    argv: list[str],
    *,
    scratch: Path,
    seed: Path | None,
    task_data: Path | None,
    etc_files: dict[str, Path],
    uid: int,
    scratch_mb: int,
    tmp_mb: int,
    network: bool,
    seccomp_fd: int | None,
    info_fd: int,
) -> list[str]:
    """The full command line that starts `argv` (the kernel) inside the sandbox. `seed`: a host dir
    whose files the kernel copies into the fresh scratch tmpfs (normally the host scratch dir)."""
    bwrap = _bwrap()
    if bwrap is None:
        raise IsolationUnavailable(f"bubblewrap (bwrap) is not installed; {FIX}")
    mounts = _Mounts()
    mounts.add("/usr", "--ro-bind", "/usr", "/usr")
    for name in _USR_LINKS:
        top = Path("/") / name
        if top.is_symlink():
            mounts.add(str(top), "--symlink", os.readlink(top), str(top))
        elif top.is_dir() and not _under(os.path.realpath(top), "/usr"):
            mounts.add(str(top), "--ro-bind", str(top), str(top))
    for root in readonly_roots():
        mounts.add(root, "--ro-bind", root, root)
    for name in _ETC + (("resolv.conf",) if network else ()):
        path = f"/etc/{name}"
        if os.path.exists(path):
            mounts.add(path, "--ro-bind", path, path)
    for name, source in etc_files.items():
        mounts.add(f"/etc/{name}", "--ro-bind", str(source), f"/etc/{name}")
    mounts.add("/proc", "--proc", "/proc")
    mounts.add("/dev", "--dev", "/dev")
    size = str(tmp_mb * MIB)
    mounts.add("/dev/shm", "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm")
    mounts.add("/tmp", "--perms", "1777", "--size", size, "--tmpfs", "/tmp")
    if task_data is not None:
        mounts.add(str(task_data), "--ro-bind", str(task_data), str(task_data))
    mounts.add(str(scratch), "--perms", "0777", "--size", str(scratch_mb * MIB), "--tmpfs", str(scratch))
    if seed is not None:
        mounts.add(SEED_DIR, "--ro-bind", str(seed), SEED_DIR)
    extra = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    return [
        bwrap,
        *_namespaces(network),
        *mounts.argv(),
        "--chdir",
        str(scratch),
        "--info-fd",
        str(info_fd),
        *extra,
        *_user_switch(uid),
        *argv,
    ]


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can start a sandbox like ours here; else what went wrong (probed once)."""
    bwrap = _bwrap()
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        switch = _user_switch(SANDBOX_UID + 1 if root_mode() else SANDBOX_UID)
    except IsolationUnavailable as exc:
        return str(exc)
    argv = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *_namespaces(False),
        *switch,
        "true",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not be run ({type(exc).__name__}: {exc})"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()[:300]
        return f"bwrap cannot create the sandbox here (exit {done.returncode}: {why})"
    return None


def check_isolation(isolation: str) -> None:
    """Raise `IsolationUnavailable` (naming the fixes) when `isolation` cannot be provided here."""
    if isolation == "bwrap":
        problem = bwrap_problem()
        if problem is not None:
            raise IsolationUnavailable(f"sandbox isolation 'bwrap': {problem}; {FIX}")
    elif isolation != "process":
        raise ValueError(f"sandbox isolation {isolation!r}: use 'bwrap' or 'process'")
