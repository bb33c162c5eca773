"""StateWise: persistent operational records across tasks, diagnosed and repaired before actions.

StateGuard keeps one task's analytical states valid; StateWise keeps the records an agent carries
from task to task valid ("the orders table lives in data/v2", "amounts are in cents", "tests run
from tests/fast"). Before a side-effecting action it finds the records the action depends on
(counterfactual replanning), establishes whether they still hold (metadata, read-only probes,
targeted developer questions), repairs defective ones persistently with lineage, replans, and
checks the new action against state, invariants and permissions — or stops safely.

Modules: `records` (typed records, evidence, lineage, scopes), `store` (durable SQLite store),
`interface` (the declarative interface), `planner` / `llm_planner`, `attribution`, `resolution`,
`clarify`, `repair`, `check`, `recovery` (the core), `promote` (from StateGuard's committed
states), `interfaces/` (data: sandboxed pandas workspace; coding: bubblewrap shell).

    from statewise import RecordStore, RecoveryConfig, ScriptedPlanner, run_task
    from statewise.interfaces import get_interface
"""

from statewise.clarify import Answer, CallbackDeveloper, Developer, EndpointDeveloper, Question
from statewise.interface import Action, Interface, InterfaceSpec, TaskSpec
from statewise.planner import Planner, PlannerError, ScriptedPlanner
from statewise.records import Authority, Correction, Evidence, OpRecord, Provenance
from statewise.recovery import RecoveryConfig, TaskOutcome, run_task
from statewise.resolution import ResolutionPolicy
from statewise.store import RecordStore, RecordStoreError

__all__ = [
    "Action",
    "Answer",
    "Authority",
    "CallbackDeveloper",
    "Correction",
    "Developer",
    "EndpointDeveloper",
    "Evidence",
    "Interface",
    "InterfaceSpec",
    "OpRecord",
    "Planner",
    "PlannerError",
    "Provenance",
    "Question",
    "RecordStore",
    "RecordStoreError",
    "RecoveryConfig",
    "ResolutionPolicy",
    "ScriptedPlanner",
    "TaskOutcome",
    "TaskSpec",
    "run_task",
]
