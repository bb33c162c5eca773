"""Deterministic field judge: is a reported answer dict correct on the requested fields?

Offline counterpart of LongDS's LLM judge criteria: only the fields present in the expected
answer are judged (`answer_type` is a label and ignored); numbers must match exactly up to
trailing zeros; strings match ignoring case and surrounding spaces; lists are compared in
order; nested dicts recursively. A missing field is wrong.

    judge_fields({"revenue": 720.0}, {"revenue": 720, "note": "x"}) -> True
"""

from __future__ import annotations

import math
from typing import Any

IGNORED = frozenset({"answer_type"})


def _equal(expected: Any, got: Any) -> bool:
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(expected, bool) and expected == got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(float(expected), float(got), rel_tol=0.0, abs_tol=1e-9)
    if isinstance(expected, str) and isinstance(got, str):
        return expected.strip().lower() == got.strip().lower()
    if isinstance(expected, dict) and isinstance(got, dict):
        return all(k in got and _equal(v, got[k]) for k, v in expected.items() if k not in IGNORED)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(_equal(a, b) for a, b in zip(expected, got, strict=True))
    return bool(expected == got)


def judge_fields(expected: Any, got: Any) -> bool:
    """True when every requested field of `expected` is matched by `got`."""
    if got is None:
        return False
    return _equal(expected, got)


def per_turn_correct(expected: dict[int, Any], answers: dict[int, Any]) -> dict[int, bool]:
    return {turn: judge_fields(truth, answers.get(turn)) for turn, truth in sorted(expected.items())}
