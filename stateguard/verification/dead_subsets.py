"""A subset of rows or a row mask the turn builds and never reads, while the answer reads the whole frame.

    _kids = wives[wives["children"] == "present"]
    result = {..., "pct_kids_low_inc": 100 * wives["low_inc"].mean()}

The facts are the dataflow of the turn's own code: a name bound to a row selection of a frame
(`P[cond]`, `P.loc[cond]`, `P.query(...)`) or to a mask of one frame's columns (`is_nl =
bb["league86"] == "N"`), that no statement of the turn reads, and a frame `P` that later statements
read without rebinding it. The turn's words are read only to leave alone a name they keep for later
turns (in code quotes, `measured`, or after "table", "in", "as", ...); a scratch name (a leading
underscore) is never kept. The turn is re-run with those later reads of `P` reading the subset (or
`P[mask]`), and a finding needs another answer (the answer gate): an unused subset that changes
nothing (the same rows written twice) is no finding. Exactly one such name in the turn, or none is
read (two: which one was meant is open).

    unused(code, said)    the one such subset or mask with its edit (before, after), or None
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from stateguard.verification.requirements import Kind, Requirement


@dataclass(frozen=True)
class Unused:
    name: str  # the subset nobody reads
    frame: str  # the frame it selects rows of, read whole later
    columns: tuple[str, ...]  # the columns its condition tests
    values: tuple[str, ...]  # the words or numbers it tests them against
    before: str  # the statements after it that read the frame
    after: str  # the same, reading the subset


def _selected_frame(value: ast.expr) -> tuple[str, ast.expr] | None:
    """(frame, condition) of a row selection `P[cond]`, `P.loc[cond]` or `P.loc[cond, cols]`,
    `P.query(text)`; None for anything else (a column `P["x"]` is no row selection)."""
    if isinstance(value, ast.Subscript):
        index = value.slice
        if isinstance(value.value, ast.Name):
            if isinstance(index, ast.Constant | ast.List | ast.Slice):
                return None
            return value.value.id, index
        target = value.value
        if isinstance(target, ast.Attribute) and target.attr == "loc" and isinstance(target.value, ast.Name):
            cond = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index
            if isinstance(cond, ast.Slice):
                return None
            return target.value.id, cond
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "query"
        and isinstance(value.func.value, ast.Name)
        and value.args
    ):
        return value.func.value.id, value.args[0]
    return None


def _tests_rows(cond: ast.expr, frame: str) -> bool:
    """Is the condition a test of rows: a query text, a comparison or call, or a flag column of the
    frame itself (`P[P["flag"]]`)? A list of columns or a name holding one is not."""
    if isinstance(cond, ast.Constant):
        return isinstance(cond.value, str)
    if isinstance(cond, ast.Subscript) and isinstance(cond.value, ast.Name) and cond.value.id == frame:
        return True
    return any(isinstance(n, ast.Compare | ast.BinOp | ast.UnaryOp | ast.Call) for n in ast.walk(cond))


def _columns(cond: ast.expr) -> tuple[str, ...]:
    out = [
        n.slice.value
        for n in ast.walk(cond)
        if isinstance(n, ast.Subscript)
        and isinstance(n.slice, ast.Constant)
        and isinstance(n.slice.value, str)
    ]
    return tuple(dict.fromkeys(out))


def _values(cond: ast.expr) -> tuple[str, ...]:
    out = [
        str(c.value)
        for n in ast.walk(cond)
        if isinstance(n, ast.Compare)
        for c in n.comparators
        if isinstance(c, ast.Constant) and isinstance(c.value, str | int | float)
    ]
    out += [
        str(e.value)
        for n in ast.walk(cond)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "isin"
        for a in n.args
        if isinstance(a, ast.List | ast.Tuple | ast.Set)
        for e in a.elts
        if isinstance(e, ast.Constant)
    ]
    return tuple(dict.fromkeys(out))


_MASK_METHODS = frozenset(
    {"isin", "between", "notna", "isna", "notnull", "isnull", "eq", "ne", "gt", "ge", "lt", "le"}
)


def _mask_frame(value: ast.expr) -> str | None:
    """The one frame a row mask tests (`bb["league86"] == "N"`, `(f.a > 1) & f.b.isin([...])`,
    `f["x"].notna()`); None for anything that is no mask of one frame's columns."""
    top = value.operand if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Invert) else value
    if isinstance(top, ast.BinOp) and not isinstance(top.op, ast.BitAnd | ast.BitOr):
        return None
    if isinstance(top, ast.Call) and not (
        isinstance(top.func, ast.Attribute) and top.func.attr in _MASK_METHODS
    ):
        return None
    if not isinstance(top, ast.Compare | ast.BinOp | ast.Call):
        return None
    frames = {
        n.value.id
        for n in ast.walk(value)
        if isinstance(n, ast.Subscript | ast.Attribute) and isinstance(n.value, ast.Name)
    }
    names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    return frames.pop() if len(frames) == 1 and names == frames else None


def _kept(name: str, said: str) -> bool:
    """Do the turn's words name it as something to keep: in code quotes (`measured`), after "table",
    "frame", "called", "named", or after "in", "as", "into" where no noun follows it ("keep them in
    measured", not "the runs in incoherent noise": there the word describes the rows)?"""
    n = re.escape(name)
    return bool(
        re.search(rf"`{n}`|\b(?:table|frame|dataframe|called|named)\s+{n}\b", said, re.IGNORECASE)
        or re.search(
            rf"\b(?:in|as|into)\s+{n}\b(?!\s+(?!(?:and|or|but|for|to|from|with)\b)[a-z])", said, re.IGNORECASE
        )
    )


def unused(code: str, said: str = "") -> Unused | None:
    """The one subset or row mask the turn builds and never reads: a scratch name (a leading
    underscore), or a name the turn's words `said` do not name as one to keep (a frame kept for
    later turns is named so: "keep them in `measured`")."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    found: list[Unused] = []
    for i, stmt in enumerate(tree.body):
        if not (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            continue
        name = stmt.targets[0].id
        if name in read or (not name.startswith("_") and _kept(name, said)):
            continue
        sel = _selected_frame(stmt.value)
        mask = _mask_frame(stmt.value) if sel is None else None
        if mask is not None:
            sel, replacement = (mask, stmt.value), f"{mask}[{name}]"
        elif sel is None or not _tests_rows(sel[1], sel[0]):
            continue
        else:
            replacement = name
        frame, cond = sel
        rest = tree.body[i + 1 :]
        # the frame must keep its rows: a later statement that binds it again (or a column of it) abstains
        if any(
            isinstance(n, ast.Name) and n.id == frame and not isinstance(n.ctx, ast.Load)
            for s in rest
            for n in ast.walk(s)
        ) or any(
            isinstance(t, ast.Subscript | ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == frame
            for s in rest
            if isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign)
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        ):
            continue
        reads = [n for s in rest for n in ast.walk(s) if isinstance(n, ast.Name) and n.id == frame]
        if not reads:
            continue
        edit = _edit(code, reads, replacement)
        if edit is not None:
            found.append(Unused(name, frame, _columns(cond), _values(cond), *edit))
    return found[0] if len(found) == 1 else None


def _edit(code: str, reads: list[ast.Name], name: str) -> tuple[str, str] | None:
    """(before, after): the whole lines from the first read of the frame to the last, and the same
    lines with each read naming the subset instead."""
    lines = code.splitlines(keepends=True)
    first = min(n.lineno for n in reads)
    last = max(n.end_lineno or n.lineno for n in reads)
    chunk = lines[first - 1 : last]
    for n in sorted(reads, key=lambda n: (n.lineno, n.col_offset), reverse=True):
        row = n.lineno - first
        text = chunk[row]
        # ast offsets count UTF-8 bytes
        raw = text.encode()
        start, end = n.col_offset, n.end_col_offset or n.col_offset
        chunk[row] = (raw[:start] + name.encode() + raw[end:]).decode()
    before, after = "".join(lines[first - 1 : last]), "".join(chunk)
    if code.count(before) != 1 or before == after:
        return None
    return before.rstrip("\n"), after.rstrip("\n")


def requirement(found: Unused) -> Requirement:
    what = ", ".join(found.columns) or "a condition"
    return Requirement(
        kind=Kind.SCOPE,
        text=f"the rows the turn selects by {what}",
        columns=list(found.columns),
        values=list(found.values) or [f"the rows selected by {what}"],
        subject=["the selected rows"],
    )


PROBE = "_v = True\n_o = {'reads_the_unused_subset': True}"
