"""A scripted OpenAI-compatible chat server on 127.0.0.1 for tests of the LLM client layer.

It is a real HTTP server on a real socket (OS-chosen port) in a background thread. Each POST
to /v1/chat/completions consumes the next behaviour of the script, in arrival order:

    Reply(content=..., tool_calls=[...])   a chat completion (a bare string is Reply(content=s))
    Echo()                                 a completion whose content is the last user message
    Status(code, body, headers)            an error answer, body wrapped as {"error": {...}}
    Delay(seconds, then=...)               wait (to trip client timeouts), then behave as `then`
    Die()                                  stop listening and drop this request unanswered
    Respond(fn)                            a completion computed from the request: fn(request) -> Reply | str

Once the script is spent, requests get HTTP 410 naming the count, so a runaway retry loop
shows up as a clear, non-retried failure. GET /v1/models lists the one model. Every response
closes its connection, so after Die() each new request is refused by the OS. The server
records every request body (`requests`), its headers, and the most requests it was handling
at once (`max_in_flight`).

    with ScriptedServer(["hello", Status(500, "boom"), Echo()]) as server:
        client = LLMClient(EndpointConfig(role="worker", base_url=server.base_url, model="m"))
"""

from __future__ import annotations

import json
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
    """Answer with `fn(request body)`, a Reply or a string (a scripted model that reads its prompt)."""

    fn: Any


Behaviour = Reply | Echo | Status | Delay | Die | Respond | str


def _normalize(item: Any) -> Behaviour:
    if isinstance(item, type) and item in (Echo, Die):
        return item()
    if isinstance(item, Reply | Echo | Status | Delay | Die | Respond | str):
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
        if self.path.rstrip("/").endswith("/models"):
            self._send(
                200,
                {"object": "list", "data": [{"id": owner.model, "object": "model", "owned_by": "scripted"}]},
            )
        else:
            self._send(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        body = json.loads(raw or b"{}")
        behaviour = owner._admit(body, dict(self.headers.items()))
        counted = True
        try:
            while isinstance(behaviour, Delay):
                owner._stopping.wait(behaviour.seconds)
                behaviour = _normalize(behaviour.then)
            if behaviour is None:
                status, payload, headers = owner._exhausted()
            elif isinstance(behaviour, Die):
                owner._die()
                self.close_connection = True
                return  # no answer at all: the client sees the connection drop
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

    def __init__(self, script: Sequence[Any] = (), *, model: str = "scripted-model"):
        self.model = model
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
        if reply.usage is True:
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
