"""A cell's analysis is reused when the same text runs again, only while the namespace answers the
analysis's questions alike, and the facts of a reused plan are those a fresh analysis gives."""

from __future__ import annotations

import copy
import math
import types
from typing import Any

from stateguard.dataflow import CellFacts, CellRecorder


def _run(recorder: CellRecorder, code: str, namespace: dict[str, Any]) -> CellFacts:
    recorder.attach(namespace)
    prepared = recorder.start(code, namespace)
    exec(prepared.body, namespace)
    if prepared.last is not None:
        eval(prepared.last, namespace)
    return recorder.finish(False)


def _fresh(code: str, namespace: dict[str, Any]) -> CellFacts:
    """The facts of `code` analyzed from scratch, on a copy of the namespace (taken before the run
    under test, so both start from the same values)."""
    ns = {
        k: v if isinstance(v, types.ModuleType) else copy.deepcopy(v)
        for k, v in namespace.items()
        if not k.startswith("__sg")
    }
    return _run(CellRecorder(), code, ns)


LOOP_CELL = "for i in range(5):\n    t[i % 2] = t.get(i % 2, 0) + v\nw = t[k]\nw"


def test_the_same_text_reuses_its_plan_and_gives_the_same_facts() -> None:
    recorder = CellRecorder()
    ns: dict[str, Any] = {"t": {}, "v": 3, "k": 1}
    _run(recorder, LOOP_CELL, ns)
    ns["t"] = {}
    expected = _fresh(LOOP_CELL, ns)
    again = _run(recorder, LOOP_CELL, ns)
    assert (recorder.plans.hits, recorder.plans.misses) == (1, 1)
    assert again == expected
    assert {r.path for u in again.units for r in u.reads} >= {("t", "[1]"), ("k",), ("v",)}


def test_a_name_newly_bound_in_the_namespace_makes_the_plan_stale() -> None:
    recorder = CellRecorder()
    ns: dict[str, Any] = {"items": [1, 2]}
    before = _run(recorder, "n = len(items)", ns)
    assert "len" not in before.roots_read()  # a builtin, not a variable
    ns["len"] = lambda xs: 0  # now a variable of the workspace: the cell reads it
    expected = _fresh("n = len(items)", ns)
    after = _run(recorder, "n = len(items)", ns)
    assert recorder.plans.hits == 0
    assert "len" in after.roots_read()
    assert after == expected


def test_a_name_rebound_to_a_module_makes_the_plan_stale() -> None:
    recorder = CellRecorder()
    code = "y = m.floor(x)"
    ns: dict[str, Any] = {"m": types.SimpleNamespace(floor=math.floor), "x": 2.5}
    _run(recorder, code, ns)
    ns["m"] = math
    expected = _fresh(code, ns)
    after = _run(recorder, code, ns)
    assert recorder.plans.hits == 0
    assert after == expected


def test_a_cell_that_defines_functions_is_analyzed_every_time() -> None:
    recorder = CellRecorder()
    code = "def f(a):\n    return a + g\nz = f(q)"
    ns: dict[str, Any] = {"g": 1, "q": 2}
    _run(recorder, code, ns)
    blocks = len(recorder.registry.blocks)
    again = _run(recorder, code, ns)
    assert recorder.plans.hits == 0
    assert len(recorder.registry.blocks) > blocks  # the new definition registered its own blocks
    assert {"g", "q"} <= set(again.roots_read())


def test_a_kept_plan_holds_the_compiled_code_not_the_instrumented_ast() -> None:
    recorder = CellRecorder()
    _run(recorder, LOOP_CELL, {"t": {}, "v": 3, "k": 1})
    kept = recorder.plans.get(LOOP_CELL, {"t": {}, "v": 3, "k": 1})
    assert kept is not None and kept.last is not None
    assert kept.plan.body.body == [] and kept.plan.last is None  # the AST went once compiled
    assert kept.plan.units and kept.plan.loops  # what the run and the resolution read stays
