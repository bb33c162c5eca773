"""The rules manager with semantic verification, end to end on the six-turn demo task (pandas,
DictWorkspace): a counterfactual the old checks could not see is repaired on probe evidence; the
clean run gets no repair; the evidence is in the trace as inspect_python / run_probe tool calls,
and in the segment flow the states carry executable requirement constraints."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.metrics.states import run_state_stats
from eval.scorers.fields import per_turn_correct
from stateguard.flows import LONGDS, FlowConfig
from stateguard.policies.rules import RulesManager
from stateguard.rollout import RolloutResult, rollout
from stateguard.store import StateStore
from stateguard.task import Task, load_task
from stateguard.trace import read_trace
from stateguard.verification.verifier import SemanticVerifier
from stateguard.workers import Fault, FaultModel, ResponseModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

ROOT = Path(__file__).resolve().parents[3]
SEGMENT = FlowConfig(
    name="segment-3",
    regime="segment_induced",
    review_every=3,
    budget_unit="task",
    baseline_budget=100,
    stateguard_budget=100,
)


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")


def run(
    task: Task, tmp: Path, faults: list[Fault], flow: FlowConfig, semantic: bool = True
) -> tuple[RolloutResult, dict[int, bool]]:
    manager = RulesManager(semantic=SemanticVerifier() if semantic else None)
    result = rollout(
        task,
        ScriptedWorker(FaultModel(faults=faults), reference=task),
        DictWorkspace(),
        flow=flow,
        manager=manager,
        run_dir=tmp,
    )
    return result, per_turn_correct({t.turn_id: t.answer for t in task.turns}, result.answers)


def ascending(task: Task) -> Fault:
    """Turn 3 ranks the regions the wrong way round: 'the most orders' becomes the fewest."""
    code = task.turn(3).code.replace("ascending=False", "ascending=True")
    return Fault(kind="counterfactual", turn=3, code=code)


def test_ranking_mistake_is_repaired_on_probe_evidence(task: Task, tmp_path: Path) -> None:
    plain, plain_ok = run(task, tmp_path / "off", [ascending(task)], LONGDS, semantic=False)
    guard, guard_ok = run(task, tmp_path / "on", [ascending(task)], LONGDS)
    assert plain_ok[3] is False and plain.repairs == 0  # the old checks cannot see it
    assert guard_ok[3] is True and guard.repairs == 1
    events = read_trace(tmp_path / "on" / "trace.jsonl")
    repair = next(e for e in events if e.kind == "repair")
    assert "[semantic] order requirement" in repair.payload["evidence"]
    hint = next(e for e in events if e.kind == "hint_delivered" and e.payload["hint"]["kind"] == "repair")
    assert hint.payload["hint"]["error_variables"] == ["region_counts"]
    tools = {e.payload["name"] for e in events if e.kind == "tool"}
    assert {"inspect_python", "compile_python", "run_probe", "check_execution"} <= tools


@pytest.mark.parametrize("flow", [LONGDS, SEGMENT], ids=["turn_aligned", "segment_every_3"])
def test_clean_run_gets_no_repair(task: Task, tmp_path: Path, flow: FlowConfig) -> None:
    result, ok = run(task, tmp_path, [], flow)
    assert result.repairs == 0 and all(ok.values())


def test_segment_flow_states_carry_executable_requirements(task: Task, tmp_path: Path) -> None:
    run(task, tmp_path, [], SEGMENT)
    events = read_trace(tmp_path / "trace.jsonl")
    committed = [e.payload["state"] for e in events if e.kind == "state_committed"]
    coded = [
        c
        for s in committed
        for c in s["constraints"]
        if c.get("code") and c["text"].startswith("requirement:")
    ]
    assert (
        coded
    )  # e.g. the reported fields' check, where the review came before the next turn rebound `result`
    checks = [r for e in events if e.kind == "constraint_checks" for r in e.payload["results"]]
    assert checks and all(r["passed"] for r in checks)
    store = StateStore.open_read_only(tmp_path / "states.sqlite")
    try:
        stats = run_state_stats(events, store)
    finally:
        store.close()
    assert stats.executable_constraints == len(coded) and stats.tools["inspect_python"] >= len(committed)


def _coded(events: list) -> list[list[dict]]:
    """Per committed state, its requirement constraints that carry code."""
    return [
        [
            c
            for c in e.payload["state"]["constraints"]
            if c.get("code") and c["text"].startswith("requirement:")
        ]
        for e in events
        if e.kind == "state_committed"
    ]


def test_turn_aligned_states_get_executable_requirements_at_update(task: Task, tmp_path: Path) -> None:
    """The state opens before the work (requirements in words); UPDATE gives them code once the
    turn's code is known, the harness evaluates them, and they pass on the clean run."""
    run(task, tmp_path, [], LONGDS)
    events = read_trace(tmp_path / "trace.jsonl")
    opened = [e.payload["draft"]["constraints"] for e in events if e.kind == "state_opened"]
    assert opened and not any(c.get("code") for cs in opened for c in cs)  # words at OPEN
    coded = _coded(events)
    assert len(coded) == len(task.turns) and sum(map(len, coded)) >= len(task.turns)
    texts = [c["text"] for cs in coded for c in cs]
    assert len(texts) == len(set(texts)) or all(len({c["text"] for c in cs}) == len(cs) for cs in coded)
    checks = [r for e in events if e.kind == "constraint_checks" for r in e.payload["results"]]
    assert len(checks) >= sum(map(len, coded)) and all(r["passed"] for r in checks)
    tools = [e.payload["name"] for e in events if e.kind == "tool"]
    assert tools.count("compile_python") >= len(task.turns)


def test_turn_aligned_executable_requirement_fails_then_holds_after_the_retry(
    task: Task, tmp_path: Path
) -> None:
    result, ok = run(task, tmp_path, [ascending(task)], LONGDS)
    assert ok[3] is True and result.repairs == 1
    events = read_trace(tmp_path / "trace.jsonl")
    turn3 = [
        r
        for e in events
        if e.kind == "constraint_checks"
        for r in e.payload["results"]
        if "ranked by" in r["text"]
    ]
    assert [r["passed"] for r in turn3] == [False, True]  # the faulty ranking, then the correct retry
    state3 = [e.payload["state"] for e in events if e.kind == "state_committed"][2]
    assert any(c["text"] == turn3[0]["text"] and c.get("code") for c in state3["constraints"])


def test_segment_flow_retry_refreshes_the_checks_and_commits_without_fallback(
    task: Task, tmp_path: Path
) -> None:
    """Segment flow: the ranking check attached at OPEN fails on the faulty code; after the repair
    the checks are made again from the retry's code at UPDATE, they pass, and the state commits
    by the manager's own decision (no fallback after a refused FINALIZE)."""
    result, _ = run(task, tmp_path, [ascending(task)], SEGMENT)
    assert result.repairs == 1
    events = read_trace(tmp_path / "trace.jsonl")
    ranked = [
        r["passed"]
        for e in events
        if e.kind == "constraint_checks"
        for r in e.payload["results"]
        if "ranked by" in r["text"]
    ]
    assert ranked[0] is False and ranked[-1] is True
    # the refresh read the retry's code: its report, not rebuilt since, is now checked as well
    s3 = [[r["text"] for r in e.payload["results"]] for e in events if e.kind == "constraint_checks"][1:3]
    assert len(s3[1]) > len(s3[0]) and any("reports top_region" in t for t in s3[1])
    assert not [e for e in events if e.kind == "manager_fallback"]
    refused = [e for e in events if e.kind == "action" and e.payload["name"] == "FINALIZE_RELATIONS"]
    assert all(e.payload["accepted"] for e in refused)


class NeverFixes(ResponseModel):
    """A scripted worker that answers every hint by rerunning its turn unchanged."""

    def fixes(self, fault: Fault, names: set[str], reason: str, footprint: set[str]) -> bool:
        return False


def test_a_finding_the_retry_leaves_unchanged_is_dropped_not_abandoned(task: Task, tmp_path: Path) -> None:
    """The worker ignores the repair: the failing requirement check is kept as an unverified
    constraint and the state commits; no activation ends in the abandon fallback."""
    result = rollout(
        task,
        ScriptedWorker(FaultModel(faults=[ascending(task)]), NeverFixes(p_flip=0.0), reference=task),
        DictWorkspace(),
        flow=LONGDS,
        manager=RulesManager(semantic=SemanticVerifier()),
        run_dir=tmp_path,
    )
    events = read_trace(tmp_path / "trace.jsonl")
    assert result.repairs >= 1
    assert result.manager_fallbacks == 0
    assert not [e for e in events if e.kind in ("state_abandoned", "manager_fallback")]
    assert len(result.committed_states) == len(task.turns)


def test_a_broken_requirement_the_answer_gate_lets_go_is_noted_in_the_trace(
    task: Task, tmp_path: Path
) -> None:
    """Turn 6 cut at 30 instead of the stated 40: the flag is the same either way (the margin per
    order is far above both), so the gate drops the finding; the trace says so in a manager note."""
    code = task.turn(6).code.replace("> 40", "> 30")
    run(task, tmp_path, [Fault(kind="counterfactual", turn=6, code=code)], LONGDS)
    notes = [e.payload["note"] for e in read_trace(tmp_path / "trace.jsonl") if e.kind == "manager_note"]
    assert notes and all(n.startswith("[semantic] ") for n in notes)
    assert any("> 40" in n and "reports the same answer; no finding" in n for n in notes)


def test_a_clean_run_notes_nothing_let_go(task: Task, tmp_path: Path) -> None:
    run(task, tmp_path, [], LONGDS)
    assert not [e for e in read_trace(tmp_path / "trace.jsonl") if e.kind == "manager_note"]
