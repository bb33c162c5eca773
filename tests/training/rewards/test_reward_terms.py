"""The registry of Eq. 26's terms: a term of our own is registered once, scored and logged at weight
0, and counts in R only when the config weighs it (and the weights still sum to 1).

Run: `python -m pytest -q tests/training/rewards/test_reward_terms.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.training.rewards.reward_world import FAULTY, Sales, labels
from training.rewards import RewardConfig, combine
from training.rewards.terms import REWARD_TERMS, RewardTerm, TermInputs, register_term


def _tool_share(x: TermInputs) -> tuple[float | None, int]:
    """A toy term: the share of the rollout's control actions among all its proposals."""
    n = len(x.tools) + len(x.controls)
    return (len(x.controls) / n if n else None), n


@pytest.fixture
def toy_term() -> Iterator[None]:
    register_term(RewardTerm("toy", _tool_share, "test only"))
    try:
        yield
    finally:
        REWARD_TERMS.pop("toy", None)


def test_the_paper_terms_are_the_registry(sales: Callable[..., Sales]) -> None:
    assert list(REWARD_TERMS) == ["action", "lifecycle", "support", "intervention"]
    result = sales(threshold=FAULTY).score(labels(True))
    assert result.extra == {}
    assert list(result.terms()) == list(REWARD_TERMS)


def test_a_registered_term_is_logged_at_weight_zero(toy_term: None, sales: Callable[..., Sales]) -> None:
    with pytest.raises(ValueError, match="reward term 'toy' is already registered"):
        register_term(RewardTerm("toy", _tool_share))
    run = sales(threshold=FAULTY)
    run.repair(["big"])  # a repair, a retry and the settling actions: control actions to count
    run.retry()
    run.settle()
    result = run.score(labels(True))
    toy = result.extra["toy"]
    assert toy.weight == 0.0 and toy.count == len(result.tools) + len(result.controls) > 0
    assert result.metrics()["r_toy"] == toy.value and result.metrics()["n_toy"] == toy.count
    # R is the paper's four as before: the toy term does not count until the config weighs it
    four = {t: s.value for t, s in result.terms().items() if t != "toy"}
    assert result.score == pytest.approx(combine(four, RewardConfig())[0])


def test_a_weighted_term_counts_in_r(toy_term: None, sales: Callable[..., Sales]) -> None:
    cfg = RewardConfig(w_intervention=0.25, extra_weights={"toy": 0.10})
    values = {"action": 1.0, "lifecycle": 1.0, "support": 1.0, "intervention": 1.0, "toy": 0.0}
    assert combine(values, cfg)[0] == pytest.approx(0.90)
    with pytest.raises(ValueError, match="no registered term scores"):
        combine({t: v for t, v in values.items() if t != "toy"}, cfg)


def test_extra_weights_are_checked() -> None:
    with pytest.raises(ValueError, match="sum to 1.1"):
        RewardConfig(extra_weights={"toy": 0.1})
    with pytest.raises(ValueError, match="weighted by w_<term>"):
        RewardConfig(w_action=0.0, extra_weights={"action": 0.15})
