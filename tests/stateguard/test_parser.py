"""Parsing manager responses into validated actions."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from stateguard.actions import ActionError
from stateguard.lifecycle import ControlAction, ToolAction
from stateguard.parser import ParsedResponse, parse_response, split_thinking


def _native(name: str, arguments, call_id: str = "c1") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# ----------------------------------------------------------------------------- native tool_calls
@pytest.mark.parametrize("arguments", ['{"step_id": 3}', {"step_id": 3}])
def test_native_tool_call_string_or_dict_arguments(arguments):
    parsed = parse_response(
        {"content": None, "tool_calls": [_native("check_execution", arguments, "call_a")]}
    )
    assert isinstance(parsed, ParsedResponse)
    assert len(parsed.actions) == 1
    action = parsed.actions[0]
    assert action.name is ToolAction.CHECK_EXECUTION
    assert action.args.step_id == 3
    assert action.call_id == "call_a"
    assert parsed.control is None
    assert parsed.thinking is None


@pytest.mark.parametrize("arguments", [None, "", "   "])
def test_native_tool_call_empty_arguments(arguments):
    parsed = parse_response({"tool_calls": [_native("COMMIT_STATE", arguments)]})
    assert parsed.control is not None
    assert parsed.control.name is ControlAction.COMMIT_STATE


def test_several_native_tool_calls():
    parsed = parse_response(
        {
            "content": "",
            "tool_calls": [
                _native("check_execution", '{"step_id": 1}', "a"),
                _native("load_state", '{"state_id": "S2"}', "b"),
                _native("compile_python", {"code": "x = 1"}, "c"),
            ],
        }
    )
    assert [a.name.value for a in parsed.actions] == ["check_execution", "load_state", "compile_python"]
    assert [a.call_id for a in parsed.actions] == ["a", "b", "c"]
    assert parsed.actions[1].args.state_id == "S2"
    assert parsed.control is None


def test_native_calls_take_priority_over_text():
    parsed = parse_response(
        {
            "content": '<tool_call>{"name": "ABSTAIN", "arguments": {}}</tool_call>',
            "tool_calls": [_native("run_probe", {"code": "print(1)"})],
        }
    )
    assert [a.name for a in parsed.actions] == [ToolAction.RUN_PROBE]


# ----------------------------------------------------------------------------- calls written in text
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            'Checking.\n<tool_call>\n{"name": "check_execution", "arguments": {"step_id": 2}}\n</tool_call>',
            [("check_execution", {"step_id": 2})],
        ),
        (
            '<tool_call>{"name": "load_state", "arguments": {"state_id": "S1"}}</tool_call>\n'
            '<tool_call>{"name": "run_probe", "arguments": "{\\"code\\": \\"len(df)\\"}"}</tool_call>',
            [("load_state", {"state_id": "S1"}), ("run_probe", {"code": "len(df)"})],
        ),
        # an unterminated block at the end of the response is still read
        (
            '<tool_call>{"name": "ABSTAIN", "arguments": {"reason": "wait"}}',
            [("ABSTAIN", {"reason": "wait"})],
        ),
        (
            'I will open a state.\n```json\n{"name": "OPEN_STATE", "arguments": {"issue": "sales"}}\n```',
            [("OPEN_STATE", {"issue": "sales", "constraints": [], "relations": []})],
        ),
        ('```\n{"name": "ABANDON_STATE", "arguments": {}}\n```', [("ABANDON_STATE", {"reason": None})]),
        ('  {"name": "RESUME_WORKER", "arguments": {}}  ', [("RESUME_WORKER", {})]),
        # "parameters" is accepted as an alias of "arguments"
        ('{"name": "load_state", "parameters": {"state_id": "S4"}}', [("load_state", {"state_id": "S4"})]),
        (
            '<tool_call>[{"name": "check_execution", "arguments": {"step_id": 0}},'
            ' {"name": "inspect_python", "arguments": {"code": "a = b"}}]</tool_call>',
            [("check_execution", {"step_id": 0}), ("inspect_python", {"code": "a = b"})],
        ),
    ],
)
def test_text_calls(content, expected):
    parsed = parse_response(content)
    got = [(a.name.value, a.args.model_dump()) for a in parsed.actions]
    assert got == expected
    assert all(a.call_id is None for a in parsed.actions)


def test_tool_call_blocks_win_over_fenced_blocks():
    content = (
        '```json\n{"name": "ABSTAIN", "arguments": {}}\n```\n'
        '<tool_call>{"name": "check_execution", "arguments": {"step_id": 9}}</tool_call>'
    )
    parsed = parse_response(content)
    assert [a.name for a in parsed.actions] == [ToolAction.CHECK_EXECUTION]


# ----------------------------------------------------------------------------- thinking
def test_think_block_is_split_off_and_not_parsed():
    content = (
        '<think>Maybe <tool_call>{"name": "ABSTAIN", "arguments": {}}</tool_call> is wrong.</think>\n'
        '<tool_call>{"name": "check_execution", "arguments": {"step_id": 5}}</tool_call>'
    )
    parsed = parse_response({"content": content})
    assert [a.name for a in parsed.actions] == [ToolAction.CHECK_EXECUTION]
    assert parsed.thinking == 'Maybe <tool_call>{"name": "ABSTAIN", "arguments": {}}</tool_call> is wrong.'
    assert "<think>" not in parsed.text
    assert parsed.text.startswith("<tool_call>")


def test_only_closing_think_tag():
    content = 'the draft looks complete</think>\n{"name": "COMMIT_STATE", "arguments": {}}'
    parsed = parse_response(content)
    assert parsed.thinking == "the draft looks complete"
    assert parsed.control is not None and parsed.control.name is ControlAction.COMMIT_STATE
    assert parsed.text == '{"name": "COMMIT_STATE", "arguments": {}}'


def test_reasoning_content_field_is_prepended():
    parsed = parse_response(
        {
            "content": '<think>second</think>{"name": "ABSTAIN", "arguments": {}}',
            "reasoning_content": "first",
        }
    )
    assert parsed.thinking == "first\nsecond"
    assert parsed.control.name is ControlAction.ABSTAIN


@pytest.mark.parametrize(
    ("text", "thinking", "rest"),
    [
        ("<think> a </think> b <think>c</think> d", "a\nc", "b  d"),
        ("<think>never closed", "never closed", ""),
        ("plain answer", None, "plain answer"),
        ("<think>x</think>", "x", ""),
    ],
)
def test_split_thinking(text, thinking, rest):
    assert split_thinking(text) == (thinking, rest)


def test_unterminated_think_has_no_action():
    with pytest.raises(ActionError, match="no action found in the response"):
        parse_response('<think>I could send {"name": "ABSTAIN", "arguments": {}}')


# ----------------------------------------------------------------------------- message shapes
class _Message(BaseModel):
    content: str | None = None
    tool_calls: list[dict] | None = None


def test_pydantic_like_message_object():
    msg = _Message(content=None, tool_calls=[_native("load_state", json.dumps({"state_id": "S3"}), "id9")])
    parsed = parse_response(msg)
    assert parsed.actions[0].name is ToolAction.LOAD_STATE
    assert parsed.actions[0].args.state_id == "S3"
    assert parsed.actions[0].call_id == "id9"


def test_unreadable_message_type():
    with pytest.raises(ActionError, match="cannot read a manager response of type int"):
        parse_response(42)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("message", "fragments"),
    [
        (
            {
                "tool_calls": [
                    _native("check_execution", {"step_id": 1}),
                    _native("COMMIT_STATE", {}),
                ]
            },
            ["mixes tool actions (check_execution)", "control action (COMMIT_STATE)", "call the tools first"],
        ),
        (
            '<tool_call>{"name": "load_state", "arguments": {"state_id": "S1"}}</tool_call>'
            '<tool_call>{"name": "run_probe", "arguments": {"code": "1"}}</tool_call>'
            '<tool_call>{"name": "REPAIR", "arguments": {"analytical_evidence": "e", '
            '"error_hint": {"error_variables": ["x"], "faulty_reasoning": "r"}}}</tool_call>',
            ["mixes tool actions (load_state, run_probe)", "control action (REPAIR)"],
        ),
        (
            {"tool_calls": [_native("COMMIT_STATE", {}), _native("ABSTAIN", {})]},
            ["has 2 control actions (COMMIT_STATE, ABSTAIN)", "exactly one control action"],
        ),
        (
            '<tool_call>{"name": "ABSTAIN", "arguments": {</tool_call>',
            ["<tool_call> #1 is not valid JSON", '"name": "<ACTION>"'],
        ),
        (
            '<tool_call>{"name": "ABSTAIN"}</tool_call><tool_call>{name: 1}</tool_call>',
            ["<tool_call> #2 is not valid JSON"],
        ),
        ("```json\n{oops}\n```", ["fenced block #1 is not valid JSON"]),
        ("I think the state is fine.", ["no action found in the response", "exactly one control action"]),
        ({"content": "", "tool_calls": []}, ["no action found in the response"]),
        ('<tool_call>{"arguments": {}}</tool_call>', ['<tool_call> #1 has no "name"']),
        ('<tool_call>["ABSTAIN"]</tool_call>', ['<tool_call> #1 has no "name"']),
        (
            {"tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]},
            ["tool call #1 has no function name"],
        ),
        (
            {"tool_calls": [_native("ABSTAIN", "{not json")]},
            ["tool call #1: arguments are not valid JSON"],
        ),
        (
            {"tool_calls": [_native("ABSTAIN", {}), _native("OPEN_STAT", {"issue": "x"})]},
            ["tool call #2: unknown action 'OPEN_STAT'", "Did you mean 'OPEN_STATE'?"],
        ),
        (
            '<tool_call>{"name": "OPEN_STATE", "arguments": {}}</tool_call>',
            ["<tool_call> #1: OPEN_STATE: missing required argument 'issue'"],
        ),
    ],
)
def test_parse_errors(message, fragments):
    with pytest.raises(ActionError) as info:
        parse_response(message)
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, text


def test_bare_call_after_prose_is_parsed_but_other_json_is_not() -> None:
    text = 'The state looks done. {"name": "COMMIT_STATE", "arguments": {}} and {"note": 1}'
    parsed = parse_response(text)
    assert [a.name.value for a in parsed.actions] == ["COMMIT_STATE"]
    with pytest.raises(ActionError, match="no action found"):
        parse_response('Values were {"a": 1}, nothing to call.')
