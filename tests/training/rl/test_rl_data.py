"""training.rl.data: the synthesized RL prompts become verl train/val parquet for the agent loop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stateguard.artifacts.files import ArtifactError
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


def test_rows_carry_the_teachers_plan(prepared: Any) -> None:
    """Every row holds the shared teacher's plan of its trajectory, which the prefix replay runs."""
    from synthesis.teacher import TeacherPlan

    rows = _rows(prepared.train_path)
    variants = set()
    for row in rows:
        extra = row["extra_info"]
        plan = TeacherPlan.model_validate(json.loads(extra["worker_prefix"])["plan"])
        assert plan.variant == extra["variant"] and plan.flow == extra["flow"] == "longds"
        assert extra["teacher"].startswith(f"{plan.version}:{plan.variant}")
        assert (plan.fault_turn is None) == (plan.variant == "clean")
        variants.add(plan.variant)
    assert {"clean", "repair"} <= variants
    fault = next(
        r
        for r in rows
        if r["extra_info"]["variant"] == "repair" and json.loads(r["extra_info"]["labels"])["g"]
    )
    assert json.loads(fault["reward_model"]["ground_truth"])["action"] == "REPAIR"


def test_duplicate_prompts_are_dropped(rl_synth: Path) -> None:
    rows = load_prompts(rl_synth / "corpus" / "rl" / "prompts.parquet")
    base, within = prepare_rows(rows, "stateguard_manager")  # variants replay the clean prefix: same prompts
    assert len(base) == len(rows) - within
    out, dropped = prepare_rows(rows + rows[:3], "stateguard_manager")
    assert dropped == within + 3 and len(out) == len(base)


def test_split_keeps_whole_tasks_apart() -> None:
    tasks = [f"t{i % 5}" for i in range(20)]
    train, val = split_by_task(tasks, 0.2, seed=0)
    assert set(train).isdisjoint(val) and len(val) == 1 and len(train) == 4
    assert split_by_task(tasks, 0.2, seed=0) == (train, val)
    assert split_by_task(["t"], 0.2, seed=0) == (["t"], ["t"])  # one task: validation reuses it


def test_missing_file_and_columns_say_what_to_run(tmp_path: Path, rl_synth: Path) -> None:
    with pytest.raises(ArtifactError, match="make synth"):
        load_prompts(tmp_path / "nope.parquet")
    table = pq.read_table(rl_synth / "corpus" / "rl" / "prompts.parquet").drop(["ability"])
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(ArtifactError, match="row 0: not an RlPromptRow .*ability"):
        load_prompts(tmp_path / "bad.parquet")
    rows = table.to_pylist()
    rows[0]["extra_info"] = {"task_id": "x"}
    pq.write_table(pa.Table.from_pylist([{**r, "ability": "a"} for r in rows[:1]]), tmp_path / "bad2.parquet")
    with pytest.raises(ArtifactError, match=r"extra_info\.turn: Field required"):
        load_prompts(tmp_path / "bad2.parquet")


def test_cli_writes_train_and_val(tmp_path: Path, rl_synth: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(rl_synth / "corpus" / "rl" / "prompts.parquet"), str(tmp_path / "data")]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert Path(stats["train_path"]).is_file() and Path(stats["val_path"]).is_file()
