"""R_action (Eq. 27) and R_lifecycle (Eq. 28) on real-harness traces, case by case.

Every case proposes actions through the real harness at the verification stage of S2 (the draft
is `updated`) and scores only what was proposed after the prefix.
"""

from __future__ import annotations

from typing import Any

import pytest

from stateguard.lifecycle import LEGAL, ControlAction, Regime, Stage
from training.rewards import RewardConfig, build_rollout
from training.rewards.protocol import control_items, r_action, r_lifecycle, tool_items

CODE_IN_HINT = {"error_variables": ["big"], "faulty_reasoning": "use `big = [o for o in orders if o > 100]`"}
WORDED_HINT = {
    "error_variables": ["big"],
    "faulty_reasoning": "the cut for large orders is not the one asked",
}


@pytest.mark.parametrize(
    ("name", "arguments", "success", "reason"),
    [
        ("check_execution", {"step_id": 1}, True, "executed"),
        ("check_execution", {"step_id": 99}, True, "executed"),  # ran; reports the step is unknown
        ("compile_python", {"code": "x = ("}, True, "executed"),  # ran; reports a syntax error
        ("inspect_python", {"code": "y = big[0]"}, True, "executed"),
        ("load_state", {"state_id": "S1"}, True, "executed"),
        ("run_probe", {"code": "assert share > 0.9"}, True, "probe ran; its check failed"),
        ("run_probe", {"code": "print(undefined_name)"}, False, "failed: NameError"),
        ("load_state", {"state_id": "S7"}, False, "failed: S7 is not a committed state"),
        ("run_probe", {"cod": "1"}, False, "malformed call"),
        ("inspect_python", {}, False, "malformed call"),
        ("RUN_PROBE", {"code": "1"}, False, "malformed call"),  # unknown name
    ],
)
def test_each_tool_call_counts_by_whether_it_executed(
    sales: Any, name: str, arguments: dict[str, Any], success: bool, reason: str
) -> None:
    run = sales()
    run.act(name, **arguments)
    items = tool_items(build_rollout(run.events, start_seq=run.start_seq))
    assert [(i.name, i.success) for i in items] == [(name, success)]
    assert items[0].reason.startswith(reason)
    assert r_action(items) == (1.0 if success else 0.0)


def test_an_unparsable_response_and_the_activation_limit_are_failed_tool_actions(sales: Any) -> None:
    run = sales()
    run.h.propose("the state looks fine to me")
    for step in range(9):  # the harness allows 8 actions per activation; the 9th is refused
        run.act("check_execution", step_id=step % 2)
    items = tool_items(build_rollout(run.events, start_seq=run.start_seq))
    assert [i.success for i in items] == [False] + [True] * 8 + [False]
    assert items[0].reason == "response could not be parsed" and items[-1].reason.startswith("refused")
    assert r_action(items) == pytest.approx(8 / 10)


@pytest.mark.parametrize(
    ("regime", "name", "arguments", "legal", "valid", "valid_without_refusals"),
    [
        (Regime.TURN_ALIGNED, "FINALIZE_RELATIONS", {"mode": "confirm"}, True, True, True),
        (Regime.TURN_ALIGNED, "UPDATE_STATE", {}, True, True, True),
        (Regime.TURN_ALIGNED, "ABANDON_STATE", {}, True, True, True),
        (
            Regime.TURN_ALIGNED,
            "REPAIR",
            {"analytical_evidence": "[filter] off", "error_hint": WORDED_HINT},
            True,
            True,
            True,
        ),
        (Regime.TURN_ALIGNED, "COMMIT_STATE", {}, False, False, False),  # skipping FINALIZE
        (Regime.TURN_ALIGNED, "OPEN_STATE", {"issue": "another"}, False, False, False),
        (Regime.TURN_ALIGNED, "RESUME_WORKER", {}, False, False, False),  # not in the turn-aligned table
        (Regime.TURN_ALIGNED, "ABSTAIN", {}, False, False, False),
        (
            Regime.TURN_ALIGNED,
            "REPAIR",
            {"analytical_evidence": "x", "error_hint": CODE_IN_HINT},
            True,
            False,
            True,
        ),
        (Regime.TURN_ALIGNED, "REPAIR", {}, False, False, False),  # malformed: no evidence, no hint
        (Regime.SEGMENT_INDUCED, "ABSTAIN", {}, True, True, True),
        (Regime.SEGMENT_INDUCED, "RESUME_WORKER", {}, False, False, False),
    ],
)
def test_each_control_action_is_judged_against_the_lifecycle_table(
    sales: Any,
    regime: Regime,
    name: str,
    arguments: dict[str, Any],
    legal: bool,
    valid: bool,
    valid_without_refusals: bool,
) -> None:
    run = sales(regime=regime)
    run.act(name, **arguments)
    rollout = build_rollout(run.events, start_seq=run.start_seq)
    assert rollout.start_stage is Stage.UPDATED
    assert ControlAction(name) in LEGAL[regime][Stage.UPDATED] or not legal  # the table is the reference
    [item] = control_items(rollout, RewardConfig())
    assert (item.name, item.stage, item.legal, item.valid) == (name, Stage.UPDATED, legal, valid)
    [lenient] = control_items(rollout, RewardConfig(refused_control_is_invalid=False))
    assert lenient.valid is valid_without_refusals


def test_the_stage_follows_each_applied_action(sales: Any) -> None:
    run = sales()
    run.act("COMMIT_STATE")  # illegal at `updated`: refused, stage unchanged
    run.act("FINALIZE_RELATIONS", mode="confirm")  # updated -> finalized
    run.act("FINALIZE_RELATIONS", mode="confirm")  # illegal at `finalized`
    run.act("COMMIT_STATE")  # finalized -> idle
    items = control_items(build_rollout(run.events, start_seq=run.start_seq), RewardConfig())
    assert [(i.name, i.stage.value, i.valid) for i in items] == [
        ("COMMIT_STATE", "updated", False),
        ("FINALIZE_RELATIONS", "updated", True),
        ("FINALIZE_RELATIONS", "finalized", False),
        ("COMMIT_STATE", "finalized", True),
    ]
    assert r_lifecycle(items) == 0.5


def test_no_actions_means_the_terms_do_not_apply(sales: Any) -> None:
    run = sales()
    rollout = build_rollout(run.events, start_seq=run.start_seq)
    assert r_action(tool_items(rollout)) is None
    assert r_lifecycle(control_items(rollout, RewardConfig())) is None


def test_a_hand_built_trace_without_stage_fields_is_tracked_with_the_table() -> None:
    from stateguard.artifacts.events import parse_event

    names = [
        "OPEN_STATE",
        "UPDATE_STATE",
        "COMMIT_STATE",
        "FINALIZE_RELATIONS",
        "COMMIT_STATE",
        "RESUME_WORKER",
    ]
    events = [
        parse_event(
            {
                "seq": i,
                "kind": "action",
                "data": {"activation": 1, "name": n, "arguments": {}, "accepted": True},
            }
        )
        for i, n in enumerate(names)
    ]
    rollout = build_rollout(events, regime=Regime.SEGMENT_INDUCED)
    items = control_items(rollout, RewardConfig())
    assert [(i.stage.value, i.valid) for i in items] == [
        ("idle", True),
        ("open", True),
        ("updated", False),
        ("updated", True),
        ("finalized", True),
        ("idle", True),
    ]
