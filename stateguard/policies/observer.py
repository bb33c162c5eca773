"""The `observer` ablation (paper C.5, "w/o state validity maintenance"): no state, tools or memory.

What it sees, and nothing else (as the paper's observer): a window of the worker's most recent
steps (thought, code, output or error), the worker's remaining step budget, and whether the run
is terminating. No question text, no draft, no committed states, no earlier manager outputs: the
session is rebuilt from scratch at every activation, so nothing carries over between reviews.
What it may say: one JSON object, `{"hint": null}` or `{"hint": "<one remark about the steps it
was shown>"}`. A remark goes to the worker through the harness's `advise`, which applies
the same no-code / no-answer guard as repair hints; a refused or empty remark means the worker
simply continues. It never opens a state, calls a tool or repairs. It is consulted at reviews
that close a unit of work (turn end, pause, termination); at a turn start there is nothing new.

    manager = ObserverManager(LLMClient(EndpointConfig.from_env("manager")), window=6)
"""

from __future__ import annotations

from typing import Any

from stateguard.actions import AbstainArgs, Action
from stateguard.answers import last_json
from stateguard.llm.client import LLMError
from stateguard.observation import EventType, ManagerObservation, WorkerStep
from stateguard.policies.base import Activation, Advice, ManagerContext

OBSERVER_SYSTEM = """Your role: watch a worker agent that is solving a data-analysis task, and decide whether to say anything to it.
What you get: only a short window of the worker's latest steps (its thinking, the code it ran, and what came back), how many steps it has left, and whether the run is about to end. You see nothing else: not the task, not earlier windows, not anything you said before. Every call starts from zero.
What you cannot do: run code, look anything up, or check a result. Never state that you verified something, and never make up an output the window does not show.
Decide from the window alone whether there is one concrete thing worth pointing out before the worker goes on, such as an error it moved past, a result that contradicts an earlier step in the window, or a value reused after the code that made it changed.
Answer with exactly one JSON object and nothing else:
{"hint": null}   when nothing in the window needs a remark, or
{"hint": "<one short remark that points at the steps concerned>"}
A remark names where the problem is and why it looks wrong. It must not contain code, a corrected value or the answer."""

STEP_CHARS = 1500  # per step in the window, so a long output cannot crowd out the others


def render_window(steps: list[WorkerStep], budget_left: int | None, terminating: bool) -> str:
    """The observer's whole input: the step window, the remaining budget, the termination flag."""
    shown = "\n\n".join(
        f"step {s.index}\nthought: {s.thought or '-'}\ncode:\n{s.action or '-'}\nresult: {s.error or s.output or '(none)'}"[
            :STEP_CHARS
        ]
        for s in steps
    )
    budget = "unknown" if budget_left is None else f"{budget_left} step(s)"
    return (
        f"RECENT WORKER STEPS (the last {len(steps)})\n{shown or '(none)'}\n\n"
        f"REMAINING WORKER BUDGET: {budget}\nTERMINATING: {'yes' if terminating else 'no'}"
    )


def parse_hint(text: str) -> str | None:
    """The remark of a `{"hint": ...}` reply; None for `{"hint": null}`, an empty remark or no object."""
    verdict = last_json(text)
    if not isinstance(verdict, dict):
        return None
    hint = verdict.get("hint")
    return (hint.strip() or None) if isinstance(hint, str) else None


class ObserverManager:
    name = "observer"

    def __init__(self, client: Any, *, window: int = 6):
        self.client = client
        self.window = window
        self.calls = 0

    def messages(self, obs: ManagerObservation, ctx: ManagerContext) -> list[dict[str, Any]]:
        """A fresh two-message session: the fixed instructions and the window (no history)."""
        recent = [ctx.steps[i] for i in sorted(ctx.steps)[-self.window :]]
        user = render_window(recent, ctx.worker_budget_left, obs.terminal_pending_review)
        return [{"role": "system", "content": OBSERVER_SYSTEM}, {"role": "user", "content": user}]

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        if obs.event_type in (EventType.TURN_START, EventType.TASK_START):
            yield Action.of(AbstainArgs(reason="observer: nothing new to look at"))
            return
        try:
            reply = self.client.chat(self.messages(obs, ctx))
            self.calls += 1  # real answers only; a refused or failed call is in llm_calls.jsonl
            hint = parse_hint(reply.message.get("content") or "")
        except LLMError:
            hint = None
        if hint is not None:
            yield Advice(error_variables=[], faulty_reasoning=hint)
        yield Action.of(AbstainArgs(reason="observer"))
