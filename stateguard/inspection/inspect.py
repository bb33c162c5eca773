"""Code inspection for semantic verification: a span's Python (and the SQL it runs) -> `CodeSemantics`.

    sem = inspect_code('df2 = con.execute("SELECT AVG(x) FROM t WHERE y >= 3").df()', step=7)
    sem.selections[0].conditions[0]   # y >= 3, kept side
    sem.frames                         # {} (a bare SELECT binds no table); targets name 'df2'

SQL is found where the code runs it: the first argument of `.execute(...)`, `.sql(...)`,
`.query(...)` (when it reads as SQL) or `read_sql(...)`, given as a literal, an f-string or a name
bound to a literal earlier in the cell. Everything else is read as pandas. This is the semantic
part of the `inspect_python` tool's answer (`stateguard.tools.inspect_python`).
"""

from __future__ import annotations

import ast
import re

from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.inspection.code_pandas import pandas_selection
from stateguard.inspection.code_sql import sql_literals, sql_selections

_SQL_METHODS = {"execute", "sql", "query", "read_sql", "read_sql_query", "executemany"}
_SQLISH = re.compile(r"^\s*(?:with|select|create|insert|update|delete)\b", re.IGNORECASE)
_FRAME_METHODS = {"df", "fetchdf", "fetch_df", "to_df", "pl", "arrow"}


def _string(node: ast.AST | None, strings: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return strings.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "x" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left, strings), _string(node.right, strings)
        return None if left is None or right is None else left + right
    return None


def _chain_root(node: ast.AST) -> ast.Call | None:
    """`con.execute(sql).df()`, `con.execute(sql).fetchone()[0]` -> the `.execute(...)` call at the
    bottom of a method chain (an index of its result included)."""
    cur = node
    while isinstance(cur, ast.Subscript):
        cur = cur.value
    while isinstance(cur, ast.Call) and isinstance(cur.func, ast.Attribute):
        if cur.func.attr in _SQL_METHODS or cur.func.attr == "table":
            return cur
        cur = cur.func.value
    return None


def inspect_code(code: str, step: int | None = None) -> CodeSemantics:
    """Selections, frame and report bindings of one cell; unreadable code gives an `errors` entry."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return CodeSemantics(errors=[f"step {step}: {exc.msg} (line {exc.lineno})"])
    strings: dict[str, str] = {}
    statements: list[str] = []
    selections: list[Selection] = []
    frames: dict[str, str] = {}
    reports: dict[str, list[str]] = {}
    fields: dict[str, str] = {}
    literals: list[float] = []
    listed: list[str] = []
    written_out: set[str] = set()  # names bound to values written out in the code (`_areas = {...}`)
    connection: str | None = None
    for stmt in tree.body:
        target = (
            stmt.targets[0].id
            if isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            else None
        )
        if (
            target
            and isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            strings[target] = stmt.value.value
            continue
        if target and isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
            keys = [
                k.value for k in stmt.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
            if keys:
                reports[target] = keys
                for k, v in zip(stmt.value.keys, stmt.value.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str):
                        fields[k.value] = ast.unparse(v)
        if target and isinstance(stmt, ast.Assign) and _is_literal(stmt.value):
            written_out.add(target)
        if target and isinstance(stmt, ast.Assign) and _literal_frame(stmt.value, written_out):
            listed.append(target)
        sql_here = False
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method = node.func.attr
            if method in _SQL_METHODS and node.args:
                text = _string(node.args[0], strings)
                if text is None or not _SQLISH.match(text):
                    continue
                sql_here = True
                statements.append(text)
                if isinstance(node.func.value, ast.Name) and node.func.value.id not in ("pd", "duckdb"):
                    connection = connection or node.func.value.id
                found = sql_selections(text, step)
                literals += sql_literals(text)
                listed += [m.group(1).lower() for m in _VALUES_TABLE.finditer(text)]
                root = _chain_root(stmt.value) if target and isinstance(stmt, ast.Assign) else None
                if root is node and found and found[0].target is None:
                    found[0] = found[0].model_copy(update={"target": target})
                selections += found
            elif method == "table" and node.args and target and isinstance(stmt, ast.Assign):
                name = _string(node.args[0], strings)
                if name and _chain_root(stmt.value) is node:
                    frames[target] = name.lower()
                    if isinstance(node.func.value, ast.Name):
                        connection = connection or node.func.value.id
        if not sql_here:
            sel = pandas_selection(stmt, step)
            if sel is not None:
                selections.append(sel)
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, int | float)
                and not isinstance(node.value, bool)
            ):
                literals.append(float(node.value))
    return CodeSemantics(
        selections=selections,
        frames=frames,
        connection=connection,
        reports=reports,
        fields=fields,
        literals=literals,
        listed=listed,
        statements=statements,
    )


# A SQL table filled from values written in the query: `CREATE TABLE t AS SELECT * FROM (VALUES ...)`,
# `CREATE TABLE t (...); INSERT INTO t VALUES ...`.
_VALUES_TABLE = re.compile(
    r"\b(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?TABLE|INSERT\s+INTO)\s+([A-Za-z_]\w*)\b[^;]*?\bVALUES\b",
    re.IGNORECASE | re.DOTALL,
)


def _is_literal(node: ast.expr) -> bool:
    """A value written out in the code: a literal, or built from literals only by `range`, `list(...)`
    and `+` or `*` (`{"year": list(range(1979, 1990)), "mode": ["in person"] * 2 + ["phone"] * 9}`)."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    else:
        return True
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(map(_is_literal, node.values))
    if isinstance(node, ast.List | ast.Tuple):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        return _is_literal(node.left) and _is_literal(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id == "range":
            return all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in node.args)
        if node.func.id == "list" and len(node.args) == 1:
            return _is_literal(node.args[0])
    return False


def _from_written_out(node: ast.expr, written_out: set[str]) -> bool:
    """A comprehension over values written out in the code (`[(n, a) for a, names in _areas.items()
    for n in names]` after `_areas = {...}`): every name it reads is one of its own loop variables
    or a name bound to a literal."""
    if not isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
        return False
    own = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and not (
            isinstance(sub.func, ast.Attribute) and sub.func.attr in ("items", "keys", "values")
        ):
            return False
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in own | written_out:
            return False
    return True


def _literal_frame(value: ast.expr, written_out: set[str] | None = None) -> bool:
    """`pd.DataFrame(<literal>, ...)`: a frame of values written out in the code (directly, or by a
    comprehension over such values)."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute | ast.Name)):
        return False
    name = value.func.attr if isinstance(value.func, ast.Attribute) else value.func.id
    data = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "data"), None)
    if name not in ("DataFrame", "from_records") or data is None:
        return False
    return _is_literal(data) or _from_written_out(data, written_out or set())


def merge(parts: list[CodeSemantics]) -> CodeSemantics:
    """Semantics of several cells in order (later bindings win)."""
    out = CodeSemantics()
    for part in parts:
        out = CodeSemantics(
            selections=out.selections + part.selections,
            frames={**out.frames, **part.frames},
            connection=part.connection or out.connection,
            reports={**out.reports, **part.reports},
            fields={**out.fields, **part.fields},
            literals=out.literals + part.literals,
            errors=out.errors + part.errors,
            listed=out.listed + [n for n in part.listed if n not in out.listed],
            statements=out.statements + part.statements,
        )
    return out


def inspect_steps(steps: list[tuple[int, str]]) -> CodeSemantics:
    """Semantics of a span of worker steps, given as (step index, code)."""
    return merge([inspect_code(code, step) for step, code in steps])
