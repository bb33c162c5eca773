"""An answer emptied by a reading: the value test behind the answer gate's second verdict.

The answer gate re-runs a turn's cells as a requirement states it and compares the printed answer
with the reported one. When every value the re-run changes became empty (a count of 0, a missing
statistic, an empty table) the requirement keeps no rows where the code kept some: a question
asked about rows that do not exist is far less likely than a misread clause ("keep the label
nobody has, with 0", read as "only that label"). Such a reading is not evidence of a mistake, so
it makes no finding. Values only dropped (a table narrowed to some of its groups, the rest
unchanged) are a real narrowing, not an emptied answer.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["emptied", "entries_only"]

_EMPTY = object()  # an empty dict or list, as a leaf


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        out: dict[tuple[Any, ...], Any] = {}
        for key, item in items:
            out.update(_leaves(item, (*path, key)))
        return out or {path: _EMPTY}
    return {path: value}


def _blank(value: Any) -> bool:
    """No content: missing, NaN, zero, an empty string or container."""
    if value is None or value is _EMPTY:
        return True
    if isinstance(value, bool):
        return False  # a flag's False is an answer, not an absence
    if isinstance(value, int | float):
        return value == 0 or math.isnan(value)
    if isinstance(value, str):
        return value.strip().lower() in ("", "nan", "none", "null")
    return False


def emptied(reported: Any, stated: Any) -> bool:
    """Every value of `stated` that differs from `reported` is empty, and at least one does; or
    `stated` holds no content at all where `reported` held some. An entry `stated` adds (a zero
    for a key the reported answer lacks) is new content, never an emptied value."""
    before, after = _leaves(reported), _leaves(stated)
    changed = []
    for path, value in after.items():
        if path in before:
            if not _same(before[path], value):
                changed.append(path)
        elif value is _EMPTY and any(p[: len(path)] == path for p in before):
            changed.append(path)  # a container the reported answer filled, now empty
        else:
            return False
    if changed:
        return all(_blank(after[p]) for p in changed)
    return all(_blank(v) for v in after.values()) and not all(_blank(v) for v in before.values())


def _same(a: Any, b: Any) -> bool:
    if a is _EMPTY or b is _EMPTY:
        return a is b
    return bool(a == b)


def entries_only(observed: dict[str, Any], values: int) -> bool:
    """A kept-rows probe of a scope over a typed-in list's values (`ProbeItem.list_entries`) where
    at every site no more rows meet the scope than it names values: only the list's own entries,
    which a left join keeps with nothing, meet it; no data row does."""
    sites = observed.get("sites")
    if not isinstance(sites, list) or not sites:
        return False
    for site in sites:
        if not isinstance(site, dict):
            return False
        kept = site.get("kept_rows", site.get("rows"))
        bad = site.get("rows_breaking_requirement")
        if not isinstance(kept, int) or not isinstance(bad, int) or kept - bad > values:
            return False
    return True
