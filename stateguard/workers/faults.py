"""The scripted worker's mistakes: what a fault is, how θ' is built, and whether it can apply.

Four kinds (paper 3.3's failure classes, mechanized so that a benchmark can declare them):
  stale          after a revision, the turn skips the statements that would recompute a variable
                 the revision made stale (scratch names such as `result` and `_rows` excepted), so
                 it silently reuses the pre-revision value;
  counterfactual the turn runs θ' instead of its reference program θ: `code` (the whole faulty
                 program) or `replace` (edits of θ, each `old` text occurring exactly once);
                 `semantic` says what θ' changes (a flipped comparison, an aggregation swap, ...);
  precision      the turn reports its `result` rounded to `decimals` places;
  exec_error     a typo makes the turn's last block raise, and the worker leaves it.

`check_fault(task, fault)` decides statically whether a fault can take effect at its turn (the
turn exists, θ' differs from θ and parses, there is a `result` to round, something is stale
there) and returns the reason when it cannot: a declared fault that cannot apply is an error
that names it, never silently dropped.

    fault = Fault(kind="counterfactual", turn=6, semantic="aggregation_swap", replace=[(".mean()", ".median()")])
    check_fault(task, fault)          # None, or "turn 6: ... occurs 0 times in the reference code"
"""

from __future__ import annotations

import ast
from functools import lru_cache

from stateguard.artifacts.faults import Fault
from stateguard.artifacts.mistakes import FaultKind, SemanticKind, semantic_kinds
from stateguard.dataflow import DataflowGraph, cell_dataflow
from stateguard.task import Task

__all__ = [
    "Fault",
    "FaultError",
    "FaultKind",
    "SemanticKind",
    "check_fault",
    "check_faults",
    "counterfactual_code",
    "scratch_name",
    "semantic_kinds",
    "split_blocks",
    "static_stale",
]


class FaultError(ValueError):
    """A declared fault cannot take effect; the message names the task, the variant and the fault."""


def scratch_name(name: str) -> bool:
    """Names a turn rebinds as scratch space (`_rows`, `_answer_sql`, the reported `result`): a
    stale fault does not "skip recomputing" them, and they identify no turn's mistake."""
    return name.startswith("_") or name == "result"


def split_blocks(code: str) -> list[str]:
    """Blank-line-separated blocks that each parse on their own (merged with the next when not)."""
    return list(_split_blocks(code))  # a copy: callers own their list


@lru_cache(maxsize=4096)
def _split_blocks(code: str) -> tuple[str, ...]:
    # Memoized: the worker, the fault checks and the loader split the same reference code many times.
    blocks, current = [], ""
    for chunk in code.strip().split("\n\n"):
        current = f"{current}\n\n{chunk}" if current else chunk
        try:
            ast.parse(current)
        except SyntaxError:
            continue
        if current.strip():
            blocks.append(current.strip())
        current = ""
    if current.strip():
        blocks.append(current.strip())
    return tuple(blocks)


def counterfactual_code(reference: str, fault: Fault) -> str:
    """θ' of a counterfactual fault; raises FaultError when an edit does not apply exactly once."""
    if fault.code is not None:
        return fault.code
    code = reference
    for old, new in fault.replace:
        count = code.count(old)
        if count != 1:
            raise FaultError(
                f"{fault.describe()}: the text {old!r} occurs {count} times in the reference code "
                "(an edit must match exactly once)"
            )
        code = code.replace(old, new)
    return code


def static_stale(task: Task, turn_id: int) -> dict[str, list[str]]:
    """Variables that are stale when `turn_id` starts, replaying the earlier reference blocks'
    static dataflow (what the workspace's runtime dataflow reports, less mutations it can see only
    by hashing)."""
    turns = tuple((turn.turn_id, turn.code) for turn in task.turns)
    prefixes = _stale_before_each_turn(turns)
    index = next((i for i, (tid, _) in enumerate(turns) if tid >= turn_id), len(turns))
    return {name: list(reasons) for name, reasons in prefixes[index]}


@lru_cache(maxsize=64)
def _stale_before_each_turn(
    turns: tuple[tuple[int, str], ...],
) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]:
    """`graph.stale()` after replaying the first i turns, for every i, in one pass over the task: the
    loader checks every fault of every variant, and replaying the prefix again for each one made
    the checks quadratic in the turn count."""
    graph = DataflowGraph()
    cell = 0
    out = []
    for _, code in turns:
        out.append(tuple((name, tuple(reasons)) for name, reasons in graph.stale().items()))
        for block in split_blocks(code):
            flow = cell_dataflow(block)
            cell += 1
            graph.record(cell, reads=flow.reads, writes=flow.writes)
    out.append(tuple((name, tuple(reasons)) for name, reasons in graph.stale().items()))
    return tuple(out)


def check_fault(task: Task, fault: Fault) -> str | None:
    """Why `fault` cannot take effect in `task`, or None when it can."""
    try:
        turn = task.turn(fault.turn)
    except KeyError:
        return f"{fault.describe()}: the task has no turn {fault.turn} (turns 1-{len(task.turns)})"
    blocks = split_blocks(turn.code)
    if not blocks:
        return f"{fault.describe()}: the turn has no reference code"
    if fault.kind == "counterfactual":
        try:
            code = counterfactual_code(turn.code, fault)
        except FaultError as exc:
            return str(exc)
        if code.strip() == turn.code.strip():
            return f"{fault.describe()}: θ' is the reference code itself"
        try:
            ast.parse(code)
        except SyntaxError as exc:
            return f"{fault.describe()}: θ' does not parse ({exc.msg}, line {exc.lineno})"
        return None
    if fault.kind == "precision":
        if "result" not in cell_dataflow(turn.code).writes:
            return f"{fault.describe()}: the turn's code assigns no `result` to report rounded"
        return None
    if fault.kind == "stale":
        stale = {n for n in static_stale(task, fault.turn) if not scratch_name(n)}
        rewritten = {w for b in blocks for w in cell_dataflow(b).writes}
        if not stale & rewritten:
            return (
                f"{fault.describe()}: nothing this turn recomputes is stale when it starts (stale: "
                f"{sorted(stale) or 'none'}; the turn writes {sorted(rewritten)})"
            )
        return None
    return None  # exec_error: any turn with code can raise


def check_faults(task: Task, faults: list[Fault], *, where: str = "") -> None:
    """Raise FaultError naming every fault of `faults` that cannot take effect in `task`."""
    problems = [p for f in faults if (p := check_fault(task, f)) is not None]
    turns = [f.turn for f in faults]
    if len(set(turns)) != len(turns):
        problems.append(
            f"two faults at the same turn ({sorted(t for t in turns if turns.count(t) > 1)}): "
            "one fault per turn"
        )
    if problems:
        raise FaultError(f"{where or task.task_id}: fault(s) that cannot apply: " + "; ".join(problems))
