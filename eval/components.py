"""The parts an evaluation arm is built from: worker, manager, workspace, flow (shared by the
runner and the demo).

    worker = make_worker("scripted", faults=[...], seed=0, trace=calls, reference=task)  # task: stateguard.task.Task
    manager = make_manager("rules", trace=calls)            # None for the baseline arm
    ws = make_workspace("sandbox", data_dir, arm_dir, sandbox={"isolation": "bwrap"})
    check_workspace("sandbox", {"isolation": "process"})   # at start-up: refuses what cannot run here
    check_components(response={"p_flip": 0.1}, semantic={"enabled": True})  # at start-up too

LLM-backed parts read their endpoint from the environment (`STATEGUARD_WORKER_*`,
`STATEGUARD_MANAGER_*`; see `stateguard.llm.endpoints`), so a missing endpoint fails with the
variable to set before any task starts. The manager's call policy (timeout, retries, whole-call
deadline, context window) and its knobs (prompt form, constrained decoding, per-task time cap)
come from the `llm:` block of configs/eval.yaml and configs/demo.yaml.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stateguard.llm import EndpointConfig, LLMClient
from stateguard.policies.base import ManagerPolicy
from stateguard.policies.llm_manager import LLMManagerConfig
from stateguard.policies.registry import MANAGERS, ManagerSetup
from stateguard.task import Task
from stateguard.trace import Trace
from stateguard.verification.llm_extract import LLMExtractor
from stateguard.verification.verifier import SemanticConfig, SemanticVerifier
from stateguard.worker_contract import WorkerAdapter
from stateguard.workers import ResponseModel
from stateguard.workers.protocol import WorkerProtocol
from stateguard.workers.registry import WORKERS, WorkerSetup
from stateguard.workspace import DictWorkspace, LiveWorkspace

__all__ = [
    "MANAGERS",
    "WORKERS",
    "WORKSPACES",
    "check_components",
    "check_workspace",
    "endpoint_settings",
    "llm_settings",
    "make_manager",
    "make_worker",
    "make_workspace",
    "quiet_http_logs",
]

# Managers and workers are registered by the packages that define them (`MANAGERS` in
# stateguard.policies.registry, `WORKERS` in stateguard.workers.registry); re-exported here.
WORKSPACES = ("sandbox", "dict")


def quiet_http_logs() -> None:
    """One INFO line per HTTP request drowns the output: the openai client logs each request
    through httpx, or httpx2 in the versions pinned here."""
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _limits(sandbox: Mapping[str, Any] | None) -> Any:
    from stateguard.sandbox import SandboxLimits

    try:
        return SandboxLimits(**dict(sandbox or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ValueError(
            f"sandbox.{field}: {first['msg']} (the fields are those of stateguard.sandbox.SandboxLimits)"
        ) from None


def check_workspace(kind: str, sandbox: Mapping[str, Any] | None = None) -> None:
    """Start-up check: an unknown workspace, bad `sandbox.*` settings, or `sandbox.isolation=bwrap`
    where bubblewrap does not work are errors before any task runs (the last names its two fixes)."""
    if kind not in WORKSPACES:
        raise ValueError(f"workspace={kind!r}: use one of {', '.join(WORKSPACES)}")
    if kind == "sandbox":
        from stateguard.sandbox import check_isolation

        check_isolation(_limits(sandbox).isolation)


def make_workspace(
    kind: str, data_dir: Path, arm_dir: Path, sandbox: Mapping[str, Any] | None = None
) -> LiveWorkspace:
    """`sandbox`: a separate kernel process in a bubblewrap sandbox that sees only `data_dir` (settings:
    `sandbox`, the fields of `SandboxLimits`); `dict`: in-process, no isolation."""
    if kind == "dict":
        return DictWorkspace()
    if kind == "sandbox":
        from stateguard.sandbox import SandboxWorkspace  # the separate-process kernel

        return SandboxWorkspace(
            task_data_dir=data_dir,
            scratch_dir=arm_dir / "scratch",
            checkpoint_dir=arm_dir / "checkpoints",
            limits=_limits(sandbox),
        )
    raise ValueError(f"workspace={kind!r}: use one of {', '.join(WORKSPACES)}")


def check_components(
    *, response: Mapping[str, Any] | None = None, semantic: Mapping[str, Any] | None = None
) -> None:
    """Start-up check of the `response:` (scripted worker) and `semantic:` (rules tier) blocks, which
    the jobs otherwise validate first inside a worker process; a ValueError names the key."""
    for block, model, values in (
        ("response", ResponseModel, response),
        ("semantic", SemanticConfig, semantic),
    ):
        try:
            model.model_validate(dict(values or {}))
        except ValidationError as exc:
            raise _invalid(block, exc) from None


# Keys of the `llm:` config block that set the manager's endpoint call policy; the rest are
# LLMManagerConfig fields.
ENDPOINT_KEYS = (
    "timeout_s",
    "max_retries",
    "call_deadline_s",
    "context_window",
    "structured_output",
    "temperature",
    "max_tokens",
)


def _invalid(block: str, exc: ValidationError) -> ValueError:
    problems = "; ".join(f"{block}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
    return ValueError(
        f"the config's {block}: block is invalid ({problems}); see configs/eval.yaml for the keys"
    )


# Keys of the `worker_llm:` block that are the LLM worker's own knobs, not its endpoint's.
WORKER_KEYS = ("task_time_cap_s", "answer_from_output")


def endpoint_settings(block: Mapping[str, Any] | None, name: str = "worker_llm") -> dict[str, Any]:
    """Check a config block of endpoint call-policy overrides (timeout_s, max_retries, ...); the
    `worker_llm:` block may also hold the worker's own knobs (WORKER_KEYS), checked and left out."""
    values = dict(block or {})
    own = WORKER_KEYS if name == "worker_llm" else ()
    unknown = sorted(set(values) - set(ENDPOINT_KEYS) - set(own))
    if unknown:
        raise ValueError(
            f"the config's {name}: block has unknown keys {unknown}; use {', '.join(ENDPOINT_KEYS + own)}"
        )
    cap = values.pop("task_time_cap_s", None)
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int | float) or cap <= 0):
        raise ValueError(
            f"the config's {name}: block: task_time_cap_s={cap!r}; use seconds of model time per task (> 0) or null"
        )
    from_output = values.pop("answer_from_output", None)
    if from_output is not None and not isinstance(from_output, bool):
        raise ValueError(
            f"the config's {name}: block: answer_from_output={from_output!r}; use true, false or null "
            "(null: the worker's default)"
        )
    try:
        EndpointConfig(
            role="worker",
            base_url="http://check",
            model="check",
            **{k: v for k, v in values.items() if v is not None},
        )
    except ValidationError as exc:
        raise _invalid(name, exc) from None
    return values


def llm_settings(llm: Mapping[str, Any] | None, **fixed: Any) -> tuple[LLMManagerConfig, dict[str, Any]]:
    """Split and check the config's `llm:` block: (manager knobs, endpoint call-policy overrides).
    A wrong key or value is a ValueError naming it, raised before any task starts."""
    settings = {k: v for k, v in dict(llm or {}).items()}
    endpoint = endpoint_settings({k: settings.pop(k) for k in ENDPOINT_KEYS if k in settings}, "llm")
    try:
        config = LLMManagerConfig(**{**settings, **fixed})
    except ValidationError as exc:
        raise _invalid("llm", exc) from None
    return config, endpoint


def make_manager(
    kind: str,
    *,
    trace: Trace,
    context_budget_tokens: int = 40960,
    llm: Mapping[str, Any] | None = None,
    semantic: Mapping[str, Any] | None = None,
) -> ManagerPolicy:
    """The manager policy; the LLM-backed ones use the endpoint from STATEGUARD_MANAGER_* variables,
    with the call policy and manager knobs of the config's `llm:` block (`LLMManagerConfig`).
    `semantic` configures the rules tier's semantic verification (`SemanticConfig`; off by default)."""
    sem = SemanticConfig.model_validate(dict(semantic or {}))
    extractor = (
        LLMExtractor(LLMClient(EndpointConfig.from_env("manager"), trace=trace))
        if sem.extractor == "llm"
        else None
    )
    verifier = SemanticVerifier(sem, extractor=extractor) if sem.enabled else None
    factory = MANAGERS.get(kind)
    if factory is None:
        raise ValueError(f"manager={kind!r}: use one of {', '.join(MANAGERS)}")

    def model(variant: str) -> tuple[LLMClient, LLMManagerConfig]:
        config, endpoint = llm_settings(llm, context_budget_tokens=context_budget_tokens, variant=variant)
        return LLMClient(EndpointConfig.from_env("manager", **endpoint), trace=trace), config

    return factory(ManagerSetup(trace=trace, semantic=verifier, llm=model))


def make_worker(
    kind: str,
    *,
    trace: Trace,
    faults: list[Any] | None = None,
    seed: int = 0,
    protocol: WorkerProtocol | None = None,
    response: Mapping[str, Any] | None = None,
    endpoint: Mapping[str, Any] | None = None,
    reference: Task | None = None,
) -> WorkerAdapter:
    """`scripted`: replays reference code under the given faults and answers repair hints by the
    `response` model (`stateguard.workers.response`: identify, p_fix, p_flip); `llm`: STATEGUARD_WORKER_*
    endpoint (call policy from the config's `worker_llm:` block, `endpoint`), speaking the benchmark's
    `protocol` (its native prompt and reply format) when it has one. `reference` (the privileged
    task, code and answers) goes to the scripted worker only; the LLM worker never gets it."""
    factory = WORKERS.get(kind)
    if factory is None:
        raise ValueError(f"worker={kind!r}: use one of {', '.join(WORKERS)}")

    def client() -> LLMClient:
        overrides = endpoint_settings(endpoint)
        return LLMClient(EndpointConfig.from_env("worker", **overrides), trace=trace)

    return factory(
        WorkerSetup(
            trace=trace,
            client=client,
            faults=list(faults or []),
            seed=seed,
            protocol=protocol,
            response=dict(response or {}),
            reference=reference,
            task_time_cap_s=dict(endpoint or {}).get("task_time_cap_s"),
            answer_from_output=dict(endpoint or {}).get("answer_from_output"),
        )
    )
