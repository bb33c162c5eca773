"""Synchronous chat client for one OpenAI-compatible endpoint, with the call policy StateGuard needs.

`LLMClient.chat` sends one chat-completion request through the `openai` package and returns a
`ChatResult` whose assistant message is a plain dict (what `stateguard.parser.parse_response`
reads). The openai client is built with max_retries=0; this module owns the policy instead:

* bounded retries with capped, jittered exponential backoff on transport errors (connection
  refused or reset, timeouts) and on HTTP 408, 429 and 5xx, honouring Retry-After up to the cap;
* no retry on any other 4xx: `LLMError` carries the status and an excerpt of the body, and a
  400 about the context length is the subclass `ContextOverflow` (with the limit the server
  stated, when it did) so callers can refit the request instead of resending it;
* the body of every 2xx answer is read and checked field by field (`stateguard.llm.reply`): HTML,
  non-UTF-8 bytes, `{"choices": "nope"}` or `"content": 7` are a retryable `MalformedReply`, never
  an exception from deep inside the caller;
* a bound on the whole call: each attempt's timeout is cut to what is left of the call deadline
  (`call_deadline_s`, and the caller's own `deadline`), and no attempt starts after it;
* at most `concurrency` requests in flight per client (a semaphore held per attempt, not during
  backoff sleeps), shared by every thread using the client;
* one `llm_call` trace event per call, success or final failure, with tokens, latency, attempts,
  the manager activation it served (`stateguard.trace.manager_activation`) and its outcome: `completion` (a real answer), `rejected` (the server refused it with a 4xx;
  `rejected_for_size` when the prompt did not fit) or `failed` (transport, 5xx, malformed reply
  or deadline, after retries). When the server omits `usage`, token counts are estimated from
  text length and flagged.

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
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.llm.endpoints import EndpointConfig
from stateguard.llm.reply import MalformedReply, read_completion
from stateguard.trace import Trace, current_activation

if TYPE_CHECKING:
    import openai

CHARS_PER_TOKEN = 4  # rough ratio for English and code, used only when the server reports no usage
BODY_EXCERPT_CHARS = 500
RETRYABLE_STATUS = frozenset({408, 429})  # plus every 5xx
MIN_ATTEMPT_S = 0.05  # an attempt with less time than this left is not started


def _openai() -> ModuleType:
    """The openai package, imported when a client is first built: importing it costs about a second
    of CPU, which runs that never call a model (scripted worker, rules manager, every pool worker)
    should not pay just because they import this module for its error classes."""
    import openai  # noqa: PLC0415

    return openai


# Wordings servers use when a prompt does not fit: vLLM ("maximum context length"), OpenAI
# ("context_length_exceeded"), llama.cpp ("exceeds the available context size"),
# llama-cpp-python ("exceed context window").
_CONTEXT_RE = re.compile(
    r"context[ _-]?length|context[ _-]size|context[ _-]window|maximum context|prompt is too long",
    re.I,
)
# The limit a server states in such a message: "maximum context length is 4096 tokens",
# "context window of 4096", "available context size (4096 tokens)", "n_ctx: 4096".
_LIMIT_RE = re.compile(
    r"(?:context length is|context window of|context size \(|context size of|n_ctx\W+|max_model_len\W+)\s*(\d+)",
    re.I,
)

# The prompt size a server reports with such a message: "(4500 in the messages, ...)" (vLLM,
# llama-cpp-python), "request (5000 tokens) exceeds" (llama.cpp), "requested 5000 tokens".
_PROMPT_RES = (
    re.compile(r"(\d+) in the messages", re.I),
    re.compile(r"request \((\d+) tokens\)", re.I),
    re.compile(r"(?:you requested|request has|requested tokens \()\s*(\d+)", re.I),
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

    @property
    def rejected(self) -> bool:
        """The server refused the request itself (a 4xx other than 408/429): resending it unchanged is pointless."""
        return self.status is not None and 400 <= self.status < 500 and self.status not in RETRYABLE_STATUS


class ContextOverflow(LLMError):
    """The server refused the request (HTTP 400) because the prompt exceeds the model's context.

    `limit` is the context window the server named in its message, `prompt_tokens` the size it
    counted, when it said."""

    @property
    def limit(self) -> int | None:
        found = _LIMIT_RE.search(self.body or "")
        return int(found.group(1)) if found else None

    @property
    def prompt_tokens(self) -> int | None:
        """The prompt size the server counted, when its message says (a measurement of our count)."""
        for pattern in _PROMPT_RES:
            found = pattern.search(self.body or "")
            if found:
                return int(found.group(1))
        return None


class MalformedReplyError(LLMError):
    """HTTP 2xx whose body is not a usable chat completion (HTML, not UTF-8, wrong field types)."""


class DeadlineExceeded(LLMError):
    """The call's time bound (call_deadline_s or the caller's deadline) ran out before an answer."""


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
        description="Assistant message as a plain dict: role, content (a string or None), and when "
        "present tool_calls (OpenAI-style dicts with id, type, function.name, function.arguments as "
        "a JSON string) and reasoning_content."
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


def outcome_of(failure: BaseException | None) -> str:
    """The `outcome` of an `llm_call` event: completion, rejected_for_size, rejected or failed."""
    if failure is None:
        return "completion"
    if isinstance(failure, ContextOverflow):
        return "rejected_for_size"
    if isinstance(failure, LLMError) and failure.rejected:
        return "rejected"
    return "failed"


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
        self._openai = _openai().OpenAI(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.timeout_s,
            max_retries=0,
        )
        self._create = self._openai.chat.completions.create
        self._create_raw = self._openai.chat.completions.with_raw_response.create
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
        *,
        deadline: float | None = None,
        meta: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> ChatResult:
        """One chat completion, retried per the endpoint policy.

        `deadline` (a `time.monotonic()` instant) bounds the whole call together with the
        endpoint's `call_deadline_s`; `meta` is copied into the call's `llm_call` trace event
        (e.g. whether decoding was constrained). `kw` overrides the configured temperature /
        max_tokens and adds request fields: names the openai SDK knows (stop, seed,
        response_format, ...) go as such, any other name (top_k, min_p, ...) goes into the JSON
        body, and `extra_body` is merged over the configured one.
        Raises ContextOverflow, or LLMError once retries are spent, the deadline passed, or on a
        non-retryable status.
        """
        request = self._request(messages, tools, tool_choice, kw)
        started = time.monotonic()
        if self.config.call_deadline_s is not None:
            own = started + self.config.call_deadline_s
            deadline = own if deadline is None else min(deadline, own)
        attempts = 0
        result: ChatResult | None = None
        failure: BaseException | None = None
        try:
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left < MIN_ATTEMPT_S:
                    raise DeadlineExceeded(
                        f"{self._who()}: no answer within the call's time bound "
                        f"({time.monotonic() - started:.1f} s, {attempts} attempt(s))",
                        role=self.config.role,
                        model=self.config.model,
                    )
                attempts += 1
                try:
                    completion = self._attempt(request, left)
                except _Retryable as retry:
                    if attempts > self.config.max_retries:
                        error = retry.error
                        error.args = (f"{error} (gave up after {attempts} attempts)",)
                        raise error from retry.__cause__
                    pause = self._delay(attempts - 1, retry.retry_after)
                    if deadline is not None and time.monotonic() + pause >= deadline:
                        error = retry.error
                        error.args = (f"{error} (no time left for a retry after {attempts} attempts)",)
                        raise error from retry.__cause__
                    self._sleep(pause)
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
            self._emit(result, failure, started, attempts, meta)

    def list_models(self) -> list[str]:
        """Model ids the server serves (GET /models): a one-shot readiness check, never retried."""
        try:
            return [m.id for m in self._openai.models.list()]
        except _openai().OpenAIError as exc:
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
            if key in self._create_params and key != "timeout":
                request[key] = value
            else:
                extra[key] = value
        if extra:
            request["extra_body"] = extra
        return request

    def _attempt(self, request: dict[str, Any], left: float | None) -> Any:
        """Send one request while holding a concurrency slot; read and check the raw body.

        openai errors come out translated; a 2xx body that is not a chat completion is a
        retryable MalformedReplyError."""
        timeout = (
            self.config.timeout_s if left is None else max(MIN_ATTEMPT_S, min(self.config.timeout_s, left))
        )
        try:
            with self._slots:
                raw = self._create_raw(**request, timeout=timeout)
                body = raw.http_response.content
                content_type = raw.http_response.headers.get("content-type")
        except _openai().OpenAIError as exc:
            raise self._translate(exc, timeout) from exc
        try:
            return read_completion(body, content_type)
        except MalformedReply as exc:
            error = MalformedReplyError(
                f"{self._who()}: malformed reply: {exc}",
                role=self.config.role,
                model=self.config.model,
                body=_excerpt(body[:2000].decode("utf-8", "replace")),
            )
            raise _Retryable(error) from exc

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
        message = completion.message
        if completion.prompt_tokens is not None and completion.completion_tokens is not None:
            counted = Usage(
                prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens
            )
        else:
            counted = Usage(
                prompt_tokens=estimate_tokens(json.dumps([messages, tools or []], default=str)),
                completion_tokens=estimate_tokens(_generated_text(message)),
                estimated=True,
            )
        return ChatResult(
            message=message,
            finish_reason=completion.finish_reason,
            usage=counted,
            latency_s=time.monotonic() - started,
            attempts=attempts,
            model=completion.model or self.config.model,
        )

    # ------------------------------------------------------------------ errors

    def _who(self) -> str:
        return f"{self.config.role} endpoint {self.config.base_url} ({self.config.model})"

    def _error(self, message: str, **kw: Any) -> LLMError:
        return LLMError(f"{self._who()}: {message}", role=self.config.role, model=self.config.model, **kw)

    def _translate(self, exc: openai.OpenAIError, timeout: float | None = None) -> LLMError | _Retryable:
        """Map an openai exception to a final LLMError / ContextOverflow, or to a _Retryable."""
        oa = _openai()
        if isinstance(exc, oa.APITimeoutError):
            waited = self.config.timeout_s if timeout is None else timeout
            cut = (
                ""
                if waited >= self.config.timeout_s
                else f", cut from {self.config.timeout_s:g} s by the call's time bound"
            )
            return _Retryable(self._error(f"no answer within {waited:.3g} s (timeout{cut})"))
        if isinstance(exc, oa.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
            return _Retryable(self._error(f"connection failed ({detail})"))
        if isinstance(exc, oa.APIStatusError):
            status = exc.status_code
            body = _excerpt(_body_text(exc))
            if status in (400, 413) and _CONTEXT_RE.search(body):
                return ContextOverflow(
                    f"{self._who()}: prompt exceeds the model's context (HTTP {status}): {body}",
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
        self,
        result: ChatResult | None,
        failure: BaseException | None,
        started: float,
        attempts: int,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        if self.trace is None:
            return
        usage = result.usage if result is not None else None
        data: dict[str, Any] = {
            "role": self.config.role,
            "model": self.config.model,
            "outcome": outcome_of(failure),
            "prompt_tokens": usage.prompt_tokens if usage else None,
            "completion_tokens": usage.completion_tokens if usage else None,
            "usage_estimated": usage.estimated if usage else None,
            "finish_reason": result.finish_reason if result else None,
            "latency_s": round(result.latency_s if result else time.monotonic() - started, 6),
            "attempts": attempts,
            "status": getattr(failure, "status", None),
            "error": None if failure is None else f"{type(failure).__name__}: {failure}",
            **dict(meta or {}),
        }
        activation = current_activation()
        if activation is not None and "activation" not in data:
            data["activation"] = activation  # joins the call to the trace's action/tool events
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
