"""The five read-only verification tools (paper A.3); each returns a typed `ToolResult`.

compile_python and inspect_python are pure; check_execution reads the recorded worker steps;
load_state reads the store; run_probe delegates to the workspace, which decides isolation.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.actions import (
    Action,
    CheckExecutionArgs,
    CompilePythonArgs,
    InspectPythonArgs,
    LoadStateArgs,
    RunProbeArgs,
)
from stateguard.dataflow import cell_dataflow
from stateguard.inspection.inspect import inspect_code
from stateguard.lifecycle import ToolAction
from stateguard.observation import WorkerStep
from stateguard.store import StateStore
from stateguard.workspace import Workspace


class ToolResult(BaseModel):
    """Evidence returned to the manager as a tool message and recorded in the trace."""

    model_config = ConfigDict(frozen=True)
    tool: ToolAction
    ok: bool = Field(description="The tool ran; says nothing about whether the checked thing is valid.")
    data: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


def compile_python(code: str) -> dict[str, Any]:
    try:
        compile(code, "<manager>", "exec")
    except SyntaxError as exc:
        return {"valid": False, "message": exc.msg, "line": exc.lineno, "offset": exc.offset}
    return {"valid": True}


# inspect_python answers by code text: a teacher inspects the same stage code in every branch of a
# task (five of six calls repeat one), and one answer parses the code and all the SQL it runs.
_INSPECTED: dict[str, dict[str, Any]] = {}
_INSPECTED_CAP = 1024


def inspect_python(code: str) -> dict[str, Any]:
    """`inspect_code_facts`, remembered by code text; every caller gets its own copy."""
    found = _INSPECTED.get(code)
    if found is None:
        found = inspect_code_facts(code)
        if len(_INSPECTED) >= _INSPECTED_CAP:
            _INSPECTED.pop(next(iter(_INSPECTED)))  # oldest first
        _INSPECTED[code] = found
    return copy.deepcopy(found)


def inspect_code_facts(code: str) -> dict[str, Any]:
    """Names read and written (incl. in-place mutation), calls, literals, imports, and the
    semantic structure (row conditions, aggregates, group keys, joins, ordering) of the pandas
    statements and the SQL the code runs (`stateguard.inspection.inspect`)."""
    flow = cell_dataflow(code)
    if not flow.valid:
        return {"valid": False, "message": flow.error}
    tree = ast.parse(code)
    calls: list[str] = []
    literals: list[Any] = []
    imports: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.append(ast.unparse(node.func))
        elif isinstance(node, ast.Constant) and node.value is not Ellipsis:
            literals.append(node.value)
        elif isinstance(node, ast.Import):
            imports.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.extend(f"{node.module}.{a.name}" for a in node.names)
    return {
        "valid": True,
        "reads": flow.reads,
        "writes": flow.writes,
        "inplace": flow.inplace,
        "calls": calls,
        "literals": literals[:50],
        "imports": imports,
        "semantics": inspect_code(code).model_dump(mode="json", exclude_defaults=True),
    }


def check_execution(steps: dict[int, WorkerStep], step_id: int) -> dict[str, Any]:
    step = steps.get(step_id)
    if step is None:
        return {"found": False, "step_id": step_id, "message": f"no worker step {step_id} was recorded"}
    return {
        "found": True,
        "step_id": step_id,
        "executed": bool(step.action),
        "success": step.success and step.error is None,
        "error": step.error,
        "output": step.output[:2000],
    }


def run_tool(
    action: Action, *, store: StateStore, steps: dict[int, WorkerStep], workspace: Workspace | None
) -> ToolResult:
    """Dispatch a validated tool action. Never raises for the manager's input; errors go in the result."""
    name = action.name
    assert isinstance(name, ToolAction)
    args = action.args
    if isinstance(args, CompilePythonArgs):
        return ToolResult(tool=name, ok=True, data=compile_python(args.code))
    if isinstance(args, InspectPythonArgs):
        return ToolResult(tool=name, ok=True, data=inspect_python(args.code))
    if isinstance(args, CheckExecutionArgs):
        return ToolResult(tool=name, ok=True, data=check_execution(steps, args.step_id))
    if isinstance(args, LoadStateArgs):
        if args.state_id not in store:
            return ToolResult(tool=name, ok=False, error=f"{args.state_id} is not a committed state")
        return ToolResult(tool=name, ok=True, data=store.load(args.state_id).model_dump(mode="json"))
    if isinstance(args, RunProbeArgs):
        if workspace is None:
            return ToolResult(
                tool=name, ok=False, error="run_probe needs a workspace; none is attached to this run"
            )
        probe = workspace.run_probe(args.code)
        return ToolResult(tool=name, ok=probe.ok, data=probe.model_dump(mode="json"), error=probe.error)
    raise AssertionError(f"unhandled tool {name}")
