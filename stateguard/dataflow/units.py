"""A cell, cut into statement units and instrumented so that its run reports what actually ran.

`analyze_cell(code, namespace, registry)` parses the cell once and returns a `CellPlan`: one
`Unit` per statement unit (a simple statement, or the header of an if/for/while/with/match), the
functions the cell defines (`FuncInfo`, one `Unit` per statement of their bodies), and the cell's
AST with markers inserted, ready to compile:

- `__sgflow__.u(i)` before unit i, and `__sgflow__.d(i)` after it inside a `try` body (a
  statement that raised and was caught wrote nothing);
- `__sgcov__[b] = 1` at the start of block b of a function body (which branches of a function
  ran, at call time, whichever cell calls it; `functions.py`);
- `__sgflow__.o(k, obj)` after a function statement that changes an attribute or item of a local
  object (`self.x = v`, `frame['c'] = v`, `items.append(v)`): the object's identity tells which
  variable was changed;
- `__sgflow__.k(s, key)` around a subscript key known only at run time (`lst[i]`, `df[col]`,
  `{name: v}`), and `__sgflow__.t(k, obj)` around the object of `f().attr = v`;
- a cell-level loop body becomes `if __sgloops__[L]: <untraced copy> else: <traced copy>`, the
  traced copy starting with `__sgflow__.l(L)`, which sets the flag after two iterations.

Line numbers are kept, so tracebacks and `linecache` show the user's own lines.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, cast

from stateguard.dataflow import paths
from stateguard.dataflow.cellflow import PLUMBING_METHODS, sql_flow, string_values
from stateguard.dataflow.functions import CellContext, FuncInfo, FuncWalker, Registry
from stateguard.dataflow.markers import (
    EXITS,
    LOOPS,
    NO_UNIT,
    SCOPES,
    Unwrap,
    children,
    cover_stmt,
    hook_stmt,
    is_loop_switch,
    lambdas,
    located,
    marker_of,
    walk,
    walk_local,
    wrap,
)
from stateguard.dataflow.reader import Atom, Effects, Reader, Scope, literal_key
from stateguard.dataflow.scopes import Scope as FnScope
from stateguard.dataflow.scopes import scope_tree
from stateguard.dataflow.walker import MAX_WRITES, Rhs, SWrite, Unit, Walker

__all__ = [
    "CellContext",
    "CellNames",
    "CellPlan",
    "FuncInfo",
    "Registry",
    "TopWalker",
    "analyze_cell",
    "scan_names",
]


@dataclass
class CellPlan:
    units: list[Unit]
    body: ast.Module
    last: ast.Expression | None
    in_try: set[int] = field(default_factory=set)  # units whose completion is marked (`d`)
    plain_blocks: dict[int, list[int]] = field(default_factory=dict)  # untraced loop-body block -> its units
    loops: set[int] = field(default_factory=set)
    # What the analysis asked of the namespace: name -> (bound there, bound to a module). The same
    # text analyzed against a namespace that answers alike gives the same plan (`plans.py`).
    asked: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    defines: bool = False  # whether the cell defines functions, classes or lambdas (they register blocks)


def _digest(node: ast.AST) -> str:
    return hashlib.blake2b(ast.dump(node, include_attributes=False).encode(), digest_size=8).hexdigest()


class TopWalker(Walker):
    """The cell's own statements: every name is a global of the workspace."""

    def __init__(self, ctx: CellContext):
        self.ctx = ctx
        self.units: list[Unit] = []
        self.in_try: set[int] = set()
        self.plain_blocks: dict[int, list[int]] = {}
        self.loops: set[int] = set()
        self.reader = Reader(
            Scope(ctx.is_module, ctx.known),
            Effects(),
            strings=ctx.strings,
            plumbing=ctx.plumbing,
            new_slot=self.new_slot_for,
        )

    def new_slot_for(self, node: ast.Subscript) -> int:
        slot = self.ctx.registry.new_id()
        node.slice = wrap(node.slice, "k", slot)
        return slot

    def dict_key_slot(self, node: ast.Dict, index: int) -> int | None:
        slot = self.ctx.registry.new_id()
        node.keys[index] = wrap(node.keys[index], "k", slot)  # type: ignore[arg-type]
        return slot

    def write_name(self, unit: Unit, name: str, rhs: Rhs, keep: bool) -> None:
        path = (name,)
        keep = keep or any(a[0] == "g" and paths.under(a[1], path) for a in rhs.atoms)
        shaped = (rhs.items is not None or rhs.entries is not None) and rhs.size() <= MAX_WRITES
        unit.writes.append(
            SWrite(
                ("g", path, True),
                "bind",
                list(rhs.own if shaped else rhs.atoms),
                keep=keep,
                ret_index=rhs.ret_index,
            )
        )
        if shaped:  # a big nested literal stays one value
            self.children(unit, path, rhs)

    def write_captured(self, unit: Unit, target: ast.Attribute | ast.Subscript, rhs: Rhs) -> None:
        capture = self.ctx.registry.new_id()
        unit.reads += self.reader.expr(target.value)
        target.value = wrap(target.value, "t", capture)
        kind, tail = "mutate", cast(tuple[str, ...], ())
        if isinstance(target, ast.Attribute):
            kind, tail = "bind", (paths.attr(target.attr),)
        else:
            component = literal_key(target.slice)
            unit.reads += self.reader.expr(target.slice)
            if component is not None:
                kind, tail = "bind", (component,)
        unit.writes.append(
            SWrite(None, kind, list(rhs.atoms), keep=kind == "mutate", capture=capture, tail=tail)
        )

    # --- statements -----------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], in_try: bool) -> list[ast.stmt]:
        return [out for st in stmts for out in self.stmt(st, in_try)]

    def stmt(self, st: ast.stmt, in_try: bool) -> list[ast.stmt]:
        if isinstance(st, NO_UNIT) or (isinstance(st, ast.ImportFrom) and st.module == "__future__"):
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
        """`if __sgloops__[L]: <plain copy> else: <traced copy>`: the first LOOP_CAP iterations run the
        traced copy (`__sgflow__.l(L)` counts them, then sets the flag); later ones run a copy with
        coverage stores only, so a long loop costs one check and a store per block."""
        loop = self.ctx.registry.new_id()
        self.loops.add(loop)
        traced = [hook_stmt("l", loop, at=stmts[0]), *self.body(stmts, in_try)]
        # The first iteration is always traced; without an early exit in the body, every statement
        # of its top block was traced then, and the untraced copy needs no coverage store there.
        early = any(isinstance(n, EXITS) for st in stmts for n in walk_local(st))
        plain = self.plain(copy.deepcopy(traced), cover=early)
        flag = ast.Subscript(
            value=ast.Name(id=LOOPS, ctx=ast.Load()), slice=ast.Constant(loop), ctx=ast.Load()
        )
        return [located(ast.If(test=flag, body=plain, orelse=traced), stmts[0])]  # type: ignore[list-item]

    def plain(self, stmts: list[ast.stmt], cover: bool = True) -> list[ast.stmt]:
        """A traced block without its statement markers and key wrappers, with a coverage store."""
        block = self.ctx.registry.new_id()
        units: list[int] = []
        out: list[ast.stmt] = []
        for st in stmts:
            marker = marker_of(st)
            if marker is not None:
                if marker[0] == "u":
                    units.append(marker[1])
                continue
            if isinstance(st, ast.If) and is_loop_switch(
                st.test
            ):  # a nested loop's own switch: keep its plain copy
                out += st.body
                continue
            if isinstance(st, SCOPES):
                out.append(st)
                continue
            Unwrap().visit(st)
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

    def class_body(
        self, node: ast.ClassDef, scope: FnScope, enclosing: list[tuple[str, FnScope]], qual: str
    ) -> list[Atom]:
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
                    atoms += [a for child in children(st) for a in self.reader.expr(child)]
                    for lam in lambdas(st):
                        FuncWalker(
                            self.ctx, lam, kids.get(id(lam)) or scope_tree(lam), enclosing, f"{qual}.<lambda>"
                        ).run()
        finally:
            self.reader.hidden.pop()
        return atoms

    def register_lambdas(self, st: ast.stmt, headers_only: bool = False) -> None:
        if not self.ctx.lambdas:
            return
        parts: list[Any] = [st]
        if headers_only:
            parts = [
                getattr(st, n)
                for n in ("test", "iter", "target", "subject")
                if getattr(st, n, None) is not None
            ]
            parts += [i.context_expr for i in getattr(st, "items", [])]
        for part in parts:
            nodes = [part] if isinstance(part, ast.Lambda) else lambdas(part)
            for lam in nodes:
                FuncWalker(self.ctx, lam, scope_tree(lam), [], "<lambda>").run()


@dataclass(frozen=True)
class CellNames:
    """What one pass over a cell's statements tells before the analysis instruments them."""

    bound: frozenset[str]  # names bound anywhere in the cell
    imported: frozenset[str]  # names bound by `import`
    sql: bool  # whether it calls a SQL (plumbing) method
    defines: bool  # whether it defines a function, class or lambda
    rebound_first: frozenset[str]  # see `recorder._rebound_first`


def scan_names(tree: ast.Module) -> CellNames:
    """The cell's `CellNames`, from one walk per top-level statement (the recorder and the analysis
    each walked the whole cell for their part of this; a new cell paid both)."""
    bound: set[str] = set()
    imported: set[str] = set()
    sql = defines = False
    seen: set[str] = set()
    fresh: set[str] = set()
    name_type, scope_types = ast.Name, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for stmt in tree.body:
        target = None
        if type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is name_type:
            target = stmt.targets[0]
        names: set[str] = set()
        for node in walk(stmt):
            kind = type(node)
            if kind is name_type:
                if node is not target:
                    names.add(node.id)  # type: ignore[attr-defined]
                if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    bound.add(node.id)  # type: ignore[attr-defined]
            elif kind in scope_types:
                bound.add(node.name)  # type: ignore[attr-defined]
                defines = True
            elif kind is ast.Lambda:
                defines = True
            elif kind is ast.Import or kind is ast.ImportFrom:
                imported_here = {(a.asname or a.name).split(".")[0] for a in node.names}  # type: ignore[attr-defined]
                bound |= imported_here
                if kind is ast.Import:
                    imported |= imported_here
            elif kind is ast.Attribute and node.attr in PLUMBING_METHODS:  # type: ignore[attr-defined]
                sql = True
        if target is not None:
            # `name = <expr>`: the names are the value's (`names`, the target left out) and the target's
            if target.id not in seen and target.id not in names:
                fresh.add(target.id)
            names.add(target.id)
        seen |= names
    return CellNames(frozenset(bound), frozenset(imported), sql, defines, frozenset(fresh))


def analyze_cell(
    code: str,
    namespace: dict[str, Any],
    registry: Registry,
    tree: ast.Module | None = None,
    names: CellNames | None = None,
) -> CellPlan:
    """Units, function statements (into `registry`) and the instrumented AST of one cell; `tree`, when
    given, is `code` freshly parsed (it is instrumented in place), and `names` its `scan_names`."""
    tree = ast.parse(code, "<cell>") if tree is None else tree
    scanned = scan_names(tree) if names is None else names
    bound, imported, sql, defines = scanned.bound, scanned.imported, scanned.sql, scanned.defines
    asked: dict[str, tuple[bool, bool]] = {}

    def ask(name: str) -> tuple[bool, bool]:
        answer = asked.get(name)
        if answer is None:
            answer = asked[name] = (name in namespace, isinstance(namespace.get(name), ModuleType))
        return answer

    def is_module(name: str) -> bool:
        return name in imported or ask(name)[1]

    strings, plumbing = (string_values(tree), sql_flow(tree)[2]) if sql else ({}, set())
    ctx = CellContext(
        registry,
        strings,
        plumbing,
        is_module,
        lambda name: ask(name)[0] or name in bound,
        "lambda" in code,
    )
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
    return CellPlan(
        walker.units, body, last, walker.in_try, walker.plain_blocks, walker.loops, asked, defines
    )
