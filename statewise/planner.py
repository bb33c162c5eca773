"""Planners: from a task and the retrieved persistent records to one proposed action.

A planner sees the task (operation, instruction, explicit parameters) and the records retrieval
returned for the task's scope, nothing else: no files, no hidden truth. The recovery core calls
it again with one record altered or removed (attribution) and after repairs (replanning), so a
planner must be a function of its inputs (LLM planners run at temperature 0).

`ScriptedPlanner` is the offline stand-in, named so. What it knows: the interface's declared
binding of each action slot to a record key, the slots' defaults, and the stop values. What it
does not know: whether a record is still true, whether its scope really covers the task, or
what the workspace holds. With a correct record it always proposes the right action, which an
LLM planner does not (it must bind records to slots from their descriptions).

    action = ScriptedPlanner(interface.spec).propose(task, store.retrieve(task.scope))
"""

from __future__ import annotations

from typing import Protocol

from statewise.interface import Action, InterfaceSpec, TaskSpec
from statewise.records import OpRecord


class Planner(Protocol):
    calls: int

    def propose(self, task: TaskSpec, records: list[OpRecord]) -> Action: ...


class PlannerError(RuntimeError):
    """A planner could not produce a usable action (unparseable model reply, unknown operation)."""


class ScriptedPlanner:
    """Fills each slot from the record its declared key names, else the slot default; stops on a
    stop value or on a required slot nobody can fill."""

    name = "scripted"

    def __init__(self, spec: InterfaceSpec):
        self.spec = spec
        self.calls = 0

    def propose(self, task: TaskSpec, records: list[OpRecord]) -> Action:
        self.calls += 1
        op = self.spec.operations.get(task.operation)
        if op is None:
            raise PlannerError(
                f"task {task.task_id}: interface {self.spec.name!r} has no operation {task.operation!r}"
            )
        by_key = {r.key: r for r in records}
        slots: dict[str, object] = {}
        used: dict[str, str] = {}
        for slot in op.slots:
            if slot.role == "param":
                if slot.name not in task.params:
                    return Action(operation="stop", reason=f"the task does not give {slot.name!r}")
                slots[slot.name] = task.params[slot.name]
                continue
            rec = by_key.get(slot.record_key(task.params))
            value = rec.value if rec is not None else slot.default
            if rec is None and isinstance(value, str):
                value = value.format(**task.params)  # defaults may name task params ('data/{dataset}.csv')
            if value is None:
                return Action(operation="stop", reason=f"no record and no default for {slot.name!r}")
            slots[slot.name] = value
            if rec is not None:
                used[slot.name] = rec.id
        blocked = [n for n, v in slots.items() if isinstance(v, str) and v in self.spec.stop_values]
        if blocked:
            return Action(
                operation="stop",
                used=used,
                reason=f"premise says do not act: {', '.join(f'{n}={slots[n]!r}' for n in blocked)}",
            )
        return Action(operation=op.name, slots=slots, used=used)
