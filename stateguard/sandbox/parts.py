"""Kernel-side checkpoint parts: each large array pickled once per rollout, not once per checkpoint.

A stateguard rollout checkpoints the whole namespace at every committed state (about 23 times for
a nyc task), and most of the bytes are the same unchanged frames each time (eleventh and twelfth
rounds of docs/results/performance.md). During a checkpoint's dump, every *leaf* (a numpy array
of plain data, a pyarrow array: the blocks and columns frames are made of) of at least
`PART_MIN_BYTES` is given a key, the XXH3-128 of its complete pickled form: the pickle stream with
its buffers out of band, then each buffer's bytes. The key is a content fingerprint, never an
identity: an array changed in place since the last checkpoint gets a new key. A leaf whose key
the parent already holds (`held`, sent with the request) costs its hashing only; a new one is
pickled on its own into a *part* that the parent stores beside the checkpoints. The checkpoint's
pickle holds `_part_value(key)` in the leaf's place.

Shared references survive as before: the pickler's memo records the leaf object, so two names
(or two frames) bound to one array restore as one array, and two distinct arrays with equal
bytes restore as two. A leaf holds no Python objects that other values could share (object
arrays are not leaves), so pickling it apart from the rest loses no sharing.

Loading: `loading(parts)` makes the part bytes of one restore visible to `_part_value`; a key
that was not sent fails the load with a clear error instead of restoring something else.
"""

from __future__ import annotations

import contextlib
import pickle
import struct
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import xxhash

PART_MIN_BYTES = (
    64 * 1024
)  # smaller leaves stay in the checkpoint's own pickle (the nyc tasks: 30 arrays of 64-256 KiB)
_LENGTH = struct.Struct(">Q")
_loading: list[Mapping[str, Any]] = []  # the parts of the load in progress (a stack of one)


class MissingPart(pickle.UnpicklingError):
    """The checkpoint refers to a part that did not come with it."""


def _part_value(key: str) -> Any:
    """What a leaf's place in a checkpoint's pickle calls on load."""
    if not _loading or key not in _loading[-1]:
        raise MissingPart(f"checkpoint part {key} is missing (it was not sent with the checkpoint)")
    return pickle.loads(_loading[-1][key])


@contextlib.contextmanager
def loading(parts: Mapping[str, Any]) -> Iterator[None]:
    _loading.append(parts)
    try:
        yield
    finally:
        _loading.pop()


_NOT, _NUMPY, _ARROW = 0, 1, 2
_kinds: dict[type, int] = {}  # a type's kind never changes (an Arrow type exists only once pyarrow does)


def _kind(kind: type) -> int:
    np, pa = sys.modules.get("numpy"), sys.modules.get("pyarrow")
    if np is not None and kind is np.ndarray:
        return _NUMPY
    if pa is not None and issubclass(kind, pa.Array | pa.ChunkedArray):
        return _ARROW
    return _NOT


def is_leaf(obj: Any) -> bool:
    """Called for every object a checkpoint pickles that is not a builtin container: cheap first."""
    kind = _kinds.get(type(obj))
    if kind is None:
        kind = _kinds[type(obj)] = _kind(type(obj))
    if kind == _NUMPY:
        # Object arrays pickle their elements, which other values may share: never a leaf.
        return obj.nbytes >= PART_MIN_BYTES and not obj.dtype.hasobject
    if kind == _ARROW:
        try:
            return bool(obj.nbytes >= PART_MIN_BYTES) and not _has_extension(obj.type, sys.modules["pyarrow"])
        except Exception:  # an array whose size cannot be told: pickled in place
            return False
    return False


def _has_extension(kind: Any, pa: Any) -> bool:
    """Extension types carry Python classes (maybe defined in a cell): such arrays stay in place."""
    if isinstance(kind, pa.BaseExtensionType):
        return True
    if pa.types.is_dictionary(kind):
        return _has_extension(kind.value_type, pa)
    return any(_has_extension(kind.field(i).type, pa) for i in range(kind.num_fields))


def fingerprint(obj: Any) -> str:
    """XXH3-128 of the leaf's complete pickled form (protocol 5): equal keys, equal pickles."""
    buffers: list[pickle.PickleBuffer] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        buffers.append(buffer)
        return False

    stream = pickle.dumps(obj, protocol=5, buffer_callback=out_of_band)
    digest = xxhash.xxh3_128()
    digest.update(_LENGTH.pack(len(stream)))
    digest.update(stream)  # holds each buffer's read-only flag and every non-buffer field
    for buffer in buffers:
        raw = buffer.raw()
        digest.update(_LENGTH.pack(raw.nbytes))
        digest.update(raw)
    return digest.hexdigest()


class Parts:
    """One dump's leaves: which keys it refers to, and the new parts to send (in order)."""

    def __init__(self, held: Mapping[str, int]):
        self.held = held  # key -> size, what the parent holds already
        self.new: dict[str, bytes] = {}
        self.refs: dict[str, int] = {}  # every key the checkpoint refers to -> its part's size

    def reduce(self, obj: Any) -> tuple[Any, ...] | None:
        """The reduction of a leaf to its part, or None for anything else."""
        if not is_leaf(obj):
            return None
        try:
            key = fingerprint(obj)
            if key not in self.held and key not in self.new:
                self.new[key] = pickle.dumps(obj, protocol=5)
        except Exception:  # a leaf that does not pickle alone: pickled in place, as before
            return None
        self.refs[key] = len(self.new[key]) if key in self.new else int(self.held[key])
        return (_part_value, (key,))

    def clear(self) -> None:
        """Before a dump is tried again (without the values that did not pickle): the parts already
        pickled stay for reuse, and `sent` gives only those the final dump refers to."""
        self.refs = {}

    def sent(self) -> list[tuple[str, bytes]]:
        return [(key, data) for key, data in self.new.items() if key in self.refs]
