"""Source binding regressions found by the property tests."""

from __future__ import annotations

import pytest

from stateguard import EventType, Harness, HarnessConfig, StateStore, WorkerStep
from stateguard.actions import ActionError, RawAction
from stateguard.binding import bind_source
from stateguard.lifecycle import Regime


def commit(h: Harness, step: int) -> None:
    h.apply(RawAction(name="OPEN_STATE", arguments={"issue": f"turn {step}"}))
    h.record_step(WorkerStep(index=step, action=f"x{step} = {step}"))
    h.begin_review(EventType.TURN_END)
    for name, args in [("UPDATE_STATE", {}), ("FINALIZE_RELATIONS", {}), ("COMMIT_STATE", {})]:
        assert h.apply(RawAction(name=name, arguments=args)).accepted


def test_turn_binding_never_reaches_into_an_earlier_state() -> None:
    h = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"))
    h.begin_review(EventType.TURN_START)
    commit(h, 0)
    commit(h, 1)  # no TURN_START review in between
    assert (h.store.load("S1").source_step_start, h.store.load("S1").source_step_end) == (0, 0)
    assert (h.store.load("S2").source_step_start, h.store.load("S2").source_step_end) == (1, 1)


def test_a_huge_interval_is_refused_without_enumerating_it() -> None:
    with pytest.raises(ActionError, match="ends after the last recorded step"):
        bind_source(
            Regime.SEGMENT_INDUCED,
            [0, 10**12],
            steps={0, 1, 2},
            traced_upto=0,
            turn_start=None,
            previous=(None, None),
            notes=[],
        )


def test_variable_names_with_versions_or_spaces_are_argument_errors() -> None:
    h = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"))
    h.begin_review(EventType.TURN_START)
    h.apply(RawAction(name="OPEN_STATE", arguments={"issue": "x"}))
    result = h.apply(RawAction(name="UPDATE_STATE", arguments={"used_variables": [{"name": "x@S1"}]}))
    assert not result.accepted and "give the version separately" in result.feedback


def test_update_gives_an_open_constraint_its_code_and_the_harness_evaluates_it() -> None:
    """Turn-aligned: the state opens with constraints in words; UPDATE_STATE attaches code (matched
    by text, in place), adds new ones, can take code away; the harness runs every coded one."""
    from stateguard.workspace import DictWorkspace

    ws = DictWorkspace()
    assert ws.run_cell("x = 3").ok
    h = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"), workspace=ws)
    h.begin_review(EventType.TURN_START)
    opened = [{"text": "x is positive"}, {"text": "x is small"}]
    assert h.apply(RawAction(name="OPEN_STATE", arguments={"issue": "x", "constraints": opened})).accepted
    h.record_step(WorkerStep(index=0, action="x = 3"))
    h.begin_review(EventType.TURN_END)
    given = [
        {"text": "x is small", "code": "assert x < 2, x"},
        {"text": "x is an int", "code": "assert isinstance(x, int)"},
    ]
    assert h.apply(RawAction(name="UPDATE_STATE", arguments={"constraints": given})).accepted
    assert h.draft is not None
    assert [(c.text, c.code) for c in h.draft.constraints] == [
        ("x is positive", None),
        ("x is small", "assert x < 2, x"),
        ("x is an int", "assert isinstance(x, int)"),
    ]
    assert [(r.text, r.passed) for r in h.draft.constraint_results] == [
        ("x is small", False),
        ("x is an int", True),
    ]
    assert not h.apply(
        RawAction(name="FINALIZE_RELATIONS", arguments={})
    ).accepted  # a failed check blocks it
    # a later UPDATE (after a retry) can take the code away again: the words stay
    assert h.apply(
        RawAction(name="UPDATE_STATE", arguments={"constraints": [{"text": "x is small"}]})
    ).accepted
    assert [(c.text, c.code is None) for c in h.draft.constraints][1] == ("x is small", True)
    assert [(r.text, r.passed) for r in h.draft.constraint_results] == [("x is an int", True)]
    assert h.apply(RawAction(name="FINALIZE_RELATIONS", arguments={})).accepted


def test_update_constraints_are_accepted_but_not_shown_to_a_model() -> None:
    """The model sees the paper's UPDATE_STATE; the deterministic tier may send constraints."""
    from stateguard.actions import ControlAction, UpdateStateArgs, tool_schema

    shown = tool_schema(ControlAction.UPDATE_STATE)["function"]["parameters"]["properties"]
    assert "constraints" not in shown
    args = UpdateStateArgs.model_validate({"constraints": [{"text": "t", "code": "assert True"}]})
    assert [(c.text, c.code) for c in args.constraints] == [("t", "assert True")]


class _CountingSteps(dict):
    """A steps dict that counts the walks over all its keys."""

    walks = 0

    def keys(self):  # type: ignore[override]
        type(self).walks += 1
        return super().keys()

    def __iter__(self):
        type(self).walks += 1
        return super().__iter__()


def test_an_update_does_not_walk_every_step_of_the_run() -> None:
    """The steps a turn-aligned UPDATE binds are the pending ones; finding them must not cost a
    walk over every step of the run (it grew with the run's length), and the interval is the turn's."""
    h = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"))
    h.begin_review(EventType.TURN_START)
    for step in range(0, 40, 2):
        commit(h, step)
    h.record_step(WorkerStep(index=41, action="y = 1"))  # out of order: recorded before 40
    h.record_step(WorkerStep(index=40, action="y = 0"))
    assert [s.index for s in h.observation().untraced_steps] == [40, 41]
    h.steps = _CountingSteps(h.steps)
    _CountingSteps.walks = 0
    h.turn_start = 40
    assert h.apply(RawAction(name="OPEN_STATE", arguments={"issue": "last"})).accepted
    assert h.apply(RawAction(name="UPDATE_STATE", arguments={})).accepted
    assert _CountingSteps.walks == 0
    assert (h.draft.source_step_start, h.draft.source_step_end) == (40, 41)
