"""Read a chat-completion HTTP body defensively: every shape a server can send is either a clean
completion or a `MalformedReply` that names what was wrong.

The openai SDK builds its response objects without validation, so an HTTP 200 whose body is
HTML, not UTF-8, `{"choices": "nope"}` or a message with `"content": 7` reaches the caller as a
string or a half-built object and fails far away (an AttributeError in the manager). We read the
raw bytes ourselves instead and check each field we use.

    completion = read_completion(body_bytes, content_type="application/json")
    completion.message      # {"role": "assistant", "content": str | None, "tool_calls": [...]?}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

EXCERPT_CHARS = 300


class MalformedReply(ValueError):
    """The server answered HTTP 2xx with a body that is not a usable chat completion."""


class Completion(BaseModel):
    """The fields of a chat completion the client uses, validated."""

    model_config = ConfigDict(frozen=True)

    message: dict[str, Any]
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str | None


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + " ..."


def _kind(value: Any) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"


def _content(value: Any) -> str | None:
    """A string, null, or OpenAI content parts ([{"type": "text", "text": ...}]) joined to a string."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(p, Mapping) for p in value):
        texts = [p.get("text") for p in value if p.get("type") in ("text", "output_text")]
        if all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
    raise MalformedReply(f"choices[0].message.content is {_kind(value)}; expected a string or null")


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedReply(f"choices[0].message.tool_calls is {_kind(value)}; expected a list")
    calls = []
    for i, call in enumerate(value):
        where = f"choices[0].message.tool_calls[{i}]"
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            raise MalformedReply(f"{where} has no function object (got {_kind(call)})")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise MalformedReply(f"{where}.function.name is {_kind(name)}; expected a non-empty string")
        args = fn.get("arguments")
        if args is None:
            args = ""
        elif isinstance(args, Mapping):  # some servers send the object itself, not its JSON text
            args = json.dumps(args)
        elif not isinstance(args, str):
            raise MalformedReply(f"{where}.function.arguments is {_kind(args)}; expected a JSON string")
        call_id = call.get("id")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) else None,
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
        )
    return calls


def _count(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_completion(data: Any) -> Completion:
    """Validate a decoded JSON body as a chat completion (see the module docstring)."""
    if not isinstance(data, Mapping):
        raise MalformedReply(f"the body is {_kind(data)}; expected a JSON object with 'choices'")
    choices = data.get("choices")
    if choices is None and "error" in data:  # some proxies send an error object with status 200
        raise MalformedReply(f"HTTP 200 carrying an error: {excerpt(json.dumps(data['error'], default=str))}")
    if not isinstance(choices, list) or not choices:
        raise MalformedReply(f"'choices' is {_kind(choices)}; expected a non-empty list")
    choice = choices[0]
    if not isinstance(choice, Mapping):
        raise MalformedReply(f"choices[0] is {_kind(choice)}; expected an object")
    raw = choice.get("message")
    if not isinstance(raw, Mapping):
        raise MalformedReply(f"choices[0].message is {_kind(raw)}; expected an object")
    message: dict[str, Any] = {"role": "assistant", "content": _content(raw.get("content"))}
    calls = _tool_calls(raw.get("tool_calls"))
    if calls:
        message["tool_calls"] = calls
    # vLLM and llama.cpp send `reasoning_content`; newer vLLM versions call it `reasoning`.
    reasoning = raw.get("reasoning_content") or raw.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        message["reasoning_content"] = reasoning
    finish = choice.get("finish_reason")
    model = data.get("model")
    usage = data.get("usage")
    return Completion(
        message=message,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        model=model if isinstance(model, str) and model else None,
    )


def read_completion(body: bytes, content_type: str | None = None) -> Completion:
    """Decode (strict UTF-8) and parse an HTTP body as a chat completion; MalformedReply otherwise."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedReply(
            f"the body is not UTF-8 text (byte 0x{body[exc.start]:02x} at offset {exc.start}; "
            f"content-type {content_type or 'none'})"
        ) from None
    if not text.strip():
        raise MalformedReply(f"the body is empty (content-type {content_type or 'none'})")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedReply(
            f"the body is not JSON ({exc.msg} at char {exc.pos}; content-type {content_type or 'none'}): "
            f"{excerpt(text)}"
        ) from None
    return parse_completion(data)
