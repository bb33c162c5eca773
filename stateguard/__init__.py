"""StateGuard runtime: analytical states, the durable store, the lifecycle, the action protocol
and the harness that applies manager actions transactionally. No torch, no verl here."""

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
