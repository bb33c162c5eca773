"""corpus/sft/ as a typed artifact: SftRow written with datasets, read back with pyarrow, clear errors;
an activation's logged observation and tool result read through typed accessors.

.venv/bin/python -m pytest -q tests/stateguard/artifacts/test_sft_rows.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard.artifacts.activation_log import ActionLog, ActivationLog
from stateguard.artifacts.corpus_records import observation_of, tool_result_of, tool_stdout
from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.run_folder import CorpusFolder
from stateguard.artifacts.sft_rows import SftColumn, SftKind, SftRow, read_sft_rows, write_sft_rows


def _row(kind: SftKind = SftKind.ATOMIC, activation: int = 0) -> SftRow:
    return SftRow(
        variant="repair",
        task_id="demo",
        trajectory_id="demo/repair",
        tools="[]",
        intervention_kind="filter_condition",
        intervention_op="drop_conjunct",
        t_star=2,
        benign=False,
        flow="longds",
        regime="turn_aligned",
        teacher="rules",
        kind=kind,
        activation=activation,
        turn=2 if kind is SftKind.ATOMIC else 0,
        relations='["refine"]',
        messages=json.dumps([{"role": "system", "content": "s"}]),
    )


def test_rows_round_trip_in_field_order(tmp_path: Path) -> None:
    pytest.importorskip("datasets", reason="the corpus is written with datasets (train extra)")
    folder = CorpusFolder(tmp_path / "corpus").sft
    rows = [_row(), _row(SftKind.FULL, -1)]
    write_sft_rows(folder, rows)
    assert folder == tmp_path / "corpus" / "sft"
    back = read_sft_rows(folder)
    assert back == rows
    assert back[1].kind is SftKind.FULL and back[0].turn == 2
    import pyarrow as pa

    with pa.memory_map(str(next(folder.glob("*.arrow")))) as src:
        columns = pa.ipc.open_stream(src).read_all().column_names
    assert columns == list(SftRow.model_fields)  # the written column order is the model's


def test_rows_are_written_in_batches_and_shards_with_the_same_content(tmp_path: Path) -> None:
    """A large corpus is streamed to disk batch by batch (no string column ever holds the whole
    corpus, so Arrow's 2 GiB offset limit is never met); the bytes of a given set of rows do not
    depend on the batch size, and `datasets` loads it back."""
    datasets = pytest.importorskip("datasets", reason="the corpus is written with datasets (train extra)")

    rows = [_row(activation=i) for i in range(7)] + [_row(SftKind.FULL, -1)]
    one, batched = tmp_path / "one", tmp_path / "batched"
    write_sft_rows(one, rows)
    write_sft_rows(batched, iter(rows), batch_rows=3)  # any iterable, e.g. a generator
    assert read_sft_rows(one) == read_sft_rows(batched) == rows
    # the bytes do not depend on the batch size (state.json's fingerprint is the rows' hash)
    assert {p.name: p.read_bytes() for p in one.iterdir()} == {
        p.name: p.read_bytes() for p in batched.iterdir()
    }
    assert datasets.load_from_disk(str(batched))["activation"] == [*range(7), -1]
    # no temporary file is left next to the folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batched", "one"]
    with pytest.raises(ValueError, match="batch_rows=0"):
        write_sft_rows(tmp_path / "bad", rows, batch_rows=0)


def test_no_rows_is_an_empty_corpus(tmp_path: Path) -> None:
    pytest.importorskip("datasets", reason="the corpus is written with datasets (train extra)")
    write_sft_rows(tmp_path / "empty", [])
    assert read_sft_rows(tmp_path / "empty") == []


def test_columns_are_fields() -> None:
    assert {c.value for c in SftColumn} <= set(SftRow.model_fields)


def test_a_renamed_column_names_the_file_row_and_field(tmp_path: Path) -> None:
    pytest.importorskip("datasets", reason="the corpus is written with datasets (train extra)")
    from datasets import Dataset

    bad = _row().model_dump(mode="json")
    bad["message"] = bad.pop("messages")
    Dataset.from_list([bad]).save_to_disk(str(tmp_path))
    with pytest.raises(ArtifactError, match=r"row 0: not an SftRow .*messages"):
        read_sft_rows(tmp_path)


def test_not_a_corpus_folder(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="no state.json"):
        read_sft_rows(tmp_path)


def test_observation_and_tool_result_are_typed() -> None:
    act = ActivationLog(
        index=4,
        turn=2,
        observation={"stage": "updated", "pending_end_step": 7, "repair_budget": 2, "event_type": "turn_end"},
        actions=[
            ActionLog(
                name="run_probe",
                accepted=True,
                tool_result={"tool": "run_probe", "ok": True, "data": {"stdout": "verdict"}, "error": None},
            ),
            ActionLog(name="REPAIR", accepted=True, control=True),
        ],
    )
    obs = observation_of(act)
    assert (obs.stage, obs.pending_end_step, obs.repair_budget) == ("updated", 7, 2)
    probe, repair = act.actions
    result = tool_result_of(probe)
    assert result is not None and result.ok and tool_stdout(probe) == "verdict"
    assert tool_result_of(repair) is None and tool_stdout(repair) == ""


def test_a_renamed_observation_field_fails_loudly() -> None:
    act = ActivationLog(index=3, turn=1, observation={"lifecycle_stage": "updated"})
    with pytest.raises(ArtifactError, match="activation 3: .*stage"):
        observation_of(act)
    probe = ActionLog(name="run_probe", accepted=True, tool_result={"tool": "run_probe", "okay": True})
    with pytest.raises(ArtifactError, match="action run_probe: .*ok"):
        tool_result_of(probe)
