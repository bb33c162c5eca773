"""Structural check that a repair hint carries no code and no answer (paper A.5).

A repair hint may name affected variables and explain what is wrong; it may not prescribe a
fix. This is enforced by parsing, not by keyword lists:
  * fenced or indented code blocks are refused;
  * every line, every `backtick span`, and every call/subscript/assignment/import fragment found
    inside prose is handed to Python's parser; a fragment that parses as a statement, or as an
    expression that calls, indexes or builds something, is refused;
  * every number in the hint is compared with the state's own computed values (variables,
    conclusions, probe results), rounded to the number's precision; a match is refused unless
    the number is a small count (0..10) or appears in the task's own text.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable
from typing import Any

_FENCE = re.compile(r"(```|~~~)")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_CALLISH = re.compile(
    r"(?<![\w.])[A-Za-z_][\w.]*[(\[]"
)  # no space before '(': "cents (not dollars)" is prose
_ASSIGNISH = re.compile(r"(?<![\w.])[A-Za-z_][\w.\[\]'\"]*\s*(?:[-+*/%]|//|\*\*)?=(?!=)")
_KEYWORD_START = re.compile(
    r"(?<!\w)(import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\s*\(|lambda\b[^:\n]*:|class\s+\w+)"
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?%?")

_STATEMENTS = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.While,
    ast.With,
    ast.If,
    ast.Try,
    ast.Return,
    ast.Delete,
    ast.Raise,
    ast.Assert,
    ast.Global,
    ast.Nonlocal,
)
_CODE_EXPRESSIONS = (
    ast.Call,
    ast.Subscript,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.NamedExpr,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
)


class HintRejected(ValueError):
    """The repair hint would leak code or an answer; the message says what and how to rephrase."""


def _is_code(fragment: str, *, prose_follows: bool = False) -> bool:
    """Does the fragment parse as a statement, or as an expression that calls/indexes/builds?

    With `prose_follows` (a prefix of a longer sentence) a bare `import word` or `x = word` is
    not enough: "import duties rose" is English; `import pandas as pd` is not.
    """
    fragment = fragment.strip().rstrip(".;,")
    if not fragment:
        return False
    try:
        tree = ast.parse(fragment)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if prose_follows and isinstance(node, ast.Import) and not any(a.asname for a in node.names):
            continue
        if prose_follows and isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            continue  # "x = the total ..." is English; "x = 5" or "x = a / b" is not
        if isinstance(node, _STATEMENTS + _CODE_EXPRESSIONS):
            return True
    return False


def _prefix_is_code(fragment: str) -> bool:
    """Code followed by more prose ("Use x = a / b when ..."): try each word-boundary prefix."""
    words = fragment.split()
    return any(_is_code(" ".join(words[:n]), prose_follows=n < len(words)) for n in range(len(words), 0, -1))


def _balanced_end(text: str, start: int) -> int:
    """Index just past the bracket group (and any chained .attr(...) / [...]) that opens at or after start."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                nxt = re.match(r"\s*(\.[A-Za-z_]\w*\s*)?[(\[]", text[i + 1 :])
                if nxt:  # chained call or index: continue from its opening bracket
                    i += nxt.end()
                    continue
                return i + 1
        i += 1
    return len(text)


def _code_fragments(line: str) -> Iterable[tuple[str, bool]]:
    """(fragment, try_prefixes) candidates of a line."""
    yield line, False
    for span in _BACKTICK.findall(line):
        yield span, False
    for match in _CALLISH.finditer(line):
        yield line[match.start() : _balanced_end(line, match.end() - 1)], False
    for match in list(_ASSIGNISH.finditer(line)) + list(_KEYWORD_START.finditer(line)):
        yield line[match.start() :], True


def find_code(text: str) -> str | None:
    """The first code fragment in `text`, or None."""
    fence = _FENCE.search(text)
    if fence:
        return fence.group(0) + " code block"
    for raw in text.splitlines():
        if raw.startswith(("    ", "\t")) and _is_code(raw):
            return raw.strip()
        for fragment, prefixes in _code_fragments(raw):
            if _prefix_is_code(fragment) if prefixes else _is_code(fragment):
                return fragment.strip()
    return None


def _numbers_in(value: Any) -> Iterable[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int beyond float range cannot be quoted back at float precision
            return
        if math.isfinite(number):
            yield number
    elif isinstance(value, str):
        for match in _NUMBER.finditer(value):
            yield _to_float(match.group(0))
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers_in(v)
    elif isinstance(value, list | tuple | set):
        for v in value:
            yield from _numbers_in(v)


def _to_float(literal: str) -> float:
    return float(literal.replace(",", "").rstrip("%"))


def _decimals(literal: str) -> int:
    body = literal.rstrip("%").lower().split("e")[0]
    return len(body.split(".")[1]) if "." in body else 0


def find_leaked_value(text: str, protected: Iterable[Any], allowed_text: str = "") -> str | None:
    """A number in `text` that equals one of the protected values at the number's precision."""
    values = [v for v in _numbers_in(list(protected)) if v == v]
    if not values:
        return None
    allowed = {_to_float(m.group(0)) for m in _NUMBER.finditer(allowed_text)}
    for match in _NUMBER.finditer(text):
        literal = match.group(0)
        number = _to_float(literal)
        if number in allowed or (number.is_integer() and 0 <= number <= 10):
            continue
        places = _decimals(literal)
        for value in values:
            scaled = value * 100 if literal.endswith("%") and abs(value) <= 1 else value
            if any(
                math.isclose(round(v, places), number, rel_tol=1e-12, abs_tol=1e-12) for v in (value, scaled)
            ):
                return literal
    return None


def check_repair_hint(
    faulty_reasoning: str,
    error_variables: Iterable[str],
    *,
    protected_values: Iterable[Any] = (),
    allowed_text: str = "",
) -> None:
    """Raise HintRejected if the hint carries code or one of the state's computed values."""
    for field, text in [("faulty_reasoning", faulty_reasoning)] + [
        (f"error_variables[{i}]", v) for i, v in enumerate(error_variables)
    ]:
        code = find_code(text)
        if code is not None:
            raise HintRejected(
                f"REPAIR rejected: error_hint.{field} contains code ({code!r}). A repair hint names the "
                "affected variables and explains the fault in words; it must not contain code or a fix."
            )
        leaked = find_leaked_value(text, protected_values, allowed_text)
        if leaked is not None:
            raise HintRejected(
                f"REPAIR rejected: error_hint.{field} states the value {leaked}, which equals a result "
                "computed in this state. Describe what is wrong (e.g. the wrong precision or a stale input) "
                "without giving values or answers."
            )
