"""The `observer` ablation (paper C.5, "w/o state validity"): no states, no tools, no memory.

At each review that closes a unit of work (turn end, pause, termination) a fresh, stateless
model call sees only a window of the most recent worker steps, the remaining budget and whether
the run is terminating — no draft, no committed states, no earlier manager outputs — and may
name one suspected problem. If it does, the harness delivers it as a repair-style hint (through
the same no-code/no-answer guard); otherwise the worker simply continues. It never opens a state.
"""

from __future__ import annotations

from typing import Any

from stateguard.answers import last_json
from stateguard.llm.client import LLMError
from stateguard.observation import EventType, ManagerObservation
from stateguard.policies.base import Activation, Advice, ManagerContext

OBSERVER_SYSTEM = """You watch a data-analysis worker for clear mistakes. You see only its most recent steps.
If you can point to a concrete problem in them (an error left unfixed, a value reused after its inputs changed, a requirement of the question ignored), answer with JSON {"issue": true, "variables": ["<names>"], "reason": "<what is wrong, in words, no code, no values>"}.
Otherwise answer {"issue": false}. Answer with the JSON object only."""


class ObserverManager:
    name = "observer"

    def __init__(self, client: Any, *, window: int = 6):
        self.client = client
        self.window = window
        self.calls = 0

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        if obs.event_type in (EventType.TURN_START, EventType.TASK_START):
            yield ("ABSTAIN", {"reason": "observer: nothing to look at yet"})
            return
        recent = [ctx.steps[i] for i in sorted(ctx.steps)[-self.window :]]
        steps = "\n\n".join(
            f"step {s.index}:\n{s.action}\n-> {s.error or s.output}"[:1500] for s in recent
        ) if recent else "(no steps)"  # fmt: skip
        question = ctx.turn.prompt() if ctx.turn is not None else ""
        user = f"QUESTION\n{question}\n\nRECENT STEPS\n{steps}\n\nterminating: {obs.terminal_pending_review}"
        try:
            self.calls += 1
            reply = self.client.chat([{"role": "system", "content": OBSERVER_SYSTEM}, {"role": "user", "content": user}])
            verdict = last_json(reply.message.get("content") or "")
        except LLMError:
            verdict = None
        if isinstance(verdict, dict) and verdict.get("issue") and verdict.get("variables") and verdict.get("reason"):
            yield Advice(error_variables=[str(v) for v in verdict["variables"]][:5], faulty_reasoning=str(verdict["reason"]))
        yield ("ABSTAIN", {"reason": "observer"})
