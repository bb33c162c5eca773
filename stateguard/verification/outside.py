"""A range the question asks the complement of, tested as the range itself.

    "count the remaining counties whose rate lies outside the band from 25 to 50"
    COUNT(*) FILTER (WHERE rate BETWEEN 25 AND 50)          -- the band, not outside it

The words give two numbers and the side ("outside"); the code gives the test: exactly one range
test on those two numbers (`BETWEEN 25 AND 50`, `.between(25, 50)`) that nothing negates, and no
negated one anywhere in the turn. The turn re-run with that test negated must report another
answer (the answer gate) before a finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.verification.requirements import Kind, Requirement

_AMOUNT = r"\$?(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)"
_OUTSIDE = re.compile(
    r"\boutside\s+(?:of\s+)?(?:the\s+)?(?:(?:band|range|interval|bracket|window|span)\s+)?(?:of\s+|from\s+)?"
    + _AMOUNT
    + r"\s*(?:to|through|-|–|and)\s*"
    + _AMOUNT,
    re.IGNORECASE,
)
_NUMBER = r"(-?\d+(?:\.\d+)?)"
# pandas `x.between(a, b)` (its receiver up to the call) and SQL `BETWEEN a AND b`, each with what
# stands right before it, to tell a negated test from a plain one
_PANDAS = re.compile(
    r"(?P<pre>~\s*\(?\s*)?(?P<recv>[A-Za-z_][\w.]*(?:\[[^\]]+\])?)\.between\(\s*"
    + _NUMBER
    + r"\s*,\s*"
    + _NUMBER
    + r"\s*\)"
)
_SQL = re.compile(r"(?P<pre>\bNOT\s+)?\bBETWEEN\s+" + _NUMBER + r"\s+AND\s+" + _NUMBER + r"\b", re.IGNORECASE)


@dataclass(frozen=True)
class Flipped:
    text: str  # the question's words
    low: float
    high: float
    before: str  # the code's range test
    after: str  # the same test negated


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def asked(question: str) -> list[tuple[float, float, str]]:
    """(low, high, words) for each range the question asks the outside of."""
    out = []
    for m in _OUTSIDE.finditer(question):
        low, high = sorted((_number(m.group(1)), _number(m.group(2))))
        out.append((low, high, m.group(0)))
    return out


def flipped(question: str, code: str) -> list[Flipped]:
    """The code's one plain range test on the numbers of a range the question asks the outside of."""
    out = []
    for low, high, words in asked(question):
        plain, negated = [], 0
        for m in _PANDAS.finditer(code):
            if sorted((float(m.group(3)), float(m.group(4)))) == [low, high]:
                if m.group("pre"):
                    negated += 1
                else:
                    plain.append((m.group(0), f"~{m.group(0)}"))
        for m in _SQL.finditer(code):
            if sorted((float(m.group(2)), float(m.group(3)))) == [low, high]:
                if m.group("pre"):
                    negated += 1
                else:
                    plain.append((m.group(0), f"NOT {m.group(0)}"))
        if negated == 0 and len(plain) == 1 and code.count(plain[0][0]) == 1:
            out.append(Flipped(words, low, high, *plain[0]))
    return out


def requirement(found: Flipped) -> Requirement:
    return Requirement(
        kind=Kind.COMPARISON,
        text=found.text,
        op=">=",
        value=found.low,
        upper=found.high,
        subject=["range"],
    )


PROBE = "_v = True\n_o = {'tests_the_range_not_its_outside': True}"
