"""The declarative interface between the fixed recovery core and one tool environment.

An interface declares, as data: its typed state slots (record types: who owns the fact, how long
it stays fresh, which verifier adapter observes it, the values it can take), the typed record
keys, its tool operations (typed action slots bound to record keys or task parameters, the
effect class, reversibility, the invariants an action must keep, and the program template that
executes it), and the values that mean "do not act". Scopes are hierarchical paths
(`statewise.records.covers`); `scope_levels` names their parts.

Code an interface supplies: verifier adapters (read-only observers of one fact, by name) and an
`Environment` (read-only probes + execution in a sandbox). The core (attribution, resolution,
repair, check) only ever goes through `Interface` and `Environment`, so a new tool surface is a
new spec + adapters, not a new core. Two ship: `interfaces.data` (the sandboxed pandas
workspace) and `interfaces.coding` (shell commands in a bubblewrap-sandboxed scratch repo).
"""

from __future__ import annotations

import string
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

Owner = Literal["machine", "developer"]
SlotRole = Literal["input", "param", "write", "delete", "guard", "setting"]
InvariantKind = Literal["within_roots", "no_marker", "requires_marker", "exists", "not_protected"]


class StateType(BaseModel):
    """A typed state slot: what kind of fact a record of this type is, and who can establish it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    owner: Owner = Field(
        description="machine: observable read-only; developer: intent only the developer can state."
    )
    verifier: str | None = Field(
        default=None, description="Name of the verifier adapter (machine-owned types)."
    )
    ttl_days: float | None = Field(
        default=None, description="How long an observation of this type stays fresh."
    )
    domain: list[Any] | None = Field(
        default=None, description="Allowed values, when the type is an enumeration."
    )
    description: str = ""


class ActionSlot(BaseModel):
    """One typed argument of an operation: filled from a record (key) or from the task (param)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    role: SlotRole
    key: str = Field(
        default="", description="Record key template, e.g. 'column.{measure}' ({param} from the task)."
    )
    default: Any = Field(
        default=None, description="What a planner assumes without a record; None: no default."
    )
    description: str = ""

    def record_key(self, params: dict[str, Any]) -> str:
        names = [f for _, f, _, _ in string.Formatter().parse(self.key) if f]
        missing = [n for n in names if n not in params]
        if missing:
            raise KeyError(f"slot {self.name!r}: key template {self.key!r} needs task params {missing}")
        return self.key.format(**params)


class Invariant(BaseModel):
    """A condition the independent check evaluates read-only before execution."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: InvariantKind
    slot: str = Field(description="The action slot (a path) it constrains.")
    arg: list[str] = Field(
        default_factory=list, description="Roots for within_roots; marker names for markers."
    )


class Operation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    description: str
    effect: Literal["write", "delete"]
    irreversible: bool = Field(description="Overwrites or deletes something that cannot be regenerated.")
    slots: list[ActionSlot]
    invariants: list[Invariant] = Field(default_factory=list)
    template: str = Field(
        description="Program run by the environment; {slot} placeholders, values quoted by it."
    )

    def slot(self, name: str) -> ActionSlot:
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(f"operation {self.name!r} has no slot {name!r}")

    def bound_keys(self, params: dict[str, Any]) -> dict[str, str]:
        """slot name -> record key, for the slots a record fills."""
        return {s.name: s.record_key(params) for s in self.slots if s.key}


class InterfaceSpec(BaseModel):
    """Everything the core needs to know about a tool surface, as data."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    description: str
    scope_levels: list[str] = Field(
        description="What each part of a scope path names, e.g. ['project', 'dataset']."
    )
    state_types: dict[str, StateType]
    keys: dict[str, str] = Field(description="Record key (or key prefix ending in '.') -> state type name.")
    operations: dict[str, Operation]
    stop_values: list[str] = Field(description="A premise with one of these values means: do not act.")

    @field_validator("stop_values")
    @classmethod
    def _undecided_stops(cls, values: list[str]) -> list[str]:
        if "undecided" not in values:
            raise ValueError(
                "stop_values must include 'undecided': a developer may answer that a decision is open"
            )
        return values

    def type_of(self, key: str) -> StateType:
        if key in self.keys:
            return self.state_types[self.keys[key]]
        for prefix, tname in self.keys.items():
            if prefix.endswith(".") and key.startswith(prefix):
                return self.state_types[tname]
        raise KeyError(
            f"interface {self.name!r} declares no record key {key!r} (declared: {sorted(self.keys)})"
        )


class TaskSpec(BaseModel):
    """One developer task: an operation to perform in a scope, with the values the instruction gives."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    task_id: str
    interface: str
    scope: str
    operation: str
    params: dict[str, Any] = Field(default_factory=dict)
    instruction: str
    permissions: list[Literal["write", "delete"]] = Field(default_factory=lambda: ["write"])  # type: ignore[arg-type]
    now: datetime


class Action(BaseModel):
    """A proposed side-effecting operation with its slot values, or a stop."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    operation: str = Field(description="An operation name, or 'stop'.")
    slots: dict[str, Any] = Field(default_factory=dict)
    used: dict[str, str] = Field(default_factory=dict, description="slot -> id of the record that filled it.")
    reason: str = ""

    @property
    def is_stop(self) -> bool:
        return self.operation == "stop"

    def signature(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What counts as 'the same action' for attribution: operation and slot values."""
        if self.is_stop:
            return ("stop", ())
        return (self.operation, tuple(sorted((k, repr(v)) for k, v in self.slots.items())))


class Verdict(BaseModel):
    """What a verifier adapter observed about one fact, read-only."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    conclusive: bool
    value: Any = None
    detail: str = Field(default="", description="What was probed and what was seen (kept as evidence).")


class ExecOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    ok: bool
    output: str = ""
    error: str | None = None


class Environment(Protocol):
    """A materialized workspace: read-only probes and sandboxed execution, paths relative to its root."""

    probes: int

    def read_text(self, path: str, limit: int = 4000) -> str | None: ...
    def list_dir(self, path: str) -> list[str] | None: ...
    def execute(self, program: str) -> ExecOutcome: ...


Verifier = Callable[[Environment, str, TaskSpec], Verdict]


class Interface(BaseModel):
    """A spec plus its code: verifier adapters by name and the renderer of operation programs."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    spec: InterfaceSpec
    verifiers: dict[str, Verifier]
    render: Callable[[Operation, dict[str, Any]], str] = Field(
        description="(operation, slot values) -> program."
    )

    def verify(self, env: Environment, key: str, task: TaskSpec) -> Verdict:
        stype = self.spec.type_of(key)
        if stype.owner != "machine" or stype.verifier is None:
            return Verdict(conclusive=False, detail=f"{key} is {stype.owner}-owned: no read-only verifier")
        return self.verifiers[stype.verifier](env, key, task)
