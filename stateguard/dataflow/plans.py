"""Reusing a cell's analysis when the same text runs again in the same workspace.

Analyzing and instrumenting a cell (`units.analyze_cell`) and compiling the result is most of what
recording costs before a short cell runs. A workspace can run one text more than once (a worker
redoing a step after a repair or a rollback, a benchmark repeating a cell); a replay after a kernel
death runs in a new kernel with a new recorder and gains nothing. The plan
depends on the text and on two answers per name the analysis asked about: whether the namespace
binds it, and whether to a module (`CellPlan.asked`). So a plan made earlier is reused when the
namespace answers every one of those questions as it did then.

A cell that defines functions, classes or lambdas is never reused: analyzing it registers its
function bodies' blocks in the workspace's `Registry`, which each definition needs afresh. The
ids a reused plan holds (slots, captures, loops, untraced blocks) stay its own: the registry
never hands them out again, and each run starts from cleared loop flags and coverage.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

from stateguard.dataflow.units import CellPlan

MAX_PLANS = 128  # texts remembered per workspace, least recently used dropped first


@dataclass(frozen=True)
class CompiledPlan:
    plan: CellPlan
    body: CodeType
    last: CodeType | None
    rebound: frozenset[str]  # names the cell rebinds before any mention (`recorder._rebound_first`)


def still_valid(plan: CellPlan, namespace: dict[str, Any]) -> bool:
    """Whether `namespace` answers every question the analysis of `plan` asked as it did then."""
    for name, (bound, module) in plan.asked.items():
        if (name in namespace) != bound or isinstance(namespace.get(name), ModuleType) != module:
            return False
    return True


class PlanCache:
    """Compiled plans by cell text, for one workspace (the ids in a plan are its registry's)."""

    def __init__(self, size: int = MAX_PLANS) -> None:
        self.size = size
        self._plans: OrderedDict[str, CompiledPlan] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, code: str, namespace: dict[str, Any]) -> CompiledPlan | None:
        found = self._plans.get(code)
        if found is None or not still_valid(found.plan, namespace):
            self.misses += 1
            return None
        self._plans.move_to_end(code)
        self.hits += 1
        return found

    def put(self, code: str, compiled: CompiledPlan) -> None:
        if compiled.plan.defines:
            return
        self._plans[code] = compiled
        self._plans.move_to_end(code)
        while len(self._plans) > self.size:
            self._plans.popitem(last=False)
