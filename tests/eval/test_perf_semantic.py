"""The semantic bench's model-backed settings: `llm` and `hierarchical` ask the same endpoint (a real
HTTP server on 127.0.0.1 answering with schema instances), and the bench counts each setting's
model calls from the rollouts' `llm_calls.jsonl` and reports calls per rollout and seconds per call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from eval.benchmarks.dev.bench import ensure_built
from eval.benchmarks.dev.build import MANIFEST, build, sources_digest
from eval.perf.semantic import render, run
from tests.support.schema_model import SchemaModel
from tests.support.scripted_server import Respond, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]


TASK = "transport/driving/task1"


@pytest.fixture(scope="module")
def dev_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dev set of the one task these tests run, built once for the module (the bench only reads
    it; each test writes its rollouts under its own `out`). Building all 41 tasks took 6 minutes on
    a busy 2-core machine, so the partial build's manifest is stamped with the sources' digest:
    `ensure_built` then keeps it instead of rebuilding the whole set."""
    root = tmp_path_factory.mktemp("dev")
    manifest = build(root, only={TASK})
    (root / MANIFEST).write_text(
        json.dumps({**manifest, "sources_sha256": sources_digest()}), encoding="utf-8"
    )
    assert ensure_built(root)["tasks"].keys() == {TASK}  # kept as it is, not rebuilt
    return root


def _cfg(tmp: Path, dev: Path, *overrides: str) -> Any:
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose(
            "perf_semantic",
            overrides=[
                "bench=dev",
                f"bench.data_dir={dev}",
                "bench.variants=[clean]",
                f"task_ids=[{TASK}]",
                "workers=1",
                f"out={tmp / 'out'}",
                "llm.max_retries=0",
                "llm.timeout_s=10",
                *overrides,
            ],
        )


def test_llm_and_hierarchical_calls_are_counted_per_setting(
    tmp_path: Path, dev_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer([Respond(SchemaModel())] * 400, flavor="llama.cpp", context_window=32768) as server:
        monkeypatch.setenv("STATEGUARD_MANAGER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_MANAGER_MODEL", "scripted-schema")
        report = run(_cfg(tmp_path, dev_dir, "settings=[llm,hierarchical]"))
        chats = sum(1 for r in server.requests if "messages" in r)
    saved = json.loads((tmp_path / "out" / "semantic.json").read_text())
    calls = {r["setting"]: r["model_calls"] for r in saved["runs"]}
    # Every chat request the server answered is one counted call of exactly one setting.
    assert calls["baseline"] == 0 and calls["llm"] + calls["hierarchical"] == chats
    # The llm manager asks at every activation; the hierarchical one only on unverified requirements.
    assert calls["llm"] >= 5 > calls["hierarchical"]
    llm = report["settings"]["llm"]
    assert llm["model_calls_per_rollout"] == calls["llm"] and llm["seconds_per_call"] > 0
    assert "calls per rollout" in render(report)


def test_an_unknown_setting_is_refused_before_any_rollout(tmp_path: Path, dev_dir: Path) -> None:
    with pytest.raises(ValueError, match="settings: unknown \\['llm_manager'\\]"):
        run(_cfg(tmp_path, dev_dir, "settings=[llm_manager]"))
    with pytest.raises(ValueError, match="no such task in bench=dev"):
        run(_cfg(tmp_path, dev_dir, "settings=[llm]", "task_ids=[transport/driving/task9]"))
    assert not (tmp_path / "out").exists()


def test_a_dict_workspace_replays_in_process_with_the_same_answers(tmp_path: Path, dev_dir: Path) -> None:
    """`workspace=dict` runs the rollouts in process (no kernel): the clean variant's answers are the
    sandbox's, and a workspace it does not know is refused before any rollout."""
    with pytest.raises(ValueError, match="workspace='vm'"):
        run(_cfg(tmp_path, dev_dir, "settings=[rules]", "workspace=vm"))
    answers = {}
    for kind in ("sandbox", "dict"):
        run(_cfg(tmp_path / kind, dev_dir, "settings=[rules]", f"workspace={kind}"))
        saved = json.loads((tmp_path / kind / "out" / "semantic.json").read_text())
        answers[kind] = {(r["setting"], r["variant"]): r["correct"] for r in saved["runs"]}
    assert answers["dict"] == answers["sandbox"] and len(answers["dict"]) == 2
    assert all(all(v for v in c.values()) for c in answers["dict"].values())


def _row(setting: str, variant: str, correct: dict[int, bool]) -> dict[str, Any]:
    return {
        "task": "t",
        "variant": variant,
        "setting": setting,
        "meta": {"kind": "join", "turn": 1} if variant != "clean" else None,
        "correct": {str(k): v for k, v in correct.items()},
        "parents": {"2": [1], "3": [1]},
        "turns": 3,
        "footprint": ["x"],
        "repairs": [],
        "destructive": 0,
        "tools": {},
        "coded": 0,
        "states": 3,
        "model_calls": 0,
        "model_s": 0.0,
    }


def test_the_report_gives_each_settings_dcr_on_the_mistake_variants() -> None:
    """Baseline: a wrong turn 1 spreads to turn 2 (contaminated 1 of 2 wrong) in one variant, and
    the other variant is right throughout (clean 0 of 2 wrong): DCR 50 points. A setting that fixes
    turn 1 leaves no contaminated turn, so its DCR is undefined, never 0."""
    from eval.perf.semantic import summarize

    rows = [
        _row("baseline", "clean", {1: True, 2: True, 3: True}),
        _row("baseline", "join-t1", {1: False, 2: False, 3: True}),
        _row("baseline", "join-t2", {1: True, 2: True, 3: True}),
        _row("rules", "clean", {1: True, 2: True, 3: True}),
        _row("rules", "join-t1", {1: True, 2: True, 3: True}),
        _row("rules", "join-t2", {1: True, 2: True, 3: True}),
    ]
    report = summarize(rows)
    assert report["baseline_fault_dcr"] == 50.0
    assert report["settings"]["rules"]["fault_dcr"] is None
    text = render(report)
    assert "DCR there 50.0" in text and "DCR there undefined" in text
    # the counts behind the two rates: 1 of 2 wrong after a wrong parent, 0 of 2 otherwise; the fixing
    # setting has no turn after a wrong parent (0/0) and 0 of 4 wrong otherwise
    assert report["baseline_fault_dcr_counts"] == {
        "wrong_after_a_wrong_parent": "1/2",
        "wrong_otherwise": "0/2",
    }
    assert report["settings"]["rules"]["fault_dcr_counts"] == {
        "wrong_after_a_wrong_parent": "0/0",
        "wrong_otherwise": "0/4",
    }
    assert "DCR there 50.0 (wrong after a wrong parent 1/2, otherwise 0/2)" in text


def test_a_run_folder_resumes_only_under_the_same_code_and_settings(tmp_path: Path, dev_dir: Path) -> None:
    """A second run with the same `out` reuses the finished rollouts (a rollout whose outcome file was cut
    short runs again); other settings, other code, or a folder of an older version that recorded neither
    are refused with the fix, before any rollout."""
    cfg = _cfg(tmp_path, dev_dir, "settings=[rules]", "workspace=dict")
    run(cfg)
    first = json.loads((tmp_path / "out" / "semantic.json").read_text())["runs"]
    card = json.loads((tmp_path / "out" / "run.json").read_text())
    assert len(card["code_sha256"]) == 64 and card["config"]["settings"] == ["rules"]
    outcomes = sorted((tmp_path / "out").glob("*/*/*/outcome.json"))
    assert len(outcomes) == 2  # the clean variant, baseline and rules
    outcomes[0].write_text('{"answers": {', encoding="utf-8")  # a full disk cut it short
    run(cfg)
    again = json.loads((tmp_path / "out" / "semantic.json").read_text())["runs"]
    assert [r["correct"] for r in again] == [r["correct"] for r in first]
    assert json.loads(outcomes[0].read_text())["answers"]  # run again and written whole
    with pytest.raises(ValueError, match=r"other settings.*Pass a new out="):
        run(_cfg(tmp_path, dev_dir, "settings=[semantic]", "workspace=dict"))
    (tmp_path / "out" / "run.json").write_text(
        json.dumps({**card, "code_sha256": "0" * 64}), encoding="utf-8"
    )
    with pytest.raises(ValueError, match="other code"):
        run(cfg)
    (tmp_path / "out" / "run.json").unlink()
    with pytest.raises(ValueError, match="no run.json"):
        run(cfg)


def test_the_report_says_where_each_mistake_ended_up_over_the_same_turns() -> None:
    """Turn 1 is the mistaken turn, turn 2 reads it and turn 3 reads turn 2 (downstream twice over).
    `late` fixes only the later turns (turn 1 stays wrong), `early` fixes turn 1 in one variant and
    misses the other: DCR favours `late` (0 of 2 after a wrong parent), the counts say `early` left
    fewer turns wrong."""
    from eval.perf.semantic import summarize

    def row(setting: str, variant: str, correct: dict[int, bool]) -> dict[str, Any]:
        return {**_row(setting, variant, correct), "parents": {"2": [1], "3": [2]}}

    rows = [
        row("baseline", "join-t1", {1: False, 2: False, 3: False}),
        row("baseline", "join-t1b", {1: False, 2: False, 3: True}),
        row("late", "join-t1", {1: False, 2: True, 3: True}),
        row("late", "join-t1b", {1: False, 2: True, 3: True}),
        row("early", "join-t1", {1: True, 2: True, 3: True}),
        row("early", "join-t1b", {1: False, 2: False, 3: True}),
    ]
    report = summarize(rows)
    assert report["baseline_fault_spread"] == {"mistaken_turn_wrong": "2/2", "downstream_wrong": "3/4"}
    late, early = report["settings"]["late"], report["settings"]["early"]
    assert late["fault_spread"] == {"mistaken_turn_wrong": "2/2", "downstream_wrong": "0/4"}
    assert early["fault_spread"] == {"mistaken_turn_wrong": "1/2", "downstream_wrong": "1/4"}
    assert late["fault_dcr"] is not None and early["fault_dcr"] is not None
    assert late["fault_dcr"] < early["fault_dcr"]  # 0 - 0 against 50 - 0: the rate, not the count
    assert "the mistaken turn left wrong 1/2, turns downstream of it left wrong 1/4" in render(report)
