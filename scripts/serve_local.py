#!/usr/bin/env python
"""Serve a real small chat model on 127.0.0.1 with llama-cpp-python's OpenAI-compatible server.

Thin launcher (the logic is in stateguard.llm.local_model): assemble and sha256-verify the GGUF
from its installed packages, start llama-cpp-python's server as a child process (through
`stateguard.llm.llama_cpp_server`, which adds llama.cpp's GET /props so clients can read the
context window), wait until GET /v1/models answers, print the base URL, then serve until Ctrl-C,
SIGINT or SIGTERM, any of which stops the child and waits for it (SIGINT too when a shell started
the launcher in the background with SIGINT ignored; a second signal while stopping does not cut the
stop short). `--check` instead sends one chat completion, prints tokens/s and exits.

    make setup-local && make serve-local            # or: python scripts/serve_local.py --model 0.5b
    python scripts/serve_local.py --check --max-tokens 64
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any

from stateguard.llm.local_model import (
    DEFAULT_MODEL,
    REGISTRY,
    LocalModelError,
    assemble,
    file_sha256,
    get_model,
)
from stateguard.llm.serving import free_port, log_tail, port_in_use, stop, wait_until

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent
SERVER_MODULE = "stateguard.llm.llama_cpp_server"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(Exception):
    """SIGINT or SIGTERM arrived: stop the child server and exit."""


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    for sig in STOP_SIGNALS:  # the first signal stops the child; later ones must not cut that short
        signal.signal(sig, signal.SIG_IGN)
    raise Stopped(signal.Signals(signum).name)


def start_server(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start the child server (stdout+stderr in `log`) with SIGINT and SIGTERM raising `Stopped` here.
    Both are held back from the moment the handlers are set until the caller unblocks them, after it
    holds the child (`release_stop_signals`), so no signal can leave a child nobody stops; the child
    itself starts with the signal mask the launcher had."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    for sig in STOP_SIGNALS:  # SIGINT too: a shell's `cmd &` starts the launcher with SIGINT ignored
        signal.signal(sig, _on_stop_signal)
    try:
        with log.open("wb") as log_f:
            return subprocess.Popen(
                cmd,
                stdout=log_f,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, previous),
            )
    except BaseException:
        release_stop_signals()
        raise


def release_stop_signals() -> None:
    """Deliver SIGINT and SIGTERM again (one held back since `start_server` is raised now)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop the child and wait for it (SIGTERM, then SIGKILL after 15 s); signals no longer interrupt."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    stop(proc)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument(
        "--model", default=DEFAULT_MODEL, choices=sorted(REGISTRY), help="registry key (default %(default)s)"
    )
    p.add_argument(
        "--gguf",
        type=Path,
        default=None,
        help="serve this GGUF file instead (e.g. the manager.gguf of `make sft CONFIG=local`)",
    )
    p.add_argument(
        "--sha256",
        default=None,
        help="with --gguf: the file's expected sha256; the server does not start on another (the file's "
        "own sha256 is printed either way, to pin it next time)",
    )
    p.add_argument(
        "--port", type=int, default=8765, help="port on 127.0.0.1; 0 picks a free one (default %(default)s)"
    )
    p.add_argument(
        "--threads", type=int, default=1, help="CPU threads for generation and prompt (default %(default)s)"
    )
    p.add_argument("--ctx", type=int, default=4096, help="context window in tokens (default %(default)s)")
    p.add_argument(
        "--cache-dir", type=Path, default=REPO / ".venv" / "models", help="where the joined .gguf is kept"
    )
    p.add_argument(
        "--log", type=Path, default=None, help="server log file (default <cache-dir>/<model>.server.log)"
    )
    p.add_argument("--startup-timeout", type=float, default=300.0, help="seconds to wait for /v1/models")
    p.add_argument("--check", action="store_true", help="send one chat completion, print tokens/s, exit")
    p.add_argument("--prompt", default="Write a Python function that returns the sum of a list of numbers.")
    p.add_argument("--max-tokens", type=int, default=128, help="completion budget in --check mode")
    p.add_argument(
        "--server-module",
        default=SERVER_MODULE,
        help="the child: `python -m MODULE` with llama_cpp.server's flags (default %(default)s; tests use a stub)",
    )
    args = p.parse_args(argv)
    if args.sha256 is not None and args.gguf is None:
        p.error("--sha256 checks a --gguf file; the registry's models are pinned already")
    return args


def http_json(url: str, body: dict[str, Any] | None = None, timeout: float = 5.0) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        out: dict[str, Any] = json.loads(resp.read())
        return out


def wait_ready(proc: subprocess.Popen[bytes], base_url: str, timeout: float, log: Path) -> None:
    def ready() -> bool:
        with contextlib.suppress(OSError, ValueError):
            return bool(http_json(f"{base_url}/models", timeout=2.0).get("data"))
        return False

    wait_until(proc, ready, timeout, "llama_cpp.server", log)


def check(base_url: str, model: str, prompt: str, max_tokens: int) -> None:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
    }
    t0 = time.monotonic()
    out = http_json(f"{base_url}/chat/completions", body, timeout=600.0)
    wall = time.monotonic() - t0
    usage = out.get("usage") or {}
    n = int(usage.get("completion_tokens") or 0)
    text = out["choices"][0]["message"].get("content") or ""
    print(f"--- completion ({usage.get('prompt_tokens')} prompt tokens, {n} completion tokens) ---")
    print(text)
    print(f"--- {n} tokens in {wall:.2f}s = {n / wall:.1f} tokens/s (completion tokens / wall time)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spec = get_model(args.model)
    name = spec.name
    try:
        t0 = time.monotonic()
        if args.gguf is not None:  # a file we wrote ourselves (training/sft/gguf.py), served as given
            if not args.gguf.is_file():
                raise LocalModelError(
                    f"{args.gguf} does not exist; `make sft CONFIG=local` writes runs/sft-local/manager.gguf"
                )
            digest = file_sha256(args.gguf)
            if args.sha256 is not None and digest != args.sha256.strip().lower():
                raise LocalModelError(
                    f"{args.gguf} has sha256 {digest}, not the expected {args.sha256}; nothing was loaded. "
                    "Fix: pass the file you meant, or its own sha256 if it changed on purpose"
                )
            path, name, licence = (
                args.gguf,
                args.gguf.stem,
                f"a file you wrote, sha256 {digest}"
                + (" (as expected)" if args.sha256 else " (unchecked: pass --sha256 to pin it)")
                + "; its base model's license applies",
            )
        else:
            path, licence = assemble(spec, args.cache_dir), spec.license
        print(f"model {name}: {path} ({time.monotonic() - t0:.1f}s) - {licence}", flush=True)
    except LocalModelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        if args.server_module == SERVER_MODULE:
            import llama_cpp  # noqa: F401  (only to fail early with a useful message)
    except ImportError:
        print("error: llama_cpp is not installed. Fix: make setup-local", file=sys.stderr)
        return 1

    port = args.port or free_port()
    if port_in_use(port):
        print(
            f"error: port {port} on {HOST} is already in use; pick another with --port (PORT= in make)",
            file=sys.stderr,
        )
        return 1
    base_url = f"http://{HOST}:{port}/v1"
    log = args.log or args.cache_dir / f"{name}.server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        args.server_module,
        "--model",
        str(path),
        "--model_alias",
        name,
        "--host",
        HOST,
        "--port",
        str(port),
        "--n_threads",
        str(args.threads),
        "--n_threads_batch",
        str(args.threads),
        "--n_ctx",
        str(args.ctx),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}

    t_start = time.monotonic()
    proc = start_server(cmd, env, log)
    try:
        release_stop_signals()  # a signal that came while the child started is raised here
        wait_ready(proc, base_url, args.startup_timeout, log)
        print(
            f"server ready in {time.monotonic() - t_start:.1f}s (threads={args.threads}, ctx={args.ctx}); log {log}"
        )
        print(f"STATEGUARD_LOCAL_BASE_URL={base_url}")
        print(f"STATEGUARD_LOCAL_MODEL={name}", flush=True)
        if args.check:
            check(base_url, name, args.prompt, args.max_tokens)
            return 0
        print("serving; Ctrl-C (SIGINT) or SIGTERM to stop", flush=True)
        return proc.wait()
    except Stopped as e:
        print(f"{e}: stopping the server", flush=True)
        return 0
    except (urllib.error.URLError, OSError, KeyError) as e:
        print(f"error: {e}; server log {log}:\n{log_tail(log)}", file=sys.stderr)
        return 1
    finally:
        stop_server(proc)


if __name__ == "__main__":
    sys.exit(main())
