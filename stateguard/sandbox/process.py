"""Parent-side handle on one kernel process: start it, ask it things against deadlines, kill it.

The kernel gets a minimal environment (no API keys or tokens of the parent leak into it),
cwd = scratch dir, stdout discarded, stderr to a pipe that `StderrLog` drains (bounded: it keeps
the first and last few KiB in memory and at most `LOG_FILE_BYTES` in `kernel.stderr.log`, so a
cell that writes a GiB to fd 2 costs the parent no memory), single-threaded BLAS, and:

- `isolation="bwrap"`: the bubblewrap sandbox of `isolation.py` with the seccomp filter of
  `seccomp.py`; bwrap reports the sandbox's pid 1 on `--info-fd`, through which the parent
  mirrors the scratch tmpfs (`scratch.Mirror`) and kills the whole sandbox;
- `isolation="process"`: the weaker mode, a plain child process; with the network off and
  `unshare -n` working here, in an empty network namespace.

Requests use the channels of `protocol.py` (a socket for requests, a fresh pipe per reply).
Any failure to get a well-formed answer in time (EOF, broken pipe, deadline, malformed or
extra frames) becomes `KernelDied` with a description of how the process ended; the workspace
then recovers.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from stateguard.sandbox import cgroup, isolation, replies
from stateguard.sandbox.checkpoints import BlobFile
from stateguard.sandbox.limits import SandboxLimits
from stateguard.sandbox.protocol import (
    ChannelClosed,
    DeadlineExceeded,
    FrameReader,
    ProtocolError,
    send_blob_file,
    send_request,
)
from stateguard.sandbox.scratch import open_scratch
from stateguard.sandbox.seccomp import build_filter

STARTUP_TIMEOUT_S = 60.0
END_GRACE_S = 2.0  # how long the reply pipe may stay open after the reply before it counts as held open
LOG_FILE_BYTES = 1 << 20
LOG_KEEP_BYTES = 8192
MIB = 1024 * 1024
_PACKAGE_ROOT = str(Path(isolation.__file__).resolve().parent.parent.parent)


class KernelDied(RuntimeError):
    """The kernel process is gone (or was killed because it stopped answering)."""


class KernelTampered(KernelDied):
    """The kernel found that code it ran had rewritten its answering code, and stopped (tripwire.py).
    Nothing that kernel said after the change can be believed, and the cell must not be replayed."""


@functools.cache
def network_namespace_available() -> bool:
    """Whether `unshare -n` can start a process in a fresh network namespace here (process isolation)."""
    exe = shutil.which("unshare")
    if exe is None:
        return False
    try:
        return subprocess.run([exe, "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# A checkpoint streams through its reply pipe: at the default 64 KiB the kernel and the parent take
# turns every 64 KiB (a context switch and a read each); 1 MiB, the most an unprivileged process may
# ask for (/proc/sys/fs/pipe-max-size), cuts those sixteenfold. Linux only; elsewhere the default stays.
PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def widen_pipe(fd: int) -> int | None:
    """Ask for a PIPE_BYTES buffer on a pipe; its size after, or None where it cannot be changed."""
    with contextlib.suppress(OSError):
        return fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    return None


def child_environment(scratch_dir: Path) -> dict[str, str]:
    scratch = str(scratch_dir)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "MPLCONFIGDIR": scratch,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": _PACKAGE_ROOT,
        "USER": "sandbox",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        # `-m` would put the scratch dir (the cwd) first on sys.path while the kernel imports its own
        # modules: a `json.py` a cell wrote there would run in the next kernel before its tripwire is
        # armed. The kernel adds the scratch dir itself once its imports are done (kernel.py).
        "PYTHONSAFEPATH": "1",
        "PYTHONFAULTHANDLER": "1",
        # One thread per kernel: predictable CPU accounting, and fork-safe probes.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        # Each malloc arena reserves address space that RLIMIT_AS counts.
        "MALLOC_ARENA_MAX": "2",
    }


class StderrLog:
    """Drains the kernel's stderr pipe on a daemon thread, keeping bounded head and tail."""

    def __init__(self, read_fd: int, path: Path):
        self.path = path
        self._fd = read_fd
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self._file: IO[bytes] = path.open("wb")
        self._thread = threading.Thread(target=self._drain, name="sandbox-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._fd, 1 << 16):
                room = LOG_FILE_BYTES - self.total
                if room > 0:
                    self._file.write(chunk[:room])
                    if len(chunk) >= room:
                        self._file.write(b"\n[stateguard: the rest of the kernel's stderr is not kept]\n")
                    self._file.flush()
                self.total += len(chunk)
                if len(self._head) < LOG_KEEP_BYTES:
                    self._head += chunk[: LOG_KEEP_BYTES - len(self._head)]
                self._tail = (self._tail + chunk)[-LOG_KEEP_BYTES:]
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._file.close()

    def wait(self, timeout: float) -> None:
        self._thread.join(timeout)

    def tail(self, chars: int = 600) -> str:
        text = (
            bytes(self._tail if self.total > LOG_KEEP_BYTES else self._head).decode(errors="replace").strip()
        )
        if text.startswith(
            "Fatal Python error"
        ):  # faulthandler dumps are long; the first line names the fault
            return text.splitlines()[0]
        return text[-chars:]


def _zombie(pid: int) -> bool:
    """Ended and waiting to be reaped (by the kernel, at its next cell): nothing left to kill."""
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    return True  # gone already


def _probe_child_of(kernel: int, pid: int, probe_child: int) -> bool:
    """Whether host `pid` is the kernel's child numbered `probe_child` inside the sandbox's pid
    namespace (the last `NSpid` entry; the only one without bubblewrap)."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
        return int(fields["PPid"]) == kernel and int(fields["NSpid"].split()[-1]) == probe_child
    except (OSError, KeyError, ValueError, IndexError):
        return False


def _descendants(root: int, *, include_root: bool, move: Any = None) -> Iterator[int]:
    """The process tree under `root`, parents first (`move` is called on each before its children
    are listed, so a child forked meanwhile is born inside the cgroup it was moved to)."""
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid != root or include_root:
            if move is not None:
                move(pid)
            yield pid
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{pid}/task"):
                stack += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]


def _read_info(fd: int, deadline: float) -> dict[str, Any]:
    """bwrap's --info-fd JSON (it names the sandbox's pid 1); {} if bwrap ended before writing it."""
    data = b""
    try:
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
            with contextlib.suppress(ValueError):
                return dict(json.loads(data))
    finally:
        os.close(fd)
    return {}


class KernelProcess:
    def __init__(
        self,
        *,
        scratch_dir: Path,
        task_data_dir: Path | None,
        limits: SandboxLimits,
        log_path: Path,
        private_dir: Path,
        seed_dir: Path | None,
        uid: int | None = None,
    ):
        self.limits = limits
        self.isolation = limits.isolation
        self.scratch_dir = scratch_dir
        self.network_namespace = not limits.network and (
            self.isolation == "bwrap" or network_namespace_available()
        )
        self.sandbox_pid: int | None = None  # bwrap: host pid of the sandbox's pid 1
        self._kernel_pid: int | None = None
        self.reap = False  # ask the kernel to reap ended children before the next cell
        # The waiting probe child the kernel forked after the last cell (sandbox/probe_fork.py), as
        # the sandbox numbers it: not a process the cell left running.
        self.probe_child: int | None = None
        self._task_fd: int | None = None  # /proc/<kernel>/task, for its thread count
        self._closed = False
        self._exit_note: str | None = None
        self.tampered: str | None = None  # what the kernel's tripwire reported, if it fired
        self._pending: FrameReader | None = None  # the reply pipe of a request whose blob is still to come
        self._previous: FrameReader | None = None  # the last reply's pipe, until it is seen to end
        self._scratch_fd: int | None = None
        self._listing_memo = replies.ListingMemo()  # one per kernel: a new kernel's entries are all new
        self._cmd, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [isolation.interpreter(), "-m", "stateguard.sandbox.kernel", str(child.fileno())]
        keep = [child.fileno()]
        closing: list[int] = []
        info_read = None
        if self.isolation == "bwrap":
            isolation.check_isolation("bwrap")
            uid = isolation.sandbox_uid() if uid is None else uid
            etc = isolation.write_etc(private_dir / "sandbox-etc", uid)
            seccomp_fd = None
            program = build_filter()
            if program is not None:
                seccomp_fd = os.memfd_create("stateguard-seccomp")
                os.write(seccomp_fd, program)
                os.lseek(seccomp_fd, 0, os.SEEK_SET)
                keep.append(seccomp_fd)
                closing.append(seccomp_fd)
            info_read, info_write = os.pipe()
            keep.append(info_write)
            closing.append(info_write)
            argv = isolation.bwrap_command(
                argv,
                scratch=scratch_dir,
                seed=seed_dir,
                task_data=task_data_dir,
                etc_files=etc,
                uid=uid,
                scratch_mb=limits.scratch_mb,
                tmp_mb=limits.tmp_mb,
                network=limits.network,
                seccomp_fd=seccomp_fd,
                info_fd=info_write,
            )
        elif self.network_namespace:
            argv = [shutil.which("unshare") or "unshare", "-n", *argv]
        # The tree's resource envelope (cgroup.py); None where this machine offers no writable cgroup.
        self.envelope = cgroup.try_create(limits.memory_mb, limits.max_processes + 2)
        self.start_notes: list[str] = []
        if self.envelope is None:
            self.start_notes.append(
                "sandbox: no cgroup for the kernel's process tree here "
                f"({cgroup.why_unavailable()}); memory_mb, max_processes and the CPU limit apply per process only"
            )
        err_read, err_write = os.pipe()
        closing.append(err_write)
        try:
            self.proc = subprocess.Popen(
                argv,
                pass_fds=keep,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err_write,
                cwd=scratch_dir,
                env=child_environment(scratch_dir),
                start_new_session=True,
            )
        except BaseException:
            os.close(err_read)
            if info_read is not None:
                os.close(info_read)
            raise
        finally:
            child.close()
            for fd in closing:
                os.close(fd)
        self.log = StderrLog(err_read, log_path)
        self.log_path = log_path
        config = {
            "scratch_dir": str(scratch_dir),
            "task_data_dir": None if task_data_dir is None else str(task_data_dir),
            "seed_dir": isolation.SEED_DIR if self.isolation == "bwrap" and seed_dir is not None else None,
            "isolation": self.isolation,
            "limits": limits.model_dump(),
        }
        try:
            if info_read is not None:
                info = _read_info(info_read, time.monotonic() + STARTUP_TIMEOUT_S)
                if "child-pid" not in info:
                    self._wait(5.0)
                    self.log.wait(1.0)
                    raise KernelDied(
                        f"bubblewrap could not start the sandbox: {self.log.tail() or 'no message'}"
                    )
                self.sandbox_pid = int(info["child-pid"])
            self._enter_envelope()
            ready = self.request(config, STARTUP_TIMEOUT_S)
            if not ready.ready:
                raise KernelDied(f"the sandbox kernel did not start: {ready}")
            self.start_notes += list(ready.notes)
            self._kernel_pid = self.pid  # read once: it is asked after every cell
        except KernelDied:
            self.kill()
            self.close()
            raise

    def _tree_root(self) -> int:
        return self.sandbox_pid if self.sandbox_pid is not None else self.proc.pid

    def _enter_envelope(self) -> None:
        """Move the sandbox's processes into the cgroup, parents before children, before the kernel
        has its configuration (so before any cell code can start anything)."""
        if self.envelope is None:
            return
        try:
            list(_descendants(self._tree_root(), include_root=True, move=self.envelope.add))
        except OSError as exc:
            self.envelope.remove()
            self.envelope = None
            self.start_notes.append(
                f"sandbox: the kernel could not be put in its cgroup ({exc}); limits apply per process only"
            )

    def _strays(self) -> list[int]:
        """Processes of the sandbox other than its pid 1 and the kernel: what cells left running."""
        kernel = self.pid
        keep = {self.proc.pid, kernel, self.sandbox_pid}
        found = self.envelope.pids() if self.envelope is not None else []
        found = found or list(_descendants(self._tree_root(), include_root=False))
        strays = [p for p in found if p not in keep and not _zombie(p)]
        waiting = self.probe_child
        return [p for p in strays if waiting is None or not _probe_child_of(kernel, p, waiting)]

    def _kernel_threads(self) -> int:
        """The kernel's threads: procfs gives a task dir a link count of 2 + threads, recomputed at
        every fstat of a descriptor kept open on it (no syscall in the kernel, about 1 us here)."""
        try:
            if self._task_fd is None:
                self._task_fd = os.open(f"/proc/{self.pid}/task", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            return os.fstat(self._task_fd).st_nlink - 2
        except OSError:
            return 0

    def end_cell(self) -> list[str]:
        """Kill every process a cell left behind (its CPU budget ended with it); notes naming them.
        With a cgroup, two counter reads say whether there is anything beyond the sandbox's pid 1
        and the kernel's threads (the common case costs a few us)."""
        if self.envelope is not None:
            threads, count = self._kernel_threads(), self.envelope.count()
            # (With a waiting probe child the count is one more, so `_strays` below tells it apart.)
            if threads > 0 and count is not None and count <= threads + (self.sandbox_pid is not None):
                return []
        self.reap = True  # the next cell first reaps what ended (a zombie holds a process slot)
        killed: list[str] = []
        done: set[int] = set()
        for _ in range(5):  # a process may start another while we kill: a few rounds
            strays = [p for p in self._strays() if p not in done]  # (killed ones linger until reaped)
            if not strays:
                break
            done.update(strays)
            for pid in strays:
                name = ""
                with contextlib.suppress(OSError):
                    name = Path(f"/proc/{pid}/comm").read_text().strip()
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(f"{name or '?'} (pid {pid})")
        if not killed:
            return []
        # SIGKILL is delivered asynchronously: let them end before the next cell reaps. A killed process
        # must still be scheduled to exit, which on a loaded machine can take far longer than usual;
        # the bound is the grace period (the loop ends as soon as all are zombies, a few ms here).
        deadline = time.monotonic() + max(1.0, self.limits.grace_seconds)
        while time.monotonic() < deadline and not all(_zombie(p) for p in done):
            time.sleep(0.002)
        return [
            "sandbox: killed process(es) the cell left running (a cell's processes end with it): "
            + ", ".join(killed[:10])
            + (f" and {len(killed) - 10} more" if len(killed) > 10 else "")
        ]

    def cpu_seconds(self) -> float | None:
        """CPU time of the kernel's whole process tree so far (None without a cgroup)."""
        return None if self.envelope is None else self.envelope.cpu_seconds()

    @property
    def pid(self) -> int:
        """The host pid of the Python kernel itself (under bwrap: the child of the sandbox's pid 1)."""
        if self.sandbox_pid is None:
            return self.proc.pid
        if self._kernel_pid is not None:
            return self._kernel_pid
        with contextlib.suppress(OSError, ValueError, IndexError):
            children = Path(f"/proc/{self.sandbox_pid}/task/{self.sandbox_pid}/children").read_text().split()
            return int(children[0])
        return self.proc.pid

    def scratch_fd(self) -> int | None:
        """bwrap: an fd on the sandbox's scratch tmpfs (opened once, through /proc/<pid>/root); else None."""
        if self.sandbox_pid is None:
            return None
        if self._scratch_fd is None:
            self._scratch_fd = open_scratch(f"/proc/{self.sandbox_pid}/root", self.scratch_dir)
        return self._scratch_fd

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(
        self,
        message: dict[str, Any],
        timeout: float,
        *,
        blob: BlobFile | None = None,
        blob_follows: bool = False,
    ) -> Any:
        """Send one request (plus an optional checkpoint: its file, then its parts' files, the part
        keys named in the request) and return the reply, checked against its op's schema
        (`replies.py`). With `blob_follows`, an ok reply leaves its pipe open for `read_blob_into`."""
        deadline = time.monotonic() + timeout
        read_fd, write_fd = os.pipe()
        if blob_follows:
            widen_pipe(read_fd)
        reader = FrameReader(read_fd)
        nonce = secrets.token_hex(8)
        if blob is not None and blob.parts:
            message = {**message, "parts": [key for key, _ in blob.parts]}
        try:
            self._end_previous()
            try:
                send_request(self._cmd, write_fd, {**message, "nonce": nonce})
            finally:
                os.close(write_fd)
            if blob is not None:
                send_blob_file(self._cmd.fileno(), blob.path, blob.size)
                for _, part in blob.parts:
                    send_blob_file(self._cmd.fileno(), part.path, part.size)
            raw = reader.read_message(deadline)
            if raw.get("nonce") != nonce:
                raise ProtocolError("a reply without this request's nonce (a frame forged inside the kernel)")
            if "kernel_tampered" in raw:
                raise KernelTampered(str(raw["kernel_tampered"])[:500])
            reply = replies.validate(message.get("op"), raw, self._listing_memo)
            if blob_follows and reply.ok:
                announced = reply.size + sum(size for _, size in reply.parts)
                if announced > self.limits.checkpoint_mb * MIB:
                    raise ProtocolError(
                        f"it announced a checkpoint of {announced} bytes, over checkpoint_mb={self.limits.checkpoint_mb}"
                    )
            if blob_follows and reply.ok:
                self._pending = reader
            else:
                self._previous = reader
            reader = None  # type: ignore[assignment]  # kept open: ended by _end_previous / read_blob_into
            return reply
        except Exception as exc:
            raise self._failure(exc, timeout) from exc
        finally:
            if reader is not None:
                os.close(read_fd)

    def _end_previous(self) -> None:
        """The last reply's pipe must have ended right after the reply (checked here, not while the
        caller waits: the kernel closes it a moment after writing)."""
        reader, self._previous = self._previous, None
        if reader is not None:
            try:
                reader.expect_end(time.monotonic() + END_GRACE_S)
            finally:
                os.close(reader.fd)

    def read_blob_into(self, out: BinaryIO, timeout: float, size: int, *, last: bool = True) -> int:
        """Stream the next blob the last reply announced into `out`: exactly `size` bytes, or a kernel
        fault. `last=False`: more blobs of the same reply follow."""
        reader, self._pending = self._pending, None
        if reader is None:
            raise KernelDied("no blob was announced by the last reply")
        try:
            size = reader.read_blob_into(out, time.monotonic() + timeout, size)
        except Exception as exc:
            os.close(reader.fd)
            raise self._failure(exc, timeout) from exc
        if last:
            self._previous = reader
        else:
            self._pending = reader
        return size

    def _failure(self, exc: Exception, timeout: float) -> KernelDied:
        if isinstance(exc, KernelTampered):
            self._wait(2.0)  # it exits by itself right after the report
            self.tampered = str(exc)
            self._exit_note = (
                f"kernel_tampered: code it ran rewrote the kernel's answering code ({exc}), so it stopped"
            )
            return KernelTampered(self.describe_exit())
        if isinstance(exc, DeadlineExceeded):
            self.kill()
            self._exit_note = f"it did not answer within {timeout:g} s, so it was killed (SIGKILL)"
        elif isinstance(exc, ChannelClosed | BrokenPipeError | ConnectionResetError):
            self._wait(2.0)
        elif isinstance(exc, ProtocolError | replies.MalformedReply):
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
        elif self.sandbox_pid is not None and code > 128 and code - 128 in signal.valid_signals():
            how = f"it was killed by signal {signal.Signals(code - 128).name}"  # bwrap reports 128 + signal
        else:
            how = f"it exited with status {code}"
        oom = self.envelope.oom_kills() if self.envelope is not None and "SIGKILL" in how else 0
        if oom:  # say who sent the SIGKILL: the death is the memory limit, not a crash
            how += (
                f" (the envelope's OOM killer has ended {oom} process(es) of the tree so far: "
                f"together they reached memory_mb={self.limits.memory_mb} MiB)"
            )
        self.log.wait(0.5)  # a dying kernel's last words (faulthandler) are still in the pipe
        tail = self.log.tail()
        return f"the sandbox process (pid {self.pid}) died: {how}" + (
            f"; its stderr ends with: {tail}" if tail else ""
        )

    def log_tail(self, chars: int = 600) -> str:
        return self.log.tail(chars)

    def kill(self) -> None:
        if self.sandbox_pid is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.sandbox_pid, signal.SIGKILL)  # pid 1 of the sandbox: the namespace goes with it
        if self.envelope is not None:  # process isolation: the kernel's children do not die with it
            for pid in self.envelope.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        """Closing the request socket ends the kernel's loop; kill it if it does not leave quickly."""
        if self._closed:
            return
        self._closed = True
        for reader in (self._pending, self._previous):
            if reader is not None:
                with contextlib.suppress(OSError):
                    os.close(reader.fd)
        self._pending = self._previous = None
        if self._scratch_fd is not None:
            os.close(self._scratch_fd)  # the tmpfs is freed with the last reference to it
            self._scratch_fd = None
        if self._task_fd is not None:
            os.close(self._task_fd)
            self._task_fd = None
        self._cmd.close()
        self._wait(2.0)
        self.log.wait(2.0)
        if self.envelope is not None:
            if self.envelope.pids():
                self.kill()
            deadline = time.monotonic() + 2.0
            while self.envelope.pids() and time.monotonic() < deadline:
                time.sleep(0.01)  # SIGKILLed processes leave the cgroup once reaped
            self.envelope.remove()
