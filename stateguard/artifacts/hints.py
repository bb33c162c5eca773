"""Worker-facing guidance (paper A.5): state hints and repair hints, in our own wording.

A state hint packs related committed states as (id, issue, variables, conclusions, relations)
— never constraints, checkpoints or provenance, which stay on the verifier's side. A repair hint
carries only the affected variables and the faulty reasoning (checked by `hint_guard`).
Both are framed as references the worker should verify, never as ground truth.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.records import Record
from stateguard.artifacts.state import AnalyticalState

__all__ = [
    "REMARK_PREAMBLE",
    "REPAIR_HINT_PREAMBLE",
    "STATE_HINT_PREAMBLE",
    "Hint",
    "PackedState",
    "pack_state",
    "state_hint",
]

STATE_HINT_PREAMBLE = (
    "Earlier analysis steps that the state manager judged relevant to what you are doing now. "
    "Treat them as notes to double-check, not as established facts."
)
REPAIR_HINT_PREAMBLE = (
    "The state manager suspects a problem in the items listed under 'affected'. "
    "Read the reason, re-examine those items and redo whatever depends on them if needed. "
    "This note points at the problem; it does not contain the fix."
)
REMARK_PREAMBLE = (
    "A reviewer who saw only your latest steps left the remark below. Check that part of your work "
    "and redo it if the remark holds. This is a pointer, not the fix."
)


class PackedState(BaseModel):
    """Pack(S_j) = (id, issue, variables, conclusions, relations) — Eq. 17."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    issue: str
    variables: list[dict[str, Any]]
    conclusions: list[str]
    relations: list[dict[str, str | None]]


def pack_state(state: AnalyticalState) -> PackedState:
    return PackedState(
        id=state.id,
        issue=state.issue,
        variables=[{"name": v.name, "version": v.key, "value": v.value} for v in state.used_variables],
        conclusions=[c.text for c in state.conclusions],
        relations=[{"type": r.type.value, "related_state_id": r.related_state_id} for r in state.relations],
    )


class Hint(Record):
    """A hint as delivered to the worker (and written to the trace)."""

    kind: Literal["state", "repair"]
    for_state: str | None = Field(default=None, description="Draft/state the hint belongs to.")
    states: list[PackedState] = Field(default_factory=list, description="State hints only.")
    error_variables: list[str] = Field(default_factory=list, description="Repair hints only.")
    faulty_reasoning: str = ""
    mode: Literal["light", "heavy"] | None = None
    removed_variables: list[str] = Field(default_factory=list, description="Heavy repair only.")

    def render(self) -> str:
        """The exact text the worker receives."""
        if self.kind == "state":
            body = json.dumps([s.model_dump() for s in self.states], indent=1, default=str)
            return f"<state_hint>\n{STATE_HINT_PREAMBLE}\n{body}\n</state_hint>"
        if self.error_variables:
            lines = ["<repair_hint>", REPAIR_HINT_PREAMBLE, "affected: " + ", ".join(self.error_variables)]
        else:  # the observer ablation's remark names no variables
            lines = ["<repair_hint>", REMARK_PREAMBLE]
        lines.append("reason: " + self.faulty_reasoning)
        if self.removed_variables:
            lines.append(
                "removed from your workspace (recompute before use): " + ", ".join(self.removed_variables)
            )
        lines.append("</repair_hint>")
        return "\n".join(lines)


def state_hint(states: list[AnalyticalState], *, for_state: str | None = None) -> Hint | None:
    """A state hint for the related states, or None when there is nothing related."""
    if not states:
        return None
    return Hint(kind="state", for_state=for_state, states=[pack_state(s) for s in states])
