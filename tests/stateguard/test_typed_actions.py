"""Policies hand the harness typed actions; a (name, arguments) tuple is refused with the fix.

Run: `python -m pytest -q tests/stateguard/test_typed_actions.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stateguard.actions import (
    ACTION_OF_ARGS,
    CONTROL_ARGS,
    TOOL_ARGS,
    AbstainArgs,
    Action,
    CheckExecutionArgs,
    ErrorHintArg,
    RawAction,
    RepairArgs,
)
from stateguard.flows import LONGDS
from stateguard.lifecycle import ControlAction, ToolAction
from stateguard.observation import ManagerObservation
from stateguard.policies.base import Activation, ManagerContext
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import load_task
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace

ROOT = Path(__file__).resolve().parents[2]


def test_each_argument_model_names_its_action() -> None:
    assert len(ACTION_OF_ARGS) == len(CONTROL_ARGS) + len(TOOL_ARGS) == 13
    repair = Action.of(
        RepairArgs(
            analytical_evidence="e", error_hint=ErrorHintArg(error_variables=["x"], faulty_reasoning="r")
        )
    )
    assert repair.name is ControlAction.REPAIR and repair.is_control
    assert Action.of(CheckExecutionArgs(step_id=2)).name is ToolAction.CHECK_EXECUTION
    assert Action.bare(ControlAction.ABSTAIN) == Action.of(AbstainArgs())


class Recording:
    """The rules manager, with every proposal it makes kept."""

    name = "recording"

    def __init__(self) -> None:
        self.inner = RulesManager()
        self.proposals: list[Any] = []

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        gen = self.inner.activate(obs, ctx)
        try:
            proposal = next(gen)
            while True:
                self.proposals.append(proposal)
                proposal = gen.send((yield proposal))
        except StopIteration:
            return


def test_the_rules_manager_yields_typed_actions_end_to_end(tmp_path: Path) -> None:
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    manager = Recording()
    worker = ScriptedWorker(FaultModel(faults=[Fault(kind="stale", turn=5)]), reference=task)
    result = rollout(
        task.agent_view(), worker, DictWorkspace(), flow=LONGDS, manager=manager, run_dir=tmp_path
    )
    assert result.repairs >= 1 and result.manager_fallbacks == 0
    assert manager.proposals and all(isinstance(p, Action) for p in manager.proposals)
    names = {p.name for p in manager.proposals}
    assert {
        ControlAction.OPEN_STATE,
        ControlAction.REPAIR,
        ControlAction.COMMIT_STATE,
        ToolAction.CHECK_EXECUTION,
    } <= names


class Tuples:
    name = "tuples"

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        yield ("ABSTAIN", {})  # type: ignore[misc]


def test_a_tuple_proposal_is_refused_with_the_typed_form_named(tmp_path: Path) -> None:
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    with pytest.raises(TypeError, match=r"yielded tuple .*Action\.of"):
        rollout(
            task.agent_view(),
            ScriptedWorker(reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=Tuples(),
            run_dir=tmp_path,
        )


def test_a_raw_action_is_validated_by_the_harness_with_feedback() -> None:
    from stateguard import EventType, Harness, HarnessConfig, StateStore

    h = Harness(StateStore(":memory:"), HarnessConfig(regime="turn_aligned"))
    h.begin_review(EventType.TURN_START)
    result = h.apply(RawAction(name="OPEN_STATE", arguments={"isue": "typo"}))
    assert not result.accepted and "unknown argument 'isue'" in result.feedback
    assert h.apply(Action.of(AbstainArgs(reason="nothing yet"))).accepted
