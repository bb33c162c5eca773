"""What a manager policy is: a generator that proposes actions and reads the harness's verdicts.

One activation = one call to `activate`. The policy yields actions (tool actions first, then
one control action) — typed `Action`s (`Action.of(RepairArgs(...))`), `RawAction`s the harness
validates, or a raw model response — and the rollout
loop applies each through the harness and sends the result(s) back, so a tool's evidence or a
rejection's feedback is visible to the policy before its next move. The activation ends at the
first accepted control action: the policy is sent that result once (to observe it) and then
closed. The deterministic `rules` manager and the LLM manager share this contract and the same
harness.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from stateguard.actions import Action, RawAction
from stateguard.lifecycle import Regime
from stateguard.observation import ManagerObservation, WorkerStep
from stateguard.store import StateStore
from stateguard.task import AgentTask, AgentTurn
from stateguard.workspace import LiveWorkspace


class ModelResponse(BaseModel):
    """A raw model message (content and/or tool_calls) for the harness to parse and apply.
    The generator is sent back the list of `HarnessResult`s, one per parsed action (one
    rejection if the response could not be parsed)."""

    message: dict[str, Any]


class Advice(BaseModel):
    """A stateless hint to the worker (observer ablation); sent back one HarnessResult. The
    observer names no variables (its remark is free text), so `error_variables` may be empty."""

    error_variables: list[str] = []
    faulty_reasoning: str


class Degrade(BaseModel):
    """The policy gives up for the rest of the task: the worker runs to completion alone."""

    reason: str


# An Action or RawAction is sent back one HarnessResult; a ModelResponse a list of them.
Proposal = Action | RawAction | ModelResponse | Advice | Degrade
Activation = Generator[Proposal, Any, None]
R = TypeVar("R")


def raw_actions(fragment: Generator[tuple[str, dict[str, Any]], Any, R]) -> Generator[RawAction, Any, R]:
    """Proposals of a fragment that still speaks (name, arguments) pairs (stateguard.verification),
    as RawActions for the harness to validate; results are passed back, its return value kept."""
    try:
        pair = next(fragment)
        while True:
            reply = yield RawAction(name=pair[0], arguments=pair[1])
            pair = fragment.send(reply)
    except StopIteration as stop:
        return stop.value


class ManagerContext(BaseModel):
    """Read-only runtime evidence available to a policy besides the observation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task: AgentTask  # the agent view: managers never see reference code or answers
    turn: AgentTurn | None
    regime: Regime
    store: StateStore
    workspace: LiveWorkspace | None
    steps: dict[int, WorkerStep]
    budget: int = 3  # repair budget per state
    worker_budget_left: int | None = None  # worker steps left in the current budget unit (Table 3)
    trace: Any = None  # the run's Trace, for a policy's own events (e.g. `manager_fallback`); None offline


class ManagerPolicy(Protocol):
    name: str

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation: ...
