"""The independent state–action check, run on the (re)planned action right before execution.

It re-derives what the action should rest on from the store and the workspace, not from the
planner's reasoning:
- consistency: every slot bound to a record key carries the value of the record that retrieval
  returns now (after repairs) for the task's scope; no slot carries a stop value;
- invariants the operation declares, checked with read-only probes: write/delete targets lie
  under allowed roots (`within_roots`), carry no freeze marker in them or their folders
  (`no_marker`), carry a required marker (`requires_marker`, e.g. CACHEDIR.TAG before deleting a
  cache), exist (`exists`), and are not declared protected by a sidecar `<file>.meta.json`
  with `"protected": true` (`not_protected`);
- permissions: the operation's effect class is among those the task grants.
Any failure is a safe stop; a stop needs no check.
"""

from __future__ import annotations

import json
import posixpath

from pydantic import BaseModel, ConfigDict, Field

from statewise.interface import Action, Environment, Interface, Invariant, TaskSpec
from statewise.store import RecordStore


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    passed: bool
    failures: list[str] = Field(default_factory=list)


def _parents(path: str) -> list[str]:
    """The path's folders from the workspace root down to the path itself."""
    parts = posixpath.normpath(path).split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _unsafe_path(path: str) -> bool:
    norm = posixpath.normpath(path)
    return norm.startswith(("/", "..")) or norm == "."


def _invariant(env: Environment, inv: Invariant, value: object) -> str | None:
    if not isinstance(value, str):
        return f"{inv.slot}={value!r} is not a path"
    if _unsafe_path(value):
        return f"{inv.slot}={value!r} leaves the workspace"
    if inv.kind == "within_roots":
        if not any(_parents(value)[0] == posixpath.normpath(root) for root in inv.arg):
            return f"{inv.slot}={value!r} is outside the allowed roots {inv.arg}"
    elif inv.kind == "no_marker":
        for folder in _parents(value):
            listing = env.list_dir(folder)
            found = sorted(set(listing or []) & set(inv.arg))
            if found:
                return f"{folder} carries {found[0]}: it must not be changed"
    elif inv.kind == "requires_marker":
        listing = env.list_dir(value)
        if listing is None or not set(listing) & set(inv.arg):
            return f"{inv.slot}={value!r} has none of {inv.arg}"
    elif inv.kind == "exists":
        if env.read_text(value, limit=1) is None and env.list_dir(value) is None:
            return f"{inv.slot}={value!r} does not exist"
    elif inv.kind == "not_protected":
        sidecar = env.read_text(value + ".meta.json")
        if sidecar is not None:
            try:
                meta = json.loads(sidecar)
            except json.JSONDecodeError:
                return f"{value}.meta.json is unreadable: treated as protected"
            if isinstance(meta, dict) and meta.get("protected") is True:
                return f"{value} is declared protected ({value}.meta.json)"
    return None


def check_action(
    action: Action, task: TaskSpec, interface: Interface, env: Environment, store: RecordStore
) -> CheckResult:
    if action.is_stop:
        return CheckResult(passed=True)
    spec = interface.spec
    op = spec.operations.get(action.operation)
    if op is None or action.operation != task.operation:
        return CheckResult(
            passed=False, failures=[f"operation {action.operation!r} is not the task's {task.operation!r}"]
        )
    failures: list[str] = []
    if op.effect not in task.permissions:
        failures.append(f"{op.effect} is not permitted for this task (granted: {task.permissions})")
    current = {r.key: r for r in store.retrieve(task.scope)}
    for slot in op.slots:
        if slot.name not in action.slots:
            failures.append(f"slot {slot.name!r} is missing")
            continue
        value = action.slots[slot.name]
        if isinstance(value, str) and value in spec.stop_values:
            failures.append(f"{slot.name}={value!r} means do not act")
        if slot.role == "param":
            if value != task.params.get(slot.name):
                failures.append(
                    f"{slot.name}={value!r} differs from the task's {task.params.get(slot.name)!r}"
                )
            continue
        rec = current.get(slot.record_key(task.params))
        if rec is not None and rec.value != value:
            failures.append(f"{slot.name}={value!r} contradicts record {rec.key}={rec.value!r} ({rec.id})")
    for inv in op.invariants:
        bound = inv.model_copy(
            update={"arg": [a.format(**task.params) for a in inv.arg]}
        )  # roots may name params
        problem = _invariant(env, bound, action.slots.get(inv.slot))
        if problem:
            failures.append(f"invariant {inv.kind}: {problem}")
    return CheckResult(passed=not failures, failures=failures)
