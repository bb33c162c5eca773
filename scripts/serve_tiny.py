#!/usr/bin/env python
"""Serve the tiny overfit Qwen3 test model on 127.0.0.1 with `transformers serve` (CPU, offline).

Thin launcher (the model is built by training.tiny_model): build the model into --model-dir unless
a matching build is there, start `transformers serve MODEL_DIR --host 127.0.0.1 --port PORT` as a
child process (the model is preloaded and pinned, so requests must name exactly MODEL_DIR), wait
until GET /health answers, print the manager endpoint variables, then serve until Ctrl-C or
SIGTERM. `--check` instead sends one chat completion with our tools and prints the parsed action.

    pip install -e '.[dev,train]'
    python scripts/serve_tiny.py --port 8766          # prints STATEGUARD_MANAGER_BASE_URL=... and _MODEL=...
    python scripts/serve_tiny.py --port 0 --check     # one request through LLMClient, then exit
    python scripts/serve_tiny.py --checkpoint runs/sft-debug/checkpoint-final --check   # a trained manager
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

from stateguard.llm.serving import free_port, start_logged, stop, wait_until
from training.tiny_model import DEFAULT_RESPONSE, build_tiny_model, is_built

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument(
        "--port", type=int, default=8766, help="port on 127.0.0.1; 0 picks a free one (default %(default)s)"
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        default=REPO / ".venv" / "models" / "tiny-qwen3",
        help="where the model is built and kept",
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="serve this Hugging Face checkpoint as it is (e.g. `make sft` output) instead of the tiny build",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the model build (default %(default)s)")
    p.add_argument("--no-overfit", action="store_true", help="serve the untrained random model instead")
    p.add_argument(
        "--rebuild", action="store_true", help="build the model again even if a matching build exists"
    )
    p.add_argument("--log", type=Path, default=None, help="server log file (default <model-dir>.server.log)")
    p.add_argument("--startup-timeout", type=float, default=120.0, help="seconds to wait for /health")
    p.add_argument(
        "--check", action="store_true", help="send one chat completion, print the parsed action, exit"
    )
    return p.parse_args(argv)


def healthy(root: str) -> bool:
    with (
        contextlib.suppress(OSError, ValueError),
        urllib.request.urlopen(f"{root}/health", timeout=2.0) as resp,
    ):
        return bool(resp.status == 200 and json.loads(resp.read()).get("status") == "ok")
    return False


def check(base_url: str, model: str) -> int:
    from stateguard.actions import ActionError, tool_schemas
    from stateguard.lifecycle import Regime
    from stateguard.llm.client import LLMClient
    from stateguard.llm.endpoints import EndpointConfig
    from stateguard.parser import parse_response
    from stateguard.policies.prompts import system_prompt

    config = EndpointConfig(role="manager", base_url=base_url, model=model, temperature=0.0, max_tokens=64)
    messages = [
        {"role": "system", "content": system_prompt(Regime.TURN_ALIGNED)},
        {"role": "user", "content": 'OBSERVATION\n{"event_type": "turn_start"}'},
    ]
    with LLMClient(config) as client:
        result = client.chat(messages, tools=tool_schemas())
    print(f"native tool_calls: {len(result.tool_calls)}; content: {result.content!r}")
    usage = result.usage
    print(
        f"usage: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens (estimated: {usage.estimated})"
    )
    print(f"latency {result.latency_s:.2f}s, finish_reason={result.finish_reason}, model={result.model}")
    try:
        parsed = parse_response(result.message)
    except ActionError as e:
        print(f"parse error: {e}", file=sys.stderr)
        return 1
    print("actions:", ", ".join(f"{a.name.value} {a.args.model_dump()}" for a in parsed.actions))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model_dir = (args.checkpoint or args.model_dir).resolve()
    response = None if args.no_overfit else DEFAULT_RESPONSE
    if args.checkpoint is not None:
        if not (model_dir / "config.json").is_file():
            print(
                f"error: {model_dir} is not a Hugging Face checkpoint (no config.json); `make sft` writes "
                "runs/sft/checkpoint-final",
                file=sys.stderr,
            )
            return 2
    elif args.rebuild or not is_built(model_dir, overfit_response=response, seed=args.seed):
        t0 = time.monotonic()
        print(f"building the tiny model into {model_dir} ...", flush=True)
        build_tiny_model(model_dir, overfit_response=response, seed=args.seed)
        print(f"built in {time.monotonic() - t0:.1f}s", flush=True)

    port = args.port or free_port()
    root = f"http://{HOST}:{port}"
    if healthy(root):
        print(f"error: something already answers on {root}; pick another --port", file=sys.stderr)
        return 1
    model = str(model_dir)
    log = args.log or model_dir.with_name(model_dir.name + ".server.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        model,
        "--host",
        HOST,
        "--port",
        str(port),
        "--device",
        "cpu",
        "--dtype",
        "float32",
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",  # the model is a local directory; never reach the Hub
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",  # the CLI otherwise asks PyPI for a newer release
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }

    t_start = time.monotonic()
    proc = start_logged(cmd, env, log)
    try:
        wait_until(proc, lambda: healthy(root), args.startup_timeout, "transformers serve", log)
        print(f"transformers serve ready in {time.monotonic() - t_start:.1f}s; log {log}")
        print(f"STATEGUARD_MANAGER_BASE_URL={root}/v1")
        print(f"STATEGUARD_MANAGER_MODEL={model}", flush=True)
        if args.check:
            return check(f"{root}/v1", model)
        print("serving; Ctrl-C to stop", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        stop(proc)


if __name__ == "__main__":
    sys.exit(main())
