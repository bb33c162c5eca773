"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests of the LLM client layer.

It is a real HTTP server on a real socket (OS-chosen port) in a background thread. Each POST
to /v1/chat/completions consumes the next behaviour of the script, in arrival order:

    Reply(content=..., tool_calls=[...])   a chat completion (a bare string is Reply(content=s))
    Echo()                                 a completion whose content is the last user message
    Status(code, body, headers)            an error answer, body wrapped as {"error": {...}}
    Delay(seconds, then=...)               wait (to trip client timeouts), then behave as `then`
    Die()                                  stop listening and drop this request unanswered
    Respond(fn)                            computed from the request: fn(request) -> Reply | str | Status | ...

    Raw(body, status=200, content_type=...) any bytes as the answer (HTML, non-UTF-8, odd JSON)

Once the script is spent, requests get HTTP 410 naming the count, so a runaway retry loop
shows up as a clear, non-retried failure. GET /v1/models lists the one model.

`flavor` makes it answer like a real serving stack, with a scripted word-piece tokenizer
(`count_tokens`) and a chat template that adds a few tokens per message and around tools:
"llama.cpp" (GET /props with n_ctx, POST /tokenize), "llama-cpp-python" (our launcher's GET
/props, POST /extras/tokenize/count), "vllm" (max_model_len in /v1/models, POST /tokenize).
With `context_window`, a request whose prompt does not fit is refused with that stack's HTTP 400
wording (`rejected_for_size` counts them) without consuming the script. Every response
closes its connection, so after Die() each new request is refused by the OS. The server
records every request body (`requests`), its headers, and the most requests it was handling
at once (`max_in_flight`).

    with ScriptedServer(["hello", Status(500, "boom"), Echo()]) as server:
        client = LLMClient(EndpointConfig(role="worker", base_url=server.base_url, model="m"))
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A successful chat completion.

    tool_calls items are {"name", "arguments"} (arguments: dict or JSON string) or full
    OpenAI-style dicts. usage: True computes word counts, (prompt, completion) sets them,
    False leaves `usage` out of the response.
    """

    content: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()
    reasoning_content: str | None = None
    finish_reason: str | None = None
    usage: tuple[int, int] | bool = True


@dataclass(frozen=True)
class Echo:
    """A completion repeating the content of the last user message."""


@dataclass(frozen=True)
class Status:
    """An HTTP error status with an OpenAI-style error body."""

    code: int
    body: str | Mapping[str, Any] = ""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    """Hold the request for `seconds` (woken early when the server closes), then act as `then`."""

    seconds: float
    then: Behaviour = field(default_factory=Echo)


@dataclass(frozen=True)
class Die:
    """Close the listening socket and drop the current request without an answer."""


@dataclass(frozen=True)
class Respond:
    """Answer with `fn(request body)`: a Reply or a string (a scripted model that reads its prompt),
    or any other behaviour (Status, Raw, Delay) to script a server that reacts to the request."""

    fn: Any


@dataclass(frozen=True)
class Raw:
    """Answer with these exact bytes (a str is UTF-8 encoded) and this status and content type."""

    body: bytes | str
    status: int = 200
    content_type: str = "application/json"


Behaviour = Reply | Echo | Status | Delay | Die | Respond | Raw | str
_WORD = re.compile(r"\w+|[^\w\s]")
PER_MESSAGE, TOOLS_PREAMBLE = 5, 40  # what the scripted chat template adds


def count_tokens(text: str) -> int:
    """The scripted tokenizer: one token per word or punctuation mark."""
    return len(_WORD.findall(text))


def prompt_tokens(request: Mapping[str, Any]) -> int:
    """Prompt tokens of a chat request under the scripted chat template."""
    total = 0
    for message in request.get("messages") or []:
        total += PER_MESSAGE + count_tokens(str(message.get("content") or ""))
        if message.get("tool_calls"):
            total += count_tokens(json.dumps(message["tool_calls"]))
    if request.get("tools"):
        total += TOOLS_PREAMBLE + count_tokens(json.dumps(request["tools"]))
    return total


def _normalize(item: Any) -> Behaviour:
    if isinstance(item, type) and item in (Echo, Die):
        return item()
    if isinstance(item, Reply | Echo | Status | Delay | Die | Respond | Raw | str):
        return item
    raise TypeError(f"not a scripted behaviour: {item!r}")


def _words(text: Any) -> int:
    return len(text.split()) if isinstance(text, str) else 0


def _tool_call(index: int, spec: Mapping[str, Any]) -> dict[str, Any]:
    if "function" in spec:
        return {"id": f"call_{index}", "type": "function", **dict(spec)}
    args = spec.get("arguments", {})
    return {
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": spec["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError | TimeoutError):
            self.owner.errors.append(repr(exc))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.rstrip("/")
        flavor, window = owner.flavor, owner.context_window
        if path.endswith("/models"):
            entry: dict[str, Any] = {"id": owner.model, "object": "model", "owned_by": "scripted"}
            if flavor == "vllm":
                entry.update(owned_by="vllm", max_model_len=window or 4096)
            elif flavor == "llama-cpp-python":
                entry.update(owned_by="me", permissions=[])
            self._send(200, {"object": "list", "data": [entry]})
        elif path == "/props" and flavor == "llama.cpp":
            self._send(200, {"default_generation_settings": {"n_ctx": window or 4096}, "total_slots": 1})
        elif path == "/props" and flavor == "llama-cpp-python":
            self._send(
                200,
                {
                    "n_ctx": window or 4096,
                    "default_generation_settings": {"n_ctx": window or 4096},
                    "server": "llama-cpp-python",
                },
            )
        else:
            self._send(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.rstrip("/")
        tokenize = {
            "llama.cpp": "/tokenize",
            "vllm": "/tokenize",
            "llama-cpp-python": "/extras/tokenize/count",
        }
        if owner.flavor in tokenize and path == tokenize[owner.flavor]:
            request = json.loads(raw or b"{}")
            text = str(request.get("content") or request.get("prompt") or request.get("input") or "")
            owner.tokenize_calls += 1
            n = count_tokens(text)
            self._send(200, {"tokens": list(range(n))} if owner.flavor == "llama.cpp" else {"count": n})
            return
        if not path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        body = json.loads(raw or b"{}")
        refusal = owner._too_long(body)
        if refusal is not None:
            self._send(400, {"error": {"message": refusal, "type": "invalid_request_error", "code": 400}})
            return
        behaviour = owner._admit(body, dict(self.headers.items()))
        counted = True
        try:
            while isinstance(behaviour, Delay | Respond):
                if isinstance(
                    behaviour, Respond
                ):  # a scripted model may also answer with an error or raw bytes
                    behaviour = _normalize(behaviour.fn(body))
                    continue
                owner._stopping.wait(behaviour.seconds)
                behaviour = _normalize(behaviour.then)
            if behaviour is None:
                status, payload, headers = owner._exhausted()
            elif isinstance(behaviour, Die):
                owner._die()
                self.close_connection = True
                return  # no answer at all: the client sees the connection drop
            elif isinstance(behaviour, Raw):
                owner._leave()
                counted = False
                self._send_raw(behaviour)
                return
            elif isinstance(behaviour, Status):
                status, payload, headers = owner._status(behaviour)
            else:
                status, payload, headers = 200, owner._completion(body, behaviour), {}
            owner._leave()
            counted = False
            self._send(status, payload, headers)
        finally:
            if counted:
                owner._leave()

    def _send_raw(self, raw: Raw) -> None:
        data = raw.body.encode() if isinstance(raw.body, str) else raw.body
        try:
            self.send_response(raw.status)
            self.send_header("Content-Type", raw.content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before the answer


class ScriptedServer:
    """OpenAI-compatible server answering from `script`; use as a context manager."""

    def __init__(
        self,
        script: Sequence[Any] = (),
        *,
        model: str = "scripted-model",
        flavor: str = "plain",
        context_window: int | None = None,
    ):
        if flavor not in ("plain", "llama.cpp", "llama-cpp-python", "vllm"):
            raise ValueError(f"unknown flavor {flavor!r}")
        self.model = model
        self.flavor = flavor
        self.context_window = context_window
        self.rejected_for_size = 0
        self.tokenize_calls = 0
        self._script = [_normalize(item) for item in script]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.errors: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.dead = False
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.port: int = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def remaining(self) -> int:
        """Behaviours not yet consumed."""
        with self._lock:
            return len(self._script)

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="scripted-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ used by the handler threads

    def _admit(self, body: dict[str, Any], headers: dict[str, str]) -> Behaviour | None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self._script.pop(0) if self._script else None

    def _leave(self) -> None:
        # Called before the answer is written, so the count never includes a request the client
        # has already seen answered (keeps max_in_flight a lower bound of the client's own count).
        with self._lock:
            self.in_flight -= 1

    def _die(self) -> None:
        self.dead = True
        self._httpd.shutdown()  # runs in a handler thread, so waiting for the serve loop is safe
        self._httpd.socket.close()

    def _too_long(self, request: Mapping[str, Any]) -> str | None:
        """The stack's refusal when the prompt does not fit the window (None when it fits)."""
        if self.context_window is None:
            return None
        prompt = prompt_tokens(request)
        reply = int(request.get("max_tokens") or 0)
        window = self.context_window
        if self.flavor == "vllm" and prompt + reply > window:
            text = (
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{prompt + reply} tokens ({prompt} in the messages, {reply} in the completion)."
            )
        elif self.flavor == "llama.cpp" and prompt >= window:
            text = f"the request ({prompt} tokens) exceeds the available context size ({window} tokens)"
        elif prompt >= window:  # llama-cpp-python and plain: the prompt alone is checked
            text = (
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{prompt + reply} tokens ({prompt} in the messages, {reply} in the completion)."
            )
        else:
            return None
        with self._lock:
            self.rejected_for_size += 1
            self.requests.append(dict(request))
        return text

    def _exhausted(self) -> tuple[int, Any, dict[str, str]]:
        message = f"scripted server: script exhausted after {len(self.requests) - 1} requests"
        return 410, {"error": {"message": message, "type": "script_exhausted"}}, {}

    def _status(self, status: Status) -> tuple[int, Any, dict[str, str]]:
        if isinstance(status.body, Mapping):
            payload: Any = dict(status.body)
        else:
            payload = {"error": {"message": status.body, "type": "scripted_error", "code": status.code}}
        return status.code, payload, dict(status.headers)

    def _completion(self, request: Mapping[str, Any], behaviour: Behaviour) -> dict[str, Any]:
        messages = request.get("messages") or []
        if isinstance(behaviour, Respond):
            behaviour = behaviour.fn(request)
        if isinstance(behaviour, Echo):
            users = [m for m in messages if m.get("role") == "user"]
            reply = Reply(content=str(users[-1].get("content") or "") if users else "")
        elif isinstance(behaviour, str):
            reply = Reply(content=behaviour)
        else:
            assert isinstance(behaviour, Reply)
            reply = behaviour
        calls = [_tool_call(i, spec) for i, spec in enumerate(reply.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        with self._lock:
            number = len(self.requests)
        completion: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.usage is True and self.flavor != "plain":
            prompt = prompt_tokens(request)
            generated = count_tokens(reply.content or "") + sum(
                count_tokens(c["function"]["arguments"]) for c in calls
            )
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": generated,
                "total_tokens": prompt + generated,
            }
        elif reply.usage is True:
            prompt = sum(_words(m.get("content")) for m in messages)
            generated = _words(reply.content) + sum(_words(c["function"]["arguments"]) for c in calls)
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": generated,
                "total_tokens": prompt + generated,
            }
        elif isinstance(reply.usage, tuple):
            prompt, generated = reply.usage
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": generated,
                "total_tokens": prompt + generated,
            }
        return completion
