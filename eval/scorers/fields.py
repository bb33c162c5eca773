"""Deterministic field judge: is a reported answer dict correct on the requested fields?

Offline counterpart of LongDS's LLM judge criteria (paper C.3):
* only the fields present in the expected answer are judged; `answer_type` and `primary_metric`
  are labels and ignored; a field name with no exact match matches regardless of case, spaces,
  `-` and `_` (when that is unambiguous);
* field names are labels too (paper C.3: the judge ignores labels): a requested field that the
  answer does not name (not even ambiguously) counts when one of the answer's other fields holds its value, each answer
  field standing for at most one requested field. A field the answer does name must hold the
  right value (no fallback to another field). docs/answer_matching.md says why;
* numbers must match exactly up to trailing zeros, unless the expected dict states a tolerance
  (`tolerance` or `abs_tol`: absolute, `rel_tol`: relative; it applies to every number inside
  that dict); a number written as text ("1,234.50", "$75.8533", "75.85330") counts as that
  number, and a trailing "%" is dropped without rescaling ("12.5%" is 12.5, not 0.125);
* strings match ignoring case and runs of white space;
* lists are compared in order, except that adjacent records tied on their ranking value may
  come in any order (the ranking value is the field named by a sibling `primary_metric`, else
  all numeric fields of the record); nested dicts recursively. A missing field is wrong.

    judge_fields({"revenue": 720.0}, {"revenue": 720, "note": "x"}) -> True
    judge_fields({"n_orders": 10}, {"number_of_orders": 10}) -> True
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

IGNORED = frozenset({"answer_type", "primary_metric"})  # labels describing the answer, not values
TOLERANCE_KEYS = frozenset({"tolerance", "abs_tol", "rel_tol"})
EXACT = 1e-9  # "exact": only float noise is forgiven

_NUMBER_TEXT = re.compile(r"^[-+]?\$?[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?%?$")


@dataclass(frozen=True)
class _Tolerance:
    absolute: float = EXACT
    relative: float = 0.0


EXACT_TOLERANCE = _Tolerance()


def _number(value: Any) -> float | None:
    """A real number, or text that is wholly one number in common notation; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an int beyond float range: compared with ==, not as a number
            return None
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        if not text or not _NUMBER_TEXT.match(text) or not any(c.isdigit() for c in text):
            return None
        try:
            return float(text.replace("$", "").replace(",", "").rstrip("%"))
        except ValueError:
            return None
    return None


def _key(name: Any) -> str:
    return re.sub(r"[\s_\-]+", "", str(name)).casefold()


def _lookup(got: dict[Any, Any], key: Any) -> tuple[bool, Any]:
    if key in got:
        return True, got[key]
    matches = [v for k, v in got.items() if _key(k) == _key(key)]
    return (True, matches[0]) if len(matches) == 1 else (False, None)


def _name_of(got: dict[Any, Any], key: Any) -> Any:
    """The answer's own key for requested field `key` (after `_lookup` found it)."""
    if key in got:
        return key
    return next(k for k in got if _key(k) == _key(key))


def _assign(wanted: list[Any], spare: list[Any], tol: _Tolerance, metric: Any) -> bool:
    """Can every value in `wanted` be matched by a distinct value in `spare`? (The paper's judge
    ignores labels: a requested field reported under another name counts by its value.)"""
    if not wanted:
        return True
    first, rest = wanted[0], wanted[1:]
    for i, candidate in enumerate(spare):
        if _equal(first, candidate, tol, metric) and _assign(rest, spare[:i] + spare[i + 1 :], tol, metric):
            return True
    return False


def _tolerance(expected: dict[Any, Any], outer: _Tolerance) -> _Tolerance:
    absolute = _number(expected.get("tolerance", expected.get("abs_tol")))
    relative = _number(expected.get("rel_tol"))
    if absolute is None and relative is None:
        return outer
    return _Tolerance(
        absolute=abs(absolute) if absolute is not None else outer.absolute,
        relative=abs(relative) if relative is not None else outer.relative,
    )


def _rank_value(record: Any, metric: Any) -> tuple[float, ...] | None:
    """What a ranked record is ordered by; None when it has no numeric value to tie on."""
    if not isinstance(record, dict):
        return None
    if isinstance(metric, str) and metric in record and _number(record[metric]) is not None:
        return (_number(record[metric]) or 0.0,)
    values = tuple(
        n
        for k, v in sorted(record.items(), key=lambda kv: str(kv[0]))
        if k not in IGNORED and (n := _number(v)) is not None and not isinstance(v, str)
    )
    return values or None


def _tied_blocks(expected: list[Any], metric: Any) -> list[list[Any]]:
    blocks: list[list[Any]] = []
    previous: tuple[float, ...] | None = None
    for item in expected:
        value = _rank_value(item, metric)
        if blocks and value is not None and value == previous:
            blocks[-1].append(item)
        else:
            blocks.append([item])
        previous = value
    return blocks


def _same_multiset(expected: list[Any], got: list[Any], tol: _Tolerance) -> bool:
    remaining = list(got)
    for item in expected:
        for i, candidate in enumerate(remaining):
            if _equal(item, candidate, tol):
                del remaining[i]
                break
        else:
            return False
    return True


def _equal_lists(expected: list[Any], got: list[Any], tol: _Tolerance, metric: Any) -> bool:
    if len(expected) != len(got):
        return False
    start = 0
    for block in _tied_blocks(expected, metric):
        part = got[start : start + len(block)]
        if not (_equal(block[0], part[0], tol) if len(block) == 1 else _same_multiset(block, part, tol)):
            return False
        start += len(block)
    return True


def _equal(expected: Any, got: Any, tol: _Tolerance = EXACT_TOLERANCE, metric: Any = None) -> bool:
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(expected, bool) and expected == got
    want, have = _number(expected), _number(got)
    if want is not None and have is not None:
        return math.isclose(want, have, rel_tol=tol.relative, abs_tol=tol.absolute)
    if isinstance(expected, str) and isinstance(got, str):
        return " ".join(expected.split()).casefold() == " ".join(got.split()).casefold()
    if isinstance(expected, dict) and isinstance(got, dict):
        inner = _tolerance(expected, tol)
        metric = expected.get("primary_metric")
        unnamed: list[Any] = []  # requested fields the answer does not name
        claimed: set[Any] = set()  # answer fields matched to a requested field by name
        for key, value in expected.items():
            if key in IGNORED or key in TOLERANCE_KEYS:
                continue
            found, other = _lookup(got, key)
            if not found:
                if any(_key(k) == _key(key) for k in got):
                    return False  # named, but by several fields at once: ambiguous, not unnamed
                unnamed.append(value)
                continue
            claimed.add(_name_of(got, key))
            if not _equal(value, other, inner, metric):
                return False
        spare = [
            v for k, v in got.items() if k not in claimed and k not in IGNORED and k not in TOLERANCE_KEYS
        ]
        return _assign(unnamed, spare, inner, metric)
    if isinstance(expected, list) and isinstance(got, list):
        return _equal_lists(expected, got, tol, metric)
    return bool(expected == got)


def judge_fields(expected: Any, got: Any) -> bool:
    """True when every requested field of `expected` is matched by `got`."""
    if got is None:
        return False
    return _equal(expected, got)


def per_turn_correct(expected: dict[int, Any], answers: dict[int, Any]) -> dict[int, bool]:
    return {turn: judge_fields(truth, answers.get(turn)) for turn, truth in sorted(expected.items())}
