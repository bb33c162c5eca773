"""The terms of the validity reward (paper Eq. 26), by name: the one registry `score_rollout` sums.

    from training.rewards.terms import REWARD_TERMS, RewardTerm, TermInputs, register_term
    register_term(RewardTerm("brevity", r_brevity, "Eq. 31 (ours)"))   # scored and logged; weight 0
    # then configs/reward/default.yaml: extra_weights: {brevity: 0.1}, and the others lowered to sum to 1

A term is a pure function of `TermInputs` (the parsed rollout, the labels, the config, and the
items the built-in terms score, each computed once and shared) that returns its value, None when
there is nothing to score (0/0), and the count it averaged over. The four terms of the paper carry
their weights in `RewardConfig.w_*`; a registered term's weight is `RewardConfig.extra_weights`,
0 until the config gives it one, so a new term is measured (`r_<name>`, `n_<name>` in the verl
metrics) before it counts in R.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from stateguard.registry import add
from training.rewards.config import RewardConfig
from training.rewards.intervention import DecisionOutcome, decision_points, r_intervention, score_decisions
from training.rewards.judge import Adjudicator
from training.rewards.labels import RewardLabels
from training.rewards.protocol import ControlItem, ToolItem, control_items, r_action, r_lifecycle, tool_items
from training.rewards.support import SupportItem, r_support, support_items
from training.rewards.timeline import Rollout

__all__ = ["BUILT_IN", "REWARD_TERMS", "RewardTerm", "TermInputs", "register_term"]


class TermInputs:
    """What a term may read. The item lists are built on first use and kept, in the order the terms
    ask for them (the built-ins ask action, lifecycle, support, intervention: the judge sees its
    cases in that order), and `RewardResult` reports them."""

    def __init__(self, rollout: Rollout, labels: RewardLabels, config: RewardConfig, ledger: Adjudicator):
        self.rollout = rollout
        self.labels = labels
        self.config = config
        self.ledger = ledger

    @cached_property
    def tools(self) -> list[ToolItem]:
        return tool_items(self.rollout)

    @cached_property
    def controls(self) -> list[ControlItem]:
        return control_items(self.rollout, self.config)

    @cached_property
    def support(self) -> list[SupportItem]:
        return support_items(self.rollout, self.ledger)

    @cached_property
    def decisions(self) -> list[DecisionOutcome]:
        return score_decisions(
            self.rollout, decision_points(self.rollout), self.labels, self.config, self.ledger
        )


TermScorer = Callable[[TermInputs], tuple[float | None, int]]


@dataclass(frozen=True)
class RewardTerm:
    name: str
    score: TermScorer  # (value or None when there is nothing to score, the count it averaged over)
    equation: str = ""  # where the term is defined, for the reader


def _action(x: TermInputs) -> tuple[float | None, int]:
    return r_action(x.tools), len(x.tools)


def _lifecycle(x: TermInputs) -> tuple[float | None, int]:
    return r_lifecycle(x.controls), len(x.controls)


def _support(x: TermInputs) -> tuple[float | None, int]:
    return r_support(x.support), len(x.support)


def _intervention(x: TermInputs) -> tuple[float | None, int]:
    return r_intervention(x.decisions), sum(d.reward is not None for d in x.decisions)


# The paper's four, in the order of Eq. 26; their weights are RewardConfig's w_* fields.
BUILT_IN = ("action", "lifecycle", "support", "intervention")
REWARD_TERMS: dict[str, RewardTerm] = {
    "action": RewardTerm("action", _action, "Eq. 27"),
    "lifecycle": RewardTerm("lifecycle", _lifecycle, "Eq. 28"),
    "support": RewardTerm("support", _support, "Eq. 29"),
    "intervention": RewardTerm("intervention", _intervention, "Eq. 8, 30"),
}


def register_term(term: RewardTerm) -> None:
    """Add a term; a taken name is an error. Its weight is `RewardConfig.extra_weights[name]` (0
    when absent: scored and logged, not counted in R)."""
    add(REWARD_TERMS, term.name, term, axis="reward term")
