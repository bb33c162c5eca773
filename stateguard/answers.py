"""Reading a worker's reported answer: the last JSON object it printed, and its numbers.

LongDS-style reference code prints its result dict as JSON; so do our workers. The checks that
compare reported values with workspace values walk those numbers with their field paths.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_DECIMALS_RE = re.compile(
    r"(\d+|one|two|three|four|five|six)[\s-]*(?:decimal places|decimal digits|decimals|decimal|d\.p\.)",
    re.IGNORECASE,
)


_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)```", re.S)
_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.S)


def _trailing_json(text: str) -> Any:
    """The JSON object or array that runs to the end of `text` (first such start wins), or None."""
    text = text.strip()
    for start in [i for i, ch in enumerate(text) if ch in "{["]:
        try:
            return json.loads(text[start:])
        except json.JSONDecodeError:
            continue
    return None


def last_json(stdout: str) -> Any:
    """The last JSON object or array printed to stdout, or None.

    The JSON must run to the end of the text, or fill a fenced block (```json ... ```) or an
    `<answer>...</answer>` block (an LLM worker's final answer): the closing fence or tag would
    otherwise hide it. The last answer block that holds JSON wins, then the last fenced one."""
    found = _trailing_json(stdout)
    if found is not None:
        return found
    for block in [*reversed(_ANSWER_BLOCK.findall(stdout)), *reversed(_FENCE.findall(stdout))]:
        found = _trailing_json(_FENCE.sub(lambda m: m.group(1), block))
        if found is not None:
            return found
    return None


def parse_answer(text: str) -> Any:
    """A worker's final answer: its JSON (see `last_json`), else a Python dict or list literal
    (models print `{'n': 10}` as often as JSON), else None. Literals are read with
    `ast.literal_eval`, which evaluates no code."""
    found = last_json(text)
    if found is not None:
        return found
    for body in [*reversed(_FENCE.findall(text)), text]:
        body = body.strip()
        for start in [i for i, ch in enumerate(body) if ch in "{["]:
            try:
                value = ast.literal_eval(body[start:])
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, dict | list):
                return value
    return None


def numbers(obj: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """(field path, value) for every int/float in a JSON-like object; bools are not numbers."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, int | float):
        try:
            yield path or "value", float(obj)
        except OverflowError:  # an int beyond float range is not a reportable decimal
            return
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from numbers(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from numbers(value, f"{path}[{i}]")


def decimals_of(value: float) -> int:
    """Digits after the point in the shortest repr (0.125 -> 3, 2.0 -> 0)."""
    text = repr(float(value))
    if "e" in text or "inf" in text or "nan" in text:
        return 0
    frac = text.split(".")[1].rstrip("0")
    return len(frac)


# A sentence that describes how the data holds a value ("a facility code stored as a number with one
# decimal, such as 3.6") states no reporting precision: the data's decimals, not the answer's.
_DESCRIBES_DATA = re.compile(
    r"\b(?:stored|recorded|coded|kept|saved|held|encoded)\b|\b(?:number|value|float|code|figure)s?\s+with\s+$",
    re.IGNORECASE,
)


def required_decimals(text: str) -> int | None:
    """Decimal places a task text asks for ('rounded to 4 decimal places', 'two decimals'), if any.
    Decimals a sentence says the data is kept with are not asked for; the first other mention is."""
    for match in _DECIMALS_RE.finditer(text):
        start = max(text.rfind(mark, 0, match.start()) for mark in ".!?\n")
        if _DESCRIBES_DATA.search(text[start + 1 : match.start()]):
            continue
        word = match.group(1).lower()
        return _WORDS.get(word, int(word) if word.isdigit() else 0)
    return None


def field_name(path: str) -> str:
    """Last named component of a field path ('stats.mean[0]' -> 'mean')."""
    parts = [p for p in re.split(r"[.\[\]]", path) if p and not p.isdigit()]
    return parts[-1] if parts else path
