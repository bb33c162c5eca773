"""A planner backed by any OpenAI-compatible chat endpoint (the `worker` role: STATEGUARD_WORKER_*).

The model gets the task, the operation's typed slots (names, roles, descriptions, defaults — not
which record fills which slot) and the retrieved records as JSON, and answers with one JSON object
`{"operation": <name> | "stop", "slots": {...}, "reason": "..."}`. Each call is independent (no
conversation), at temperature 0 unless the endpoint says otherwise, so counterfactual probes
differ from the original call only by the one record altered or removed. A reply that is not
such an object, names another operation or misses a slot raises `PlannerError` (attribution
treats that probe as inconclusive; the core stops on it).

    planner = LLMPlanner(LLMClient(EndpointConfig.from_env("worker", temperature=0.0)), spec)
"""

from __future__ import annotations

import json
from typing import Any

from stateguard.answers import last_json
from statewise.interface import Action, InterfaceSpec, TaskSpec
from statewise.planner import PlannerError
from statewise.records import OpRecord

SYSTEM = """You plan one operation for a developer task in a software project.
You are given the task, the operation to perform with its typed slots, and the project's stored records (facts and decisions remembered from earlier tasks).
Fill every slot: parameters come from the task; other slots from the stored record that states that fact for the task's scope, or the slot's default when no record does.
If a record that the operation depends on says the action must not happen (a value of %s), answer with operation "stop".
Reply with exactly one JSON object and nothing else: {"operation": "<operation name or stop>", "slots": {"<slot>": <value>, ...}, "reason": "<one sentence>"}"""


def render_prompt(spec: InterfaceSpec, task: TaskSpec, records: list[OpRecord]) -> str:
    op = spec.operations[task.operation]
    slots = [
        {
            "name": s.name,
            "role": s.role,
            "description": s.description,
            **({"default": s.default} if s.default is not None and s.role != "param" else {}),
        }
        for s in op.slots
    ]
    return "\n".join(
        [
            f"Task: {task.instruction}",
            f"Task scope: {task.scope}",
            f"Task parameters: {json.dumps(task.params, sort_keys=True)}",
            f"Operation: {op.name} - {op.description}",
            f"Slots: {json.dumps(slots)}",
            "Stored records:",
            *[json.dumps(r.brief(), sort_keys=True) for r in records],
        ]
    )


class LLMPlanner:
    name = "llm"

    def __init__(self, client: Any, spec: InterfaceSpec):
        self.client = client
        self.spec = spec
        self.calls = 0
        self.system = SYSTEM % ", ".join(repr(v) for v in spec.stop_values)

    def propose(self, task: TaskSpec, records: list[OpRecord]) -> Action:
        self.calls += 1
        result = self.client.chat(
            [
                {"role": "system", "content": self.system},
                {"role": "user", "content": render_prompt(self.spec, task, records)},
            ]
        )
        return parse_plan(result.content, self.spec, task, records)


def parse_plan(text: str, spec: InterfaceSpec, task: TaskSpec, records: list[OpRecord]) -> Action:
    data = last_json(text or "")
    if not isinstance(data, dict) or not isinstance(data.get("operation"), str):
        raise PlannerError(f"the planner's reply is not a JSON plan object: {text[:200]!r}")
    operation = data["operation"].strip()
    if operation == "stop":
        return Action(operation="stop", reason=str(data.get("reason", ""))[:500])
    if operation != task.operation:
        raise PlannerError(f"the planner chose operation {operation!r}; the task asks for {task.operation!r}")
    raw = data.get("slots")
    if not isinstance(raw, dict):
        raise PlannerError("the planner's reply has no 'slots' object")
    op = spec.operations[operation]
    # Parameters are given verbatim by the task: one the model left out is taken from it (a value it
    # wrote differently is kept, and the state-action check refuses it).
    raw = {
        **{s.name: task.params[s.name] for s in op.slots if s.role == "param" and s.name in task.params},
        **raw,
    }
    missing = [s.name for s in op.slots if s.name not in raw]
    if missing:
        raise PlannerError(f"the planner left slots {missing} empty")
    slots = {
        s.name: _coerce(raw[s.name], s.default, spec, s.record_key(task.params) if s.key else "")
        for s in op.slots
    }
    blocked = [n for n, v in slots.items() if isinstance(v, str) and v in spec.stop_values]
    if blocked:
        return Action(operation="stop", reason=f"plan carries a stop value in {blocked}")
    # Which record filled which slot is read off the values (the model does not say): used for reuse metrics.
    bound = op.bound_keys(task.params)
    by_key = {r.key: r for r in records}
    used = {n: by_key[k].id for n, k in bound.items() if k in by_key and by_key[k].value == slots.get(n)}
    return Action(operation=operation, slots=slots, used=used, reason=str(data.get("reason", ""))[:500])


def _coerce(value: Any, default: Any, spec: InterfaceSpec, key: str) -> Any:
    """Numbers the model wrote as strings become numbers where the slot is numeric ('30' -> 30)."""
    domain = spec.type_of(key).domain if key else None
    numeric = isinstance(default, int) or bool(domain and all(isinstance(d, int) for d in domain))
    if numeric and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return value
