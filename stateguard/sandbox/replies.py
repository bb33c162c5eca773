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

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

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
    probe_child: StrictInt | None = None  # the waiting probe child the kernel forked after the cell

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


PART_KEY = r"^[0-9a-f]{32}$"  # a part's content key (XXH3-128, `parts.py`): also its file name


class SnapshotReply(_Reply):
    """The JSON part of a snapshot: the bytes follow as a blob frame of exactly `size` bytes, then
    one blob per new part, of the sizes in `parts` (key, size) and in that order. `refs`: every part
    key the checkpoint refers to (the new ones and ones the parent held)."""

    saved: list[str] = []
    skipped: dict[str, str] = {}
    size: int = Field(default=0, ge=0)
    parts: list[tuple[str, int]] = []
    refs: list[str] = []

    @model_validator(mode="after")
    def _parts_are_well_formed(self) -> SnapshotReply:
        keys = [key for key, _ in self.parts]
        if len(set(keys)) != len(keys) or not set(keys) <= set(self.refs):
            raise ValueError("each new part must be sent once and be referred to")
        if any(size < 0 for _, size in self.parts):
            raise ValueError("a part of negative size")
        for key in self.refs:
            if not re.fullmatch(PART_KEY, key):
                raise ValueError(f"a part key that is not 32 hex digits: {key[:40]!r}")
        return self


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


class ListingMemo:
    """The entries of the last variable listing, raw and validated, per name. A listing is asked
    for after almost every cell and most entries come back unchanged: an entry equal, field by
    field, to one that passed validation is that entry's validated summary, so only new or
    changed entries are validated again (escaping every text field was most of the cost)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[dict[str, Any], VariableSummary]] = {}

    def validate(self, raw: dict[str, Any]) -> ListReply:
        entries = raw.get("variables")
        if not isinstance(entries, list):
            return ListReply.model_validate(raw)  # the schema's own error (or the default)
        rest = ListReply.model_validate({k: v for k, v in raw.items() if k != "variables"})
        kept: dict[str, tuple[dict[str, Any], VariableSummary]] = {}
        out = []
        for i, entry in enumerate(entries):
            name = entry.get("name") if isinstance(entry, dict) else None
            known = self._entries.get(name) if isinstance(name, str) else None
            # (`==` also equates 1, 1.0 and True: the entry then gets the validated value, of the right type)
            if known is not None and known[0] == entry:
                summary = known[1]
            else:
                try:
                    summary = VariableSummary.model_validate(entry)
                except ValidationError as exc:
                    raise _malformed("list", exc, prefix=f"variables.{i}") from None
            kept[summary.name] = (entry, summary)
            out.append(summary)
        self._entries = kept
        return rest.model_copy(update={"variables": out})


def _malformed(op: str | None, exc: ValidationError, prefix: str = "") -> MalformedReply:
    first = exc.errors()[0]
    where = ".".join([prefix] * bool(prefix) + [str(p) for p in first["loc"]]) or "the reply"
    return MalformedReply(
        f"a malformed {op or 'start-up'} reply ({exc.error_count()} problem(s); {where}: {first['msg']})"[
            :MAX_ERROR_CHARS
        ]
    )


def validate(op: str | None, raw: dict[str, Any], listing: ListingMemo | None = None) -> Any:
    """`raw` as the reply model of `op` (None: the start-up request, answered by `ReadyReply`);
    a listing is checked against `listing`'s memo when one is given."""
    model = REPLIES[op] if op is not None else ReadyReply
    try:
        if op == "list" and listing is not None:
            return listing.validate(raw)
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _malformed(op, exc) from None
