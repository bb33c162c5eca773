"""A cell, cut into statement units and instrumented so that its run reports what actually ran.

`analyze_cell(code, namespace, registry)` parses the cell once and returns a `CellPlan`: one
`Unit` per statement unit (a simple statement, or the header of an if/for/while/with/match), the
functions the cell defines (`FuncInfo`, one `Unit` per statement of their bodies), and the cell's
AST with markers inserted, ready to compile:

- `__sgflow__.u(i)` before unit i, and `__sgflow__.d(i)` after it inside a `try` body (a
  statement that raised and was caught wrote nothing);
- `__sgflow__.f(b)` at the start of block b of a function body (which branches of a function
  ran, at call time, whichever cell calls it);
- `__sgflow__.o(k, obj)` after a function statement that changes an attribute or item of a local
  object (`self.x = v`, `frame['c'] = v`, `items.append(v)`): the object's identity tells which
  variable was changed;
- `__sgflow__.k(s, key)` around a subscript key known only at run time (`lst[i]`, `df[col]`,
  `{name: v}`), and `__sgflow__.t(k, obj)` around the object of `f().attr = v`.

Line numbers are kept, so tracebacks and `linecache` show the user's own lines.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, cast

from stateguard.dataflow import paths
from stateguard.dataflow.cellflow import PLUMBING_METHODS, sql_flow, string_values
from stateguard.dataflow.reader import BUILTIN_NAMES, Atom, Chain, Effects, Reader, Scope, literal_key
from stateguard.dataflow.scopes import Scope as FnScope
from stateguard.dataflow.scopes import scope_tree
from stateguard.dataflow.walker import (
    COVERAGE,
    HOOK,
    Rhs,
    SWrite,
    Unit,
    Walker,
    cover_stmt,
    hook_call,
    hook_stmt,
    located,
)

_NO_UNIT = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.Match)


@dataclass
class FuncInfo:
    key: str  # qualified name: f, Foo.__init__, f.<locals>.g
    params: list[str]
    cell_params: list[str]  # parameters nested functions read through a closure
    stmts: list[Unit] = field(default_factory=list)


class Registry:
    """Numbers (blocks, slots, captures) unique over a workspace's life, and every function's statements."""

    def __init__(self) -> None:
        self.blocks: dict[int, FuncInfo] = {}
        self._next = 0

    def new_id(self) -> int:
        self._next += 1
        return self._next

    @property
    def size(self) -> int:
        return self._next


@dataclass
class CellContext:
    registry: Registry
    strings: dict[str, str]
    plumbing: set[str]
    is_module: Callable[[str], bool]
    known: Callable[[str], bool]
    lambdas: bool = True  # whether the cell's text has any


@dataclass
class CellPlan:
    units: list[Unit]
    body: ast.Module
    last: ast.Expression | None
    in_try: set[int] = field(default_factory=set)  # units whose completion is marked (`d`)
    plain_blocks: dict[int, list[int]] = field(default_factory=dict)  # untraced loop-body block -> its units
    loops: set[int] = field(default_factory=set)


def _digest(node: ast.AST) -> str:
    return hashlib.blake2b(ast.dump(node, include_attributes=False).encode(), digest_size=8).hexdigest()


_EXITS = (ast.Continue, ast.Break, ast.Raise, ast.Try, ast.TryStar, ast.Return)


def _walk_local(node: ast.AST) -> list[ast.AST]:
    """`node` and what is under it, outside nested functions and classes."""
    out: list[ast.AST] = []
    stack = [node]
    while stack:
        part = stack.pop()
        out.append(part)
        stack.extend(c for c in ast.iter_child_nodes(part) if not isinstance(c, _SCOPES))
    return out


def _marker(st: ast.stmt) -> tuple[str, int] | None:
    """('u', 3) for `__sgflow__.u(3)`, and so on; None for any other statement."""
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        func = st.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == HOOK:
            arg = st.value.args[0] if st.value.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                return func.attr, arg.value
    return None


def _marker_test(test: ast.expr) -> bool:
    return isinstance(test, ast.Subscript) and isinstance(test.value, ast.Name) and test.value.id == COVERAGE


class _Unwrap(ast.NodeTransformer):
    """Drops `__sgflow__.k(s, key)` / `.t(c, obj)` wrappers (outside nested functions)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == HOOK \
                and func.attr in ("k", "t") and len(node.args) == 2:  # fmt: skip
            return self.visit(node.args[1])
        return self.generic_visit(node)

    def _scope(self, node: ast.AST) -> ast.AST:
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scope


def _lambdas(node: ast.AST) -> list[ast.Lambda]:
    """Lambdas in `node` outside nested scopes (those register their own)."""
    out: list[ast.Lambda] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Lambda):
            out.append(child)
        elif not isinstance(child, _SCOPES):
            stack.extend(ast.iter_child_nodes(child))
    return out


def _wrap(node: ast.expr, method: str, ident: int) -> ast.Call:
    return located(hook_call(method, ident, node), node)  # type: ignore[return-value]


class TopWalker(Walker):
    """The cell's own statements: every name is a global of the workspace."""

    def __init__(self, ctx: CellContext):
        self.ctx = ctx
        self.units: list[Unit] = []
        self.in_try: set[int] = set()
        self.plain_blocks: dict[int, list[int]] = {}
        self.loops: set[int] = set()
        self.reader = Reader(Scope(ctx.is_module, ctx.known), Effects(), strings=ctx.strings,
                             plumbing=ctx.plumbing, new_slot=self.new_slot_for)  # fmt: skip

    def new_slot_for(self, node: ast.Subscript) -> int:
        slot = self.ctx.registry.new_id()
        node.slice = _wrap(node.slice, "k", slot)
        return slot

    def dict_key_slot(self, node: ast.Dict, index: int) -> int | None:
        slot = self.ctx.registry.new_id()
        node.keys[index] = _wrap(node.keys[index], "k", slot)  # type: ignore[arg-type]
        return slot

    def write_name(self, unit: Unit, name: str, rhs: Rhs, keep: bool) -> None:
        path = (name,)
        keep = keep or any(a[0] == "g" and paths.under(a[1], path) for a in rhs.atoms)
        shaped = rhs.items is not None or rhs.entries is not None
        unit.writes.append(SWrite(("g", path, True), "bind", list(rhs.own if shaped else rhs.atoms), keep=keep,
                                  ret_index=rhs.ret_index))  # fmt: skip
        self.children(unit, path, rhs)

    def write_captured(self, unit: Unit, target: ast.Attribute | ast.Subscript, rhs: Rhs) -> None:
        capture = self.ctx.registry.new_id()
        unit.reads += self.reader.expr(target.value)
        target.value = _wrap(target.value, "t", capture)
        kind, tail = "mutate", cast(tuple[str, ...], ())
        if isinstance(target, ast.Attribute):
            kind, tail = "bind", (paths.attr(target.attr),)
        else:
            component = literal_key(target.slice)
            unit.reads += self.reader.expr(target.slice)
            if component is not None:
                kind, tail = "bind", (component,)
        unit.writes.append(SWrite(None, kind, list(rhs.atoms), keep=kind == "mutate", capture=capture, tail=tail))

    # --- statements -----------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], in_try: bool) -> list[ast.stmt]:
        return [out for st in stmts for out in self.stmt(st, in_try)]

    def stmt(self, st: ast.stmt, in_try: bool) -> list[ast.stmt]:
        if isinstance(st, _NO_UNIT) or (isinstance(st, ast.ImportFrom) and st.module == "__future__"):
            return [st]
        uid = len(self.units)
        unit = Unit(line=st.lineno)
        self.units.append(unit)
        self.reader.fx = fx = Effects()
        marker = hook_stmt("u", uid, at=st)
        if self.simple(st, unit):
            self.finish(unit, fx)
            self.register_lambdas(st)
            if in_try:
                self.in_try.add(uid)
                return [marker, st, hook_stmt("d", uid, at=st)]
            return [marker, st]
        if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
            atoms = self.reader.exprs([*st.decorator_list, *st.args.defaults])
            atoms += self.reader.exprs([d for d in st.args.kw_defaults if d is not None])
            unit.reads += atoms
            unit.digest = _digest(st)
            self.write_name(unit, st.name, Rhs(atoms), False)
            FuncWalker(self.ctx, st, scope_tree(st), [], st.name).run()
        elif isinstance(st, ast.ClassDef):
            atoms = self.class_body(st, scope_tree(st), [], st.name)
            unit.reads += atoms
            self.write_name(unit, st.name, Rhs(atoms), False)
        else:
            self.header(st, unit)
            self.register_lambdas(st, headers_only=True)
            self.nested_bodies(st, in_try)
        self.finish(unit, fx)
        return [marker, st]

    def nested_bodies(self, st: ast.stmt, in_try: bool) -> None:
        if isinstance(st, ast.For | ast.AsyncFor | ast.While):
            st.body = self.loop_body(st.body, in_try)
            st.orelse = self.body(st.orelse, in_try)
            return
        if isinstance(st, ast.Try | ast.TryStar):
            st.body = self.body(st.body, True)
            for handler in st.handlers:
                handler.body = self.body(handler.body, in_try)
        elif isinstance(st, ast.Match):
            for case in st.cases:
                case.body = self.body(case.body, in_try)
        elif hasattr(st, "body"):
            st.body = self.body(st.body, in_try)
        for name in ("orelse", "finalbody"):
            if getattr(st, name, None):
                setattr(st, name, self.body(getattr(st, name), in_try))

    def loop_body(self, stmts: list[ast.stmt], in_try: bool) -> list[ast.stmt]:
        """`if __sgcov__[L]: <plain copy> else: <traced copy>`: the first LOOP_CAP iterations run the
        traced copy (`__sgflow__.l(L)` counts them, then sets the flag); later ones run a copy with
        byte stores for coverage only, so a long loop costs one check and a store per block."""
        loop = self.ctx.registry.new_id()
        self.loops.add(loop)
        traced = [hook_stmt("l", loop, at=stmts[0]), *self.body(stmts, in_try)]
        # The first iteration is always traced; without an early exit in the body, every statement
        # of its top block was traced then, and the untraced copy needs no coverage store there.
        early = any(isinstance(n, _EXITS) for st in stmts for n in _walk_local(st))
        plain = self.plain(copy.deepcopy(traced), cover=early)
        flag = ast.Subscript(value=ast.Name(id=COVERAGE, ctx=ast.Load()), slice=ast.Constant(loop), ctx=ast.Load())
        return [located(ast.If(test=flag, body=plain, orelse=traced), stmts[0])]  # type: ignore[list-item]

    def plain(self, stmts: list[ast.stmt], cover: bool = True) -> list[ast.stmt]:
        """A traced block without its statement markers and key wrappers, with a coverage store."""
        block = self.ctx.registry.new_id()
        units: list[int] = []
        out: list[ast.stmt] = []
        for st in stmts:
            marker = _marker(st)
            if marker is not None:
                if marker[0] == "u":
                    units.append(marker[1])
                continue
            if isinstance(st, ast.If) and _marker_test(st.test):  # a nested loop's own switch: keep its plain copy
                out += st.body
                continue
            if isinstance(st, _SCOPES):
                out.append(st)
                continue
            _Unwrap().visit(st)
            for name in ("body", "orelse", "finalbody"):
                part = getattr(st, name, None)
                if isinstance(part, list) and part:
                    setattr(st, name, self.plain(part))
            for handler in getattr(st, "handlers", []):
                handler.body = self.plain(handler.body)
            for case in getattr(st, "cases", []):
                case.body = self.plain(case.body)
            out.append(st)
        self.plain_blocks[block] = units
        return [cover_stmt(block, at=stmts[0]), *out] if stmts and cover else out

    def class_body(self, node: ast.ClassDef, scope: FnScope, enclosing: list[tuple[str, FnScope]], qual: str) -> list[Atom]:
        """What a class statement reads when it runs (bases, decorators, its body's free names), with
        its methods registered as functions."""
        atoms = self.reader.exprs([*node.bases, *(k.value for k in node.keywords), *node.decorator_list])
        kids = {id(c.node): c for c in scope.children}
        methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        owner = (qual, scope.bound - methods) if "." not in qual else None
        self.reader.hidden.append(set(scope.bound))
        try:
            for st in node.body:
                if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
                    atoms += self.reader.exprs([*st.decorator_list, *st.args.defaults])
                    FuncWalker(self.ctx, st, kids[id(st)], enclosing, f"{qual}.{st.name}", owner).run()
                elif isinstance(st, ast.ClassDef):
                    atoms += self.class_body(st, kids[id(st)], enclosing, f"{qual}.{st.name}")
                else:
                    atoms += [a for child in ast.iter_child_nodes(st) for a in self.reader.expr(child)]
                    for lam in _lambdas(st):
                        FuncWalker(self.ctx, lam, kids.get(id(lam)) or scope_tree(lam), enclosing,
                                   f"{qual}.<lambda>").run()  # fmt: skip
        finally:
            self.reader.hidden.pop()
        return atoms

    def register_lambdas(self, st: ast.stmt, headers_only: bool = False) -> None:
        if not self.ctx.lambdas:
            return
        parts: list[Any] = [st]
        if headers_only:
            parts = [getattr(st, n) for n in ("test", "iter", "target", "subject") if getattr(st, n, None) is not None]
            parts += [i.context_expr for i in getattr(st, "items", [])]
        for part in parts:
            nodes = [part] if isinstance(part, ast.Lambda) else _lambdas(part)
            for lam in nodes:
                FuncWalker(self.ctx, lam, scope_tree(lam), [], "<lambda>").run()


class _FuncScope(Scope):
    def __init__(self, walker: FuncWalker):
        super().__init__(walker.ctx.is_module, walker.ctx.known)
        self.w = walker

    def kind(self, name: str) -> Atom | None:
        scope = self.w.scope
        if name in scope.globals:
            return super().kind(name)
        if name in scope.cellvars:  # shared with nested functions, which may change it later
            return ("c", f"{self.w.key}.<locals>.{name}")
        if name in scope.locals:
            return ("l", name)
        for key, outer in reversed(self.w.enclosing):
            if name in outer.locals:
                return ("c", f"{key}.<locals>.{name}")
        if name in BUILTIN_NAMES and not self.known(name):
            return None
        return ("g", (name,), True)

    def class_attribute(self, local: str, attr: str) -> str | None:
        owner = self.w.owner
        if owner is None or local != self.w.self_name:
            return None
        return owner[0] if attr in owner[1] else None


class FuncWalker(Walker):
    """A function (or lambda) body: statements grouped by block, locals resolved per call."""

    def __init__(self, ctx: CellContext, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                 scope: FnScope, enclosing: list[tuple[str, FnScope]], key: str,
                 owner: tuple[str, set[str]] | None = None):  # fmt: skip
        self.ctx, self.node, self.scope, self.enclosing, self.key = ctx, node, scope, enclosing, key
        self.owner = owner  # (global class name, its class-level names) for a method of a cell's class
        self.self_name = scope.params[0] if scope.params and not isinstance(node, ast.Lambda) else None
        self.info = FuncInfo(key, list(scope.params), [p for p in scope.params if p in scope.cellvars])
        self.reader = Reader(_FuncScope(self), Effects(), strings={}, plumbing=ctx.plumbing, new_slot=self.new_slot_for)
        self.kids = {id(c.node): c for c in scope.children}
        self.after: list[ast.stmt] = []
        self.current: ast.AST = node

    def new_slot_for(self, node: ast.Subscript) -> int:
        slot = self.ctx.registry.new_id()
        node.slice = _wrap(node.slice, "k", slot)
        return slot

    def run(self) -> FuncInfo:
        if isinstance(self.node, ast.Lambda):
            block = self.new_block()
            unit = Unit(line=self.node.lineno, block=block)
            self.reader.fx = fx = Effects()
            unit.reads = self.reader.expr(self.node.body)
            unit.returns = list(unit.reads)
            self.finish(unit, fx)
            self.info.stmts.append(unit)
            self.nested_lambdas(self.node.body)
            marked = ast.Tuple(elts=[hook_call("f", block), self.node.body], ctx=ast.Load())
            value = ast.Subscript(value=marked, slice=ast.Constant(1), ctx=ast.Load())
            self.node.body = located(value, self.node.body)  # type: ignore[assignment]
        else:
            self.node.body = self.block(self.node.body, docstring=True)
        return self.info

    def new_block(self) -> int:
        block = self.ctx.registry.new_id()
        self.ctx.registry.blocks[block] = self.info
        return block

    def block(self, stmts: list[ast.stmt], docstring: bool = False) -> list[ast.stmt]:
        block = self.new_block()
        head: list[ast.stmt] = []
        rest = list(stmts)
        if docstring and rest and isinstance(rest[0], ast.Expr) and isinstance(rest[0].value, ast.Constant) \
                and isinstance(rest[0].value.value, str):  # fmt: skip
            head = [rest.pop(0)]
        at = rest[0] if rest else stmts[0]
        out = [*head, cover_stmt(block, at=at)]
        for i, st in enumerate(rest):
            if i and isinstance(rest[i - 1], _COMPOUND):  # code after an `if` may not run (`return` inside)
                block = self.new_block()
                out.append(cover_stmt(block, at=st))
            out += self.stmt(st, block)
        return out

    def stmt(self, st: ast.stmt, block: int) -> list[ast.stmt]:
        if isinstance(st, _NO_UNIT):
            return [st]
        unit = Unit(line=st.lineno, block=block)
        self.info.stmts.append(unit)
        self.after, self.current = [], st
        self.reader.fx = fx = Effects()
        if self.simple(st, unit):
            self.finish(unit, fx)
            self.nested_lambdas(st)
            return [st, *self.after]
        if isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
            atoms = self.reader.exprs([*st.decorator_list, *st.args.defaults])
            unit.reads += atoms
            self.write_name(unit, st.name, Rhs(atoms), False)
            FuncWalker(self.ctx, st, self.kids[id(st)], [*self.enclosing, (self.key, self.scope)],
                       f"{self.key}.<locals>.{st.name}").run()  # fmt: skip
        elif isinstance(st, ast.ClassDef):
            atoms = self.reader.exprs([*st.bases, *st.decorator_list])
            unit.reads += atoms
            self.write_name(unit, st.name, Rhs(atoms), False)
            cls = self.kids[id(st)]
            methods = {id(c.node): c for c in cls.children}
            for item in st.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    FuncWalker(self.ctx, item, methods[id(item)], [*self.enclosing, (self.key, self.scope)],
                               f"{self.key}.<locals>.{st.name}.{item.name}").run()  # fmt: skip
        else:
            self.header(st, unit)
            self.finish(unit, fx)
            for name in ("body", "orelse", "finalbody"):
                if getattr(st, name, None):
                    setattr(st, name, self.block(getattr(st, name)))
            for handler in getattr(st, "handlers", []):
                handler.body = self.block(handler.body)
            for case in getattr(st, "cases", []):
                case.body = self.block(case.body)
            return [st]
        self.finish(unit, fx)
        return [st, *self.after]

    def nested_lambdas(self, node: ast.AST) -> None:
        for lam in _lambdas(node) if self.ctx.lambdas else ():
            scope = self.kids.get(id(lam)) or scope_tree(lam)
            FuncWalker(self.ctx, lam, scope, [*self.enclosing, (self.key, self.scope)],
                       f"{self.key}.<locals>.<lambda>").run()  # fmt: skip

    # --- targets in a function's scope ------------------------------------------------------------
    def write_name(self, unit: Unit, name: str, rhs: Rhs, keep: bool) -> None:
        atoms = list(rhs.atoms)
        if name in self.scope.globals:
            own = keep or any(a[0] == "g" and paths.under(a[1], (name,)) for a in atoms)
            unit.writes.append(SWrite(("g", (name,), True), "bind", atoms, keep=own))
            return
        if name in self.scope.nonlocals:
            for key, outer in reversed(self.enclosing):
                if name in outer.locals:
                    unit.writes.append(SWrite(("c", f"{key}.<locals>.{name}"), "bind", atoms, keep=keep))
                    return
        unit.locals.append((name, atoms))
        if name in self.scope.cellvars:
            unit.writes.append(SWrite(("c", f"{self.key}.<locals>.{name}"), "bind", atoms, keep=keep))

    def write_object(self, unit: Unit, chain: Chain, kind: str, deps: list[Atom], keep: bool) -> None:
        if chain.kind == "c":
            unit.writes.append(SWrite(("c", chain.root), "mutate", deps, keep=True))
            return
        capture = self.ctx.registry.new_id()
        tail = tuple(c for c in chain.comps if paths.slot_index(c) is None)
        unit.writes.append(SWrite(None, kind, deps, keep=keep or kind != "bind", capture=capture, tail=tail))
        self.after.append(hook_stmt("o", capture, ast.Name(id=chain.root, ctx=ast.Load()), at=self.current))


def _names(tree: ast.Module) -> tuple[set[str], set[str], bool]:
    """(names bound anywhere in the cell, names bound by `import`, whether it calls a SQL method)."""
    bound: set[str] = set()
    imported: set[str] = set()
    sql = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
            bound |= names
            if isinstance(node, ast.Import):
                imported |= names
        elif isinstance(node, ast.Attribute) and node.attr in PLUMBING_METHODS:
            sql = True
    return bound, imported, sql


def analyze_cell(code: str, namespace: dict[str, Any], registry: Registry) -> CellPlan:
    """Units, function statements (into `registry`) and the instrumented AST of one cell."""
    tree = ast.parse(code, "<cell>")
    bound, imported, sql = _names(tree)

    def is_module(name: str) -> bool:
        return name in imported or isinstance(namespace.get(name), ModuleType)

    strings, plumbing = (string_values(tree), sql_flow(tree)[2]) if sql else ({}, set())
    ctx = CellContext(registry, strings, plumbing, is_module, lambda name: name in namespace or name in bound,
                      "lambda" in code)  # fmt: skip
    walker = TopWalker(ctx)
    last_stmt = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = ast.Module(body=walker.body(tree.body, in_try=False), type_ignores=[])
    last = None
    if last_stmt is not None:
        marker, expr_stmt = walker.stmt(last_stmt, in_try=False)
        assert isinstance(marker, ast.Expr) and isinstance(expr_stmt, ast.Expr)
        pair = ast.Tuple(elts=[marker.value, expr_stmt.value], ctx=ast.Load())
        value = ast.Subscript(value=pair, slice=ast.Constant(1), ctx=ast.Load())
        located(value, expr_stmt.value)
        last = ast.Expression(body=value)
    return CellPlan(walker.units, body, last, walker.in_try, walker.plain_blocks, walker.loops)
