"""The StateWise benchmark: deterministic case sets of the promised size and mix, a held-out split
with other vocabularies, scoring that can fail, and a subset run through the real runner (the
scripted planner, and the LLM planner over HTTP against a scripted model)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from eval.benchmarks.statewise import coding_world, data_world
from eval.benchmarks.statewise.case import store_for
from eval.benchmarks.statewise.execute import Runtime, run_case
from eval.benchmarks.statewise.generate import generate, summary
from eval.benchmarks.statewise.run import run
from statewise.interfaces import get_interface
from statewise.planner import ScriptedPlanner
from tests.support.scripted_server import Respond, ScriptedServer
from tests.support.statewise_model import planning_model

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def dev() -> list:
    return generate("dev")


def test_dev_split_has_the_papers_size_and_mix(dev: list) -> None:
    s = summary(dev)
    assert s["cases"] == 150 and s["kind"] == {"operation": 125, "safe_stop": 25}
    assert s["interface"] == {"coding": 75, "data": 75} and set(s["corruption"]) == {
        "stale",
        "conflict",
        "scope",
    }
    assert s["sequences"] == 50 and all(len(c.later) == 3 for c in dev if c.later)
    assert len({c.case_id for c in dev}) == 150 and len(s["family"]) >= 20


def test_every_case_is_consistent_and_its_corruption_matters(dev: list) -> None:
    for case in dev[::7]:
        spec = get_interface(case.interface).spec
        clean, bad = store_for(case, "clean"), store_for(case, "corrupted")
        planner = ScriptedPlanner(spec)
        assert planner.propose(case.task, clean.retrieve(case.task.scope)) == case.reference
        assert (
            planner.propose(case.task, bad.retrieve(case.task.scope)).signature()
            != case.reference.signature()
        )
        assert case.reference.is_stop == (case.kind == "safe_stop")
        key_scope = f"{case.target.key}@{case.target.scope}"
        assert case.truth[key_scope] == case.target.value != case.corrupted.value
        if case.corruption == "conflict":
            assert case.conflicting and all(e.age_days < case.corrupted.age_days for e in case.conflicting)
        if case.corruption == "scope":
            assert (
                case.corrupted.scope != case.target.scope
                and case.corrupted.provenance_scope == case.also_replaces[0].scope
            )
        clean.close()
        bad.close()


def test_generation_is_deterministic_and_the_held_out_split_uses_other_names() -> None:
    digest = lambda cases: hashlib.sha256("".join(c.model_dump_json() for c in cases).encode()).hexdigest()  # noqa: E731
    first, second = generate("heldout", ("coding",)), generate("heldout", ("coding",))
    assert digest(first) == digest(second) and len(first) == 30
    held = generate("heldout", ("data",))
    dev_names = set(data_world.POOLS["dev"]["datasets"]) | set(coding_world.POOLS["dev"]["packages"])
    used = {c.task.scope.split("/")[1] for c in first + held}
    assert used and not used & dev_names
    assert not set(data_world.POOLS["heldout"]["projects"]) & set(data_world.POOLS["dev"]["projects"])


def test_scoring_catches_wrong_and_unsafe_outcomes(tmp_path: Path, dev: list) -> None:
    """A clean-store plain run is correct; a corrupted one is not; a deleting safe-stop case is unsafe."""
    data_case = next(c for c in dev if c.interface == "data" and c.family.startswith("report_total"))
    stop_case = next(c for c in dev if c.family.startswith("prune_logs") and c.kind == "safe_stop")
    runtime = Runtime(tmp_path / "work")
    try:
        by = {r.condition: r for r in run_case(runtime, data_case, ["clean", "corrupted", "statewise"])}
        assert by["clean"].correct and not by["corrupted"].correct and by["statewise"].correct
        stop = {r.condition: r for r in run_case(runtime, stop_case, ["clean", "corrupted", "statewise"])}
        assert stop["clean"].correct and stop["clean"].stopped
        assert stop["corrupted"].unsafe and any(
            "deleted" in v or "protected" in v for v in stop["corrupted"].violations
        )
        assert stop["statewise"].correct and not stop["statewise"].unsafe and stop["statewise"].questions >= 1
    finally:
        runtime.close()


def test_one_runtime_runs_data_cases_of_different_worlds_in_turn(tmp_path: Path, dev: list) -> None:
    """The data kernel is kept across cases while the harness rewrites the project on the host: every
    case must act on its own world (a kernel working on a copy made at start would act on the first)."""
    cases = [c for c in dev if c.interface == "data"][:3]
    assert len({c.world.model_dump_json() for c in cases}) == 3
    runtime = Runtime(tmp_path / "work")
    try:
        results = [r for c in cases for r in run_case(runtime, c, ["clean", "statewise"])]
    finally:
        runtime.close()
    assert [(r.case_id, r.condition, r.error, r.correct) for r in results] == [
        (c.case_id, cond, None, True) for c in cases for cond in ("clean", "statewise")
    ]


def _cfg(run_dir: Path, *over: str) -> DictConfig:
    overrides = [f"run_dir={run_dir}", "workers=1", "progress=false", *over]
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base=None):
        return compose("statewise", overrides=overrides)


def test_a_subset_runs_through_the_runner_with_sequences(tmp_path: Path) -> None:
    cfg = _cfg(
        tmp_path / "run",
        "limit=1",
        "conditions=[clean,corrupted,removed,statewise,no_attribution]",
        "sequence_conditions=[corrupted,statewise,statewise_then_plain,no_persistence_then_plain]",
    )
    out = run(cfg)
    rows = {r.condition: r for r in out.conditions}
    assert rows["clean"].oc == 100.0 and rows["corrupted"].oc == 0.0 and rows["statewise"].oc == 100.0
    assert rows["statewise"].uar == 0.0 and rows["statewise"].outside_changes == 0
    assert rows["no_attribution"].probes < rows["statewise"].probes
    seq = {s.condition: s for s in out.sequences}
    assert seq["statewise"].reuse == 100.0 and seq["statewise"].retrieval == 100.0
    assert (
        seq["statewise_then_plain"].later_correct_safe > seq["no_persistence_then_plain"].later_correct_safe
    )
    assert seq["corrupted"].later_correct_safe < seq["statewise"].later_correct_safe
    tables = (tmp_path / "run" / "tables.md").read_text()
    assert "| statewise | 2 | 100.0 |" in tables and "93.3 / 92.8 / 0.0" in tables
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["cases"]["cases"] == 2
    again = run(
        _cfg(
            tmp_path / "run",
            "limit=1",
            "conditions=[clean,corrupted,removed,statewise,no_attribution]",
            "sequence_conditions=[corrupted,statewise,statewise_then_plain,no_persistence_then_plain]",
            "resume=true",
        )
    )
    assert again.conditions == out.conditions  # resumed: nothing rerun, the same numbers
    with pytest.raises(FileExistsError, match="resume=true"):
        run(cfg)


def test_the_llm_planner_runs_the_benchmark_over_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = {name: get_interface(name).spec for name in ("data", "coding")}
    models = {name: planning_model(spec) for name, spec in specs.items()}

    def model(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        op = prompt.split("Operation: ", 1)[1].split(" - ", 1)[0]
        return models["data" if op in specs["data"].operations else "coding"](request)

    with ScriptedServer([Respond(model)] * 400) as server:
        monkeypatch.setenv("STATEGUARD_WORKER_BASE_URL", server.base_url)
        monkeypatch.setenv("STATEGUARD_WORKER_MODEL", "scripted-planner")
        out = run(
            _cfg(
                tmp_path / "llm",
                "limit=1",
                "planner=llm",
                "conditions=[corrupted,statewise]",
                "sequences=false",
            )
        )
        assert len(server.requests) > 20
    rows = {r.condition: r for r in out.conditions}
    assert rows["statewise"].oc == 100.0 and rows["corrupted"].oc == 0.0 and rows["statewise"].errors == 0


def test_a_missing_endpoint_fails_before_any_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STATEGUARD_WORKER_BASE_URL", raising=False)
    with pytest.raises(Exception, match="STATEGUARD_WORKER_BASE_URL"):
        run(_cfg(tmp_path / "x", "planner=llm"))
    assert not (tmp_path / "x" / "results").exists()
