"""Scripted worker: the offline stand-in for an LLM data agent, and the RL prefix generator.

It solves a LongDS-format task by running each turn's reference code in the workspace, one
blank-line-separated block per step, under a seeded fault model:
  stale          after a revision, skip the statements that would recompute a now-stale variable,
                 so the turn silently inherits the pre-revision value (the paper's headline failure);
  counterfactual run a given alternative program θ' instead of the reference θ;
  precision      report the result rounded to the wrong number of decimals;
  exec_error     a typo makes the turn's last block raise, and the worker does not fix it.
A repair hint that names a variable or answer field the faulty turn touched makes it recompute
that turn (and every later turn it has already run) with the reference code -- an earlier turn's
submitted answer stays as it was, only the workspace is fixed; a hint that names
nothing relevant changes nothing. A hint with no affected variables (the observer ablation's
free-text remark) is read for the names it mentions instead. Same seed, same faults, same
trajectory.

    worker = ScriptedWorker(FaultModel(faults=[Fault(kind="stale", turn=5)]))
"""

from __future__ import annotations

import ast
import random
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.answers import last_json
from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.task import Task, Turn
from stateguard.worker import WorkerMessage
from stateguard.workspace import LiveWorkspace

FaultKind = Literal["stale", "counterfactual", "precision", "exec_error"]


class Fault(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: FaultKind
    turn: int = Field(ge=1)
    code: str | None = Field(default=None, description="θ' for a counterfactual fault.")
    decimals: int = Field(default=1, ge=0, description="Digits a precision fault rounds to.")


class FaultModel(BaseModel):
    """Explicit faults, plus seeded random ones (`rates` per kind, tried on every other turn)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    seed: int = 0
    faults: list[Fault] = Field(default_factory=list)
    rates: dict[FaultKind, float] = Field(default_factory=dict)

    def plan(self, task: Task) -> dict[int, Fault]:
        rng = random.Random(self.seed)
        plan = {f.turn: f for f in self.faults}
        for turn in task.turns:
            for kind in sorted(self.rates):
                if turn.turn_id not in plan and kind != "counterfactual" and rng.random() < self.rates[kind]:
                    plan[turn.turn_id] = Fault(kind=kind, turn=turn.turn_id)
        return plan


def split_blocks(code: str) -> list[str]:
    """Blank-line-separated blocks that each parse on their own (merged with the next when not)."""
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
    return blocks


def _drop_writes(block: str, names: set[str]) -> str:
    """The block without top-level statements that rebind any of `names`."""
    tree = ast.parse(block)
    kept = [s for s in tree.body if not set(cell_dataflow(ast.unparse(s)).writes) & names]
    return "\n".join(ast.get_source_segment(block, s) or ast.unparse(s) for s in kept)


def _typo(block: str) -> str:
    """Misspell the first variable the block reads, so it raises NameError."""
    reads = cell_dataflow(block).reads
    if not reads:
        return block + "\nundefined_name_in_turn"
    target = reads[0]
    tree = ast.parse(block)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == target and isinstance(node.ctx, ast.Load):
            node.id = target + "_"
            break
    return ast.unparse(tree)


class _Cell(BaseModel):
    turn: int
    code: str
    purpose: Literal["reference", "faulty", "recompute"]
    last: bool = False


class ScriptedWorker:
    """Implements `WorkerAdapter` over reference code with injected faults."""

    def __init__(self, faults: FaultModel | None = None):
        self.faults = faults or FaultModel()
        self.answers: dict[int, Any] = {}
        self.faulted: dict[int, Fault] = {}  # turns run with an active fault and not yet repaired
        self.applied: list[Fault] = []
        self.ignored_hints: list[str] = []
        self._queue: list[_Cell] = []
        self._run_turns: list[int] = []
        self._turn_json: dict[int, Any] = {}
        self._latest_run = 0  # the latest turn whose own cells have run; earlier answers are submitted

    # -- contract
    def start(self, task: Task, workspace: LiveWorkspace) -> None:
        self.task, self.ws = task, workspace
        self._plan = self.faults.plan(task)

    def inject(self, message: WorkerMessage) -> None:
        if message.kind == "turn" and message.turn is not None:
            self._begin_turn(message.turn)
        elif message.kind == "repair_hint" and message.hint is not None:
            self._on_repair(message.hint.error_variables, message.hint.faulty_reasoning)
        # State hints carry nothing the scripted worker needs: it already knows the reference code.

    def step(self, index: int) -> WorkerStep | None:
        if not self._queue:
            return None
        cell = self._queue.pop(0)
        result = self.ws.run_cell(cell.code)
        output = "\n".join(x for x in (result.stdout.strip(), result.value or "") if x)
        parsed = last_json(result.stdout)
        if parsed is not None:
            self._turn_json[cell.turn] = parsed
        if cell.purpose != "recompute":
            self._latest_run = max(self._latest_run, cell.turn)
        if cell.last and (cell.turn >= self._latest_run or cell.turn not in self.answers):
            # A turn's answer is final once a later turn's own work has started: recomputing it
            # after that fixes the workspace, not the answer already submitted.
            self.answers[cell.turn] = self._turn_json.get(cell.turn)
        return WorkerStep(
            index=index,
            turn=cell.turn,
            thought=f"turn {cell.turn}: {cell.purpose} block",
            action=cell.code,
            output=output,
            error=result.error,
            success=result.ok,
            meta={
                "cell_id": result.cell_id, "reads": result.reads, "writes": result.writes,
                "stale_reads": result.stale_reads, "turn_end": cell.last, "purpose": cell.purpose,
                "wall_s": result.wall_s, "notes": result.notes,
            },
        )  # fmt: skip

    def done(self) -> bool:
        return not self._queue

    def final_answer(self) -> dict[int, Any]:
        return dict(self.answers)

    def snapshot(self) -> Any:
        return {"queue": [c.model_copy() for c in self._queue], "faulted": dict(self.faulted),
                "run_turns": list(self._run_turns), "turn_json": dict(self._turn_json),
                "latest_run": self._latest_run}  # fmt: skip

    def restore(self, token: Any) -> None:
        """Back to the checkpoint: pending cells, open faults and the turns run so far. Submitted
        answers stay (see the contract), and so do the logs `applied` and `ignored_hints`."""
        self._queue = [c.model_copy() for c in token["queue"]]
        self.faulted = dict(token["faulted"])
        self._run_turns = list(token["run_turns"])
        self._turn_json = dict(token["turn_json"])
        self._latest_run = token["latest_run"]

    # -- behaviour
    def _cells(self, turn: Turn, code: str, purpose: Literal["reference", "faulty", "recompute"]) -> list[_Cell]:
        blocks = [b for b in split_blocks(code) if b.strip()]
        cells = [_Cell(turn=turn.turn_id, code=b, purpose=purpose) for b in blocks]
        if cells:
            cells[-1].last = True
        return cells

    def _begin_turn(self, turn: Turn) -> None:
        self._turn_json.pop(turn.turn_id, None)
        self._run_turns.append(turn.turn_id)
        fault = self._plan.get(turn.turn_id)
        code = self._faulty_code(turn, fault) if fault else None
        if fault is not None and code is not None:
            self.faulted[turn.turn_id] = fault
            self.applied.append(fault)
            self._queue.extend(self._cells(turn, code, "faulty"))
        else:
            self._queue.extend(self._cells(turn, turn.code, "reference"))

    def _faulty_code(self, turn: Turn, fault: Fault) -> str | None:
        """θ' for this turn, or None when the fault cannot take effect here."""
        if fault.kind == "counterfactual":
            return fault.code
        if fault.kind == "stale":
            stale = set(self.ws.dataflow.stale())
            blocks = split_blocks(turn.code)
            changed = [_drop_writes(b, stale) for b in blocks]
            return None if changed == blocks else "\n\n".join(b for b in changed if b.strip())
        if fault.kind == "precision":
            if "result" not in cell_dataflow(turn.code).writes:
                return None
            return f"{turn.code}\n\nprint(json_dumps_rounded(result, {fault.decimals}))"
        blocks = split_blocks(turn.code)
        return "\n\n".join(blocks[:-1] + [_typo(blocks[-1])]) if blocks else None

    def _footprint(self, turn_id: int) -> set[str]:
        turn = self.task.turn(turn_id)
        flow = cell_dataflow(turn.code)
        fields = set(turn.answer) if isinstance(turn.answer, dict) else set()
        return set(flow.reads) | set(flow.writes) | fields

    def _on_repair(self, names: list[str], reason: str) -> None:
        # An observer remark names no variables: the identifiers its text mentions stand in for them.
        wanted = {n.split("@")[0] for n in names} or set(re.findall(r"[A-Za-z_]\w*", reason))
        for turn_id in sorted(self.faulted, reverse=True):
            if wanted & self._footprint(turn_id):
                del self.faulted[turn_id]
                later = [t for t in self._run_turns if t >= turn_id]
                self._queue = [c for c in self._queue if c.turn not in later]
                for t in dict.fromkeys(later):
                    self._turn_json.pop(t, None)
                    self._queue.extend(self._cells(self.task.turn(t), self.task.turn(t).code, "recompute"))
                return
        self.ignored_hints.append(f"{', '.join(names)}: {reason}")
