"""The runtime's name for worker-facing hints (paper A.5): state hints and repair hints.

The `Hint` record, its packed states and its fixed wording are defined in
`stateguard.artifacts.hints`: a hint is written to the trace as delivered, so it belongs to the
formats layer, which imports nothing outside itself. This module names the same objects for the
harness and the workers.
"""

from stateguard.artifacts.hints import (
    REMARK_PREAMBLE,
    REPAIR_HINT_PREAMBLE,
    STATE_HINT_PREAMBLE,
    Hint,
    PackedState,
    pack_state,
    state_hint,
)

__all__ = [
    "REMARK_PREAMBLE",
    "REPAIR_HINT_PREAMBLE",
    "STATE_HINT_PREAMBLE",
    "Hint",
    "PackedState",
    "pack_state",
    "state_hint",
]
