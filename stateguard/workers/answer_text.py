"""Read a model's typed answer into the structured value a field judge can score.

A real model answers in text: `Number of flowers: 150` on one line, `Species: ['setosa', ...]`
on the next, or a lone `0.523`. The paper's judge is an LLM that reads such text and ignores the
labels; the dev set's offline judge compares JSON fields, matching unnamed fields by value. So a
text answer whose values are right scored wrong only because it was not JSON (issue 30: the 1.5B
model's iris turn 1). This module keeps what the model wrote and only changes its shape:

* JSON, or a Python dict or list literal, is read as before (`stateguard.answers.parse_answer`);
* lines `label: value` (or `label = value`, optionally as a bullet, in bold, or indented under a
  `label:` line of their own) become a dict, one field per label;
* an answer that is one value alone becomes `{"answer": value}`.

A value is a number (a trailing unit word such as `cm` is dropped, since the question fixes the
unit), a list, set or dict literal (a set as a sorted list), or else the text itself. Prose
without labels ("There are 150 flowers") is left as text: pulling every number out of a sentence
would let stray numbers match.

    structured_answer("Number of flowers: 150\\nSpecies: ['setosa']")
        -> {"Number of flowers": 150, "Species": ["setosa"]}
"""

from __future__ import annotations

import ast
import re
from typing import Any

from stateguard.answers import parse_answer

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_LABELLED = re.compile(r"^(?P<label>[^:=]{1,80}?)\s*(?::|=)\s*(?P<value>.*)$")
# a number in common notation, optionally followed by a short unit word ("5.843 cm", "12.5 %")
_NUMBER_UNIT = re.compile(
    r"^(?P<num>[-+]?\$?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(?P<unit>%|[A-Za-z]{1,12})?\.?$"
)


def _plain(value: Any) -> Any:
    """A literal as JSON can hold it: tuples as lists, and sets (which have no order; models print
    `df["species"].unique()` as one) as lists sorted by their text."""
    if isinstance(value, set | frozenset):
        return sorted((_plain(v) for v in value), key=str)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _value(text: str) -> Any:
    """One typed value: a number, a literal list/dict/tuple, True/False, or the text itself."""
    text = text.strip().strip("*`").strip()
    if not text:
        return text
    if text[0] in "[{(":
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
        else:
            return _plain(value)
    if text in ("True", "False"):
        return text == "True"
    match = _NUMBER_UNIT.match(text)
    if match and any(c.isdigit() for c in match.group("num")):
        raw = match.group("num").replace("$", "").replace(",", "")
        try:
            number = float(raw)
        except ValueError:
            return text
        return int(number) if re.fullmatch(r"[-+]?\d+", raw) else number
    return text.rstrip(".")


def _label(text: str) -> str:
    return text.strip().strip("*`_").strip()


def labelled_fields(text: str) -> dict[str, Any] | None:
    """The `label: value` lines of `text` as a dict, or None when no line has that shape.

    A `label:` line with nothing after it opens a group: the indented or bulleted `label: value`
    lines under it become a nested dict. Lines of another shape end the group and are skipped."""
    fields: dict[str, Any] = {}
    group: dict[str, Any] | None = None
    for raw in text.splitlines():
        if not raw.strip():
            continue
        nested = group is not None and (raw[:1].isspace() or _BULLET.match(raw) is not None)
        line = _BULLET.sub("", raw).strip()
        match = _LABELLED.match(line.replace("**", ""))
        if match is None or not _label(match.group("label")):
            group = None
            continue
        label, value = _label(match.group("label")), match.group("value").strip()
        if nested and group is not None and value:
            group[label] = _value(value)
            continue
        if not value:
            group = fields.setdefault(label, {})
            continue
        group = None
        fields[label] = _value(value)
    fields = {k: v for k, v in fields.items() if v != {}}  # a heading with nothing under it
    return fields or None


def structured_answer(text: str) -> Any:
    """The answer a judge scores: JSON or a literal as written, else labelled lines as a dict, else
    a lone value as {"answer": value}, else None (prose: the caller keeps the text)."""
    found = parse_answer(text)
    if found is not None:
        return found
    fields = labelled_fields(text)
    if fields is not None:
        return fields
    lone = text.strip()
    if lone and "\n" not in lone:
        value = _value(lone)
        if not isinstance(value, str):
            return {"answer": value}
    return None
