"""A stated bound whose words name no column, bound through a flag an earlier turn defined.

    "which wives reach 1.3 times the median hours for their husband's occupation yet work under
     1,800 hours?"   -- earlier: `hours >= 1800 AS full_year`; now: `... AND NOT p.full_year`

The words around "under 1,800" ("yet work") name no column, so the whole-clause reading abstains,
and the turn's code tests no column against 1,800 either: it reads the flag (`NOT full_year`,
`~late["well_paid"]`). The run's own history settles what the bound is about: exactly one column is
compared with the stated number alone by some recorded version of some flag (`hours >= 1800`). The
bound is then on that column, with the side the question states, and it holds for the rows behind
the answer: a statement of the turn's code that reads the column and does not test it against the
number must keep only rows that meet it. Every such statement must break it for a finding (one
statement that keeps the right rows is enough, as for any kept-rows check).

Abstains when the number is stated more than once, when two columns (or none) carry a flag cut at
it, when the code tests the column against the number itself (the ordinary bindings read it), and
when the code reads one of those flags inside an aggregate (`SUM(CASE WHEN NOT full_year ...)`,
`frame["full_year"].mean()`): the bound then qualifies a count or a share, not the rows.
"""

from __future__ import annotations

import re

from stateguard.inspection.code_model import CodeSemantics
from stateguard.verification import bind_cutoff
from stateguard.verification.bind_loose import code_tests, named_once
from stateguard.verification.binder import close
from stateguard.verification.requirements import ORDER_OPS, Kind, Requirement
from stateguard.verification.superseded import FlagHistory


def cut_flags(history: FlagHistory, req: Requirement) -> dict[str, tuple[str, float]]:
    """flag -> (column, number as the code writes it), for every flag one of whose recorded versions
    is `column op number` alone with the bound's number (in the bound's unit: a percentage's fraction
    counts)."""
    assert req.value is not None
    out: dict[str, tuple[str, float]] = {}
    for versions in history.versions.values():
        for v in versions:
            cut = _one_cut(v.shape)
            if cut is not None and close(cut[1], req.value * bind_cutoff.scale_for(req, cut[1])):
                out[v.flag] = cut
    return out


def _one_cut(shape: tuple[tuple[str, str | float], ...]) -> tuple[str, float] | None:
    """(column, number) when the expression is one comparison of a column with a number, maybe
    inside a wrapper (`coalesce(mspike >= 2.0, false)`): its only operator, a column before it and a
    number after it."""
    ops = [i for i, (kind, _) in enumerate(shape) if kind == "op"]
    if len(ops) != 1 or shape[ops[0]][1] not in ORDER_OPS:
        return None
    at = ops[0]
    if at == 0 or at + 1 >= len(shape) or shape[at - 1][0] != "col" or shape[at + 1][0] != "num":
        return None
    if sum(kind == "num" for kind, _ in shape) != 1:
        return None
    return str(shape[at - 1][1]), float(shape[at + 1][1])


def _aggregated(flag: str, code: str) -> bool:
    """The code reads the flag inside an aggregate or a conditional count (read widely: an aggregate
    call anywhere before a later mention of the flag counts, so this abstains more often than it
    must)."""
    name = re.escape(flag)
    sql = re.search(rf"\b(?:SUM|AVG|COUNT|MEAN|BOOL_OR|BOOL_AND|MAX|MIN)\s*\([^;]*?\b{name}\b", code, re.I)
    sql_filter = re.search(rf"\bFILTER\s*\(\s*WHERE[^)]*\b{name}\b", code, re.I)
    pandas = re.search(rf"[\"']{name}[\"']\s*\]\s*\)?\s*\.\s*(?:sum|mean|any|all|value_counts)\(", code)
    return bool(sql or sql_filter or pandas)


def bound_column(
    history: FlagHistory, question: str, req: Requirement, code: str, sem: CodeSemantics
) -> tuple[str, float] | None:
    """The one column the loose bound `req` is on, through a recorded flag's cut, and the factor
    from the stated number to the code's (0.01 for a percentage the code writes as a fraction);
    None to abstain."""
    if req.kind is not Kind.COMPARISON or req.op not in ORDER_OPS or req.value is None:
        return None
    if req.upper is not None or req.function or not named_once(question, req):
        return None
    flags = cut_flags(history, req)
    columns = {column for column, _ in flags.values()}
    if len(columns) != 1:
        return None
    column = columns.pop()
    number = next(n for c, n in flags.values() if c == column)
    if any(_aggregated(flag, code) for flag in flags):
        return None
    for site in code_tests(sem):
        if site.column.lower() == column and close(
            site.value, req.value * bind_cutoff.scale_for(req, site.value)
        ):
            return None  # the code tests it by its number: the ordinary bindings read it
    return column, bind_cutoff.scale_for(req, number)
