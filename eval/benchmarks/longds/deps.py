"""Declared turn dependencies of a LongDS task: Pa(t) from the reference code's comments (paper C.4).

LongDS writes a turn's upstream turns into comments of its reference program, in several
surface forms. This parser reads them deterministically; DCR (Eq. 31) uses the result.

    parse_dependencies(json.load(open("task.json")))   # {1: [], 2: [1], ..., 10: [3, 7, 8], ...}

What counts as a declaration. A *dependency comment* is a comment (full-line or inline) that
  * says "depends on" / "depend on" / "dependent on" / "dependencies:", or
  * contains "from" directly followed by a turn reference ("from Task 5", "(from T3)").
Bullet lines (`#   - name (T7 — ...)`) right after a dependency comment belong to it, which
covers the multi-line form `# T10: [multi-hop] depends on:` + one bullet per upstream value.
A leading label naming the current turn (`# T10:`, `# Task 10 -`) is removed first.

What counts as a reference, inside a dependency comment: `Task 3`, `Tasks 1, 8, and 9`,
`Task 14/17`, `Turn 4`, `T3`, and ranges `Tasks 2-4`, `Tasks 2--4`, `Tasks 2–4`,
`Tasks 2 to 4`. A range is expanded only when it runs forward and spans at most
`MAX_RANGE_SPAN` turns; otherwise only its first number is kept, since the text after the dash
may be unrelated numbers. Only earlier turns (0 < d < t) are kept; self-references and forward
references are dropped; each result is sorted and free of duplicates.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from typing import Any

MAX_RANGE_SPAN = 10  # a range "Tasks a-b" with b - a above this is not expanded

_REF_WORD = r"(?:tasks?|turns?|t)\s*#?\s*"  # "Task", "Tasks", "Turn", "T", optionally "#"
_SEPARATOR = r"\s*(?:,\s*(?:and\s+|or\s+)?|/|&|\band\b|\bor\b)\s*"
_RANGE_DASH = r"\s*(?:--|-|–|\bto\b|\bthrough\b)\s*"
_LISTING = rf"\d+(?:(?:{_SEPARATOR}|{_RANGE_DASH})(?:{_REF_WORD})?\d+)*"
_REF = re.compile(rf"\b{_REF_WORD}(?P<list>{_LISTING})", re.IGNORECASE)
_FROM_REF = re.compile(rf"\bfrom\s+(?P<ref>{_REF_WORD}{_LISTING})", re.IGNORECASE)
_TOKEN = re.compile(rf"(\d+)|({_RANGE_DASH})|{_SEPARATOR}|{_REF_WORD}", re.IGNORECASE)
_DEPENDS_CUE = re.compile(r"\bdepend(?:s|ent|ing)?\s+(?:up)?on\b|\bdependenc(?:y|ies)\s*:", re.IGNORECASE)
_OWN_LABEL = re.compile(rf"^\s*{_REF_WORD}(?P<turn>\d+)\s*[:.)\]]", re.IGNORECASE)
_BULLET = re.compile(r"^\s*[-*•]\s")


def _comments(code: str) -> list[tuple[int, str, bool]]:
    """(line, text after '#', whole line is a comment) for every comment of `code`."""
    lines = code.splitlines()
    found: list[tuple[int, str, bool]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                whole = not lines[row - 1][:col].strip()
                found.append((row, token.string[1:], whole))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Not tokenizable Python: fall back to lines that start with '#'.
        found = [
            (i, line.strip()[1:], True) for i, line in enumerate(lines, 1) if line.strip().startswith("#")
        ]
    return found


def dependency_comments(code: str, turn_id: int | None = None) -> list[str]:
    """The texts that declare dependencies: cue comments, each with its bullet continuation lines.

    A leading label naming `turn_id` itself (`T10:`, `Task 10.`) is removed from each comment.
    """
    texts: list[str] = []
    open_block: int | None = None  # index in `texts` of the cue comment whose bullets may follow
    previous_row = -1
    for row, text, whole in _comments(code):
        label = _OWN_LABEL.match(text)
        if label and turn_id is not None and int(label.group("turn")) == turn_id:
            text = text[label.end() :]
        if open_block is not None and whole and row == previous_row + 1 and _BULLET.match(text):
            texts[open_block] += " ; " + text
            previous_row = row
            continue
        open_block = None
        if _DEPENDS_CUE.search(text):
            texts.append(text)
            open_block = len(texts) - 1 if whole else None
        else:
            after_from = [m.group("ref") for m in _FROM_REF.finditer(text)]
            if after_from:
                texts.append(" ; ".join(after_from))
        previous_row = row
    return texts


def _expand(listing: str) -> set[int]:
    """Turn numbers named by one reference list such as '1, 8, and 9', '14/17' or '2--4'."""
    numbers: set[int] = set()
    last: int | None = None
    pending_range = False
    for number, dash in _TOKEN.findall(listing):
        if dash:
            pending_range = last is not None
            continue
        if not number:
            continue
        value = int(number)
        if pending_range and last is not None:
            if last < value <= last + MAX_RANGE_SPAN:
                numbers.update(range(last, value + 1))
                last = value
            # an implausible range keeps only its start (already recorded)
            pending_range = False
            continue
        numbers.add(value)
        last = value
    return numbers


def references(text: str) -> set[int]:
    """Every turn number referenced in one dependency comment."""
    found: set[int] = set()
    for match in _REF.finditer(text):
        found |= _expand(match.group("list"))
    return found


def turn_dependencies(turn_id: int, code: str) -> list[int]:
    """Pa(turn_id): the earlier turns the turn's reference code declares it depends on."""
    refs: set[int] = set()
    for text in dependency_comments(code, turn_id):
        refs |= references(text)
    return sorted(d for d in refs if 0 < d < turn_id)


def parse_dependencies(turns: Iterable[Mapping[str, Any]]) -> dict[int, list[int]]:
    """Map every turn_id to its sorted parent turns, from turns as loaded from task.json.

    Each turn needs an integer `turn_id`; a missing `code` counts as no declaration. Raises
    ValueError naming the position of a turn without a usable id, or a repeated id.
    """
    parents: dict[int, list[int]] = {}
    for position, turn in enumerate(turns, start=1):
        turn_id = turn.get("turn_id") if isinstance(turn, Mapping) else None
        if isinstance(turn_id, bool) or not isinstance(turn_id, int) or turn_id < 1:
            raise ValueError(f"turn #{position}: 'turn_id' must be a positive integer, got {turn_id!r}")
        if turn_id in parents:
            raise ValueError(f"turn #{position}: turn_id {turn_id} appears twice; turn ids must be unique")
        code = turn.get("code") or ""
        if not isinstance(code, str):
            raise ValueError(f"turn {turn_id}: 'code' must be a string, got {type(code).__name__}")
        parents[turn_id] = turn_dependencies(turn_id, code)
    return parents
