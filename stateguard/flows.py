"""Flow adapters (paper A.1): when the manager reviews, and how many steps the worker gets.

Turn-aligned flows review at every turn boundary (LongDS). Segment-induced flows review after
every `review_every` worker steps and at termination (DABstep every 3, DAComp-DE every 5).
Budgets follow Table 3; manager actions never consume worker steps.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.lifecycle import Regime


class FlowConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="custom", description="Benchmark the flow belongs to.")
    regime: Regime
    review_every: int = Field(
        default=3, ge=1, description="Segment flow: review after this many worker steps."
    )
    budget_unit: Literal["turn", "task"] = Field(default="turn", description="What the worker budget counts.")
    baseline_budget: int = Field(default=40, ge=1, description="Worker steps per unit without the manager.")
    stateguard_budget: int = Field(default=40, ge=1, description="Worker steps per unit with the manager.")

    def budget(self, with_manager: bool) -> int:
        return self.stateguard_budget if with_manager else self.baseline_budget


# Table 3 of the paper.
LONGDS = FlowConfig(
    name="longds", regime=Regime.TURN_ALIGNED, budget_unit="turn", baseline_budget=40, stateguard_budget=40
)
DABSTEP = FlowConfig(
    name="dabstep",
    regime=Regime.SEGMENT_INDUCED,
    review_every=3,
    budget_unit="task",
    baseline_budget=10,
    stateguard_budget=15,
)
DACOMP_DE = FlowConfig(
    name="dacomp_de",
    regime=Regime.SEGMENT_INDUCED,
    review_every=5,
    budget_unit="task",
    baseline_budget=50,
    stateguard_budget=60,
)
