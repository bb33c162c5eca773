"""Worker adapters by name: the one registry `worker=<name>` reads.

    from stateguard.workers.registry import WORKERS, WorkerSetup, register_worker
    register_worker("mine", lambda ctx: MyWorker(ctx.reference))    # then: make eval ARGS='worker=mine'
    worker = WORKERS["scripted"](ctx)                                # eval.components.make_worker does this

A factory gets a `WorkerSetup` and returns a `WorkerAdapter` (`stateguard.worker_contract`). The
privileged task (`reference`: code and answers) is in the context for a worker that replays it,
like the scripted one; a worker standing in for an agent must not read it. `ctx.client()` reads the
STATEGUARD_WORKER_* endpoint on demand, so a worker that never calls it needs no endpoint;
`MODEL_WORKERS` names the registered workers that call a model (their endpoint is checked before
the first task).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stateguard.registry import add
from stateguard.task import Task
from stateguard.trace import Trace
from stateguard.worker_contract import WorkerAdapter
from stateguard.workers.protocol import WorkerProtocol
from stateguard.workers.response import ResponseModel
from stateguard.workers.scripted import FaultModel, ScriptedWorker

if TYPE_CHECKING:
    from stateguard.llm import LLMClient

__all__ = ["MODEL_WORKERS", "WORKERS", "WorkerSetup", "WorkerFactory", "register_worker"]


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker factory may use; built by `eval.components.make_worker` from the config."""

    trace: Trace
    # () -> a client of the STATEGUARD_WORKER_* endpoint with the config's `worker_llm:` call policy.
    client: Callable[[], LLMClient]
    faults: list[Any] = field(default_factory=list)
    seed: int = 0
    protocol: WorkerProtocol | None = None  # the benchmark's native prompt and reply format, if any
    response: Mapping[str, Any] = field(default_factory=dict)  # the `response:` block (ResponseModel)
    reference: Task | None = None  # the privileged task: only for workers that replay it
    task_time_cap_s: float | None = None  # the LLM worker's model time per task (`worker_llm:`)
    answer_from_output: bool | None = None  # `worker_llm.answer_from_output`; None: the worker's default
    compaction: int = 0  # the LLM worker's starting history compaction (0 whole history .. 3 current turn)


WorkerFactory = Callable[[WorkerSetup], WorkerAdapter]


def _scripted(ctx: WorkerSetup) -> WorkerAdapter:
    model = ResponseModel(**{"seed": ctx.seed, **dict(ctx.response)})
    return ScriptedWorker(FaultModel(seed=ctx.seed, faults=list(ctx.faults)), model, reference=ctx.reference)


def _llm(ctx: WorkerSetup) -> WorkerAdapter:
    # Imported here: the LLM worker brings the openai client (about a second of CPU per process),
    # which runs with the scripted worker never use.
    from stateguard.workers.llm_worker import LLMWorker  # noqa: PLC0415

    worker = LLMWorker(
        ctx.client(), protocol=ctx.protocol, task_time_cap_s=ctx.task_time_cap_s, compaction=ctx.compaction
    )
    if ctx.answer_from_output is not None:  # None: the worker's own default
        worker.answer_from_output = ctx.answer_from_output
    return worker


WORKERS: dict[str, WorkerFactory] = {"scripted": _scripted, "llm": _llm}
MODEL_WORKERS: set[str] = {"llm"}


def register_worker(name: str, factory: WorkerFactory, *, calls_model: bool = False) -> None:
    """Add a worker under `name`; a name already taken is an error (remove it from WORKERS first)."""
    add(WORKERS, name, factory, axis="worker", flagged=MODEL_WORKERS, flag=calls_model)
