"""Benchmark worker faults: genuine at the answer level, contaminating, seeded, hidden."""

from __future__ import annotations

import json
import shutil
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


def test_stopping_a_run_at_an_unchanged_answer_chooses_the_same_faults(
    task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner stops a candidate's run once its own turn's answer is unchanged; run to the end
    instead (the hook ignored), it chooses the very same faults, byte for byte."""
    from synthesis import worker_faults

    real = worker_faults.run_turns
    stopped: list[int] = []

    def to_the_end(codes: list[str], base: Path, after_turn: object = None) -> list[object]:
        answers = real(codes, base)
        if after_turn is not None:
            kept = real(codes, base, after_turn)  # type: ignore[arg-type]
            assert kept == answers[: len(kept)]
            stopped.append(len(codes) - len(kept))
        return answers

    copy = tmp_path / task.name
    shutil.copytree(task, copy)
    monkeypatch.setattr(worker_faults, "run_turns", to_the_end)
    worker_faults.plan_worker_faults(copy, seed=11, n=2)
    assert (copy / HIDDEN_DIR / FAULTS_FILE).read_bytes() == (task / HIDDEN_DIR / FAULTS_FILE).read_bytes()
    assert stopped  # every candidate was run both ways
