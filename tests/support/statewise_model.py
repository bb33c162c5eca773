"""A scripted planning model for StateWise tests, named so: it reads the LLM planner's prompt
(task parameters, operation, stored records) and answers the way the scripted planner would,
as the JSON plan an LLM would write. Served by `tests.support.scripted_server` over real HTTP.

    with ScriptedServer([Respond(planning_model(spec))] * 50) as server: ...
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from statewise.interface import InterfaceSpec, TaskSpec
from statewise.planner import ScriptedPlanner
from statewise.records import Authority, OpRecord, Provenance


def _line(prompt: str, prefix: str) -> str:
    for line in prompt.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    raise ValueError(f"the planner prompt has no line starting with {prefix!r}")


def planning_model(
    spec: InterfaceSpec, *, garble: Callable[[str], bool] | None = None
) -> Callable[[dict[str, Any]], str]:
    """`garble(prompt) -> True` makes the model answer with prose instead of a plan (a failed call)."""
    planner = ScriptedPlanner(spec)

    def answer(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if garble is not None and garble(prompt):
            return "I am not sure which file you mean."
        params = json.loads(_line(prompt, "Task parameters:"))
        operation = _line(prompt, "Operation:").split(" - ")[0]
        scope = _line(prompt, "Task scope:")
        lines = prompt.split("Stored records:\n", 1)[1].splitlines() if "Stored records:\n" in prompt else []
        records = []
        for i, line in enumerate(lines):
            brief = json.loads(line)
            records.append(
                OpRecord(
                    id=f"p{i}",
                    key=brief["key"],
                    value=brief["value"],
                    type=brief["type"],
                    scope=brief["scope"],
                    observed_at=datetime.fromisoformat(brief["observed_at"]).replace(tzinfo=UTC),
                    provenance=Provenance(source="prompt"),
                    authority=Authority(brief["authority"]),
                )
            )
        task = TaskSpec(
            task_id="prompt",
            interface=spec.name,
            scope=scope,
            operation=operation,
            params=params,
            instruction="",
            now=datetime(2025, 1, 1, tzinfo=UTC),
        )
        action = planner.propose(task, records)
        return "Plan:\n" + json.dumps(
            {"operation": action.operation, "slots": action.slots, "reason": action.reason}
        )

    return answer
