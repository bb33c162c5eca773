"""Statements as dataflow: what each statement reads, and which targets it writes from what.

`Walker` turns one statement into a `Unit`: the atoms it reads (`reader.py`) and its writes, each
with the atoms that target's new value is computed from. Targets are matched to their part of
the right-hand side where the shapes allow it:
- `a, b = x + 2, y + 3` gives `a <- x`, `b <- y`; starred targets and values line up by position
  (`x, *mid, y = [a, b, c, d]`, `a, b, c = [x, *lst]` gives `c <- lst[1]`);
- `a, b = lst` gives `a <- lst[0]`, `b <- lst[1]`;
- a literal list, tuple or dict bound to a name also writes its items (`d = {'k': x}` writes
  `d['k'] <- x`), so a later `d['k'] = ...` or a change of `x` touches only that item.

`TopWalker` (cell level, `units.py`) and `FuncWalker` (function bodies) decide what a name or an
attribute target means in their scope.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from stateguard.dataflow import paths
from stateguard.dataflow.markers import children
from stateguard.dataflow.reader import Atom, Chain, Effects, Reader, literal_key

MAX_ITEMS = 64  # longer displays are one value, not one symbol per item
MAX_DEPTH = 3
MAX_WRITES = 256  # symbols one statement may create for the items of a literal


@dataclass
class SWrite:
    """A static write: `target` is a global path atom ('g') or a closure symbol ('c'); None when the
    object is only known at run time (`capture`: the object's id is recorded, `tail` follows it)."""

    target: Atom | None
    kind: str = "bind"
    deps: list[Atom] = field(default_factory=list)
    keep: bool = False
    capture: int | None = None
    tail: tuple[str, ...] = ()
    alias_check: bool = False
    ret_index: int | None = None  # receives item i of a call's result (`a, b = f()`, `t = f()[1]`)
    method: str | None = None  # a change made by this method call, if the receiver's type agrees


@dataclass
class Unit:
    """A statement unit of a cell, or one statement of a function body (`block` set, `locals` used)."""

    line: int
    reads: list[Atom] = field(default_factory=list)
    writes: list[SWrite] = field(default_factory=list)
    locals: list[tuple[str, list[Atom]]] = field(default_factory=list)
    returns: list[Atom] = field(default_factory=list)
    return_items: list[list[Atom]] | None = None  # `return a, b`: what each item is computed from
    calls: bool = False
    candidates: set[str] = field(default_factory=set)
    readers: set[str] = field(default_factory=set)  # only read here by pandas-safe calls (reader.py)
    block: int = -1
    digest: str | None = None  # a `def` statement: the definition's source digest


@dataclass
class Rhs:
    """A right-hand side: everything it reads, and its shape when it is a display or a global path."""

    atoms: list[Atom]
    items: list[Rhs] | None = None  # list/tuple display elements (up to the first starred one)
    star: Rhs | None = None  # a starred last element
    complete: bool = True  # False: a starred element that is not the last one
    entries: list[tuple[str, Rhs]] | None = None  # dict display: key component -> value
    own: list[Atom] = field(default_factory=list)  # what the container itself depends on (keys, ** parts)
    path: paths.PathT | None = None
    call: bool = False  # the value is what a call returned
    ret_index: int | None = None

    def size(self) -> int:
        """How many item symbols binding this value to a name writes (`Walker.children`)."""
        parts = self.items if self.items is not None else [p for _, p in self.entries or []]
        return sum(1 + p.size() for p in parts)

    def element(self, index: int) -> Rhs:
        if self.path is not None:
            component = paths.key(index)
            if component is not None:
                item = (*self.path, component)
                return Rhs([("g", item, True)], path=item)
        if self.call and self.ret_index is None:
            return Rhs(list(self.atoms), ret_index=index)
        return Rhs(list(self.atoms), ret_index=self.ret_index)


def _rooted(node: ast.expr) -> bool:
    """Whether `node` is a name, or attributes/items of one (`df['a'].x`), not of a call's result."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name)


class Walker:
    """Shared statement logic; subclasses bind names and attribute targets in their scope."""

    reader: Reader
    after: list[ast.stmt]  # markers to place after the current statement

    def new_slot_for(self, node: ast.Subscript) -> int:
        raise NotImplementedError

    # --- hooks for subclasses ---------------------------------------------------------------------
    def write_name(self, unit: Unit, name: str, rhs: Rhs, keep: bool) -> None:
        raise NotImplementedError

    def write_object(
        self, unit: Unit, chain: Chain, kind: str, deps: list[Atom], keep: bool, method: str | None = None
    ) -> None:
        """A write into an attribute/item of a local or closure object (function bodies only)."""

    def write_captured(self, unit: Unit, target: ast.Attribute | ast.Subscript, rhs: Rhs) -> None:
        """A write into an object that is not reachable from a name (`f().x = 1`)."""

    # --- statements -----------------------------------------------------------------------------
    def simple(self, st: ast.stmt, unit: Unit) -> bool:
        """Fill `unit` for a non-compound statement; False when `st` is not one."""
        if isinstance(st, ast.Assign):
            rhs = self.rhs(st.value)
            unit.reads += rhs.atoms
            for target in st.targets:
                self.assign(unit, target, rhs)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                rhs = self.rhs(st.value)
                unit.reads += rhs.atoms
                self.assign(unit, st.target, rhs)
        elif isinstance(st, ast.AugAssign):
            atoms = self.reader.expr(st.value)
            unit.reads += self.reader.expr(st.target) + atoms
            self.assign(unit, st.target, Rhs(atoms), keep=True, alias_check=True)
        elif (
            isinstance(st, ast.Return)
            and isinstance(st.value, ast.Tuple | ast.List)
            and not any(isinstance(e, ast.Starred) for e in st.value.elts)
        ):
            unit.return_items = [self.reader.expr(e) for e in st.value.elts]
            unit.reads += [a for item in unit.return_items for a in item]
            unit.returns += list(unit.reads)
        elif isinstance(st, ast.Expr | ast.Return | ast.Raise | ast.Assert):
            atoms = [a for child in children(st) for a in self.reader.expr(child)]
            unit.reads += atoms
            if isinstance(st, ast.Return):
                unit.returns += atoms
        elif isinstance(st, ast.Delete):
            for target in st.targets:
                self.delete(unit, target)
        elif isinstance(st, ast.Import | ast.ImportFrom):
            for alias in st.names:
                if alias.name != "*":
                    self.write_name(unit, (alias.asname or alias.name).split(".")[0], Rhs([]), False)
        else:
            return False
        return True

    def header(self, st: ast.stmt, unit: Unit) -> None:
        """The part of a compound statement that runs before its body."""
        if isinstance(st, ast.If | ast.While):
            unit.reads += self.reader.expr(st.test)
        elif isinstance(st, ast.For | ast.AsyncFor):
            atoms = self.reader.expr(st.iter)
            unit.reads += atoms
            self.assign(unit, st.target, Rhs(atoms))
        elif isinstance(st, ast.With | ast.AsyncWith):
            for item in st.items:
                atoms = self.reader.expr(item.context_expr)
                unit.reads += atoms
                if item.optional_vars is not None:
                    self.assign(unit, item.optional_vars, Rhs(atoms))
        elif isinstance(st, ast.Match):
            atoms = self.reader.expr(st.subject)
            unit.reads += atoms
            for case in st.cases:
                unit.reads += self.reader.expr(case.guard)
                for node in ast.walk(case.pattern):
                    name = getattr(node, "name", None) or getattr(node, "rest", None)
                    if isinstance(name, str):
                        self.write_name(unit, name, Rhs(atoms), False)

    def finish(self, unit: Unit, fx: Effects) -> None:
        """Side effects of the statement's expressions become reads and writes."""
        first: list[SWrite] = []
        before = len(unit.writes)
        for name, atoms in fx.binds:  # walrus targets are written before the statement's own targets
            self.write_name(unit, name, Rhs(atoms), False)
        first, unit.writes = unit.writes[before:], unit.writes[:before]
        unit.writes[:0] = first
        for chain, kind, deps in fx.mutations:
            kind, _, method = kind.partition(":")
            if chain.is_global:
                unit.writes.append(
                    SWrite(
                        ("g", chain.path, True),
                        kind,
                        deps,
                        keep=True,
                        alias_check=True,
                        method=method or None,
                    )
                )
            else:
                self.write_object(unit, chain, kind, deps, keep=True, method=method or None)
        tables = [("g", (t,), True) for t in fx.tables_read]
        unit.reads += tables
        for w in unit.writes if tables else ():  # `x = con.table("x").df()`: x is the table x's content
            if w.target is not None and w.kind == "bind":
                w.deps = [*w.deps, *tables]
                w.keep = w.keep or any(t[1] == w.target[1] for t in tables)
        for table, sources in fx.tables_written:
            unit.writes.append(SWrite(("g", (table,), True), "bind", [("g", (s,), True) for s in sources]))
        walrus = {("g", (name,), True) for name, _ in fx.binds}
        unit.reads = [a for a in unit.reads if a not in walrus]
        unit.candidates |= fx.candidates
        unit.readers |= fx.readers
        unit.calls = unit.calls or fx.calls
        unit.returns += fx.returns

    # --- targets --------------------------------------------------------------------------------
    def assign(
        self, unit: Unit, target: ast.expr, rhs: Rhs, keep: bool = False, alias_check: bool = False
    ) -> None:
        if isinstance(target, ast.Name):
            before = len(unit.writes)
            self.write_name(unit, target.id, rhs, keep)
            if alias_check:
                for w in unit.writes[before:]:
                    w.alias_check = True
        elif isinstance(target, ast.Starred):
            self.assign(unit, target.value, rhs, keep)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            chain = self.reader.chain(target, load=False)
            if chain is None:
                self.write_captured(unit, target, rhs)
                return
            unit.reads += chain.extra
            if chain.is_global:
                path = chain.path
                own = keep or chain.cut or any(a[0] == "g" and paths.under(a[1], path) for a in rhs.atoms)
                kind = "mutate" if chain.cut else "bind"
                unit.writes.append(
                    SWrite(("g", path, True), kind, list(rhs.atoms), keep=own, ret_index=rhs.ret_index)
                )
            else:
                self.write_object(unit, chain, "mutate" if chain.cut else "bind", list(rhs.atoms), keep)
        elif isinstance(target, ast.Tuple | ast.List):
            for sub, part in self.align(target.elts, rhs):
                self.assign(unit, sub, part)

    def delete(self, unit: Unit, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for sub in target.elts:
                self.delete(unit, sub)
            return
        if isinstance(target, ast.Name):
            self.write_name(unit, target.id, Rhs([]), False)
            for w in unit.writes[-1:]:
                if w.target is not None and w.target[1] == (target.id,):
                    w.kind = "delete"
            return
        chain = self.reader.chain(target)
        if chain is not None and chain.is_global:
            unit.reads += chain.extra
            unit.writes.append(
                SWrite(("g", chain.path, True), "mutate" if chain.cut else "delete", keep=True)
            )
        elif chain is not None:
            self.write_object(unit, chain, "mutate", [], True)

    def align(self, targets: list[ast.expr], rhs: Rhs) -> list[tuple[ast.expr, Rhs]]:
        """Pair unpacking targets with the parts of the value they receive."""
        stars = [i for i, t in enumerate(targets) if isinstance(t, ast.Starred)]
        star = stars[0] if len(stars) == 1 else None
        if len(stars) > 1:
            return [(t, Rhs(list(rhs.atoms))) for t in targets]
        if rhs.items is not None and rhs.complete:
            items, n = rhs.items, len(rhs.items)
            if rhs.star is None and star is None and len(targets) == n:
                return list(zip(targets, items, strict=True))
            if rhs.star is None and star is not None and len(targets) - 1 <= n:
                after = len(targets) - star - 1
                middle = items[star : n - after]
                pairs = list(zip(targets[:star], items[:star], strict=True))
                pairs.append((targets[star], Rhs([a for m in middle for a in m.atoms], items=list(middle))))
                return pairs + list(zip(targets[star + 1 :], items[n - after :], strict=True))
            if rhs.star is not None and star is None and len(targets) >= n:
                pairs = list(zip(targets[:n], items, strict=False))
                return pairs + [(t, rhs.star.element(j)) for j, t in enumerate(targets[n:])]
            if rhs.star is not None and star == len(targets) - 1 and star <= n:
                pairs = list(zip(targets[:star], items[:star], strict=True))
                rest = items[star:]
                tail = Rhs(
                    [a for m in rest for a in m.atoms] + rhs.star.atoms, items=list(rest), own=rhs.star.atoms
                )
                return [*pairs, (targets[star], tail)]
        if rhs.path is not None and star is None:
            return [(t, rhs.element(i)) for i, t in enumerate(targets)]
        return [(t, Rhs(list(rhs.atoms))) for t in targets]

    # --- right-hand sides -----------------------------------------------------------------------
    def rhs(self, node: ast.expr, depth: int = 0) -> Rhs:
        if isinstance(node, ast.List | ast.Tuple) and depth < MAX_DEPTH and len(node.elts) <= MAX_ITEMS:
            return self._sequence(node, depth)
        if isinstance(node, ast.Dict) and depth < MAX_DEPTH and len(node.keys) <= MAX_ITEMS:
            return self._mapping(node, depth)
        atoms = self.reader.expr(node)
        if _rooted(node) and atoms and atoms[0][0] == "g":
            return Rhs(atoms, path=atoms[0][1])
        if isinstance(node, ast.Call):
            return Rhs(atoms, call=True)
        inner = node
        while isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Subscript):
            inner = inner.value
        if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Call):  # f()[1], f()[1][0]
            index = literal_key(inner.slice)
            if index is not None and index[1:-1].isdigit():
                return Rhs(atoms, ret_index=int(index[1:-1]))
        return Rhs(atoms)

    def _sequence(self, node: ast.List | ast.Tuple, depth: int) -> Rhs:
        items: list[Rhs] = []
        own: list[Atom] = []
        star: Rhs | None = None
        complete = True
        for i, elt in enumerate(node.elts):
            if isinstance(elt, ast.Starred):
                part = self.rhs(elt.value, depth + 1)
                if i == len(node.elts) - 1 and complete:
                    star = part
                else:
                    complete = False
                own += part.atoms
            elif not complete:
                own += self.reader.expr(elt)
            else:
                items.append(self.rhs(elt, depth + 1))
        atoms = [a for it in items for a in it.atoms] + own
        return Rhs(atoms, items=items, star=star, complete=complete, own=own)

    def _mapping(self, node: ast.Dict, depth: int) -> Rhs:
        entries: list[tuple[str, Rhs]] = []
        own: list[Atom] = []
        whole = False  # a key known neither now nor at run time: the dict is one value
        for i, (key_node, value) in enumerate(zip(node.keys, node.values, strict=True)):
            if key_node is None:  # {**other}
                own += self.reader.expr(value)
                continue
            component = literal_key(key_node)
            if component is None:
                own += self.reader.expr(key_node)
                slot = self.dict_key_slot(node, i)
                if slot is None:
                    whole = True
                else:
                    component = paths.slot(slot)
            part = self.rhs(value, depth + 1)
            entries.append((component or "", part))
        atoms = own + [a for _, part in entries for a in part.atoms]
        if whole:
            return Rhs(atoms)
        return Rhs(atoms, entries=entries, own=own)

    def dict_key_slot(self, node: ast.Dict, index: int) -> int | None:
        return None

    def children(self, unit: Unit, path: paths.PathT, rhs: Rhs) -> None:
        """Items of a literal bound to `path`, as symbols of their own."""
        parts: list[tuple[str, Rhs]] = []
        if rhs.items is not None:
            parts = [(c, it) for i, it in enumerate(rhs.items) if (c := paths.key(i)) is not None]
        elif rhs.entries is not None:
            parts = list(rhs.entries)
        for component, part in parts:
            child = (*path, component)
            unit.writes.append(SWrite(("g", child, True), "bind", list(part.atoms)))
            self.children(unit, child, part)
