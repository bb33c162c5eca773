"""Version tokens: a cheap way to tell that a workspace value is still exactly what it was.

    token = version_token(df, render_context())   # None: this value cannot be vouched for
    ...                                           # cells run, maybe mutating df in place
    version_token(df, render_context()) == token  # True only if df's summary cannot have changed

A workspace listing summarizes every variable (a rendered `head` and a content hash), and a
manager lists the workspace after almost every cell while most values stay untouched. The
listing may reuse a summary when the variable still holds the SAME object (identity; the cache
holds a reference, so the id cannot be reused) and this token is unchanged. The token covers
everything the summary is a function of:

* immutable values (numbers, strings, None, modules, tuples/frozensets of those): nothing more;
* numpy arrays, and the numpy blocks of pandas objects: a hash of the bytes, so any in-place
  write shows, through whichever alias it was made. Object arrays hash their element pointers,
  and only when every element is of an immutable type; the token keeps a shallow copy of the
  array so that no element can be freed and another object born at its address;
* Arrow-backed pandas arrays: the identity of the immutable Arrow array (pandas swaps in a new
  one on every write);
* datetime and timedelta arrays (a frame's timestamp columns): their dtype (unit, time zone) and a
  hash of their numpy array's bytes; only without a `freq` (a frame's columns have none);
* nullable integer, float and boolean arrays (`Int32`, ...: a column with NULLs from a database):
  their dtype and hashes of both numpy arrays, the values and the mask;
* pandas structure: the identity of the block manager, of each block and its placement, the
  axes' values and names, a Series' name, and the display options (they shape the repr).

Anything else (lists, dicts, functions: cloudpickle hashes a function's globals too, custom
objects) gets None and is summarized afresh every time. Tokens are compared with `==` and hold
only ints, strings and bytes; the objects whose ids they name are returned separately, to be
kept alive alongside.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import xxhash

__all__ = ["render_context", "version_token"]

_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), range)
_HASHED_BYTES_CAP = 64 << 20  # above this a value's arrays are not hashed: summarized each time
_CONTAINER_CAP = 64  # tuples/frozensets with more elements are not walked


class _Unversioned(Exception):
    """The value (or a part of it) has no cheap, exact version."""


def render_context() -> tuple[Any, ...]:
    """What, besides a value, its rendered head depends on: pandas and numpy print options.
    Taken once per listing; part of every array and pandas token."""
    parts: list[Any] = []
    np = sys.modules.get("numpy")
    if np is not None:
        parts.append(repr(sorted(np.get_printoptions().items())))
    if sys.modules.get("pandas") is not None:
        try:
            from pandas._config import config

            parts.append(repr(sorted(config._global_config["display"].items())))
        except Exception:  # a pandas without this layout: no pandas value is vouched for
            parts.append(None)
    return tuple(parts)


def version_token(value: Any, context: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Any]] | None:
    """(token, objects to keep alive while the token is stored), or None when `value` cannot be
    vouched for cheaply."""
    keep: list[Any] = []
    try:
        token = _token(value, context, keep, [0])
    except _Unversioned:
        return None
    except Exception:  # an exotic object whose internals differ: do not vouch for it
        return None
    return token, keep


def _token(value: Any, context: tuple[Any, ...], keep: list[Any], budget: list[int]) -> tuple[Any, ...]:
    if type(value) in _IMMUTABLE or isinstance(value, types.ModuleType):  # exact types: a subclass
        return ("immutable",)  # may carry mutable attributes its repr shows
    if type(value) in (tuple, frozenset):
        if len(value) > _CONTAINER_CAP:
            raise _Unversioned
        for item in value:  # identity of the container already fixes which items it holds
            _token(item, context, keep, budget)
        return ("immutable",)
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
    if np is not None and type(value) is np.ndarray:
        return ("ndarray", context, _array(value, np, keep, budget))
    if pd is not None and context and context[-1] is not None:
        if type(value) is pd.DataFrame:
            return ("frame", context, _manager(value._mgr, keep, budget), _index(value.columns, keep, budget))
        if type(value) is pd.Series:
            return (
                "series",
                context,
                repr(value.name) if type(value.name) in _IMMUTABLE else _raise(),
                _manager(value._mgr, keep, budget),
            )
    raise _Unversioned


def _raise() -> Any:
    raise _Unversioned


def _manager(mgr: Any, keep: list[Any], budget: list[int]) -> tuple[Any, ...]:
    keep.append(mgr)
    blocks = []
    for block in mgr.blocks:
        keep.append(block)
        blocks.append(
            (id(block), bytes(block.mgr_locs.as_array.tobytes()), _values(block.values, keep, budget))
        )
    return (id(mgr), tuple(blocks), _index(mgr.axes[-1], keep, budget))


def _index(index: Any, keep: list[Any], budget: list[int]) -> tuple[Any, ...]:
    """An axis: its kind, names, dtype and values (Index objects are immutable except names)."""
    pd = sys.modules["pandas"]
    names = tuple(repr(n) if type(n) in _IMMUTABLE else _raise() for n in index.names)
    if type(index) is pd.RangeIndex:
        return ("range", names, index.start, index.stop, index.step)
    if type(index) is pd.MultiIndex:
        levels = tuple(_index(level, keep, budget) for level in index.levels)
        codes = tuple(_values(c, keep, budget) for c in index.codes)
        return ("multi", names, levels, codes)
    if type(index) is pd.Index:
        return ("index", names, str(index.dtype), _values(index._values, keep, budget))
    raise _Unversioned  # DatetimeIndex (freq), CategoricalIndex, ...: not vouched for


def _values(values: Any, keep: list[Any], budget: list[int]) -> tuple[Any, ...]:
    np = sys.modules["numpy"]
    if type(values) is np.ndarray:
        return _array(values, np, keep, budget)
    pa_array = getattr(values, "_pa_array", None)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None and isinstance(pa_array, arrow.ChunkedArray):
        keep.append(pa_array)  # Arrow arrays never change; pandas replaces them on a write
        return ("arrow", type(values).__name__, str(values.dtype), id(pa_array))
    pd = sys.modules["pandas"]
    kind = type(values)
    if kind in (pd.arrays.DatetimeArray, pd.arrays.TimedeltaArray):
        if getattr(values, "freq", None) is not None:  # pandas 3 keeps freq on the index alone
            raise _Unversioned  # a freq shows in some reprs and can be set in place: not vouched for
        keep.append(values)
        return ("dates", kind.__name__, str(values.dtype), _array(values._ndarray, np, keep, budget))
    if kind in (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray):
        keep.append(values)
        return (
            "masked",
            kind.__name__,
            str(values.dtype),
            _array(values._data, np, keep, budget),
            _array(values._mask, np, keep, budget),
        )
    raise _Unversioned  # Categorical, interval, period, sparse arrays: not vouched for


def _array(arr: Any, np: Any, keep: list[Any], budget: list[int]) -> tuple[Any, ...]:
    budget[0] += arr.nbytes
    if budget[0] > _HASHED_BYTES_CAP:
        raise _Unversioned
    # xxh3 (128 bits) reads ~30 GB/s against blake2b's ~0.7: a listing re-checks every array of
    # every frame after each cell, and a collision only needs to be unlikely, not hard to make.
    digest = xxhash.xxh3_128()
    if arr.dtype.hasobject:
        if arr.dtype != object or not set(map(type, arr.ravel().tolist())) <= set(_IMMUTABLE):
            raise _Unversioned  # a list in a cell can change with the same pointer
        holder = arr.copy()  # shallow: holds every element, so no address is reused
        keep.append(holder)
        digest.update(holder.tobytes())
    else:
        digest.update(np.ascontiguousarray(arr).view(np.uint8).data if arr.size else b"")
    return ("array", arr.dtype.str, arr.shape, arr.strides, digest.digest())
