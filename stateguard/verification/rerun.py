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

import sqlglot

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


def _safe(stmts: list[ast.stmt], keep: str | None = None) -> bool:
    """No statement reads a name that it, or a later statement, changes before an earlier one of
    these statements has bound it anew: running them twice reads the same inputs. With `keep` (the
    connection a SQL edit wraps), no statement may bind that name either."""
    writes = [_writes(s) for s in stmts]
    bound: set[str] = set()
    for i, stmt in enumerate(stmts):
        inputs = _reads(stmt) - bound
        if any(inputs & later for later in writes[i:]) or (keep and keep in writes[i]):
            return False
        bound |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return True


def _statements(cell: str) -> list[ast.stmt] | None:
    try:
        return ast.parse(cell).body
    except SyntaxError:
        return None


def _sql_texts(stmt: ast.stmt) -> list[str]:
    """The statement's string constants (an f-string's literal parts joined), normalised as DuckDB
    SQL where they parse."""
    out = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)  # type: ignore[misc]
        else:
            continue
        try:
            out.append(sqlglot.parse_one(text, dialect="duckdb").sql(dialect="duckdb"))
        except Exception:  # noqa: BLE001 - not SQL
            continue
    return out


def cells_to_rerun(cells: list[str], before: str, sql: bool = False, con: str | None = None) -> list[str]:
    """All the cells when running them again is safe, or when the edit is not found; else the
    edited cell from the statement that holds the edit on, with the cells after it, when that tail
    is safe; else all the cells (the gate then sees what it always saw). A text edit is found by its
    text (either quotes); a SQL edit (`sql`, the SELECT as DuckDB writes it) in a statement whose
    string holds it, and the connection `con` it goes through must not be bound anew."""
    parsed = [_statements(c) for c in cells]
    if any(p is None for p in parsed):
        return cells
    every = [s for p in parsed for s in (p or [])]
    keep = con if sql else None
    if _safe(every, keep):
        return cells
    variants = [before, before.replace("'", '"'), before.replace('"', "'")]

    def holds(stmt: ast.stmt, source: str) -> bool:
        if sql:
            return any(before in text for text in _sql_texts(stmt))
        return any(v in source for v in variants)

    for at, (cell, stmts) in enumerate(zip(cells, parsed, strict=True)):
        lines = cell.splitlines(keepends=True)
        start = next(
            (
                k
                for k, stmt in enumerate(stmts or [])
                if holds(stmt, "".join(lines[stmt.lineno - 1 : stmt.end_lineno or stmt.lineno]))
            ),
            None,
        )
        if start is None or not stmts:
            continue
        tail = stmts[start:] + [s for p in parsed[at + 1 :] for s in (p or [])]
        if not _safe(tail, keep):
            return cells
        return ["".join(lines[stmts[start].lineno - 1 :]), *cells[at + 1 :]]
    return cells
