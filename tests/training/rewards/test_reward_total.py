"""R(τ) (Eq. 26): the weighted sum, whole continuations, the empty trajectory, and the config."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from stateguard.flows import FlowConfig
from stateguard.lifecycle import Regime
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.task import load_task
from stateguard.trace import read_trace
from stateguard.workers import Fault, FaultModel, ScriptedWorker
from stateguard.workspace import DictWorkspace
from tests.training.rewards.reward_world import FAULTY, Sales, labels
from training.rewards import RewardConfig, RewardLabels, combine, score_trace

CONFIG_DIR = Path(__file__).resolve().parents[3] / "configs"
ALL = ("action", "lifecycle", "support", "intervention")


def terms(*values: float | None) -> dict[str, float | None]:
    return dict(zip(ALL, values, strict=True))


@pytest.mark.parametrize(
    ("values", "mode", "score"),
    [
        (terms(1.0, 1.0, 1.0, 1.0), "renormalize", 1.0),
        (terms(0.5, 1.0, 0.7, -0.3), "renormalize", 0.15 * 0.5 + 0.20 + 0.30 * 0.7 - 0.35 * 0.3),
        (terms(None, 1.0, 1.0, 1.0), "renormalize", 1.0),  # no tool call: neither rewarded nor punished
        (terms(None, 1.0, None, -1.0), "renormalize", (0.20 - 0.35) / 0.55),
        (terms(None, None, None, -0.3), "renormalize", -0.3),
        (terms(None, None, None, None), "renormalize", 0.0),
        (terms(None, 1.0, 1.0, 1.0), "zero", 0.85),
        (terms(None, None, None, -0.3), "zero", -0.105),
    ],
)
def test_combine_is_eq_26(values: dict[str, float | None], mode: str, score: float) -> None:
    got, applied = combine(values, RewardConfig(inapplicable=mode))
    assert got == pytest.approx(score)
    assert sum(applied.values()) == pytest.approx(1.0 if any(v is not None for v in values.values()) else 0.0)


def _false_repair(run: Sales) -> None:
    run.repair(["big"])


def _repair(run: Sales) -> None:
    run.repair(["big"])
    run.retry()
    run.settle()


def _settle(run: Sales) -> None:
    run.settle()


def _failed_probe_then_settle(run: Sales) -> None:
    run.act("run_probe", code="print(no_such_name)")
    run.settle()


def _checked_then_settle(run: Sales) -> None:
    run.act("check_execution", step_id=1)
    run.settle()


def _illegal_then_settle(run: Sales) -> None:
    run.act("COMMIT_STATE")
    run.settle()


@pytest.mark.parametrize(
    ("case", "threshold", "continuation", "flags", "values"),
    [
        ("correct repair", FAULTY, _repair, (True, False), (None, 1.0, 1.0, 1.0)),
        ("missed repair", FAULTY, _settle, (True,), (None, 1.0, 1.0, -0.3)),
        ("false repair", 100, _false_repair, (False,), (None, 1.0, None, -1.0)),
        ("benign left alone", 100, _settle, (False,), (None, 1.0, 1.0, 1.0)),
        ("failed tool call", 100, _failed_probe_then_settle, (False,), (0.0, 1.0, 1.0, 1.0)),
        ("verified first", 100, _checked_then_settle, (False,), (1.0, 1.0, 1.0, 1.0)),
        ("illegal lifecycle action", 100, _illegal_then_settle, (False,), (None, 2 / 3, 1.0, 1.0)),
    ],
)
def test_whole_continuations(
    sales: Callable[..., Sales],
    case: str,
    threshold: int,
    continuation: Callable[[Sales], None],
    flags: tuple[bool, ...],
    values: tuple[float | None, ...],
) -> None:
    run = sales(threshold=threshold)
    continuation(run)
    result = run.score(labels(*flags))
    got = tuple(getattr(result, t).value for t in ALL)
    assert got == pytest.approx(values)
    assert result.score == pytest.approx(combine(terms(*values), RewardConfig())[0])
    assert result.conservative == {} and result.judged == {}


def test_false_repair_scores_below_a_missed_repair(sales: Callable[..., Sales]) -> None:
    false = sales(threshold=100)
    _false_repair(false)
    missed = sales(threshold=FAULTY)
    _settle(missed)
    assert false.score(labels(False)).score < missed.score(labels(True)).score < 1.0


@pytest.mark.parametrize(
    ("flags", "mode", "score"),
    [
        ((), "renormalize", 0.0),  # nothing to score at all
        ((False,), "renormalize", 0.0),  # nothing decided, nothing left alone
        ((True,), "renormalize", -0.3),  # an inconsistency nobody repaired
        ((True, False), "renormalize", -0.15),
        ((True,), "zero", -0.105),
    ],
)
def test_empty_trajectory(
    sales: Callable[..., Sales], flags: tuple[bool, ...], mode: str, score: float
) -> None:
    run = sales(threshold=FAULTY)  # the continuation starts at the verification stage and does nothing
    result = run.score(labels(*flags), config=RewardConfig(inapplicable=mode))
    assert result.score == pytest.approx(score)
    assert (result.action.value, result.lifecycle.value, result.support.value) == (None, None, None)


def test_an_empty_event_list_scores_zero() -> None:
    result = score_trace([], RewardLabels(), regime=Regime.TURN_ALIGNED)
    assert result.score == 0.0 and result.metrics()["n_intervention"] == 0.0


def test_a_trace_without_run_start_needs_the_regime() -> None:
    with pytest.raises(ValueError, match="set regime='turn_aligned' or 'segment_induced'"):
        score_trace([], RewardLabels())


def test_a_whole_rules_manager_run(six_turn_trace: Any) -> None:
    """The deterministic manager on the demo: every action legal and executed, every decision right.
    Everything evidence decides is grounded; what it cannot decide is the manager's bookkeeping
    conclusions ("reported margin, margin_pct") and intermediates no output prints (cost), which
    without a judge count as ungrounded."""
    flags = (False, False, False, False, True, False, False)
    result = score_trace(six_turn_trace, labels(*flags, affected=("margin",)))
    assert (result.action.value, result.lifecycle.value, result.intervention.value) == (1.0, 1.0, 1.0)
    assert result.intervention.count == 7
    by_evidence = [i for i in result.support_items if i.decided_by == "evidence"]
    undecided = [i for i in result.support_items if i.decided_by == "conservative"]
    assert by_evidence and all(i.grounded for i in by_evidence)
    assert undecided and not any(i.grounded for i in undecided)
    assert {i.reason for i in undecided} <= {
        "no value in it can be checked against the evidence",
        "written by the worker, but no output or tool result shows the value",
    }
    assert result.support.value == pytest.approx(len(by_evidence) / len(result.support_items))
    assert result.conservative == {"support": len(undecided)}
    assert result.score == pytest.approx(0.15 + 0.20 + 0.30 * (result.support.value or 0.0) + 0.35)
    repair = result.decisions[4]
    assert (repair.decision, repair.quality, repair.quality_by) == ("REPAIR", 1.0, "evidence")


def test_a_segment_induced_run(tmp_path: Path) -> None:
    """The segment-induced table (reviews every 3 steps) scores the same way; without labels or a
    judge every decision point is left out of M, and counted."""
    flow = FlowConfig(
        name="segment-3",
        regime="segment_induced",
        review_every=3,
        budget_unit="task",
        baseline_budget=100,
        stateguard_budget=100,
    )
    task = load_task(CONFIG_DIR.parent / "eval" / "benchmarks" / "demo" / "six_turn")
    worker = ScriptedWorker(FaultModel(faults=[Fault(kind="stale", turn=5)]), reference=task)
    rollout(task, worker, DictWorkspace(), flow=flow, manager=RulesManager(), run_dir=tmp_path / "run")
    result = score_trace(read_trace(tmp_path / "run" / "trace.jsonl"), RewardLabels())
    names = {c.name for c in result.controls}
    assert {"ABSTAIN", "REPAIR", "COMMIT_STATE"} <= names
    assert (result.action.value, result.lifecycle.value, result.intervention.value) == (1.0, 1.0, None)
    points = len(result.decisions)
    assert points >= 6 and result.conservative["inconsistency"] == points


def test_defaults_are_the_papers() -> None:
    cfg = RewardConfig()
    assert cfg.weights() == {"action": 0.15, "lifecycle": 0.20, "support": 0.30, "intervention": 0.35}
    assert (cfg.q_correct, cfg.q_partial, cfg.q_misleading, cfg.beta_fp, cfg.beta_fn) == (
        1.0,
        0.2,
        -0.5,
        1.0,
        0.3,
    )


def test_the_hydra_group_matches_the_defaults() -> None:
    with initialize_config_dir(version_base=None, config_dir=str(CONFIG_DIR)):
        cfg = compose(overrides=["+reward=default"])
    assert RewardConfig.model_validate(OmegaConf.to_container(cfg.reward, resolve=True)) == RewardConfig()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"w_action": 0.5}, "sum to 1.35; they must sum to 1"),
        ({"q_partial": 2.0}, "q_misleading <= q_partial <= q_correct"),
        ({"pass_actions": ["REPAIR"]}, "pass_actions must not contain REPAIR"),
        ({"beta_fp": -1}, "greater than or equal to 0"),
        ({"inapplicable": "skip"}, "'renormalize' or 'zero'"),
    ],
)
def test_config_errors_name_the_field(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RewardConfig(**fields)
