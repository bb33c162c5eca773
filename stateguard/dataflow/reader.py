"""Reading one expression: what it loads, and the side effects it has on names.

`Reader.expr(node)` returns the *atoms* an expression's value is computed from:
- `("g", path, deep)`: a global symbol path (`df['a']`, `foo.x`, `np.random.random`); `deep`
  False for a callee (`f(...)` depends on which `f`, not on what is inside it);
- `("l", name)`: a local variable of the function being read (resolved later through its assignments);
- `("c", symbol)`: a variable of an enclosing function shared through a closure (`f.<locals>.x`);
- `("a",)`: the function's arguments (the caller's statement supplies them).

Side effects land in `Effects`: walrus bindings, in-place mutations by method calls
(`lst.append(x)`, `df.fillna(0, inplace=True)`, `np.random.seed(0)` changes `np.random`,
`np.random.shuffle(a)` changes `a`), SQL tables read and written through a connection, and
the subscript keys that are only known at run time (`lst[i]`), which the instrumentation wraps
so the recorder sees them (`instrument.py`).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stateguard.dataflow import paths
from stateguard.dataflow.cellflow import (
    MUTATING_METHODS,
    PANDAS_INPLACE_METHODS,
    PLUMBING_METHODS,
    SQL_METHODS,
    TABLE_METHODS,
    sql_tables,
    sql_text,
)
from stateguard.dataflow.markers import children, walk

Atom = tuple[Any, ...]
BUILTIN_NAMES = frozenset(dir(builtins))
GROW_METHODS = frozenset({"append", "extend", "appendleft", "extendleft"})
PANDAS_MUTATORS = frozenset(
    {"update", "pop", "insert", "__setitem__"}
)  # the in-place ones without `inplace=`
SEED_METHODS = frozenset({"seed", "manual_seed", "set_state"})  # on a module: changes the module's state
SHUFFLE_METHODS = frozenset({"shuffle"})  # on a module: changes its first argument in place
# pandas methods that never change their receiver and return a new object (never a view a later
# in-place call could write through, with or without copy-on-write), unless given `inplace=`: a frame
# that a cell only calls these on need not be fingerprinted (see `recorder._watched`). Methods that
# hand the receiver or its parts to a callback (apply, pipe, agg, transform, map) are not here.
PANDAS_READERS = frozenset(
    {
        "sort_values",
        "sort_index",
        "groupby",
        "describe",
        "sum",
        "mean",
        "median",
        "min",
        "max",
        "std",
        "var",
        "sem",
        "prod",
        "count",
        "nunique",
        "unique",
        "value_counts",
        "quantile",
        "corr",
        "cov",
        "isna",
        "isnull",
        "notna",
        "notnull",
        "duplicated",
        "drop_duplicates",
        "dropna",
        "fillna",
        "merge",
        "join",
        "pivot_table",
        "melt",
        "round",
        "abs",
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "shift",
        "diff",
        "pct_change",
        "rank",
        "nlargest",
        "nsmallest",
        "idxmax",
        "idxmin",
        "any",
        "all",
        "isin",
        "between",
        "equals",
        "to_dict",
        "tolist",
        "to_list",
        "to_string",
        "info",
        "memory_usage",
        "sample",
        "copy",
        "query",
        "eq",
        "ne",
        "lt",
        "gt",
        "le",
        "ge",
        "skew",
        "kurt",
        "mode",
        "explode",
        "stack",
        "unstack",
        "pivot",
        "crosstab",
    }
)
# builtins that only read their arguments (through `__len__`, `__repr__`, iteration, ...), which for
# a pandas object changes nothing: a frame handed to them is treated like a PANDAS_READERS receiver
READ_BUILTINS = frozenset(
    {
        "len",
        "print",
        "repr",
        "str",
        "isinstance",
        "type",
        "id",
        "sorted",
        "list",
        "tuple",
        "round",
        "abs",
        "min",
        "max",
        "sum",
        "float",
        "int",
    }
)
INDEXERS = frozenset({"loc", "iloc", "at", "iat"})  # df.loc[rows, "col"] is column "col" of df


@dataclass
class Chain:
    """A Name/Attribute/Subscript chain: its root (kind 'g' global, 'l' local, 'c' closure), the
    components after it, the atoms its keys read, and whether it was cut short (a slice or an
    unknown key: from there on it stands for the whole value)."""

    kind: str
    root: str
    comps: list[str] = field(default_factory=list)
    extra: list[Atom] = field(default_factory=list)
    cut: bool = False

    @property
    def is_global(self) -> bool:
        return self.kind == "g"

    @property
    def path(self) -> paths.PathT:
        return (self.root, *self.comps)

    def atom(self, deep: bool = True) -> Atom:
        if self.kind == "g":
            return ("g", self.path, deep)
        return ("l", self.root) if self.kind == "l" else ("c", self.root)


@dataclass
class Effects:
    binds: list[tuple[str, list[Atom]]] = field(default_factory=list)  # walrus: name <- atoms
    # (target, kind, deps); kind "mutate:<method>" when only the receiver's type can tell (`df.add(1)`
    # returns a new frame, `lst.sort()` sorts in place)
    mutations: list[tuple[Chain, str, list[Atom]]] = field(default_factory=list)
    tables_read: list[str] = field(default_factory=list)
    tables_written: list[tuple[str, list[str]]] = field(default_factory=list)  # (table, tables it reads)
    returns: list[Atom] = field(default_factory=list)  # yield values
    candidates: set[str] = field(default_factory=set)  # globals handed to calls: may change opaquely
    readers: set[str] = field(default_factory=set)  # globals only read here by PANDAS_READERS / READ_BUILTINS
    calls: bool = False


class Scope:
    """How names resolve where an expression is read. The module scope: every name is global."""

    def __init__(self, modules: Callable[[str], bool], known: Callable[[str], bool]):
        self.is_module = modules
        self.known = known  # bound in the namespace or in this cell: a builtin name is then a variable

    def kind(self, name: str) -> Atom | None:
        if name in BUILTIN_NAMES and not self.known(name):
            return None
        return ("g", (name,), True)

    def class_attribute(self, local: str, attr: str) -> str | None:
        """The global class whose attribute `local.attr` is, when `local` is a method's `self`."""
        return None


def _string_list(node: ast.AST, single: bool = True) -> list[str] | None:
    """['a'] for 'a', ['a', 'b'] for ['a', 'b'] (short lists of string constants), else None."""
    if single and isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if (
        isinstance(node, ast.List)
        and 0 < len(node.elts) <= 16
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def literal_key(node: ast.AST) -> str | None:
    """The path component of a constant subscript (`'a'`, `0`, `-1`, `('x', 1)`), else None."""
    # The two commonest keys answered as `literal_eval` answers them, without its call: it builds
    # a repr of the node for the error a name raises, and this runs for every subscript of a cell.
    if type(node) is ast.Constant:
        return paths.key(node.value)
    if type(node) is ast.Name:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return paths.key(value)


def mutation_kind(call: ast.Call, method: str) -> str | None:
    """'grow', 'mutate' or None for `receiver.method(...)`; pandas methods mutate only with inplace=True."""
    if method in PANDAS_INPLACE_METHODS:
        inplace = any(
            k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in call.keywords
        )
        return "mutate" if inplace else None
    if method in GROW_METHODS or method == "add":
        return "grow" if method != "add" else "mutate"
    return "mutate" if method in MUTATING_METHODS else None


class Reader:
    """Reads expressions in one scope; `slots` is called to number a run-time subscript key."""

    def __init__(
        self,
        scope: Scope,
        effects: Effects,
        *,
        strings: dict[str, str],
        plumbing: set[str],
        new_slot: Callable[[ast.Subscript], int] | None = None,
    ):
        self.scope = scope
        self.fx = effects
        self.strings = strings
        self.plumbing = plumbing
        self.new_slot = new_slot
        self.hidden: list[set[str]] = []  # comprehension/lambda parameters in force

    # --- names and chains -----------------------------------------------------------------------
    def name(self, name: str) -> Atom | None:
        if any(name in h for h in self.hidden):
            return None
        return self.scope.kind(name)

    def chain(self, node: ast.AST, load: bool = True) -> Chain | None:
        """The chain of `node`, or None when it is not rooted in a name (`f().x`) or the name is hidden.
        `load` False: a target being assigned (an instance attribute then stays the instance's)."""
        if isinstance(node, ast.Name):
            atom = self.name(node.id)
            if atom is None:
                return None
            return Chain("g", node.id) if atom[0] == "g" else Chain(atom[0], atom[1])
        if isinstance(node, ast.Attribute):
            base = self.chain(node.value, load)
            if base is not None and load and base.kind == "l" and not base.comps:
                owner = self.scope.class_attribute(base.root, node.attr)
                if owner is not None:  # `self.shared` in a method reads the class attribute Foo.shared
                    return Chain("g", owner, [paths.attr(node.attr)], base.extra)
            if base is not None and not base.cut:
                base.comps.append(paths.attr(node.attr))
            return base
        if isinstance(node, ast.Subscript):
            base = self.chain(node.value, load)
            if base is None:
                return None
            base.extra += self.expr(node.slice)
            if base.cut:
                return base
            if base.comps and base.comps[-1][1:] in INDEXERS:
                return self._indexer(base, node)
            component = literal_key(node.slice)
            if component is not None:
                base.comps.append(component)
            elif isinstance(node.slice, ast.Slice) or self.new_slot is None or not base.is_global:
                base.cut = True
            else:
                base.comps.append(paths.slot(self.new_slot(node)))
            return base
        return None

    def _indexer(self, base: Chain, node: ast.Subscript) -> Chain:
        """`df.loc[rows, 'col']` is column 'col' of df; any other indexing is the whole of df."""
        base.comps.pop()
        key = node.slice.elts[-1] if isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2 else None
        component = literal_key(key) if key is not None else None
        if component is not None and component.startswith("['"):
            base.comps.append(component)
        base.cut = True
        return base

    # --- expressions ----------------------------------------------------------------------------
    def expr(self, node: ast.AST | None) -> list[Atom]:
        if node is None:
            return []
        method = getattr(self, "_" + type(node).__name__, None)
        if method is not None:
            out: list[Atom] = method(node)
            return out
        atoms: list[Atom] = []
        for child in children(node):
            atoms += self.expr(child)
        return atoms

    def exprs(self, nodes: list[Any]) -> list[Atom]:
        return [a for n in nodes for a in self.expr(n)]

    def _Name(self, node: ast.Name) -> list[Atom]:
        atom = self.name(node.id) if isinstance(node.ctx, ast.Load) else None
        return [] if atom is None else [atom]

    def _Attribute(self, node: ast.Attribute) -> list[Atom]:
        return self._chain_read(node)

    def _Subscript(self, node: ast.Subscript) -> list[Atom]:
        columns = self._column_select(node)
        return columns if columns is not None else self._chain_read(node)

    def _column_select(self, node: ast.Subscript) -> list[Atom] | None:
        """pandas column selections that read named columns only: `df[['a', 'b']]` reads `df['a']`
        and `df['b']`; `df.groupby('k')['v']` (or `groupby(['k1', 'k2'])[['v', 'w']]`) reads the key
        and value columns, so a new column `df['x'] = ...` does not stale them."""
        names = _string_list(node.slice)
        if names is None:
            return None
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "groupby"
            and len(call.args) == 1
        ):
            keys = _string_list(call.args[0], single=True)
            base = self._plain_chain(call.func.value)
            if keys is None or base is None:
                return None
            self.fx.calls = True
            return [("g", (*base.path, paths.key(c) or ""), True) for c in keys + names] + self.exprs(
                [k.value for k in call.keywords]
            )
        if isinstance(node.slice, ast.List):
            base = self._plain_chain(node.value)
            if base is not None:
                return [("g", (*base.path, paths.key(c) or ""), True) for c in names]
        return None

    def _plain_chain(self, node: ast.AST) -> Chain | None:
        """A global name/attribute path without keys known only at run time, or None."""
        if not isinstance(node, ast.Name | ast.Attribute) or not all(
            isinstance(n, ast.Name | ast.Attribute) for n in walk(node) if isinstance(n, ast.expr)
        ):
            return None
        found = self.chain(node)
        return found if found is not None and found.is_global and not found.cut else None

    def _chain_read(self, node: ast.Attribute | ast.Subscript) -> list[Atom]:
        found = self.chain(node)
        if found is None:  # rooted in a call or a literal: read the parts
            return self.expr(node.value) + (self.expr(node.slice) if isinstance(node, ast.Subscript) else [])
        return [found.atom(), *found.extra]

    def _Starred(self, node: ast.Starred) -> list[Atom]:
        return self.expr(node.value)

    def _NamedExpr(self, node: ast.NamedExpr) -> list[Atom]:
        """`(x := v)` binds x; the enclosing expression reads x (so `y = (x := f()) + 1` gives y <- x)."""
        atoms = self.expr(node.value)
        self.fx.binds.append((node.target.id, atoms))
        target = self.scope.kind(node.target.id)
        return atoms if target is None else [target]

    def _Lambda(self, node: ast.Lambda) -> list[Atom]:
        return self.exprs(node.args.defaults) + self.exprs(
            [d for d in node.args.kw_defaults if d is not None]
        )

    def _Yield(self, node: ast.Yield) -> list[Atom]:
        atoms = self.expr(node.value)
        self.fx.returns += atoms
        return atoms

    def _YieldFrom(self, node: ast.YieldFrom) -> list[Atom]:
        atoms = self.expr(node.value)
        self.fx.returns += atoms
        return atoms

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> list[Atom]:
        gens = node.generators
        atoms = self.expr(gens[0].iter)  # evaluated in the enclosing scope
        hidden = {n.id for g in gens for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        self.hidden.append(hidden)
        try:
            for i, gen in enumerate(gens):
                if i:
                    atoms += self.expr(gen.iter)
                atoms += self.exprs(gen.ifs)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            atoms += self.exprs(parts)
        finally:
            self.hidden.pop()
        return atoms

    _ListComp = _SetComp = _GeneratorExp = _DictComp = _comprehension

    def _Call(self, node: ast.Call) -> list[Atom]:
        self.fx.calls = True
        args: list[Atom] = []
        first: Atom | None = None
        func = node.func
        reads_only = (
            isinstance(func, ast.Name)
            and func.id in READ_BUILTINS
            and self.scope.kind(func.id) is None
            and not any(func.id in h for h in self.hidden)
        )  # the builtin itself, not a variable
        for i, arg in enumerate([*node.args, *(k.value for k in node.keywords)]):
            atoms = self.expr(arg)
            inner = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(inner, ast.Name | ast.Attribute | ast.Subscript) and atoms and atoms[0][0] == "g":
                # handed to a call: may be changed in place (unless a pandas object goes to a READ_BUILTINS one)
                (self.fx.readers if reads_only else self.fx.candidates).add(atoms[0][1][0])
                if i == 0 and node.args:
                    first = atoms[0]
            args += atoms
        return self._callee(node, args, first) + args

    def _callee(self, node: ast.Call, args: list[Atom], first: Atom | None) -> list[Atom]:
        func = node.func
        if not isinstance(func, ast.Attribute):
            found = self.chain(func)
            return self.expr(func) if found is None else [found.atom(deep=False), *found.extra]
        method = func.attr
        recv = self.chain(func.value)
        if recv is None:  # `f().method()`, `con.table('t').df()`
            return self.expr(func.value)
        if recv.is_global and not recv.comps and recv.root in self.plumbing and method in PLUMBING_METHODS:
            self._sql(node, method)
            return recv.extra
        if recv.is_global and self.scope.is_module(recv.root) and not recv.cut:
            if method in SEED_METHODS:
                self.fx.mutations.append((recv, "mutate", args))
            if method in SHUFFLE_METHODS and first is not None:
                self.fx.mutations.append((Chain("g", first[1][0], list(first[1][1:])), "mutate", []))
            return [("g", (*recv.path, paths.attr(method)), False), *recv.extra]
        kind = mutation_kind(node, method)
        if kind is not None:
            inplace = method in PANDAS_INPLACE_METHODS
            self.fx.mutations.append((recv, kind if inplace or kind == "grow" else f"mutate:{method}", args))
        if recv.is_global:
            plain = (
                kind is None
                and method in PANDAS_READERS
                and not any(k.arg in (None, "inplace") for k in node.keywords)
            )
            (self.fx.readers if plain else self.fx.candidates).add(recv.root)
        return [recv.atom(), *recv.extra]

    def _sql(self, node: ast.Call, method: str) -> None:
        text = sql_text(node.args[0] if node.args else None, self.strings)
        if text is None:
            return
        if method in TABLE_METHODS:
            self.fx.tables_read.append(text.split(".")[-1].lower())
        elif method in SQL_METHODS:
            reads, writes = sql_tables(text)
            made = {t for t, _ in self.fx.tables_written}
            self.fx.tables_read += sorted(set(reads) - made)
            self.fx.tables_written += [(t, sorted(reads)) for t in sorted(writes)]
