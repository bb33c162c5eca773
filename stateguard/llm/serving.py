"""Process helpers shared by the serving launchers (scripts/serve_*.py): ports, readiness, logs, stop.

port = free_port(); proc = subprocess.Popen([...]); wait_until(proc, lambda: ready(url), 120, "server", log)
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    """A port the OS reports free on `host` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


def log_tail(path: Path, n: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def wait_until(
    proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float, name: str, log: Path
) -> None:
    """Poll `ready()` until it is true; SystemExit with the log tail if the process dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"{name} exited with code {proc.returncode} before it was ready; log {log}:\n{log_tail(log)}"
            )
        if ready():
            return
        time.sleep(0.5)
    raise SystemExit(f"{name} not ready after {timeout:.0f}s; log {log}:\n{log_tail(log)}")


def stop(proc: subprocess.Popen[bytes], grace_s: float = 15) -> None:
    """Terminate, then kill if it does not exit within `grace_s`."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_logged(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start a server with stdout+stderr in `log`; SIGTERM to the launcher becomes KeyboardInterrupt so its
    `finally: stop(proc)` runs and no server is left behind."""

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    with log.open("wb") as log_f:
        return subprocess.Popen(
            cmd, stdout=log_f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
