"""The repair schedule (paper Sec. 3.3, A.5, A.6): budget, light vs heavy, localization, hint.

Attempts 1..light_attempts are light (append a repair hint); later ones are heavy (also delete
the localized variables from the live workspace). After `budget` attempts REPAIR is refused and
the manager must abandon the state (the harness then rolls back to the last valid checkpoint).
A repair must name at least one known variable, and its hint must carry no code and none of
the state's computed values (`hint_guard`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from stateguard.actions import ActionError, RepairArgs
from stateguard.hint_guard import check_repair_hint
from stateguard.state import Draft

RepairMode = Literal["light", "heavy"]


class RepairPlan(BaseModel):
    """What the harness will do for an accepted REPAIR."""

    model_config = ConfigDict(frozen=True)
    attempt: int
    mode: RepairMode
    localized: list[str]  # error variables that name something known (to delete on heavy repair)


def repair_mode(attempt: int, light_attempts: int) -> RepairMode:
    return "light" if attempt <= light_attempts else "heavy"


def plan_repair(
    args: RepairArgs,
    draft: Draft,
    *,
    attempts_so_far: int,
    budget: int,
    light_attempts: int,
    workspace_names: Iterable[str],
    is_committed_name: Callable[[str], bool],
    evidence: Iterable[Any],
    task_text: str,
    rollback: bool,
) -> RepairPlan:
    """Validate a REPAIR against the schedule and the hint rules; raises ActionError or HintRejected."""
    if attempts_so_far >= budget:
        raise ActionError(
            f"repair budget exhausted for {draft.id} ({budget} attempts); ABANDON_STATE now"
            + (" (the harness rolls back to the last valid checkpoint)" if rollback else "")
        )
    hint = args.error_hint
    known = (
        {v.name for v in draft.used_variables} | {v.key for v in draft.used_variables} | set(workspace_names)
    )
    known |= _field_names(v.value for v in draft.used_variables)  # e.g. a field of a reported result dict
    known |= {w for c in draft.conclusions for w in re.findall(r"[A-Za-z_][\w.]*", c.text)}
    localized = [v for v in dict.fromkeys(hint.error_variables) if v in known or is_committed_name(v)]
    if not localized:
        raise ActionError(
            f"REPAIR must be localized: none of error_variables {hint.error_variables} is a variable (or a "
            f"reported field) of the draft, the workspace or a committed state; draft variables: "
            f"{sorted(v.name for v in draft.used_variables) or 'none'}"
        )
    protected: list[Any] = [v.value for v in draft.used_variables] + [c.text for c in draft.conclusions]
    check_repair_hint(
        hint.faulty_reasoning,
        hint.error_variables,
        protected_values=protected + list(evidence),
        allowed_text=task_text,
    )
    attempt = attempts_so_far + 1
    return RepairPlan(attempt=attempt, mode=repair_mode(attempt, light_attempts), localized=localized)


def _field_names(values: Iterable[Any]) -> set[str]:
    """Keys anywhere inside JSON-like variable values."""
    names: set[str] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            names.update(str(k) for k in value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return names
