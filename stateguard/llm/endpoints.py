"""Where and how to reach one OpenAI-compatible chat endpoint (llama.cpp, vLLM, or a hosted API).

An `EndpointConfig` names the agent role it serves, the server, the model, and the call policy
(timeout, bounded retries with capped exponential backoff, concurrency, sampling defaults).
It validates Hydra's `endpoint=` group (configs/endpoint/*.yaml) or is built from environment
variables named after the role:

    cfg = EndpointConfig.from_env("manager")   # STATEGUARD_MANAGER_BASE_URL / _API_KEY / _MODEL / _CONTEXT_WINDOW
    cfg = EndpointConfig.from_env("judge", temperature=0.0)
    cfg = EndpointConfig.model_validate(OmegaConf.to_container(hydra_cfg.endpoint, resolve=True))
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["worker", "manager", "judge"]
ROLES: tuple[str, ...] = get_args(Role)

ENV_PREFIX = "STATEGUARD"
# Config field -> suffix of the environment variable that supplies it in `from_env`.
ENV_FIELDS: dict[str, str] = {
    "base_url": "BASE_URL",
    "api_key": "API_KEY",
    "model": "MODEL",
    "context_window": "CONTEXT_WINDOW",
}


class EndpointConfigError(ValueError):
    """An endpoint cannot be configured (missing environment variable, unknown role)."""


def env_var(role: str, field: str) -> str:
    """Name of the environment variable that supplies `field` for `role`, e.g. STATEGUARD_JUDGE_MODEL."""
    return f"{ENV_PREFIX}_{role.upper()}_{ENV_FIELDS[field]}"


class EndpointConfig(BaseModel):
    """One chat endpoint and the policy for calling it; immutable once built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role = Field(description="Which agent this endpoint serves: worker, manager or judge.")
    base_url: str = Field(
        min_length=1, description="OpenAI-compatible API root including /v1, e.g. http://127.0.0.1:8080/v1."
    )
    api_key: str = Field(default="EMPTY", description="Bearer token; local servers accept any value.")
    model: str = Field(
        min_length=1, description="Model name sent with each request and written to the trace."
    )
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Seconds allowed for connecting and for each wait on the socket (an inactivity bound, "
        "not a bound on the whole response).",
    )
    max_retries: int = Field(
        default=3,
        ge=0,
        description="Retries after the first attempt on transport errors, HTTP 408/429/5xx and malformed replies.",
    )
    call_deadline_s: float | None = Field(
        default=None,
        gt=0,
        description="Bound on one whole call, retries and backoff included (each attempt's timeout is cut "
        "to what is left); None: only timeout_s x attempts.",
    )
    backoff_s: float = Field(
        default=1.0, ge=0, description="Delay before the first retry; doubles per retry."
    )
    backoff_max_s: float = Field(
        default=30.0, ge=0, description="Cap on any one retry delay (Retry-After too)."
    )
    concurrency: int = Field(default=4, ge=1, description="Most requests one client keeps in flight at once.")
    temperature: float | None = Field(
        default=None, ge=0, description="Sampling temperature; None: server default."
    )
    max_tokens: int | None = Field(
        default=None, ge=1, description="Completion token limit; None: server default."
    )
    context_window: int | None = Field(
        default=None,
        ge=256,
        description="Tokens the served model accepts (prompt + completion). None: ask the server "
        "(llama.cpp /props, vLLM /v1/models, llama-cpp-python /v1/models meta) and else learn it from "
        "the first context-length error.",
    )
    structured_output: Literal["auto", "off", "json_schema", "json_object_schema"] = Field(
        default="auto",
        description="How to constrain a reply to a JSON schema: auto (by the server found: llama.cpp, "
        "llama-cpp-python, vLLM), off (free text + parser), json_schema (OpenAI's response_format "
        "type json_schema), json_object_schema (type json_object with a schema, llama-cpp-python).",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra top-level JSON fields for the server, e.g. vLLM's "
        "{'chat_template_kwargs': {'enable_thinking': False}} or {'top_k': 20}.",
    )

    @model_validator(mode="after")
    def _cap_not_below_start(self) -> EndpointConfig:
        if self.backoff_max_s < self.backoff_s:
            raise ValueError(f"backoff_max_s ({self.backoff_max_s}) is below backoff_s ({self.backoff_s})")
        return self

    def backoff_delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (0 for the first retry).

        Exponential (backoff_s * 2**retry), capped at backoff_max_s, with "equal jitter": the
        result is uniform in [half, all] of that value, so concurrent clients spread out while
        every delay stays at least half the nominal one.
        """
        nominal = min(self.backoff_max_s, self.backoff_s * 2.0 ** min(retry, 60))
        draw = (rng or random).random()
        return nominal * (0.5 + 0.5 * draw)

    @classmethod
    def from_env(
        cls, role: str, *, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> EndpointConfig:
        """Build the endpoint for `role` from STATEGUARD_<ROLE>_BASE_URL / _API_KEY / _MODEL.

        Precedence, lowest first: field defaults, environment variables, explicit `overrides`.
        An override of None counts as not given; an empty variable counts as unset. Raises
        EndpointConfigError naming the variable when base_url or model has no value.
        """
        if role not in ROLES:
            raise EndpointConfigError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {"role": role}
        for field in ENV_FIELDS:
            value = env.get(env_var(role, field), "").strip()
            if value:
                values[field] = value
        values.update({k: v for k, v in overrides.items() if v is not None})
        for field in ("base_url", "model"):
            if not values.get(field):
                raise EndpointConfigError(
                    f"no {field} for the {role} endpoint: set the environment variable "
                    f"{env_var(role, field)} or pass {field}=..."
                )
        return cls.model_validate(values)
