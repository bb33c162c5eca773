"""scripts/serve_local.py stops its child server on SIGTERM and SIGINT, and waits for it.

The launcher runs as a script, as a user starts it; its child is a stub (`--server-module`): a tiny
HTTP server that answers GET /v1/models, writes its pid to a file and, like uvicorn, takes a moment
to shut down after SIGTERM. No llama_cpp, no model: `--gguf` names an empty file.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.processes import alive as _alive

REPO = Path(__file__).resolve().parents[3]
STUB = """
import os, signal, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

class Models(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"data": [{"id": "stub"}]}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

def shut_down(signum, frame):  # a graceful shutdown takes a while, as uvicorn's does
    time.sleep(float(os.environ["STUB_STOP_S"]))
    os._exit(0)

signal.signal(signal.SIGTERM, shut_down)
port = int(sys.argv[sys.argv.index("--port") + 1])
server = HTTPServer(("127.0.0.1", port), Models)
with open(os.environ["STUB_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))
server.serve_forever()
"""


def _wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} after {timeout:.0f}s")
        time.sleep(0.1)


def _launch(tmp: Path, *, sigint_ignored: bool = False, stop_s: float = 0.0) -> subprocess.Popen[str]:
    (tmp / "stub_llama_server.py").write_text(STUB)
    (tmp / "m.gguf").write_bytes(b"")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp)]),
        "STUB_PIDFILE": str(tmp / "child.pid"),
        "STUB_STOP_S": str(stop_s),
    }
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "serve_local.py"),
        "--gguf",
        str(tmp / "m.gguf"),
        "--port",
        "0",
        "--log",
        str(tmp / "server.log"),
        "--server-module",
        "stub_llama_server",
        "--startup-timeout",
        "60",
    ]

    def as_a_background_job() -> None:  # a non-interactive shell's `cmd &` ignores SIGINT in the job
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with (tmp / "launcher.out").open("w") as out:
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            preexec_fn=as_a_background_job if sigint_ignored else None,
        )


@pytest.mark.parametrize(
    ("signals", "sigint_ignored", "stop_s"),
    [
        pytest.param([signal.SIGTERM], False, 0.0, id="sigterm"),
        pytest.param([signal.SIGINT], False, 0.0, id="sigint"),
        pytest.param([signal.SIGINT], True, 0.0, id="sigint-background-job"),
        pytest.param([signal.SIGTERM, signal.SIGTERM], False, 2.0, id="second-sigterm-while-stopping"),
    ],
)
def test_a_stop_signal_stops_the_child_and_waits_for_it(
    tmp_path: Path, signals: list[signal.Signals], sigint_ignored: bool, stop_s: float
) -> None:
    launcher = _launch(tmp_path, sigint_ignored=sigint_ignored, stop_s=stop_s)
    child = 0
    try:
        out = tmp_path / "launcher.out"
        _wait_for(lambda: "serving;" in out.read_text() or launcher.poll() is not None, 60, "server")
        assert launcher.poll() is None, out.read_text()
        child = int((tmp_path / "child.pid").read_text())
        assert _alive(child)
        for sig in signals:
            launcher.send_signal(sig)
            time.sleep(0.5)
        assert launcher.wait(timeout=30) == 0, out.read_text()
        assert not _alive(child), "the launcher exited and left its child server running"
        assert f"{signals[0].name}: stopping the server" in out.read_text()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_gguf_with_another_sha256_is_not_served(tmp_path: Path) -> None:
    """`--gguf` with `--sha256`: a file whose digest differs stops the launcher before any server starts."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"not the pinned file")
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "serve_local.py"),
        "--gguf",
        str(gguf),
        "--sha256",
        "0" * 64,
    ]
    run = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert run.returncode == 1
    assert (
        "nothing was loaded" in run.stderr
        and hashlib.sha256(b"not the pinned file").hexdigest() in run.stderr
    )
    assert "serving" not in run.stdout
