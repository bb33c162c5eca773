"""The teacher's log of one manager activation (what it saw, each proposal and the harness's verdict).

Stored in the corpus records (`corpus_records`) and read back by the export; `synthesis.teacher.log`
fills it while the teacher (or a relayed live policy) acts.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ActionLog", "ActivationLog"]


class ActionLog(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    accepted: bool
    feedback: str = ""
    tool_result: dict[str, Any] | None = None
    control: bool = False


class ActivationLog(BaseModel):
    index: int
    turn: int | None
    observation: dict[str, Any]
    actions: list[ActionLog] = Field(default_factory=list)
    forced: bool = False  # the plan decided here (the state θ' changed); False for live and bookkeeping
    live: bool = False  # a live policy without the plan decided (auto from t*)
    segment: str | None = None  # segment flows: the stage this activation's state covers
    suppressed: list[str] = Field(
        default_factory=list, description="rules findings overridden on a known-clean state"
    )
