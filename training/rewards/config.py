"""Knobs of the validity reward (paper Eq. 26 and Eq. 30), with the paper's values as defaults.

    cfg = RewardConfig()                         # 0.15 / 0.20 / 0.30 / 0.35, beta_fp 1.0, beta_fn 0.3
    cfg = RewardConfig(judge=EndpointConfig(role="judge", base_url=..., model="openai/gpt-oss-120b"))
    cfg = RewardConfig.model_validate(OmegaConf.to_container(hydra_cfg.reward, resolve=True))

The Hydra group `configs/reward/default.yaml` carries the same defaults; a test keeps the two equal.
Every field below is one decision the paper makes or leaves open; the open ones say what we chose.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stateguard.lifecycle import ControlAction
from stateguard.llm.endpoints import EndpointConfig


class RewardConfig(BaseModel):
    """Weights, penalties and the policies for cases the paper leaves undefined."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # -- Eq. 26: term weights (they must sum to 1)
    w_action: float = Field(
        default=0.15, ge=0, description="Weight of R_action, tool-call execution success (Eq. 27)."
    )
    w_lifecycle: float = Field(
        default=0.20, ge=0, description="Weight of R_lifecycle, legal control actions (Eq. 28)."
    )
    w_support: float = Field(
        default=0.30, ge=0, description="Weight of R_support, grounded state contents (Eq. 29)."
    )
    w_intervention: float = Field(
        default=0.35,
        ge=0,
        description="Weight of R_intervention, repair decisions against labels (Eq. 8, 30).",
    )

    extra_weights: dict[str, float] = Field(
        default_factory=dict,
        description="Weights of terms registered beyond the paper's four (training.rewards.terms), by "
        "name; a registered term that is not here scores with weight 0 (logged, not counted in R).",
    )

    # -- Eq. 30: repair quality q_i and the two penalties
    q_correct: float = Field(default=1.0, description="q_i for a correct repair of a genuine inconsistency.")
    q_partial: float = Field(
        default=0.2, description="q_i for an appropriate but only partially effective repair."
    )
    q_misleading: float = Field(default=-0.5, description="q_i for a misleading or wrongly localized repair.")
    beta_fp: float = Field(
        default=1.0, ge=0, description="Penalty for a repair where no inconsistency exists."
    )
    beta_fn: float = Field(
        default=0.3, ge=0, description="Penalty for a missed repair of a genuine inconsistency."
    )

    # -- choices the paper leaves open
    pass_actions: tuple[ControlAction, ...] = Field(
        default=(ControlAction.RESUME_WORKER, ControlAction.ABSTAIN, ControlAction.FINALIZE_RELATIONS),
        description="Decisions that leave a consistent state alone (the R+ term for g_i = 0). The paper "
        "names Resume and Abstain; in the turn-aligned table neither is legal at the verification stage, "
        "where a consistent state is finalized, so FINALIZE_RELATIONS is included. Use "
        "[RESUME_WORKER, ABSTAIN] for the literal reading.",
    )
    inapplicable: Literal["renormalize", "zero"] = Field(
        default="renormalize",
        description="A term with nothing to score (no tool call, no control action, no committed state, "
        "no decision point) is 0/0. renormalize: drop it and rescale the other weights to sum to 1; "
        "zero: score it 0.",
    )
    refused_control_is_invalid: bool = Field(
        default=True,
        description="A control action legal in the table but refused by the harness (bad arguments, a "
        "failed constraint, a hint that leaks code) counts as invalid in R_lifecycle. False: the table "
        "alone decides.",
    )
    undecided_quality: float = Field(
        default=0.2,
        description="q_i used when a repair's quality cannot be settled from evidence and no judge answers "
        "(conservative: the partial-credit value).",
    )
    localization_slack: float = Field(
        default=2.0,
        ge=1.0,
        description="A repair is well localized when it names every affected variable and at most this many "
        "times as many names in all; naming some but not all (or far more) is partial.",
    )

    # -- the judge for cases evidence cannot settle (the paper used GPT-OSS-120B)
    judge: EndpointConfig | None = Field(
        default=None,
        description="OpenAI-compatible judge endpoint; None decides undecidable cases conservatively.",
    )
    judge_evidence_chars: int = Field(
        default=6000, ge=200, description="Most evidence characters sent per judge case."
    )

    @model_validator(mode="after")
    def _check(self) -> RewardConfig:
        clash = sorted(set(self.extra_weights) & {"action", "lifecycle", "support", "intervention"})
        if clash or any(w < 0 for w in self.extra_weights.values()):
            raise ValueError(
                f"extra_weights {self.extra_weights}: the paper's terms are weighted by w_<term>, and "
                "a weight is >= 0"
            )
        total = sum(self.weights().values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"reward weights w_action + w_lifecycle + w_support + w_intervention (+ extra_weights) "
                f"sum to {total:g}; they must sum to 1 (the paper uses 0.15 + 0.20 + 0.30 + 0.35)"
            )
        if not self.q_misleading <= self.q_partial <= self.q_correct:
            raise ValueError(
                f"repair qualities must satisfy q_misleading <= q_partial <= q_correct, got "
                f"{self.q_misleading} / {self.q_partial} / {self.q_correct}"
            )
        if ControlAction.REPAIR in self.pass_actions:
            raise ValueError(
                "pass_actions must not contain REPAIR: a repair is the intervention being scored"
            )
        return self

    def weights(self) -> dict[str, float]:
        """Term name -> weight, in the order of Eq. 26, then the registered terms the config weighs."""
        return {
            "action": self.w_action,
            "lifecycle": self.w_lifecycle,
            "support": self.w_support,
            "intervention": self.w_intervention,
            **self.extra_weights,
        }
