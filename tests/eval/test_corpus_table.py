"""`make tables RUN=<synthesis out_dir>` renders the corpus statistics `make synth` wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.corpus_table import find_corpus_stats
from eval.tables import main
from stateguard.corpus_stats import CorpusStats


def _synth_run(root: Path) -> Path:
    corpus = root / "elsewhere" / "corpus"
    corpus.mkdir(parents=True)
    stats = CorpusStats(
        tasks=2,
        trajectories=5,
        attempted=7,
        by_variant={"clean": 2, "repair": 2, "benign": 1},
        actions={"REPAIR": 2, "FINALIZE_RELATIONS": 8},
        intervention_samples={"genuine": 30, "benign": 10},
        constraints_per_state=3.25,
    )
    (corpus / "corpus_stats.json").write_text(stats.model_dump_json())
    run = root / "synth"
    run.mkdir()
    (run / "synth_summary.json").write_text(json.dumps({"export": {"out_dir": str(corpus)}}))
    return run


def test_synth_out_dir_prints_the_corpus_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _synth_run(tmp_path)
    assert find_corpus_stats(run) == tmp_path / "elsewhere" / "corpus" / "corpus_stats.json"
    assert main([str(run)]) == 0
    out = capsys.readouterr().out
    table = (run / "tables" / "corpus_stats.md").read_text()
    assert table in out
    assert "| constraints / state (all; where the question states requirements) | 3.25; 0.00 | 3-4 |" in table
    assert "10 (benign 25.0%)" in table
    assert "5 / 7 (clean 2 (40.0%), repair 2 (40.0%), benign 1 (20.0%))" in table


def test_a_damaged_record_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _synth_run(tmp_path)
    stats = tmp_path / "elsewhere" / "corpus" / "corpus_stats.json"
    stats.write_text("{not json")
    assert main([str(run)]) == 2
    assert str(stats) in capsys.readouterr().err
