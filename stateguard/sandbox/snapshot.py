"""Kernel-side checkpoints: the namespace as one cloudpickle payload (plus its parts), and back.

What a checkpoint keeps:
- every value cloudpickle can serialize, in ONE dump so that shared references survive
  (`a = b = []` restores as one list, `df2 = df` as one frame);
- functions and classes defined in cells (cloudpickle serializes them by value, closures
  included); after a restore their globals ARE the restored namespace, as before;
- modules, by name; they are re-imported on restore (`import numpy as np` -> "numpy");
- when asked (`copy_connections`), a DuckDB connection bound to a top-level name, as a copy of its
  tables and views, when that copy rebuilds it exactly (`duckdb_copy.py` says when); a restore
  gives a new connection.

What it cannot keep, reported per name in `skipped`: open files, generators, sockets, locks,
threads, database connections not copied, and any object whose pickling raises. Such a *live resource*
is carried over from the current namespace on restore when it still exists there under the
same name (a DuckDB connection that could not be copied keeps working after a rollback; its
contents are not rolled back), and is absent otherwise. State outside the namespace (files in scratch, module-level settings such as
`pd.options`, random generator state of the numpy module) is not part of a checkpoint either.

Large arrays may travel as *parts* (`parts.py`): pickled once per rollout into a part the parent
stores beside the checkpoints, referred to by content key from each checkpoint's pickle. A dump
asked for with `held=None` (a replay's retaken snapshot) has no parts: one self-contained payload.

The bytes produced here are only ever unpickled in a kernel process, never in the parent.
"""

from __future__ import annotations

import builtins
import importlib
import io
import pickle
import types
from collections.abc import Iterable
from typing import Any

import cloudpickle

from stateguard.sandbox.duckdb_copy import ConnectionCopy, connection_names, copy_connection
from stateguard.sandbox.parts import Parts, is_leaf, loading

_ANCHOR = "__stateguard_anchor__"


def _user_items(namespace: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in namespace.items() if not k.startswith("__")}


class _PartPickler(cloudpickle.Pickler):
    """cloudpickle, with each large leaf (`parts.Parts.reduce`) reduced to its part."""

    def __init__(self, file: Any, parts: Parts):
        super().__init__(file, protocol=5)
        self._parts = parts

    def reducer_override(self, obj: Any) -> Any:
        reduced = self._parts.reduce(obj)
        return reduced if reduced is not None else super().reducer_override(obj)


def _dump(
    values: dict[str, Any],
    modules: dict[str, str],
    namespace: dict[str, Any],
    skipped: list[str] | None = None,
    parts: Parts | None = None,
) -> memoryview:
    # A function whose globals are the namespace: after unpickling, cloudpickle gives all the
    # cell-defined functions one shared globals dict, and this anchor lets us find it.
    anchor = types.FunctionType(compile("None", "<anchor>", "eval"), namespace)
    buffer = io.BytesIO()
    body = {"values": values, "modules": modules, "anchor": anchor, "skipped": sorted(skipped or [])}
    if parts is None:
        cloudpickle.Pickler(buffer, protocol=5).dump(body)
    else:
        parts.clear()
        _PartPickler(buffer, parts).dump(body)
    return buffer.getbuffer()  # no copy: a checkpoint of a large namespace must not be held twice


def dump_namespace(
    namespace: dict[str, Any],
    held: dict[str, int] | None = None,
    suspects: Iterable[str] = (),
    *,
    copy_connections: bool = False,
) -> tuple[memoryview, list[str], dict[str, str], Parts | None]:
    """(payload, saved names, skipped name -> reason, parts). With `held` (part key -> size, the parts
    the parent holds already) large leaves become parts; `parts.new` are those to send. `suspects`:
    names that may not pickle (the last checkpoint's skipped ones), tested on their own first.
    `copy_connections`: a top-level DuckDB connection is saved as a copy (`duckdb_copy.py`)."""
    parts = None if held is None else Parts(held)
    values: dict[str, Any] = {}
    modules: dict[str, str] = {}
    for name, value in _user_items(namespace).items():
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
        else:
            values[name] = value
    skipped: dict[str, str] = {}
    if copy_connections:
        _copy_connections(values, skipped)
    # The names the last checkpoint had to skip are tested on their own first: a live resource (a
    # database connection) stays in the namespace for the whole rollout, and a failed dump of the
    # whole namespace would cost every checkpoint a second pass over every value.
    for name in suspects:
        if name in values and (why := _unpicklable(values[name])) is not None:
            skipped[name] = why
            del values[name]
    try:
        payload = _dump(values, modules, namespace, list(skipped), parts)
    except Exception:
        # Find the culprits one by one, then dump the rest together (keeps shared references).
        for name, value in list(values.items()):
            if (why := _unpicklable(value)) is not None:
                skipped[name] = why
                del values[name]
        payload = _dump(values, modules, namespace, list(skipped), parts)
    return payload, sorted([*values, *modules]), skipped, parts


def _copy_connections(values: dict[str, Any], skipped: dict[str, str]) -> None:
    """Replace the top-level DuckDB connection by its copy (every name bound to it shares one copy),
    or move it to `skipped` with the reason it cannot be copied."""
    bound = connection_names(values)
    if not bound:
        return
    live = {id(con): con for con in bound.values()}
    if len(live) == 1:
        copy, why = copy_connection(next(iter(live.values())))
    else:
        copy, why = None, f"{len(live)} connections (they may share one database, copies would not)"
    for name in bound:
        if copy is not None:
            values[name] = copy
        else:
            skipped[name] = f"DuckDB connection not copied: {why}"[:300]
            del values[name]


class _TestPickler(cloudpickle.Pickler):
    """cloudpickle with each large leaf left out (a numeric or Arrow array always pickles): only
    whether the rest of a value pickles is tested, and nothing large is copied for it."""

    def reducer_override(self, obj: Any) -> Any:
        return (str, ()) if is_leaf(obj) else super().reducer_override(obj)


def _unpicklable(value: Any) -> str | None:
    """Why `value` cannot be pickled (None: it can)."""
    try:
        _TestPickler(io.BytesIO(), protocol=5).dump(value)
    except Exception as exc:
        return f"{type(value).__name__} cannot be pickled ({type(exc).__name__}: {exc})"[:300]
    return None


def load_namespace(
    payload: bytes | bytearray,
    current: dict[str, Any] | None = None,
    parts: dict[str, bytearray] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """(new namespace, module name -> reason for modules that could not be re-imported).

    Names the checkpoint had to skip are taken from `current` (the live namespace) when there.
    `parts`: key -> bytes of the parts the checkpoint refers to (a missing one fails the load).
    """
    with loading(parts or {}):
        data = pickle.loads(payload)
    namespace: dict[str, Any] = data["anchor"].__globals__
    # cloudpickle may have copied helper entries (e.g. __name__) into the shared globals; keep
    # those, drop nothing else, and lay the saved values over it.
    namespace.update(data["values"])
    failed: dict[str, str] = {}
    reopened: dict[int, Any] = {}
    for name, value in data["values"].items():
        if isinstance(value, ConnectionCopy):
            try:
                if id(value) not in reopened:
                    reopened[id(value)] = value.reopen()
                namespace[name] = reopened[id(value)]
            except Exception as exc:  # a copy that does not load: the live connection, if any, stays
                failed[name] = f"DuckDB connection could not be rebuilt ({type(exc).__name__}: {exc})"[:300]
                if current is not None and name in current:
                    namespace[name] = current[name]
                else:
                    del namespace[name]
    for name in data.get("skipped", []):
        if current is not None and name in current:
            namespace[name] = current[name]
    namespace["__builtins__"] = builtins
    namespace.setdefault("__name__", "__main__")
    for name, module_name in data["modules"].items():
        try:
            namespace[name] = importlib.import_module(module_name)
        except Exception as exc:  # a module that was importable then may be refused now
            failed[name] = f"module {module_name} could not be re-imported ({type(exc).__name__}: {exc})"
    return namespace, failed


def differing_names(
    payload: bytes | bytearray,
    namespace: dict[str, Any],
    hash_of: Any,
    parts: dict[str, bytearray] | None = None,
) -> list[str]:
    """Names whose value in the checkpoint differs from the namespace's (used to check a replay).

    Data only: functions, classes and modules are skipped (their pickled bytes are not stable
    across processes), and so is any value whose hash cannot be computed on either side.
    """
    saved, _ = load_namespace(payload, None, parts)
    out = []
    for name, value in _user_items(saved).items():
        if isinstance(value, types.ModuleType | type) or callable(value):
            continue
        if name not in namespace:
            out.append(name)
            continue
        want, got = hash_of(value), hash_of(namespace[name])
        if want and got and want != got:
            out.append(name)
    return sorted(out)
