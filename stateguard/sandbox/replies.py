"""The schema of every reply the kernel sends, checked by the parent before it uses one.

The kernel runs untrusted code, so a reply is untrusted data: a cell can forge the reply of the
request it runs in (`protocol.py`), and a kernel whose interpreter a cell has damaged can send
anything. `validate(op, raw)` turns the JSON object into the op's model or raises
`MalformedReply`, which `KernelProcess.request` turns into a kernel fault (the kernel is killed
and the workspace recovered): the parent never indexes, converts or trusts a field it has not
checked here. Beyond types, the checks are the ones the parent's own code relies on (dataflow
paths are non-empty; names are identifiers' strings; counts are non-negative).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

from stateguard.dataflow import CellFacts
from stateguard.workspace import VariableSummary

MAX_ERROR_CHARS = 300


class MalformedReply(Exception):
    """A reply that does not match its op's schema."""


class _Reply(BaseModel):
    # extra="ignore": the kernel echoes the nonce and may add fields; only declared ones are used.
    model_config = ConfigDict(extra="ignore", frozen=True)
    ok: StrictBool  # "yes" is not a yes: a forged reply is refused, not coerced
    error: str | None = None


class ReadyReply(_Reply):
    ready: StrictBool
    pid: int = 0
    notes: list[str] = []


class RunReply(_Reply):
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    traceback: str | None = None
    wall_s: float = 0.0
    flow: CellFacts = CellFacts(traced=False)
    names: list[str] = []
    threads: dict[str, list[str]] = {}
    hashes: dict[str, str] = {}  # content hashes of the data values the cell wrote (replay on)

    @model_validator(mode="after")
    def _paths_are_not_empty(self) -> RunReply:
        for unit in self.flow.units:
            paths = [r.path for r in unit.reads] + [w.path for w in unit.writes]
            paths += [d.path for w in unit.writes for d in w.deps]
            for path in paths:
                if not path or not all(path):
                    raise ValueError(f"unit {unit.unit}: a dataflow path is empty")
        return self


class GetReply(_Reply):
    value: Any = None
    missing: StrictBool = False


class ListReply(_Reply):
    variables: list[VariableSummary] = []


class DeleteReply(_Reply):
    removed: list[str] = []
    names: list[str] = []


class SnapshotReply(_Reply):
    """The JSON part of a snapshot (the bytes follow as a blob frame of exactly `size` bytes)."""

    saved: list[str] = []
    skipped: dict[str, str] = {}
    size: int = Field(default=0, ge=0)


class RestoreReply(_Reply):
    names: list[str] = []
    failed: dict[str, str] = {}


class VerifyReply(_Reply):
    differ: list[str] = []


class ProbeReply(_Reply):
    stdout: str = ""
    value: Any = None


REPLIES: dict[str, type[_Reply]] = {
    "run": RunReply,
    "get": GetReply,
    "list": ListReply,
    "delete": DeleteReply,
    "snapshot": SnapshotReply,
    "restore": RestoreReply,
    "verify": VerifyReply,
    "probe": ProbeReply,
}


def validate(op: str | None, raw: dict[str, Any]) -> Any:
    """`raw` as the reply model of `op` (None: the start-up request, answered by `ReadyReply`)."""
    model = REPLIES[op] if op is not None else ReadyReply
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the reply"
        raise MalformedReply(
            f"a malformed {op or 'start-up'} reply ({exc.error_count()} problem(s); {where}: {first['msg']})"[
                :MAX_ERROR_CHARS
            ]
        ) from None
