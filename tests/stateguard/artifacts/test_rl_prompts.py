"""corpus/rl/prompts.parquet as a typed artifact: RlPromptRow round trip in verl's column order, the
JSON parts read typed, verl's runtime extra_info read, clear errors; export_summary.json load/save.

.venv/bin/python -m pytest -q tests/stateguard/artifacts/test_rl_prompts.py
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stateguard.artifacts.export_summary import ExportSummary, load_export_summary, save_export_summary
from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.rl_prompts import (
    PreparedExtraInfo,
    PreparedRlRow,
    RlColumn,
    RlExtraInfo,
    RlGroundTruth,
    RlLabels,
    RlMessage,
    RlPromptRow,
    RlRewardSpec,
    RlWorkerPrefix,
    read_rl_prompts,
    write_rl_prompts,
)
from stateguard.artifacts.run_folder import CorpusFolder


def _row(turn: int = 2) -> RlPromptRow:
    truth = RlGroundTruth(action="REPAIR", affected_variables=["margin"], intervention_kind=None)
    return RlPromptRow(
        data_source="stateguard_synth",
        prompt=[RlMessage(role="system", content="s"), RlMessage(role="user", content="u")],
        ability="state_management",
        reward_model=RlRewardSpec(ground_truth=truth.to_json()),
        extra_info=RlExtraInfo(
            task_id="demo",
            turn=turn,
            decision_point=5,
            variant="repair",
            flow="longds",
            teacher="rules",
            worker_prefix=RlWorkerPrefix(
                trajectory_id="demo/repair", fault_turn=2, worker_step_upto=4
            ).to_json(),
            labels=RlLabels(g=1, affected_variables=["margin"]).to_json(),
        ),
    )


def test_rows_round_trip_in_verls_column_order(tmp_path: Path) -> None:
    path = CorpusFolder(tmp_path / "corpus").rl_prompts
    rows = [_row(), _row(3)]
    write_rl_prompts(path, rows)
    assert path == tmp_path / "corpus" / "rl" / "prompts.parquet"
    assert read_rl_prompts(path) == rows
    assert pq.read_table(path).column_names == [
        "data_source",
        "prompt",
        "ability",
        "reward_model",
        "extra_info",
    ]
    back = read_rl_prompts(path)[0]
    assert back.reward_model.truth().affected_variables == ["margin"]
    assert (back.extra_info.label().g, back.extra_info.prefix().worker_step_upto) == (1, 4)


def test_ground_truth_json_keeps_only_the_set_fields() -> None:
    # the export writes intervention_kind null for a repair, and no such key for other actions
    assert RlGroundTruth(action="FINALIZE_RELATIONS").to_json() == '{"action": "FINALIZE_RELATIONS"}'
    assert RlGroundTruth(action="REPAIR", affected_variables=["x"], intervention_kind=None).to_json() == (
        '{"action": "REPAIR", "affected_variables": ["x"], "intervention_kind": null}'
    )


def test_prepared_rows_append_index_and_agent_name(tmp_path: Path) -> None:
    prepared = PreparedRlRow.of(_row(), index=7, agent_name="stateguard_manager")
    write_rl_prompts(tmp_path / "train.parquet", [prepared])
    table = pq.read_table(tmp_path / "train.parquet")
    assert table.column_names[-1] == "agent_name"
    extra = table.to_pylist()[0][RlColumn.EXTRA_INFO]
    assert list(extra)[-1] == "index"
    # verl hands extra_info back with its own keys added: those are ignored
    info = PreparedExtraInfo.from_runtime({**extra, "stateguard_trace": {"start_seq": 3}})
    assert (info.index, info.turn) == (7, 2)


def test_bad_files_and_rows_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="make synth"):
        read_rl_prompts(tmp_path / "missing.parquet")
    write_rl_prompts(tmp_path / "p.parquet", [_row()])
    table = pq.read_table(tmp_path / "p.parquet").drop(["ability"])
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(
        ArtifactError, match=r"bad.parquet row 0: not an RlPromptRow \(ability: Field required"
    ):
        read_rl_prompts(tmp_path / "bad.parquet")
    with pytest.raises(ArtifactError, match=r"extra_info: turn: Field required"):
        RlExtraInfo.from_runtime({"task_id": "x"})
    bad_labels = _row().extra_info.model_copy(update={"labels": '{"x": 1}'})
    with pytest.raises(ArtifactError, match=r"extra_info.labels: g: Field required"):
        bad_labels.label()


def test_columns_are_fields() -> None:
    assert {c.value for c in RlColumn} <= set(RlPromptRow.model_fields)


def test_export_summary_round_trips(tmp_path: Path) -> None:
    summary = ExportSummary(
        tasks=1,
        trajectories=3,
        kept=2,
        kept_by_variant={"clean": 1, "repair": 1},
        attempted_by_variant={"clean": 1, "repair": 2},
        rejections={"task_completed": 1},
        sft_samples={"atomic": 4, "full": 2},
        sft_duplicates_dropped=0,
        rl_prompts=3,
        rl_by_action={"REPAIR": 1, "FINALIZE_RELATIONS": 2},
        rl_inconsistent=1,
        elapsed_s=1.5,
        benign_share=0.25,
    )
    path = CorpusFolder(tmp_path).export_summary
    save_export_summary(path, summary)
    assert load_export_summary(path) == summary
    assert path.read_text(encoding="utf-8").startswith('{\n "tasks": 1,\n "trajectories": 3,')
    path.write_text('{"tasks": 1}', encoding="utf-8")
    with pytest.raises(ArtifactError, match="export_summary.json: not a valid ExportSummary: trajectories"):
        load_export_summary(path)
