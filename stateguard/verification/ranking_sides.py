"""The direction of a pandas ranking whose top rows the code reads into something that is no ranked frame.

    "Which three pids are the lightest (lightest first)?"
    reported.sort_values(["weight", "pid"], ascending=False).head(3)["pid"].tolist()

The ranking's own check reads a ranked frame; a list of ids taken from it carries no order to read.
Here the facts are the question's one ranking (`extract.rankings`: its direction) and the code's one
`.sort_values(...)` call cut by `.head(...)`, whose first key runs the other way (its later keys are
tie-breaks and stay). The call is written with the first key the stated way round, the turn re-run,
and a finding needs another answer (the answer gate).

    turned(code, descending)    (before, after) for the one sort call, or None
"""

from __future__ import annotations

import ast
import re

from stateguard.verification.requirements import Kind, Requirement


def _call_end(code: str, start: int) -> int | None:
    """The index just past the parenthesis closing the call whose arguments start at `start`."""
    depth = 1
    for i in range(start, len(code)):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return i + 1
    return None


def _keys(call: ast.Call) -> list[str] | None:
    node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "by"), None)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _cut_by_head(code: str, start: int, end: int, through_name: bool) -> bool:
    """Is the sort call at `code[start:end]` cut by `.head(...)`: right after it, or (`through_name`)
    through the name its statement binds (`eldest = df.sort_values(...)`, then `eldest["id"].head(5)`)?"""
    if re.match(r"\s*\.head\(", code[end:]):
        return True
    if not through_name:
        return False
    line_start = code.rfind("\n", 0, start) + 1
    bound = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", code[line_start:start])
    rest = code[end:]
    if bound is None or not re.match(r"[ \t]*(?:#.*)?(?:\n|$)", rest):
        return False
    name = re.escape(bound.group(1))
    return re.search(rf"(?<![\w.]){name}(?:\[[^\]\n]*\])?\.head\(", rest) is not None


def _sort_call(code: str, through_name: bool) -> tuple[int, int] | None:
    """Where the code's one `.sort_values(...)` call cut by `.head(...)` (`_cut_by_head`) starts and ends."""
    calls = list(re.finditer(r"\.sort_values\(", code))
    end = _call_end(code, calls[0].end()) if len(calls) == 1 else None
    if end is None or not _cut_by_head(code, calls[0].start(), end, through_name):
        return None
    return calls[0].start(), end


def turned(code: str, descending: bool, through_name: bool = False) -> tuple[str, str] | None:
    """`through_name`: also a sort whose bound name is cut by `.head` (a ranked frame the question's
    ranking words are read on by the ranking's own check otherwise)."""
    span = _sort_call(code, through_name)
    if span is None:
        return None
    before = code[span[0] : span[1]]
    try:
        call = ast.parse(f"f{before[len('.sort_values') :]}", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or (keys := _keys(call)) is None:
        return None
    given = next((k for k in call.keywords if k.arg == "ascending"), None)
    if given is None:
        ascending = [True] * len(keys)
    elif isinstance(given.value, ast.Constant) and isinstance(given.value.value, bool):
        ascending = [given.value.value] * len(keys)
    elif isinstance(given.value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, bool) for e in given.value.elts
    ):
        ascending = [bool(e.value) for e in given.value.elts]  # type: ignore[attr-defined]
    else:
        return None
    if len(ascending) != len(keys) or ascending[0] is (not descending):
        return None
    ascending[0] = not descending
    value = ast.Constant(ascending[0]) if len(keys) == 1 else ast.List([ast.Constant(a) for a in ascending])
    call.keywords = [k for k in call.keywords if k.arg != "ascending"] + [ast.keyword("ascending", value)]
    after = ".sort_values(" + ast.unparse(call)[len("f(") :]
    return before, after


# "the five oldest", "which three are the youngest": a superlative of age, whose direction is the
# ranked key's (the oldest have the largest age, but the earliest birth date)
_AGED = re.compile(
    r"\b(?:the|which)\s+(?:(?P<k>\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+)?"
    r"(?:[a-z_-]+\s+){0,3}?(?:are\s+|were\s+)?(?:the\s+)?(?P<word>oldest|eldest|youngest)\b",
    re.IGNORECASE,
)


def first_key(code: str) -> str | None:
    """The first key of the code's one `.sort_values(...)` call cut by `.head(...)` (`_cut_by_head`)."""
    span = _sort_call(code, through_name=True)
    if span is None:
        return None
    try:
        call = ast.parse(f"f{code[span[0] + len('.sort_values') : span[1]]}", mode="eval").body
    except SyntaxError:
        return None
    keys = _keys(call) if isinstance(call, ast.Call) else None
    return keys[0] if keys else None


def aged(question: str, code: str) -> Requirement | None:
    """The question's one superlative of age ("the five oldest"), as a ranking of the code's first
    sort key when that key is an age (`age`, `mthage`, `age_years`): the oldest first is the largest
    age first. Another key (a birth year, a date) or two such superlatives: no reading."""
    found = list(_AGED.finditer(question))
    key = first_key(code)
    if len(found) != 1 or key is None:
        return None
    tokens = [t for t in re.split(r"[_\W]+", key.lower()) if t]
    if not any(t == "age" or (t.endswith("age") and len(t) <= 6) for t in tokens):
        return None
    m = found[0]
    return Requirement(
        kind=Kind.ORDER, text=m.group(0), descending=m.group("word").lower() != "youngest", subject=[key]
    )


def requirement(req: Requirement) -> Requirement:
    return Requirement(
        kind=Kind.ORDER, text=req.text, k=req.k, descending=req.descending, subject=req.subject
    )


PROBE = "_v = True\n_o = {'ranks_the_other_way': True}"
