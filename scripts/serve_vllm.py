"""Launch vLLM's OpenAI-compatible server for a manager checkpoint and wait until it is healthy.

    python scripts/serve_vllm.py                        # or: make serve
    python scripts/serve_vllm.py model=/ckpt port=8001  # Hydra overrides of configs/serve/vllm.yaml

GPU only: on a machine without CUDA it stops at once and points to `make serve-local`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import hydra
from omegaconf import DictConfig

ROOT = Path(__file__).resolve().parents[1]


def _fail(message: str) -> None:
    print(f"make serve: {message}", file=sys.stderr)
    raise SystemExit(2)


def _command(cfg: DictConfig) -> list[str]:
    return [
        "vllm",
        "serve",
        str(cfg.model),
        "--served-model-name",
        str(cfg.served_model_name),
        "--host",
        str(cfg.host),
        "--port",
        str(cfg.port),
        "--tensor-parallel-size",
        str(cfg.tensor_parallel_size),
        "--max-model-len",
        str(cfg.max_model_len),
        "--gpu-memory-utilization",
        str(cfg.gpu_memory_utilization),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        str(cfg.tool_call_parser),
        "--reasoning-parser",
        str(cfg.reasoning_parser),
        *map(str, cfg.extra_args),
    ]


@hydra.main(version_base=None, config_path=str(ROOT / "configs" / "serve"), config_name="vllm")
def main(cfg: DictConfig) -> None:
    if (
        shutil.which("nvidia-smi") is None
        or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0
    ):
        _fail("no CUDA GPU on this machine; vLLM cannot serve here. Use `make serve-local` for a CPU model.")
    if shutil.which("vllm") is None:
        _fail(
            "vllm is not installed; on the GPU machine, install the vLLM release built for this venv's torch "
            "(`.venv/bin/python -m pip install vllm==<version>`); the project pins none."
        )
    if not Path(str(cfg.model)).exists():
        _fail(f"checkpoint {cfg.model} not found; train one with `make sft` or set model=<path>.")
    proc = subprocess.Popen(_command(cfg))
    url = f"http://{cfg.host}:{cfg.port}/v1/models"
    deadline = time.monotonic() + float(cfg.health_timeout_s)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _fail(f"vLLM exited with code {proc.returncode} before becoming healthy")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    print(f"STATEGUARD_MANAGER_BASE_URL=http://{cfg.host}:{cfg.port}/v1")
                    print(f"STATEGUARD_MANAGER_MODEL={cfg.served_model_name}")
                    proc.wait()
                    return
        except OSError:
            time.sleep(2)
    proc.terminate()
    _fail(f"vLLM did not answer {url} within {cfg.health_timeout_s} s")


if __name__ == "__main__":
    main()
