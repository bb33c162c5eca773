"""The LLM manager policy (paper A.3, A.7) over any OpenAI-compatible endpoint.

One activation is a short conversation: system prompt (P_sys ⊕ P_ctrl[P_life]), the task and the
observation; the model takes tool actions (the harness runs them and we return their results)
and ends with exactly one control action. What makes it work on small served models:

* the request fits the served window before it is sent (`prompt_fit`): the server is asked for
  its context window and tokenizer once (`stateguard.llm.server_info`), the prompt form (full,
  compact schemas, short system prompt, clipped earlier turns) is chosen so the fixed part leaves
  the observation room, and the observation gets what is left. A request the server still
  refuses for size is refitted with the limit it names — never resent unchanged;
* where the server can decode against a JSON schema, each reply is constrained to the actions
  offered at this lifecycle stage (`action_schema`: a subset of the harness's LEGAL table),
  arguments included; otherwise the model sees tool schemas and its text goes through the parser;
* COMMIT_STATE after FINALIZE_RELATIONS, the one action that stage allows, is applied without a
  model call (`forced_actions`).

Failure never raises into the rollout loop and never passes for the model's choice: a rejected
or failed request, an unusable reply or the per-activation limits end the activation with a
visible fallback (a `manager_fallback` trace event, then the least intrusive legal exit, with
`fallback: <why>` as its reason; a verified draft is finalized, never abandoned, on a model failure); after `max_failures` failed activations in a row, or once
the per-task model time cap is spent, the policy degrades the task to worker-only completion
(the hierarchical manager turns these into its rules tier's own decisions instead). Every count
is in `usage` (`stateguard.policies.usage.ManagerUsage`), every call in the `llm_call` events.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from stateguard.actions import (
    AbandonStateArgs,
    AbstainArgs,
    Action,
    ActionError,
    CommitStateArgs,
    FinalizeRelationsArgs,
    ResumeWorkerArgs,
)
from stateguard.lifecycle import ControlAction, Stage, ToolAction, is_legal
from stateguard.llm.client import ContextOverflow, LLMError, MalformedReplyError
from stateguard.llm.endpoints import EndpointConfig
from stateguard.llm.server_info import ServerInfo, Structured, probe_server
from stateguard.llm.tokens import TokenCounter
from stateguard.observation import ManagerObservation
from stateguard.parser import parse_response
from stateguard.policies.action_schema import (
    Offer,
    offered_controls,
    offered_tools,
)
from stateguard.policies.base import Activation, Degrade, ManagerContext, ModelResponse
from stateguard.policies.conversation import Conversation
from stateguard.policies.prompt_fit import (
    PromptChoice,
    PromptPlan,
    compact_schema,
)
from stateguard.policies.usage import ManagerUsage

__all__ = ["LLMManager", "LLMManagerConfig", "compact_schema"]

ALL_TOOLS = [t.value for t in ToolAction]
MAX_REFITS = 3


class ChatClient(Protocol):
    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kw: Any
    ) -> Any:
        """Returns an object whose `.message` is the assistant message as a dict."""


class LLMManagerConfig(BaseModel):
    """Knobs of the LLM manager (the `llm:` block of configs/eval.yaml and configs/demo.yaml)."""

    model_config = ConfigDict(extra="forbid")

    variant: Literal["stateguard", "freeform"] = Field(
        default="stateguard", description="freeform: the C.5 ablation prompt."
    )
    prompt: PromptChoice = Field(
        default="auto", description="auto: the richest of full / compact / short that fits the served window."
    )
    constrained: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="JSON-schema decoding of the offered actions: auto (where the server supports it), "
        "on (insist: the endpoint's structured_output names the dialect), off (free text + parser).",
    )
    offer: Offer = Field(
        default="protocol", description="protocol: the lifecycle's moves at this stage; legal: all of LEGAL."
    )
    tools: list[str] = Field(
        default_factory=lambda: list(ALL_TOOLS), description="Tool actions the model may use."
    )
    max_actions: int = Field(
        default=8, ge=1, description="Actions per activation (tools + the control action)."
    )
    max_tool_calls: int = Field(
        default=2, ge=0, description="Tool calls per activation; then only controls are offered."
    )
    max_invalid: int = Field(default=2, ge=0, description="Rejected outputs retried per activation.")
    repair_needs_evidence: bool = Field(
        default=True,
        description="protocol offer: REPAIR is offered only after a tool call produced evidence.",
    )
    max_failures: int = Field(
        default=2, ge=1, description="Failed activations in a row before the task degrades."
    )
    reply_tokens: int = Field(
        default=512,
        ge=16,
        description="Room kept for the reply; sent as max_tokens when the endpoint sets none.",
    )
    context_budget_tokens: int = Field(default=40_960, ge=256, description="Cap on the observation's tokens.")
    task_time_cap_s: float | None = Field(
        default=3600.0,
        gt=0,
        description="Model time per task; once spent the manager stops calling (None: no cap).",
    )
    probe_timeout_s: float = Field(
        default=5.0, gt=0, description="Timeout of the one-off server capability probe."
    )
    corpus_prompt: bool | None = Field(
        default=None,
        description="Send exactly what the SFT corpus renders (full system prompt, all 13 tool schemas, no "
        "constrained decoding, no forced COMMIT). None: on for a chat client that is not an HTTP endpoint "
        "(the RL bridge renders tokens itself and must match the corpus), off otherwise.",
    )


class LLMManager:
    def __init__(
        self,
        client: ChatClient,
        config: LLMManagerConfig | None = None,
        *,
        compact_tools: bool = False,
        **overrides: Any,
    ):
        if compact_tools:
            overrides.setdefault("prompt", "compact")
        self.cfg = (config or LLMManagerConfig()).model_copy(update=overrides)
        LLMManagerConfig.model_validate(self.cfg.model_dump())  # overrides are checked like the config
        self.client = client
        self.name = "llm" if self.cfg.variant == "stateguard" else "freeform"
        self.usage = ManagerUsage()
        self.failures = 0  # consecutive activations that ended on an endpoint failure
        self.last_failure: str | None = None
        self.info: ServerInfo | None = None
        self.window: int | None = None
        self.structured: Structured = "off"
        self.counter: TokenCounter | None = None
        self._task_id: str | None = None
        corpus = self.cfg.corpus_prompt
        self.corpus = self._endpoint() is None if corpus is None else corpus
        if self.corpus:
            self.cfg = self.cfg.model_copy(update={"prompt": "full", "constrained": "off", "offer": "legal"})

    @property
    def calls(self) -> int:
        """Model calls that got a real answer (refused and failed requests are counted apart)."""
        return self.usage.completions

    # ------------------------------------------------------------------ set-up

    def _endpoint(self) -> EndpointConfig | None:
        config = getattr(self.client, "config", None)
        return config if isinstance(config, EndpointConfig) else None

    def _setup(self) -> TokenCounter:
        if self.counter is not None:
            return self.counter
        endpoint = self._endpoint()
        if endpoint is None:  # a client without an endpoint config: nothing to ask, estimate everything
            endpoint = EndpointConfig(role="manager", base_url="http://127.0.0.1:9/v1", model="unknown")
            self.info = ServerInfo()
        else:
            self.info = probe_server(endpoint, timeout_s=self.cfg.probe_timeout_s)
        self.window = self.info.context_window
        if self.cfg.constrained == "off":
            self.structured = "off"
        elif self.cfg.constrained == "on" and self.info.structured_output == "off":
            self.structured = "json_schema"  # insist in OpenAI's dialect; a refusal turns it off
        else:
            self.structured = self.info.structured_output
        self.counter = TokenCounter(endpoint, self.info)
        return self.counter

    def _begin_task(self, ctx: ManagerContext) -> None:
        if ctx.task.task_id != self._task_id:
            self._task_id = ctx.task.task_id
            self.usage = ManagerUsage()
            self.failures = 0

    def _left_s(self) -> float | None:
        cap = self.cfg.task_time_cap_s
        return None if cap is None else cap - self.usage.model_time_s

    # ------------------------------------------------------------------ activation

    def activate(
        self,
        obs: ManagerObservation,
        ctx: ManagerContext,
        *,
        allowed: list[str] | None = None,
        fallback: bool = True,
        evidence: dict[str, Any] | None = None,
    ) -> Activation:
        """One activation. `allowed` narrows the offered control actions (the hierarchical
        manager delegates only a verdict); with `fallback=False` a failure just ends the
        activation without a decision, for the caller to decide. `evidence`: what a deterministic
        tier already established (the hierarchical manager's extracted requirements, code
        structure and probe results), shown after the observation."""
        self._begin_task(ctx)
        offered = offered_controls(ctx.regime, obs, offer=self.cfg.offer, allowed=allowed)
        if (
            not self.corpus
            and Stage(obs.stage) is Stage.FINALIZED
            and offered == [ControlAction.COMMIT_STATE.value]
        ):
            self.usage.forced_actions += 1
            yield Action.of(CommitStateArgs())
            return
        left = self._left_s()
        if left is not None and left <= 0:
            self.usage.time_capped += 1
            yield Degrade(
                reason=f"the manager's model time cap per task ({self.cfg.task_time_cap_s:g} s) is spent; "
                "worker-only completion"
            )
            return
        self.usage.activations += 1
        why = yield from self._converse(obs, ctx, offered, evidence)
        if why is None:
            self.failures = 0
            return
        self.last_failure = why
        if not why.startswith("endpoint:"):
            self.failures = 0  # the endpoint answered; the model just gave nothing usable
        else:
            self.failures += 1
            if self.failures >= self.cfg.max_failures:
                yield Degrade(reason=f"manager endpoint kept failing ({why}); worker-only completion")
                return
        if fallback:
            yield from self._exit(obs, ctx, why)

    def _converse(
        self,
        obs: ManagerObservation,
        ctx: ManagerContext,
        offered: list[str],
        evidence: dict[str, Any] | None = None,
    ) -> Any:
        """The model conversation; returns None once an offered control action was accepted,
        else why the activation ended without a decision ("endpoint: ..." for endpoint failures)."""
        counter = self._setup()
        used = invalid = tool_calls = refits = 0
        tools = self.cfg.tools if self.corpus else offered_tools(obs, self.cfg.tools, offer=self.cfg.offer)
        gated = self.cfg.offer == "protocol" and self.cfg.repair_needs_evidence and not self.corpus

        def controls_now() -> list[str]:
            # Do no harm: a REPAIR needs evidence, so it is offered once a tool has produced some.
            return [n for n in offered if n != ControlAction.REPAIR.value or not gated or tool_calls > 0]

        def names_now(plan: PromptPlan) -> list[str]:
            tools_ok = (
                tool_calls < self.cfg.max_tool_calls and used < self.cfg.max_actions - 1 and plan.tool_actions
            )
            left = offered_tools(conv_obs(), tools, offer=self.cfg.offer) if not self.corpus else tools
            return controls_now() + (left if tools_ok else [])

        checked: set[int] = set()  # steps whose execution was already checked in this activation
        loaded: set[str] = set()

        def conv_obs() -> ManagerObservation:
            """The observation as the schema sees it: a step or state already inspected is not offered again."""
            if not checked and not loaded:
                return obs
            return obs.model_copy(
                update={
                    "untraced_steps": [s for s in obs.untraced_steps if s.index not in checked],
                    "committed_state_index": [e for e in obs.committed_state_index if e.id not in loaded],
                }
            )

        conv = Conversation(self, obs, ctx, controls_now(), tools, counter, evidence)
        last_rejected: str | None = None
        shrunk_from: int | None = None  # raw prompt tokens of the last request refused for size
        conv.schema_obs = conv_obs()
        names = names_now(conv.plan)
        while used < self.cfg.max_actions:
            request = conv.request(names)
            if request is None:
                self.usage.not_sent += 1
                return f"no prompt fits the {self.window}-token window"
            counted = int(request["meta"]["counted_prompt_tokens"])
            if shrunk_from is not None and counted >= shrunk_from:
                self.usage.not_sent += 1  # a refit that did not get smaller would be the same refused request
                return f"the prompt cannot be made smaller than the {shrunk_from} tokens the server refused"
            started = time.monotonic()
            try:
                reply = self.client.chat(conv.messages, tools=request.pop("tools"), **request)
            except ContextOverflow as exc:
                self.usage.rejected_for_size += 1
                refits += 1
                shrunk_from = counted
                self._learn_overflow(exc, counter, counted)
                if refits > MAX_REFITS:
                    return f"endpoint: prompt still too large after {refits} refits ({exc})"
                conv = Conversation(
                    self, obs, ctx, controls_now(), tools, counter, evidence
                )  # replanned, smaller
                conv.schema_obs = conv_obs()
                names = names_now(conv.plan)
                continue
            except LLMError as exc:
                if exc.rejected and conv.constrained:
                    self.usage.rejected_requests += 1
                    self.structured = "off"  # the server does not take this schema: free text from now on
                    if ctx.trace is not None:
                        ctx.trace.emit(
                            "manager_note",
                            policy=self.name,
                            note=f"constrained decoding turned off: {exc}"[:800],
                        )
                    conv = Conversation(self, obs, ctx, controls_now(), tools, counter, evidence)
                    conv.schema_obs = conv_obs()
                    names = names_now(conv.plan)
                    continue
                if exc.rejected:
                    self.usage.rejected_requests += 1
                else:
                    self.usage.failed_requests += 1
                    self.usage.malformed_replies += isinstance(exc, MalformedReplyError)
                return f"endpoint: {type(exc).__name__}: {exc}"
            finally:
                self.usage.model_time_s += time.monotonic() - started
            shrunk_from = None
            self.usage.completions += 1
            self.usage.constrained_completions += conv.constrained
            usage = getattr(
                reply, "usage", None
            )  # a ChatClient need not report usage (the RL bridge does not)
            if usage is not None and not usage.estimated:
                counter.observe(request["meta"]["counted_prompt_tokens"], usage.prompt_tokens)
            message = _assistant(reply.message)
            verdict = _classify(message, names, ctx, obs)
            conv.messages.append(message)
            if verdict == "not_offered":
                self.usage.illegal_actions += 1
                used += 1
                results: list[Any] = []
                feedback = f"That action is not offered now. Choose one of: {', '.join(names)}."
                if (
                    gated
                    and ControlAction.REPAIR.value in offered
                    and ControlAction.REPAIR.value not in names
                ):
                    feedback += " REPAIR is offered once a tool call has produced evidence."
                if ctx.trace is not None:  # the harness never sees it, so record it here
                    ctx.trace.emit(
                        "manager_output_refused",
                        policy=self.name,
                        stage=obs.stage,
                        offered=names,
                        output=json.dumps(message, default=str)[:2000],
                    )
                conv.messages.extend(_local_feedback(message, feedback))
            else:
                if verdict == "valid":
                    self.usage.valid_actions += 1
                elif verdict == "unparseable":
                    self.usage.parse_failures += 1
                else:
                    self.usage.illegal_actions += 1
                results = yield ModelResponse(message=message)
                if any(r.accepted and r.action in ControlAction.__members__ for r in results):
                    return None  # the control action ended the activation
                tool_calls += sum(1 for r in results if r.accepted)
                used += max(len(results), 1)
                for action in _parsed(message):
                    if action.name is ToolAction.CHECK_EXECUTION:
                        checked.add(int(getattr(action.args, "step_id", -1)))
                    elif action.name is ToolAction.LOAD_STATE:
                        loaded.add(str(getattr(action.args, "state_id", "")))
                conv.schema_obs = conv_obs()
                names = names_now(conv.plan)
                conv.messages.extend(conv.feedback(message, results, names))
            if not results or any(not r.accepted for r in results):
                invalid += 1
                signature = json.dumps(message, sort_keys=True)
                if signature == last_rejected:
                    return "the model repeated the same rejected output"
                last_rejected = signature
            if invalid > self.cfg.max_invalid:
                return f"{invalid} rejected outputs in one activation"
        return f"no control action within {self.cfg.max_actions} actions"

    def _learn_overflow(self, exc: ContextOverflow, counter: TokenCounter, counted: int) -> None:
        """A request was refused for size: learn the window and how low our count ran."""
        if exc.limit is not None and (self.window is None or exc.limit < self.window):
            self.window = exc.limit  # the server named its window
        if exc.prompt_tokens is not None:
            counter.observe(counted, exc.prompt_tokens)  # the server said what it counted
        elif self.window is not None and counter.calibrated(counted) < self.window:
            # Refused although we counted less than the window: our counts run low here.
            counter.inflate(1.25, at_least=(self.window - self.cfg.reply_tokens) / max(counted, 1))
        elif self.window is None:
            self.window = int(counter.calibrated(counted) * 0.75) + self.cfg.reply_tokens

    def _exit(self, obs: ManagerObservation, ctx: ManagerContext, why: str) -> Activation:
        """The least intrusive legal exit, marked as a fallback in the trace and the counters. A model
        that failed is no evidence against the draft, so a verified draft keeps its work (FINALIZE
        with the harness's provisional relations); abandoning is the exit only where nothing else
        is legal (an opened or repairing draft)."""
        stage = Stage(obs.stage)
        for action in (
            ControlAction.ABSTAIN,
            ControlAction.RESUME_WORKER,
            ControlAction.FINALIZE_RELATIONS,
            ControlAction.ABANDON_STATE,
        ):
            if is_legal(ctx.regime, stage, action):
                if ctx.trace is not None:
                    ctx.trace.emit(
                        "manager_fallback", policy=self.name, reason=why, stage=stage.value, exit=action.value
                    )
                reason = f"fallback: {why}"[:500]
                result = yield Action.of(
                    ResumeWorkerArgs()
                    if action is ControlAction.RESUME_WORKER
                    else AbstainArgs(reason=reason)
                    if action is ControlAction.ABSTAIN
                    else FinalizeRelationsArgs(mode="confirm")
                    if action is ControlAction.FINALIZE_RELATIONS
                    else AbandonStateArgs(reason=reason)
                )
                if getattr(result, "accepted", False):
                    self.usage.fallbacks += 1
                return


def _parsed(message: dict[str, Any]) -> list[Any]:
    try:
        return list(parse_response(message).actions)
    except ActionError:
        return []


def _classify(message: dict[str, Any], names: list[str], ctx: ManagerContext, obs: ManagerObservation) -> str:
    """valid | unparseable | illegal (not legal at the stage) | not_offered (legal, but not offered now)."""
    try:
        parsed = parse_response(message)
    except ActionError:
        return "unparseable"
    stage = Stage(obs.stage)
    for action in parsed.actions:
        if isinstance(action.name, ControlAction) and not is_legal(ctx.regime, stage, action.name):
            return "illegal"
        if action.name.value not in names:
            return "not_offered"
    return "valid"


def _assistant(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant turn as it goes back into the conversation (reasoning is not replayed)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = message["tool_calls"]
    return out


def _local_feedback(message: dict[str, Any], text: str) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") or []
    if calls:
        return [
            {"role": "tool", "tool_call_id": c.get("id") or f"call_{i}", "content": text}
            for i, c in enumerate(calls)
        ]
    return [{"role": "user", "content": text}]
