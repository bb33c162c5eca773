"""Benchmark worker faults: genuine at the answer level, contaminating, seeded, hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard.artifacts.task_folder import FAULTS_FILE, HIDDEN_DIR
from synthesis.replay import run_turns
from synthesis.sources.tabular import is_installed
from synthesis.tasks import build_task

pytestmark = pytest.mark.skipif(not is_installed("penguins"), reason="palmerpenguins not installed")


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_task(tmp_path_factory.mktemp("f"), dataset="penguins", seed=11, turns=16, worker_faults=2)


def test_faults_change_their_turn_and_contaminate_exactly_the_listed_turns(task: Path) -> None:
    turns = json.loads((task / "hidden" / "task.json").read_text())
    faults = json.loads((task / HIDDEN_DIR / FAULTS_FILE).read_text())
    assert len(faults) == 2 and faults[0]["turn"] < faults[1]["turn"]
    assert len({f["kind"] for f in faults}) == 2 and "numeric_parameter" in {f["kind"] for f in faults}
    codes = [t["code"] for t in turns]
    for f in faults:
        t = f["turn"]
        assert f["code"] != codes[t - 1]
        answers = run_turns([*codes[: t - 1], f["code"], *codes[t:]], task / "agent")
        wrong = [i + 1 for i, (a, t_) in enumerate(zip(answers, turns, strict=True)) if a != t_["answer"]]
        assert wrong == [t, *f["contaminates"]]  # the turn itself, then its contamination downstream
        assert all(c > t for c in f["contaminates"])


def test_faults_are_hidden_and_deterministic(task: Path, tmp_path: Path) -> None:
    manifest = json.loads((task / "manifest.json").read_text())
    assert not any("fault" in name for name in manifest["sha256"])  # nothing agent-visible
    again = build_task(tmp_path, dataset="penguins", seed=11, turns=16, worker_faults=2)
    assert (again / HIDDEN_DIR / FAULTS_FILE).read_bytes() == (task / HIDDEN_DIR / FAULTS_FILE).read_bytes()
    assert not (
        build_task(tmp_path / "plain", dataset="penguins", seed=11, turns=16) / HIDDEN_DIR / FAULTS_FILE
    ).exists()
