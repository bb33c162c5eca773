"""The lifecycle table (LEGAL / NEXT_ACTOR) as the harness enforces it, cell by cell.

Every (regime, stage, control action) cell is driven on a fresh harness: legal cells must move
to the table's next stage and hand the turn to the table's actor; illegal cells must be refused
without touching the stage, the draft, the store or the workspace.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from stateguard import DictWorkspace, EventType, Harness, HarnessConfig, StateStore, WorkerStep
from stateguard.actions import RawAction
from stateguard.harness import HarnessResult, Outcome
from stateguard.lifecycle import LEGAL, NEXT_ACTOR, Actor, Regime
from stateguard.lifecycle import ControlAction as A
from stateguard.lifecycle import Stage as S

TA, SI = Regime.TURN_ALIGNED, Regime.SEGMENT_INDUCED
TOTAL_AT_COMMIT = 100  # value of `total` in the workspace when the baseline state S1 is committed
DRAFT_TOTAL = 42  # value the manager reports for `total` in every draft
HINT = {
    "error_variables": ["total"],
    "faulty_reasoning": "the total still counts cancelled orders although the task says to leave them out",
}


# ----------------------------------------------------------------------------- helpers
def make(regime: Regime, **config: Any) -> tuple[Harness, DictWorkspace]:
    ws = DictWorkspace({"total": TOTAL_AT_COMMIT, "orders": [3, 4, 5]})
    return Harness(StateStore(":memory:"), HarnessConfig(regime=regime, **config), workspace=ws), ws


def worker_step(h: Harness, code: str = "total = orders.sum()") -> int:
    index = max(h.steps) + 1 if h.steps else 0
    h.record_step(WorkerStep(index=index, action=code, output="ok"))
    return index


def args_for(h: Harness, action: A) -> dict[str, Any]:
    """Valid arguments for `action` given the harness's current store and steps."""
    if action is A.OPEN_STATE:
        latest = h.store.latest_id()
        return {"issue": "net order total", "relations": [{"related_state_id": latest}] if latest else []}
    if action is A.UPDATE_STATE:
        args: dict[str, Any] = {
            "used_variables": [{"name": "total", "value": DRAFT_TOTAL}],
            "conclusions": [{"text": "orders were summed", "variables": ["total"]}],
        }
        if h.config.regime is SI:
            pending = [i for i in h.steps if i >= h.traced_upto]
            args["source_interval"] = [min(pending), max(pending)]
        return args
    if action is A.FINALIZE_RELATIONS:
        return {"mode": "confirm"}
    if action is A.REPAIR:
        return {"analytical_evidence": "a probe found cancelled rows in the summed frame", "error_hint": HINT}
    if action in (A.ABANDON_STATE, A.ABSTAIN):
        return {"reason": "nothing useful formed"}
    return {}  # RESUME_WORKER, COMMIT_STATE


def apply(h: Harness, action: A, args: dict[str, Any] | None = None) -> HarnessResult:
    return h.apply(RawAction(name=action.value, arguments=args_for(h, action) if args is None else args))


def ok(h: Harness, action: A, args: dict[str, Any] | None = None) -> HarnessResult:
    result = apply(h, action, args)
    assert result.accepted, result.feedback
    return result


def drive_to(h: Harness, stage: S) -> None:
    """Commit a baseline state S1, then reach `stage` through legal actions only."""
    turn = h.config.regime is TA

    def open_() -> None:
        if turn:
            h.begin_review(EventType.TURN_START)
        else:
            worker_step(h)
            h.begin_review(EventType.PAUSE)
        ok(h, A.OPEN_STATE)

    def update() -> None:
        if turn:
            worker_step(h)
            h.begin_review(EventType.TURN_END)
        ok(h, A.UPDATE_STATE)

    open_(), update(), ok(h, A.FINALIZE_RELATIONS), ok(h, A.COMMIT_STATE)
    assert h.store.ids() == ["S1"] and h.stage is S.IDLE
    if stage is S.IDLE:
        if not turn:
            worker_step(h)  # a pending step the manager may resume over or open a state on
            h.begin_review(EventType.PAUSE)
        return
    open_()
    if stage is not S.OPEN:
        update()
        if stage is S.REPAIRING:
            ok(h, A.REPAIR)
            worker_step(h, "total = orders.sum()  # retry")
            h.begin_review(EventType.REPAIR_RETURN)
        elif stage is S.FINALIZED:
            ok(h, A.FINALIZE_RELATIONS)
    assert h.stage is stage


def check_cell(regime: Regime, stage: S, action: A, expected: S | None) -> None:
    h, ws = make(regime)
    drive_to(h, stage)
    draft = None if h.draft is None else h.draft.model_dump()
    ids, namespace, attempts = h.store.ids(), copy.deepcopy(ws.namespace), h.repair_attempts
    result = apply(h, action)
    if expected is not None:
        assert result.accepted is True, result.feedback
        assert h.stage is expected and result.stage is expected
        assert result.next_actor is NEXT_ACTOR[regime][action]
        assert result.action == action.value
    else:
        assert result.accepted is False
        assert action.value in result.feedback and f"'{stage.value}'" in result.feedback
        assert result.next_actor is Actor.MANAGER
        assert h.stage is stage
        assert (None if h.draft is None else h.draft.model_dump()) == draft
        assert len(h.store) == len(ids) and h.store.ids() == ids
        assert ws.namespace == namespace and h.repair_attempts == attempts


# ----------------------------------------------------------------------------- every cell
ALL_CELLS = [
    pytest.param(r, s, a, id=f"{r.value}-{s.value}-{a.value}") for r, s, a in itertools.product(Regime, S, A)
]


def test_table_covers_every_regime_and_stage() -> None:
    assert len(ALL_CELLS) == 2 * 5 * 8
    for regime in Regime:
        assert set(LEGAL[regime]) == set(S)
        assert set(NEXT_ACTOR[regime]) == set(A)


@pytest.mark.parametrize(("regime", "stage", "action"), ALL_CELLS)
def test_every_cell_matches_table(regime: Regime, stage: S, action: A) -> None:
    check_cell(regime, stage, action, LEGAL[regime][stage].get(action))


# Hand-written expectations: a wrong edit to LEGAL or NEXT_ACTOR itself fails here.
W, M = Actor.WORKER, Actor.MANAGER
KEY_CELLS = [
    (TA, S.IDLE, A.OPEN_STATE, S.OPEN, W),
    (SI, S.IDLE, A.OPEN_STATE, S.OPEN, M),
    (TA, S.IDLE, A.RESUME_WORKER, None, None),
    (SI, S.IDLE, A.RESUME_WORKER, S.IDLE, W),
    (TA, S.IDLE, A.ABSTAIN, S.IDLE, W),
    (TA, S.OPEN, A.COMMIT_STATE, None, None),
    (SI, S.OPEN, A.COMMIT_STATE, None, None),
    (TA, S.OPEN, A.UPDATE_STATE, S.UPDATED, M),
    (TA, S.UPDATED, A.REPAIR, S.REPAIRING, W),
    (SI, S.UPDATED, A.REPAIR, S.REPAIRING, W),
    (TA, S.UPDATED, A.ABSTAIN, None, None),
    (SI, S.UPDATED, A.ABSTAIN, S.UPDATED, W),
    (TA, S.UPDATED, A.FINALIZE_RELATIONS, S.FINALIZED, M),
    (TA, S.REPAIRING, A.UPDATE_STATE, S.UPDATED, M),
    (TA, S.REPAIRING, A.RESUME_WORKER, None, None),
    (SI, S.REPAIRING, A.RESUME_WORKER, S.REPAIRING, W),
    (TA, S.FINALIZED, A.COMMIT_STATE, S.IDLE, W),
    (SI, S.FINALIZED, A.COMMIT_STATE, S.IDLE, W),
    (TA, S.FINALIZED, A.ABANDON_STATE, None, None),
    (SI, S.FINALIZED, A.REPAIR, None, None),
]


@pytest.mark.parametrize(
    ("regime", "stage", "action", "expected", "actor"),
    [pytest.param(*c, id=f"{c[0].value}-{c[1].value}-{c[2].value}") for c in KEY_CELLS],
)
def test_key_cells(regime: Regime, stage: S, action: A, expected: S | None, actor: Actor | None) -> None:
    assert LEGAL[regime][stage].get(action) == expected
    if actor is not None:
        assert NEXT_ACTOR[regime][action] is actor
    check_cell(regime, stage, action, expected)


# ----------------------------------------------------------------------------- whole paths
def test_turn_aligned_repair_cycle_binds_whole_turn() -> None:
    h, _ = make(TA)
    h.begin_review(EventType.TURN_START)
    assert ok(h, A.OPEN_STATE, {"issue": "net order total"}).next_actor is Actor.WORKER
    worker_step(h), worker_step(h)
    h.begin_review(EventType.TURN_END)
    ok(h, A.UPDATE_STATE)
    assert h.draft is not None and (h.draft.source_step_start, h.draft.source_step_end) == (0, 1)
    ok(h, A.REPAIR)
    worker_step(h, "total = orders.sum()  # retry")
    h.begin_review(EventType.REPAIR_RETURN)
    # an interval proposed in this regime is ignored: the harness binds the whole turn
    result = ok(h, A.UPDATE_STATE, {**args_for(h, A.UPDATE_STATE), "source_interval": [2, 2]})
    assert any("ignored" in note for note in result.notes)
    ok(h, A.FINALIZE_RELATIONS)
    commit = ok(h, A.COMMIT_STATE)
    assert commit.state_id == "S1" and h.store.ids() == ["S1"] and h.stage is S.IDLE
    state = h.store.load("S1")
    assert (state.source_step_start, state.source_step_end) == (0, 2)
    assert [v.key for v in state.used_variables] == ["total@S1"]
    assert h.draft is None and h.repair_attempts == 0


def test_segment_resume_then_state_binds_exact_interval() -> None:
    h, _ = make(SI)
    worker_step(h), worker_step(h)
    h.begin_review(EventType.PAUSE)
    resumed = ok(h, A.RESUME_WORKER)
    assert (resumed.next_actor, h.stage, len(h.store)) == (Actor.WORKER, S.IDLE, 0)
    worker_step(h), worker_step(h)
    h.begin_review(EventType.PAUSE)
    assert ok(h, A.OPEN_STATE).next_actor is Actor.MANAGER
    update = {**args_for(h, A.UPDATE_STATE), "source_interval": [1, 3]}
    rejected = apply(h, A.UPDATE_STATE, {**update, "source_interval": [1, 4]})  # step 4 not recorded
    assert rejected.accepted is False and "unrecorded" in rejected.feedback and h.stage is S.OPEN
    ok(h, A.UPDATE_STATE, update)
    ok(h, A.FINALIZE_RELATIONS)
    ok(h, A.COMMIT_STATE)
    state = h.store.load("S1")
    assert (state.source_step_start, state.source_step_end) == (1, 3)
    assert h.traced_upto == 4 and h.store.ids() == ["S1"]


@pytest.mark.parametrize("regime", list(Regime))
def test_terminal_review_finishes_after_commit_not_after_repair(regime: Regime) -> None:
    h, _ = make(regime)
    drive_to(h, S.FINALIZED)
    assert ok(h, A.COMMIT_STATE).outcome is Outcome.CONTINUE  # not terminal: keep going
    h, _ = make(regime)
    drive_to(h, S.FINALIZED)
    h.begin_review(EventType.TERMINAL, terminal=True)
    assert ok(h, A.COMMIT_STATE).outcome is Outcome.FINISH
    h, _ = make(regime)
    drive_to(h, S.UPDATED)
    h.begin_review(EventType.TERMINAL, terminal=True)
    repair = ok(h, A.REPAIR)
    assert (repair.outcome, repair.next_actor, h.stage) == (Outcome.CONTINUE, Actor.WORKER, S.REPAIRING)


# ----------------------------------------------------------------------------- repair budget
@pytest.mark.parametrize("regime", list(Regime))
def test_repair_budget_light_heavy_and_rollback(regime: Regime) -> None:
    h, ws = make(regime)
    drive_to(h, S.UPDATED)
    assert h.config.repair_budget == 3
    modes, removed = [], []
    for attempt in (1, 2, 3):
        ws.namespace["total"] = 250 + attempt  # recomputed before each verdict
        result = ok(h, A.REPAIR)
        (hint,) = result.hints
        modes.append(hint.mode)
        removed.append(hint.removed_variables)
        assert h.repair_attempts == attempt
        assert ("total" in ws.namespace) is (attempt == 1)
        assert f"{attempt}/3" in result.notes[0]
        worker_step(h, "total = orders.sum()  # retry")
        ok(h, A.UPDATE_STATE)
    assert modes == ["light", "heavy", "heavy"]
    assert removed == [[], ["total"], ["total"]]
    ws.namespace["total"] = 999
    fourth = apply(h, A.REPAIR)
    assert fourth.accepted is False and "budget" in fourth.feedback
    assert h.stage is S.UPDATED and h.repair_attempts == 3 and ws.namespace["total"] == 999
    abandon = ok(h, A.ABANDON_STATE)
    assert h.stage is S.IDLE and h.draft is None and h.repair_attempts == 0
    assert any("rolled back to ckpt-S1" in note for note in abandon.notes)
    assert ws.namespace["total"] == TOTAL_AT_COMMIT and ws.namespace["orders"] == [3, 4, 5]
    assert h.store.ids() == ["S1"]
