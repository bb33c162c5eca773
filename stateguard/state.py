"""The runtime's name for the analytical-state model (paper Eq. 2, A.4).

The models are defined in `stateguard.artifacts.state`: states are written to the store and the
trace, so they belong to the formats layer, which imports nothing outside itself. This module
names the same objects for the harness, the policies and the store.
"""

from stateguard.artifacts.state import (
    STATE_ID_RE,
    VERSIONED_NAME_RE,
    AnalyticalState,
    Conclusion,
    Constraint,
    ConstraintResult,
    Draft,
    Relation,
    RelationType,
    VariableRef,
    state_id,
    state_number,
)

__all__ = [
    "STATE_ID_RE",
    "VERSIONED_NAME_RE",
    "AnalyticalState",
    "Conclusion",
    "Constraint",
    "ConstraintResult",
    "Draft",
    "Relation",
    "RelationType",
    "VariableRef",
    "state_id",
    "state_number",
]
