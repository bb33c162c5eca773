"""Kernel-side views of workspace values: content hashes and JSON for the parent.

`content_hash` (shared with `DictWorkspace`, from `stateguard.dataflow.change`) is the hash a
variable listing shows: pandas objects through `pd.util.hash_pandas_object` (a strided sample
above `FULL_HASH_CELLS` cells), arrays by their buffer, anything else by pickle, then
cloudpickle (objects of classes defined in cells); "" when nothing can pickle it. The dataflow
detects changes with its own cheaper fingerprints (`stateguard.dataflow.change`).

`to_json_value` is what `get_value` and a probe's `result` return to the parent: JSON values
as they are (tuples become lists, dict keys become strings), numpy scalars as Python numbers,
and everything else (DataFrames, arrays, other objects) as a summary dict
`{"type", "shape", "head", "hash"}` (`stateguard.workspace.ValueSummary`). The parent never receives a pickled object. A variable
listing's entries are `stateguard.workspace.summarize` (shared with `DictWorkspace`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from stateguard.dataflow.change import FULL_HASH_CELLS, content_hash
from stateguard.workspace import ValueSummary, head_of, shape_of

__all__ = ["FULL_HASH_CELLS", "content_hash", "summary", "to_json_value"]
MAX_JSON_CHARS = 4_000_000  # larger values come back as a summary
HEAD_CHARS = 1000
_ABSENT = object()


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


def summary(value: Any, known_hash: str | None = None) -> dict[str, Any]:
    """`known_hash`: the value's `content_hash`, when the caller knows it for this very value."""
    return ValueSummary(
        type=type(value).__name__,
        shape=shape_of(value),
        head=head_of(value, HEAD_CHARS),
        hash=content_hash(value) if known_hash is None else known_hash,
    ).as_value()


def to_json_value(value: Any, known_hash: Callable[[], str | None] | None = None) -> Any:
    """`known_hash`: asked only when the value travels as a summary, for a hash already known."""
    plain = _plain(value)
    if plain is not _ABSENT:
        try:
            if len(json.dumps(plain)) <= MAX_JSON_CHARS:
                return plain
        except ValueError:  # circular structure
            pass
    return summary(value, None if known_hash is None else known_hash())
