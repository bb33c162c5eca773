"""The actions a manager may take right now, as a JSON schema for constrained decoding and as a
compact listing for the prompt.

`offered_controls` starts from the harness's LEGAL table for the regime and stage (the single
source of truth) and, in the default `protocol` mode, keeps only the moves the flow's lifecycle
makes at this event and the do-no-harm rule allows: ABANDON_STATE only once the repair budget is
spent (destroying work needs more than a doubt), REPAIR only while budget remains, OPEN_STATE at a
turn start in the turn-aligned flow (one state per turn), and no re-UPDATE of an updated draft;
`offered_tools` offers the evidence tools only while a state is under verification (UPDATED).
`offer="legal"` keeps the whole table and the tools everywhere. Either way the result is a
subset of LEGAL.

`action_schema` turns the offered names into one JSON schema, `{"name": <one of them>,
"arguments": {...}}`, with each action's argument schema from its pydantic model (the validator
the harness uses) made grammar-friendly and tied to the observation: step ids are the pending
steps, state ids the committed states. A server that supports JSON-schema decoding (llama.cpp,
llama-cpp-python, vLLM) can then only produce a parseable, stage-legal action.

    names = offered_controls(Regime.TURN_ALIGNED, obs) + offered_tools(obs, TOOLS)
    schema = action_schema(names, obs, regime)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from stateguard.actions import CONTROL_ARGS, TOOL_ARGS, lookup
from stateguard.lifecycle import ControlAction, Regime, Stage, ToolAction, legal_actions
from stateguard.observation import EventType, ManagerObservation

A = ControlAction
Offer = Literal["protocol", "legal"]
# Bounds that keep a constrained reply short on a CPU (lists only; strings stay unbounded because
# nested-optional repetition rules make long maxLength grammars slow in llama.cpp).
MAX_ITEMS = {
    "constraints": 3,
    "relations": 3,
    "used_variables": 5,
    "conclusions": 3,
    "error_variables": 4,
    "variables": 4,
}
_SCALAR = {"type": ["string", "number", "boolean", "null"]}
PROSE = (
    "^[^0-9=()\\[\\]{}`;\\n]+$"  # words without digits or code punctuation (the hint guard's rule, tightened)
)
NAME = "^[A-Za-z_][A-Za-z0-9_.]*$"


def offered_controls(
    regime: Regime,
    obs: ManagerObservation,
    *,
    offer: Offer = "protocol",
    allowed: Iterable[str] | None = None,
) -> list[str]:
    """Control actions offered at this activation (a subset of LEGAL[regime][stage], table order)."""
    stage = Stage(obs.stage)
    legal = [a.value for a in legal_actions(regime, stage)]
    names = list(legal)
    if offer == "protocol":
        spent = obs.repair_attempts >= obs.repair_budget
        drop = {A.ABANDON_STATE.value} if not spent else set()
        if spent:
            drop.add(A.REPAIR.value)
        if stage is Stage.UPDATED:
            drop.add(A.UPDATE_STATE.value)
        if regime is Regime.TURN_ALIGNED and stage is Stage.IDLE:
            drop.add(A.ABSTAIN.value if obs.event_type is EventType.TURN_START else A.OPEN_STATE.value)
        if regime is Regime.SEGMENT_INDUCED and stage is Stage.IDLE:
            drop.add(A.RESUME_WORKER.value if obs.terminal_pending_review else A.ABSTAIN.value)
        if regime is Regime.SEGMENT_INDUCED and stage is Stage.UPDATED:
            drop.add(A.ABSTAIN.value)
        names = [n for n in legal if n not in drop] or legal
    if allowed is not None:
        wanted = set(allowed)
        names = [n for n in names if n in wanted]
    return names


def offered_tools(obs: ManagerObservation, tools: Sequence[str], *, offer: Offer = "protocol") -> list[str]:
    """Tool actions that can do something now: in the `protocol` mode only while a state is under
    verification (stage UPDATED: evidence is for the verdict, and a tool call elsewhere only costs
    a model call); check_execution needs a pending step, load_state a committed state."""
    if offer == "protocol" and Stage(obs.stage) is not Stage.UPDATED:
        return []
    out = []
    for name in tools:
        if name == ToolAction.CHECK_EXECUTION.value and not obs.untraced_steps:
            continue
        if name == ToolAction.LOAD_STATE.value and not obs.committed_state_index:
            continue
        out.append(name)
    return out


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    """Inline $refs, drop prose (title/description/default), make `Any` a JSON scalar."""
    if isinstance(node, list):
        return [_clean(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _clean(defs[node["$ref"].split("/")[-1]], defs)
    out = {
        k: _clean(v, defs)
        for k, v in node.items()
        if k not in ("$defs", "title", "description", "default", "properties")
    }
    if isinstance(node.get("properties"), dict):
        out["properties"] = {k: _clean(v, defs) for k, v in node["properties"].items()}
    if not any(k in out for k in ("type", "anyOf", "oneOf", "enum", "const", "properties", "items")):
        return dict(_SCALAR)
    return out


def _enum(values: list[Any], nullable: bool = False) -> dict[str, Any]:
    return {"enum": [*values, None] if nullable else values}


def _tie(name: str, params: dict[str, Any], obs: ManagerObservation, regime: Regime) -> dict[str, Any]:
    """Tie argument schemas to the observation: real step ids, real state ids, bounded lists."""
    steps = [s.index for s in obs.untraced_steps]
    states = [e.id for e in obs.committed_state_index]

    def walk(node: Any, key: str | None = None) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if key in ("related_state_id", "version", "state_id"):
            return _enum(states, nullable=key != "state_id") if states else {"type": "null"}
        if key == "step_id" and steps:
            return _enum(steps)
        if key == "source_interval" and steps:
            return {"type": "array", "items": _enum(steps), "minItems": 2, "maxItems": 2}
        if isinstance(node.get("properties"), dict):
            return {**node, "properties": {k: walk(v, k) for k, v in node["properties"].items()}}
        if node.get("type") == "array":
            out = {**node, "items": walk(node.get("items"))}
            if key in MAX_ITEMS:
                out["maxItems"] = MAX_ITEMS[key]
            return out
        return {k: walk(v) for k, v in node.items()}

    tied = walk(params)
    props = tied.get("properties", {})
    # Where the harness checks more than types, the schema says it too, so that a decoded reply
    # is also an accepted one (a grammar cannot express "each name once"; the harness still can).
    if name == A.UPDATE_STATE.value:
        props.pop("issue", None)  # set at OPEN_STATE; restating it costs tokens and changes nothing
        if regime is Regime.TURN_ALIGNED:
            props.pop("source_interval", None)  # the harness binds the whole turn
        if "used_variables" in props:  # versions are the harness's bookkeeping; a claimed one must exist
            props["used_variables"]["items"]["properties"].pop("version", None)
        if "conclusions" in props:  # citations must name listed variables: plain sentences instead
            props["conclusions"] = {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "maxItems": MAX_ITEMS["conclusions"],
            }
    if name == A.OPEN_STATE.value:
        if not states:
            props.pop("relations", None)  # nothing to relate to yet
        if "constraints" in props:  # a check that fails blocks FINALIZE: only stated requirements here
            props["constraints"]["items"]["properties"].pop("code", None)
    if name == A.FINALIZE_RELATIONS.value:  # confirm takes no relations; reselect needs the conflict
        confirm = {
            "type": "object",
            "properties": {"mode": {"const": "confirm"}},
            "required": ["mode"],
            "additionalProperties": False,
        }
        if not states:
            return confirm
        reselect = {
            "type": "object",
            "properties": {
                "mode": {"const": "reselect"},
                "relations": props["relations"],
                "conflict_evidence": {"type": "string", "minLength": 1},
            },
            "required": ["mode", "relations", "conflict_evidence"],
            "additionalProperties": False,
        }
        return {"anyOf": [confirm, reselect]}
    if name == A.REPAIR.value:  # the hint guard refuses code and values: words only, names only
        hint = props["error_hint"]["properties"]
        hint["faulty_reasoning"] = {"type": "string", "pattern": PROSE}
        hint["error_variables"]["items"] = {"type": "string", "pattern": NAME}
    return tied


def argument_schema(name: str, obs: ManagerObservation, regime: Regime) -> dict[str, Any]:
    action = lookup(name)
    model = CONTROL_ARGS[action] if isinstance(action, ControlAction) else TOOL_ARGS[action]
    raw = model.model_json_schema()
    params = _clean(raw, raw.get("$defs", {}))
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    params["additionalProperties"] = False
    return _tie(name, params, obs, regime)


def action_schema(names: Sequence[str], obs: ManagerObservation, regime: Regime) -> dict[str, Any]:
    """JSON schema of one reply: exactly one of the offered actions with valid arguments."""
    options = [
        {
            "type": "object",
            "properties": {"name": {"const": name}, "arguments": argument_schema(name, obs, regime)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for name in names
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def _signature(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " | ".join(_signature(s) for s in schema["anyOf"])
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for key, sub in props.items():
        parts.append(f"{key}{'' if key in required else '?'}: {_type(sub)}")
    return "{" + ", ".join(parts) + "}"


def _type(node: dict[str, Any]) -> str:
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return "|".join(json.dumps(v) for v in node["enum"])
    if "anyOf" in node:
        return "|".join(_type(n) for n in node["anyOf"])
    kind = node.get("type")
    if kind == "array":
        return f"[{_type(node.get('items') or {})}]"
    if kind == "object" or "properties" in node:
        return _signature(node)
    return "|".join(kind) if isinstance(kind, list) else str(kind)


def action_listing(names: Sequence[str], obs: ManagerObservation, regime: Regime) -> str:
    """The offered actions, one line each: name, argument signature, what it does."""
    lines = []
    for name in names:
        action = lookup(name)
        model = CONTROL_ARGS[action] if isinstance(action, ControlAction) else TOOL_ARGS[action]
        doc = (model.__doc__ or "").strip().splitlines()[0] if model.__doc__ else ""
        kind = "control" if isinstance(action, ControlAction) else "tool"
        lines.append(f"- {name} ({kind}) {_signature(argument_schema(name, obs, regime))}: {doc}")
    return "\n".join(lines)
