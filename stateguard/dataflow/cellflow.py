"""Which top-level names a cell reads and writes, read off its text alone (no run).

`cell_dataflow(code)` is what the policies, tools and trajectories use to describe a step: names
loaded, names stored, and in-place writes
(`df.drop(..., inplace=True)`, `lst.append(x)`, `df[col] = ...`, `obj.attr = ...`). SQL run
through a connection counts too: the tables a `con.execute("...")` / `.sql` / `.query` string
reads (FROM/JOIN, CTEs excluded; `stateguard.sql`) are reads, the tables it creates or inserts
into are writes, and `con.table("t")` reads `t`; a table and a Python variable of the same name
are one artifact. A connection used only to run SQL is plumbing, not data: it is not a read.
Staleness does not use it: the workspaces record statement-level dataflow with run-time facts
(`stateguard.dataflow.recorder`, `stateguard.dataflow.graph`). This module also holds the SQL
helpers both share.
"""

from __future__ import annotations

import ast
import builtins
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "sort",
        "reverse",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "fillna",
        "drop",
        "rename",
        "reset_index",
        "set_index",
        "sort_values",
        "replace",
        "dropna",
        "drop_duplicates",
        "astype",
        "__setitem__",
    }
)
_BUILTINS = frozenset(dir(builtins))
SQL_METHODS = frozenset({"execute", "executemany", "sql", "query"})
_FIELD = "__fstring_field__"  # stands for an f-string placeholder; never reported as a table
TABLE_METHODS = frozenset({"table", "view"})  # con.table("t") reads t
PLUMBING_METHODS = SQL_METHODS | TABLE_METHODS | {"close", "commit", "fetchone", "fetchall", "df", "register"}
PANDAS_INPLACE_METHODS = frozenset(
    {
        "fillna",
        "drop",
        "rename",
        "reset_index",
        "set_index",
        "sort_values",
        "replace",
        "dropna",
        "drop_duplicates",
        "astype",
    }
)  # these return a copy unless inplace=True


class CellFlow(BaseModel):
    """Static dataflow of one cell."""

    model_config = ConfigDict(frozen=True)
    valid: bool
    reads: list[str]
    writes: list[str]
    inplace: list[str]  # names written by mutation rather than rebinding
    error: str | None = None


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_inplace_call(node: ast.Call) -> str | None:
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    inplace_kw = any(
        k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in node.keywords
    )
    # `df.fillna(0)` returns a copy unless inplace=True; list/dict/set methods always mutate.
    pandas_style = func.attr in PANDAS_INPLACE_METHODS
    if (pandas_style and inplace_kw) or (not pandas_style and func.attr in MUTATING_METHODS):
        return _base_name(func.value)
    return None


def cell_dataflow(code: str) -> CellFlow:
    """Names read (free loads, builtins excluded), rebound, and mutated in place by a cell."""
    flow = _cell_dataflow(code)
    # A copy, since callers own their lists; the lists hold strings, so copying the lists is enough
    # (a deep copy was a large part of the rules manager's own time in `make eval`).
    return flow.model_copy(
        update={"reads": list(flow.reads), "writes": list(flow.writes), "inplace": list(flow.inplace)}
    )


@lru_cache(maxsize=4096)
def _cell_dataflow(code: str) -> CellFlow:
    # Memoized like _sql_tables: the same cell text is analysed at every activation that reviews it.
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return CellFlow(valid=False, reads=[], writes=[], inplace=[], error=f"{exc.msg} (line {exc.lineno})")
    reads: set[str] = set()
    rebound: set[str] = set()
    inplace: set[str] = set()
    local_defs: set[str] = set()  # names bound inside function bodies/comprehensions are not cell writes
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            local_defs.update(a.arg for a in args.args + args.kwonlyargs + args.posonlyargs)
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    local_defs.add(inner.id)
        if isinstance(node, ast.comprehension):
            local_defs.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    for stmt in tree.body:
        bound_before = set(rebound)  # names bound by earlier statements of this cell
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                # Only upward-exposed uses count as reads: a name this cell bound earlier is its own value.
                if isinstance(node.ctx, ast.Load) and node.id not in bound_before:
                    reads.add(node.id)
                elif isinstance(node.ctx, ast.Store | ast.Del):
                    rebound.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                rebound.add(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                rebound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Call):
                name = _is_inplace_call(node)
                if name:
                    inplace.add(name)
            elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(
                node.ctx, ast.Store | ast.Del
            ):
                name = _base_name(node)
                if name:
                    inplace.add(name)
            elif isinstance(node, ast.AugAssign):
                name = _base_name(node.target)
                if name and name not in bound_before:
                    reads.add(name)
    # Only top-level bindings count as cell writes; names local to functions/comprehensions don't.
    top_level = _top_level_bindings(tree)
    inplace -= local_defs - top_level  # `frame[...] = ...` on a function's own parameter is not a cell write
    rebound &= top_level | inplace
    reads -= _BUILTINS - top_level
    reads -= local_defs - top_level
    writes = rebound | inplace
    sql_reads, sql_writes, plumbing = sql_flow(tree)
    reads = (reads - plumbing) | sql_reads  # `t = con.table("t").df()` reads the table t, writes the variable
    writes |= sql_writes
    return CellFlow(valid=True, reads=sorted(reads), writes=sorted(writes), inplace=sorted(inplace - rebound))


def string_values(tree: ast.Module) -> dict[str, str]:
    """Top-level `name = "literal"` assignments of the cell (a SQL text kept in a variable)."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value.value
    return out


def sql_text(node: ast.AST | None, strings: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return strings.get(node.id)
    if isinstance(node, ast.JoinedStr):  # f-string: placeholders become a neutral identifier
        return "".join(str(v.value) if isinstance(v, ast.Constant) else _FIELD for v in node.values)
    return None


def sql_tables(sql: str) -> tuple[set[str], set[str]]:
    """(tables read, tables written) by a SQL text; fresh sets each call."""
    reads, writes = _sql_tables(sql)
    return set(reads), set(writes)


@lru_cache(maxsize=4096)
def _sql_tables(sql: str) -> tuple[frozenset[str], frozenset[str]]:
    # Memoized: every cell of a task is re-analysed at each checkpoint, replay and probe, and
    # parsing the same SQL text with sqlglot again was a tenth of a corpus build's CPU.
    # sqlglot is imported here, not at the top: it was about a quarter of a sandbox kernel's
    # start-up imports, paid by every kernel although most cells hold no SQL.
    from sqlglot import exp

    from stateguard.sql import ordered_references, parse_statements

    try:
        statements = parse_statements(sql)
    except Exception:  # not SQL after all (SQLParseError, or another sqlglot error)
        return frozenset(), frozenset()
    writes: set[str] = set()
    for statement in statements:
        target = (
            statement.this
            if isinstance(statement, exp.Create | exp.Insert | exp.Update | exp.Delete)
            else None
        )
        if isinstance(target, exp.Schema):
            target = target.this
        if isinstance(target, exp.Table) and target.name:
            writes.add(target.name.lower())
    reads = {name.split(".")[-1] for name in ordered_references(statements)} - writes - {_FIELD}
    return frozenset(reads), frozenset(writes)


def sql_flow(tree: ast.Module) -> tuple[set[str], set[str], set[str]]:
    """(tables read, tables written, receivers used only as plumbing) of SQL run in the cell."""
    strings = string_values(tree)
    reads: set[str] = set()
    writes: set[str] = set()
    receivers: set[str] = set()
    other_uses: set[str] = set()
    plumbing_nodes: set[int] = set()
    calls = [n for stmt in tree.body for n in ast.walk(stmt)]  # statement order: a table made, then read
    for node in calls:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = node.func.value
        method = node.func.attr
        if method in PLUMBING_METHODS and isinstance(receiver, ast.Name):
            receivers.add(receiver.id)
            plumbing_nodes.add(id(receiver))
        if method in SQL_METHODS or method in TABLE_METHODS:
            text = sql_text(node.args[0] if node.args else None, strings)
            if text is None:
                continue
            if method in TABLE_METHODS:
                name = text.split(".")[-1].lower()
                if name not in writes:
                    reads.add(name)
            else:
                r, w = sql_tables(text)
                reads |= r - writes
                writes |= w
    for node in ast.walk(tree):
        # Binding the connection (`con = duckdb.connect()`) in the same cell is not a use of it as data.
        if (
            isinstance(node, ast.Name)
            and node.id in receivers
            and id(node) not in plumbing_nodes
            and not isinstance(node.ctx, ast.Store)
        ):
            other_uses.add(node.id)
    return reads, writes, receivers - other_uses


def _top_level_bindings(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    skip = (
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.Lambda,
        ast.ClassDef,
        ast.ListComp,
        ast.SetComp,
        ast.DictComp,
        ast.GeneratorExp,
    )

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store | ast.Del):
                names.add(child.id)
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(child.name)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in child.names)
            if isinstance(child, skip):
                continue
            visit(child)

    visit(tree)
    return names
