"""training.rl.data: the synthesized RL prompts become verl train/val parquet for the agent loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from training.rl.data import load_prompts, main, prepare_rows, split_by_task


def _rows(path: str) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def test_prepared_rows_carry_what_verl_and_the_loop_need(prepared: Any) -> None:
    train = _rows(prepared.train_path)
    assert train and prepared.inconsistent_points >= 1
    assert {r["agent_name"] for r in train} == {"stateguard_manager"}
    indices = [r["extra_info"]["index"] for r in train]
    assert len(set(indices)) == len(indices)
    for row in train:  # the synthesized columns are kept as they were
        assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(row)


def test_prefix_repair_marks_rows_after_the_teachers_repair(prepared: Any) -> None:
    rows = _rows(prepared.train_path)
    repair_rows = [r for r in rows if r["extra_info"]["variant"] == "repair"]
    fault = next(r for r in repair_rows if json.loads(r["extra_info"]["labels"])["g"] == 1)
    t_star = fault["extra_info"]["turn"]
    assert json.loads(fault["extra_info"]["prefix_repair"]) is None  # its own decision is the repair
    later = [
        r for r in repair_rows if r["extra_info"]["decision_point"] > fault["extra_info"]["decision_point"]
    ]
    assert later
    for row in later:
        repair = json.loads(row["extra_info"]["prefix_repair"])
        assert repair["turn"] == t_star
        assert repair["variables"] == json.loads(fault["reward_model"]["ground_truth"])["affected_variables"]
    assert all(
        json.loads(r["extra_info"]["prefix_repair"]) is None
        for r in rows
        if r["extra_info"]["variant"] == "clean"
    )


def test_duplicate_prompts_are_dropped(rl_synth: Path) -> None:
    rows = load_prompts(rl_synth / "corpus" / "rl" / "prompts.parquet")
    out, dropped = prepare_rows(rows + rows[:3], "stateguard_manager")
    assert dropped == 3 and len(out) == len(rows)


def test_split_keeps_whole_tasks_apart() -> None:
    rows = [{"extra_info": {"task_id": f"t{i % 5}"}} for i in range(20)]
    train, val = split_by_task(rows, 0.2, seed=0)
    assert set(train).isdisjoint(val) and len(val) == 1 and len(train) == 4
    assert split_by_task(rows, 0.2, seed=0) == (train, val)
    only = [{"extra_info": {"task_id": "t"}}]
    assert split_by_task(only, 0.2, seed=0) == (["t"], ["t"])  # one task: validation reuses it


def test_missing_file_and_columns_say_what_to_run(tmp_path: Path, rl_synth: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make synth"):
        load_prompts(tmp_path / "nope.parquet")
    table = pq.read_table(rl_synth / "corpus" / "rl" / "prompts.parquet").drop(["ability"])
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="ability"):
        load_prompts(tmp_path / "bad.parquet")
    rows = table.to_pylist()
    rows[0]["extra_info"] = {"task_id": "x"}
    pq.write_table(pa.Table.from_pylist([{**r, "ability": "a"} for r in rows[:1]]), tmp_path / "bad2.parquet")
    with pytest.raises(ValueError, match="extra_info lacks"):
        load_prompts(tmp_path / "bad2.parquet")


def test_cli_writes_train_and_val(tmp_path: Path, rl_synth: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(rl_synth / "corpus" / "rl" / "prompts.parquet"), str(tmp_path / "data")]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert Path(stats["train_path"]).is_file() and Path(stats["val_path"]).is_file()
