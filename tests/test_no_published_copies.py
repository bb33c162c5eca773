"""The repository carries no copy of published benchmark data (issue: data stays in ../shared).

Every tracked file (`git ls-files`) is hashed and compared with the SHA-256 of every file under
the staged benchmark folder (tests/support/published.py); a match fails and names both files.
A trimmed copy would not match as a whole, so tracked text is also searched for any long line
of the staged text files (JSON lines, task files, manuals, configs).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from tests.support.published import REPO, published

pytestmark = pytest.mark.published_data

MIN_LINE = 60  # shorter lines (headers, keys, short values) can coincide by chance
TEXT_SUFFIXES = {".json", ".jsonl", ".md", ".csv", ".yaml", ".yml", ".txt", ".py"}


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / name for name in out.decode().split("\0") if name and (REPO / name).is_file()]


def staged_files() -> list[Path]:
    root = published(".")
    return [p for p in sorted(root.rglob("*")) if p.is_file()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_no_tracked_file_is_a_staged_benchmark_file() -> None:
    staged = {sha256(p): p for p in staged_files()}
    assert len(staged) >= 10  # the staged folder was found and read
    copies = [f"{f.relative_to(REPO)} == {staged[h]}" for f in tracked_files() if (h := sha256(f)) in staged]
    assert not copies, (
        "published benchmark files are tracked; delete them and read them from ../shared: "
        + "; ".join(copies)
    )


def test_no_tracked_file_holds_a_long_line_of_staged_text() -> None:
    lines: dict[str, Path] = {}
    for path in staged_files():
        if path.suffix in TEXT_SUFFIXES:
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if len(line.strip()) >= MIN_LINE:
                    lines.setdefault(line.strip(), path)
    assert len(lines) > 100
    found = []
    for f in tracked_files():
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [
            f"{f.relative_to(REPO)}: {line[:50]!r}... (from {lines[line]})"
            for line in {x.strip() for x in text.splitlines()}
            if line in lines
        ]
    assert not found, "tracked files repeat published benchmark text: " + "; ".join(found[:10])


def test_the_check_sees_a_copy(tmp_path: Path) -> None:
    """The comparison itself works: a staged file's bytes hash equal under another name."""
    source = next(p for p in staged_files() if p.suffix == ".jsonl")
    copy = tmp_path / "renamed.bin"
    copy.write_bytes(source.read_bytes())
    assert sha256(copy) in {sha256(p) for p in staged_files()}
