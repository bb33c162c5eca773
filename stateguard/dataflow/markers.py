"""The markers the instrumentation inserts into a cell's AST, and how to recognize them again.

`__sgflow__` is the recorder's hook object, `__sgcov__` its coverage dict and `__sgloops__` the
flags of a cell's loops, all put into the namespace by `CellRecorder.attach` (see `recorder.py` for what each marker records and
`units.py` for where they go). Inserted nodes take the position of the code they stand for, so
tracebacks and line numbers stay the user's.
"""

from __future__ import annotations

import ast
from ast import AST
from typing import Any, cast

HOOK = "__sgflow__"  # the recorder's name in the namespace (see recorder.py)
COVERAGE = "__sgcov__"  # a dict in the namespace: function blocks (and untraced loop blocks) that ran
LOOPS = "__sgloops__"  # a dict in the namespace: 1 for a cell-level loop past its traced iterations
NO_UNIT = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPOUND = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.TryStar,
    ast.With,
    ast.AsyncWith,
    ast.Match,
)
EXITS = (ast.Continue, ast.Break, ast.Raise, ast.Try, ast.TryStar, ast.Return)


def children(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))`, in the same order, without its two nested generators
    (the analysis of a cell visits every node several times; the generators were a third of it)."""
    out: list[ast.AST] = []
    append = out.append
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            for item in value:  # a plain loop: a generator per list was half of this function's cost
                if isinstance(item, AST):
                    append(item)
        elif isinstance(value, AST):
            append(value)
    return out


def walk(node: ast.AST) -> list[ast.AST]:
    """`list(ast.walk(node))`, in the same (breadth-first) order; see `children`.

    The children are gathered inline rather than through `children`: a new cell's analysis walks
    a few hundred nodes, and the call per node was half of the walk's cost. (Iterating a list while
    appending to it visits the appended items too: that is the breadth-first queue.)"""
    out = [node]
    append = out.append
    for part in out:
        for name in part._fields:
            value = getattr(part, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, AST):
                        append(item)
            elif isinstance(value, AST):
                append(value)
    return out


POSITION = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _position(at: ast.AST) -> dict[str, Any]:
    return {k: getattr(at, k, None) for k in POSITION}


def located(node: ast.AST, at: ast.AST) -> ast.AST:
    """Give `node` and the nodes under it that have no position the position of `at`.

    A node under `node` that has a position heads a subtree that has them all (the user's code as
    parsed, or a marker located when it was made), so the walk does not enter it: a wrapped
    subscript key or loop body is not walked again for every marker put around it."""
    where = _position(at)
    stack = [node]
    while stack:
        part = stack.pop()
        if "lineno" in part._attributes:
            if hasattr(part, "lineno"):
                if part is not node:
                    continue
            else:
                for k, v in where.items():
                    setattr(part, k, v)
        stack.extend(children(part))
    return node


def hook_call(method: str, *args: ast.expr | int, at: ast.AST | None = None) -> ast.Call:
    """`__sgflow__.method(*args)`. With `at`, the call is located there as it is built, which is what
    `located(hook_call(...), at)` gives, without walking the new nodes again (a new cell's analysis
    builds a marker or more per statement)."""
    if at is None:
        loose: list[ast.expr] = [a if isinstance(a, ast.expr) else ast.Constant(a) for a in args]
        func = ast.Attribute(value=ast.Name(id=HOOK, ctx=ast.Load()), attr=method, ctx=ast.Load())
        return ast.Call(func=func, args=loose, keywords=[])
    where = _position(at)
    parts: list[ast.expr] = [
        ast.Constant(a, **where)
        if not isinstance(a, ast.expr)
        else a
        if hasattr(a, "lineno")  # located already: `located` does not enter it either
        else cast(ast.expr, located(a, at))
        for a in args
    ]
    name = ast.Name(id=HOOK, ctx=ast.Load(), **where)
    func = ast.Attribute(value=name, attr=method, ctx=ast.Load(), **where)
    return ast.Call(func=func, args=parts, keywords=[], **where)


def cover_stmt(block: int, at: ast.AST) -> ast.stmt:
    """`__sgcov__[block] = 1`: a dict store, cheap enough for hot loops and functions called often."""
    where = _position(at)
    target = ast.Subscript(
        value=ast.Name(id=COVERAGE, ctx=ast.Load(), **where),
        slice=ast.Constant(block, **where),
        ctx=ast.Store(),
        **where,
    )
    return ast.Assign(targets=[target], value=ast.Constant(1, **where), **where)


def hook_stmt(method: str, *args: ast.expr | int, at: ast.AST) -> ast.stmt:
    return ast.Expr(value=hook_call(method, *args, at=at), **_position(at))


def wrap(node: ast.expr, method: str, ident: int) -> ast.Call:
    return hook_call(method, ident, node, at=node)


def walk_local(node: ast.AST) -> list[ast.AST]:
    """`node` and what is under it, outside nested functions and classes."""
    out: list[ast.AST] = []
    stack = [node]
    while stack:
        part = stack.pop()
        out.append(part)
        stack.extend(c for c in children(part) if not isinstance(c, SCOPES))
    return out


def marker_of(st: ast.stmt) -> tuple[str, int] | None:
    """('u', 3) for `__sgflow__.u(3)`, and so on; None for any other statement."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        func = st.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == HOOK:
            arg = st.value.args[0] if st.value.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                return func.attr, arg.value
    return None


def is_loop_switch(test: ast.expr) -> bool:
    return isinstance(test, ast.Subscript) and isinstance(test.value, ast.Name) and test.value.id == LOOPS


class Unwrap(ast.NodeTransformer):
    """Drops `__sgflow__.k(s, key)` / `.t(c, obj)` wrappers (outside nested functions)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == HOOK
            and func.attr in ("k", "t")
            and len(node.args) == 2
        ):
            return self.visit(node.args[1])
        return self.generic_visit(node)

    def _scope(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scope


def lambdas(node: ast.AST) -> list[ast.Lambda]:
    """Lambdas in `node` outside nested scopes (those register their own)."""
    out: list[ast.Lambda] = []
    stack = children(node)
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Lambda):
            out.append(child)
        elif not isinstance(child, SCOPES):
            stack.extend(children(child))
    return out
