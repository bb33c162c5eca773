"""Small readings of code text that several checks share: balanced parentheses, and the value a
reported field holds with its conversions taken off.

    balanced("x.ge(2.0)")                       -> True
    unwrapped("int(len(kept))")                 -> "len(kept)"
    unwrapped("round(x.mean(), 2)", rounding=True) -> "x.mean()"
"""

from __future__ import annotations

import re

_CONVERSION = re.compile(r"^\s*(?:int|float)\((?P<inner>.+)\)\s*$", re.DOTALL)
# a rounding to some places: `round(x, 2)`, `np.round(x, 2)`
_ROUNDING = re.compile(r"^\s*(?:round|(?:np|numpy)\.round)\((?P<inner>.+?)(?:,\s*\d+)?\)\s*$", re.DOTALL)


def balanced(text: str) -> bool:
    """Does every parenthesis the text opens close, and none close before it opens?"""
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def unwrapped(text: str, rounding: bool = False) -> str:
    """The value a field holds, with the `int(...)` / `float(...)` around it taken off (and, with
    `rounding`, a `round(..., n)` too); a call that does not wrap the whole text (`int(a) + int(b)`)
    stays."""
    patterns = [_CONVERSION, _ROUNDING] if rounding else [_CONVERSION]
    text = text.strip()
    while (
        m := next((m for p in patterns if (m := p.match(text)) and balanced(m.group("inner"))), None)
    ) is not None:
        text = m.group("inner").strip()
    return text
