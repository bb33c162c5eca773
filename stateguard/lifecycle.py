"""Lifecycle regimes (paper A.2) and the one table of legal control actions per stage.

`LEGAL[regime][stage]` maps each legal control action to the stage it leads to. The harness
rejects anything not in the table, and the RL lifecycle reward (training/rewards) scores
proposed actions against the same table, so the two can never disagree.

Turn-aligned: OPEN before the worker's turn, UPDATE after it, then REPAIR (worker retries,
UPDATE again) or FINALIZE_RELATIONS, then COMMIT. Segment-induced: at each pause RESUME_WORKER
until a state has formed; then OPEN, UPDATE with one source interval, FINALIZE, COMMIT.
"""

from __future__ import annotations

from enum import StrEnum


class Regime(StrEnum):
    TURN_ALIGNED = "turn_aligned"
    SEGMENT_INDUCED = "segment_induced"


class Stage(StrEnum):
    IDLE = "idle"  # no draft
    OPEN = "open"  # draft opened, nothing materialized yet
    UPDATED = "updated"  # draft materialized, awaiting verification verdict
    REPAIRING = "repairing"  # REPAIR issued; waiting for the worker's retry
    FINALIZED = "finalized"  # relations final; only COMMIT remains


class ControlAction(StrEnum):
    RESUME_WORKER = "RESUME_WORKER"
    OPEN_STATE = "OPEN_STATE"
    UPDATE_STATE = "UPDATE_STATE"
    FINALIZE_RELATIONS = "FINALIZE_RELATIONS"
    COMMIT_STATE = "COMMIT_STATE"
    REPAIR = "REPAIR"
    ABANDON_STATE = "ABANDON_STATE"
    ABSTAIN = "ABSTAIN"


class ToolAction(StrEnum):
    CHECK_EXECUTION = "check_execution"
    INSPECT_PYTHON = "inspect_python"
    COMPILE_PYTHON = "compile_python"
    RUN_PROBE = "run_probe"
    LOAD_STATE = "load_state"


class Actor(StrEnum):
    """Who moves after a control action is applied."""

    MANAGER = "manager"
    WORKER = "worker"


A = ControlAction
S = Stage

LEGAL: dict[Regime, dict[Stage, dict[ControlAction, Stage]]] = {
    Regime.TURN_ALIGNED: {
        S.IDLE: {A.OPEN_STATE: S.OPEN, A.ABSTAIN: S.IDLE},
        S.OPEN: {A.UPDATE_STATE: S.UPDATED, A.ABANDON_STATE: S.IDLE},
        S.UPDATED: {
            A.UPDATE_STATE: S.UPDATED,
            A.REPAIR: S.REPAIRING,
            A.FINALIZE_RELATIONS: S.FINALIZED,
            A.ABANDON_STATE: S.IDLE,
        },
        S.REPAIRING: {A.UPDATE_STATE: S.UPDATED, A.ABANDON_STATE: S.IDLE},
        S.FINALIZED: {A.COMMIT_STATE: S.IDLE},
    },
    Regime.SEGMENT_INDUCED: {
        S.IDLE: {A.RESUME_WORKER: S.IDLE, A.OPEN_STATE: S.OPEN, A.ABSTAIN: S.IDLE},
        S.OPEN: {A.UPDATE_STATE: S.UPDATED, A.ABANDON_STATE: S.IDLE},
        S.UPDATED: {
            A.UPDATE_STATE: S.UPDATED,
            A.REPAIR: S.REPAIRING,
            A.FINALIZE_RELATIONS: S.FINALIZED,
            A.ABANDON_STATE: S.IDLE,
            A.ABSTAIN: S.UPDATED,
        },
        S.REPAIRING: {
            A.RESUME_WORKER: S.REPAIRING,
            A.UPDATE_STATE: S.UPDATED,
            A.ABANDON_STATE: S.IDLE,
            A.ABSTAIN: S.REPAIRING,
        },
        S.FINALIZED: {A.COMMIT_STATE: S.IDLE},
    },
}

# Who acts next after each control action, per regime. In the turn-aligned flow the worker's
# turn starts right after OPEN (the harness injects the state hint first); in the segment flow
# OPEN is followed by UPDATE in the same pause.
_AFTER: dict[ControlAction, Actor] = {
    A.UPDATE_STATE: Actor.MANAGER,  # verification follows in the same review
    A.FINALIZE_RELATIONS: Actor.MANAGER,  # then COMMIT_STATE
    A.COMMIT_STATE: Actor.WORKER,
    A.REPAIR: Actor.WORKER,  # the worker retries
    A.ABANDON_STATE: Actor.WORKER,
    A.ABSTAIN: Actor.WORKER,
    A.RESUME_WORKER: Actor.WORKER,
}
NEXT_ACTOR: dict[Regime, dict[ControlAction, Actor]] = {
    Regime.TURN_ALIGNED: {A.OPEN_STATE: Actor.WORKER, **_AFTER},
    Regime.SEGMENT_INDUCED: {A.OPEN_STATE: Actor.MANAGER, **_AFTER},
}


def legal_actions(regime: Regime, stage: Stage) -> list[ControlAction]:
    """Control actions allowed in a stage, in a stable order (for prompts and feedback)."""
    return list(LEGAL[regime][stage])


def is_legal(regime: Regime, stage: Stage, action: ControlAction) -> bool:
    return action in LEGAL[regime][stage]


def next_stage(regime: Regime, stage: Stage, action: ControlAction) -> Stage:
    """Stage after a legal action; KeyError for an illegal one (check `is_legal` first)."""
    return LEGAL[regime][stage][action]
