"""Shell commands in a bubblewrap sandbox over one scratch repository.

Each command is a fresh `bwrap` process: an empty root with /usr (read-only) and the usual
/bin, /lib symlinks, private /proc, /dev and /tmp, every namespace unshared (no network, no
view of other processes), a cleared environment, and the repository mounted at `/repo` —
read-write for execution, read-only for probes, so a probe cannot change anything even by
accident. The host's other files (this checkout, the benchmark's hidden truth, other runs) are
not in the sandbox at all. CPU time, address space and file size are capped with rlimits and
the wall time with a timeout.

    shell = BwrapShell(Path("runs/x/repo"))
    shell.run("ls -A1 src", writable=False).stdout
"""

from __future__ import annotations

import resource
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict

MOUNT = "/repo"


class ShellResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    rc: int
    stdout: str
    stderr: str
    timed_out: bool = False


class BwrapUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces here."""


def _limits(cpu_s: int, memory_mb: int, file_mb: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb << 20, file_mb << 20))


class BwrapShell:
    def __init__(
        self,
        root: Path,
        *,
        timeout_s: float = 30.0,
        cpu_s: int = 20,
        memory_mb: int = 1024,
        file_mb: int = 64,
        bwrap: str | None = None,
    ):
        self.root = Path(root).resolve()
        self.bwrap = bwrap or shutil.which("bwrap") or "/usr/bin/bwrap"
        if not Path(self.bwrap).is_file():
            raise BwrapUnavailable(
                f"bubblewrap not found ({self.bwrap}); install the Debian package 'bubblewrap'"
            )
        self.timeout_s, self.cpu_s, self.memory_mb, self.file_mb = timeout_s, cpu_s, memory_mb, file_mb

    def argv(self, command: str, *, writable: bool) -> list[str]:
        return [
            self.bwrap,
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--bind" if writable else "--ro-bind",
            str(self.root),
            MOUNT,
            "--chdir",
            MOUNT,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "HOME",
            "/tmp",
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "PYTHONDONTWRITEBYTECODE",
            "1",  # no .pyc files: outcomes compare byte for byte
            "/bin/bash",
            "-c",
            command,
        ]

    def run(self, command: str, *, writable: bool) -> ShellResult:
        try:
            proc = subprocess.run(  # noqa: S603 - a fixed argv; the command runs inside the sandbox
                self.argv(command, writable=writable),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                preexec_fn=lambda: _limits(self.cpu_s, self.memory_mb, self.file_mb),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return ShellResult(
                rc=124, stdout=out, stderr=f"timed out after {self.timeout_s}s", timed_out=True
            )
        refused = "No permissions" in proc.stderr or "Operation not permitted" in proc.stderr
        if proc.returncode != 0 and proc.stderr.startswith("bwrap:") and refused and not proc.stdout:
            raise BwrapUnavailable(f"bubblewrap cannot create a sandbox here: {proc.stderr.strip()}")
        return ShellResult(rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)
