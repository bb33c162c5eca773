"""A number the turn states on one side that the code's one test of it keeps on the other.

    "In how many districts do more than half of the pupils qualify for a reduced-price lunch?"
    SELECT COUNT(*) FROM schools WHERE meal_pct < 50       -- the one test of 50 keeps the lower side

The evidence is the number and the side, not the words around them:
- stated: a number right after (or before) a comparator in the turn's question and own context, said
  on one side only ("more than half" is 50 percent); a text with a word that drops, excludes or
  contrasts rows anywhere ("Patients followed for less than 30 days tell us little. Drop them", "the
  others", "not above") may state the side of the rows it does not keep, and is not read at all;
- applied: the code's comparisons against a plain number (`unstated_cutoff.sites`, mirrored where the
  number stands first: `50 > x` keeps the lower side); exactly one of them tests the stated number (in
  any of its forms), on the other side, and none on the stated side; a comparison on a line that
  labels both sides (`CASE WHEN`, `np.where`, `... if ... else ...`) is not read;
- the answer gate: the turn re-run with that comparison turned to the stated side (keeping its
  strictness) must report another answer.

    flipped(said, code)     the comparison and its turned version, or None
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.verification.requirements import METHODS, MIRROR, Kind, Requirement
from stateguard.verification.unstated_cutoff import _code_text, _has, bounds, mentioned, site_op, sites

# words that make a clause state the rows it does not keep, or set one side against the other
_OTHER_SIDE = re.compile(
    r"\b(?:drop\w*|exclud\w*|remov\w*|leav\w*|discard\w*|without|not|no|never|except|outside|other\w*|"
    r"rest|remaining|instead|rather|unless|filter\w*\s+out|cut\s+out|omit\w*|ignor\w*|n't|"
    r"aside|throw\w*\s+out|left)\b",
    re.IGNORECASE,
)
_BOTH_SIDES = re.compile(r"\bwhere\(|\bselect\(|\bif\b.*\belse\b|\bcut\(", re.IGNORECASE)
# a SQL CASE labels both sides of the comparisons inside it only: `SUM(CASE WHEN child5 > 0 ...) ...
# WHERE education >= 16` tests 16 on one side
_CASE = re.compile(r"\bCASE\b.*?(?:\bEND\b|\Z)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Flipped:
    stated: float
    op: str  # the stated side's comparator
    text: str  # the words stating it
    before: str
    after: str
    status: str = "differs"  # "threshold": the stated side, but not its end (`> 12` for "at least 12")


def _up(op: str) -> bool:
    return op.startswith(">")


def stated_sides(said: str) -> dict[tuple[float, bool], tuple[set[bool], str]]:
    """(number, said as a percentage) -> (the sides it is stated on: True for above, its words), for the
    one-sided bounds `unstated_cutoff.bounds` reads (a range's ends have no side)."""
    out: dict[tuple[float, bool], tuple[set[bool], str]] = {}
    # a text that drops or contrasts rows may state the side it does not keep ("Patients followed for
    # less than 30 days tell us little. Drop them"): both sides, unread
    contrasted = _OTHER_SIDE.search(said) is not None
    for x, pct, op, words in bounds(said):
        if op is None:
            continue
        sides, first = out.get((x, pct), (set(), words))
        out[(x, pct)] = (sides | ({True, False} if contrasted else {_up(op)}), first)
    return out


def stated_ops(said: str) -> dict[tuple[float, bool], set[str]]:
    """(number, said as a percentage) -> the comparators it is stated with ("at least 12" is >=), for
    a text that drops or contrasts no rows."""
    out: dict[tuple[float, bool], set[str]] = {}
    if _OTHER_SIDE.search(said):
        return out
    for x, pct, op, _ in bounds(said):
        if op is not None:
            out.setdefault((x, pct), set()).add(op)
    return out


def _side_of(m: re.Match[str]) -> str:
    """The comparator as it reads with the tested value first (`50 > x` is x < 50)."""
    op = site_op(m)
    return MIRROR[op] if m.start("k") < m.start("op") else op


def _in_case(text: str, at: int) -> bool:
    """Is position `at` of the code inside a SQL `CASE ... END` (on one line or several)?"""
    return any(m.start() <= at < m.end() for m in _CASE.finditer(text))


def _said_apart(said: str, x: float, pct: bool) -> bool:
    """Is the number also said with no side, apart from its bounds ("treats the bottom mark, 1, as
    low ... how many lecturers got at least one")? The code's one test of it may then be that
    mention's, and the bound's side says nothing about it."""
    rest = said
    for y, ypct, _, words in bounds(said):
        if (y, ypct) == (x, pct):
            rest = rest.replace(words, " ")
    return any(abs(n - x) <= 1e-9 * max(1.0, abs(x)) for n in mentioned([rest]))


def flipped(said: str, code: str) -> Flipped | None:
    text = _code_text(code)
    lines = text.splitlines()
    found: list[Flipped] = []
    ops = stated_ops(said)
    for (x, pct), (sides, words) in stated_sides(said).items():
        if len(sides) != 1 or _said_apart(said, x, pct):
            continue
        up = next(iter(sides))
        # the same number on the same sign ("falls by more than 5%" is tested as `< -5`: another side)
        at = [
            (t, m)
            for t, k, m in sites(code)
            if "op" in m.groupdict() and _has({k}, x, pct) and (k < 0) == (x < 0)
        ]
        line_of = [text.count("\n", 0, m.start()) for _, m in at]
        if len(at) != 1 or _BOTH_SIDES.search(lines[line_of[0]]) or _in_case(text, at[0][1].start()):
            continue
        before, m = at[0]
        side = _side_of(m)
        said_ops = ops.get((x, pct), set())
        if (
            _up(side) == up
            and len(said_ops) == 1
            and side != next(iter(said_ops))
            and code.count(before) == 1
        ):
            # the stated side, but not its end: "at least twelve years" tested `> 12`
            op_at = (m.start("op") - m.start(0), m.end("op") - m.start(0))
            if m.group("op") in METHODS:
                continue  # `.gt(12)`: left to the side check
            stated = next(iter(said_ops))
            written = stated if m.start("k") > m.start("op") else MIRROR[stated]
            after = before[: op_at[0]] + written + before[op_at[1] :]
            found.append(Flipped(x, stated, words, before, after, "threshold"))
            continue
        if _up(side) == up or code.count(before) != 1:
            continue
        op_at = (m.start("op") - m.start(0), m.end("op") - m.start(0))
        written = m.group("op")
        turned = (
            {v: k for k, v in METHODS.items()}[MIRROR[METHODS[written]]]
            if written in METHODS
            else MIRROR[written]
        )
        after = before[: op_at[0]] + turned + before[op_at[1] :]
        stated_op = ">" if up else "<"
        found.append(Flipped(x, stated_op, words, before, after))
    return found[0] if len(found) == 1 else None


def requirement(found: Flipped) -> Requirement:
    return Requirement(
        kind=Kind.COMPARISON, text=found.text, op=found.op, value=found.stated, subject=["the compared value"]
    )


PROBE = "_v = True\n_o = {'tests_the_other_side': True}"
