"""Turn a manager model's response into validated actions.

Accepts OpenAI-style native `tool_calls` and calls written in the text (`<tool_call>{json}</tool_call>`,
fenced ```json blocks, or one bare JSON object). Qwen3-style `<think>` reasoning is split off
first and never parsed for actions. A response may hold several tool actions or exactly one
control action, never both: the paper's authority rule (A.7).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from stateguard.actions import Action, ActionError, validate_action

_THINK_RE = re.compile(r"<think>(.*?)</think>", re.S)
_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
_FENCE_RE = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.S)


class ParsedResponse(BaseModel):
    model_config = ConfigDict(frozen=True)

    actions: list[Action]
    thinking: str | None = None
    text: str = ""

    @property
    def control(self) -> Action | None:
        return next((a for a in self.actions if a.is_control), None)


def split_thinking(text: str) -> tuple[str | None, str]:
    """Return (thinking, rest). Handles a closed block and a response that lost its opening tag."""
    parts = _THINK_RE.findall(text)
    if parts:
        return "\n".join(p.strip() for p in parts), _THINK_RE.sub("", text).strip()
    if "</think>" in text:  # some chat templates put <think> in the prompt, so only the close appears
        head, _, tail = text.partition("</think>")
        return head.replace("<think>", "").strip(), tail.strip()
    if text.lstrip().startswith("<think>"):  # unterminated: the whole response is reasoning
        return text.lstrip()[len("<think>") :].strip(), ""
    return None, text.strip()


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, str):
        return {"content": message}
    if hasattr(message, "model_dump"):
        return dict(message.model_dump())
    if isinstance(message, dict):
        return message
    raise ActionError(f"cannot read a manager response of type {type(message).__name__}")


def _load_arguments(raw: Any, where: str) -> Any:
    if raw is None or isinstance(raw, dict):
        return raw or {}
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ActionError(
                f"{where}: arguments are not valid JSON ({exc.msg} at char {exc.pos})"
            ) from None
    return raw


def _embedded_calls(text: str) -> list[str]:
    """Top-level `{"name": ..., "arguments": ...}` objects inside prose (small models write calls
    as bare JSON after a sentence); other JSON in the text is ignored."""
    decoder = json.JSONDecoder()
    found, i = [], text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("name"), str)
            and ("arguments" in obj or "parameters" in obj)
        ):
            found.append(text[i:end])
        i = text.find("{", end)
    return found


def _text_calls(text: str) -> list[tuple[str, Any, str]]:
    """(name, arguments, where) for each call written in the text."""
    blocks = [(m, "<tool_call>") for m in _TOOL_CALL_RE.findall(text)]
    if not blocks:
        blocks = [(m, "fenced block") for m in _FENCE_RE.findall(text)]
    if not blocks:
        stripped = text.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            blocks = [(stripped, "JSON object")]
        else:
            blocks = [(b, "JSON object") for b in _embedded_calls(text)]
    calls = []
    for i, (block, kind) in enumerate(blocks, 1):
        where = f"{kind} #{i}"
        try:
            obj = json.loads(block)
        except json.JSONDecodeError as exc:
            raise ActionError(
                f"{where} is not valid JSON ({exc.msg} at char {exc.pos}); "
                'write {"name": "<ACTION>", "arguments": {...}}'
            ) from None
        items = obj if isinstance(obj, list) else [obj]
        for item in items:
            if not isinstance(item, dict) or "name" not in item:
                raise ActionError(
                    f'{where} has no "name"; write {{"name": "<ACTION>", "arguments": {{...}}}}'
                )
            args = item.get("arguments", item.get("parameters", {}))
            calls.append((str(item["name"]), _load_arguments(args, where), where))
    return calls


def parse_response(message: Any) -> ParsedResponse:
    """Parse one model response into actions; raises ActionError with corrective feedback."""
    data = _as_dict(message)
    content = data.get("content") or ""
    thinking, text = split_thinking(content)
    if data.get("reasoning_content"):
        thinking = "\n".join(x for x in (data["reasoning_content"], thinking) if x)

    raw_calls: list[tuple[str, Any, str, str | None]] = []
    for i, call in enumerate(data.get("tool_calls") or [], 1):
        fn = call.get("function") or {}
        where = f"tool call #{i}"
        if "name" not in fn:
            raise ActionError(f"{where} has no function name")
        raw_calls.append(
            (str(fn["name"]), _load_arguments(fn.get("arguments"), where), where, call.get("id"))
        )
    if not raw_calls:
        raw_calls = [(n, a, w, None) for n, a, w in _text_calls(text)]
    if not raw_calls:
        raise ActionError(
            "no action found in the response; call exactly one control action, "
            "or one or more tool actions, as function calls"
        )

    actions = []
    for name, args, where, call_id in raw_calls:
        try:
            actions.append(validate_action(name, args, call_id=call_id))
        except ActionError as exc:
            raise ActionError(f"{where}: {exc}") from None
    controls = [a for a in actions if a.is_control]
    if controls and len(controls) != len(actions):
        tools = [a.name.value for a in actions if not a.is_control]
        raise ActionError(
            f"the response mixes tool actions ({', '.join(tools)}) with a control action "
            f"({controls[0].name.value}); call the tools first, read their results, "
            "then send the control action alone"
        )
    if len(controls) > 1:
        raise ActionError(
            f"the response has {len(controls)} control actions ({', '.join(a.name.value for a in controls)}); "
            "send exactly one control action per response"
        )
    return ParsedResponse(actions=actions, thinking=thinking, text=text)
