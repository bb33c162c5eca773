"""Count prompt tokens the way the served model will, so a request is sized before it is sent.

`TokenCounter.text` asks the server's own tokenizer when it has one (llama.cpp /tokenize,
llama-cpp-python /extras/tokenize/count, vLLM /tokenize), caches by text, and falls back to a
conservative character estimate (3 characters per token: JSON and code tokenize densely) when
the server has none or the route fails. `messages` adds what a chat template wraps around each
message and around tool definitions; `observe` then learns from the server's own `usage`
(prompt_tokens of a real answer) how far our count is from the real one, and scales later counts
by that ratio (the largest seen: up for a template's overhead, and below 1 when every answer
showed the character estimate running high), so the overhead is measured rather than guessed.

    counter = TokenCounter(endpoint, info)
    needed = counter.messages(messages, tools)      # before sending
    counter.observe(needed_raw, result.usage.prompt_tokens)
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stateguard.llm.endpoints import EndpointConfig
from stateguard.llm.server_info import ServerInfo, httpx_module, root_url

if TYPE_CHECKING:
    import httpx

ESTIMATE_CHARS_PER_TOKEN = 3.0
PER_MESSAGE = 8  # role markers and separators of a chat template
TOOLS_PREAMBLE = 160  # the instructions a template writes around tool definitions
MARGIN = 1.03  # relative slack on top of every count


class TokenCounter:
    """Token counts with the served tokenizer where there is one (thread-unsafe; one per manager)."""

    def __init__(self, endpoint: EndpointConfig, info: ServerInfo, *, timeout_s: float = 10.0):
        self.endpoint = endpoint
        self.info = info
        self._ratio: float | None = (
            None  # largest real/counted prompt size seen; None before the first answer
        )
        self.server_counts = 0
        self.fallbacks = 0  # texts estimated because the tokenize route failed
        self._cache: dict[str, int] = {}
        self._http: httpx.Client | None = None
        self._timeout = timeout_s
        self._broken = info.tokenizer == "estimate"

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    @property
    def source(self) -> str:
        return "estimate" if self._broken else f"server ({self.info.tokenizer})"

    # ------------------------------------------------------------------ counting

    def text(self, text: str) -> int:
        """Tokens of a plain text (no template), from the server when possible."""
        if not text:
            return 0
        key = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()
        if key not in self._cache:
            counted = None if self._broken else self._server_count(text)
            if counted is None:
                counted = math.ceil(len(text) / ESTIMATE_CHARS_PER_TOKEN)
            self._cache[key] = counted
        return self._cache[key]

    def messages(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        """Prompt tokens of a chat request (before calibration)."""
        total = 0
        for message in messages:
            total += PER_MESSAGE + self.text(str(message.get("content") or ""))
            if message.get("tool_calls"):
                total += self.text(json.dumps(message["tool_calls"]))
        if tools:
            total += TOOLS_PREAMBLE + self.text(json.dumps(list(tools)))
        return total

    def calibrated(self, counted: int) -> int:
        """A raw count scaled by what the server's usage showed, plus the margin."""
        return math.ceil(counted * self.ratio * MARGIN) + 16

    @property
    def ratio(self) -> float:
        """Real / counted prompt tokens: the largest seen (never lowered again), 1.0 before the first."""
        return 1.0 if self._ratio is None else self._ratio

    def observe(self, counted: int, reported: int | None) -> None:
        """Learn from a real answer: the server said the prompt had `reported` tokens."""
        if reported is None or counted <= 0 or reported <= 0:
            return
        sample = reported / counted
        self._ratio = sample if self._ratio is None else max(self._ratio, sample)

    def inflate(self, factor: float, at_least: float = 0.0) -> None:
        """Count more conservatively from now on (a request we sized was refused anyway)."""
        self._ratio = max(self.ratio * factor, at_least)

    # ------------------------------------------------------------------ server routes

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx_module().Client(
                timeout=self._timeout, headers={"Authorization": f"Bearer {self.endpoint.api_key}"}
            )
        return self._http

    def _server_count(self, text: str) -> int | None:
        root = root_url(self.endpoint.base_url)
        kind = self.info.tokenizer
        try:
            if kind == "llama.cpp":
                data = self._client().post(f"{root}/tokenize", json={"content": text}).json()
                count = len(data["tokens"]) if isinstance(data.get("tokens"), list) else None
            elif kind == "llama-cpp-python":
                data = self._client().post(f"{root}/extras/tokenize/count", json={"input": text}).json()
                count = data.get("count")
            else:  # vllm
                data = (
                    self._client()
                    .post(f"{root}/tokenize", json={"model": self.endpoint.model, "prompt": text})
                    .json()
                )
                count = data.get("count")
        except (httpx_module().HTTPError, ValueError, AttributeError, TypeError):
            count = None
        if not isinstance(count, int) or count < 0:
            self.fallbacks += 1
            if self.fallbacks >= 3:  # the route does not work here: stop paying for the attempt
                self._broken = True
            return None
        self.server_counts += 1
        return count
