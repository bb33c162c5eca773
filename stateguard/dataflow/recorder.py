"""Run a cell with dataflow recording, where the cell runs (the sandbox kernel or a DictWorkspace).

    recorder = CellRecorder()
    prepared = recorder.start(code, namespace)   # analyze + instrument; raises SyntaxError
    try:
        exec(prepared.body, namespace)
        value = eval(prepared.last, namespace) if prepared.last else None
    finally:
        facts = recorder.finish(failed=...)       # CellFacts, statement by statement

The instrumented cell calls the hook (`namespace["__sgflow__"]`, see `units.py`) as it runs: which
statement units started and finished, which blocks of cell-defined functions ran during each
(at call time, whichever cell defined them), the objects those functions changed, and the keys
of subscripts known only at run time. A loop body is recorded for its first `LOOP_CAP`
iterations; later iterations still count their function blocks and keys towards the last
recorded one. `finish` turns that into `CellFacts` (`facts.py`) with `resolve.py`, adding what
only values can tell: aliases (two names, one object), changes made by opaque calls (a
fingerprint of every variable handed to a call, before and after), and which written variables
ended up content-equal to what they held before.
"""

from __future__ import annotations

import ast
import logging
import sys
from dataclasses import dataclass, replace
from types import CodeType, FunctionType, ModuleType
from typing import Any

from stateguard.dataflow import paths
from stateguard.dataflow.cellflow import cell_dataflow
from stateguard.dataflow.change import fingerprint
from stateguard.dataflow.facts import CellFacts, Ref, UnitFacts, Write
from stateguard.dataflow.markers import COVERAGE, HOOK, LOOPS
from stateguard.dataflow.occurrence import Occurrence
from stateguard.dataflow.plans import CompiledPlan, PlanCache
from stateguard.dataflow.resolve import Resolver
from stateguard.dataflow.units import CellPlan, Registry, analyze_cell, scan_names

logger = logging.getLogger(__name__)
LOOP_CAP = 2  # iterations of a loop body recorded statement by statement
MAX_KEYS = 32  # distinct run-time keys kept per subscript, per statement run
MAX_OBJECTS = 8


class _CellRun:
    def __init__(self, plan: CellPlan, namespace: dict[str, Any], in_try: set[int]):
        self.plan = plan
        self.namespace = namespace
        self.in_try = in_try
        self.loop_counts: dict[int, int] = {}
        self.plain_seen: set[int] = set()  # untraced loop-body blocks that ran
        self.trace: list[Occurrence] = []
        self.counts: dict[int, int] = {}
        self.last_of: dict[int, Occurrence] = {}
        self.cur: Occurrence | None = None
        self.fresh = False  # whether `cur` is the statement running right now (not a capped repeat)


class Hook:
    """The object the instrumented code calls. Inert when no cell is being recorded (probes, setup code).

    `cov` is the `__sgcov__` dict: cell-defined functions store 1 under each block they enter (a
    dict store costs a fraction of a call, and a block id from an older process, restored with its
    function from a checkpoint, is just one more key), harvested into the running statement at the
    next marker. `loops` is `__sgloops__`: a cell-level loop's flag, 1 once its traced iterations
    are done.
    """

    __slots__ = ("run", "cov", "loops")

    def __init__(self) -> None:
        self.run: _CellRun | None = None
        self.cov: dict[int, int] = {}
        self.loops: dict[int, int] = {}

    def harvest(self) -> None:
        run, cov = self.run, self.cov
        if not cov:
            return
        blocks = list(cov)
        cov.clear()
        if run is None:
            return
        plain = run.plan.plain_blocks
        for block in blocks:
            if block in plain:
                run.plain_seen.add(block)
            elif run.cur is not None:
                run.cur.blocks.add(block)

    def u(self, uid: int) -> None:
        run = self.run
        if run is None:
            return
        self.harvest()
        count = run.counts.get(uid, 0) + 1
        run.counts[uid] = count
        if count <= LOOP_CAP:
            occ = Occurrence(uid)
            run.trace.append(occ)
            run.last_of[uid] = occ
            run.cur, run.fresh = occ, True
        else:
            run.cur, run.fresh = run.last_of[uid], False

    def d(self, uid: int) -> None:
        run = self.run
        if run is not None and run.cur is not None and run.cur.uid == uid and run.fresh:
            run.cur.done = True

    def f(self, block: int) -> None:
        self.cov[block] = 1  # a lambda's marker (an expression cannot hold the store)

    def l(self, loop: int) -> None:  # noqa: E743 - the marker names are short on purpose
        run = self.run
        if run is not None:
            count = run.loop_counts.get(loop, 0) + 1
            run.loop_counts[loop] = count
            if count >= LOOP_CAP:
                self.loops[loop] = 1  # the next iterations take the untraced copy

    def o(self, capture: int, obj: Any) -> None:
        run = self.run
        if run is not None and run.cur is not None:
            seen = run.cur.captures.setdefault(capture, [])
            if len(seen) < MAX_OBJECTS and not any(s is obj for s in seen):
                seen.append(obj)

    def t(self, capture: int, obj: Any) -> Any:
        self.o(capture, obj)
        return obj

    def k(self, slot: int, key: Any) -> Any:
        run = self.run
        if run is not None and run.cur is not None:
            keys = run.cur.keys
            known = keys.get(slot, [])
            if known is not None:
                items = key if isinstance(key, list) and len(key) <= MAX_KEYS else [key]
                for item in items:
                    component = paths.key(item)
                    if component is None or len(known) >= MAX_KEYS:
                        known = None
                        break
                    if component not in known:
                        known.append(component)
                keys[slot] = known
        return key

    # The hook travels with cell-defined functions (cloudpickle keeps the globals they use) and with
    # deep copies of the namespace; it must never carry a cell's state along.
    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_inert_hook, ())

    def __deepcopy__(self, memo: dict[int, Any]) -> Hook:
        return self

    def __copy__(self) -> Hook:
        return self


def _inert_hook() -> Hook:
    return Hook()


@dataclass
class PreparedCell:
    body: CodeType
    last: CodeType | None


class CellRecorder:
    """Dataflow recording for one namespace (one per workspace)."""

    def __init__(self) -> None:
        self.registry = Registry()
        self.plans = PlanCache()  # analyses by cell text, reused while the namespace answers alike
        self.hook = Hook()
        self.code_digests: dict[Any, str] = {}
        self.check_values = True  # False: no fingerprints or content equality (benchmarks)
        self._run: _CellRun | None = None
        self._code = ""
        self._before: dict[str, Any] = {}
        self._prints: dict[str, tuple[str, bool]] = {}

    def attach(self, namespace: dict[str, Any]) -> None:
        """Put the hook into a (new or restored) namespace; cell-defined functions call it."""
        namespace[HOOK] = self.hook
        namespace[COVERAGE] = self.hook.cov
        namespace[LOOPS] = self.hook.loops

    def start(self, code: str, namespace: dict[str, Any]) -> PreparedCell:
        """Analyze and instrument `code`; a SyntaxError is the cell's own and propagates."""
        self.hook.run = None
        self._run, self._code = None, code
        compiled = self.plans.get(code, namespace)
        if compiled is None:
            tree = ast.parse(code, "<cell>")  # the user's syntax errors, as plain Python reports them
            names = scan_names(tree)  # before analyze_cell instruments the tree in place
            fresh = names.rebound_first
            try:
                plan = analyze_cell(code, namespace, self.registry, tree, names)
                body = compile(plan.body, "<cell>", "exec")
                last = compile(plan.last, "<cell>", "eval") if plan.last is not None else None
            except Exception:  # a gap in our analysis must not cost the user the cell: run it untraced
                logger.exception("dataflow: cell analysis failed; running the cell untraced")
                tree = ast.parse(code, "<cell>")
                tail = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                last = None if tail is None else compile(ast.Expression(body=tail.value), "<cell>", "eval")  # type: ignore[attr-defined]
                return PreparedCell(compile(tree, "<cell>", "exec"), last)
            # The instrumented AST was only needed to compile; a kept plan holds the code alone
            # (the AST was three quarters of a kept plan's memory).
            plan = replace(plan, body=ast.Module(body=[], type_ignores=[]), last=None)
            compiled = CompiledPlan(plan, body, last, fresh)
            self.plans.put(code, compiled)
        plan, body, last, fresh = compiled.plan, compiled.body, compiled.last, compiled.rebound
        self.hook.cov.clear()
        self.hook.loops.clear()
        self.hook.loops.update(dict.fromkeys(plan.loops, 0))
        self.attach(namespace)
        self._before = dict(namespace)
        self._prints = {}
        for name in _watched(plan, namespace) - fresh if self.check_values else ():
            value = namespace.get(name)
            if name in namespace and not isinstance(value, ModuleType | type | FunctionType):
                self._prints[name] = fingerprint(value)
        self._run = _CellRun(plan, namespace, plan.in_try)
        self.hook.run = self._run
        return PreparedCell(body, last)

    def finish(self, failed: bool) -> CellFacts:
        """The facts of the cell started last; call it whether the cell raised or not."""
        self.hook.harvest()
        self.hook.run = None  # from here on, code we trigger (pickling, __eq__) is not the cell's
        run, self._run = self._run, None
        if run is None:
            return (
                whole_cell_facts(self._code, complete=not failed) if self._code else CellFacts(traced=False)
            )
        _add_untraced(run)
        for occ in run.trace:
            occ.done = occ.done or (occ.uid not in run.in_try)
        if failed and run.cur is not None and run.fresh and run.cur.uid not in run.in_try:
            run.cur.done = False
        resolver = Resolver(
            run.plan,
            run.namespace,
            self.registry,
            self._before,
            self._prints,
            self.code_digests,
            check_values=self.check_values,
        )
        try:
            facts = resolver.facts(run.trace)
        except Exception:  # never fail the cell over its dataflow: fall back to the whole-cell view
            logger.exception("dataflow: resolving the cell's run failed; recording it as one statement")
            facts = whole_cell_facts(self._code, complete=not failed)
        self._before, self._prints = {}, {}
        return facts


def whole_cell_facts(code: str, complete: bool = True) -> CellFacts:
    """The cell as one statement from its text alone (every write depends on every read): the view
    used when the statement-level analysis could not be made."""
    flow = cell_dataflow(code)
    if not flow.valid:
        return CellFacts(traced=False)
    reads = tuple(Ref(path=(r,)) for r in flow.reads)
    writes = tuple(
        Write(path=(w,), deps=tuple(r for r in reads if r.path != (w,)), keep=w in flow.reads)
        for w in flow.writes
    )
    return CellFacts(units=(UnitFacts(unit=0, reads=reads, writes=writes, complete=complete),), traced=False)


def _add_untraced(run: _CellRun) -> None:
    """Statements that ran only in untraced loop iterations (a branch taken late) are recorded too,
    once, after the traced ones."""
    for block in sorted(run.plain_seen):
        for uid in run.plan.plain_blocks.get(block, []):
            if uid not in run.counts:
                run.counts[uid] = 1
                run.trace.append(Occurrence(uid, done=True))


def _rebound_first(tree: ast.Module) -> set[str]:
    """Names whose first mention in the cell is a top-level `name = <expr>` whose `<expr>` does not
    mention them: the cell cannot change their old value through the name, so fingerprinting it
    first (a whole frame, for `kept = df[...]; kept['c'] = 1`) is wasted. The before-fingerprint of a
    written name is only read when the name ends up bound to its old object again (through an
    alias); without it that rare case counts as changed, which errs on the safe side."""
    return set(scan_names(tree).rebound_first)  # one pass with what the analysis needs (`units.py`)


def _watched(plan: CellPlan, namespace: dict[str, Any]) -> set[str]:
    """Variables to fingerprint before the cell: handed to calls, or changed in place by it.

    A pandas DataFrame or Series (the exact classes: a subclass may redefine a method) that the cell
    only calls `PANDAS_READERS` methods on (without `inplace=` or `**kwargs`) or hands to
    `READ_BUILTINS` (`len`, `print`, ...), and never assigns to, cannot change by those calls: it is
    not fingerprinted (for a 100k-row frame that was most of the recording's cost). Any other object
    used the same way (a user class with its own `sort_values` or `__len__`) is."""
    names: set[str] = set()
    readers: set[str] = set()
    bound: set[str] = set()
    for unit in plan.units:
        names |= unit.candidates
        readers |= unit.readers
        for w in unit.writes:
            if w.target is not None and w.target[0] == "g":
                bound.add(w.target[1][0])
                if len(w.target[1]) > 1 or w.kind != "bind" or w.alias_check:
                    names.add(w.target[1][0])
    pandas = sys.modules.get("pandas")
    plain = (pandas.DataFrame, pandas.Series) if pandas is not None else ()
    for name in readers - names:
        if name in bound or type(namespace.get(name)) not in plain:
            names.add(name)
    return names
