"""The manager's validity reward R(τ) (paper Eq. 26): four weighted terms over one rollout's trace.

    result = score_trace(read_trace(path), labels, start_seq=120)        # pure: no judge
    result = score_trace(events, labels, judge=LLMJudge.from_endpoint(cfg.judge))
    result.score, result.action.value, result.conservative, result.metrics()

R = 0.15·R_action + 0.20·R_lifecycle + 0.30·R_support + 0.35·R_intervention, each term from its own
module (protocol: Eq. 27-28, support: Eq. 29, intervention: Eq. 8 and 30), summed over the registry
of terms (`training.rewards.terms`), where a term of our own is registered too. The function reads only
the trace events and the labels; without a judge it is a pure function of them.

A term with nothing to score (no tool call, no control action, no committed state, no decision
point) is 0/0 in the paper. With `inapplicable="renormalize"` (default) it is dropped and the
remaining weights are rescaled to sum to 1, so a perfect rollout scores 1 whether or not it called
tools; with "zero" it scores 0 at its own weight. An empty continuation therefore scores its
intervention term alone: 0 when every label is g = 0 (nothing was decided, nothing was passed),
−β_fn × (share of g = 1 labels) otherwise, and 0.0 when there are no labels either.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from stateguard.lifecycle import Regime, Stage
from stateguard.records import Record
from stateguard.trace import TraceEvent
from training.rewards.config import RewardConfig
from training.rewards.intervention import DecisionOutcome
from training.rewards.judge import Adjudicator, Judge
from training.rewards.labels import RewardLabels
from training.rewards.protocol import ControlItem, ToolItem
from training.rewards.support import SupportItem
from training.rewards.terms import BUILT_IN, REWARD_TERMS, TermInputs
from training.rewards.timeline import Rollout, build_rollout

EMPTY_SCORE = 0.0  # R when no term applies at all (no actions, no states, no labels)


class TermScore(BaseModel):
    """One term of Eq. 26: its value (None: nothing to score), what it averaged over, its weight."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    count: int = Field(description="T_tool, T_ctrl, Σ|U_k| or M: the denominator of the term.")
    weight: float = Field(description="Weight applied, after renormalization.")


class RewardResult(Record):
    """R(τ) with every term, every item behind it, and how undecidable cases were settled."""

    score: float
    action: TermScore
    lifecycle: TermScore
    support: TermScore
    intervention: TermScore
    extra: dict[str, TermScore] = Field(
        default_factory=dict, description="Terms registered beyond the paper's four (training.rewards.terms)."
    )
    tools: list[ToolItem] = Field(default_factory=list)
    controls: list[ControlItem] = Field(default_factory=list)
    support_items: list[SupportItem] = Field(default_factory=list)
    decisions: list[DecisionOutcome] = Field(default_factory=list)
    judged: dict[str, int] = Field(default_factory=dict, description="Cases the judge settled, by kind.")
    conservative: dict[str, int] = Field(
        default_factory=dict,
        description="Cases decided conservatively (no judge, or no usable verdict), by kind.",
    )
    judge_failures: int = Field(default=0, description="Judge calls that returned no usable verdict.")

    def metrics(self) -> dict[str, float]:
        """Flat numbers with a fixed key set (verl logs every key of every sample, so none may be missing).
        An inapplicable term reports 0.0; its `n_*` count of 0 tells it apart from a real zero."""
        out = {"score": self.score}
        for name, term in self.terms().items():
            out[f"r_{name}"] = 0.0 if term.value is None else term.value
            out[f"n_{name}"] = float(term.count)
        for kind in ("support", "repair_quality", "inconsistency"):
            out[f"judged_{kind}"] = float(self.judged.get(kind, 0))
            out[f"conservative_{kind}"] = float(self.conservative.get(kind, 0))
        out["judge_failures"] = float(self.judge_failures)
        return out

    def terms(self) -> dict[str, TermScore]:
        """Every term by name: the paper's four in the order of Eq. 26, then the registered ones."""
        return {**{name: getattr(self, name) for name in BUILT_IN}, **self.extra}


def combine(values: dict[str, float | None], config: RewardConfig) -> tuple[float, dict[str, float]]:
    """Eq. 26: Σ λ·R over the terms, with inapplicable terms handled per `config.inapplicable`.
    Returns (R, the weight applied to each term). A term in `values` that the config does not weigh
    (a registered term without an `extra_weights` entry) gets weight 0."""
    unknown = sorted(set(config.weights()) - set(values))
    if unknown:
        raise ValueError(
            f"reward weights name {unknown}, which no registered term scores; register the term "
            "(training.rewards.terms.register_term) or remove its weight"
        )
    weights = {t: config.weights().get(t, 0.0) for t in values}
    live = {t: w for t, w in weights.items() if values[t] is not None}
    if config.inapplicable == "zero" or len(live) == len(weights):
        return sum(w * (values[t] or 0.0) for t, w in weights.items()), dict(weights)
    total = sum(live.values())
    if total <= 0:
        return EMPTY_SCORE, {t: 0.0 for t in weights}
    applied = {t: (live[t] / total if t in live else 0.0) for t in weights}
    return sum(applied[t] * (values[t] or 0.0) for t in weights), applied


def score_rollout(
    rollout: Rollout, labels: RewardLabels, config: RewardConfig, judge: Judge | None = None
) -> RewardResult:
    """R(τ) for a parsed rollout (see `score_trace`)."""
    ledger = Adjudicator(judge)
    inputs = TermInputs(rollout, labels, config, ledger)
    scored = {name: term.score(inputs) for name, term in REWARD_TERMS.items()}
    values = {name: value for name, (value, _) in scored.items()}
    score, applied = combine(values, config)
    terms = {t: TermScore(value=v, count=n, weight=applied[t]) for t, (v, n) in scored.items()}
    return RewardResult(
        score=score,
        **{t: terms[t] for t in BUILT_IN},
        extra={t: s for t, s in terms.items() if t not in BUILT_IN},
        tools=inputs.tools,
        controls=inputs.controls,
        support_items=inputs.support,
        decisions=inputs.decisions,
        judged=dict(ledger.judged),
        conservative=dict(ledger.conservative),
        judge_failures=ledger.failures,
    )


def score_trace(
    events: Sequence[TraceEvent],
    labels: RewardLabels,
    *,
    config: RewardConfig | None = None,
    start_seq: int = 0,
    regime: Regime | None = None,
    start_stage: Stage | None = None,
    judge: Judge | None = None,
) -> RewardResult:
    """R(τ) (Eq. 26) of the continuation that starts at `start_seq` in a trace.

    events: the run's trace (stateguard.trace); events before start_seq are context only.
    labels: g_i and affected variables per decision point of the continuation, in order.
    regime / start_stage: only for traces without a run_start event / without the prefix.
    judge: settles what evidence cannot; None decides those cases conservatively (counted).
    """
    rollout = build_rollout(events, start_seq=start_seq, regime=regime, start_stage=start_stage)
    return score_rollout(rollout, labels, config or RewardConfig(), judge)
