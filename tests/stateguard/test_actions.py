"""Manager action protocol: OpenAI schemas and argument validation."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from stateguard.actions import (
    Action,
    ActionError,
    CheckExecutionArgs,
    LoadStateArgs,
    OpenStateArgs,
    RepairArgs,
    tool_schemas,
    validate_action,
)
from stateguard.lifecycle import ControlAction, ToolAction
from stateguard.state import RelationType

CONTROL_NAMES = [
    "RESUME_WORKER",
    "OPEN_STATE",
    "UPDATE_STATE",
    "FINALIZE_RELATIONS",
    "COMMIT_STATE",
    "REPAIR",
    "ABANDON_STATE",
    "ABSTAIN",
]
TOOL_NAMES = ["check_execution", "inspect_python", "compile_python", "run_probe", "load_state"]


def _by_name() -> dict[str, dict]:
    return {s["function"]["name"]: s for s in tool_schemas()}


# ----------------------------------------------------------------------------- schemas
def test_schema_count_and_order():
    names = [s["function"]["name"] for s in tool_schemas()]
    assert len(names) == 13
    # tools come first, then the control actions, each in declaration order
    assert names == TOOL_NAMES + CONTROL_NAMES


def test_schema_envelope_shape():
    for schema in tool_schemas():
        assert set(schema) == {"type", "function"}
        assert schema["type"] == "function"
        fn = schema["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert fn["parameters"]["type"] == "object"
        assert isinstance(fn["parameters"]["properties"], dict)
        assert fn["description"].strip()


def test_schema_descriptions_state_the_kind():
    schemas = _by_name()
    for name in CONTROL_NAMES:
        assert schemas[name]["function"]["description"].startswith("Control action")
    for name in TOOL_NAMES:
        assert schemas[name]["function"]["description"].startswith("Tool action (read-only)")


def test_schemas_are_fully_inlined():
    dumped = json.dumps(tool_schemas())
    assert "$ref" not in dumped
    assert "$defs" not in dumped
    # nested models are inlined in place of references
    repair = _by_name()["REPAIR"]["function"]["parameters"]
    hint = repair["properties"]["error_hint"]
    assert hint["type"] == "object"
    assert set(hint["properties"]) == {"error_variables", "faulty_reasoning"}
    assert hint["required"] == ["error_variables", "faulty_reasoning"]


@pytest.mark.parametrize(
    ("name", "required", "properties"),
    [
        ("check_execution", ["step_id"], ["step_id"]),
        ("inspect_python", ["code"], ["code"]),
        ("compile_python", ["code"], ["code"]),
        ("run_probe", ["code"], ["code"]),
        ("load_state", ["state_id"], ["state_id"]),
        ("RESUME_WORKER", [], []),
        ("OPEN_STATE", ["issue"], ["issue", "constraints", "relations"]),
        ("UPDATE_STATE", [], ["issue", "source_interval", "used_variables", "conclusions"]),
        ("FINALIZE_RELATIONS", [], ["mode", "relations", "conflict_evidence"]),
        ("COMMIT_STATE", [], []),
        ("REPAIR", ["analytical_evidence", "error_hint"], ["analytical_evidence", "error_hint"]),
        ("ABANDON_STATE", [], ["reason"]),
        ("ABSTAIN", [], ["reason"]),
    ],
)
def test_schema_required_and_properties(name, required, properties):
    params = _by_name()[name]["function"]["parameters"]
    assert sorted(params.get("required", [])) == sorted(required)
    assert list(params["properties"]) == properties
    assert params["additionalProperties"] is False


def test_schema_enumerates_relation_types_and_modes():
    schemas = _by_name()
    rel_items = schemas["OPEN_STATE"]["function"]["parameters"]["properties"]["relations"]["items"]
    type_schema = json.dumps(rel_items["properties"]["type"])
    for kind in ("init", "progress", "branch", "invalidate", "combine"):
        assert f'"{kind}"' in type_schema
    mode = schemas["FINALIZE_RELATIONS"]["function"]["parameters"]["properties"]["mode"]
    assert mode["enum"] == ["confirm", "reselect"]
    assert mode["default"] == "confirm"


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("name", "arguments", "fragments"),
    [
        ("OPEN_STAT", {"issue": "x"}, ["unknown action 'OPEN_STAT'", "Did you mean 'OPEN_STATE'?"]),
        ("check_executon", {"step_id": 1}, ["unknown action", "Did you mean 'check_execution'?"]),
        ("zzzz", {}, ["unknown action 'zzzz'", "Valid actions: RESUME_WORKER"]),
        ("OPEN_STATE", {}, ["OPEN_STATE: missing required argument 'issue'", "Allowed arguments: issue"]),
        ("load_state", {}, ["load_state: missing required argument 'state_id'"]),
        (
            "REPAIR",
            {"analytical_evidence": "probe output differs"},
            ["missing required argument 'error_hint'"],
        ),
        (
            "REPAIR",
            {"analytical_evidence": "e", "error_hint": {"error_variables": ["ratio"]}},
            ["missing required argument 'error_hint.faulty_reasoning'"],
        ),
        ("check_execution", {"step_id": "abc"}, ["argument 'step_id' has the wrong type", "got str 'abc'"]),
        ("run_probe", {"code": 42}, ["argument 'code' has the wrong type", "got int 42"]),
        ("check_execution", {"step_id": -1}, ["argument 'step_id'", "greater than or equal to 0"]),
        ("ABSTAIN", {"why": "no reason"}, ["ABSTAIN: unknown argument 'why'", "Allowed arguments: reason"]),
        ("COMMIT_STATE", {"state": "S1"}, ["unknown argument 'state'", "Allowed arguments: none"]),
        ("ABSTAIN", ["reason"], ["ABSTAIN: arguments must be a JSON object", "got list"]),
        ("run_probe", "print(1)", ["arguments must be a JSON object", "got str"]),
        ("load_state", {"state_id": "X3"}, ["state id 'X3' is not of the form S<positive integer>"]),
        ("load_state", {"state_id": "S0"}, ["state id 'S0' is not of the form"]),
        ("FINALIZE_RELATIONS", {"mode": "maybe"}, ["argument 'mode'", "'confirm' or 'reselect'"]),
        ("UPDATE_STATE", {"source_interval": [3]}, ["argument 'source_interval'", "at least 2 items"]),
    ],
)
def test_invalid_actions_are_explained(name, arguments, fragments):
    with pytest.raises(ActionError) as info:
        validate_action(name, arguments)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message


def test_action_error_is_a_value_error():
    assert issubclass(ActionError, ValueError)


# ----------------------------------------------------------------------------- valid actions
def test_open_state_round_trip():
    action = validate_action(
        "OPEN_STATE",
        {
            "issue": "Quarterly revenue per region",
            "constraints": [{"text": "round to 2 decimals"}],
            "relations": [{"related_state_id": "S2", "type": "progress"}],
        },
        call_id="call_7",
    )
    assert isinstance(action, Action)
    assert action.name is ControlAction.OPEN_STATE
    assert action.is_control is True
    assert action.call_id == "call_7"
    assert isinstance(action.args, OpenStateArgs)
    assert action.args.issue == "Quarterly revenue per region"
    assert action.args.constraints[0].text == "round to 2 decimals"
    assert action.args.constraints[0].code is None
    assert action.args.relations[0].related_state_id == "S2"
    assert action.args.relations[0].type is RelationType.PROGRESS


def test_tool_action_coerces_and_is_not_control():
    action = validate_action("check_execution", {"step_id": "4"})
    assert action.name is ToolAction.CHECK_EXECUTION
    assert action.is_control is False
    assert isinstance(action.args, CheckExecutionArgs)
    assert action.args.step_id == 4


def test_none_arguments_mean_empty_object():
    action = validate_action("RESUME_WORKER", None)
    assert action.name is ControlAction.RESUME_WORKER
    assert action.args.model_dump() == {}


def test_repair_and_load_state_typed_args():
    repair = validate_action(
        "REPAIR",
        {
            "analytical_evidence": "probe shows 1 decimal",
            "error_hint": {"error_variables": ["ratio"], "faulty_reasoning": "precision too low"},
        },
    )
    assert isinstance(repair.args, RepairArgs)
    assert repair.args.error_hint.error_variables == ["ratio"]
    assert repair.args.error_hint.faulty_reasoning == "precision too low"
    load = validate_action("load_state", {"state_id": "S12"})
    assert isinstance(load.args, LoadStateArgs)
    assert load.args.state_id == "S12"


def test_update_state_mixed_conclusions_and_versions():
    action = validate_action(
        "UPDATE_STATE",
        {
            "source_interval": [2, 5],
            "used_variables": [{"name": "revenue", "value": 10, "version": "revenue@S3"}],
            "conclusions": ["plain text", {"text": "cited", "variables": ["revenue"]}],
        },
    )
    assert action.args.source_interval == [2, 5]
    assert action.args.used_variables[0].version == "revenue@S3"
    assert action.args.conclusions[0] == "plain text"
    assert action.args.conclusions[1].variables == ["revenue"]


def test_action_is_frozen():
    action = validate_action("ABSTAIN", {"reason": "waiting"})
    with pytest.raises(ValidationError, match="frozen"):
        action.call_id = "x"  # type: ignore[misc]


def test_the_whitespace_check_of_a_variable_name_is_str_isspace() -> None:
    """`VariableArg` refuses a name with whitespace through one regex search (`\\s`); it must agree
    with `str.isspace`, which it replaced, on every code point."""
    import sys

    from stateguard.actions import _SPACE

    regex = {c for c in range(sys.maxunicode + 1) if _SPACE.match(chr(c))}
    method = {c for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert regex == method and len(method) > 20


def test_validate_action_gives_what_model_validate_gave() -> None:
    """`validate_action` calls the argument model's validator directly: the arguments, and the
    feedback for bad ones, are those `model_validate` gives."""
    from stateguard.actions import ActionError, UpdateStateArgs, validate_action

    arguments = {
        "used_variables": [{"name": "x", "value": 1}, {"name": "y", "version": "S2", "value": [1]}],
        "conclusions": ["up", {"text": "down", "variables": ["x"]}],
    }
    got = validate_action("UPDATE_STATE", arguments).args
    assert got == UpdateStateArgs.model_validate(arguments)
    assert got.model_fields_set == UpdateStateArgs.model_validate(arguments).model_fields_set
    for bad in ({"used_variables": [{"name": "a b"}]}, {"used_variables": [{"name": "\u2003a"}]}, {"x": 1}):
        with pytest.raises(ActionError, match="UPDATE_STATE: ") as caught:
            validate_action("UPDATE_STATE", bad)
        assert "Allowed arguments" in str(caught.value)
