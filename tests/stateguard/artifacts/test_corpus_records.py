"""corpus/records/<task_id>.jsonl as a typed artifact: key line, records, and clear errors.

.venv/bin/python -m pytest -q tests/stateguard/artifacts/test_corpus_records.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard.artifacts.corpus_records import (
    ActionRow,
    RecordsKey,
    StateStats,
    TrajectoryRecord,
    WorkerStepRow,
    load_key,
    load_records,
    save_records,
)
from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.run_folder import CorpusFolder

KEY = RecordsKey(seed=0, repairs=1, autos=0, benign=0, heavy=0, abandon=0, teacher="rules", version="t/1")


def _record(variant: str = "clean") -> TrajectoryRecord:
    return TrajectoryRecord(
        trajectory_id=f"demo/{variant}",
        task_id="demo",
        variant="clean",
        seed=0,
        worker_steps=[
            WorkerStepRow(
                index=0, turn=1, action="x = 1", output="1", success=True, purpose="reference", turn_end=True
            )
        ],
        action_events=[ActionRow(seq=3, name="COMMIT_STATE", accepted=True, stage="idle", activation=1)],
        answers={1: 1},
        reference_answers={1: 1},
        states=[
            StateStats(id="S1", constraints=1, executable=0, variables=1, conclusions=1, relations=["init"])
        ],
        keep=True,
    )


def test_records_file_round_trip(tmp_path: Path) -> None:
    path = CorpusFolder(tmp_path / "corpus").record_file("demo")
    save_records(path, KEY, [_record()])
    lines = path.read_text().splitlines()
    # the key line is the plain JSON the export always wrote; each record its model_dump_json
    assert json.loads(lines[0]) == {
        "seed": 0,
        "repairs": 1,
        "autos": 0,
        "benign": 0,
        "heavy": 0,
        "abandon": 0,
        "teacher": "rules",
        "version": "t/1",
    }
    assert json.loads(lines[1])["worker_steps"][0] == {
        "index": 0,
        "turn": 1,
        "action": "x = 1",
        "output": "1",
        "success": True,
        "purpose": "reference",
        "turn_end": True,
    }
    key, records = load_records(path)
    assert key == KEY == load_key(path)
    (rec,) = records
    assert rec.variant_name == "clean" and rec.worker_steps[0].purpose == "reference"
    assert rec.action_events[0].activation == 1 and rec.states[0].relations == ["init"]
    assert not path.with_suffix(".tmp").exists()


def test_a_key_of_another_form_is_stale_and_a_bad_record_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    good = _record().model_dump_json()
    path.write_text(json.dumps({"seed": 0, "repairs": 1}) + "\n" + good + "\n")
    assert load_key(path) is None  # an old key line: the export makes the records again
    broken = json.loads(good)
    del broken["worker_steps"][0]["turn_end"]
    path.write_text(KEY.model_dump_json() + "\n" + good + "\n" + json.dumps(broken) + "\n")
    with pytest.raises(
        ArtifactError, match=r"demo\.jsonl:3: not a TrajectoryRecord \(worker_steps\.0\.turn_end"
    ):
        load_records(path)
    assert load_key(tmp_path / "missing.jsonl") is None
