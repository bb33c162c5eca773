"""StateGuard -> StateWise: promote what a finished task established to the persistent store.

Only what StateGuard kept valid is promoted: committed states that no Invalidate relation made
stale, and of their variables only the current versions (a definition revised later in the task
promotes its revised form, never the superseded one). From the worker steps bound to those
states (the trace) it reads:
- definitions: for each current scalar variable, the statements that compute it from the task's
  tables (a backward slice within its state's steps), its inputs and its value, as
  `definition.<name>` (value {"code", "inputs", "value"});
- table locations: `pd.read_csv(<path>)` -> `table.location` for the dataset named by the file;
- written tables: `<frame>.to_csv(<path>)` -> `table.clean_path` for the dataset it was derived
  from (the one table the task read), e.g. a cleaned table.
Paths must be static (a string, or an f-string over BASE_PATH); others are skipped and said so.
Promoted records carry authority `promoted` and provenance `stateguard:<run>:<state>`; a key
already in the store is corrected (with lineage) when its value differs, never overwritten.

    result = promote_run(run_dir, records, project="shop", base_path=task.base_path, now=now)
"""

from __future__ import annotations

import ast
import math
import posixpath
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from stateguard.artifacts.events import WorkerStepData, WorkerStepEvent
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.dataflow import cell_dataflow
from stateguard.store import StateStore
from stateguard.trace import read_trace
from statewise.records import Authority, Evidence, OpRecord, Provenance
from statewise.store import RecordStore

SKIP_NAMES = {"result"}
PRELUDE_NAMES = {
    "pd",
    "np",
    "json",
    "re",
    "math",
    "BASE_PATH",
    "json_dumps_rounded",
}  # stateguard.task.PRELUDE


class Promotion(BaseModel):
    written: list[str] = Field(
        default_factory=list, description="Ids of records added or correcting versions."
    )
    unchanged: list[str] = Field(default_factory=list, description="Keys already stored with the same value.")
    skipped: list[str] = Field(default_factory=list, description="What could not be promoted, and why.")


def _static_path(node: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for piece in node.values:
            if isinstance(piece, ast.Constant) and isinstance(piece.value, str):
                parts.append(piece.value)
            elif (
                isinstance(piece, ast.FormattedValue)
                and isinstance(piece.value, ast.Name)
                and piece.value.id in names
            ):
                parts.append(names[piece.value.id])
            else:
                return None
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _static_path(node.left, names), _static_path(node.right, names)
        return None if left is None or right is None else left + right
    return None


def _relative(path: str, base: str) -> str | None:
    norm = posixpath.normpath(path)
    base = posixpath.normpath(base)
    if norm.startswith(base + "/"):
        return norm[len(base) + 1 :]
    return None if norm.startswith("/") or norm.startswith("..") else norm


def _io_calls(code: str, names: dict[str, str]) -> list[tuple[str, str | None, str, str | None]]:
    """(read|write, static path or None, source text, variable a read is assigned to) per read_csv / to_csv."""
    found: list[tuple[str, str | None, str, str | None]] = []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return found
    targets = {
        id(s.value): s.targets[0].id
        for s in ast.walk(tree)
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            kind = {"read_csv": "read", "to_csv": "write"}.get(node.func.attr)
            if kind:
                found.append(
                    (
                        kind,
                        _static_path(node.args[0], names),
                        ast.unparse(node.args[0]),
                        targets.get(id(node)),
                    )
                )
    return found


def _slice(statements: list[str], target: str) -> tuple[list[str], list[str]]:
    """The statements (in order) that compute `target`, and the names they read from outside."""
    flows = [cell_dataflow(s) for s in statements]
    needed, chosen = {target}, []
    for stmt, flow in zip(reversed(statements), reversed(flows), strict=True):
        if set(flow.writes) & needed:
            chosen.append(stmt)
            needed |= set(flow.reads)
    chosen.reverse()
    written = {w for s in chosen for w in cell_dataflow(s).writes}
    reads = sorted({r for s in chosen for r in cell_dataflow(s).reads} - written)
    return chosen, reads


def _statements(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [ast.get_source_segment(code, s) or ast.unparse(s) for s in tree.body]


def promote_run(
    run_dir: str | Path,
    records: RecordStore,
    *,
    project: str,
    base_path: str,
    now: datetime,
    run_name: str | None = None,
) -> Promotion:
    run = Path(run_dir)
    folder = RolloutFolder(run)
    states = StateStore.open_read_only(folder.store)
    steps = {e.data.index: e.data for e in read_trace(folder.trace) if isinstance(e, WorkerStepEvent)}
    name = run_name or run.name
    out = Promotion()
    names = {"BASE_PATH": base_path}
    reads: list[tuple[str, str]] = []  # (dataset, relative path)
    tables: dict[str, str] = {}  # variable bound to a read table -> its relative path
    try:
        committed = [states.load(sid) for sid in states.ids()]
        code_of = {st.id: _state_code(st.source_step_start, st.source_step_end, steps) for st in committed}
        # Reading a file is an observation of where the table is, even in a state a later revision
        # invalidated; what a state computed or wrote is promoted only from valid states.
        for state in committed:
            for kind, path, text, var_name in [
                c for code in code_of[state.id] for c in _io_calls(code, names)
            ]:
                rel = None if path is None else _relative(path, base_path)
                if kind != "read":
                    continue
                if rel is None:
                    out.skipped.append(
                        f"{state.id}: read path {text!r} is not a static path under the task folder"
                    )
                    continue
                dataset = posixpath.splitext(posixpath.basename(rel))[0]
                reads.append((dataset, rel))
                if var_name:
                    tables[var_name] = rel
                _put(
                    records,
                    out,
                    "table.location",
                    "location",
                    rel,
                    f"{project}/{dataset}",
                    state.id,
                    name,
                    now,
                )
        for state in committed:
            if states.is_invalid(state.id):
                continue
            codes = code_of[state.id]
            for kind, path, text, _var in [c for code in codes for c in _io_calls(code, names)]:
                if kind != "write":
                    continue
                rel = None if path is None else _relative(path, base_path)
                if rel is None:
                    out.skipped.append(
                        f"{state.id}: write path {text!r} is not a static path under the task folder"
                    )
                    continue
                sources = sorted({d for d, _ in reads})
                owner = sources[0] if len(sources) == 1 else posixpath.splitext(posixpath.basename(rel))[0]
                _put(
                    records,
                    out,
                    "table.clean_path",
                    "clean_target",
                    rel,
                    f"{project}/{owner}",
                    state.id,
                    name,
                    now,
                )
            statements = [s for code in codes for s in _statements(code)]
            for var in state.defined_variables():
                if (
                    var.name in SKIP_NAMES or states.current_version(var.name) != var.key
                ):  # a later version supersedes it
                    continue
                if not (
                    isinstance(var.value, int | float)
                    and not isinstance(var.value, bool)
                    and math.isfinite(var.value)
                ):
                    continue
                code, reads_ = _slice(statements, var.name)
                inputs = [r for r in reads_ if r not in PRELUDE_NAMES]
                if not code or not inputs or any(r not in tables for r in inputs):
                    out.skipped.append(
                        f"{state.id}: {var.name} is not computed from the task's tables alone "
                        f"within its state (inputs {inputs})"
                    )
                    continue
                value = {
                    "code": "\n".join(code),
                    "inputs": inputs,
                    "tables": {r: tables[r] for r in inputs},
                    "value": var.value,
                }
                _put(
                    records, out, f"definition.{var.name}", "definition", value, project, state.id, name, now
                )
    finally:
        states.close()
    return out


def _state_code(lo: int | None, hi: int | None, steps: dict[int, WorkerStepData]) -> list[str]:
    """The code of the successful worker steps a state was formed from."""
    if lo is None or hi is None:
        return []
    return [steps[i].action for i in sorted(steps) if lo <= i <= hi and steps[i].success]


def _put(
    records: RecordStore,
    out: Promotion,
    key: str,
    rtype: str,
    value: Any,
    scope: str,
    sid: str,
    run_name: str,
    now: datetime,
) -> None:
    source = f"stateguard:{run_name}:{sid}"
    current = [r for r in records.records(key=key) if r.scope == scope]
    if current and current[0].value == value:
        out.unchanged.append(key)
        return
    if current:
        evidence = Evidence(
            key=key,
            scope=scope,
            value=value,
            source="promotion",
            detail=f"committed state {source}",
            observed_at=now,
            authority=Authority.PROMOTED,
        )
        corr = records.correct(
            current[0].id, value, evidence, reason=f"promoted from {source}", at=now, task_id=source
        )
        out.written += corr.new_records
        return
    rec = records.add(
        OpRecord(
            key=key,
            value=value,
            type=rtype,
            scope=scope,
            observed_at=now,
            ttl_days=180,
            provenance=Provenance(source=source, scope=scope, detail="promoted from a committed state"),
            authority=Authority.PROMOTED,
        )
    )
    out.written.append(rec.id)
