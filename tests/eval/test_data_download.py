"""`make data` backend (eval/data.py): offline failure, verification of a local folder, archives."""

from __future__ import annotations

import hashlib
import socket
import time
import zipfile
from pathlib import Path

import pytest

from eval import data
from eval.data import (
    BENCHES,
    BenchData,
    DataError,
    Expected,
    HubSource,
    HubUnreachableError,
    VerificationError,
)

DABSTEP_FILES = [
    "fees.json",
    "manual.md",
    "merchant_data.json",
    "merchant_category_codes.csv",
    "acquirer_countries.csv",
    "payments-readme.md",
]


@pytest.fixture
def closed_endpoint(monkeypatch: pytest.MonkeyPatch) -> str:
    """HF_ENDPOINT pointing at a local port nothing listens on: refused at once, no network used."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    return endpoint


@pytest.mark.parametrize("bench", sorted(BENCHES))
def test_offline_fails_fast_with_instructions(tmp_path: Path, closed_endpoint: str, bench: str) -> None:
    started = time.monotonic()
    with pytest.raises(HubUnreachableError) as err:
        data.download(BENCHES[bench], tmp_path, timeout_s=2)
    assert time.monotonic() - started < 10
    message = str(err.value)
    assert closed_endpoint in message
    assert f"into {tmp_path / bench}/" in message and "by hand" in message
    assert BENCHES[bench].layout in message and "--verify-only" in message
    assert not (tmp_path / bench).exists() or not any((tmp_path / bench).rglob("*.csv"))


def test_cli_offline_exit_code(
    tmp_path: Path, closed_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert data.main(["--bench", "dabstep", "--out", str(tmp_path), "--timeout", "2"]) == 2
    assert "cannot reach the Hugging Face Hub" in capsys.readouterr().err


def _dabstep_folder(root: Path, payments: bytes = b"psp_reference,amount\n1,2.5\n", skip: str = "") -> Path:
    base = root / "dabstep" / "data"
    for name in DABSTEP_FILES:
        if name != skip:
            (base / "context" / name).parent.mkdir(parents=True, exist_ok=True)
            (base / "context" / name).write_text("x")
    (base / "context" / "payments.csv").write_bytes(payments)
    (base / "tasks").mkdir(parents=True)
    (base / "tasks" / "all.jsonl").write_text("{}\n")
    return root / "dabstep"


@pytest.mark.parametrize(
    ("skip", "payments_sha", "problem"),
    [
        ("fees.json", None, "context/fees.json: missing"),
        ("", "0" * 64, "sha256"),  # the real published checksum never matches the fake file
    ],
)
def test_verify_reports_missing_and_bad_checksum(
    tmp_path: Path, skip: str, payments_sha: str | None, problem: str
) -> None:
    folder = _dabstep_folder(tmp_path, skip=skip)
    bench = BENCHES["dabstep"]
    with pytest.raises(VerificationError) as err:
        data.verify(bench, folder)
    assert problem in str(err.value)
    if problem == "sha256":
        assert str(folder / "data" / "context" / "payments.csv") in str(err.value)
        assert str(bench.expected[0].sha256) in str(err.value)


def test_verify_passes_with_matching_checksum(tmp_path: Path) -> None:
    content = b"psp_reference,amount\n1,2.5\n"
    folder = _dabstep_folder(tmp_path, payments=content)
    real = BENCHES["dabstep"]
    bench = BenchData(
        name="dabstep",
        sources=real.sources,
        layout=real.layout,
        expected=(
            Expected("context/payments.csv", sha256=hashlib.sha256(content).hexdigest()),
            *real.expected[1:],
        ),
    )
    found = data.verify(bench, folder)
    assert found["context/payments.csv"] == [folder / "data" / "context" / "payments.csv"]
    assert len(found) == 8


def test_verify_counts(tmp_path: Path) -> None:
    bench = BenchData(
        name="toy", sources=(HubSource("o/r"),), layout="a/*.txt", expected=(Expected("a/*.txt", 2),)
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "1.txt").write_text("1")
    with pytest.raises(VerificationError, match="only 1 of at least 2 found"):
        data.verify(bench, tmp_path)
    (tmp_path / "a" / "2.txt").write_text("2")
    assert len(data.verify(bench, tmp_path)["a/*.txt"]) == 2
    with pytest.raises(VerificationError, match="missing"):
        data.verify(bench, tmp_path / "absent")


def test_cli_verify_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dabstep_folder(tmp_path, skip="manual.md")
    assert data.main(["--bench", "dabstep", "--out", str(tmp_path), "--verify-only"]) == 3
    err = capsys.readouterr().err
    assert "context/manual.md: missing" in err and "Expected layout" in err


def test_extract_archives_once_and_refuses_escape(tmp_path: Path) -> None:
    archive = tmp_path / "tasks" / "dacomp-de.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("dacomp-de/dacomp-de-impl-001/run.py", "print('build')\n")
    assert data.extract_archives(tmp_path) == [archive]
    assert (tmp_path / "tasks" / "dacomp-de" / "dacomp-de-impl-001" / "run.py").is_file()
    assert data.extract_archives(tmp_path) == []  # the marker remembers
    bad = tmp_path / "gold" / "evil.zip"
    bad.parent.mkdir()
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../../outside.txt", "x")
    with pytest.raises(DataError, match="outside"):
        data.extract_archives(tmp_path / "gold")
    assert not (tmp_path.parent / "outside.txt").exists()


def test_bench_registry() -> None:
    assert {b: [s.repo_id for s in BENCHES[b].sources] for b in BENCHES} == {
        "longds": ["zjunlp/LongDS"],
        "dabstep": ["adyen/DABstep"],
        "dacomp_de": ["DAComp/dacomp-de", "DAComp/dacomp-de-gold"],
    }
    assert (
        BENCHES["dabstep"].expected[0].sha256
        == "5fbb26210a45427d7a6560cfab3a362a08e4067f27cd03695f211a51c47ffc25"
    )


def test_help_lists_benches(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        data.main(["--help"])
    assert exit_.value.code == 0
    assert "{dabstep,dacomp_de,longds}" in capsys.readouterr().out
