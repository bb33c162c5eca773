"""Manager trajectories (B.3): real rollouts, Keep(τ), SFT dataset and verl RL prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stateguard.actions import validate_action
from stateguard.artifacts.corpus_records import (
    ActionRow,
    TrajectoryRecord,
    load_key,
    load_records,
    save_records,
)
from stateguard.lifecycle import ControlAction
from synthesis.export import export
from synthesis.tasks import build_task
from synthesis.trajectories import generate, keep


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_task(tmp_path_factory.mktemp("tasks"), dataset="penguins", seed=224049, turns=12)


@pytest.fixture(scope="module")
def records(task_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[TrajectoryRecord]:
    return generate(task_dir, tmp_path_factory.mktemp("traj"), seed=0, repairs=2)


def _split(records: list[TrajectoryRecord]) -> tuple[TrajectoryRecord, TrajectoryRecord]:
    clean = next(r for r in records if r.variant == "clean")
    repair = next(r for r in records if r.variant == "repair" and r.keep)
    return clean, repair


def test_clean_and_repair_are_kept(records: list[TrajectoryRecord]) -> None:
    clean, repair = _split(records)
    assert clean.keep and clean.rejections == []
    assert keep(repair, clean).keep
    assert repair.t_star is not None and repair.intervention is not None
    assert repair.answers[repair.t_star] == clean.answers[repair.t_star]
    repairs = [a for a in repair.action_events if a.name == "REPAIR" and a.accepted]
    assert len(repairs) == 1
    assert any(s.purpose == "faulty" for s in repair.worker_steps)


def test_keep_rejects_dropped_retry(records: list[TrajectoryRecord]) -> None:
    clean, repair = _split(records)
    tampered = repair.model_copy(
        update={"worker_steps": [s for s in repair.worker_steps if s.purpose != "recompute"]}
    )
    verdict = keep(tampered, clean)
    assert not verdict.keep and "demonstration_consumed" in verdict.failed


def test_keep_rejects_changed_prefix(records: list[TrajectoryRecord]) -> None:
    clean = next(r for r in records if r.variant == "clean")
    repair = next(r for r in records if r.keep and r.t_star is not None and r.t_star > 1)
    steps = list(repair.worker_steps)
    steps[0] = steps[0].model_copy(update={"action": steps[0].action + "\n# edited before t*"})
    verdict = keep(repair.model_copy(update={"worker_steps": steps}), clean)
    assert not verdict.keep and verdict.failed == ["replay_fidelity"]


def test_keep_rejects_second_repair(records: list[TrajectoryRecord]) -> None:
    clean, repair = _split(records)
    events = [*repair.action_events, ActionRow(seq=10**6, name="REPAIR", accepted=True, activation=99)]
    verdict = keep(repair.model_copy(update={"action_events": events}), clean)
    assert "demonstration_consumed" in verdict.failed


def test_export_dataset_and_rl(task_dir: Path, tmp_path: Path) -> None:
    from datasets import load_from_disk

    summary = export(
        task_dir.parent, tmp_path / "out", seed=0, repairs=1, autos=0, benign=0, heavy=0, abandon=0
    )
    assert summary["kept_by_variant"] == {"clean": 1, "repair": 1}
    ds = load_from_disk(str(tmp_path / "out" / "sft"))
    for col in ("messages", "tools", "variant", "kind", "task_id", "relations", "intervention_kind"):
        assert col in ds.column_names
    kinds = [k for k in ds["kind"]]
    assert kinds.count("full") == 2 and kinds.count("atomic") == summary["sft_samples"]["atomic"] > 0
    assert (tmp_path / "out" / "sft" / "README.md").read_text().count("| repair | atomic |") == 1
    controls = {c.value for c in ControlAction}
    for row in ds:
        if row["kind"] != "atomic":
            continue
        messages = json.loads(row["messages"])
        assert [m["role"] for m in messages[:2]] == ["system", "user"]
        assistants = [m for m in messages if m["role"] == "assistant"]
        calls = [c for m in assistants for c in m["tool_calls"]]
        for call in calls:
            validate_action(call["function"]["name"], json.loads(call["function"]["arguments"]))
        assert messages[-1]["role"] == "assistant" and len(messages[-1]["tool_calls"]) == 1
        assert [c["function"]["name"] in controls for c in calls].count(True) == 1
        assert calls[-1]["function"]["name"] in controls

    table = pq.read_table(tmp_path / "out" / "rl" / "prompts.parquet")
    assert set(table.column_names) >= {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    rows = table.to_pylist()
    truths = [json.loads(r["reward_model"]["ground_truth"]) for r in rows]
    repairs = [t for t in truths if t["action"] == "REPAIR"]
    assert len(repairs) == 1 and repairs[0]["affected_variables"]
    assert all(r["ability"] == "state_management" and r["prompt"][0]["role"] == "system" for r in rows)

    labels = [json.loads(r["extra_info"]["labels"]) for r in rows]
    assert [lab["g"] for lab in labels].count(1) == 1  # the one counterfactual decision point
    flagged = next(r for r, lab in zip(rows, labels, strict=True) if lab["g"] == 1)
    assert json.loads(flagged["reward_model"]["ground_truth"])["action"] == "REPAIR"
    assert json.loads(flagged["extra_info"]["worker_prefix"])["fault_turn"] == flagged["extra_info"]["turn"]


def test_auto_variant_detects_on_its_own(records: list[TrajectoryRecord]) -> None:
    clean = next(r for r in records if r.variant == "clean")
    autos = [r for r in records if r.variant == "auto"]
    kept = [r for r in autos if r.keep]
    assert kept, [r.rejections for r in autos]
    auto = kept[0]
    assert not any(a.forced for a in auto.activations)  # nothing prescribed
    repair = next(
        c for a in auto.activations if a.turn == auto.t_star for c in a.actions if c.name == "REPAIR"
    )
    assert repair.accepted and repair.arguments["analytical_evidence"].startswith("[parameters]")
    assert auto.answers == clean.answers == auto.reference_answers
    # Without the repair the branch teaches nothing: Keep names the missing detection.
    blind = [
        a.model_copy(update={"actions": [c for c in a.actions if c.name != "REPAIR"]})
        for a in auto.activations
    ]
    verdict = keep(auto.model_copy(update={"activations": blind}), clean)
    assert "autonomous_detection" in verdict.failed
    for rejected in (r for r in autos if not r.keep):
        assert rejected.rejections  # every rejection is counted with its reason


def test_export_resumes_from_cached_records(task_dir: Path, tmp_path: Path) -> None:
    first = export(task_dir.parent, tmp_path / "out", seed=0, repairs=1, autos=1)
    cache = tmp_path / "out" / "records" / f"{task_dir.name}.jsonl"
    assert cache.is_file()
    stamp = cache.stat().st_mtime_ns
    rl = (tmp_path / "out" / "rl" / "prompts.parquet").read_bytes()
    second = export(task_dir.parent, tmp_path / "out", seed=0, repairs=1, autos=1)
    assert cache.stat().st_mtime_ns == stamp  # nothing regenerated
    key, cached = load_records(cache)  # the typed records write back the very bytes they came from
    assert key is not None and key == load_key(cache) and key.repairs == 1 and key.autos == 1
    save_records(tmp_path / "again.jsonl", key, cached)
    assert (tmp_path / "again.jsonl").read_bytes() == cache.read_bytes()
    assert {k: v for k, v in second.items() if k != "elapsed_s"} == {
        k: v for k, v in first.items() if k != "elapsed_s"
    }
    assert (tmp_path / "out" / "rl" / "prompts.parquet").read_bytes() == rl
    capped = export(task_dir.parent, tmp_path / "capped", seed=0, repairs=1, autos=1, max_trajectories=1)
    assert capped["kept"] == 1


def test_llm_teacher_decides_auto_branches_through_a_real_endpoint(
    task_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.scripted_server import Reply, Respond, ScriptedServer

    finalize = Reply(
        content="", tool_calls=[{"name": "FINALIZE_RELATIONS", "arguments": {"mode": "confirm"}}]
    )
    with ScriptedServer([Respond(lambda request: finalize)] * 400) as server:
        monkeypatch.setenv("STATEGUARD_MANAGER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_MANAGER_MODEL", "scripted-teacher")
        records = generate(task_dir, tmp_path, seed=0, repairs=0, autos=2, teacher="llm")
        calls = len(server.requests)
    autos = [r for r in records if r.variant == "auto"]
    assert autos and calls > 0
    # the model's decisions are in the demonstrations, with the harness verdicts
    logged = [c for r in autos for a in r.activations for c in a.actions if c.name == "FINALIZE_RELATIONS"]
    assert len(logged) >= calls and all(c.accepted for c in logged)
    for r in autos:  # a teacher that never repairs keeps only what the rules tier caught on its own
        repaired = any(
            c.name == "REPAIR" and c.accepted for a in r.activations if a.turn == r.t_star for c in a.actions
        )
        assert r.keep == repaired, r.rejections
        if not r.keep:
            assert "autonomous_detection" in r.rejections
    with pytest.raises(ValueError, match="teacher"):
        generate(task_dir, tmp_path / "bad", seed=0, teacher="oracle")
