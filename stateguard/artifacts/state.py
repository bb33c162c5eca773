"""The analytical-state model (paper Eq. 2 and Appendix A.4).

A state S_k = (issue, constraints, used variables, conclusions, relations) plus provenance
(the worker-step interval it was formed from and the workspace checkpoint taken at commit).
Committed states are frozen pydantic records; the mutable draft lives in `Draft`.
Ids (`S1`, `S2`, ...) and variable versions (`revenue@S4`) are assigned by the harness only.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stateguard.artifacts.records import Record

__all__ = [
    "STATE_ID_RE",
    "VERSIONED_NAME_RE",
    "AnalyticalState",
    "Conclusion",
    "Constraint",
    "ConstraintResult",
    "Draft",
    "Relation",
    "RelationType",
    "VariableRef",
    "state_id",
    "state_number",
]

STATE_ID_RE = re.compile(r"^S([1-9][0-9]*)$")
VERSIONED_NAME_RE = re.compile(r"^(?P<name>[^@\s]+)@(?P<state>S[1-9][0-9]*)$")


def state_number(state_id: str) -> int:
    """`"S12"` -> 12; raises ValueError naming the expected form."""
    match = STATE_ID_RE.match(state_id)
    if not match:
        raise ValueError(f"state id {state_id!r} is not of the form S<positive integer>, e.g. 'S3'")
    return int(match.group(1))


def state_id(number: int) -> str:
    return f"S{number}"


class RelationType(StrEnum):
    INIT = "init"
    PROGRESS = "progress"
    BRANCH = "branch"
    INVALIDATE = "invalidate"
    COMBINE = "combine"


class Relation(BaseModel):
    """Edge from an earlier committed state to the state that holds it (Init has no upstream)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: RelationType
    related_state_id: str | None = Field(
        default=None, description="Upstream committed state; None only for Init."
    )

    @model_validator(mode="after")
    def _init_has_no_upstream(self) -> Relation:
        if self.type is RelationType.INIT and self.related_state_id is not None:
            raise ValueError("an 'init' relation has no related_state_id; drop the id or pick another type")
        if self.type is not RelationType.INIT:
            if self.related_state_id is None:
                raise ValueError(f"a '{self.type.value}' relation needs related_state_id (e.g. 'S2')")
            state_number(self.related_state_id)
        return self


class Constraint(BaseModel):
    """A requirement on the state: natural-language text and an optional executable check."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1, description="The requirement in words.")
    code: str | None = Field(
        default=None, description="Optional Python check; passes when it runs without raising."
    )


class ConstraintResult(BaseModel):
    """φ_i(D) ∈ {Pass, Fail}: an executable constraint evaluated by the harness (A.4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    passed: bool | None = Field(description="None when no workspace could evaluate it.")
    error: str | None = None


class VariableRef(BaseModel):
    """A used variable with its harness-assigned version, e.g. `filtered_count@S3`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Variable name as in the worker's workspace.")
    version: str = Field(description="Id of the state that produced this value (harness-assigned).")
    value: Any = Field(default=None, description="JSON value or a compact summary of the object.")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if "@" in name or any(ch.isspace() for ch in name):
            raise ValueError(f"variable name {name!r} must not contain '@' or whitespace")
        return name

    @field_validator("version")
    @classmethod
    def _version_is_state(cls, version: str) -> str:
        state_number(version)
        return version

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"


class Conclusion(BaseModel):
    """An intermediate conclusion; `variables` lists the versioned names it cites."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    variables: list[str] = Field(default_factory=list, description="Cited `name@Sk` keys.")


class AnalyticalState(Record):
    """A committed, immutable analytical state (Eq. 2 + provenance)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    issue: str
    constraints: list[Constraint] = Field(default_factory=list)
    used_variables: list[VariableRef] = Field(default_factory=list)
    conclusions: list[Conclusion] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    source_step_start: int | None = None
    source_step_end: int | None = None
    checkpoint_id: str | None = None

    @field_validator("id")
    @classmethod
    def _id_form(cls, value: str) -> str:
        state_number(value)
        return value

    def defined_variables(self) -> list[VariableRef]:
        """Variables whose version is this state (new values), as opposed to inherited reads."""
        return [v for v in self.used_variables if v.version == self.id]

    def upstream_ids(self) -> list[str]:
        return [r.related_state_id for r in self.relations if r.related_state_id is not None]


class Draft(BaseModel):
    """The mutable state under construction (S_k^draft). Only the harness mutates it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    issue: str = ""
    constraints: list[Constraint] = Field(default_factory=list)
    used_variables: list[VariableRef] = Field(default_factory=list)
    conclusions: list[Conclusion] = Field(default_factory=list)
    provisional_relations: list[Relation] = Field(default_factory=list)
    relations: list[Relation] | None = Field(default=None, description="Set by FINALIZE_RELATIONS.")
    source_step_start: int | None = None
    source_step_end: int | None = None
    updated: bool = False
    constraint_results: list[ConstraintResult] = Field(
        default_factory=list, description="Outcome of each executable constraint at the last UPDATE."
    )

    def failed_constraints(self) -> list[ConstraintResult]:
        return [r for r in self.constraint_results if r.passed is False]

    def to_state(self, checkpoint_id: str | None) -> AnalyticalState:
        if self.relations is None:
            raise ValueError(f"draft {self.id} has no finalized relations")
        return AnalyticalState(
            id=self.id,
            issue=self.issue,
            constraints=list(self.constraints),
            used_variables=list(self.used_variables),
            conclusions=list(self.conclusions),
            relations=list(self.relations),
            source_step_start=self.source_step_start,
            source_step_end=self.source_step_end,
            checkpoint_id=checkpoint_id,
        )
