"""Binding for stated cut-offs the code applies to a quantity its columns do not name.

Called from `bind.RequirementBinder.rows` for a comparison requirement (`more than 10%`, `fall by more than
500 thousand`, `at least 25 miles per gallon`) when no condition of the code uses the stated bound
and the subject words name no column. The code's counterpart is then its one numeric cut-off in
the same direction -- or in the other direction on the negated bound, since a fall or loss stated
as a magnitude (`fall by more than 500`) is a signed quantity below the negative bound
(`change < -500`). With exactly one such cut-off (other requirements' bounds and years aside) the
probe re-runs it with the stated bound: the SQL query re-run, or the pandas comparison evaluated
both ways on the live values; different kept rows are the evidence of a changed cut-off or a
reversed comparison. Several candidates, or none, leave the requirement unverified.

A year bound (`before 2010`) on data that holds dates but no year column is tested on the year
of the one date column (`year_of_date`): a query or mask bounding that column in the stated
direction applies it; otherwise every query or frame that reads the column is a site, and the
finding needs each of them to keep rows outside the stated years.

`lhs_probe` also serves a pandas condition on a bare Series (`share[share > 20]`), which has no
column to test rows on.
"""

from __future__ import annotations

import math
import re

from stateguard.inspection.code_model import MIRROR, Condition, Selection
from stateguard.verification import probes, sql_edit
from stateguard.verification.binder import Binder, Plan
from stateguard.verification.requirements import ORDER_OPS, UNIT_SCALES, Requirement


def _year_like(value: float) -> bool:
    return value.is_integer() and 1800 <= abs(value) <= 2100


def unit_scale(value: float, numbers: set[float]) -> float | None:
    """The one power of ten (10^2, 10^3 or 10^6, either way) that writes `value` as a number of `numbers`,
    when none of them is `value` as said ("under $10,000" tested `< 10` on a column of thousands);
    None when the value is written as said, or no scale or several fit."""
    if any(math.isclose(abs(value), abs(n)) for n in numbers):
        return None
    for candidates in (UNIT_SCALES, _HUNDREDS):  # hundredths only where no 10^3 or 10^6 fits
        scales = [s for s in candidates if any(math.isclose(abs(value) * s, abs(n)) for n in numbers)]
        if scales:
            return scales[0] if len(scales) == 1 else None
    return None


# "under 20 cents" tested `beertax < 0.2` on a column of dollars; "under $3,000" tested `< 0.3` on a
# column in tens of thousands of dollars
_HUNDREDS = (1e-2, 1e2, 1e-4, 1e4)


def scale_for(req: Requirement, literal: float) -> float:
    """A percentage stated (`10%`) is written as 10 or as 0.10: the factor nearer the code's literal.
    Any other bound: 10^3 or 10^6 (either way) where the literal is the bound in that scale
    ("under $10,000" tested `< 10` on a column of thousands), else 1."""
    if req.value in (None, 0) or literal == 0:
        return 1.0
    assert req.value is not None
    if not req.percent:
        return unit_scale(req.value, {literal}) or 1.0
    return min((1.0, 0.01), key=lambda s: abs(math.log(abs(literal) / abs(req.value * s))))  # type: ignore[operator]


def in_code_scale(req: Requirement, numbers: set[float]) -> Requirement:
    """A stated bound the code writes in thousands or millions ("under $10,000" on a column of
    thousands of dollars, tested `< 10`): when no number of the code is the bound as said and exactly
    one is it scaled by 10^3 or 10^6 either way, the requirement in that scale; else unchanged."""
    if req.kind != "comparison" or req.percent or not req.value:
        return req
    scale = unit_scale(req.value, numbers)
    if scale is None:
        return req
    upper = None if req.upper is None else req.upper * scale
    return req.model_copy(update={"value": req.value * scale, "upper": upper})


def candidates(b: Binder, req: Requirement, bounds: list[float]) -> list[tuple[Selection, Condition, bool]]:
    """(selection, condition, negated) for each numeric cut-off that can be the stated one."""
    if req.op not in ORDER_OPS or req.value is None or req.upper is not None:
        return []
    out: list[tuple[Selection, Condition, bool]] = []
    for sel in b.sem.selections:
        for cond in sel.conditions:
            if (
                cond.op not in ORDER_OPS
                or not isinstance(cond.value, float)
                or cond.clause in ("having", "on")
            ):
                continue
            if _year_like(cond.value) and not _year_like(req.value):
                continue  # a time bound (`year >= 2005`) is not the stated cut-off on a quantity
            if any(math.isclose(abs(cond.value), abs(v) * s) for v in bounds for s in (1.0, 0.01)):
                continue  # the bound another requirement states
            same = cond.op[0] == req.op[0]
            negated = not same and cond.value < 0 < req.value
            if (same or negated) and (not cond.column or b.within(cond.column, abs(req.value), req.percent)):
                out.append((sel, cond, negated))
    return out


def _operand(code: str, value: float | None) -> bool:
    """Is the number a factor or divisor of the code's arithmetic (`los / 7`, `7 * rate`)?"""
    if value is None or not code:
        return False
    num = f"{value:g}".replace(".", r"\.")
    return (
        re.search(rf"[/*]\s*{num}(?:\.0+)?(?![\w.])|(?<![\w.]){num}(?:\.0+)?\s*[/*](?!\*)", code) is not None
    )


def stated(req: Requirement, negated: bool) -> Requirement:
    """The requirement on the signed quantity: `fall by more than 500` -> `< -500`."""
    if not negated or req.op is None or req.value is None:
        return req
    return req.model_copy(update={"op": MIRROR[req.op], "value": -req.value})


def live_lhs(lhs: str, query: bool, frame: str) -> str:
    """`lhs` as Python evaluates it on the live values: a name inside a pandas `query` string is the
    column of the `frame` queried (`short["days"]` for `days`)."""
    if query and lhs.isidentifier() and frame.isidentifier():
        return f"{frame}[{lhs!r}]"
    return lhs


def lhs_probe(cond: Condition, req: Requirement, scale: float, frame: str = "") -> str:
    """The code's comparison and the stated one evaluated on the same live values."""
    return written_probe(live_lhs(cond.lhs, cond.clause == "query", frame), cond.op, cond.value, req, scale)


def written_probe(lhs: str, op: str, value: object, req: Requirement, scale: float) -> str:
    """`lhs op value` as the code writes it beside the stated predicate on the same `lhs`."""
    return probes.cutoff_probe(f"(({lhs}) {op} {value!r})", probes.pandas_predicate(req, lhs, scale=scale))


def cutoff(b: Binder, req: Requirement, plan: Plan, bounds: list[float]) -> bool:
    """Bind `req` to the code's one cut-off in its direction; False when there is none to bind."""
    found = candidates(b, req, bounds)
    if len({c.lhs or c.text for _, c, _ in found}) != 1:
        return False
    if not req.columns and _operand(b.code, req.value):
        # "weeks (days over 7)": the code divides by the stated number; the words may say that
        # arithmetic, not a cut-off on rows
        plan.notes.append(f"{req.describe()}: the code divides or multiplies by {req.value:g}; not read")
        return True
    sel, cond, negated = found[0]
    assert isinstance(cond.value, float)
    want = stated(req, negated)
    scale = scale_for(req, cond.value)
    assert want.value is not None
    if cond.op == want.op and math.isclose(cond.value, want.value * scale):
        plan.notes.append(f"{req.describe()}: the code applies `{cond.text}`")
        return True
    plan.notes.append(f"{req.describe()}: the code's cut-off is `{cond.text}`")
    if sel.language == "sql":
        if not (b.con and sel.sql):
            return False
        fixed = sql_edit.replace_condition(
            sel.sql, cond.text, probes.sql_predicate(want, cond.lhs, scale=scale)
        )
        b.add_rerun(req, sel, fixed, "threshold", plan)
        return True
    if not cond.lhs:
        return False
    edit = probes.SpanEdit(
        kind="text", before=cond.text, after=probes.pandas_predicate(want, cond.lhs, scale)
    )
    plan.items.append(
        b.item(
            req, "rerun", lhs_probe(cond, want, scale, sel.frame), b.variables(sel), "threshold", edit=edit
        )
    )
    return True


def year_of_date(b: Binder, req: Requirement, plan: Plan) -> bool:
    """A year bound tested on the year of the data's one date column; False when it does not apply."""
    if req.subject != ["year"] or req.op not in ORDER_OPS or req.value is None or not _year_like(req.value):
        return False
    per_sel = {
        id(sel): [c for c in b.columns_of(sel) if b._kind(c, sel.sources + [sel.frame]) == "date"]
        for sel in b.sem.selections
    }
    dates = {c for cols in per_sel.values() for c in cols}
    if len(dates) != 1:
        return False
    column = dates.pop()
    bounded = [
        c
        for sel in b.sem.selections
        for c in sel.conditions
        if (c.column or "").lower() == column.lower() and c.op in ORDER_OPS and c.op[0] == req.op[0]
    ]
    if bounded:
        plan.notes.append(f"{req.describe()}: the code bounds {column} with `{bounded[0].text}`")
        return True
    sites: list[str] = []
    names: list[str] = []
    for sel in b.sem.selections:
        if column not in per_sel[id(sel)]:
            continue
        if sel.language == "sql" and b.con and sel.sql:
            code = probes.kept_rows_probe(b.con, sel.sql, probes.sql_predicate(req, f"year({column})"))
        elif sel.language == "pandas":
            # the masked frame, or a frame the statement reads whole (`early['price'].max()`)
            whole = [
                n for n in sel.sources if n.isidentifier() and column in b.vocab.tables.get(n.lower(), {})
            ]
            frame = (
                (f"({sel.frame})[({sel.mask})]" if sel.mask else sel.frame)
                if sel.frame
                else next(iter(whole), "")
            )
            pred = probes.pandas_predicate(req, f"_f[{column!r}].dt.year")
            code = probes.frame_rows_probe(frame, pred) if frame else None
        else:
            code = None
        if code:
            sites.append(code)
            names += b.variables(sel)
    if not sites:
        return False
    plan.notes.append(f"{req.describe()}: no bound on the year of {column} in the code")
    plan.items.append(
        b.item(req, "kept_rows", probes.all_sites(sites), list(dict.fromkeys(names)), "missing")
    )
    return True
