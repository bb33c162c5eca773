"""compute_score with verl's custom-reward signature, on rows shaped like synthesis.export's RL prompts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.scripted_server import Reply, ScriptedServer
from tests.training.rewards.reward_world import FAULTY, Sales, labels
from training.rewards import RewardLabels
from training.rewards.verl_score import TRACE_KEY, compute_score

KEYS = {
    "score",
    "r_action",
    "n_action",
    "r_lifecycle",
    "n_lifecycle",
    "r_support",
    "n_support",
    "r_intervention",
    "n_intervention",
    "judged_support",
    "conservative_support",
    "judged_repair_quality",
    "conservative_repair_quality",
    "judged_inconsistency",
    "conservative_inconsistency",
    "judge_failures",
}


def row(
    action: str, affected: list[str] | None = None, extra: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """(ground_truth, extra_info) in the layout synthesis.export.rl_prompts writes: g = 1 with the
    affected variables at a repair point, g = 0 elsewhere."""
    truth: dict[str, Any] = {"action": action}
    if affected is not None:
        truth |= {"affected_variables": affected, "intervention_kind": "filter_condition"}
    g = {
        "g": int(affected is not None),
        "affected_variables": affected or [],
        "intervention_kind": truth.get("intervention_kind"),
        "benign": False,
    }
    info = {
        "task_id": "sales",
        "turn": 2,
        "decision_point": 5,
        "variant": "repair" if affected else "clean",
        "worker_prefix": json.dumps({"trajectory_id": "sales/repair-1", "worker_step_upto": 1}),
        "labels": json.dumps(g, sort_keys=True),
        **(extra or {}),
    }
    return json.dumps(truth, sort_keys=True), info


def export_labels(g: int, affected: tuple[str, ...] | list[str] = (), benign: bool = False) -> str:
    return json.dumps(
        {"g": g, "affected_variables": list(affected), "intervention_kind": None, "benign": benign}
    )


@pytest.mark.parametrize(
    ("truth", "extra", "g", "affected"),
    [
        # the export's labels
        (
            {"action": "REPAIR", "affected_variables": ["big"]},
            {"labels": export_labels(1, ["big@S2"])},
            True,
            ["big"],
        ),
        ({"action": "FINALIZE_RELATIONS"}, {"labels": export_labels(0)}, False, []),
        (
            {"action": "REPAIR", "affected_variables": ["big"]},
            {"labels": export_labels(0, ["big"])},
            False,
            ["big"],
        ),
        ({"action": "FINALIZE_RELATIONS"}, {"labels": export_labels(0, benign=True)}, False, []),
        (
            {"action": "FINALIZE_RELATIONS"},
            {"labels": {"g": 1, "affected_variables": ["share"]}},
            True,
            ["share"],
        ),
        # a whole record
        (
            {"action": "FINALIZE_RELATIONS"},
            {"labels": {"decision_points": [{"inconsistent": True}]}},
            True,
            [],
        ),
        # rows without labels: the ground truth decides
        ({"action": "REPAIR", "affected_variables": ["big@S2"]}, {}, True, ["big"]),
        ({"action": "FINALIZE_RELATIONS"}, {}, False, []),
        ({"action": "ABANDON_STATE"}, {}, True, []),
        ({"action": "REPAIR", "inconsistent": False}, {}, False, []),
    ],
)
def test_labels_from_verl_rows(
    truth: dict[str, Any], extra: dict[str, Any], g: bool, affected: list[str]
) -> None:
    parsed = RewardLabels.from_verl_row(json.dumps(truth), {"task_id": "t", "turn": 3, **extra})
    assert [(d.inconsistent, d.affected_variables) for d in parsed.decision_points] == [(g, affected)]
    assert (parsed.task_id, parsed.turn) == ("t", 3)


def test_export_labels_keep_the_teachers_action_and_the_benign_flag() -> None:
    truth, info = row("REPAIR", ["big"])
    [label] = RewardLabels.from_verl_row(truth, info).decision_points
    assert (label.inconsistent, label.expected_action, label.intervention_kind, label.benign) == (
        True,
        "REPAIR",
        "filter_condition",
        False,
    )


@pytest.mark.parametrize(
    ("truth", "extra", "message"),
    [
        ("not json", {}, "ground_truth is not JSON"),
        ('["REPAIR"]', {}, "must be a JSON object"),
        ('{"answer": 3}', {}, "the row has no labels"),
        ('{"action": "REPAIR"}', {"labels": '{"x": 1}'}, "neither the export's"),
        ('{"action": "REPAIR"}', {"labels": "{oops"}, "neither the export's"),
    ],
)
def test_bad_labels_say_how_to_fix(truth: str, extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RewardLabels.from_verl_row(truth, extra)


def _written_run(sales: Callable[..., Sales], tmp_path: Path) -> Sales:
    run = sales(threshold=FAULTY, path=tmp_path / "trace.jsonl")
    run.repair(["big"])
    run.retry()
    run.settle()
    return run


@pytest.mark.parametrize("form", ["path", "inline", "json_string"])
def test_compute_score_reads_the_trace_from_extra_info(
    sales: Callable[..., Sales], tmp_path: Path, form: str
) -> None:
    run = _written_run(sales, tmp_path)
    source: Any = {"path": str(tmp_path / "trace.jsonl"), "start_seq": run.start_seq}
    if form != "path":
        source = {"events": [e.model_dump(mode="json") for e in run.events], "start_seq": run.start_seq}
    if form == "json_string":
        source = json.dumps(source)
    truth, info = row("REPAIR", ["big"], {TRACE_KEY: source})
    out = compute_score("stateguard_synth", "<tool_call>...</tool_call>", truth, info)
    assert set(out) == KEYS
    expected = run.score(labels(True, affected=("big",)))
    assert out["score"] == pytest.approx(expected.score) == pytest.approx(1.0)
    assert (out["n_intervention"], out["conservative_inconsistency"]) == (
        1.0,
        1.0,
    )  # the retry's point is unlabelled


def test_every_sample_reports_the_same_keys(sales: Callable[..., Sales]) -> None:
    run = sales()  # empty continuation
    truth, info = row(
        "FINALIZE_RELATIONS",
        extra={TRACE_KEY: {"events": [e.model_dump() for e in run.events], "start_seq": run.start_seq}},
    )
    out = compute_score("stateguard_synth", "", truth, info)
    assert set(out) == KEYS and out["score"] == 0.0 and out["n_action"] == 0.0


def test_reward_kwargs_config_is_applied(sales: Callable[..., Sales], tmp_path: Path) -> None:
    run = sales(threshold=FAULTY, path=tmp_path / "trace.jsonl")
    run.settle()  # a missed repair
    truth, info = row(
        "REPAIR", ["big"], {TRACE_KEY: {"path": str(tmp_path / "trace.jsonl"), "start_seq": run.start_seq}}
    )
    default = compute_score("stateguard_synth", "", truth, info)["score"]
    zero = compute_score(
        "stateguard_synth", "", truth, info, config={"inapplicable": "zero", "beta_fn": 0.5}
    )["score"]
    assert default == pytest.approx((0.20 + 0.30 - 0.35 * 0.3) / 0.85)
    assert zero == pytest.approx(0.20 + 0.30 - 0.35 * 0.5)


def test_the_judge_endpoint_comes_from_the_config(sales: Callable[..., Sales], tmp_path: Path) -> None:
    run = sales(threshold=FAULTY, path=tmp_path / "trace.jsonl")
    run.repair(["big"])  # cut before the retry: the judge rates the repair
    with ScriptedServer([Reply(content='{"verdict": "partial"}')], model="judge-model") as server:
        judge = {"role": "judge", "base_url": server.base_url, "model": "judge-model", "max_retries": 0}
        truth, info = row(
            "REPAIR",
            ["big"],
            {TRACE_KEY: {"path": str(tmp_path / "trace.jsonl"), "start_seq": run.start_seq}},
        )
        out = compute_score("stateguard_synth", "", truth, info, config={"judge": judge})
        assert len(server.requests) == 1
    assert out["judged_repair_quality"] == 1.0 and out["r_intervention"] == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("info", "error", "message"),
    [
        ({}, ValueError, "extra_info has no 'stateguard_trace'"),
        ({TRACE_KEY: {"start_seq": 3}}, ValueError, "exactly one of 'path'"),
        ({TRACE_KEY: "{not json"}, ValueError, "not a valid trace source"),
        ({TRACE_KEY: {"path": "/nonexistent/trace.jsonl"}}, FileNotFoundError, "does not exist"),
    ],
)
def test_wiring_errors_say_what_the_rollout_must_provide(
    info: dict[str, Any], error: type, message: str
) -> None:
    truth, extra = row("FINALIZE_RELATIONS", extra=info)
    with pytest.raises(error, match=message):
        compute_score("stateguard_synth", "", truth, extra)


def test_a_bad_config_names_reward_kwargs() -> None:
    truth, info = row("FINALIZE_RELATIONS", extra={TRACE_KEY: {"events": [], "regime": "turn_aligned"}})
    with pytest.raises(ValueError, match="reward_kwargs.config is not a valid RewardConfig"):
        compute_score("stateguard_synth", "", truth, info, config={"w_support": 0.9})


@pytest.mark.slow
def test_verl_loads_and_calls_compute_score(sales: Callable[..., Sales], tmp_path: Path) -> None:
    """verl's own loader (custom_reward_function.path/name/reward_kwargs) and its call: keyword
    arguments, the agent loop's extra fields merged into extra_info, extra reward kwargs. Slow: verl
    imports torch; skipped where verl is not installed."""
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    run = sales(threshold=FAULTY, path=tmp_path / "trace.jsonl")
    run.settle()  # a missed repair
    root = Path(__file__).resolve().parents[3]
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": str(root / "training" / "rewards" / "verl_score.py"),
                    "name": "compute_score",
                    "reward_kwargs": {"config": {"inapplicable": "zero"}},
                }
            }
        }
    )
    fn = get_custom_reward_fn(config)
    assert fn is not None
    truth, info = row("REPAIR", ["big"])
    info |= {
        TRACE_KEY: {"path": str(tmp_path / "trace.jsonl"), "start_seq": run.start_seq}
    }  # tool_extra_fields
    info |= {"num_turns": 2, "rollout_reward_scores": {}}
    out = fn(data_source="stateguard_synth", solution_str="...", ground_truth=truth, extra_info=info)
    assert set(out) == KEYS and out["score"] == pytest.approx(0.20 + 0.30 - 0.35 * 0.3)
