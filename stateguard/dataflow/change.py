"""Did a value change? Cheap fingerprints before/after a cell, and content equality on rebinding.

- `fingerprint(value)` -> `(digest, exact)`. Exact for small values (plain data, arrays up to
  `EXACT_BYTES`, frames up to `EXACT_CELLS` cells, any object whose pickle stays under
  `PICKLE_CAP` bytes; objects of classes defined in cells go through cloudpickle). For a large
  array it is structural: shape, dtype, strides, the buffer's address and a strided sample; for a
  large frame: shape, column labels, dtypes and a strided sample of rows, column by column (never
  the block layout, which pandas consolidates in place without changing a value). That sees
  columns added, dropped, retyped or reordered and changes to sampled rows, for far less than the
  ~6 ms a full hash of 100k rows costs; a change confined to unsampled rows is missed (`exact`
  False says so, and such a value is never called unchanged).
- `equal_content(old, new)`: whether a rebinding produced the same content (`y = 7` again,
  `df = pd.read_csv(same file)`): `==` for scalars, `DataFrame.equals` / `array_equal` for data of
  the same shape, fingerprints for the rest, the definition's source for functions.
- `content_hash(value)`: the full hash the sandbox uses in variable listings (`VariableSummary`).

pandas and numpy are looked up in `sys.modules` only: if a process never imported them, no value
can be one of their types, and importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import io
import math
import pickle
import sys
import weakref
from types import FunctionType, ModuleType
from typing import Any

EXACT_BYTES = 1 << 20  # arrays up to 1 MiB are hashed in full
EXACT_CELLS = 20_000  # frames up to this many cells are hashed in full
FULL_HASH_CELLS = 1_000_000  # content_hash: above this, a strided sample of rows
PICKLE_CAP = 256 << 10  # a fingerprint pickles at most this many bytes
EQUALS_BYTES = 256 << 20  # equal_content compares arrays up to this size
EQUALS_CELLS = 5_000_000  # ... and frames up to this many cells (a few ms)
SAMPLE = 64
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), range, frozenset)
_ARROW_BYTES_TYPES = frozenset({"string", "large_string", "binary", "large_binary"})


def _digest(*parts: bytes | memoryview) -> str:
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(part)
    return h.hexdigest()


class _Capped(io.RawIOBase):
    def __init__(self, cap: int):
        self.hash = hashlib.blake2b(digest_size=8)
        self.left = cap

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        size = len(data)
        self.left -= size
        if self.left < 0:
            raise OverflowError("value too large to fingerprint")
        self.hash.update(data)
        return size


def _in_a_module(func: FunctionType) -> bool:
    """Whether some loaded module holds `func` under its qualified name (what pickle's and cloudpickle's
    `whichmodule` look for when `__module__` is None), by plain dict lookups: their scan formats an
    error message per module and dominated the cost of listing a cell namespace's functions. The
    answer is remembered per function while no module is added (a workspace lists its functions
    after every cell)."""
    key = len(sys.modules)
    known = _IN_A_MODULE.get(func)
    if known is not None and known[0] == key:
        return known[1]
    found = _scan_modules(func)
    _IN_A_MODULE[func] = (key, found)
    return found


def _scan_modules(func: FunctionType) -> bool:
    parts = func.__qualname__.split(".")
    for module in list(sys.modules.values()):
        if not isinstance(module, ModuleType):
            continue
        target: Any = module
        for part in parts:
            target = getattr(target, "__dict__", {}).get(part, _MISSING)
            if target is _MISSING:
                break
        if target is func:
            return True
    return False


_MISSING = object()
_IN_A_MODULE: weakref.WeakKeyDictionary[FunctionType, tuple[int, bool]] = weakref.WeakKeyDictionary()
_CellPickler: Any = None


def _cell_pickler() -> Any:
    """cloudpickle's Pickler that reduces a function defined in a cell (`__module__` None, held by no
    module) by value without the module scan; the bytes are those cloudpickle writes after its scan."""
    global _CellPickler
    if _CellPickler is None:
        import cloudpickle

        class CellPickler(cloudpickle.Pickler):
            def _function_reduce(self, obj: Any) -> Any:
                if getattr(obj, "__module__", "") is None and not _in_a_module(obj):
                    return self._dynamic_function_reduce(obj)
                return super()._function_reduce(obj)

        _CellPickler = CellPickler
    return _CellPickler


def _pickled(value: Any, cap: int | None) -> str | None:
    """Digest of the value's pickle (cloudpickle for cell-defined classes); None if impossible or too big."""
    # A cell-defined function held by no module cannot be pickled by reference: plain pickle fails on it.
    cell_function = isinstance(value, FunctionType) and value.__module__ is None and not _in_a_module(value)
    for module_name in ("pickle", "cloudpickle"):
        if module_name == "cloudpickle":
            try:
                pickler_type: Any = _cell_pickler()
            except ImportError:  # pragma: no cover - cloudpickle is a dependency
                return None
        elif cell_function:
            continue
        else:
            pickler_type = pickle.Pickler
        sink = _Capped(cap if cap is not None else 1 << 62)
        try:
            pickler_type(sink, protocol=5).dump(value)
        except OverflowError:
            return None
        except Exception:  # not picklable this way: try the next pickler
            continue
        return sink.hash.hexdigest()
    return None


def _pandas_types() -> tuple[type, ...]:
    pd = sys.modules.get("pandas")
    return (pd.DataFrame, pd.Series, pd.Index) if pd is not None else ()


def _ndarray() -> type | None:
    np = sys.modules.get("numpy")
    return np.ndarray if np is not None else None


def _frame_digest(obj: Any) -> tuple[str, bool]:
    """A pandas object's digest from its labels, dtypes and values column by column: all of them when
    the object has at most EXACT_CELLS cells (exact), else a strided sample of rows. Never from the
    memory-block layout: pandas consolidates blocks in place (a boolean selection can do it), which
    changes no value and must not count as a change."""
    np = sys.modules["numpy"]
    exact = obj.size <= EXACT_CELLS
    h = hashlib.blake2b(digest_size=8)
    h.update(repr((type(obj).__name__, obj.shape)).encode())
    labels = [obj.index] + ([obj.columns] if hasattr(obj, "columns") else [])
    for label in labels:
        h.update(
            pickle.dumps(label, protocol=5) if exact or label is not obj.index else repr(len(label)).encode()
        )
    dtypes = [str(t) for t in obj.dtypes] if hasattr(obj, "columns") else [str(obj.dtype)]
    h.update(repr(dtypes).encode())
    part = obj if exact else obj.iloc[:: max(1, len(obj) // SAMPLE)]
    columns = part._mgr.column_arrays if hasattr(part, "columns") else [part._values]  # private pandas API
    for values in columns:
        if isinstance(values, np.ndarray) and not values.dtype.hasobject:
            h.update(values.tobytes())  # (datetime columns offer no buffer: `.data` would raise)
            continue
        try:  # by value: the pickle of an Arrow-backed column changes when pandas rechunks it
            h.update(
                sys.modules["pandas"].util.hash_array(np.asarray(values, dtype=object), categorize=False).data
            )
        except Exception:  # unhashable cells (lists, dicts)
            h.update(pickle.dumps(values, protocol=5))
    return h.hexdigest(), exact


def fingerprint(value: Any) -> tuple[str, bool]:
    """(digest, exact); ('', False) when the value cannot be fingerprinted at all."""
    try:
        if isinstance(value, _IMMUTABLE):
            return _digest(repr((type(value).__name__, value)).encode()), True
        if isinstance(value, ModuleType):
            return _digest(value.__name__.encode()), True
        frames = _pandas_types()
        if frames and isinstance(value, frames[:2]):
            return _frame_digest(value)
        ndarray = _ndarray()
        if ndarray is not None and isinstance(value, ndarray):
            arr: Any = value
            if arr.nbytes <= EXACT_BYTES or arr.dtype.hasobject:
                return content_hash(arr), arr.nbytes <= EXACT_BYTES
            flat = arr.reshape(-1)
            sample = flat[:: max(1, flat.size // SAMPLE)]
            meta = repr((arr.dtype.str, arr.shape, arr.strides, arr.__array_interface__["data"][0]))
            return _digest(meta.encode(), sample.tobytes()), False
    except Exception:  # an exotic object whose attributes raise: fall through to pickling
        pass
    digest = _pickled(value, PICKLE_CAP)
    return (digest, True) if digest is not None else ("", False)


def immutable(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(immutable(v) for v in value)
    return isinstance(value, (*_IMMUTABLE, ModuleType))


def equal_content(old: Any, new: Any, code_digest: dict[Any, str] | None = None) -> bool:
    """Whether `new` (a fresh object) holds the same content as `old`."""
    a: Any = old
    b: Any = new
    if old is new:
        return True
    if type(old) is not type(new):
        return False
    try:
        if isinstance(old, _IMMUTABLE) or (isinstance(old, tuple) and immutable(old) and immutable(new)):
            return bool(old == new) or (isinstance(old, float) and math.isnan(old) and math.isnan(new))
        if isinstance(old, FunctionType):
            digests = code_digest or {}
            same_code = digests.get(old.__code__) is not None and digests.get(old.__code__) == digests.get(
                new.__code__
            )
            return (
                same_code
                and old.__closure__ is None
                and new.__closure__ is None
                and fingerprint((old.__defaults__, old.__kwdefaults__))
                == fingerprint((new.__defaults__, new.__kwdefaults__))
            )
        if isinstance(old, type | ModuleType):
            return False
        frames = _pandas_types()
        if frames and isinstance(old, frames):
            if a.shape != b.shape or a.size > EQUALS_CELLS:
                return False
            if hasattr(a, "columns"):
                if not a.columns.equals(b.columns):
                    return False
                by_blocks = _frames_equal_by_blocks(a, b)
                if by_blocks is not None:
                    return by_blocks
            return bool(a.equals(b))  # also compares dtypes and the index
        ndarray = _ndarray()
        if ndarray is not None and isinstance(old, ndarray):
            np = sys.modules["numpy"]
            if a.shape != b.shape or a.dtype != b.dtype or a.nbytes > EQUALS_BYTES:
                return False
            return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except Exception:  # comparison itself failed: treat as changed
        return False
    before, exact_before = fingerprint(old)
    after, exact_after = fingerprint(new)
    return exact_before and exact_after and before == after and before != ""


def _frames_equal_by_blocks(a: Any, b: Any) -> bool | None:
    """`a.equals(b)` for two DataFrames with the same columns whose memory blocks line up (the same
    columns in the same blocks, as two runs of one computation give), decided block by block with
    the comparison pandas itself applies to each block, without its generic block-pairing machinery
    (half the cost of `equals` on a 50k-row frame). None when the layouts differ or a block holds
    Python objects: the caller then asks `equals`. Private pandas API (`_mgr.blocks`), like
    `_frame_digest`."""
    np = sys.modules["numpy"]
    left, right = a._mgr.blocks, b._mgr.blocks
    if len(left) != len(right) or not a.index.equals(b.index):
        return None if len(left) != len(right) else False
    pairs = []
    for x, y in zip(left, right, strict=True):
        vx, vy = x.values, y.values
        if vx.dtype != vy.dtype or getattr(vx, "shape", None) != getattr(vy, "shape", None):
            return None
        if x.mgr_locs.as_array.tobytes() != y.mgr_locs.as_array.tobytes():  # a few column numbers
            return None
        pairs.append((vx, vy))
    for vx, vy in pairs:
        if not isinstance(vx, np.ndarray):  # an extension array: pandas compares with its `equals`
            if not (_same_arrow_buffers(vx, vy) or vx.equals(vy)):
                return False
            continue
        kind = vx.dtype.kind
        # (`(x == y).all()` on arrays of one shape is `np.array_equal` without its checks.)
        if kind in "iub":
            same = bool((vx == vy).all())
        elif kind in "mM":  # NaT is one bit pattern: pandas compares the int64 view too
            same = bool((vx.view("i8") == vy.view("i8")).all())
        elif kind in "fc":
            # Identical bits are equal values; otherwise the rule of pandas' float comparison
            # (NaN equals NaN, -0.0 equals 0.0).
            width = np.dtype(f"u{vx.dtype.itemsize}") if kind == "f" else None
            if width is not None and (vx.view(width) == vy.view(width)).all():
                continue
            same = bool(((vx == vy) | (np.isnan(vx) & np.isnan(vy))).all())
        else:
            return None  # objects, strings stored in numpy: pandas' own object comparison
        if not same:
            return False
    return True


def _same_arrow_buffers(x: Any, y: Any) -> bool:
    """Whether two Arrow-backed pandas arrays (`string[pyarrow]`, the default string columns) hold
    byte-equal Arrow buffers at the same offsets: then they are equal, which is what `equals` would
    find by comparing them value by value, at about half its cost (two rewrites of a string column
    by one computation lay their buffers out alike). False says only "not decided here": slices at
    different offsets, or padding bits that differ, leave the answer to `equals`. Private pandas API
    (`_pa_array`), like `_frame_digest`."""
    left, right = getattr(x, "_pa_array", None), getattr(y, "_pa_array", None)
    if (
        left is None
        or right is None
        or left.num_chunks != right.num_chunks
        or not left.type.equals(right.type)
    ):
        return False
    # Text and bytes only: their buffers are all their content (a dictionary array's dictionary is
    # not among its buffers), and equal bytes are equal values (floats' NaN are not, for Arrow).
    if str(left.type) not in _ARROW_BYTES_TYPES:
        return False
    for a, b in zip(left.chunks, right.chunks, strict=True):
        if len(a) != len(b) or a.offset != b.offset:
            return False
        buffers_a, buffers_b = a.buffers(), b.buffers()
        if len(buffers_a) != len(buffers_b):
            return False
        for p, q in zip(buffers_a, buffers_b, strict=True):
            if (p is None) != (q is None) or (p is not None and not p.equals(q)):
                return False
    return True


def content_hash(value: Any) -> str:
    """Short full-content hash; "" when the value cannot be hashed."""
    try:
        frames = _pandas_types()
        if frames and isinstance(value, frames):
            return _pandas_hash(value)
        ndarray = _ndarray()
        if ndarray is not None and isinstance(value, ndarray):
            return _array_hash(value)
        if isinstance(value, ModuleType):
            return _digest(value.__name__.encode())
    except Exception:  # an exotic extension dtype: try the generic path below
        pass
    return _pickled(value, None) or ""


def _pandas_hash(obj: Any) -> str:
    pd, np = sys.modules["pandas"], sys.modules["numpy"]
    cells = obj.size
    dtypes = [str(t) for t in obj.dtypes] if isinstance(obj, pd.DataFrame) else [str(obj.dtype)]
    meta = repr((type(obj).__name__, obj.shape, dtypes)).encode()
    if isinstance(obj, pd.DataFrame):
        meta += repr(list(obj.columns)).encode()
    if cells > FULL_HASH_CELLS:
        obj = obj[:: math.ceil(cells / FULL_HASH_CELLS)]
    try:
        hashed = pd.util.hash_pandas_object(obj, index=not isinstance(obj, pd.Index))
        return _digest(meta, np.ascontiguousarray(hashed.to_numpy()).data)
    except TypeError:  # unhashable cells (lists, dicts): fall back to pickle
        return _digest(meta, pickle.dumps(obj, protocol=5))


def _array_hash(arr: Any) -> str:
    meta = repr((arr.dtype.str, arr.shape)).encode()
    if arr.dtype.hasobject:
        return _digest(meta, pickle.dumps(arr, protocol=5))
    if arr.flags.c_contiguous:
        return _digest(meta, arr.reshape(-1).view("uint8").data if arr.size else b"")
    return _digest(meta, arr.tobytes())
