"""Symbol paths: how the dataflow names a variable, an attribute or an item of it.

A path is a tuple of strings: the root variable, then one component per step, `.attr` for an
attribute and `[<repr of the key>]` for an item with a literal key (`df['a']`, `lst[0]`,
`d[('x', 1)]`). `fmt` joins them back into the text a user would write (`df['a']`).

A component `[?N]` stands for the key of subscript slot N of a cell, known only at run time
(`lst[i]`, `df[col]`); the recorder replaces it with the key it saw, or cuts the path there.
"""

from __future__ import annotations

PathT = tuple[str, ...]
_SCALARS = (str, int, float, bool, type(None))
MAX_KEY_CHARS = 120  # longer keys are not worth a symbol of their own


def attr(name: str) -> str:
    return "." + name


def key(value: object) -> str | None:
    """The component for a literal key, or None when the key is not a small plain literal."""
    if isinstance(value, _SCALARS) or (
        isinstance(value, tuple) and len(value) <= 8 and all(isinstance(v, _SCALARS) for v in value)
    ):
        text = repr(value)
        return f"[{text}]" if len(text) <= MAX_KEY_CHARS else None
    return None


def slot(index: int) -> str:
    return f"[?{index}]"


def slot_index(component: str) -> int | None:
    return int(component[2:-1]) if component.startswith("[?") else None


def fmt(path: PathT | list[str]) -> str:
    return "".join(path)


def ancestors(path: PathT) -> list[PathT]:
    """Proper prefixes, shortest first: ('d', '.x', '.a') -> [('d',), ('d', '.x')]."""
    return [path[:i] for i in range(1, len(path))]


def under(path: PathT, prefix: PathT) -> bool:
    """Whether `path` is `prefix` or lies below it."""
    return path[: len(prefix)] == prefix
