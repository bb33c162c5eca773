"""The manager's observation O_t = Φ(...) (paper Eq. 15, A.4) and its progressive compression.

The manager never sees the raw worker history: pending steps are projected to (index, action,
output/error) with repeated outputs replaced by a back-reference, and committed history is a
compact index (id, issue, conclusions). When the rendered observation exceeds the context
budget, `compress` applies increasingly aggressive levels until it fits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.records import Record
from stateguard.store import IndexEntry


class EventType(StrEnum):
    TASK_START = "task_start"
    TURN_START = "turn_start"
    TURN_END = "turn_end"
    PAUSE = "pause"
    REPAIR_RETURN = "repair_return"
    TERMINAL = "terminal"


class WorkerStep(Record):
    """One worker step (r, a, o) as the harness records it; `index` is global within the task."""

    index: int = Field(ge=0)
    turn: int | None = None
    thought: str = ""
    action: str = Field(default="", description="Code the worker ran, or its message.")
    output: str = ""
    error: str | None = None
    success: bool = True
    meta: dict[str, Any] = Field(
        default_factory=dict, description="Runtime metadata; never shown to the manager."
    )


class ProjectedStep(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    action: str
    output: str
    error: str | None = None


def project_steps(steps: list[WorkerStep]) -> list[ProjectedStep]:
    """Π_obs: keep intent, action and realized result; drop metadata and repeated raw outputs."""
    seen: dict[str, int] = {}
    projected = []
    for step in steps:
        output = step.output
        if output and output in seen:
            output = f"(same output as step {seen[output]})"
        elif output:
            seen[output] = step.index
        action = f"# {step.thought.strip()}\n{step.action}" if step.thought.strip() else step.action
        projected.append(ProjectedStep(index=step.index, action=action, output=output, error=step.error))
    return projected


class ManagerObservation(Record):
    event_type: EventType
    available_state_id: str | None = Field(description="Id of the current draft, if any.")
    stage: str
    legal_control_actions: list[str]
    untraced_steps: list[ProjectedStep]
    pending_start_step: int | None
    pending_end_step: int | None
    elided_steps: int = 0
    current_draft: dict[str, Any] | None = None
    repair_attempts: int = 0
    repair_budget: int = 3
    terminal_pending_review: bool = False
    last_action_result: str | None = None
    committed_state_index: list[IndexEntry] = Field(default_factory=list)
    elided_index_entries: int = 0
    compression_level: int = 0

    def render(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude={"schema_version"}), indent=1, default=str)

    def rendered_length(self) -> int:
        """`len(self.render())`, without building the text: `indent` makes `json.dumps` use its
        pure-Python encoder, and measuring the observation for compression was the harness's
        largest cost per manager activation (`compress`)."""
        return _indented_length(self.model_dump(mode="json", exclude={"schema_version"}))


def _indented_length(value: Any) -> int:
    """`len(json.dumps(value, indent=1, default=str))` for a JSON document: the one-line text with
    the same separators (the C encoder), plus the line breaks and indents that `indent=1` adds
    around the items of every non-empty list or object (a newline and depth + 1 spaces before
    each item, a newline and depth spaces before the closing bracket)."""
    extra = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            items: Any = node.values()
        elif isinstance(node, list | tuple):
            items = node
        else:
            continue
        if items:
            extra += len(items) * (depth + 2) + depth + 1
            stack.extend((item, depth + 1) for item in items)
    return len(json.dumps(value, separators=(",", ": "), default=str)) + extra


def approx_tokens(text: str) -> int:
    """Cheap default token estimate (~4 characters per token); pass a real tokenizer when you have one."""
    return approx_tokens_of_length(len(text))


def approx_tokens_of_length(length: int) -> int:
    """`approx_tokens` of a text of `length` characters."""
    return math.ceil(length / 4)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 10, 1)
    return f"{text[:half]} …[{len(text) - 2 * half} chars cut]… {text[-half:]}"


def _clip_steps(steps: list[ProjectedStep], limit: int) -> list[ProjectedStep]:
    return [
        ProjectedStep(
            index=s.index,
            action=_clip(s.action, limit),
            output=_clip(s.output, limit),
            error=None if s.error is None else _clip(s.error, limit),
        )
        for s in steps
    ]


def _clip_draft(draft: dict[str, Any] | None, limit: int) -> dict[str, Any] | None:
    if draft is None:
        return None
    out = dict(draft)
    out["used_variables"] = [
        {**v, "value": _clip(json.dumps(v.get("value"), default=str), limit)}
        for v in draft.get("used_variables", [])
    ]
    return out


# Each level: (step text limit, steps kept at head, steps kept at tail, index entries kept,
#              conclusions per entry, draft value limit). None = unlimited.
_LEVELS: list[tuple[int | None, int | None, int | None, int | None, int | None, int | None]] = [
    (None, None, None, None, None, None),
    (800, None, None, None, None, None),
    (200, None, None, 40, 1, 400),
    (200, 2, 6, 20, 1, 200),
    (120, 1, 4, 10, 0, 80),
    (80, 0, 2, 5, 0, 40),
]


def compress(
    obs: ManagerObservation,
    budget_tokens: int,
    count_tokens: Callable[[str], int] = approx_tokens,
) -> ManagerObservation:
    """Smallest compression level whose rendering fits `budget_tokens` (the last level otherwise)."""
    candidate = obs
    for level, (text, head, tail, keep_index, per_entry, value_limit) in enumerate(_LEVELS):
        steps = list(obs.untraced_steps)
        elided = obs.elided_steps
        if head is not None and tail is not None and len(steps) > head + tail:
            elided += len(steps) - head - tail
            steps = steps[:head] + steps[len(steps) - tail :]
        if text is not None:
            steps = _clip_steps(steps, text)
        index = list(obs.committed_state_index)
        dropped = obs.elided_index_entries
        if keep_index is not None and len(index) > keep_index:
            dropped += len(index) - keep_index
            index = index[-keep_index:]
        if per_entry is not None:
            index = [
                IndexEntry(
                    id=e.id,
                    issue=_clip(e.issue, 160),
                    conclusions=[_clip(c, 160) for c in e.conclusions[:per_entry]],
                )
                for e in index
            ]
        candidate = obs.model_copy(
            update={
                "untraced_steps": steps,
                "elided_steps": elided,
                "committed_state_index": index,
                "elided_index_entries": dropped,
                "current_draft": obs.current_draft
                if value_limit is None
                else _clip_draft(obs.current_draft, value_limit),
                "compression_level": level,
            }
        )
        tokens = (
            approx_tokens_of_length(candidate.rendered_length())
            if count_tokens is approx_tokens  # it reads only the length: skip building the text
            else count_tokens(candidate.render())
        )
        if tokens <= budget_tokens:
            return candidate
    return candidate
