"""Which part of a turn's cells can be run again on the namespace the turn left behind.

The answer gate re-runs the turn's cells, with one edit applied, in a probe that starts from the
values the cells left (`probes.answer_probe`). That is the turn as stated only when running the
cells a second time reads the same inputs as the first time. A cell that rebinds or changes a
name it read earlier (`qs = pd.merge_asof(qs, ...)`, `df["x"] = df["x"] * 2`, `rows.append(...)`)
reads its own output the second time. Then the statements from the edited one to the end are
run instead, when those alone change no name before reading it: the names they read hold the
values the earlier statements gave them, as on the first run.

    cells_to_rerun(cells, before)   the cells to run (all of them, or the edited cell's tail and
                                    the cells after it); all of them when nothing is safer
"""

from __future__ import annotations

import ast

# methods that change the object they are called on (lists, dicts, sets; pandas with inplace=True)
_MUTATING = frozenset(
    {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault", "add", "discard", "sort"}
)


def _base(node: ast.AST) -> str | None:
    """`df["x"].loc[...]` -> df: the name an assignment target or a method receiver hangs off."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _local(stmt: ast.stmt) -> set[str]:
    """Names a comprehension or lambda inside the statement binds for itself (`p` in
    `{p: n for p, n in ...}`): not the namespace's."""
    out: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, _COMPREHENSIONS):
            for gen in node.generators:
                out |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Lambda):
            out |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    return out


def _writes(stmt: ast.stmt) -> set[str]:
    """Names the statement binds or changes in place."""
    out: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
        elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            base = _base(node)
            if base:
                out.add(base)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = _base(node.func.value)
            inplace = any(
                k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords
            )
            if base and (node.func.attr in _MUTATING or inplace):
                out.add(base)
    return out - _local(stmt)


def _reads(stmt: ast.stmt) -> set[str]:
    names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return names - _local(stmt)


def _safe(stmts: list[ast.stmt]) -> bool:
    """No statement reads a name that it, or a later statement, changes before an earlier one of
    these statements has bound it anew: running them twice reads the same inputs."""
    bound: set[str] = set()
    for i, stmt in enumerate(stmts):
        inputs = _reads(stmt) - bound
        if any(inputs & _writes(later) for later in stmts[i:]):
            return False
        bound |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return True


def _statements(cell: str) -> list[ast.stmt] | None:
    try:
        return ast.parse(cell).body
    except SyntaxError:
        return None


def cells_to_rerun(cells: list[str], before: str) -> list[str]:
    """All the cells when running them again is safe, or when the edit's text is not found; else
    the edited cell from the statement that holds the edit on, with the cells after it, when that
    tail is safe; else all the cells (the gate then sees what it always saw)."""
    parsed = [_statements(c) for c in cells]
    if any(p is None for p in parsed):
        return cells
    every = [s for p in parsed for s in (p or [])]
    if _safe(every):
        return cells
    variants = [before, before.replace("'", '"'), before.replace('"', "'")]
    at = next((i for i, c in enumerate(cells) if any(v in c for v in variants)), None)
    if at is None:
        return cells
    cell, stmts = cells[at], parsed[at] or []
    offset = min(cell.find(v) for v in variants if v in cell)
    line = cell.count("\n", 0, offset) + 1
    start = next((k for k, s in enumerate(stmts) if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
    if start is None:
        return cells
    tail = stmts[start:] + [s for p in parsed[at + 1 :] for s in (p or [])]
    if not _safe(tail):
        return cells
    lines = cell.splitlines(keepends=True)
    return ["".join(lines[stmts[start].lineno - 1 :]), *cells[at + 1 :]]
