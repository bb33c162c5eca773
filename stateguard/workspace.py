"""The workspace interface the harness needs, and a small in-process implementation.

The live analysis namespace belongs to the worker; the harness touches it only through this
interface: heavy repair deletes the localized invalid variables, commit takes a checkpoint, and
a rollback after an exhausted repair budget restores the last valid checkpoint. `run_probe`
executes a read-only verification program.

`DictWorkspace` keeps the namespace in this process and copies it for snapshots and probes. It
is NOT a sandbox: it is what unit tests and the built-in demo use. The sandboxed, separate-process
workspace implements the same protocol.
"""

from __future__ import annotations

import copy
import hashlib
import io
import pickle
from contextlib import redirect_stdout
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class VariableSummary(BaseModel):
    """Cheap description of one workspace variable."""

    model_config = ConfigDict(frozen=True)
    name: str
    type: str
    shape: list[int] | None = None
    dtype: str | None = None
    head: str = ""
    content_hash: str = ""


class ProbeResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    ok: bool
    stdout: str = ""
    value: Any = None
    error: str | None = None


@runtime_checkable
class Workspace(Protocol):
    def list_variables(self) -> list[VariableSummary]: ...
    def delete_variables(self, names: list[str]) -> list[str]: ...
    def snapshot(self, checkpoint_id: str) -> None: ...
    def restore(self, checkpoint_id: str) -> None: ...
    def drop_checkpoint(self, checkpoint_id: str) -> None: ...
    def has_checkpoint(self, checkpoint_id: str) -> bool: ...
    def run_probe(self, code: str) -> ProbeResult: ...


def summarize(name: str, value: Any) -> VariableSummary:
    shape = getattr(value, "shape", None)
    try:
        digest = hashlib.sha256(pickle.dumps(value)).hexdigest()[:16]
    except Exception:  # unpicklable objects still get a summary
        digest = ""
    return VariableSummary(
        name=name,
        type=type(value).__name__,
        shape=list(shape) if isinstance(shape, tuple) else None,
        dtype=str(getattr(value, "dtype", "")) or None,
        head=repr(value)[:200],
        content_hash=digest,
    )


class DictWorkspace:
    """In-process namespace with deep-copy checkpoints (for tests and the demo; no isolation)."""

    def __init__(self, namespace: dict[str, Any] | None = None):
        self.namespace: dict[str, Any] = dict(namespace or {})
        self._checkpoints: dict[str, dict[str, Any]] = {}

    def run(self, code: str) -> None:
        exec(compile(code, "<cell>", "exec"), self.namespace)

    def list_variables(self) -> list[VariableSummary]:
        return [summarize(k, v) for k, v in self.namespace.items() if not k.startswith("__")]

    def delete_variables(self, names: list[str]) -> list[str]:
        removed = [n for n in names if n in self.namespace]
        for name in removed:
            del self.namespace[name]
        return removed

    def snapshot(self, checkpoint_id: str) -> None:
        self._checkpoints[checkpoint_id] = copy.deepcopy(
            {k: v for k, v in self.namespace.items() if k != "__builtins__"}
        )

    def restore(self, checkpoint_id: str) -> None:
        if checkpoint_id not in self._checkpoints:
            raise KeyError(f"no workspace checkpoint {checkpoint_id!r}")
        self.namespace = copy.deepcopy(self._checkpoints[checkpoint_id])

    def drop_checkpoint(self, checkpoint_id: str) -> None:
        self._checkpoints.pop(checkpoint_id, None)

    def has_checkpoint(self, checkpoint_id: str) -> bool:
        return checkpoint_id in self._checkpoints

    def run_probe(self, code: str) -> ProbeResult:
        scratch = copy.deepcopy({k: v for k, v in self.namespace.items() if k != "__builtins__"})
        out = io.StringIO()
        try:
            with redirect_stdout(out):
                exec(compile(code, "<probe>", "exec"), scratch)
        except Exception as exc:
            return ProbeResult(ok=False, stdout=out.getvalue(), error=f"{type(exc).__name__}: {exc}")
        return ProbeResult(ok=True, stdout=out.getvalue(), value=scratch.get("result"))
