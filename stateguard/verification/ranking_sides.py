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


def turned(code: str, descending: bool) -> tuple[str, str] | None:
    calls = list(re.finditer(r"\.sort_values\(", code))
    if len(calls) != 1:
        return None
    end = _call_end(code, calls[0].end())
    if end is None or not re.match(r"\s*\.head\(", code[end:]):
        return None
    before = code[calls[0].start() : end]
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


def requirement(req: Requirement) -> Requirement:
    return Requirement(
        kind=Kind.ORDER, text=req.text, k=req.k, descending=req.descending, subject=req.subject
    )


PROBE = "_v = True\n_o = {'ranks_the_other_way': True}"
