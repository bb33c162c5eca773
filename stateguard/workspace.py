"""The workspace interfaces, and a small in-process implementation.

`Workspace` is what the harness needs: heavy repair deletes the localized invalid variables,
commit takes a checkpoint, a rollback after an exhausted repair budget restores the last valid
checkpoint, and `run_probe` executes a read-only verification program. `LiveWorkspace` adds what
workers and the rules manager need: run a cell and read the per-cell dataflow.

`DictWorkspace` keeps the namespace in this process, deep-copies it for snapshots, and
copies for a probe only the values it reads (`stateguard.probe_namespace`).
It is NOT a sandbox: unit tests and the built-in demo use it. `stateguard.sandbox.SandboxWorkspace`
implements the same protocols in a separate, limited process.
"""

from __future__ import annotations

import ast
import copy
import io
import json
import re
import sys
import time
import traceback
import types
from collections.abc import Iterable
from contextlib import redirect_stderr, redirect_stdout
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from stateguard.dataflow import CellFacts, CellRecorder, DataflowGraph, cell_dataflow
from stateguard.dataflow.change import content_hash
from stateguard.encodable import Text, encodable, escape_text, escape_tree
from stateguard.probe_namespace import ProbeNamespace
from stateguard.value_version import render_context, version_token


class VariableSummary(BaseModel):
    """Cheap description of one workspace variable."""

    model_config = ConfigDict(frozen=True)
    name: Text
    type: Text
    shape: list[int] | None = None
    dtype: Text | None = None
    head: Text = ""
    content_hash: str = ""

    def value_summary(self) -> ValueSummary:
        """The listing entry as the value a state records for a variable (no head: the listing's
        head is short and the hash already names the content)."""
        return ValueSummary(type=self.type, shape=self.shape, hash=self.content_hash)


class ValueSummary(BaseModel):
    """A value that does not travel as JSON, described instead: what the sandbox's `get_value`
    returns for a DataFrame or any other object (`stateguard.sandbox.values.summary`), and what the
    rules manager records as a state variable's value (`VariableSummary.value_summary`). It lands
    in `VariableRef.value` as a plain dict (`as_value`); readers get it back with `of`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: str = Field(min_length=1)
    shape: list[int] | None = None
    head: str | None = Field(default=None, description="The value's first rows or repr, truncated.")
    hash: str = Field(default="", description="stateguard.dataflow.change.content_hash of the value.")

    def as_value(self) -> dict[str, Any]:
        """The plain dict a state records: the fields that were set, in field order."""
        return self.model_dump(exclude_unset=True)

    @classmethod
    def of(cls, value: Any) -> ValueSummary | None:
        """`value` read back as a summary, or None when it is a plain JSON value (a number, a
        list, a dict of the analysis' own) rather than a summary."""
        if not isinstance(value, dict) or "type" not in value or not ({"head", "hash"} & set(value)):
            return None
        try:
            return cls.model_validate(value)
        except ValidationError:
            return None


class ProbeResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    ok: bool
    stdout: Text = ""
    value: Any = None
    error: Text | None = None

    @field_validator("value")
    @classmethod
    def _encodable_value(cls, value: Any) -> Any:
        return escape_tree(value)


class CellResult(BaseModel):
    """Outcome of running one cell in a live workspace."""

    model_config = ConfigDict(frozen=True)
    cell_id: int
    ok: bool
    # Text: lone surrogates a cell prints are escaped, so a result always serializes (encodable.py).
    stdout: Text = ""
    stderr: Text = ""
    value: Text | None = Field(default=None, description="repr of the last expression, truncated.")
    error: Text | None = Field(default=None, description="'ExceptionType: message' when the cell raised.")
    traceback: Text | None = None
    wall_s: float = 0.0
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    stale_reads: dict[str, list[str]] = Field(
        default_factory=dict, description="Names read that were stale, with the redefined inputs."
    )
    notes: list[Text] = Field(default_factory=list, description="e.g. a restart after the process died.")


def unencodable_code_result(cell_id: int, code: str) -> CellResult:
    """The result of a cell whose text holds a lone surrogate: Python cannot compile it, and the
    parent must not try to parse it (ast.parse raises UnicodeEncodeError)."""
    at = next(i for i, c in enumerate(code) if not encodable(c))
    return CellResult(
        cell_id=cell_id,
        ok=False,
        error=f"SyntaxError: the cell's code cannot be encoded as UTF-8 (a lone surrogate "
        f"{escape_text(code[at])} at character {at}); write the character as an escape sequence instead",
    )


@runtime_checkable
class Workspace(Protocol):
    def list_variables(self) -> list[VariableSummary]: ...
    def delete_variables(self, names: list[str]) -> list[str]: ...
    # copy_connections: also copy database connections (a sandbox copies a DuckDB connection's
    # tables, `sandbox/duckdb_copy.py`), so that a restore rewinds them; off for the harness's own
    # checkpoints, on for a worker's save point before a turn it will redo.
    def snapshot(self, checkpoint_id: str, *, copy_connections: bool = False) -> None: ...
    def restore(self, checkpoint_id: str) -> None: ...
    def drop_checkpoint(self, checkpoint_id: str) -> None: ...
    def has_checkpoint(self, checkpoint_id: str) -> bool: ...
    def run_probe(self, code: str) -> ProbeResult: ...


@runtime_checkable
class LiveWorkspace(Workspace, Protocol):
    dataflow: DataflowGraph
    # Why values may no longer be what the cells made them (e.g. a kernel restart that could not
    # rebuild a live object); empty while the workspace is healthy. The rollout reports them.
    degraded_reasons: list[str]

    def run_cell(self, code: str) -> CellResult: ...
    def get_value(self, name: str) -> Any: ...
    def close(self) -> None: ...


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _value_repr(value: Any, limit: int = 2000) -> str:
    """The shown value of a cell; default object reprs lose their memory address (`<X object at
    0x…>`), which says nothing to an analyst and would make identical runs differ."""
    text = _ADDRESS.sub(" at 0x…>", repr(value))
    return text if len(text) <= limit else text[: limit - 20] + f"... [{len(text)} chars]"


def split_last_expression(code: str) -> tuple[str, str | None]:
    """(body, last expression) like a notebook: the value of a trailing expression is shown."""
    tree = ast.parse(code)
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):
        return code, None
    expression = ast.get_source_segment(code, last.value) or ast.unparse(last.value)
    if last.col_offset == 0:  # keep the body's own text so tracebacks point at the user's lines
        return "".join(code.splitlines(keepends=True)[: last.lineno - 1]), expression
    tree.body.pop()
    return ast.unparse(tree), expression


def cell_names(code: str, facts: CellFacts) -> tuple[list[str], list[str]]:
    """(variables read, variables written) for a `CellResult`: what the cell's statements that ran
    read and wrote, or the names in its text when it did not compile."""
    if not facts.traced:
        flow = cell_dataflow(code)
        return flow.reads, flow.writes
    return (
        [n for n in facts.roots_read() if n.isidentifier()],
        [n for n in facts.roots_written() if n.isidentifier()],
    )


def shape_of(value: Any) -> list[int] | None:
    shape = getattr(value, "shape", None)
    return [int(n) for n in shape] if isinstance(shape, tuple) else None


def head_of(value: Any, limit: int) -> str:
    """A bounded repr: a pandas object's first rows, and never an exception (a broken __repr__
    must not break a listing)."""
    pd = sys.modules.get("pandas")  # without pandas loaded nothing here is a pandas object
    try:
        if pd is not None and isinstance(value, pd.DataFrame | pd.Series):
            text = repr(value.head())
        else:
            text = repr(value)
    except Exception as exc:
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 20] + f"... [{len(text)} chars]"


def summarize(name: str, value: Any, known_hash: str | None = None) -> VariableSummary:
    """The one value summary of a workspace listing: `DictWorkspace` calls it here and the sandbox
    kernel in its process (`stateguard.sandbox.kernel`), so both workspaces describe a value alike.
    `known_hash`: the value's `content_hash`, when the caller has just computed it."""
    dtype = getattr(value, "dtype", None)
    return VariableSummary(
        name=name,
        type=type(value).__name__,
        shape=shape_of(value),
        dtype=None if dtype is None or isinstance(value, types.ModuleType) else str(dtype),
        head=head_of(value, 200),
        content_hash=content_hash(value)
        if known_hash is None
        else known_hash,  # cloudpickle covers cell classes
    )


_UNBOUND = object()
_SCALARS = (int, float, bool, complex, type(None))


class SummaryCache:
    """Summaries of a namespace's variables, reusing a variable's previous summary while it holds
    the same object with the same version token (`stateguard.value_version`): most values are
    untouched by a cell, and rendering a frame's head and hashing it cost milliseconds each
    (a quarter of the synthesis CPU; most of a sandbox listing of many frames). Values without a
    token are summarized every time. `DictWorkspace` and the sandbox kernel both list through it."""

    def __init__(self) -> None:
        # Per variable: (value, version token, objects the token names, summary). Holding the value
        # keeps its id from being reused by another object while the entry lives.
        self._entries: dict[str, tuple[Any, tuple[Any, ...], list[Any], VariableSummary]] = {}
        # Content hashes computed since the last listing (`hashes`), as (value, token, objects, hash):
        # the next summary of the same unchanged value reuses its hash instead of hashing again.
        self._hashed: dict[str, tuple[Any, tuple[Any, ...], list[Any], str]] = {}

    def hashes(self, items: Iterable[tuple[str, Any]]) -> dict[str, str]:
        """`content_hash` of each value (the sandbox kernel's replay check wants those of the values
        a cell wrote, and the listing that follows wants them again)."""
        context: tuple[Any, ...] | None = None
        out = {}
        for name, value in items:
            if type(value) in _SCALARS:  # hashing one costs less than the token's render context
                out[name] = content_hash(value)
                continue
            if context is None:
                context = render_context()  # tens of us with pandas loaded: once, and only if needed
            version = version_token(value, context)
            cached = self._entries.get(name)
            if version is not None and cached is not None and cached[0] is value and cached[1] == version[0]:
                out[name] = cached[3].content_hash
                continue
            digest = out[name] = content_hash(value)
            if version is not None:
                self._hashed[name] = (value, version[0], version[1], digest)
        return out

    def listing(self, items: Iterable[tuple[str, Any]]) -> list[VariableSummary]:
        """One summary per (name, value), in the order given; entries of names not given are dropped."""
        context = render_context()
        kept: dict[str, tuple[Any, tuple[Any, ...], list[Any], VariableSummary]] = {}
        out = []
        for name, value in items:
            version = version_token(value, context)
            cached = self._entries.get(name)
            if version is not None and cached is not None and cached[0] is value and cached[1] == version[0]:
                kept[name] = cached
                out.append(cached[3])
                continue
            hashed = self._hashed.get(name)
            known = (
                hashed[3]
                if version is not None
                and hashed is not None
                and hashed[0] is value
                and hashed[1] == version[0]
                else None
            )
            summary = summarize(name, value, known)
            if version is not None:
                kept[name] = (value, version[0], version[1], summary)
            out.append(summary)
        self._entries, self._hashed = kept, {}
        return out

    def known_hash(self, name: str, value: Any) -> str | None:
        """The `content_hash` of `value` under `name` when this cache holds one for the same object
        with the same version token (the test by which a listing reuses a summary), else None. A
        value read for the manager (`get_value` of a frame) is usually one the last cell or listing
        hashed already."""
        listed, hashed = self._entries.get(name), self._hashed.get(name)
        known = [
            (entry[1], digest)
            for entry, digest in (
                (listed, listed[3].content_hash if listed is not None else ""),
                (hashed, hashed[3] if hashed is not None else ""),
            )
            if entry is not None and entry[0] is value
        ]
        if not known:
            return None
        version = version_token(value, render_context())
        if version is None:
            return None
        return next((digest for token, digest in known if token == version[0]), None)

    def forget(self, names: Iterable[str]) -> None:
        for name in names:
            self._entries.pop(name, None)
            self._hashed.pop(name, None)

    def prune(self, namespace: dict[str, Any]) -> None:
        """Drop the entries of values the namespace no longer binds, so that the cache never keeps
        a value alive that a cell deleted or replaced (under a memory cap that matters)."""
        self._entries = {k: e for k, e in self._entries.items() if namespace.get(k, _UNBOUND) is e[0]}
        self._hashed = {k: e for k, e in self._hashed.items() if namespace.get(k, _UNBOUND) is e[0]}

    def clear(self) -> None:
        self._entries, self._hashed = {}, {}


class DictWorkspace:
    """In-process namespace with deep-copy checkpoints (for tests and the demo; no isolation)."""

    # A probe runs on a deep copy of the namespace, but objects that cannot be copied (a database
    # connection) are shared: a probe that writes through one changes the live workspace.
    probes_share_resources = True

    def __init__(self, namespace: dict[str, Any] | None = None):
        self.namespace: dict[str, Any] = dict(namespace or {})
        self._checkpoints: dict[str, dict[str, Any]] = {}
        self.dataflow = DataflowGraph()
        self.recorder = (
            CellRecorder()
        )  # statement-level dataflow with run-time facts, like the sandbox kernel
        self.degraded_reasons: list[str] = []  # nothing in-process can be lost behind its back
        self._cells = 0
        self._listing: list[VariableSummary] | None = None  # cached until the namespace may change
        self._summaries = SummaryCache()  # a variable's summary, reused while its value is unchanged

    def run(self, code: str) -> None:
        """Run code without recording a cell (setup, tests)."""
        self._listing = None
        exec(compile(code, "<cell>", "exec"), self.namespace)

    def run_cell(self, code: str) -> CellResult:
        self._listing = None
        self._cells += 1
        cell_id = self._cells
        if not encodable(code):
            return unencodable_code_result(cell_id, code)
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        value = error = tb = None
        facts = CellFacts(traced=False)
        failed = True
        try:
            prepared = self.recorder.start(code, self.namespace)  # a SyntaxError is the cell's error
            with redirect_stdout(out), redirect_stderr(err):
                exec(prepared.body, self.namespace)
                if prepared.last is not None:
                    result = eval(prepared.last, self.namespace)
                    value = None if result is None else _value_repr(result)
            failed = False
        except Exception as exc:
            error, tb = f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=5)
        finally:
            facts = self.recorder.finish(failed=failed)
        wall = time.perf_counter() - start
        stale = self.dataflow.apply(cell_id, facts)
        reads, writes = cell_names(code, facts)
        return CellResult(
            cell_id=cell_id,
            ok=error is None,
            stdout=out.getvalue(),
            stderr=err.getvalue(),
            value=value,
            error=error,
            traceback=tb,
            wall_s=wall,
            reads=reads,
            writes=writes,
            stale_reads=stale,
        )

    def get_value(self, name: str) -> Any:
        return self.namespace[name]

    def close(self) -> None:
        self._checkpoints.clear()

    def list_variables(self) -> list[VariableSummary]:
        # Summaries hash and print every value; a manager asks many times between two cells.
        if self._listing is None:
            self._listing = self._summaries.listing(
                (k, v) for k, v in self.namespace.items() if not k.startswith("__")
            )
        return list(self._listing)

    def delete_variables(self, names: list[str]) -> list[str]:
        self._listing = None
        self._summaries.forget(names)
        removed = [n for n in dict.fromkeys(names) if n in self.namespace]
        for name in removed:
            del self.namespace[name]
        self.dataflow.forget(removed)
        return removed

    def snapshot(self, checkpoint_id: str, *, copy_connections: bool = False) -> None:
        """Deep copy of every value; modules, and objects that cannot be copied (a connection, whatever
        `copy_connections` says), are kept by reference."""
        self._checkpoints[checkpoint_id] = _copy_namespace(self.namespace)

    def restore(self, checkpoint_id: str) -> None:
        if checkpoint_id not in self._checkpoints:
            raise KeyError(f"no workspace checkpoint {checkpoint_id!r}")
        self._listing = None
        self._summaries.clear()  # every value is a fresh copy: no identity matches
        self.namespace = _copy_namespace(self._checkpoints[checkpoint_id])

    def drop_checkpoint(self, checkpoint_id: str) -> None:
        self._checkpoints.pop(checkpoint_id, None)

    def has_checkpoint(self, checkpoint_id: str) -> bool:
        return checkpoint_id in self._checkpoints

    def run_probe(self, code: str) -> ProbeResult:
        scratch = ProbeNamespace(self.namespace)  # copies a value when the probe first reads it
        out = io.StringIO()
        try:
            with redirect_stdout(out):
                exec(compile(code, "<probe>", "exec"), scratch)
        except Exception as exc:
            return ProbeResult(ok=False, stdout=out.getvalue(), error=f"{type(exc).__name__}: {exc}")
        return ProbeResult(ok=True, stdout=out.getvalue(), value=_json_safe(scratch.get("result")))


def _json_safe(value: Any) -> Any:
    """A probe's `result` as JSON values, as the sandboxed kernel replies it: numpy scalars become
    numbers (`np.int64(3)` -> 3), anything else JSON cannot hold its repr."""
    try:
        return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else repr(o)))
    except (TypeError, ValueError):
        return repr(value)


def _copy_namespace(namespace: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in namespace.items():
        if key == "__builtins__" or isinstance(value, types.ModuleType):
            out[key] = value
            continue
        try:
            out[key] = copy.deepcopy(value)
        except Exception:  # e.g. generators, locks: shared, not copied
            out[key] = value
    return out
