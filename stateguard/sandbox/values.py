"""Kernel-side views of workspace values: content hashes and JSON for the parent.

`content_hash` detects mutations the static dataflow cannot see (a helper that mutates its
argument, `np.random.shuffle(arr)`): the kernel hashes every variable a cell reads before and
after it, and any changed name counts as a write.

- pandas objects: `pd.util.hash_pandas_object` (values and index) plus column names and dtypes,
  for objects up to `FULL_HASH_CELLS` cells; above that a strided sample of about that many
  cells plus the shape, so a change confined to unsampled rows of a huge frame can be missed;
- numpy arrays: the raw buffer (`tobytes` for non-contiguous ones) with dtype and shape; object
  arrays and anything else go through pickle, then cloudpickle; an object neither can pickle
  hashes to "" and its mutations are not detected (the same as `DictWorkspace`).

`to_json_value` is what `get_value` and a probe's `result` return to the parent: JSON values
as they are (tuples become lists, dict keys become strings), numpy scalars as Python numbers,
and everything else (DataFrames, arrays, other objects) as a summary dict
`{"type", "shape", "head", "hash"}`. The parent never receives a pickled object.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
from types import ModuleType
from typing import Any

import cloudpickle
import numpy as np
import pandas as pd

FULL_HASH_CELLS = 1_000_000
MAX_JSON_CHARS = 4_000_000  # larger values come back as a summary
HEAD_CHARS = 1000
_ABSENT = object()


def _digest(*parts: bytes | memoryview) -> str:
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(part)
    return h.hexdigest()


def _pandas_hash(obj: pd.DataFrame | pd.Series | pd.Index) -> str:
    cells = obj.size
    dtypes = [str(t) for t in obj.dtypes] if isinstance(obj, pd.DataFrame) else [str(obj.dtype)]
    meta = repr((type(obj).__name__, obj.shape, dtypes)).encode()
    if isinstance(obj, pd.DataFrame):
        meta += repr(list(obj.columns)).encode()
    if cells > FULL_HASH_CELLS:
        step = math.ceil(cells / FULL_HASH_CELLS)
        obj = obj[::step]
    try:
        hashed = pd.util.hash_pandas_object(obj, index=not isinstance(obj, pd.Index))
        return _digest(meta, np.ascontiguousarray(hashed.to_numpy()).data)
    except TypeError:  # unhashable cells (lists, dicts): fall back to pickle
        return _digest(meta, pickle.dumps(obj, protocol=5))


def _array_hash(arr: np.ndarray) -> str:
    meta = repr((arr.dtype.str, arr.shape)).encode()
    if arr.dtype.hasobject:
        return _digest(meta, pickle.dumps(arr, protocol=5))
    if arr.flags.c_contiguous:
        return _digest(meta, arr.reshape(-1).view(np.uint8).data if arr.size else b"")
    return _digest(meta, arr.tobytes())


def content_hash(value: Any) -> str:
    """Short content hash; "" when the value cannot be hashed."""
    try:
        if isinstance(value, pd.DataFrame | pd.Series | pd.Index):
            return _pandas_hash(value)
        if isinstance(value, np.ndarray):
            return _array_hash(value)
        if isinstance(value, ModuleType):
            return _digest(value.__name__.encode())
    except Exception:  # an exotic extension dtype: try the generic path below
        pass
    for dumps in (pickle.dumps, cloudpickle.dumps):
        try:
            return _digest(dumps(value, protocol=5))
        except Exception:  # the next pickler may manage
            continue
    return ""


def _plain(value: Any, depth: int = 0) -> Any:
    """The value as plain JSON data, or _ABSENT when it is not plain data."""
    if depth > 20:
        return _ABSENT
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.generic):
        item = value.item()
        return item if item is None or isinstance(item, bool | int | float | str) else str(value)
    if isinstance(value, list | tuple):
        items = [_plain(v, depth + 1) for v in value]
        return _ABSENT if any(i is _ABSENT for i in items) else items
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            key, item = _plain(key, depth + 1), _plain(item, depth + 1)
            if key is _ABSENT or isinstance(key, list) or item is _ABSENT:
                return _ABSENT
            out[key if isinstance(key, str) else json.dumps(key)] = item
        return out
    return _ABSENT


def shape_of(value: Any) -> list[int] | None:
    shape = getattr(value, "shape", None)
    return [int(n) for n in shape] if isinstance(shape, tuple) else None


def head_of(value: Any, limit: int = HEAD_CHARS) -> str:
    try:
        text = repr(value.head()) if isinstance(value, pd.DataFrame | pd.Series) else repr(value)
    except Exception as exc:  # a broken __repr__ must not break a listing
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 20] + f"... [{len(text)} chars]"


def summary(value: Any) -> dict[str, Any]:
    return {
        "type": type(value).__name__,
        "shape": shape_of(value),
        "head": head_of(value),
        "hash": content_hash(value),
    }


def to_json_value(value: Any) -> Any:
    plain = _plain(value)
    if plain is not _ABSENT:
        try:
            if len(json.dumps(plain)) <= MAX_JSON_CHARS:
                return plain
        except ValueError:  # circular structure
            pass
    return summary(value)


def describe(name: str, value: Any) -> dict[str, Any]:
    """Fields of `stateguard.workspace.VariableSummary`, computed in the kernel."""
    dtype = getattr(value, "dtype", None)
    return {
        "name": name,
        "type": type(value).__name__,
        "shape": shape_of(value),
        "dtype": None if dtype is None or isinstance(value, ModuleType) else str(dtype),
        "head": head_of(value, 200),
        "content_hash": content_hash(value),
    }
