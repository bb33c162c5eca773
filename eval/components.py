"""The parts an evaluation arm is built from: worker, manager, workspace, flow (shared by the
runner and the demo).

    worker = make_worker("scripted", faults=[...], seed=0, trace=calls)
    manager = make_manager("rules", trace=calls)            # None for the baseline arm
    ws = make_workspace("sandbox", data_dir, arm_dir, sandbox={"isolation": "bwrap"})
    check_workspace("sandbox", {"isolation": "process"})   # at start-up: refuses what cannot run here

LLM-backed parts read their endpoint from the environment (`STATEGUARD_WORKER_*`,
`STATEGUARD_MANAGER_*`; see `stateguard.llm.endpoints`), so a missing endpoint fails with the
variable to set before any task starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stateguard.llm import EndpointConfig, LLMClient
from stateguard.policies.base import ManagerPolicy
from stateguard.policies.hierarchical import HierarchicalManager
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.observer import ObserverManager
from stateguard.policies.rules import RulesManager
from stateguard.trace import Trace
from stateguard.verification.llm_extract import LLMExtractor
from stateguard.verification.verifier import SemanticConfig, SemanticVerifier
from stateguard.worker import WorkerAdapter
from stateguard.workers import FaultModel, ResponseModel, ScriptedWorker
from stateguard.workers.llm_worker import LLMWorker, WorkerProtocol
from stateguard.workspace import DictWorkspace, LiveWorkspace

__all__ = ["MANAGERS", "WORKERS", "WORKSPACES", "check_workspace", "make_manager", "make_worker", "make_workspace"]

MANAGERS = ("rules", "llm", "hierarchical", "observer", "freeform")
WORKERS = ("scripted", "llm")
WORKSPACES = ("sandbox", "dict")


def _limits(sandbox: Mapping[str, Any] | None) -> Any:
    from stateguard.sandbox import SandboxLimits

    try:
        return SandboxLimits(**dict(sandbox or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"sandbox.{field}: {first['msg']} (the fields are those of stateguard.sandbox.SandboxLimits)") from None


def check_workspace(kind: str, sandbox: Mapping[str, Any] | None = None) -> None:
    """Start-up check: an unknown workspace, bad `sandbox.*` settings, or `sandbox.isolation=bwrap`
    where bubblewrap does not work are errors before any task runs (the last names its two fixes)."""
    if kind not in WORKSPACES:
        raise ValueError(f"workspace={kind!r}: use one of {', '.join(WORKSPACES)}")
    if kind == "sandbox":
        from stateguard.sandbox import check_isolation

        check_isolation(_limits(sandbox).isolation)


def make_workspace(kind: str, data_dir: Path, arm_dir: Path, sandbox: Mapping[str, Any] | None = None) -> LiveWorkspace:
    """`sandbox`: a separate kernel process in a bubblewrap sandbox that sees only `data_dir` (settings:
    `sandbox`, the fields of `SandboxLimits`); `dict`: in-process, no isolation."""
    if kind == "dict":
        return DictWorkspace()
    if kind == "sandbox":
        from stateguard.sandbox import SandboxWorkspace  # the separate-process kernel

        return SandboxWorkspace(task_data_dir=data_dir, scratch_dir=arm_dir / "scratch",
                                checkpoint_dir=arm_dir / "checkpoints", limits=_limits(sandbox))  # fmt: skip
    raise ValueError(f"workspace={kind!r}: use one of {', '.join(WORKSPACES)}")


def make_manager(kind: str, *, trace: Trace, context_budget_tokens: int = 40960,
                 semantic: Mapping[str, Any] | None = None) -> ManagerPolicy:  # fmt: skip
    """The manager policy; the LLM-backed ones use the endpoint from STATEGUARD_MANAGER_* variables.
    `semantic` configures the rules tier's semantic verification (`SemanticConfig`; enabled: false
    switches it off)."""
    config = SemanticConfig.model_validate(dict(semantic or {}))
    extractor = LLMExtractor(LLMClient(EndpointConfig.from_env("manager"), trace=trace)) if config.extractor == "llm" else None
    verifier = SemanticVerifier(config, extractor=extractor) if config.enabled else None
    if kind == "rules":
        return RulesManager(semantic=verifier)
    if kind not in MANAGERS:
        raise ValueError(f"manager={kind!r}: use one of {', '.join(MANAGERS)}")
    client = LLMClient(EndpointConfig.from_env("manager"), trace=trace)
    if kind == "observer":
        return ObserverManager(client)
    llm = LLMManager(client, variant="freeform" if kind == "freeform" else "stateguard",
                     context_budget_tokens=context_budget_tokens)  # fmt: skip
    return HierarchicalManager(RulesManager(semantic=verifier), llm) if kind == "hierarchical" else llm


def make_worker(kind: str, *, trace: Trace, faults: list[Any] | None = None, seed: int = 0,
                protocol: WorkerProtocol | None = None, response: Mapping[str, Any] | None = None) -> WorkerAdapter:  # fmt: skip
    """`scripted`: replays reference code under the given faults and answers repair hints by the
    `response` model (`stateguard.workers.response`: identify, p_flip); `llm`: STATEGUARD_WORKER_*
    endpoint, speaking the benchmark's `protocol` (its native prompt and reply format) when it has one."""
    if kind == "scripted":
        model = ResponseModel(**{"seed": seed, **dict(response or {})})
        return ScriptedWorker(FaultModel(seed=seed, faults=list(faults or [])), model)
    if kind == "llm":
        return LLMWorker(LLMClient(EndpointConfig.from_env("worker"), trace=trace), protocol=protocol)
    raise ValueError(f"worker={kind!r}: use one of {', '.join(WORKERS)}")
