"""Text that can always be written as UTF-8: lone surrogates escaped, everything else untouched.

A Python `str` may hold lone surrogates (`'caf\\udce9'`: bytes decoded with `surrogateescape`,
a JSON `"\\udce9"` escape, a cell that builds one). Such text cannot be encoded as UTF-8, so
`model_dump_json`, a trace line or a results file fails on it. Everything that carries text out
of a workspace (cell output, values, answers, trace events) passes through `escape_text` or
`escape_tree`, which write each lone surrogate as the six characters `\\udce9` (Python's
`backslashreplace`): the text stays readable and says what was there.

    from stateguard.encodable import escape_text
    escape_text("caf\\udce9")  # -> 'caf\\\\udce9'
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator


def escape_text(text: str) -> str:
    """`text` with every lone surrogate written as a backslash escape (other text unchanged)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def encodable(text: str) -> bool:
    """Whether `text` encodes as UTF-8 (no lone surrogates)."""
    return escape_text(text) is text


def escape_tree(value: Any, depth: int = 0) -> Any:
    """A JSON-like value with `escape_text` applied to every string, keys included (same shape)."""
    if isinstance(value, str):
        return escape_text(value)
    if depth > 64:
        return value
    if isinstance(value, dict):
        return {escape_tree(k, depth + 1): escape_tree(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_tree(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return tuple(escape_tree(v, depth + 1) for v in value)
    return value


# A pydantic field type: any text assigned to it comes out encodable.
Text = Annotated[str, AfterValidator(escape_text)]
