"""The synthesized labels the intervention term needs: g_i per decision point (paper Eq. 8, B.3).

A manager continuation is scored against the decision points the data pipeline labelled: at each
one, was there a genuine inconsistency (g_i = 1) and, if so, which variables it affects. The
labels are matched to the continuation's decision points in order (the first label is the
decision point the RL prompt stops at).

    labels = RewardLabels(decision_points=[DecisionLabel(inconsistent=True, affected_variables=["margin"])])
    labels = RewardLabels.from_verl_row(ground_truth, extra_info)     # a row of rl/prompts.parquet

`from_verl_row` reads the rows `synthesis.export.rl_prompts` writes: `extra_info["labels"]` is the
JSON object `{"g": 0|1, "affected_variables": [...], "intervention_kind": ..., "benign": ...}` for
the row's decision point, and `ground_truth` the JSON `{"action": <teacher's control action>, ...}`.
A `labels` value with `decision_points` is read as a whole RewardLabels record (several points).
Rows without labels fall back to the ground truth: an explicit `"inconsistent"`, else g = 1 exactly
when the teacher intervened there (REPAIR or ABANDON_STATE).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stateguard.artifacts.files import describe_errors
from stateguard.artifacts.rl_prompts import RlLabels
from stateguard.records import Record

INTERVENING_ACTIONS = frozenset({"REPAIR", "ABANDON_STATE"})


class DecisionLabel(BaseModel):
    """g_i and what the pipeline knows about the inconsistency at one decision point."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    inconsistent: bool = Field(description="g_i: an inconsistency exists at this decision point.")
    affected_variables: list[str] = Field(
        default_factory=list, description="Names (no @version) the inconsistency lives in; empty if unknown."
    )
    intervention_kind: str | None = Field(
        default=None, description="Counterfactual kind, e.g. filter_condition."
    )
    benign: bool = Field(default=False, description="An intervention that changed nothing (a hard negative).")
    expected_action: str | None = Field(
        default=None, description="The teacher's control action, for reports."
    )

    @field_validator("affected_variables")
    @classmethod
    def _bare_names(cls, names: list[str]) -> list[str]:
        return [name.split("@")[0] for name in names]


class RewardLabels(Record):
    """Labels for one RL prompt: the decision points of its continuation, in order."""

    decision_points: list[DecisionLabel] = Field(default_factory=list)
    task_id: str | None = None
    turn: int | None = None
    variant: str | None = Field(
        default=None, description="clean, repair or auto: the trajectory the prompt came from."
    )

    @classmethod
    def from_verl_row(cls, ground_truth: Any, extra_info: Mapping[str, Any] | None) -> RewardLabels:
        """Labels from a verl row (`reward_model.ground_truth` and `extra_info`); errors name the field."""
        row = _RowMeta.model_validate(dict(extra_info or {}))
        truth = _truth(ground_truth)
        meta = {"task_id": row.task_id, "turn": row.turn, "variant": row.variant}
        if row.labels is not None:
            try:
                given = json.loads(row.labels) if isinstance(row.labels, str) else row.labels
                if isinstance(given, dict) and "decision_points" in given:
                    # a whole record; the row fills what it leaves out
                    return cls.model_validate({**{k: v for k, v in meta.items() if v is not None}, **given})
                point = RlLabels.model_validate(given)
            except (ValidationError, json.JSONDecodeError) as exc:
                raise ValueError(
                    f"extra_info['labels'] is neither the export's {{'g': 0|1, ...}} object nor a RewardLabels "
                    f"record ({type(exc).__name__}: {exc})"
                ) from None
            label = DecisionLabel(
                inconsistent=bool(point.g),
                affected_variables=point.affected_variables,
                intervention_kind=point.intervention_kind,
                benign=point.benign,
                expected_action=truth.action,
            )
            return cls(decision_points=[label], **meta)
        if truth.inconsistent is not None:
            inconsistent = truth.inconsistent
        elif truth.action is not None:
            inconsistent = truth.action in INTERVENING_ACTIONS
        else:
            raise ValueError(
                "the row has no labels: extra_info['labels'] is missing and ground_truth has neither "
                "'inconsistent' (g_i) nor 'action' (the teacher's decision); re-export the RL prompts with "
                "synthesis.export"
            )
        label = DecisionLabel(
            inconsistent=inconsistent,
            affected_variables=truth.affected_variables or [],
            intervention_kind=truth.intervention_kind,
            expected_action=truth.action,
        )
        return cls(decision_points=[label], **meta)


class _RowMeta(BaseModel):
    """The parts of verl's `extra_info` the labels come from (`RlExtraInfo`'s fields; verl's own keys
    are ignored, and hand-written rows may leave any out)."""

    model_config = ConfigDict(extra="ignore")

    task_id: str | None = None
    turn: int | None = None
    variant: str | None = None
    labels: str | dict[str, Any] | None = None


class _GivenTruth(BaseModel):
    """A ground truth as the export writes it (`RlGroundTruth`) or hand-labelled: an explicit g_i
    (`inconsistent`), other keys ignored."""

    model_config = ConfigDict(extra="ignore")

    action: str | None = None
    inconsistent: bool | None = None
    affected_variables: list[str] | None = None
    intervention_kind: str | None = None


def _truth(ground_truth: Any) -> _GivenTruth:
    parsed = ground_truth
    if isinstance(ground_truth, str):
        try:
            parsed = json.loads(ground_truth)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"ground_truth is not JSON ({exc.msg}); expected the object synthesis.export writes, "
                'e.g. {"action": "REPAIR", "affected_variables": ["margin"]}'
            ) from None
    if not isinstance(parsed, Mapping):
        raise ValueError(
            f"ground_truth must be a JSON object (or its string), got {type(ground_truth).__name__}"
        )
    try:
        return _GivenTruth.model_validate(dict(parsed))
    except ValidationError as exc:
        raise ValueError(f"ground_truth: {describe_errors(exc)}") from None
