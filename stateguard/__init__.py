"""StateGuard runtime: analytical states, the durable store, the lifecycle, the action protocol
and the harness that applies manager actions transactionally. No torch, no verl here.

The names below are imported on first use (PEP 562): the sandbox kernel
(`python -m stateguard.sandbox.kernel`) imports this package at every start and needs none of
them (the harness, store, trace and actions were most of a kernel's start-up imports)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stateguard.lazy_exports import lazy_getattr

_EXPORTS = {
    "Action": "stateguard.actions",
    "ActionError": "stateguard.actions",
    "tool_schemas": "stateguard.actions",
    "validate_action": "stateguard.actions",
    "Harness": "stateguard.harness",
    "HarnessConfig": "stateguard.harness",
    "HarnessResult": "stateguard.harness",
    "Outcome": "stateguard.harness",
    "LEGAL": "stateguard.lifecycle",
    "ControlAction": "stateguard.lifecycle",
    "Regime": "stateguard.lifecycle",
    "Stage": "stateguard.lifecycle",
    "ToolAction": "stateguard.lifecycle",
    "EventType": "stateguard.observation",
    "ManagerObservation": "stateguard.observation",
    "WorkerStep": "stateguard.observation",
    "parse_response": "stateguard.parser",
    "SCHEMA_VERSION": "stateguard.records",
    "AnalyticalState": "stateguard.state",
    "Constraint": "stateguard.state",
    "Relation": "stateguard.state",
    "RelationType": "stateguard.state",
    "VariableRef": "stateguard.state",
    "StateStore": "stateguard.store",
    "StoreError": "stateguard.store",
    "Trace": "stateguard.trace",
    "read_trace": "stateguard.trace",
    "DictWorkspace": "stateguard.workspace",
    "Workspace": "stateguard.workspace",
}

if TYPE_CHECKING:
    from stateguard.actions import Action, ActionError, tool_schemas, validate_action
    from stateguard.harness import Harness, HarnessConfig, HarnessResult, Outcome
    from stateguard.lifecycle import LEGAL, ControlAction, Regime, Stage, ToolAction
    from stateguard.observation import EventType, ManagerObservation, WorkerStep
    from stateguard.parser import parse_response
    from stateguard.records import SCHEMA_VERSION
    from stateguard.state import AnalyticalState, Constraint, Relation, RelationType, VariableRef
    from stateguard.store import StateStore, StoreError
    from stateguard.trace import Trace, read_trace
    from stateguard.workspace import DictWorkspace, Workspace


__getattr__ = lazy_getattr(__name__, _EXPORTS)


__all__ = [
    "LEGAL",
    "SCHEMA_VERSION",
    "Action",
    "ActionError",
    "AnalyticalState",
    "Constraint",
    "ControlAction",
    "DictWorkspace",
    "EventType",
    "Harness",
    "HarnessConfig",
    "HarnessResult",
    "ManagerObservation",
    "Outcome",
    "Regime",
    "Relation",
    "RelationType",
    "Stage",
    "StateStore",
    "StoreError",
    "ToolAction",
    "Trace",
    "VariableRef",
    "WorkerStep",
    "Workspace",
    "parse_response",
    "read_trace",
    "tool_schemas",
    "validate_action",
]
