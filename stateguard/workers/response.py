"""How the scripted worker answers a repair hint: the response model that gives false alarms a cost.

An LLM agent told "this value is wrong" does two things the old scripted worker did not: it
fixes a real mistake only when the hint says enough to find it, and it sometimes "fixes" a
correct answer into a wrong one. `ResponseModel` makes both explicit and configurable:

* `identify`: what a hint must carry to fix a mistake.
  - `variable_and_kind` (default): an error variable the faulty turn wrote or reported, AND a
    reason whose words name the kind of problem (each kind's `hint_words` in the table
    `stateguard.artifacts.mistakes`: a stale fault needs words
    like "stale", "redefined", "recomputed"; a precision fault "decimal", "rounded"; ...).
  - `variable`: any error variable the faulty turn touched (the permissive model the synthesis
    teacher uses, where the forced repair is known to be right).
* `p_fix`: when a hint identifies a mistake, the worker fixes it with this probability (a seeded
  draw per hint); otherwise it keeps its faulty answer, as a model does that reads the hint and
  still gets the turn wrong. Default 1.0: an identifying hint always fixes (the behaviour before
  the rate existed). `python -m eval.perf.hint_response` measures it for a real model.
* `p_flip`: when a hint does not fix a mistake and the turn it reviews was answered correctly,
  the worker changes that answer with this probability (a seeded draw per hint).
* `redo_from`: where a fix starts. `turn_start` (default): the worker takes a save point of the
  workspace before each turn it will get wrong, and a fix restores it before re-running that turn
  and the later ones, as an agent that redoes a turn does from the turn's inputs. `current`: the
  redo runs on the workspace the faulty run left, so a turn that reads what it rebuilds (`df =
  df[...]`, `CREATE OR REPLACE TABLE t AS ... FROM t`, "how many before" read from the rebuilt
  table) re-reads its own faulty output and stays wrong after the fix (the behaviour before).

Default `p_flip = 0.17`. This is an assumption, taken from one measurement: Laban et al.,
"Are You Sure? Challenging LLMs Leads to Performance Drops in The FlipFlop Experiment"
(arXiv:2311.08596, 2023), report that challenging a model's answer ("are you sure?") lowers
its accuracy by 17% on average over the models and classification tasks they test. A repair
hint that calls a correct value wrong is such a challenge; a code-running agent that re-checks
may flip less often, so the detection report is given at p_flip = 0 and at the default. The
hint-response experiment (`python -m eval.perf.hint_response`, docs/results/llm_worker_dev.md)
measured it on a real model: Qwen2.5-Coder-0.5B broke 5 of 30 right answers after a false hint of
the rules manager (0.17, Wilson 95% [0.07, 0.34]), so the default is also the measured rate.
`p_fix` stays 1.0: the same model fixed 0 of 30 mistakes after a true hint, which as a default
would model a worker that ignores every hint (make eval's gain would be 0 by construction); see
the results file for the printout at the measured rates.
"""

from __future__ import annotations

import random
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.faults import Fault
from stateguard.artifacts.mistakes import by_label

__all__ = ["DEFAULT_P_FIX", "DEFAULT_P_FLIP", "ResponseModel", "names_kind"]

DEFAULT_P_FLIP = 0.17
DEFAULT_P_FIX = 1.0


def names_kind(reason: str, label: str) -> bool:
    """Whether a hint's reason names the kind of problem `label` (a Fault.label)."""
    text = reason.lower()
    mistake = by_label(label)
    words = mistake.hint_words if mistake is not None else ()
    return any(re.search(r"\b" + re.escape(word), text) for word in words)


class ResponseModel(BaseModel):
    """The scripted worker's answer to a repair hint (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    identify: Literal["variable_and_kind", "variable"] = Field(
        default="variable_and_kind", description="What a hint must carry to fix a mistake."
    )
    p_flip: float = Field(
        default=DEFAULT_P_FLIP,
        ge=0.0,
        le=1.0,
        description="Chance that a hint on a correctly answered turn makes the worker change it.",
    )
    p_fix: float = Field(
        default=DEFAULT_P_FIX,
        ge=0.0,
        le=1.0,
        description="Chance that a hint which identifies a mistake (per `identify`) makes the worker fix it.",
    )
    redo_from: Literal["turn_start", "current"] = Field(
        default="turn_start",
        description="Workspace a fix re-runs the faulty turn on: as the turn began (a save point), or as it was left.",
    )
    seed: int = Field(default=0, description="Seed of the fix and flip draws (with the task id and turn).")

    def fixes(self, fault: Fault, names: set[str], reason: str, footprint: set[str]) -> bool:
        """Does a hint naming `names` for `reason` identify `fault` (whose variables are `footprint`)?"""
        if not names & footprint:
            return False
        return self.identify == "variable" or names_kind(reason, fault.label)

    def flips(self, task_id: str, turn: int, hint_index: int) -> bool:
        """A seeded draw: does this hint make the worker change the correct answer of `turn`?"""
        if self.p_flip <= 0:
            return False
        return random.Random(f"{self.seed}:{task_id}:{turn}:{hint_index}").random() < self.p_flip

    def takes_fix(self, task_id: str, turn: int, hint_index: int) -> bool:
        """A seeded draw: does a hint that identifies the mistake of `turn` make the worker fix it?
        (A draw of its own, apart from the flip draws: the same hint index does not tie the two.)"""
        if self.p_fix >= 1:
            return True
        if self.p_fix <= 0:
            return False
        return random.Random(f"fix:{self.seed}:{task_id}:{turn}:{hint_index}").random() < self.p_fix
