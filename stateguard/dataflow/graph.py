"""The dataflow graph: a version for every symbol, and the input versions each value consumed.

Symbols are paths (`paths.py`): variables, their attributes and their items with literal keys. A
version is `(tick, cell)`: tick counts executed statement units across the whole session, so two
statements of one cell have different versions. Each symbol keeps
- `own`: when the path itself was last rebound or changed in place (`df = ...`, `df.dropna(inplace=True)`);
- `sub`: the newest change anywhere below it as well (`df['a'] = ...` bumps `df`'s `sub` only);
- `deps`: for each input it was computed from, the version it consumed and the cell it did so in.

Reading a path sees the `sub` of that path (the whole value) plus the `own` of its parents, so
`y = x + lst[0]` is untouched by `lst[1] = 10` or `lst.append(3)` but not by `lst = [...]`. A
shallow read (a call's callee) sees only `own` versions.

A value is stale when one of its inputs (directly, or transitively through inputs that are
themselves unchanged) now has a different version than the one it consumed, and that change was
made in a later cell than the one that consumed it. Changes made later in the same cell do not
count, as in ipyflow: the cell is the unit a user reruns.

    g = DataflowGraph(); g.record(1, reads={"orders"}, writes={"revenue"})
    g.record(2, reads={"revenue"}, writes={"margin"}); g.record(3, reads=set(), writes={"revenue"})
    g.stale() == {"margin": ["revenue"]}
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from stateguard.dataflow.facts import CellFacts, Ref, UnitFacts, Write
from stateguard.dataflow.paths import PathT, ancestors, fmt, under

Version = tuple[int, int]  # (tick, cell)
DepKey = tuple[PathT, bool]  # (input path, deep)


@dataclass
class _Sym:
    own: Version
    sub: Version
    deps: dict[DepKey, tuple[Version, int]] = field(default_factory=dict)  # -> (consumed, in cell)


class DataflowGraph:
    """Symbol versions by statement, with the input versions each write consumed."""

    def __init__(self) -> None:
        self._syms: dict[PathT, _Sym] = {}
        self._kids: dict[PathT, set[PathT]] = {}
        self._tick = 0
        self._history: list[tuple[int, list[str], list[str]]] = []

    # --- recording ------------------------------------------------------------------------------
    def apply(self, cell_id: int, facts: CellFacts) -> dict[str, list[str]]:
        """Record a cell's units in order; returns its stale reads: variable -> inputs that changed."""
        stale: dict[str, set[str]] = {}
        unchanged = set(facts.unchanged)
        for unit in facts.units:
            for ref in unit.reads:
                if self._bound_in(ref.path, cell_id):
                    continue  # computed earlier in this cell: a stale input it used was reported there
                reasons = self.reasons(ref.path, ref.deep)
                if reasons:
                    stale.setdefault(ref.path[0], set()).update(reasons)
            if unit.complete:
                self._apply_unit(cell_id, unit, unchanged)
        if facts.units:
            self._history.append((cell_id, facts.roots_read(), facts.roots_written()))
        return {name: sorted(reasons) for name, reasons in sorted(stale.items())}

    def record(self, cell_id: int, *, reads: Iterable[str], writes: Iterable[str]) -> None:
        """A whole cell as one statement: each written name depends on every name read.

        A name both read and written (`df = df.dropna()`, `lst.append(x)`) keeps its earlier inputs.
        """
        read_set, write_set = set(reads), set(writes)
        refs = tuple(Ref(path=(r,)) for r in sorted(read_set))
        unit = UnitFacts(
            unit=0,
            reads=refs,
            writes=tuple(
                Write(path=(w,), deps=tuple(r for r in refs if r.path != (w,)), keep=w in read_set)
                for w in sorted(write_set)
            ),
        )
        self.apply(cell_id, CellFacts(units=(unit,)))

    def _apply_unit(self, cell: int, unit: UnitFacts, unchanged: set[str]) -> None:
        self._tick += 1
        now: Version = (self._tick, cell)
        consumed = [{(d.path, d.deep): self._eff(d.path, d.deep) for d in w.deps} for w in unit.writes]
        written: list[PathT] = []
        for w, deps in zip(unit.writes, consumed, strict=True):
            fresh = {k: (v or (0, 0), cell) for k, v in deps.items() if k[0] != w.path}
            self._write(w, now, fresh, w.path[0] in unchanged)
            written.append(w.path)
            if w.aliases:
                self._refresh(w.path[:1], lambda p, roots=set(w.aliases): p[0] in roots, cell)
        # A statement that rewrites x while reading y (which was computed from x) keeps y fresh:
        # `x = x[inds]` does not make `inds` stale (ipyflow's rule for right-hand sides).
        for ref in unit.reads:
            if ref.path in self._syms and written:
                self._refresh(
                    ref.path, lambda p: any(under(p, w) or under(w, p) for w in written), cell, deep=False
                )

    def _bound_in(self, path: PathT, cell: int) -> bool:
        """Whether the value a read of `path` sees was bound by this cell (not changed in place)."""
        for p in [path, *reversed(ancestors(path))]:
            sym = self._syms.get(p)
            if sym is not None:
                return sym.own[1] == cell
        return False

    def _write(
        self, w: Write, now: Version, deps: dict[DepKey, tuple[Version, int]], keep_version: bool
    ) -> None:
        path, old = w.path, self._syms.get(w.path)
        if w.kind == "delete":
            if not keep_version:
                self._drop(path)
                self._bump_parents(path, now)
            return
        if old is None:
            version = now if not keep_version else (0, 0)
            self._add(path, _Sym(own=version, sub=version, deps=dict(deps)))
            if not keep_version:
                self._bump_parents(path, now)
            return
        inherited = old.deps if (w.keep or w.kind != "bind") else {}
        old.deps = {**inherited, **deps}
        if keep_version:
            return
        if w.kind == "bind":
            for kid in list(self._kids.get(path, ())):
                self._drop(kid)
            old.own = old.sub = now
        elif w.kind == "mutate":
            old.own = old.sub = now
        else:  # grow: existing items unchanged, the whole value is new
            old.sub = now
        self._bump_parents(path, now)

    def _refresh(self, path: PathT, which, cell: int, deep: bool = True) -> None:  # type: ignore[no-untyped-def]
        targets = [p for p in self._syms if under(p, path)] if deep else [path]
        for p in targets:
            sym = self._syms[p]
            for (dep, dd), _ in list(sym.deps.items()):
                if which(dep):
                    current = self._eff(dep, dd)
                    if current is not None:
                        sym.deps[(dep, dd)] = (current, cell)

    def _add(self, path: PathT, sym: _Sym) -> None:
        self._syms[path] = sym
        if len(path) > 1:
            self._kids.setdefault(path[:-1], set()).add(path)

    def _drop(self, path: PathT) -> None:
        for kid in list(self._kids.pop(path, ())):
            self._drop(kid)
        self._syms.pop(path, None)
        if len(path) > 1 and path[:-1] in self._kids:
            self._kids[path[:-1]].discard(path)

    def _bump_parents(self, path: PathT, now: Version) -> None:
        for parent in ancestors(path):
            sym = self._syms.get(parent)
            if sym is not None and sym.sub < now:
                sym.sub = now

    # --- queries --------------------------------------------------------------------------------
    def _eff(self, path: PathT, deep: bool) -> Version | None:
        """The version a read of `path` sees now (None: never written, so not tracked)."""
        best: Version | None = None
        for parent in ancestors(path):
            sym = self._syms.get(parent)
            if sym is not None and (best is None or sym.own > best):
                best = sym.own
        sym = self._syms.get(path)
        if sym is not None:
            mine = sym.sub if deep else sym.own
            if best is None or mine > best:
                best = mine
        return best

    def _holders(self, path: PathT, deep: bool) -> list[PathT]:
        """Symbols whose inputs a read of `path` depends on: the path itself and (deep) everything
        below it; for a path never written on its own (`df.a`), its nearest written parent."""
        if path not in self._syms:
            known = [p for p in ancestors(path) if p in self._syms]
            return known[-1:]
        out = [path]
        if deep:
            stack = list(self._kids.get(path, ()))
            while stack:
                kid = stack.pop()
                out.append(kid)
                stack.extend(self._kids.get(kid, ()))
        return out

    def reasons(self, path: PathT, deep: bool = True) -> list[str]:
        """Inputs (direct or transitive) of a read of `path` that changed in a later cell than the one
        that consumed them."""
        out: set[str] = set()
        seen: set[DepKey] = set()
        stack: list[DepKey] = [(tuple(path), deep)]
        while stack:
            key = stack.pop()
            if key in seen:
                continue
            seen.add(key)
            for holder in self._holders(*key):
                for dep, (used, in_cell) in self._syms[holder].deps.items():
                    current = self._eff(*dep)
                    if current is None:
                        continue
                    if current != used and current[1] > in_cell:
                        out.add(fmt(dep[0]))
                    else:
                        stack.append(dep)
        return sorted(out)

    def stale_reasons(self, name: str) -> list[str]:
        return self.reasons((name,))

    def is_stale(self, name: str) -> bool:
        return bool(self.stale_reasons(name))

    def stale(self) -> dict[str, list[str]]:
        """Every stale variable with the changed inputs that make it stale."""
        out = {}
        for path in self._syms:
            if len(path) == 1:
                reasons = self.reasons(path)
                if reasons:
                    out[path[0]] = reasons
        return out

    def version(self, name: str) -> int | None:
        """The cell that last rebound or changed `name` (None when not tracked)."""
        sym = self._syms.get((name,))
        return None if sym is None else sym.own[1]

    def inputs(self, name: str) -> dict[str, int]:
        """Direct inputs of `name`: input -> the cell of the version it consumed."""
        sym = self._syms.get((name,))
        return {} if sym is None else {fmt(p): used[1] for (p, _), (used, _) in sym.deps.items()}

    def forget(self, names: Iterable[str]) -> None:
        """Variables deleted from the workspace (heavy repair) leave the graph."""
        for name in names:
            self._drop((name,))

    def derived_from(self, name: str) -> list[str]:
        """Variables whose recorded inputs include `name`, transitively."""
        out: set[str] = set()
        frontier = {name}
        while frontier:
            nxt = {
                p[0]
                for p, s in self._syms.items()
                if p[0] not in out and any(dep[0][0] in frontier for dep in s.deps)
            }
            out |= nxt
            frontier = nxt
        return sorted(out - {name})

    def history(self) -> list[tuple[int, list[str], list[str]]]:
        return list(self._history)
