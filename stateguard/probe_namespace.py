"""A probe's namespace for the in-process workspace: values are copied when the probe first reads them.

`DictWorkspace.run_probe` used to deep-copy the whole namespace before every probe, so a probe
that reads one number still paid for copying every frame in the workspace (most of its cost on a
100k-row frame). `ProbeNamespace` is the globals dict the probe runs in: a name is copied from the
live namespace the first time the probe looks it up, with one deep-copy memo for the whole probe
(two names bound to one object still share one copy), and a name the probe never reads is never
copied. pandas objects are copied shallowly: with copy-on-write (always on from pandas 3) a
shallow copy is a new object whose changes, in place or not, never reach the original, and
creating it copies no data. Modules and values that cannot be copied are shared, as before.

    scratch = ProbeNamespace(workspace.namespace); exec(code, scratch); scratch.get("result")
"""

from __future__ import annotations

import copy
import sys
import types
from typing import Any

__all__ = ["ProbeNamespace", "copy_value", "pandas_copy_on_write"]

_MISSING = object()


def pandas_copy_on_write() -> bool:
    """Whether the loaded pandas gives shallow copies copy-on-write semantics."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return False
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    try:
        return bool(pd.get_option("mode.copy_on_write") is True)
    except (KeyError, ValueError, AttributeError):  # an older pandas without the option
        return False


def copy_value(value: Any, memo: dict[int, Any]) -> Any:
    """The copy a probe sees: deep, except modules (shared), pandas objects under copy-on-write
    (shallow, which isolates them just as well) and values that cannot be copied (shared)."""
    if isinstance(value, types.ModuleType):
        return value
    pd = sys.modules.get("pandas")
    if pd is not None and type(value) in (pd.DataFrame, pd.Series) and pandas_copy_on_write():
        found = memo.get(id(value), _MISSING)
        if found is _MISSING:
            found = memo[id(value)] = value.copy(deep=False)
            memo.setdefault(id(memo), []).append(value)  # keep the original alive, as deepcopy does
        return found
    try:
        return copy.deepcopy(value, memo)
    except Exception:  # e.g. generators, locks: shared, not copied
        return value


class ProbeNamespace(dict[str, Any]):
    """Globals of one probe: reads copy from `source` on first use; writes stay here."""

    def __init__(self, source: dict[str, Any]):
        super().__init__()
        self._source = source
        self._memo: dict[int, Any] = {}
        self._deleted: set[str] = set()
        if "__builtins__" in source:
            dict.__setitem__(self, "__builtins__", source["__builtins__"])

    def __missing__(self, key: str) -> Any:
        if key in self._deleted or key not in self._source:
            raise KeyError(key)
        value = copy_value(self._source[key], self._memo)
        dict.__setitem__(self, key, value)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._deleted.discard(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        if dict.__contains__(self, key):
            dict.__delitem__(self, key)
        elif key in self._deleted or key not in self._source:
            raise KeyError(key)
        self._deleted.add(key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (key in self._source and key not in self._deleted)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default
