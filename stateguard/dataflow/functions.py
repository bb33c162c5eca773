"""Functions defined in cells: their statements, grouped by the blocks that run at call time.

`FuncWalker` reads a function, lambda or method body with Python's scoping rules (`scopes.py`):
each statement becomes a `Unit` whose atoms are globals, locals, closure variables or the
arguments, and each block (the body, each branch, loop body and handler, and the code after a
compound statement) starts with a coverage store, so the recorder knows which statements ran
during a call. The `Registry` keeps every function's statements for the workspace's life: a
function defined in one cell and called in a later one is resolved the same way.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from stateguard.dataflow import paths
from stateguard.dataflow.markers import (
    COMPOUND,
    NO_UNIT,
    cover_stmt,
    hook_call,
    hook_stmt,
    lambdas,
    located,
    wrap,
)
from stateguard.dataflow.reader import BUILTIN_NAMES, Atom, Chain, Effects, Reader, Scope
from stateguard.dataflow.scopes import Scope as FnScope
from stateguard.dataflow.scopes import scope_tree
from stateguard.dataflow.walker import Rhs, SWrite, Unit, Walker


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

    def __init__(
        self,
        ctx: CellContext,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
        scope: FnScope,
        enclosing: list[tuple[str, FnScope]],
        key: str,
        owner: tuple[str, set[str]] | None = None,
    ):
        self.ctx, self.node, self.scope, self.enclosing, self.key = ctx, node, scope, enclosing, key
        self.owner = owner  # (global class name, its class-level names) for a method of a cell's class
        self.self_name = scope.params[0] if scope.params and not isinstance(node, ast.Lambda) else None
        self.info = FuncInfo(key, list(scope.params), [p for p in scope.params if p in scope.cellvars])
        self.reader = Reader(
            _FuncScope(self), Effects(), strings={}, plumbing=ctx.plumbing, new_slot=self.new_slot_for
        )
        self.kids = {id(c.node): c for c in scope.children}
        self.after: list[ast.stmt] = []
        self.current: ast.AST = node

    def new_slot_for(self, node: ast.Subscript) -> int:
        slot = self.ctx.registry.new_id()
        node.slice = wrap(node.slice, "k", slot)
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
        if (
            docstring
            and rest
            and isinstance(rest[0], ast.Expr)
            and isinstance(rest[0].value, ast.Constant)
            and isinstance(rest[0].value.value, str)
        ):
            head = [rest.pop(0)]
        at = rest[0] if rest else stmts[0]
        out = [*head, cover_stmt(block, at=at)]
        for i, st in enumerate(rest):
            if i and isinstance(rest[i - 1], COMPOUND):  # code after an `if` may not run (`return` inside)
                block = self.new_block()
                out.append(cover_stmt(block, at=st))
            out += self.stmt(st, block)
        return out

    def stmt(self, st: ast.stmt, block: int) -> list[ast.stmt]:
        if isinstance(st, NO_UNIT):
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
            FuncWalker(
                self.ctx,
                st,
                self.kids[id(st)],
                [*self.enclosing, (self.key, self.scope)],
                f"{self.key}.<locals>.{st.name}",
            ).run()
        elif isinstance(st, ast.ClassDef):
            atoms = self.reader.exprs([*st.bases, *st.decorator_list])
            unit.reads += atoms
            self.write_name(unit, st.name, Rhs(atoms), False)
            cls = self.kids[id(st)]
            methods = {id(c.node): c for c in cls.children}
            for item in st.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    FuncWalker(
                        self.ctx,
                        item,
                        methods[id(item)],
                        [*self.enclosing, (self.key, self.scope)],
                        f"{self.key}.<locals>.{st.name}.{item.name}",
                    ).run()
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
        for lam in lambdas(node) if self.ctx.lambdas else ():
            scope = self.kids.get(id(lam)) or scope_tree(lam)
            FuncWalker(
                self.ctx,
                lam,
                scope,
                [*self.enclosing, (self.key, self.scope)],
                f"{self.key}.<locals>.<lambda>",
            ).run()

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

    def write_object(
        self, unit: Unit, chain: Chain, kind: str, deps: list[Atom], keep: bool, method: str | None = None
    ) -> None:
        if chain.kind == "c":
            unit.writes.append(SWrite(("c", chain.root), "mutate", deps, keep=True))
            return
        capture = self.ctx.registry.new_id()
        tail = tuple(c for c in chain.comps if paths.slot_index(c) is None)
        unit.writes.append(
            SWrite(None, kind, deps, keep=keep or kind != "bind", capture=capture, tail=tail, method=method)
        )
        self.after.append(hook_stmt("o", capture, ast.Name(id=chain.root, ctx=ast.Load()), at=self.current))
