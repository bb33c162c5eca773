"""How synthesis spells a data value inside SQL text and inside a table or stage name.

    sql_text("O'Hare")                     # "'O''Hare'"
    slug("Gentoo penguin")                 # 'gentoo_penguin'
    slug("2019 sales", 12, fallback="v")   # 'v_2019_sales'

Used by the raw-data layer (`tabular`, `external`) and the thread families above it
(`synthesis.threads`, `synthesis.source_threads`); the names it makes are part of the frozen
benchmark's bytes, so a change here is a change of the benchmark.
"""

from __future__ import annotations

__all__ = ["slug", "sql_text"]


def sql_text(value: str) -> str:
    """A SQL string literal of `value` (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


def slug(value: object, limit: int | None = None, *, fallback: str | None = None) -> str:
    """Lower-case alphanumeric runs of `value` joined by `_`.

    Without `fallback` that is all (the hand-written families' names). With it, the slug is also
    cut to `limit` characters, and must be an identifier: an empty one becomes `fallback`, and one
    that does not start with a letter gets the prefix `<fallback>_` (names drawn from raw data)."""
    out = "".join(ch.lower() if ch.isalnum() else "_" for ch in str(value))
    joined = "_".join(part for part in out.split("_") if part)
    if fallback is None:
        return joined
    cut = joined[:limit].strip("_") or fallback
    return cut if cut[0].isalpha() else f"{fallback}_{cut}"
