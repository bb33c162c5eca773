"""Manager action protocol (paper A.3): 8 control actions + 5 tool actions.

Each action's arguments are a pydantic model; the same model validates what a model proposes
and generates the OpenAI function-tool JSON schema that the manager is prompted with, so the
schema and the validator cannot drift apart. `validate_action(name, arguments)` returns a typed
`Action` or raises `ActionError` whose message names the action, the argument and the fix.

Policies hand the harness typed actions: `Action.of(RepairArgs(...))` (each argument model belongs
to one action, so the name follows from it and mypy checks the fields), or, for what a model or an
untyped fragment proposed, a `RawAction` the harness validates and answers with feedback.

    yield Action.of(CommitStateArgs())
    yield Action.of(CheckExecutionArgs(step_id=3))
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator
from pydantic.json_schema import SkipJsonSchema

from stateguard.lifecycle import ControlAction, ToolAction
from stateguard.state import RelationType, state_number

# Any whitespace character: `re`'s `\s` on text is the test `str.isspace` makes (one search in C
# instead of a generator over the name's characters; tests/stateguard/test_actions.py checks both
# agree on every code point).
_SPACE = re.compile(r"\s")


class ActionError(ValueError):
    """A proposed action that cannot be applied; `str(err)` is corrective feedback for the manager."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ----------------------------------------------------------------------------- argument pieces
class ConstraintArg(_Args):
    text: str = Field(min_length=1, description="The requirement in words, e.g. 'round to 2 decimals'.")
    code: str | None = Field(
        default=None,
        description="Optional Python check over task data; it passes when it runs without error.",
    )


class RelationArg(_Args):
    related_state_id: str | None = Field(
        default=None, description="Id of an earlier committed state, e.g. 'S2'. Omit only for init."
    )
    type: RelationType | None = Field(
        default=None,
        description="Relation type. The harness normalizes init/progress/branch/combine from the ids; "
        "'invalidate' is kept as your explicit decision.",
    )

    @field_validator("related_state_id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None:
            state_number(value)
        return value


class VariableArg(_Args):
    name: str = Field(min_length=1, description="Variable name in the worker's workspace.")

    @field_validator("name")
    @classmethod
    def _plain(cls, name: str) -> str:
        if "@" in name or _SPACE.search(name):
            raise ValueError(
                f"variable name {name!r} must not contain '@' or whitespace; give the version separately"
            )
        return name

    value: Any = Field(default=None, description="Its value or a compact summary.")
    version: str | None = Field(
        default=None,
        description="Only when the state reuses an earlier committed version unchanged, e.g. 'S3'. "
        "Omit for values produced in this state; the harness assigns the version.",
    )

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None:
            state_number(value.split("@")[-1])
        return value


class ConclusionArg(_Args):
    text: str = Field(min_length=1)
    variables: list[str] = Field(default_factory=list, description="Variable names this conclusion cites.")


class ErrorHintArg(_Args):
    error_variables: list[str] = Field(
        min_length=1, description="Affected variables or conclusions (names only)."
    )
    faulty_reasoning: str = Field(
        min_length=1, description="What is inconsistent and why, grounded in evidence. No code, no answer."
    )


# ----------------------------------------------------------------------------- control actions
class ResumeWorkerArgs(_Args):
    """Let the worker continue; nothing has formed into a state yet."""


class OpenStateArgs(_Args):
    """Open a draft state for the current analytical issue."""

    issue: str = Field(min_length=1, description="The analytical issue this state addresses.")
    constraints: list[ConstraintArg] = Field(default_factory=list)
    relations: list[RelationArg] = Field(
        default_factory=list, description="Provisional upstream relations; empty means init."
    )


class UpdateStateArgs(_Args):
    """Materialize the draft from the observed worker steps."""

    issue: str | None = Field(default=None, description="Refined issue text (optional).")
    source_interval: list[int] | None = Field(
        default=None,
        min_length=2,
        max_length=2,
        description="Inclusive [first_step, last_step] the state is formed from (segment flow only; "
        "the harness binds the whole turn in the turn-aligned flow).",
    )
    used_variables: list[VariableArg] = Field(default_factory=list)
    conclusions: list[ConclusionArg | Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=list
    )
    # Not in the schema the model is shown: the paper's UPDATE_STATE has no constraints (A.4). The
    # deterministic tier uses it to give the requirements it opened in words their code once the
    # work is known (turn-aligned flow) or made again from a retry (`binding.merge_constraints`).
    constraints: SkipJsonSchema[list[ConstraintArg]] = Field(
        default_factory=list,
        description="Constraints made executable now that the work is known: one with the text of a "
        "constraint of the draft replaces it (gives it code, or takes code away); others are added.",
    )


class FinalizeRelationsArgs(_Args):
    """Fix the state's relations after verification found no violation."""

    mode: Literal["confirm", "reselect"] = Field(
        default="confirm", description="'confirm' keeps the provisional relations; 'reselect' replaces them."
    )
    relations: list[RelationArg] = Field(default_factory=list, description="New relations for 'reselect'.")
    conflict_evidence: str | None = Field(
        default=None,
        description="Required for 'reselect': the concrete conflict with the provisional relations.",
    )


class CommitStateArgs(_Args):
    """Persist the finalized draft as an immutable state."""


class RepairArgs(_Args):
    """Request a repair of a localized, evidenced violation."""

    analytical_evidence: str = Field(min_length=1, description="The concrete evidence (tool results, trace).")
    error_hint: ErrorHintArg


class AbandonStateArgs(_Args):
    """Discard the current draft."""

    reason: str | None = None


class AbstainArgs(_Args):
    """Make no state decision at this review."""

    reason: str | None = None


# ----------------------------------------------------------------------------- tool actions
class CheckExecutionArgs(_Args):
    """Did a worker step get a matching successful executor result?"""

    step_id: int = Field(ge=0, description="Worker step index as shown in the observation.")


class InspectPythonArgs(_Args):
    """Static structure of a program: names read and written, calls, literals, imports."""

    code: str = Field(min_length=1)


class CompilePythonArgs(_Args):
    """Syntax check of a program."""

    code: str = Field(min_length=1)


class RunProbeArgs(_Args):
    """Run a read-only verification program over the task data and workspace values."""

    code: str = Field(min_length=1)


class LoadStateArgs(_Args):
    """Load a full committed state by id."""

    state_id: str

    @field_validator("state_id")
    @classmethod
    def _id(cls, value: str) -> str:
        state_number(value)
        return value


CONTROL_ARGS: dict[ControlAction, type[_Args]] = {
    ControlAction.RESUME_WORKER: ResumeWorkerArgs,
    ControlAction.OPEN_STATE: OpenStateArgs,
    ControlAction.UPDATE_STATE: UpdateStateArgs,
    ControlAction.FINALIZE_RELATIONS: FinalizeRelationsArgs,
    ControlAction.COMMIT_STATE: CommitStateArgs,
    ControlAction.REPAIR: RepairArgs,
    ControlAction.ABANDON_STATE: AbandonStateArgs,
    ControlAction.ABSTAIN: AbstainArgs,
}
TOOL_ARGS: dict[ToolAction, type[_Args]] = {
    ToolAction.CHECK_EXECUTION: CheckExecutionArgs,
    ToolAction.INSPECT_PYTHON: InspectPythonArgs,
    ToolAction.COMPILE_PYTHON: CompilePythonArgs,
    ToolAction.RUN_PROBE: RunProbeArgs,
    ToolAction.LOAD_STATE: LoadStateArgs,
}
ALL_NAMES: list[str] = [a.value for a in CONTROL_ARGS] + [t.value for t in TOOL_ARGS]


class Action(BaseModel):
    """A validated action: its name, kind and typed arguments."""

    model_config = ConfigDict(frozen=True)

    name: ControlAction | ToolAction
    args: _Args
    call_id: str | None = None

    @property
    def is_control(self) -> bool:
        return isinstance(self.name, ControlAction)

    @classmethod
    def of(cls, args: _Args, *, call_id: str | None = None) -> Action:
        """The action these arguments belong to (`Action.of(AbstainArgs(reason=...))`)."""
        return cls(name=ACTION_OF_ARGS[type(args)], args=args, call_id=call_id)

    @classmethod
    def bare(cls, name: ControlAction | ToolAction) -> Action:
        """`name` with its default arguments (only for actions whose arguments are all optional)."""
        model = CONTROL_ARGS[name] if isinstance(name, ControlAction) else TOOL_ARGS[name]
        return cls(name=name, args=model())


ACTION_OF_ARGS: dict[type[_Args], ControlAction | ToolAction] = {
    **{model: name for name, model in CONTROL_ARGS.items()},
    **{model: name for name, model in TOOL_ARGS.items()},
}


class RawAction(BaseModel):
    """A proposed action not validated yet (a model's tool call, a verification fragment's request):
    the harness validates it and answers a bad one with corrective feedback instead of raising."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: Any = None


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _format_errors(name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        kind = err["type"]
        if kind == "missing":
            parts.append(f"missing required argument '{loc}'")
        elif kind == "extra_forbidden":
            parts.append(f"unknown argument '{loc}'")
        elif kind.endswith("_type") or kind.endswith("_parsing"):
            parts.append(f"argument '{loc}' has the wrong type ({err['msg']}; got {_describe(err['input'])})")
        else:
            parts.append(f"argument '{loc}': {err['msg']}")
    return f"{name}: " + "; ".join(parts)


def lookup(name: str) -> ControlAction | ToolAction:
    """Resolve an action name (exact, case-sensitive as in the schemas)."""
    for enum in (ControlAction, ToolAction):
        try:
            return enum(name)
        except ValueError:
            continue
    close = difflib.get_close_matches(name, ALL_NAMES, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    raise ActionError(f"unknown action '{name}'.{hint} Valid actions: {', '.join(ALL_NAMES)}.")


def validate_action(name: str, arguments: Any, *, call_id: str | None = None) -> Action:
    """Validate one proposed action; raises ActionError with corrective feedback."""
    resolved = lookup(name)
    model = CONTROL_ARGS[resolved] if isinstance(resolved, ControlAction) else TOOL_ARGS[resolved]
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ActionError(f"{name}: arguments must be a JSON object, got {_describe(arguments)}")
    try:
        # The model's validator itself (`model_validate` is a Python wrapper passing it defaults).
        args = model.__pydantic_validator__.validate_python(arguments)
    except ValidationError as exc:
        allowed = ", ".join(model.model_fields) or "none"
        raise ActionError(_format_errors(name, exc) + f". Allowed arguments: {allowed}.") from None
    return Action(name=resolved, args=args, call_id=call_id)


# ----------------------------------------------------------------------------- OpenAI schemas
def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].split("/")[-1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k not in ("$defs", "title")}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def tool_schema(name: ControlAction | ToolAction) -> dict[str, Any]:
    """One OpenAI function-tool schema (`{"type": "function", "function": {...}}`)."""
    model = CONTROL_ARGS[name] if isinstance(name, ControlAction) else TOOL_ARGS[name]
    raw = model.model_json_schema()
    params = _inline(raw, raw.get("$defs", {}))
    params.pop("description", None)
    params.setdefault("properties", {})
    kind = (
        "Control action (ends the activation)"
        if isinstance(name, ControlAction)
        else "Tool action (read-only)"
    )
    return {
        "type": "function",
        "function": {
            "name": name.value,
            "description": f"{kind}: {(model.__doc__ or '').strip()}",
            "parameters": params,
        },
    }


def tool_schemas() -> list[dict[str, Any]]:
    """All 13 action schemas: the five tools first, then the eight control actions."""
    return [tool_schema(t) for t in TOOL_ARGS] + [tool_schema(c) for c in CONTROL_ARGS]
