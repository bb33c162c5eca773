"""The hand-written development set: its shape, its faults, and one task built end to end."""

from __future__ import annotations

import json
from pathlib import Path

from eval.benchmarks.dev.build import build, load_sources
from stateguard.artifacts.mistakes import MISTAKES
from stateguard.workers.faults import check_faults

# Every kind of the mistakes table but the catch-all and the category scope, which only the
# synthesized IN-list interventions make (the hand-written tasks have no IN lists to change).
KINDS = set(MISTAKES) - {"counterfactual:other", "counterfactual:category_scope"}


def test_the_dev_set_is_long_varied_and_has_a_held_out_split() -> None:
    everything = load_sources()
    sources = [s for s in everything if s.split != "fresh"]
    assert len(sources) >= 6 and all(len(s.turns) >= 12 for s in sources)
    assert len({f for s in sources for f in s.data.values()}) >= 3
    assert any("duckdb" in t.code for s in sources for t in s.turns)  # at least one task in SQL
    assert {s.split for s in everything} == {"dev", "heldout", "fresh"}
    for source in everything:
        labels = {f.label for faults in source.faults.values() for f in faults}
        if source.split == "fresh":  # the semantic held-out split: shorter, counterfactuals only
            assert (
                len(source.turns) >= 5
                and len(labels) >= 6
                and all(lab.startswith("counterfactual:") for lab in labels)
            )
        else:
            assert labels == KINDS, f"{source.id}: missing kinds {sorted(KINDS - labels)}"
        assert all(len(faults) == 1 for faults in source.faults.values())  # single-fault variants
        for name, faults in source.faults.items():
            check_faults(source.task(), faults, where=f"{source.id}, variant {name!r}")


def test_building_a_task_checks_that_every_fault_changes_its_turn(tmp_path: Path) -> None:
    manifest = build(tmp_path, only={"agriculture/barley/task1"})
    turns = json.loads((tmp_path / "task/longds/agriculture/barley/task1/task.json").read_text())
    assert len(turns) == manifest["tasks"]["agriculture/barley/task1"]["turns"] >= 12
    assert all(t["answer"] for t in turns)
    faults = json.loads((tmp_path / "task/longds/agriculture/barley/task1/faults.json").read_text())
    assert len(faults["variants"]) == len(KINDS)
    assert (tmp_path / "data/longds/agriculture/barley/task1/data/barley.json").is_file()
    assert manifest["splits"] == {"agriculture__barley__task1": "dev"}
