"""The LLM manager policy (paper A.3, A.7) over any OpenAI-compatible endpoint.

One activation is a short conversation: system prompt (P_sys ⊕ P_ctrl[P_life]), the task and the
observation; the model calls tool actions (the harness runs them and we return tool messages)
and ends with exactly one control action. Recovery, as the harness contract asks:
  * an invalid action or malformed output -> the harness rejects it -> its corrective feedback is
    sent back -> bounded retries (`max_invalid`), then the activation ends and the rollout loop
    takes the least intrusive legal exit;
  * the endpoint says the context is too long -> the observation is compressed to half the budget
    and the call is retried;
  * transport failures are retried by the client; when they persist, the activation ends without a
    decision (the worker continues) and after `max_failures` failed activations in a row the policy
    degrades the task to worker-only completion. Nothing here raises into the rollout loop.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from stateguard.actions import tool_schemas
from stateguard.lifecycle import ControlAction
from stateguard.llm.client import ContextOverflow, LLMError
from stateguard.observation import ManagerObservation, compress
from stateguard.policies.base import Activation, Degrade, ManagerContext, ModelResponse
from stateguard.policies.prompts import evidence_message, observation_message, system_prompt, task_block


class ChatClient(Protocol):
    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kw: Any) -> Any:
        """Returns an object whose `.message` is the assistant message as a dict."""


class LLMManager:
    def __init__(
        self,
        client: ChatClient,
        *,
        variant: Literal["stateguard", "freeform"] = "stateguard",
        max_actions: int = 8,
        max_invalid: int = 2,
        max_failures: int = 3,
        context_budget_tokens: int = 40_960,
        compact_tools: bool = False,
    ):
        self.client = client
        self.variant = variant
        self.name = "llm" if variant == "stateguard" else "freeform"
        self.max_actions = max_actions
        self.max_invalid = max_invalid
        self.max_failures = max_failures
        self.context_budget = context_budget_tokens
        self.failures = 0  # consecutive activations that ended on an endpoint failure
        self.calls = 0
        # Small local models: tool schemas without descriptions shrink the prompt by ~40%.
        self.tools = [_compact(t) for t in tool_schemas()] if compact_tools else tool_schemas()

    def _messages(self, obs: ManagerObservation, ctx: ManagerContext, evidence: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        upto = ctx.turn.turn_id if ctx.turn is not None else None
        user = f"{task_block(ctx.task, upto)}\n\n{observation_message(obs)}"
        if evidence:
            user += "\n\n" + evidence_message(evidence)
        return [
            {"role": "system", "content": system_prompt(ctx.regime, self.variant)},
            {"role": "user", "content": user},
        ]

    def activate(self, obs: ManagerObservation, ctx: ManagerContext, evidence: dict[str, Any] | None = None) -> Activation:
        """`evidence`: what a deterministic tier already established (the hierarchical manager's
        extracted requirements, code structure and probe results), shown after the observation."""
        messages = self._messages(obs, ctx, evidence)
        tools = self.tools
        budget = self.context_budget
        used = invalid = 0
        last_rejected: str | None = None
        while used < self.max_actions:
            try:
                self.calls += 1
                reply = self.client.chat(messages, tools=tools)
            except ContextOverflow:
                budget //= 2
                if budget < 512:
                    return
                smaller = compress(obs, budget)
                messages = self._messages(smaller, ctx, evidence) + messages[2:]
                continue
            except LLMError as exc:
                self.failures += 1
                if self.failures >= self.max_failures:
                    yield Degrade(reason=f"manager endpoint kept failing ({exc}); worker-only completion")
                return  # the rollout loop lets the worker continue
            self.failures = 0
            message = _assistant(reply.message)
            messages.append(message)
            results = yield ModelResponse(message=message)
            if any(r.accepted and r.action in ControlAction.__members__ for r in results):
                return  # the control action ended the activation
            used += max(len(results), 1)
            if any(not r.accepted for r in results):
                invalid += 1
                signature = json.dumps(message, sort_keys=True)
                if signature == last_rejected:
                    return  # the model repeats the same rejected output: retrying will not help
                last_rejected = signature
            messages.extend(_feedback(message, results))
            if invalid > self.max_invalid:
                return


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant turn as it goes back into the conversation (reasoning is not replayed)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def _result_text(result: Any) -> str:
    if not result.accepted:
        return f"REJECTED by the harness: {result.feedback}"
    if result.tool_result is not None:
        body = json.dumps(result.tool_result.model_dump(mode="json"), default=str)
        return body if len(body) <= 6000 else body[:6000] + " ...[truncated]"
    return result.feedback


def _feedback(message: dict[str, Any], results: list[Any]) -> list[dict[str, Any]]:
    """Tool messages for native calls (one per call id), else one user message with the results."""
    calls = message.get("tool_calls") or []
    if calls:
        texts = [_result_text(r) for r in results]
        if len(texts) != len(calls):  # the whole response was rejected: answer every call with the reason
            texts = [texts[0] if texts else "REJECTED"] * len(calls)
        return [{"role": "tool", "tool_call_id": c.get("id") or f"call_{i}", "content": t}
                for i, (c, t) in enumerate(zip(calls, texts, strict=True))]  # fmt: skip
    body = "\n".join(f"<tool_response>\n{_result_text(r)}\n</tool_response>" for r in results)
    controls = ", ".join(a.value for a in ControlAction)
    return [{"role": "user", "content": f"{body}\nContinue: call tools or one control action ({controls})."}]


def _compact(schema: dict[str, Any]) -> dict[str, Any]:
    """A function schema without descriptions (names and types only)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "description"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    fn = schema["function"]
    return {"type": "function", "function": {"name": fn["name"], "parameters": strip(fn["parameters"])}}
