"""Published benchmark samples, read in place from `../shared/benchmarks/` beside the clone.

The repository carries no third-party benchmark data. A test that checks our loaders, parsers
or scorers against a *published* sample reads it from the staged folder at run time through
`published(...)`, and carries the `published_data` marker. Where the folder is missing, the
test fails and says which file it needs and where to put it; `pytest -m "not published_data"`
leaves those tests out on a machine without the samples. Tests that only need the *format* use
the small invented fixtures under `tests/eval/fixtures/` and `tests/synthesis/fixtures/`.

    pytestmark = pytest.mark.published_data
    task2 = published("longds/samples/task/longds/education/bi/task2/task.json")

Every file a test reads is pinned by SHA-256 (`PINNED`): the assertions were read off that exact
version, so another version fails by name instead of as a puzzling assertion.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

import pytest

__all__ = ["ENV", "PINNED", "benchmarks_dir", "digest", "published"]

ENV = "STATEGUARD_BENCHMARKS_DIR"
REPO = Path(__file__).resolve().parents[2]

# relative path under the benchmarks folder -> SHA-256 of the staged file (see its SOURCE.md)
PINNED: dict[str, str] = {
    "dabstep/tasks/dev.dsgym_snapshot.jsonl": "aa5566125718bc1e827c312e72e885bb8d0050a50c7b9aaf66c50a70e2e92a63",
    "dabstep/tasks/all.official_blank_answers.jsonl": "d776385abe09ff89ed3263bd47c90fa0f060680c0d2ef04a83485fa4b6f2512c",
    "longds/samples/task/longds/education/bi/task1/task.json": "8ef5cfaaaa25376e227aeaab7d1cfcff231e795eecea030339611d4145c9549c",
    "longds/samples/task/longds/education/bi/task2/task.json": "b37ec80e763aeadf10f88f37634f42695ebb3d2d5c5a55920cbecf80db29354f",
    "dacomp_de/evaluation_suite/evaluation_config_compare.yaml": "4d360a78d972dcec6020a935895d38fc04fa3b1181c8a432b5602eea4e7f8148",
    "dsbench/data_analysis/data.json": "ff822b69d46e08b384fa9b93ff39762c33b9887d315a5653bb536aeaba7572ea",
    "dsbench/data_modeling/data.json": "3b4e70456096d12472115f3d8faabef6b7f9c89c82d0a792a3ed7b8ba02d5596",
}


def benchmarks_dir() -> Path:
    """`$STATEGUARD_BENCHMARKS_DIR`, else `../shared/benchmarks` next to the repository root."""
    configured = os.environ.get(ENV)
    return Path(configured).expanduser() if configured else REPO.parent / "shared" / "benchmarks"


@cache
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pinned_under(rel: str) -> list[str]:
    return sorted(p for p in PINNED if p == rel or p.startswith(rel.rstrip("/") + "/"))


def published(rel: str) -> Path:
    """The staged published file or folder `rel` (relative to the benchmarks folder).

    Fails the calling test with what is missing and where it goes, or with the file whose
    content is not the pinned version.
    """
    root = benchmarks_dir()
    path = root / rel
    if not path.exists():
        needed = _pinned_under(rel) or [rel]
        pytest.fail(
            f"this test checks our code against published benchmark data and needs {path}.\n"
            f"Put the staged samples at {root} (each benchmark folder there has a SOURCE.md naming its "
            f"origin), or point {ENV} at a folder holding: {', '.join(needed)}.\n"
            'On a machine without them, leave these tests out: pytest -m "not published_data".',
            pytrace=False,
        )
    for name in _pinned_under(rel):
        staged = root / name
        if staged.is_file() and _sha256(staged) != PINNED[name]:
            pytest.fail(
                f"{staged}: sha256 {_sha256(staged)} is not the version these assertions were read from "
                f"({PINNED[name]}); restore that file from the source named in its SOURCE.md",
                pytrace=False,
            )
    return path


def digest(value: object) -> str:
    """SHA-256 of a value as canonical JSON: pins published text or answers without copying them."""
    import json

    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
