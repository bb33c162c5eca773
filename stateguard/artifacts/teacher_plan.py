"""The synthesis teacher's privileged plan for one trajectory, as stored with corpus records and RL rows.

`synthesis.teacher.plan` explains what the plan means and how the teacher uses it; the models live
in the formats layer because `corpus_records` and the RL prompt rows carry them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GENUINE", "TEACHER_VERSION", "Segment", "StageCheck", "TeacherPlan", "Variant"]

# 3: constraints from the question text (requirements.py); 4: auto goes live after the fault turn
# opens; 5: the stated-recompute probe fingerprints inside DuckDB (probe.py)
TEACHER_VERSION = "teacher/5"

# clean    no intervention; the teacher verifies and commits every state
# repair   genuine θ' at t*; verification shows it, REPAIR; the worker's retry passes, COMMIT
# heavy    as repair, but the worker repeats θ' after the light hint: the second REPAIR is heavy
# abandon  the worker repeats θ' after every hint: the budget runs out, ABANDON_STATE (rollback)
# benign   θ' changes nothing the stage computes: verification shows equal results, FINALIZE
# auto     θ' at t*, and from t* on a live policy (rules or an LLM) decides without the plan
Variant = Literal["clean", "repair", "heavy", "abandon", "benign", "auto"]
GENUINE: frozenset[str] = frozenset({"repair", "heavy", "abandon"})


class StageCheck(BaseModel):
    """The teacher's probe for one stage: recompute it as the task states it and compare."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    table: str = Field(description="The stage's stored table (and the frame of the same name).")
    stated_sql: str = Field(description="SELECT of the stage as the task text states it (the reference SQL).")


class Segment(BaseModel):
    """Segment flows: one analytical stage of a turn, in the order the worker builds them."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str = Field(description="The stage's table name (unique within the task).")
    turn: int = Field(ge=1)
    marker: str = Field(description="Text of the stage's last code block (`# check: <stage>`).")
    issue: str = Field(description="The part of the task text this stage answers.")


class TeacherPlan(BaseModel):
    """The privileged knowledge behind one synthesized trajectory (never shown to the manager)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: str = TEACHER_VERSION
    variant: Variant = "clean"
    flow: str = Field(default="longds", description="Key of FLOWS: longds | dabstep | dacomp_de.")
    fault_turn: int | None = Field(default=None, description="Turn whose program runs θ'.")
    target: str | None = Field(default=None, description="The stage θ' changes (its table and frame name).")
    kind: str | None = Field(default=None, description="Intervention kind (synthesis.interventions).")
    reason: str | None = Field(default=None, description="Worded, worker-safe reason for the repair hint.")
    live: Literal["rules", "llm"] = Field(default="rules", description="auto: who decides from t* on.")
    checks: dict[str, StageCheck] = Field(default_factory=dict, description="stage -> its as-stated probe.")
    stage_of_turn: dict[int, str] = Field(
        default_factory=dict, description="turn-aligned: the stage each turn builds."
    )
    invalidates: dict[str, list[str]] = Field(
        default_factory=dict, description="stage -> stages whose definition it replaces (hidden graph)."
    )
    segments: list[Segment] = Field(default_factory=list, description="Segment flows: stages in build order.")

    @property
    def genuine(self) -> bool:
        return self.variant in GENUINE

    @property
    def resist(self) -> Literal["none", "light", "all"]:
        """How the worker answers repair hints at t*: heavy resists the light one, abandon all."""
        return {"heavy": "light", "abandon": "all"}.get(self.variant, "none")  # type: ignore[return-value]

    @property
    def knows_fault(self) -> bool:
        return self.variant in GENUINE or self.variant == "benign"
