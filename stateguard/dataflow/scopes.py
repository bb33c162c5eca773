"""Python's scoping rules for functions defined in cells: which names are local, global or closure.

`scope_tree(node)` reads a function, lambda or class node (and everything nested in it) the way
the compiler does: a name bound anywhere in a function body is local unless declared `global`
or `nonlocal`; comprehension targets belong to the comprehension; a class body's names are not
visible to its methods. `Scope.cellvars` are the locals that nested functions read through a
closure (Python's cell variables): the dataflow tracks those as symbols of their own
(`f.<locals>.x`), because a nested function can change them after `f` returned (`nonlocal`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
ScopeNode = FunctionNode | ast.ClassDef
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


@dataclass
class Scope:
    node: ScopeNode
    params: list[str] = field(default_factory=list)
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    comp_targets: set[str] = field(default_factory=set)
    children: list[Scope] = field(default_factory=list)
    cellvars: set[str] = field(default_factory=set)

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    @property
    def locals(self) -> set[str]:
        return (set(self.params) | self.bound) - self.globals - self.nonlocals

    def free(self) -> set[str]:
        """Names this scope (or a scope inside it) reads from an enclosing scope or the globals."""
        inner = set().union(*(c.free() for c in self.children)) if self.children else set()
        if self.is_class:  # methods see through the class body to the enclosing function
            return ((self.uses - self.comp_targets) - self.locals) | inner
        return ((self.uses - self.comp_targets) | inner | self.nonlocals) - self.locals


def _params(args: ast.arguments) -> list[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return [a.arg for a in every]


class _Collector(ast.NodeVisitor):
    """Fills one Scope from its body without entering nested scopes (it records them as children)."""

    def __init__(self, scope: Scope):
        self.scope = scope
        self.in_comprehension = 0

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.scope.uses.add(node.id)
        elif self.in_comprehension and not self._walrus:
            self.scope.comp_targets.add(node.id)
        else:
            self.scope.bound.add(node.id)
            self.scope.uses.add(node.id)

    _walrus = False

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._walrus, outer = True, self._walrus
        self.visit(node.target)  # binds in the enclosing function even inside a comprehension
        self._walrus = outer
        self.visit(node.value)

    def _comprehension(self, node: ast.AST) -> None:
        self.in_comprehension += 1
        self.generic_visit(node)
        self.in_comprehension -= 1

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.nonlocals.update(node.names)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self.scope.bound.add((alias.asname or alias.name).split(".")[0])

    visit_Import = visit_ImportFrom = _import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.scope.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.scope.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.scope.bound.add(node.name)

    def _nested(self, node: ScopeNode) -> None:
        if not isinstance(node, ast.Lambda):
            self.scope.bound.add(node.name)
            for deco in node.decorator_list:
                self.visit(deco)
        if isinstance(node, ast.ClassDef):
            for base in [*node.bases, *(k.value for k in node.keywords)]:
                self.visit(base)
        else:  # defaults are evaluated where the function is defined
            for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                self.visit(default)
        self.scope.children.append(scope_tree(node))

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _nested


def scope_tree(node: ScopeNode) -> Scope:
    """The Scope of `node` with its nested scopes, and each function's cell variables filled in."""
    scope = Scope(node)
    collector = _Collector(scope)
    if isinstance(node, ast.ClassDef):
        for stmt in node.body:
            collector.visit(stmt)
    else:
        scope.params = _params(node.args)
        for part in [node.body] if isinstance(node, ast.Lambda) else node.body:
            collector.visit(part)
    if not scope.is_class:
        read_by_children = set().union(*(c.free() for c in scope.children)) if scope.children else set()
        scope.cellvars = scope.locals & read_by_children
    return scope
