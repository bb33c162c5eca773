"""A scripted manager model for tests against a real HTTP server (`ScriptedServer`): it reads the JSON
schema the manager constrains its reply with and answers with the smallest instance of it,
preferring control actions, so what is tested is what the manager asks for, not what a model
happens to do. Use as `ScriptedServer([Respond(SchemaModel())] * n)`.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from tests.support.scripted_server import Reply

CONTROLS_FIRST = [
    "COMMIT_STATE",
    "FINALIZE_RELATIONS",
    "UPDATE_STATE",
    "OPEN_STATE",
    "ABSTAIN",
    "RESUME_WORKER",
]


def instance(schema: dict[str, Any]) -> Any:
    """The smallest value that satisfies a (grammar-style) JSON schema."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next((v for v in schema["enum"] if v is not None), None)
    if "anyOf" in schema:
        return instance(schema["anyOf"][0])
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        return {
            k: instance(v) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])
        }
    if kind == "array":
        return [instance(schema["items"]) for _ in range(schema.get("minItems", 0))]
    if kind == "string":
        return "the turn's result" if schema.get("minLength") else ""
    return {"integer": 0, "number": 0, "boolean": False, "null": None}[kind]


def schema_of(request: dict[str, Any]) -> dict[str, Any] | None:
    fmt = request.get("response_format")
    if not fmt:
        return None
    return fmt["json_schema"]["schema"] if fmt["type"] == "json_schema" else fmt["schema"]


class SchemaModel:
    """A scripted model that answers each request with a schema instance, preferring control actions."""

    def __init__(self) -> None:
        self.offered: list[tuple[str, list[str], list[str]]] = []  # (stage, legal controls, offered names)

    def __call__(self, request: dict[str, Any]) -> Reply:
        schema = schema_of(request)
        assert schema is not None, "the manager did not constrain this request"
        jsonschema.Draft202012Validator.check_schema(schema)
        options = schema.get("anyOf", [schema])
        names = [o["properties"]["name"]["const"] for o in options]
        observation = json.loads(
            request["messages"][1]["content"].split("OBSERVATION\n", 1)[1].split("\n\nACTIONS", 1)[0]
        )
        self.offered.append((observation["stage"], observation["legal_control_actions"], names))
        choice = next(
            o for name in CONTROLS_FIRST for o in options if o["properties"]["name"]["const"] == name
        )
        reply = instance(choice)
        jsonschema.validate(reply, schema)
        return Reply(content=json.dumps(reply))
