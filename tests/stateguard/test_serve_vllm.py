"""`make serve` on a machine without a GPU stops at once with a pointer to serve-local."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this checks the CPU-only path")
def test_serve_fails_fast_on_cpu_with_a_pointer() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "serve_vllm.py")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert "no CUDA GPU" in proc.stderr and "make serve-local" in proc.stderr


def test_serve_command_carries_the_parsers_and_context() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import serve_vllm  # type: ignore[import-not-found]
        from omegaconf import OmegaConf
    finally:
        sys.path.pop(0)
    cfg = OmegaConf.load(ROOT / "configs" / "serve" / "vllm.yaml")
    cfg.model = "/ckpt"
    cmd = serve_vllm._command(cfg)
    assert cmd[:3] == ["vllm", "serve", "/ckpt"]
    assert (
        cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
        and cmd[cmd.index("--reasoning-parser") + 1] == "qwen3"
    )
    assert cmd[cmd.index("--max-model-len") + 1] == "40960" and "--enable-auto-tool-choice" in cmd
