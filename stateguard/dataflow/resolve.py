"""From what a cell's run recorded to `CellFacts`: run-time keys, function effects, objects, aliases.

For each recorded run of a statement unit (`occurrence.Occurrence`):
- its static reads and writes (`units.Unit`) get their run-time subscript keys (`lst[i]` read
  with i = 0..4 is `lst[0]`..`lst[4]`; an unknown key reads the whole `lst`);
- the functions that ran during it add what they read from globals and closures (at call time,
  through every nested call), what they wrote (`global x`, `nonlocal x`, `self.y = v`,
  `frame['c'] = v`), and what their return values were computed from, which flows into the
  statement's targets. Inside a function, locals are followed statement by statement, and
  parameters stand for everything the calling statement read;
- an attribute read resolves as Python does: a DataFrame attribute that is a column is that
  column (`df.b` is `df['b']`), and an instance attribute the instance does not hold itself is
  its class's (`foo.shared` is `Foo.shared`);
- a change in place reaches every variable bound to the same object (`b = a; a[0] = 8` changes
  `b[0]` too, and `b` stays in step with `a`).
After the units: variables handed to calls whose fingerprint changed (an opaque call changed
them in place), and the written variables whose new value is content-equal to the old one.
"""

from __future__ import annotations

from types import FunctionType, ModuleType
from typing import Any

from stateguard.dataflow import paths
from stateguard.dataflow.change import equal_content, fingerprint, immutable
from stateguard.dataflow.facts import CellFacts, Ref, UnitFacts, Write
from stateguard.dataflow.occurrence import Occurrence
from stateguard.dataflow.reader import PANDAS_MUTATORS, Atom
from stateguard.dataflow.units import CellPlan, FuncInfo, Registry
from stateguard.dataflow.walker import SWrite

MAX_PATHS = 32


def _mutates(receiver: Any, method: str) -> bool:
    """Whether `receiver.method(...)` changes the receiver: pandas objects change only through a few
    methods (`df.add(1)` returns a new frame); anything else is assumed to, by the method's name."""
    if type(receiver).__module__.startswith("pandas"):
        return method in PANDAS_MUTATORS
    return True


class Resolver:
    def __init__(
        self,
        plan: CellPlan,
        namespace: dict[str, Any],
        registry: Registry,
        before: dict[str, Any],
        prints: dict[str, tuple[str, bool]],
        code_digests: dict[Any, str],
        check_values: bool = True,
    ):
        self.plan, self.ns, self.registry = plan, namespace, registry
        self.check_values = check_values
        self.before, self.prints, self.code_digests = before, prints, code_digests
        self._by_id: dict[int, list[str]] | None = None
        self._classes: dict[int, str] | None = None

    # --- the cell -------------------------------------------------------------------------------
    def facts(self, trace: list[Occurrence]) -> CellFacts:
        units = [self.unit(occ) for occ in trace]
        self._opaque_changes(trace, units)
        self._register_functions(trace)
        done = [w for u in units if u["complete"] for w in u["writes"]]
        in_place = {w.path[0] for w in done if w.kind != "bind"}
        unchanged = sorted(r for r in {w.path[0] for w in done} if self._unchanged(r, r in in_place))
        return CellFacts(
            units=tuple(
                UnitFacts(
                    unit=u["unit"],
                    line=u["line"],
                    reads=tuple(u["reads"]),
                    writes=tuple(u["writes"]),
                    complete=u["complete"],
                )
                for u in units
            ),
            unchanged=tuple(unchanged),
        )

    def unit(self, occ: Occurrence) -> dict[str, Any]:
        unit = self.plan.units[occ.uid]
        reads = self.refs(unit.reads, occ)
        extra, returned, items, fwrites = self.functions(occ, reads)
        writes: list[Write] = []
        for w in unit.writes:
            flows = returned
            if w.ret_index is not None:  # item i of a call's result: item i of what each function returned
                flows = [
                    r
                    for whole, parts in items
                    for r in (parts[w.ret_index] if parts and w.ret_index < len(parts) else whole)
                ]
            deps = self.refs(w.deps, occ) + flows
            writes += self.write(w, tuple(dict.fromkeys(deps)), occ)
        writes += fwrites
        return {
            "unit": occ.uid,
            "line": unit.line,
            "reads": list(dict.fromkeys(reads + extra)),
            "writes": writes,
            "complete": occ.done,
        }

    # --- atoms to refs --------------------------------------------------------------------------
    def paths_of(self, path: paths.PathT, occ: Occurrence) -> list[tuple[paths.PathT, bool]]:
        """Concrete paths for a path with run-time key slots; True marks a path cut at an unknown key."""
        outs: list[paths.PathT] = [()]
        for component in path:
            slot = paths.slot_index(component)
            if slot is None:
                outs = [(*p, component) for p in outs]
                continue
            keys = occ.keys.get(slot)
            if not keys:
                return [(self.canon(p), True) for p in outs]
            outs = [(*p, k) for p in outs for k in keys][:MAX_PATHS]
        return [(self.canon(p), False) for p in outs]

    def refs(self, atoms: list[Atom], occ: Occurrence) -> list[Ref]:
        out: list[Ref] = []
        for atom in atoms:
            if atom[0] == "g":
                out += [Ref(path=p, deep=atom[2] or cut) for p, cut in self.paths_of(atom[1], occ)]
            elif atom[0] == "c":
                out.append(Ref(path=(atom[1],)))
        return out

    def expand(
        self, atoms: list[Atom], env: dict[str, list[Ref]], args: list[Ref], occ: Occurrence
    ) -> list[Ref]:
        out: list[Ref] = []
        for atom in atoms:
            if atom[0] == "l":
                out += env.get(atom[1], [])
            elif atom[0] == "a":
                out += args
            else:
                out += self.refs([atom], occ)
        return list(dict.fromkeys(out))

    # --- writes ---------------------------------------------------------------------------------
    def write(self, w: SWrite, deps: tuple[Ref, ...], occ: Occurrence) -> list[Write]:
        if w.target is None:  # an object known by identity only
            out: list[Write] = []
            for obj in occ.captures.get(w.capture or -1, []):
                if w.method is not None and not _mutates(obj, w.method):
                    continue
                names = self.names_of(obj)
                for name in names:
                    path = self.canon((name, *w.tail))
                    others = tuple(n for n in names if n != name)
                    mine = tuple(d for d in deps if d.path[0] != name)
                    out.append(Write(path=path, kind=w.kind, deps=mine, keep=w.keep, aliases=others))
            return out
        if w.target[0] == "c":
            return [Write(path=(w.target[1],), kind=w.kind, deps=deps, keep=w.keep)]
        if w.method is not None and not _mutates(self.ns.get(w.target[1][0]), w.method):
            return []
        out = []
        for path, cut in self.paths_of(w.target[1], occ):
            kind = "mutate" if cut and w.kind == "bind" else w.kind
            in_place = len(path) > 1 or kind != "bind" or w.alias_check
            aliases = self._aliases(path[0], w.alias_check) if in_place else []
            out.append(Write(path=path, kind=kind, deps=deps, keep=w.keep or cut, aliases=tuple(aliases)))
            for alias in aliases:  # the same object under another name changed the same way
                rest = tuple(a for a in aliases if a != alias) + (path[0],)
                out.append(Write(path=(alias, *path[1:]), kind=kind, deps=deps, keep=True, aliases=rest))
        return out

    def _aliases(self, root: str, rebinding_possible: bool) -> list[str]:
        if root not in self.ns:
            return []
        obj = self.ns[root]
        if immutable(obj) or isinstance(obj, ModuleType | type | FunctionType):
            return []
        if rebinding_possible and self.before.get(root) is not obj:  # `x += 1` made a new object
            return []
        return [n for n in self.names_of(obj) if n != root]

    # --- functions that ran during a statement ----------------------------------------------------
    def functions(
        self, occ: Occurrence, args: list[Ref]
    ) -> tuple[list[Ref], list[Ref], list[Any], list[Write]]:
        """(global reads, what the return values came from, the same per returned item, writes) of the
        functions that ran during one statement run."""
        groups: dict[int, tuple[FuncInfo, set[int]]] = {}
        for block in occ.blocks:
            info = self.registry.blocks.get(block)
            if info is not None:
                groups.setdefault(id(info), (info, set()))[1].add(block)
        reads: list[Ref] = []
        returned: list[Ref] = []
        items: list[tuple[list[Ref], list[list[Ref]] | None]] = []
        writes: list[Write] = []
        for info, blocks in groups.values():
            env: dict[str, list[Ref]] = {p: list(args) for p in info.params}
            mine: list[Ref] = []
            parts: list[list[Ref]] | None = None
            shaped = True
            for param in info.cell_params:
                writes.append(Write(path=(f"{info.key}.<locals>.{param}",), deps=tuple(args)))
            for st in info.stmts:
                if st.block not in blocks:
                    continue
                reads += self.refs([a for a in st.reads if a[0] in "gc"], occ)
                for name, atoms in st.locals:
                    env[name] = self.expand(atoms, env, args, occ)
                for w in st.writes:
                    writes += self.write(w, tuple(self.expand(w.deps, env, args, occ)), occ)
                mine += self.expand(st.returns, env, args, occ)
                if st.returns and st.return_items is None:
                    shaped = False
                elif st.return_items is not None:
                    now = [self.expand(item, env, args, occ) for item in st.return_items]
                    parts = (
                        now
                        if parts is None
                        else (
                            [a + b for a, b in zip(parts, now, strict=True)]
                            if len(parts) == len(now)
                            else None
                        )
                    )
                    shaped = shaped and parts is not None
            returned += mine
            items.append((mine, parts if shaped else None))
        return list(dict.fromkeys(reads)), list(dict.fromkeys(returned)), items, writes

    def _register_functions(self, trace: list[Occurrence]) -> None:
        for occ in trace:
            unit = self.plan.units[occ.uid]
            if unit.digest is not None and occ.done and unit.writes and unit.writes[0].target is not None:
                fn = self.ns.get(unit.writes[0].target[1][0])
                if isinstance(fn, FunctionType):
                    self.code_digests[fn.__code__] = unit.digest

    # --- values ---------------------------------------------------------------------------------
    def names_of(self, obj: Any) -> list[str]:
        if self._by_id is None:
            self._by_id = {}
            for name, value in self.ns.items():
                if not name.startswith("__"):
                    self._by_id.setdefault(id(value), []).append(name)
        return self._by_id.get(id(obj), [])

    def canon(self, path: paths.PathT) -> paths.PathT:
        """`df.b` -> `df['b']` for a column; `foo.shared` -> `Foo.shared` for a class attribute."""
        if len(path) < 2 or not path[1].startswith(".") or path[0] not in self.ns:
            return path
        obj, attr = self.ns[path[0]], path[1][1:]
        if isinstance(obj, ModuleType | type | FunctionType) or immutable(obj):
            return path
        try:
            columns = getattr(type(obj), "columns", None)
            if columns is not None and type(obj).__name__ == "DataFrame" and attr in obj.columns:
                component = paths.key(attr)
                return (path[0], component, *path[2:]) if component else path
            own = object.__getattribute__(obj, "__dict__")
        except Exception:  # no instance dict (slots, C types)
            return path
        if isinstance(own, dict) and attr in own:
            return path
        for cls in type(obj).__mro__:
            if attr in cls.__dict__:
                name = self._class_name(cls)
                return (name, *path[1:]) if name else path
        return path

    def _class_name(self, cls: type) -> str | None:
        if self._classes is None:
            self._classes = {
                id(v): k for k, v in self.ns.items() if isinstance(v, type) and not k.startswith("__")
            }
        return self._classes.get(id(cls))

    def _opaque_changes(self, trace: list[Occurrence], units: list[dict[str, Any]]) -> None:
        """Variables handed to a call that changed although no statement wrote them."""
        written = {w.path[0] for u in units for w in u["writes"]}
        for name, (before, _) in self.prints.items():
            if name in written or not before or self.ns.get(name, self) is not self.before.get(name):
                continue
            if fingerprint(self.ns[name])[0] == before:
                continue
            for occ, u in zip(reversed(trace), reversed(units), strict=True):
                unit = self.plan.units[occ.uid]
                if u["complete"] and (name in unit.candidates or name in unit.readers):
                    deps = tuple(r for r in u["reads"] if r.path[0] != name)
                    aliases = tuple(self._aliases(name, False))
                    u["writes"].append(
                        Write(path=(name,), kind="mutate", deps=deps, keep=True, aliases=aliases)
                    )
                    u["writes"] += [
                        Write(path=(a,), kind="mutate", deps=deps, keep=True, aliases=(name,))
                        for a in aliases
                    ]
                    break

    def _unchanged(self, root: str, changed_in_place: bool) -> bool:
        if root not in self.before or root not in self.ns:
            return False
        old, new = self.before[root], self.ns[root]
        if old is new:
            if isinstance(new, ModuleType):  # `np.random.seed(0)` changes state no fingerprint sees
                return not changed_in_place
            if immutable(new):
                return True
            if not self.check_values:
                return False
            saved = self.prints.get(root)
            return saved is not None and saved[1] and saved[0] != "" and fingerprint(new) == saved
        return self.check_values and equal_content(old, new, self.code_digests)
