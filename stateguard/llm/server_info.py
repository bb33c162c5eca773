"""What an OpenAI-compatible server can do for us: its context window, its tokenizer, and whether
it constrains a reply to a JSON schema. Found by asking the server, overridable per endpoint.

Servers expose these differently, so `probe_server` tries each known route once (short timeout,
no retries) and keeps the first answer:

* llama.cpp `llama-server`: GET /props -> n_ctx (or default_generation_settings.n_ctx);
  POST /tokenize {"content"}; response_format {"type": "json_schema", ...}.
* llama-cpp-python (`python -m llama_cpp.server`): no route names n_ctx, so our launcher
  (`stateguard.llm.llama_cpp_server`, used by `make serve-local`) adds llama.cpp's GET /props;
  POST /extras/tokenize/count {"input"}; response_format {"type": "json_object", "schema"}.
* vLLM: GET /v1/models -> data[].max_model_len; POST /tokenize {"model", "prompt"};
  response_format {"type": "json_schema", ...}.
* anything else (`transformers serve`, hosted APIs): the endpoint's `context_window` setting,
  else unknown until a context-length error names it; token counts are estimated; no
  constrained decoding unless `structured_output` asks for it.

    info = probe_server(EndpointConfig.from_env("manager"))
    info.context_window, info.tokenizer, info.structured_output
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.llm.endpoints import EndpointConfig

if TYPE_CHECKING:
    import httpx


def httpx_module() -> ModuleType:
    """httpx, imported on first use: the manager's modules import this one, and a run with the rules
    manager (and each of its pool workers) should not pay for an HTTP stack it never uses."""
    import httpx  # noqa: PLC0415

    return httpx


ServerKind = Literal["llama.cpp", "llama-cpp-python", "vllm", "unknown"]
Tokenizer = Literal["llama.cpp", "llama-cpp-python", "vllm", "estimate"]
Structured = Literal["off", "json_schema", "json_object_schema"]

_TOKENIZER: dict[str, Tokenizer] = {
    "llama.cpp": "llama.cpp",
    "llama-cpp-python": "llama-cpp-python",
    "vllm": "vllm",
}
_STRUCTURED: dict[str, Structured] = {
    "llama.cpp": "json_schema",
    "llama-cpp-python": "json_object_schema",
    "vllm": "json_schema",
}


class ServerInfo(BaseModel):
    """The capabilities the manager plans its prompts with (recorded in the run's trace)."""

    model_config = ConfigDict(frozen=True)

    kind: ServerKind = "unknown"
    context_window: int | None = Field(default=None, description="Prompt + completion tokens; None: unknown.")
    context_source: str = Field(default="unknown", description="Where context_window came from.")
    tokenizer: Tokenizer = "estimate"
    structured_output: Structured = "off"


def root_url(base_url: str) -> str:
    """The server root for non-OpenAI routes (/props, /tokenize): base_url without a trailing /v1."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _get_json(http: httpx.Client, url: str) -> Any:
    try:
        response = http.get(url)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx_module().HTTPError, ValueError):
        return None


def _props_window(props: Any) -> int | None:
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    for value in (props.get("n_ctx"), settings.get("n_ctx") if isinstance(settings, dict) else None):
        if isinstance(value, int) and value > 0:
            return value
    return None


def probe_server(config: EndpointConfig, *, timeout_s: float = 5.0) -> ServerInfo:
    """Ask the server what it is (see the module docstring); never raises for an unreachable or
    unknown server (the answer is then `unknown` plus whatever the endpoint config says)."""
    kind: ServerKind = "unknown"
    window: int | None = None
    source = "unknown"
    headers = {"Authorization": f"Bearer {config.api_key}"}
    with httpx_module().Client(timeout=timeout_s, headers=headers) as http:
        props = _get_json(http, f"{root_url(config.base_url)}/props")
        if _props_window(props) is not None:
            window, source = _props_window(props), "GET /props"
            kind = (
                "llama-cpp-python"
                if isinstance(props, dict) and props.get("server") == "llama-cpp-python"
                else "llama.cpp"
            )
        models = _get_json(http, f"{config.base_url.rstrip('/')}/models")
        entries = models.get("data") if isinstance(models, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            limit = entry.get("max_model_len")
            if kind == "unknown" and isinstance(limit, int) and limit > 0:
                kind, window, source = "vllm", limit, "GET /v1/models max_model_len"
            elif kind == "unknown" and entry.get("owned_by") == "me" and entry.get("permissions") == []:
                kind = "llama-cpp-python"  # its own /v1/models shape; the window stays unknown
    if config.context_window is not None:
        window, source = config.context_window, "endpoint setting context_window"
    structured = (
        _STRUCTURED.get(kind, "off") if config.structured_output == "auto" else config.structured_output
    )
    return ServerInfo(
        kind=kind,
        context_window=window,
        context_source=source,
        tokenizer=_TOKENIZER.get(kind, "estimate"),
        structured_output=structured,
    )


def response_format(mode: Structured, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The request's `response_format` that constrains the reply to `schema` in a server's dialect."""
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "manager_action", "schema": schema}}
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return None


def describe(info: ServerInfo) -> str:
    return json.dumps(info.model_dump(), sort_keys=True)
