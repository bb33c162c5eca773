"""The replay files of a task folder as typed artifacts: hidden/fingerprints.json and hidden/replay.json.

.venv/bin/python -m pytest -q tests/stateguard/artifacts/test_replay.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.replay import (
    FingerprintTable,
    ReplayMarker,
    TurnFingerprints,
    load_fingerprints,
    load_marker,
    save_fingerprints,
    save_marker,
)
from stateguard.artifacts.task_folder import TaskFolder


def _folder(tmp_path: Path) -> TaskFolder:
    folder = TaskFolder(tmp_path / "penguins_s0_t3")
    folder.hidden.mkdir(parents=True)
    return folder


def test_fingerprints_write_the_original_bytes_and_read_typed(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    table = FingerprintTable(
        {
            "1": TurnFingerprints.of({"t1_base": "aa"}, "f1"),
            "2": TurnFingerprints.of({"t2_b": "cc", "t2_a": "bb"}, "f2"),
        }
    )
    save_fingerprints(folder, table)
    # the bytes synthesis.replay wrote before the model existed: sorted keys, one-space indent
    expected = {"1": {"t1_base": "aa", "answer": "f1"}, "2": {"t2_b": "cc", "t2_a": "bb", "answer": "f2"}}
    assert folder.fingerprints.read_text() == json.dumps(expected, indent=1, sort_keys=True) + "\n"
    loaded = load_fingerprints(folder)
    two = loaded.turn(2)
    assert two is not None and two.answer == "f2" and two.stages == {"t2_a": "bb", "t2_b": "cc"}
    assert loaded.turn(3) is None and loaded.turn_ids == {"1", "2"}


def test_a_placeholder_fingerprints_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    folder.fingerprints.write_text('{"status": "pending"}\n')
    with pytest.raises(ArtifactError, match=r"fingerprints\.json: not a valid FingerprintTable: status"):
        load_fingerprints(folder)


def test_marker_round_trip_and_a_renamed_field_fails(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    marker = ReplayMarker(ok=True, task_id=folder.task_id, turns=3, sha256={"hidden/task.json": "ab"})
    save_marker(folder, marker)
    assert folder.replay.read_text() == (
        json.dumps(
            {"ok": True, "task_id": folder.task_id, "turns": 3, "sha256": {"hidden/task.json": "ab"}},
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    assert load_marker(folder) == marker
    folder.replay.write_text(folder.replay.read_text().replace('"sha256"', '"hashes"'))
    with pytest.raises(
        ArtifactError, match=r"replay\.json: not a valid ReplayMarker: .*sha256: Field required"
    ):
        load_marker(folder)
