"""Recompute a value on today's inputs, in an isolated probe: the fact behind a staleness finding.

A dataflow "stale read" is a pattern: an input of the value changed after it was computed. Whether
the value is *wrong now* is a fact the manager establishes by recomputing it. The planner walks
the recorded worker steps statement by statement and rebuilds which statements defined each name
at each point (a from-scratch binding starts a definition, an in-place change or a self-reading
rebinding extends it). From the statements that made the value as it was read, it follows every
input back:

* an input whose definition is still the one the value consumed, and whose own inputs did not
  change, is used as it is now;
* an input revised since (changed in place, or rebound across turns: the user's redefinition)
  is used as it is now -- that is the point of recomputing on the current inputs;
* an input that depends on something revised is recomputed too (its statements join the plan);
* a scratch name (`_rows`, `result`: rebound by every turn for unrelated things) is recomputed
  from the statement that produced the version the value consumed, never taken as it is now.

The plan runs in the order the statements first ran (a topological order of their dependencies
that keeps the original order among independent ones), in a probe that cannot touch the live
workspace, and prints whether the value came out the same. A frame that only gained columns
since it was made comes out the same: the turn that read it could not have used them.

    plan = replay_plan(steps, "wet_profile", before=12)   # statements + the revised inputs
    replay_differs(workspace, steps, "wet_profile", before=12)   # True / False / None
    answer_differs(workspace, span, "wet_profile", 12, plan)     # does the reported answer change?

A value that would change is a finding only when what the turn reports would change with it:
`answer_differs` recomputes the value, re-runs the turn's statements that depend on it, and
compares the JSON they print with the reported one.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.answers import last_json
from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.workers.faults import scratch_name

__all__ = ["ReplayPlan", "answer_differs", "forward_slice", "replay_code", "replay_differs", "replay_plan"]

_MARK = "__sg_replay__"
_ANSWER_MARK = "__sg_answer_after_replay__"
_SQL_CALL = re.compile(r"\.(execute|executemany|sql|query)\(")

Sid = tuple[int, int]  # (step index, statement position in the step's cell)


class ReplayPlan(BaseModel):
    """What recomputing one value takes: the statements in the order they first ran, and the
    revised inputs they read as they are now."""

    model_config = ConfigDict(frozen=True)
    statements: list[str]
    revised: list[str] = Field(description="Inputs redefined since the value was made, read as they are now.")
    steps: list[int] = Field(description="Worker steps the statements come from.")


class _Stmt(BaseModel):
    sid: Sid
    text: str
    reads: list[str]
    writes: list[str]
    consumed: dict[str, tuple[Sid, ...]]  # name -> statements that defined it when this one ran


Defs = dict[str, tuple[Sid, ...]]


def _log(steps: Mapping[int, WorkerStep]) -> tuple[dict[Sid, _Stmt], Defs, dict[int, Defs]]:
    """Every successful statement with the definitions it consumed, the definitions as they are
    after the last step, and the definitions as they were before each step."""
    stmts: dict[Sid, _Stmt] = {}
    defs: Defs = {}
    before: dict[int, Defs] = {}
    for index in sorted(steps):
        before[index] = dict(defs)
        step = steps[index]
        if not (step.success and step.error is None):
            continue
        try:
            tree = ast.parse(step.action)
        except SyntaxError:
            continue
        for pos, node in enumerate(tree.body):
            text = ast.get_source_segment(step.action, node) or ast.unparse(node)
            flow = cell_dataflow(text)
            sid = (index, pos)
            consumed = {n: defs[n] for n in flow.reads if n in defs}
            stmts[sid] = _Stmt(
                sid=sid, text=text, reads=list(flow.reads), writes=list(flow.writes), consumed=consumed
            )
            for name in flow.writes:
                extends = name in flow.inplace or name in flow.reads
                defs[name] = (*defs.get(name, ()), sid) if extends else (sid,)
    return stmts, defs, before


def replay_plan(steps: Mapping[int, WorkerStep], name: str, before: int) -> ReplayPlan | None:
    """The statements that recompute `name`, as it was read at step `before`, on today's inputs;
    None when no recorded statement made it."""
    stmts, now, at = _log(steps)
    start = at.get(before)
    if start is None:  # `before` is past the recorded steps: everything recorded came before it
        start = now
    target = start.get(name)
    if not target:
        return None
    need: set[Sid] = set()
    revised: set[str] = set()
    memo: dict[tuple[str, tuple[Sid, ...]], bool] = {}

    def changed(dep: str, consumed: tuple[Sid, ...]) -> bool:
        """Would this input come out different today than the version consumed?"""
        key = (dep, consumed)
        if key not in memo:
            memo[key] = False  # cycles (a name defined from itself) end here
            current = now.get(dep, ())
            memo[key] = current != consumed or any(
                changed(d, c) for sid in consumed for d, c in stmts[sid].consumed.items() if d != dep
            )
        return memo[key]

    def include(chain: tuple[Sid, ...]) -> None:
        for sid in chain:
            if sid in need:
                continue
            need.add(sid)
            for dep, consumed in stmts[sid].consumed.items():
                if set(consumed) <= set(chain) or not changed(dep, consumed):
                    continue  # the chain itself, or a version that is what it would read today
                if scratch_name(dep) or now.get(dep, ()) == consumed:
                    include(consumed)  # recompute it: a scratch version, or one whose inputs changed
                else:
                    revised.add(dep)  # revised since (in place or rebound): read as it is now

    include(target)
    ordered = sorted(need)
    return ReplayPlan(
        statements=[stmts[s].text for s in ordered],
        revised=sorted(revised),
        steps=sorted({s[0] for s in ordered}),
    )


_COMPARE_CODE = """
def _sg_value(name):
    if name in globals():
        return globals()[name]
    import duckdb as _sg_duckdb
    for _sg_obj in list(globals().values()):
        if isinstance(_sg_obj, _sg_duckdb.DuckDBPyConnection):
            return _sg_obj.table(name).df()
    raise KeyError(name)

def _sg_canon(value):
    import pandas as _sg_pd
    if isinstance(value, _sg_pd.DataFrame):
        try:
            return value.sort_values(list(value.columns)).reset_index(drop=True)
        except TypeError:
            return value.reset_index(drop=True)
    return value

def _sg_same(a, b):
    import numpy as _sg_np
    import pandas as _sg_pd
    if isinstance(a, _sg_pd.DataFrame) and isinstance(b, _sg_pd.DataFrame) and set(a.columns) < set(b.columns):
        b = b[list(a.columns)]  # columns added since: the value as it was read could not have used them
    a, b = _sg_canon(a), _sg_canon(b)
    if isinstance(a, (_sg_pd.DataFrame, _sg_pd.Series)):
        return bool(a.equals(b))
    if isinstance(a, _sg_np.ndarray):
        return bool(_sg_np.array_equal(a, b, equal_nan=True))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return bool(a == b)
"""


def replay_code(target: str, statements: list[str]) -> str:
    """A probe program: keep the current value of `target`, re-run `statements`, print whether the
    value came out the same."""
    body = "\n".join(statements)
    return (
        f"{_COMPARE_CODE}\nimport copy as _sg_copy\n_sg_before = _sg_copy.deepcopy(_sg_value({target!r}))\n"
        f"{body}\nprint({_MARK!r}, _sg_same(_sg_before, _sg_value({target!r})))\n"
    )


def forward_slice(span: list[WorkerStep], name: str, start: int) -> list[str]:
    """The statements of the span, from step `start` on, that depend on `name` (directly or through
    what they write): what would run differently if `name` held another value."""
    tainted = {name}
    out: list[str] = []
    for step in sorted(span, key=lambda s: s.index):
        if step.index < start or not (step.success and step.error is None):
            continue
        try:
            tree = ast.parse(step.action)
        except SyntaxError:
            continue
        for node in tree.body:
            text = ast.get_source_segment(step.action, node) or ast.unparse(node)
            flow = cell_dataflow(text)
            if set(flow.reads) & tainted:
                out.append(text)
                tainted |= set(flow.writes)
    return out


def _reported(span: list[WorkerStep]) -> Any:
    for step in sorted(span, key=lambda s: s.index, reverse=True):
        if step.success and step.output:
            answer = last_json(step.output)
            if answer is not None:
                return answer
    return None


def answer_differs(
    workspace: object, span: list[WorkerStep], name: str, start: int, plan: ReplayPlan
) -> bool | None:
    """Would the turn's reported answer change if `name` were recomputed on today's inputs? The
    probe recomputes it (the plan), re-runs the span's statements that depend on it, and compares
    the last JSON they print with the one the turn reported. None when it cannot tell (no JSON
    answer, nothing of the span depends on it, the probe failed)."""
    before = _reported(span)
    downstream = forward_slice(span, name, start)
    run_probe = getattr(workspace, "run_probe", None)
    if before is None or not downstream or run_probe is None:
        return None
    statements = plan.statements + downstream
    if getattr(workspace, "probes_share_resources", False) and any(_SQL_CALL.search(s) for s in statements):
        return None
    body = "\n".join(plan.statements) + f"\nprint({_ANSWER_MARK!r})\n" + "\n".join(downstream)
    try:
        probe = run_probe(body)
    except Exception:
        return None
    if not probe.ok or _ANSWER_MARK not in probe.stdout:
        return None
    after = last_json(probe.stdout.split(_ANSWER_MARK, 1)[1])
    return None if after is None else bool(after != before)


def replay_differs(
    workspace: object, steps: Mapping[int, WorkerStep], name: str, before: int, plan: ReplayPlan | None = None
) -> bool | None:
    """Would `name` come out different if recomputed from today's inputs? True / False, or None when
    the replay cannot tell (no recorded producer, the probe failed or printed nothing)."""
    plan = plan or replay_plan(steps, name, before)
    run_probe = getattr(workspace, "run_probe", None)
    if plan is None or run_probe is None or not plan.statements:
        return None
    if getattr(workspace, "probes_share_resources", False) and any(
        _SQL_CALL.search(s) for s in plan.statements
    ):
        return None  # replaying SQL there would write into the live database
    try:
        probe = run_probe(replay_code(name, plan.statements))
    except Exception:  # a probe that cannot start is no evidence
        return None
    if not probe.ok:
        return None
    for line in reversed(probe.stdout.splitlines()):
        if line.startswith(_MARK):
            verdict = line[len(_MARK) :].strip()
            return {"True": False, "False": True}.get(verdict)
    return None
