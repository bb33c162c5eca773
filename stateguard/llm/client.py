"""Synchronous chat client for one OpenAI-compatible endpoint, with the call policy StateGuard needs.

`LLMClient.chat` sends one chat-completion request through the `openai` package and returns a
`ChatResult` whose assistant message is a plain dict (what `stateguard.parser.parse_response`
reads). The openai client is built with max_retries=0; this module owns the policy instead:

* bounded retries with capped, jittered exponential backoff on transport errors (connection
  refused or reset, timeouts) and on HTTP 408, 429 and 5xx, honouring Retry-After up to the cap;
* no retry on any other 4xx: `LLMError` carries the status and an excerpt of the body, and a
  400 about the context length is the subclass `ContextOverflow` so callers can compress and retry;
* at most `concurrency` requests in flight per client (a semaphore held per attempt, not during
  backoff sleeps), shared by every thread using the client;
* one `llm_call` trace event per call, success or final failure, with tokens, latency and attempts.
  When the server omits `usage`, token counts are estimated from text length and flagged.

    client = LLMClient(EndpointConfig.from_env("manager"), trace=trace)
    result = client.chat([{"role": "user", "content": "hi"}], tools=TOOLS)
    actions = parse_response(result.message)
"""

from __future__ import annotations

import inspect
import json
import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from stateguard.llm.endpoints import EndpointConfig
from stateguard.trace import Trace

CHARS_PER_TOKEN = 4  # rough ratio for English and code, used only when the server reports no usage
BODY_EXCERPT_CHARS = 500
RETRYABLE_STATUS = frozenset({408, 429})  # plus every 5xx

# Wordings servers use when a prompt does not fit: vLLM ("maximum context length"), OpenAI
# ("context_length_exceeded"), llama.cpp ("exceeds the available context size").
_CONTEXT_RE = re.compile(
    r"context[ _-]?length|context[ _-]size|context[ _-]window|maximum context|prompt is too long",
    re.I,
)

# Serializes trace writes from clients used by several threads (Trace itself is not locked).
_TRACE_LOCK = threading.Lock()


class LLMError(RuntimeError):
    """A chat call failed for good: retries exhausted, or an error that retrying cannot fix."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        attempts: int = 1,
        role: str | None = None,
        model: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.body = body
        self.attempts = attempts
        self.role = role
        self.model = model


class ContextOverflow(LLMError):
    """The server refused the request (HTTP 400) because the prompt exceeds the model's context."""


class Usage(BaseModel):
    """Token counts of one call."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = Field(ge=0, description="Tokens in the request (messages and tools).")
    completion_tokens: int = Field(ge=0, description="Tokens generated, reasoning included.")
    estimated: bool = Field(
        default=False, description="True when the server sent no usage and these come from text length."
    )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChatResult(BaseModel):
    """Outcome of one successful chat call."""

    model_config = ConfigDict(frozen=True)

    message: dict[str, Any] = Field(
        description="Assistant message as a plain dict: role, content, and when present tool_calls "
        "(OpenAI-style dicts with id, type, function.name, function.arguments as a JSON string) "
        "and reasoning_content."
    )
    finish_reason: str | None = Field(description="stop, length, tool_calls, ... as the server said.")
    usage: Usage
    latency_s: float = Field(
        ge=0, description="Seconds from the first attempt to the answer, backoff included."
    )
    attempts: int = Field(ge=1, description="Requests sent, 1 when the first one succeeded.")
    model: str = Field(description="Model name the server answered with (the configured one if absent).")

    @property
    def content(self) -> str:
        return str(self.message.get("content") or "")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(self, error: LLMError, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class LLMClient:
    """Chat client for one endpoint; thread-safe, so one instance can serve many rollouts."""

    def __init__(
        self,
        config: EndpointConfig,
        trace: Trace | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ):
        self.config = config
        self.trace = trace
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._openai = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.timeout_s,
            max_retries=0,
        )
        self._create = self._openai.chat.completions.create
        self._create_params = frozenset(inspect.signature(self._create).parameters)

    def close(self) -> None:
        self._openai.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ public

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> ChatResult:
        """One chat completion, retried per the endpoint policy.

        `kw` overrides the configured temperature / max_tokens and adds request fields: names the
        openai SDK knows (stop, seed, response_format, ...) go as such, any other name (top_k,
        min_p, ...) goes into the JSON body, and `extra_body` is merged over the configured one.
        Raises ContextOverflow, or LLMError once retries are spent or on a non-retryable status.
        """
        request = self._request(messages, tools, tool_choice, kw)
        started = time.monotonic()
        attempts = 0
        result: ChatResult | None = None
        failure: BaseException | None = None
        try:
            while True:
                attempts += 1
                try:
                    completion = self._attempt(request)
                except _Retryable as retry:
                    if attempts > self.config.max_retries:
                        error = retry.error
                        error.args = (f"{error} (gave up after {attempts} attempts)",)
                        raise error from retry.__cause__
                    self._sleep(self._delay(attempts - 1, retry.retry_after))
                    continue
                result = self._result(completion, messages, tools, started, attempts)
                return result
        except LLMError as exc:
            exc.attempts = attempts
            failure = exc
            raise
        except BaseException as exc:  # a bug or an interrupt: still leave a record of the call
            failure = exc
            raise
        finally:
            self._emit(result, failure, started, attempts)

    def list_models(self) -> list[str]:
        """Model ids the server serves (GET /models): a one-shot readiness check, never retried."""
        try:
            return [m.id for m in self._openai.models.list()]
        except openai.OpenAIError as exc:
            translated = self._translate(exc)
            raise (translated.error if isinstance(translated, _Retryable) else translated) from exc

    # ------------------------------------------------------------------ request

    def _request(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: str | Mapping[str, Any] | None,
        kw: dict[str, Any],
    ) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "messages": [dict(m) for m in messages]}
        if tools:
            request["tools"] = [dict(t) for t in tools]
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        if cfg.max_tokens is not None:
            request["max_tokens"] = cfg.max_tokens
        extra = _merge(cfg.extra_body, kw.pop("extra_body", None) or {})
        for key, value in kw.items():
            if key in self._create_params:
                request[key] = value
            else:
                extra[key] = value
        if extra:
            request["extra_body"] = extra
        return request

    def _attempt(self, request: dict[str, Any]) -> Any:
        """Send one request while holding a concurrency slot; openai errors come out translated."""
        try:
            with self._slots:
                return self._create(**request)
        except openai.OpenAIError as exc:
            raise self._translate(exc) from exc

    def _delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None and math.isfinite(retry_after) and retry_after >= 0:
            return min(retry_after, self.config.backoff_max_s)
        return self.config.backoff_delay(retry, self._rng)

    # ------------------------------------------------------------------ response

    def _result(
        self,
        completion: Any,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        started: float,
        attempts: int,
    ) -> ChatResult:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise LLMError(
                f"{self._who()}: the server answered without choices",
                body=_excerpt(completion),
                role=self.config.role,
                model=self.config.model,
            )
        choice = choices[0]
        message = _message_dict(choice.message)
        usage = getattr(completion, "usage", None)
        if usage is not None and usage.prompt_tokens is not None and usage.completion_tokens is not None:
            counted = Usage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
        else:
            counted = Usage(
                prompt_tokens=estimate_tokens(json.dumps([messages, tools or []], default=str)),
                completion_tokens=estimate_tokens(_generated_text(message)),
                estimated=True,
            )
        return ChatResult(
            message=message,
            finish_reason=choice.finish_reason,
            usage=counted,
            latency_s=time.monotonic() - started,
            attempts=attempts,
            model=getattr(completion, "model", None) or self.config.model,
        )

    # ------------------------------------------------------------------ errors

    def _who(self) -> str:
        return f"{self.config.role} endpoint {self.config.base_url} ({self.config.model})"

    def _error(self, message: str, **kw: Any) -> LLMError:
        return LLMError(f"{self._who()}: {message}", role=self.config.role, model=self.config.model, **kw)

    def _translate(self, exc: openai.OpenAIError) -> LLMError | _Retryable:
        """Map an openai exception to a final LLMError / ContextOverflow, or to a _Retryable."""
        if isinstance(exc, openai.APITimeoutError):
            return _Retryable(self._error(f"no answer within {self.config.timeout_s:g} s (timeout)"))
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
            return _Retryable(self._error(f"connection failed ({detail})"))
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            body = _excerpt(_body_text(exc))
            if status == 400 and _CONTEXT_RE.search(body):
                return ContextOverflow(
                    f"{self._who()}: prompt exceeds the model's context (HTTP 400): {body}",
                    status=status,
                    body=body,
                    role=self.config.role,
                    model=self.config.model,
                )
            error = self._error(f"HTTP {status}: {body}", status=status, body=body)
            if status in RETRYABLE_STATUS or status >= 500:
                return _Retryable(error, _retry_after(exc.response.headers))
            return error
        return self._error(f"{type(exc).__name__}: {exc}")

    def _emit(
        self, result: ChatResult | None, failure: BaseException | None, started: float, attempts: int
    ) -> None:
        if self.trace is None:
            return
        usage = result.usage if result is not None else None
        data: dict[str, Any] = {
            "role": self.config.role,
            "model": self.config.model,
            "prompt_tokens": usage.prompt_tokens if usage else None,
            "completion_tokens": usage.completion_tokens if usage else None,
            "usage_estimated": usage.estimated if usage else None,
            "finish_reason": result.finish_reason if result else None,
            "latency_s": round(result.latency_s if result else time.monotonic() - started, 6),
            "attempts": attempts,
            "status": getattr(failure, "status", None),
            "error": None if failure is None else f"{type(failure).__name__}: {failure}",
        }
        with _TRACE_LOCK:
            self.trace.emit("llm_call", **data)


# ------------------------------------------------------------------ helpers


def estimate_tokens(text: str) -> int:
    """Token estimate from character count (CHARS_PER_TOKEN per token, at least 1 for non-empty text)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def _merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; `top` wins, nested dicts (chat_template_kwargs) merge key by key."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _message_dict(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": getattr(message, "content", None)}
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        calls.append(
            {
                "id": getattr(call, "id", None),
                "type": getattr(call, "type", None) or "function",
                "function": {
                    "name": getattr(fn, "name", None),
                    "arguments": getattr(fn, "arguments", None) or "",
                },
            }
        )
    if calls:
        out["tool_calls"] = calls
    extra = getattr(message, "model_extra", None) or {}
    # vLLM and llama.cpp send `reasoning_content`; newer vLLM versions call it `reasoning`.
    reasoning = extra.get("reasoning_content") or extra.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out["reasoning_content"] = reasoning
    return out


def _generated_text(message: Mapping[str, Any]) -> str:
    parts = [message.get("content") or "", message.get("reasoning_content") or ""]
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(f"{fn.get('name') or ''}{fn.get('arguments') or ''}")
    return "".join(parts)


def _body_text(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except Exception:  # a streamed or closed response: fall back to what the SDK decoded
        text = ""
    if text:
        return text
    return exc.body if isinstance(exc.body, str) else json.dumps(exc.body, default=str)


def _excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= BODY_EXCERPT_CHARS else text[:BODY_EXCERPT_CHARS] + " ..."


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from Retry-After / retry-after-ms (numeric forms only); None when absent or unreadable."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / scale
        except ValueError:
            continue
    return None
