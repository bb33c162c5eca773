"""The synthesized labels the intervention term needs: g_i per decision point (paper Eq. 8, B.3).

A manager continuation is scored against the decision points the data pipeline labelled: at each
one, was there a genuine inconsistency (g_i = 1) and, if so, which variables it affects. The
labels are matched to the continuation's decision points in order (the first label is the
decision point the RL prompt stops at).

    labels = RewardLabels(decision_points=[DecisionLabel(inconsistent=True, affected_variables=["margin"])])
    labels = RewardLabels.from_verl_row(ground_truth, extra_info)     # a row of rl/prompts.parquet

`from_verl_row` reads the layout `synthesis.export.rl_prompts` writes today: `ground_truth` is a JSON
string `{"action": <teacher's control action>, "affected_variables": [...], "intervention_kind": ...}`
and `extra_info` holds task_id, turn, decision_point and variant. The teacher REPAIRs (or abandons)
exactly where an inconsistency exists, so g = 1 for those actions and 0 for any other. An explicit
`"inconsistent": true/false` in the ground truth, or a whole `labels` record in extra_info, wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stateguard.records import Record

INTERVENING_ACTIONS = frozenset({"REPAIR", "ABANDON_STATE"})


class DecisionLabel(BaseModel):
    """g_i and what the pipeline knows about the inconsistency at one decision point."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    inconsistent: bool = Field(description="g_i: an inconsistency exists at this decision point.")
    affected_variables: list[str] = Field(
        default_factory=list, description="Names (no @version) the inconsistency lives in; empty if unknown."
    )
    intervention_kind: str | None = Field(default=None, description="Counterfactual kind, e.g. filter_condition.")
    expected_action: str | None = Field(default=None, description="The teacher's control action, for reports.")

    @field_validator("affected_variables")
    @classmethod
    def _bare_names(cls, names: list[str]) -> list[str]:
        return [name.split("@")[0] for name in names]


class RewardLabels(Record):
    """Labels for one RL prompt: the decision points of its continuation, in order."""

    decision_points: list[DecisionLabel] = Field(default_factory=list)
    task_id: str | None = None
    turn: int | None = None
    variant: str | None = Field(default=None, description="clean or repair (the trajectory the prompt came from).")

    @classmethod
    def from_verl_row(cls, ground_truth: Any, extra_info: Mapping[str, Any] | None) -> RewardLabels:
        """Labels from a verl row (`reward_model.ground_truth` and `extra_info`); errors name the field."""
        extra = dict(extra_info or {})
        if extra.get("labels") is not None:
            raw = extra["labels"]
            try:
                return cls.model_validate(json.loads(raw) if isinstance(raw, str) else raw)
            except (ValidationError, json.JSONDecodeError) as exc:
                raise ValueError(f"extra_info['labels'] is not a RewardLabels record: {exc}") from None
        truth = _truth(ground_truth)
        if "inconsistent" in truth:
            inconsistent = bool(truth["inconsistent"])
        elif isinstance(truth.get("action"), str):
            inconsistent = truth["action"] in INTERVENING_ACTIONS
        else:
            raise ValueError(
                "ground_truth has neither 'inconsistent' (g_i) nor 'action' (the teacher's decision); "
                "re-export the RL prompts with synthesis.export or put a RewardLabels record in extra_info['labels']"
            )
        label = DecisionLabel(
            inconsistent=inconsistent,
            affected_variables=list(truth.get("affected_variables") or []),
            intervention_kind=truth.get("intervention_kind"),
            expected_action=truth.get("action"),
        )
        turn = extra.get("turn")
        return cls(
            decision_points=[label],
            task_id=extra.get("task_id"),
            turn=int(turn) if turn is not None else None,
            variant=extra.get("variant"),
        )


def _truth(ground_truth: Any) -> dict[str, Any]:
    if isinstance(ground_truth, Mapping):
        return dict(ground_truth)
    if isinstance(ground_truth, str):
        try:
            parsed = json.loads(ground_truth)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"ground_truth is not JSON ({exc.msg}); expected the object synthesis.export writes, "
                'e.g. {"action": "REPAIR", "affected_variables": ["margin"]}'
            ) from None
        if isinstance(parsed, dict):
            return parsed
    raise ValueError(f"ground_truth must be a JSON object (or its string), got {type(ground_truth).__name__}")
