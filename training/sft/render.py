"""Manager conversations -> training sequences, rendered exactly as the serving stack renders them.

    (library module; `python -m training.sft` uses it, see training/sft/__init__.py)

At inference the LLM manager (stateguard/policies/llm_manager.py) sends `messages` + `tools` to an
OpenAI-compatible server (vLLM, `transformers serve`). The server normalizes the messages (tool
call arguments parsed from JSON strings into mappings, content flattened to text, extra keys such
as a tool message's `name` dropped), applies the checkpoint's own chat template with
`add_generation_prompt=True`, and the model writes the assistant turn up to its end-of-turn token.
Every later call of the activation re-renders the whole history the same way.

A training sequence here is therefore built only out of those two kinds of text:
  * context  = `render(history, add_generation_prompt=True)` -- exactly the serving prompt;
  * target   = the assistant turn as the template writes it, up to and including the end-of-turn
               token (the only tokens with a label; system, user, observation and tool-result
               tokens are always -100).
Nothing is rendered by any other template: there is no separate "training template".

The `<think>` decision (Qwen3). The stock Qwen3 template -- kept in the tokenizer, saved with
the checkpoint and applied by the server -- writes an empty `<think>\\n\\n</think>\\n\\n` only
into the newest assistant turn of a conversation that *ends* with an assistant message, and leaves
it out when the same turn is later re-rendered as history; a server never renders a conversation
that ends with an assistant turn. TRL's Qwen3 training template (trl/chat_templates/
qwen3_training.jinja, swapped in by `SFTTrainer(assistant_only_loss=True)` for tokenization only)
writes the empty block into *every* assistant turn instead, so a model trained with it would see a
history the stock template never shows it at serving time. We use neither form. The manager's
demonstrations carry no reasoning, and the LLM manager never replays reasoning into the history,
so the manager is trained to answer in the form its turns take as history: with the default
`enable_thinking` the prompt ends in `<|im_start|>assistant\\n` and the target is the tool call
itself (`<tool_call>...</tool_call><|im_end|>`, no think block; vLLM's qwen3 reasoning parser
passes an answer without `</think>` through as content, and our parser accepts both). Every
served prompt is then a prefix of the next, so a whole activation -- or a whole trajectory -- is
one sequence (`sequences: conversation`). `segments` checks that prefix property for every sample
and raises when it fails, e.g. with `enable_thinking: false`, whose pre-filled empty think block
is missing from the re-rendered history. `sequences: per_call` then trains one sequence per call,
each with its exact serving prompt and the template's own form of the newest turn (for stock
Qwen3 in thinking mode that target starts with an empty think block), at quadratic cost. The
serving endpoint must send the same template.chat_template_kwargs (extra_body.chat_template_kwargs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["conversation", "per_call"]
_PROBE = {"role": "user", "content": "."}  # ends a conversation so its last assistant turn renders as history

__all__ = ["RenderError", "Segment", "as_served", "encode", "segments", "serving_prompt"]


class RenderError(ValueError):
    """A conversation cannot be rendered into a training sequence that matches serving."""


@dataclass(frozen=True)
class Segment:
    text: str
    trained: bool  # True only for the manager's own output (an assistant turn up to its end-of-turn token)


def as_served(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as an OpenAI-compatible server hands them to the chat template.

    Mirrors what `transformers serve` does to a chat-completions request (vLLM does the same for
    our messages): role and text content are kept (content parts joined into one string; an
    assistant turn that carries tool calls keeps no content -- vLLM would keep it, but corpus turns
    never have text next to a tool call), tool-call arguments given as JSON
    strings become mappings, a tool message keeps its `tool_call_id`; any other key (e.g. `name`
    on a tool message) is dropped.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        msg: dict[str, Any] = {"role": m["role"]}
        calls = m.get("tool_calls") or []
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if p.get("type") in ("text", None))
        msg["content"] = "" if calls else (content or "")
        if calls:
            msg["tool_calls"] = [_served_call(c) for c in calls]
        if "tool_call_id" in m:
            msg["tool_call_id"] = m["tool_call_id"]
        out.append(msg)
    return out


def _served_call(call: Mapping[str, Any]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(call))  # deep copy, plain types
    fn: dict[str, Any] = copy.get("function") or copy
    if isinstance(fn.get("arguments"), str):
        try:
            fn["arguments"] = json.loads(fn["arguments"])
        except json.JSONDecodeError as exc:
            raise RenderError(
                f"tool call {fn.get('name')!r} has arguments that are not JSON ({exc}); a server would "
                "reject this history, so the sample cannot be rendered as served. Fix the corpus export."
            ) from exc
    return copy


def _render(
    tokenizer: Any, messages: list[dict[str, Any]], tools: Any, generation: bool, kw: Mapping[str, Any]
) -> str:
    text = tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=generation, **dict(kw)
    )
    return str(text)


def serving_prompt(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: Any,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The prompt text a server builds for this request (history ending before the manager's turn)."""
    return _render(tokenizer, as_served(messages), tools, True, template_kwargs or {})


def _turn_end(text: str, start: int, eos: str) -> int:
    end = text.find(eos, start)
    if end < 0:
        raise RenderError(
            f"the chat template wrote no end-of-turn token {eos!r} after an assistant turn, so the model "
            "could never learn to stop; set template.end_of_turn to the token this template closes turns with"
        )
    return end + len(eos)


def segments(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: Any,
    *,
    mode: Mode = "conversation",
    template_kwargs: Mapping[str, Any] | None = None,
    end_of_turn: str | None = None,
) -> list[list[Segment]]:
    """One list of segments per training sequence (one sequence in conversation mode, one per call otherwise).

    Messages after the last assistant turn carry no target and are left out.
    """
    kw = dict(template_kwargs or {})
    eos = end_of_turn or tokenizer.eos_token
    if not eos:
        raise RenderError("the tokenizer has no eos_token; set template.end_of_turn (e.g. '<|im_end|>')")
    served = as_served(messages)
    calls = [i for i, m in enumerate(served) if m["role"] == "assistant"]
    if not calls:
        return []
    prompts = [_render(tokenizer, served[:i], tools, True, kw) for i in calls]
    if mode == "per_call":
        out = []
        for i, prompt in zip(calls, prompts, strict=True):
            written = _render(tokenizer, served[: i + 1], tools, False, kw)
            if not written.startswith(prompt):
                raise RenderError(
                    f"message {i}: the template renders the assistant turn without the serving prompt in "
                    "front of it (the generation prompt is not a prefix of the rendered turn); this template "
                    "cannot be trained to match serving"
                )
            end = _turn_end(written, len(prompt), eos)
            out.append([Segment(prompt, False), Segment(written[len(prompt) : end], True)])
        return out
    if mode != "conversation":
        raise RenderError(f"unknown sequence mode {mode!r}: use 'conversation' or 'per_call'")
    full = _render(tokenizer, [*served[: calls[-1] + 1], _PROBE], tools, False, kw)
    out_segments: list[Segment] = []
    pos = 0
    for i, prompt in zip(calls, prompts, strict=True):
        if not full.startswith(prompt) or len(prompt) < pos:
            raise RenderError(
                f"message {i}: the serving prompt for this manager call is not a continuation of the earlier "
                "calls as the template re-renders them (the chat template is not prefix-preserving for this "
                "conversation, e.g. Qwen3 with enable_thinking=false drops the pre-filled think block from "
                "history). Set data.sequences=per_call to train each call on its own exact prompt, or change "
                "template.chat_template_kwargs to match a prefix-preserving serving setup."
            )
        if len(prompt) > pos:
            out_segments.append(Segment(full[pos : len(prompt)], False))
        pos = _turn_end(full, len(prompt), eos)
        out_segments.append(Segment(full[len(prompt) : pos], True))
    return [out_segments]


def encode(tokenizer: Any, parts: Sequence[Segment]) -> tuple[list[int], list[int]]:
    """(input_ids, labels): each segment tokenized on its own, labels -100 outside the trained segments.

    Tokenizing per segment gives the target exactly the tokens a model emits after that prompt;
    the prompt side matches the server's own tokenization whenever merges do not cross a
    segment boundary (boundaries sit at special tokens for Qwen-style templates; the data module
    counts any sample where they do).
    """
    ids: list[int] = []
    labels: list[int] = []
    for part in parts:
        piece = [int(t) for t in tokenizer(part.text, add_special_tokens=False)["input_ids"]]
        ids += piece
        labels += piece if part.trained else [-100] * len(piece)
    return ids, labels
