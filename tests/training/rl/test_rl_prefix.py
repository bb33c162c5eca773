"""The worker prefix of an RL row is rebuilt in the real runtime and checked against the row's prompt."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from stateguard.artifacts.files import ArtifactError
from stateguard.policies.rules import RulesManager
from training.rl.continuation import run_continuation
from training.rl.prefix import PrefixMismatch, PrefixSpec, load_row_task


def _train(prepared: Any) -> list[dict[str, Any]]:
    return pq.read_table(prepared.train_path).to_pylist()


def _continue(row: dict[str, Any], tasks: Path, run_dir: Path, **kwargs: Any) -> Any:
    spec = PrefixSpec.from_extra_info(row["extra_info"])
    task = load_row_task(tasks, spec.task_id)
    options = {"workspace": "dict", "keep_run": True, **kwargs}
    return run_continuation(
        spec, task, tasks / spec.task_id, row["prompt"], sampled=RulesManager(), run_dir=run_dir, **options
    )


def test_every_row_rebuilds_its_prefix(prepared: Any, rl_synth: Path, tmp_path: Path) -> None:
    """Each decision point (clean, fault turn, after the teacher's repair) is reached as the prompt shows."""
    for k, row in enumerate(_train(prepared)):
        result = _continue(row, rl_synth / "tasks", tmp_path / f"r{k}")
        assert result.start_seq > 0 and result.window_activations >= 1
        assert result.closed_by in ("turn_done", "state_done", "run_end")
        events = result.trace_source["events"]
        assert result.start_seq < len(events) and (result.end_seq is None or result.end_seq == len(events))
        assert result.decision in (
            "FINALIZE_RELATIONS",
            "REPAIR",
            "ABANDON_STATE",
        )  # the rules manager decides


def test_the_window_ends_with_the_decision_turn(prepared: Any, rl_synth: Path, tmp_path: Path) -> None:
    row = _train(prepared)[0]
    result = _continue(row, rl_synth / "tasks", tmp_path / "run")
    window = result.trace_source["events"][result.start_seq :]
    turns = {e["data"].get("turn_id") for e in window if e["kind"] == "turn_start"}
    assert turns <= {row["extra_info"]["turn"] + 1}  # at most the next turn's start, where the window closed
    names = [a["name"] for a in result.actions if a["accepted"]]
    assert names[-1] == "COMMIT_STATE"


def test_sandbox_workspace_passes_the_structural_check(prepared: Any, rl_synth: Path, tmp_path: Path) -> None:
    row = _train(prepared)[0]
    result = _continue(row, rl_synth / "tasks", tmp_path / "sandbox", workspace="sandbox")
    assert result.decision == "FINALIZE_RELATIONS"


def test_a_changed_prompt_is_a_mismatch(prepared: Any, rl_synth: Path, tmp_path: Path) -> None:
    row = copy.deepcopy(_train(prepared)[1])
    user = row["prompt"][1]
    head, obs = user["content"].split("OBSERVATION\n", 1)
    view = json.loads(obs)
    view["pending_end_step"] += 1
    user["content"] = head + "OBSERVATION\n" + json.dumps(view)
    with pytest.raises(PrefixMismatch, match="pending"):
        _continue(row, rl_synth / "tasks", tmp_path / "run")


def test_a_row_without_the_teachers_plan_says_what_to_rerun(prepared: Any) -> None:
    row = copy.deepcopy(_train(prepared)[0])
    prefix = json.loads(row["extra_info"]["worker_prefix"])
    del prefix["plan"]
    row["extra_info"]["worker_prefix"] = json.dumps(prefix)
    with pytest.raises(ValueError, match="make synth"):
        PrefixSpec.from_extra_info(row["extra_info"])


def test_task_location_errors_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="stateguard.tasks_dir"):
        load_row_task(tmp_path, "no_such_task")
    with pytest.raises(ArtifactError, match=r"extra_info: turn.*training\.rl\.data"):
        PrefixSpec.from_extra_info({"task_id": "x"})
