"""The LLM manager's chat client over verl's token-in/token-out rollout server, keeping the token ledger.

    chat = TokenChat(builder, tokenizer, generate, row_prompt=prompt, budget=TokenBudget(...))
    LLMManager(chat)                     # stateguard/policies/llm_manager.py, unchanged
    chat.prompt_ids, chat.response_ids, chat.response_mask, chat.response_logprobs

The manager policy that acts in the RL continuation is the production one (LLMManager): it builds
the activation's messages, sends the harness's tool results and corrective feedback back, and ends
at the first accepted control action. Only its client differs from serving: instead of a chat
endpoint, `TokenChat.chat()` appends the new messages to one growing token sequence with verl's
Continuous Token builder (so earlier tokens are never re-rendered), asks the rollout server for the
continuation, and returns the decoded text as the assistant message, split into content and native
tool calls the way vLLM's tool parser does for a served model.

The sequence is the continuation x^W -> tau_M of paper B.4:
* the prompt is the row's prompt (the synthesized x^W), rendered with the 13 tool schemas; every
  rollout of a group therefore starts from the same tokens;
* model tokens have mask 1; tool results, feedback and the observations of later activations of the
  same turn are context with mask 0 (a later activation shows only its OBSERVATION when its task
  block is already in the conversation, as in the SFT corpus's full trajectories).

`generate` is blocking: the agent loop runs the manager in a worker thread and hands each request to
the event loop that owns verl's server client.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from stateguard.llm.client import LLMError
from stateguard.parser import split_thinking

__all__ = ["BudgetSpent", "TokenBudget", "TokenChat", "split_tool_calls"]

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_OBSERVATION = "\n\nOBSERVATION\n"


class BudgetSpent(LLMError):
    """The continuation used its token or call budget; the manager's activation ends here."""


@dataclass(frozen=True)
class TokenBudget:
    prompt_length: int  # rollout.prompt_length: the prompt must fit (a configuration error otherwise)
    response_length: int  # rollout.response_length: model + context tokens after the prompt
    max_model_calls: int


def split_tool_calls(text: str) -> tuple[str | None, str, list[dict[str, Any]]]:
    """(reasoning, content, tool_calls) from a decoded response, as a tool-calling server returns them.

    Every <tool_call> block must be a JSON object with a "name"; otherwise nothing is extracted and the
    whole text stays content (the harness parser then answers with corrective feedback).
    """
    reasoning, rest = split_thinking(text)
    blocks = _TOOL_CALL.findall(rest)
    calls: list[dict[str, Any]] = []
    for i, block in enumerate(blocks):
        try:
            obj = json.loads(block)
        except json.JSONDecodeError:
            return reasoning, rest, []
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            return reasoning, rest, []
        args = obj.get("arguments", obj.get("parameters", {}))
        calls.append(
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": obj["name"],
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    content = _TOOL_CALL.sub("", rest).strip() if calls else rest
    return reasoning, content, calls


class TokenChat:
    """ChatClient (stateguard.policies.llm_manager) that accumulates the rollout's token sequence."""

    def __init__(
        self,
        builder: Any,
        tokenizer: Any,
        generate: Callable[[list[int], dict[str, Any]], Any],
        *,
        row_prompt: Sequence[Mapping[str, Any]],
        sampling_params: Mapping[str, Any],
        budget: TokenBudget,
        followup_observation_only: bool = True,
        on_budget: Callable[[str], None] | None = None,
    ):
        self.builder, self.tokenizer, self._generate = builder, tokenizer, generate
        self.row_prompt = [dict(m) for m in row_prompt]
        self.sampling_params = dict(sampling_params)
        self.budget = budget
        self.followup_observation_only = followup_observation_only
        self.on_budget = on_budget or (lambda reason: None)
        self.history: list[dict[str, Any]] = []  # the messages the token sequence renders
        self._seen: list[dict[str, Any]] = []  # the manager's own message list at the last call
        self.prompt_ids: list[int] = []
        self.ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] | None = None
        self.calls = 0
        self.context_messages = 0
        self.generate_s = 0.0

    # ------------------------------------------------------------------ results
    @property
    def response_ids(self) -> list[int]:
        return self.ids[len(self.prompt_ids) :]

    @property
    def response_mask(self) -> list[int]:
        return list(self.mask)

    @property
    def response_logprobs(self) -> list[float] | None:
        return None if self.logprobs is None else list(self.logprobs)

    # ------------------------------------------------------------------ ChatClient
    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **_: Any
    ) -> Any:
        if self.calls >= self.budget.max_model_calls:
            self._spent(f"{self.calls} model calls (stateguard.max_model_calls)")
        if not self.prompt_ids:
            self._start(messages, tools)
        else:
            self._append(messages, tools)
        remaining = self.budget.response_length - len(self.mask)
        if remaining <= 0:
            self._spent(f"{len(self.mask)} response tokens (data.max_response_length)")
        params = {**self.sampling_params, "max_tokens": remaining}
        start = time.perf_counter()
        out = self._generate(list(self.ids), params)
        self.generate_s += time.perf_counter() - start
        self.calls += 1
        token_ids = list(out.token_ids)[:remaining]
        merged = self.builder.merge_assistant_tokens(self.ids, token_ids)
        logprobs = list(out.log_probs)[: len(token_ids)] if out.log_probs is not None else None
        if self.logprobs is None and logprobs is not None and not self.mask:
            self.logprobs = []
        self.mask, aligned = self.builder.align_response_metadata(
            merged,
            self.mask,
            self.logprobs,
            assistant_logprobs=logprobs if self.logprobs is not None else None,
        )
        self.logprobs = aligned
        self.ids = merged.token_ids
        reasoning, content, calls = split_tool_calls(
            self.tokenizer.decode(token_ids, skip_special_tokens=True)
        )
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        self.history.append(message)
        reply = dict(message)
        if reasoning:
            reply["reasoning_content"] = reasoning
        return SimpleNamespace(message=reply)

    # ------------------------------------------------------------------ internals
    def _spent(self, what: str) -> None:
        self.on_budget(what)
        raise BudgetSpent(f"the continuation's budget is spent: {what}")

    def _start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> None:
        """First call: the row's prompt stands for the manager's first messages (same system prompt)."""
        if messages[0].get("content") != self.row_prompt[0].get("content"):
            raise ValueError(
                "the row's system prompt differs from stateguard's manager prompt "
                "(stateguard/policies/prompts.py changed since `make synth`); re-run `make synth`"
            )
        self.history = [dict(m) for m in self.row_prompt]
        self._seen = list(messages)
        self.prompt_ids = list(self.builder.build_initial_tokens(self.history, tools=tools))
        if len(self.prompt_ids) > self.budget.prompt_length:
            raise ValueError(
                f"the prompt renders to {len(self.prompt_ids)} tokens with the tool schemas, over "
                f"data.max_prompt_length={self.budget.prompt_length}; raise it "
                "(prompt + response = the context)"
            )
        self.ids = list(self.prompt_ids)

    def _append(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> None:
        if messages[: len(self._seen)] == self._seen:  # the same activation: its feedback messages
            new = messages[len(self._seen) :]
            context = [m for m in new if m.get("role") != "assistant"]  # assistant turns are already tokens
        else:  # a new activation of the continuation: its user message (system prompt unchanged)
            context = [self._followup(m) for m in messages if m.get("role") == "user"]
        self._seen = list(messages)
        if not context:
            return
        merged = self.builder.merge_context_tokens(
            self.history, self.history + context, self.ids, tools=tools
        )
        self.mask, self.logprobs = self.builder.align_response_metadata(merged, self.mask, self.logprobs)
        self.ids = merged.token_ids
        self.history.extend(context)
        self.context_messages += len(context)

    def _followup(self, message: Mapping[str, Any]) -> dict[str, Any]:
        content = str(message.get("content") or "")
        task, sep, observation = content.partition(_OBSERVATION)
        if (
            self.followup_observation_only
            and sep
            and any(task in str(m.get("content")) for m in self.history if m.get("role") == "user")
        ):
            content = "OBSERVATION\n" + observation
        return {"role": "user", "content": content}
