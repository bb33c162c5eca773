"""Typed readings of the trace payload fields that are written as plain JSON objects.

It sits beside the runtime, not in `stateguard.artifacts`, because it reads the fields back as the
runtime's own models (flows, actions), which the formats layer does not import.

A few event fields keep the writer's model dump as a free dict so the trace bytes stay as they
are: the run's flow (`run_start.flow`), a draft (`state_opened` / `state_updated`.draft) and an
action's arguments (`action.arguments`). Readers go through these functions to get the runtime's
own models back (`FlowConfig`, `Draft`, the per-action argument models of `stateguard.actions`)
instead of indexing the dict by string, so a renamed field fails here, loudly, in one place.

    flow = run_flow(start.data)                    # FlowConfig | None
    draft = draft_of(opened.data)                  # stateguard.state.Draft
    args = action_args(action.data, RepairArgs)    # RepairArgs | None
    args = named_args(tool.data.name, tool.data.arguments, RunProbeArgs)  # any (name, arguments) pair

Arguments of a rejected action may be anything the manager sent, so `action_args` and
`unparsed_action` answer None for what does not validate instead of raising.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from stateguard.actions import CONTROL_ARGS, TOOL_ARGS, ActionError, RawAction, lookup
from stateguard.artifacts.events import ActionData, RunStartData, StateOpenedData, StateUpdatedData
from stateguard.artifacts.files import ArtifactError, describe_errors
from stateguard.flows import FlowConfig
from stateguard.lifecycle import ControlAction
from stateguard.state import Draft

__all__ = ["action_args", "draft_of", "named_args", "run_flow", "unparsed_action"]

A = TypeVar("A", bound=BaseModel)


def run_flow(data: RunStartData) -> FlowConfig | None:
    """The run's flow, or None when the run_start carries none (an empty object or no regime, as
    some hand-built traces have). Fields the writer left out keep FlowConfig's defaults; ask
    `"review_every" in flow.model_fields_set` to tell a recorded cadence from a default one."""
    if "regime" not in data.flow:
        return None
    try:
        return FlowConfig.model_validate(data.flow)
    except ValidationError as exc:
        raise ArtifactError(
            f"run_start.flow does not match stateguard.flows.FlowConfig: {describe_errors(exc)}"
        ) from None


def draft_of(data: StateOpenedData | StateUpdatedData) -> Draft:
    """The draft as the harness held it when it emitted the event."""
    try:
        return Draft.model_validate(data.draft)
    except ValidationError as exc:
        raise ArtifactError(
            f"draft of state {data.state_id} does not match stateguard.state.Draft: {describe_errors(exc)}"
        ) from None


def action_args(data: ActionData, model: type[A]) -> A | None:
    """The action's arguments as `model` (e.g. RepairArgs), or None when the action is another
    one, did not parse, or its arguments do not validate (a rejected proposal may be malformed)."""
    return named_args(data.name, data.arguments, model)


def named_args(name: str | None, arguments: Any, model: type[A]) -> A | None:
    """Arguments recorded next to an action name (a trace `tool` event, a teacher's ActionLog, a
    reward's decision point) as `model`; None when `name` is another action, unknown, or the
    arguments do not validate."""
    if name is None:
        return None
    try:
        action = lookup(name)
    except ActionError:
        return None
    expected = CONTROL_ARGS[action] if isinstance(action, ControlAction) else TOOL_ARGS[action]
    if expected is not model:
        return None
    try:
        return model.model_validate(arguments if arguments is not None else {})
    except ValidationError:
        return None


def unparsed_action(data: ActionData) -> RawAction | None:
    """For an action that did not parse (name None): the named call the manager proposed, or None
    when the proposal was not a named call (free text, a bare advice)."""
    if data.name is not None:
        return None
    try:
        return RawAction.model_validate(data.arguments)
    except ValidationError:
        return None
