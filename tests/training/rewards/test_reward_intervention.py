"""R_intervention (Eq. 8, Eq. 30): the per-point formula, repair quality, and real continuations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stateguard.lifecycle import ControlAction
from tests.training.rewards.reward_world import FAULTY, Sales, labels
from training.rewards import Adjudicator, RewardConfig, build_rollout
from training.rewards.intervention import (
    decision_points,
    decision_reward,
    localization,
    r_intervention,
    score_decisions,
)

CFG = RewardConfig()


@pytest.mark.parametrize(
    ("g", "decision", "quality", "reward"),
    [
        (True, "REPAIR", 1.0, 1.0),  # correct repair: q
        (True, "REPAIR", 0.2, 0.2),  # partial repair
        (True, "REPAIR", -0.5, -0.5),  # misleading repair
        (True, "FINALIZE_RELATIONS", None, -0.3),  # missed repair: -beta_fn
        (True, "ABANDON_STATE", None, -0.3),  # anything but REPAIR is a miss
        (True, None, None, -0.3),  # never decided
        (False, "REPAIR", 1.0, -1.0),  # false repair: -beta_fp, q does not count
        (False, "FINALIZE_RELATIONS", None, 1.0),  # benign state left alone
        (False, "RESUME_WORKER", None, 1.0),
        (False, "ABSTAIN", None, 1.0),
        (False, "ABANDON_STATE", None, 0.0),  # neither a pass nor a repair
        (False, None, None, 0.0),
    ],
)
def test_decision_reward_follows_eq_8(
    g: bool, decision: str | None, quality: float | None, reward: float
) -> None:
    assert decision_reward(g, decision, quality, CFG) == pytest.approx(reward)


def test_false_repair_costs_more_than_a_missed_one() -> None:
    assert (
        decision_reward(False, "REPAIR", None, CFG)
        < decision_reward(True, "FINALIZE_RELATIONS", None, CFG)
        < 0
    )


def test_literal_pass_set_gives_no_credit_to_finalize() -> None:
    literal = RewardConfig(pass_actions=(ControlAction.RESUME_WORKER, ControlAction.ABSTAIN))
    assert decision_reward(False, "FINALIZE_RELATIONS", None, literal) == 0.0
    assert decision_reward(False, "ABSTAIN", None, literal) == 1.0


@pytest.mark.parametrize(
    ("named", "affected", "where"),
    [
        (["big"], ["big"], "localized"),
        (["big", "share"], ["big"], "localized"),  # within slack 2
        (["big", "share", "revenue"], ["big"], "partial"),  # too many names
        (["share"], ["big", "share"], "partial"),  # not every affected one
        (["revenue"], ["big"], "misleading"),
        (["big"], [], "unknown"),
    ],
)
def test_localization(named: list[str], affected: list[str], where: str) -> None:
    assert localization(named, affected, CFG.localization_slack) == where


def _correct(run: Sales) -> None:
    run.repair(["big"])
    run.retry()
    run.settle()


def _ineffective(run: Sales) -> None:
    run.repair(["big"])
    run.retry(recompute=False)
    run.settle()


def _misleading(run: Sales) -> None:
    run.repair(["revenue"])
    run.retry()
    run.settle()


def _partial(run: Sales) -> None:
    run.repair(["big", "share", "revenue"])
    run.retry()
    run.settle()


def _cut_after_repair(run: Sales) -> None:
    run.repair(["big"])


def _abandon_after(run: Sales) -> None:
    run.repair(["big"])
    run.retry(threshold=FAULTY)
    run.act("ABANDON_STATE")


def _leave_alone(run: Sales) -> None:
    run.settle()


def _abandon(run: Sales) -> None:
    run.act("ABANDON_STATE")


def _nothing(run: Sales) -> None:
    pass


@pytest.mark.parametrize(
    ("threshold", "continuation", "flags", "decisions", "quality", "rewards"),
    [
        # a genuine inconsistency (the counterfactual filter), then the retry's verification (g = 0)
        (FAULTY, _correct, (True, False), ["REPAIR", "FINALIZE_RELATIONS"], (1.0, "evidence"), [1.0, 1.0]),
        (
            FAULTY,
            _ineffective,
            (True, False),
            ["REPAIR", "FINALIZE_RELATIONS"],
            (0.2, "evidence"),
            [0.2, 1.0],
        ),
        (FAULTY, _partial, (True, False), ["REPAIR", "FINALIZE_RELATIONS"], (0.2, "evidence"), [0.2, 1.0]),
        (
            FAULTY,
            _misleading,
            (True, False),
            ["REPAIR", "FINALIZE_RELATIONS"],
            (-0.5, "evidence"),
            [-0.5, 1.0],
        ),
        (FAULTY, _cut_after_repair, (True,), ["REPAIR"], (0.2, "conservative"), [0.2]),
        (FAULTY, _abandon_after, (True, True), ["REPAIR", "ABANDON_STATE"], (0.2, "evidence"), [0.2, -0.3]),
        (FAULTY, _leave_alone, (True,), ["FINALIZE_RELATIONS"], (None, None), [-0.3]),  # missed repair
        (FAULTY, _nothing, (True,), [None], (None, None), [-0.3]),
        # a benign state
        (100, _leave_alone, (False,), ["FINALIZE_RELATIONS"], (None, None), [1.0]),
        (
            100,
            _correct,
            (False, False),
            ["REPAIR", "FINALIZE_RELATIONS"],
            (None, None),
            [-1.0, 1.0],
        ),  # false repair
        (100, _abandon, (False,), ["ABANDON_STATE"], (None, None), [0.0]),
        (100, _nothing, (False,), [None], (None, None), [0.0]),
    ],
)
def test_continuations_on_the_real_harness(
    sales: Callable[..., Sales],
    threshold: int,
    continuation: Callable[[Sales], None],
    flags: tuple[bool, ...],
    decisions: list[str | None],
    quality: tuple[float | None, str | None],
    rewards: list[float],
) -> None:
    run = sales(threshold=threshold)
    continuation(run)
    rollout = build_rollout(run.events, start_seq=run.start_seq)
    ledger = Adjudicator(None)
    outcomes = score_decisions(rollout, decision_points(rollout), labels(*flags), CFG, ledger)
    assert [o.decision for o in outcomes] == decisions
    assert (outcomes[0].quality, outcomes[0].quality_by) == quality
    assert [o.reward for o in outcomes] == pytest.approx(rewards)
    assert r_intervention(outcomes) == pytest.approx(sum(rewards) / len(rewards))
    assert dict(ledger.conservative) == ({"repair_quality": 1} if quality[1] == "conservative" else {})


def test_labels_beyond_the_reached_points_count_as_undecided(sales: Callable[..., Sales]) -> None:
    run = sales(threshold=FAULTY)
    run.settle()
    rollout = build_rollout(run.events, start_seq=run.start_seq)
    outcomes = score_decisions(rollout, decision_points(rollout), labels(True, True), CFG, Adjudicator(None))
    assert [(o.seq is None, o.decision, o.reward) for o in outcomes] == [
        (False, "FINALIZE_RELATIONS", -0.3),
        (True, None, -0.3),
    ]


def test_unlabelled_points_are_left_out_without_a_judge(sales: Callable[..., Sales]) -> None:
    run = sales(threshold=FAULTY)
    _correct(run)
    rollout = build_rollout(run.events, start_seq=run.start_seq)
    ledger = Adjudicator(None)
    outcomes = score_decisions(rollout, decision_points(rollout), labels(True), CFG, ledger)
    assert [o.reward for o in outcomes] == [1.0, None]
    assert outcomes[1].inconsistent_by == "conservative" and dict(ledger.conservative) == {"inconsistency": 1}
    assert r_intervention(outcomes) == 1.0


def test_decision_points_of_a_whole_run(six_turn_trace: Any) -> None:
    points = decision_points(build_rollout(six_turn_trace))
    assert [(p.state_id, p.decision, p.named) for p in points] == [
        ("S1", "FINALIZE_RELATIONS", []),
        ("S2", "FINALIZE_RELATIONS", []),
        ("S3", "FINALIZE_RELATIONS", []),
        ("S4", "FINALIZE_RELATIONS", []),
        ("S5", "REPAIR", ["margin"]),  # the stale margin (scripted fault at turn 5)
        ("S5", "FINALIZE_RELATIONS", []),  # after the worker's recomputation
        ("S6", "FINALIZE_RELATIONS", []),
    ]
