"""Concrete evidence for the `rules` manager's findings: is a value wrong *now*, and was it meant?

A dataflow "stale read" is a pattern, not evidence: the input that was redefined may have been
rebound to the same content (a reload, a rollback to the original definition), or changed in a
part the read value never used (a new column of a frame). So before the manager acts on
staleness it asks two questions:

* `replay_differs`: re-run, in an isolated probe of the workspace, the statements that produced
  the value (and the stale intermediates it was derived from), on the inputs as they are now. If
  the value comes out the same, nothing is wrong with it; if it comes out different, that is the
  evidence. A replay that cannot run gives no evidence (None).
* `intended_turns`: does the question ask for an earlier version on purpose ("compare with the
  counts of turn 4", "the value from before the update")? Reading a superseded value is then the
  point of the turn, not a mistake.

    differs = replay_differs(workspace, steps, "wet_profile", before=12)   # True / False / None
    turns, any_earlier = intended_turns("Compare with the counts of turn 4 ...")   # ({4}, False)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.workers.faults import scratch_name  # rebinding a scratch name revises nothing

__all__ = ["intended_turns", "producing_statements", "replay_code", "replay_differs", "scratch_name"]

_MARK = "__sg_replay__"
_SQL_CALL = re.compile(r"\.(execute|executemany|sql|query)\(")
_TURN_REF = re.compile(r"\b(?:turn|task)\s+(\d+)\b", re.IGNORECASE)
_REDO = re.compile(
    r"\b(current|currently|now|redo|recompute|recount|again|updated|new definition)\b", re.IGNORECASE
)
_EARLIER = re.compile(
    r"\b(before the (update|change|revision|redefinition|exclusion)|(original|old|previous|earlier|first|initial|"
    r"pre-update) (definition|version|value|values|figures?|counts?|table|scope))\b",
    re.IGNORECASE,
)
_COMPARE = re.compile(
    r"\b(compare|compared|comparison|versus|vs|difference|differ|change[ds]?|removed?|fewer|"
    r"more than before|higher|lower)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.;:?!()]|,|\band\b", re.IGNORECASE)


def intended_turns(question: str) -> tuple[set[int], bool]:
    """(turns whose values the question asks for as they were, whether it asks for an earlier
    version of anything). A clause naming a turn counts unless it asks to redo it now ("redo the
    comparison of turn 7 under the current definition"); an earlier-version phrase counts when the
    question also compares."""
    turns: set[int] = set()
    for clause in _CLAUSE.split(question):
        refs = {int(n) for n in _TURN_REF.findall(clause)}
        if refs and not _REDO.search(clause):
            turns |= refs
    return turns, bool(_EARLIER.search(question) and _COMPARE.search(question))


def producing_statements(
    steps: Mapping[int, WorkerStep], name: str, before: int
) -> tuple[int, list[str]] | None:
    """(step index of the last rebinding, the statements that made `name` what it is): the latest
    statement before step `before` that bound it from scratch, and every later statement that
    changed it in place (`df["c"] = ...`); None when no recorded step bound it."""
    found: list[tuple[int, str]] = []
    for index in sorted(i for i in steps if i < before):
        step = steps[index]
        if not (step.success and step.error is None) or name not in (step.meta.get("writes") or []):
            continue
        try:
            tree = ast.parse(step.action)
        except SyntaxError:
            return None
        for stmt in tree.body:
            text = ast.get_source_segment(step.action, stmt) or ast.unparse(stmt)
            flow = cell_dataflow(text)
            if name not in flow.writes:
                continue
            if name not in flow.inplace and name not in flow.reads:
                found = []  # bound from scratch: what came before no longer matters
            found.append((index, text))
    if not found:
        return None
    return found[0][0], [text for _, text in found]


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


def replay_differs(
    workspace: object,
    steps: Mapping[int, WorkerStep],
    name: str,
    before: int,
    stale_inputs: Mapping[str, list[str]] | None = None,
) -> bool | None:
    """Would `name` come out different if recomputed from today's inputs? True / False, or None when
    the replay cannot tell (no recorded producer, the probe failed or printed nothing)."""
    chain = [name] + [n for n in (stale_inputs or {}) if n != name]
    plan: list[tuple[int, list[str]]] = []
    for var in chain:
        produced = producing_statements(steps, var, before)
        if produced is None:
            if var == name:
                return None
            continue
        if produced not in plan:
            plan.append(produced)
    statements = [s for _, stmts in sorted(plan) for s in stmts]
    run_probe = getattr(workspace, "run_probe", None)
    if run_probe is None or not statements:
        return None
    if getattr(workspace, "probes_share_resources", False) and any(_SQL_CALL.search(s) for s in statements):
        return None  # replaying SQL there would write into the live database
    try:
        probe = run_probe(replay_code(name, statements))
    except Exception:  # a probe that cannot start is no evidence
        return None
    if not probe.ok:
        return None
    for line in reversed(probe.stdout.splitlines()):
        if line.startswith(_MARK):
            verdict = line[len(_MARK) :].strip()
            return {"True": False, "False": True}.get(verdict)
    return None
