"""Scripted worker: the offline stand-in for an LLM data agent, and the RL prefix generator.

It solves a LongDS-format task by running each turn's reference code in the workspace, one
blank-line-separated block per step, under a seeded fault model (`stateguard.workers.faults`):
  stale          after a revision, skip the statements that would recompute a now-stale variable,
                 so the turn silently inherits the pre-revision value (the paper's headline failure);
  counterfactual run an alternative program θ' instead of the reference θ;
  precision      report the result rounded to the wrong number of decimals;
  exec_error     a typo makes the turn's last block raise, and the worker does not fix it.
A fault that cannot take effect when its turn starts (nothing is stale any more) is not applied,
and the turn's first step says so (`meta.fault_skipped`); benchmarks check declared faults
statically before any run (`faults.check_faults`).
A hint with no affected variables (the observer ablation's free-text remark) is read for
the names it mentions instead.

Repair hints go through a response model (`stateguard.workers.response`): a hint that
identifies a mistake (by default: one of the faulty turn's variables AND the kind of problem)
makes the worker (with probability `p_fix`, by default always) recompute that turn, and every
later turn it has already run, with the reference code -- an earlier turn's submitted answer
stays as it was, only the workspace is fixed. The redo starts from a save point of the workspace
taken before the faulty turn ran (`ResponseModel.redo_from`), so a turn that reads what it
rebuilds re-reads its inputs, not its own faulty output. A hint that identifies nothing and lands on a correctly answered turn makes the worker
change that answer with probability `p_flip` (a false alarm costs what it costs an agent).
Same seed, same faults, same trajectory.

    worker = ScriptedWorker(FaultModel(faults=[Fault(kind="stale", turn=5)]), ResponseModel(p_flip=0.0), reference=task)

The scripted worker is one of the few readers of the privileged `Task` (reference code and
answers): it is handed the reference by name when built, while `start` gets the agent view
like every other worker.
"""

from __future__ import annotations

import ast
import json
import random
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.answers import last_json
from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.task import AgentTask, Task, Turn
from stateguard.worker_contract import WorkerMessage
from stateguard.workers.faults import Fault, FaultKind, counterfactual_code, scratch_name, split_blocks
from stateguard.workers.response import ResponseModel
from stateguard.workspace import LiveWorkspace

__all__ = ["Fault", "FaultKind", "FaultModel", "ScriptedWorker", "split_blocks"]

Purpose = Literal["reference", "faulty", "recompute", "revise"]


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


def _drop_writes(block: str, names: set[str]) -> str:
    """The block without top-level statements that rebind any of `names`."""
    tree = ast.parse(block)
    kept = [s for s in tree.body if not set(cell_dataflow(ast.unparse(s)).writes) & names]
    return "\n".join(ast.get_source_segment(block, s) or ast.unparse(s) for s in kept)


def _typo(block: str) -> str:
    """Misspell the first Python name the block reads (in order of the sorted upward-exposed reads
    that appear as names in the code, not tables named inside SQL text), so it raises NameError."""
    tree = ast.parse(block)
    loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    target = next((r for r in cell_dataflow(block).reads if r in loads), None)
    if target is None:
        return block + "\nundefined_name_in_turn"
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == target and isinstance(node.ctx, ast.Load):
            node.id = target + "_"
            break
    return ast.unparse(tree)


def _changed_answer(answer: Any) -> Any:
    """A plausible but different answer: the first number moved by about 10%, else the first text
    changed; what an agent that 'corrects' a right value reports."""
    if isinstance(answer, bool) or answer is None:
        return "revised" if answer is None else (not answer)
    if isinstance(answer, int):
        return answer + max(1, abs(answer) // 10)
    if isinstance(answer, float):
        places = max(0, len(repr(answer).split(".")[1].rstrip("0"))) if "." in repr(answer) else 0
        moved = round(answer * 1.1 + (10**-places if answer == 0 else 0), places)
        return moved if moved != answer else answer + 1
    if isinstance(answer, str):
        return answer + " (revised)"
    if isinstance(answer, list) and answer:
        return [_changed_answer(answer[0]), *answer[1:]]
    if isinstance(answer, dict):
        keys = [k for k in answer if k != "answer_type"]
        numeric = [
            k
            for k in keys
            if isinstance(answer[k], int | float | dict | list) and not isinstance(answer[k], bool)
        ]
        key = (numeric or keys or [None])[0]
        if key is not None:
            return {**answer, key: _changed_answer(answer[key])}
    return "revised"


class _Cell(BaseModel):
    turn: int
    code: str
    purpose: Purpose
    last: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)


class ScriptedWorker:
    """Implements `WorkerAdapter` over reference code with injected faults."""

    def __init__(
        self,
        faults: FaultModel | None = None,
        response: ResponseModel | None = None,
        *,
        reference: Task | None = None,
    ):
        self.reference = reference
        self.faults = faults or FaultModel()
        self.response = response or ResponseModel()
        self.answers: dict[int, Any] = {}
        self.faulted: dict[int, Fault] = {}  # turns run with an active fault and not yet repaired
        self.applied: list[Fault] = []
        self.skipped: list[Fault] = []  # faults that could not take effect when their turn started
        self.fixed: list[Fault] = []  # faults a hint identified (the turn was recomputed)
        self.unfixed: list[Fault] = []  # faults a hint identified that the worker failed to fix (p_fix)
        self.flipped: list[int] = []  # correct turns whose answer a false alarm made the worker change
        self.ignored_hints: list[str] = []
        self._queue: list[_Cell] = []
        self._run_turns: list[int] = []
        self._turn_json: dict[int, Any] = {}
        self._dropped: dict[int, list[str]] = {}  # stale fault: the variables its turn did not recompute
        self._hints = 0
        self._latest_run = 0  # the latest turn whose own cells have run; earlier answers are submitted
        self._save_points: dict[int, str] = {}  # faulty turn -> workspace checkpoint from before it ran

    # -- contract
    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        reference = self.reference
        if reference is None:
            raise ValueError(
                "the scripted worker replays the reference code: build it with "
                "ScriptedWorker(..., reference=task), task being the privileged stateguard.task.Task"
            )
        ids = [t.turn_id for t in reference.turns]
        if reference.task_id != task.task_id or ids != [t.turn_id for t in task.turns]:
            raise ValueError(
                f"the scripted worker's reference is task {reference.task_id!r} (turns {ids}), but it "
                f"was started on task {task.task_id!r}: build one worker per task"
            )
        self.task, self.ws = reference, workspace
        self._plan = self.faults.plan(reference)

    def inject(self, message: WorkerMessage) -> None:
        if message.kind == "turn" and message.turn is not None:
            self._begin_turn(self.task.turn(message.turn.turn_id))
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
        if cell.purpose in ("reference", "faulty"):
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
                "cell_id": result.cell_id,
                "reads": result.reads,
                "writes": result.writes,
                "stale_reads": result.stale_reads,
                "turn_end": cell.last,
                "purpose": cell.purpose,
                "wall_s": result.wall_s,
                "notes": result.notes,
                **({"value": result.value} if result.value is not None else {}),
                **cell.meta,
            },
        )

    def done(self) -> bool:
        return not self._queue

    def final_answer(self) -> dict[int, Any]:
        return dict(self.answers)

    def snapshot(self) -> Any:
        return {
            "queue": [c.model_copy() for c in self._queue],
            "faulted": dict(self.faulted),
            "run_turns": list(self._run_turns),
            "turn_json": dict(self._turn_json),
            "latest_run": self._latest_run,
            "save_points": dict(self._save_points),
        }

    def restore(self, token: Any) -> None:
        """Back to the checkpoint: pending cells, open faults and the turns run so far. Submitted
        answers stay (see the contract), and so do the logs `applied` and `ignored_hints`."""
        self._queue = [c.model_copy() for c in token["queue"]]
        self.faulted = dict(token["faulted"])
        self._run_turns = list(token["run_turns"])
        self._turn_json = dict(token["turn_json"])
        self._latest_run = token["latest_run"]
        kept = token.get("save_points", {})
        for turn_id, point in self._save_points.items():
            if kept.get(turn_id) != point:  # taken in the rewound part of the run
                self.ws.drop_checkpoint(point)
        self._save_points = dict(kept)

    # -- behaviour
    def _cells(
        self, turn: Turn, code: str, purpose: Purpose, meta: dict[str, Any] | None = None
    ) -> list[_Cell]:
        blocks = [b for b in split_blocks(code) if b.strip()]
        cells = [_Cell(turn=turn.turn_id, code=b, purpose=purpose) for b in blocks]
        if cells:
            cells[-1].last = True
            cells[0].meta = dict(meta or {})
        return cells

    def _begin_turn(self, turn: Turn) -> None:
        self._turn_json.pop(turn.turn_id, None)
        self._run_turns.append(turn.turn_id)
        fault = self._plan.get(turn.turn_id)
        code = self._faulty_code(turn, fault) if fault else None
        if fault is not None and code is not None:
            self._take_save_point(turn.turn_id)
            self.faulted[turn.turn_id] = fault
            self.applied.append(fault)
            meta = {"fault": fault.label, "fault_dropped": self._dropped.get(turn.turn_id, [])}
            self._queue.extend(self._cells(turn, code, "faulty", meta))
        else:
            meta = {}
            if fault is not None:
                self.skipped.append(fault)
                meta = {"fault_skipped": fault.label}
            self._queue.extend(self._cells(turn, turn.code, "reference", meta))

    def _take_save_point(self, turn_id: int) -> None:
        """Keep the workspace as it is before a turn the worker will get wrong, so that a fix can
        redo the turn from its inputs (`ResponseModel.redo_from`). Only faulty turns get one: a
        clean run takes none. A workspace that cannot snapshot leaves the fix to run in place."""
        if self.response.redo_from != "turn_start" or self._queue:
            return  # cells of an earlier turn still pending: "before this turn" is not now
        point = f"worker-before-turn-{turn_id}"
        try:
            self.ws.snapshot(point, copy_connections=True)
        except (RuntimeError, OSError):
            return
        self._save_points[turn_id] = point

    def _back_to_save_point(self, turn_id: int) -> dict[str, Any]:
        """Restore the save point from before `turn_id` (if any) for its redo; the first redo
        cell's meta says where the redo started. Later turns' save points go: they hold a
        workspace the redo replaces (with this turn's mistake in it)."""
        for later in [t for t in self._save_points if t > turn_id]:
            self.ws.drop_checkpoint(self._save_points.pop(later))
        point = self._save_points.pop(turn_id, None)
        if point is None:
            return {"redo_from": "current"}
        try:
            self.ws.restore(point)
        except (RuntimeError, KeyError, OSError) as exc:
            return {"redo_from": "current", "redo_note": f"save point {point!r} not restored: {exc}"}
        finally:
            self.ws.drop_checkpoint(point)
        return {"redo_from": "turn_start"}

    def _faulty_code(self, turn: Turn, fault: Fault) -> str | None:
        """θ' for this turn, or None when the fault cannot take effect here."""
        if fault.kind == "counterfactual":
            return counterfactual_code(turn.code, fault)
        if fault.kind == "stale":
            stale = {n for n in self.ws.dataflow.stale() if not scratch_name(n)}
            blocks = split_blocks(turn.code)
            changed = [_drop_writes(b, stale) for b in blocks]
            if changed == blocks:
                return None
            self._dropped[turn.turn_id] = sorted({w for b in blocks for w in cell_dataflow(b).writes} & stale)
            return "\n\n".join(b for b in changed if b.strip())
        if fault.kind == "precision":
            if "result" not in cell_dataflow(turn.code).writes:
                return None
            return f"{turn.code}\n\nprint(json_dumps_rounded(result, {fault.decimals}))"
        blocks = split_blocks(turn.code)
        return "\n\n".join(blocks[:-1] + [_typo(blocks[-1])]) if blocks else None

    def footprint(self, turn_id: int) -> set[str]:
        """What a hint must name to point at a mistake of this turn: the variables the turn
        writes (reference or faulty program), those a stale fault left unrecomputed, and its
        reported fields. Names it only reads (the loaded table) do not single it out."""
        turn = self.task.turn(turn_id)
        names = set(cell_dataflow(turn.code).writes) | set(self._dropped.get(turn_id, []))
        fault = self.faulted.get(turn_id)
        if fault is not None and fault.kind == "counterfactual":
            names |= set(cell_dataflow(counterfactual_code(turn.code, fault)).writes)
        answer = turn.answer if isinstance(turn.answer, dict) else {}
        return names | {k for k in answer if k != "answer_type"}

    def _on_repair(self, names: list[str], reason: str) -> None:
        self._hints += 1
        # An observer remark names no variables: the identifiers its text mentions stand in for them.
        wanted = {n.split("@")[0] for n in names} or set(re.findall(r"[A-Za-z_]\w*", reason))
        for turn_id in sorted(self.faulted, reverse=True):
            fault = self.faulted[turn_id]
            if self.response.fixes(fault, wanted, reason, self.footprint(turn_id)):
                if not self.response.takes_fix(self.task.task_id, turn_id, self._hints):
                    # identified, and still not fixed (`p_fix`): the faulty answer stays
                    self.unfixed.append(fault)
                    self.ignored_hints.append(f"{', '.join(names)}: {reason}")
                    return
                del self.faulted[turn_id]
                self.fixed.append(fault)
                later = [t for t in self._run_turns if t >= turn_id]
                self._queue = [c for c in self._queue if c.turn not in later]
                redo = self._back_to_save_point(turn_id)
                for i, t in enumerate(dict.fromkeys(later)):
                    self._turn_json.pop(t, None)
                    meta = redo if i == 0 else None
                    self._queue.extend(
                        self._cells(self.task.turn(t), self.task.turn(t).code, "recompute", meta)
                    )
                return
        turn = self._latest_run
        answered = turn in self.answers and not any(c.turn == turn for c in self._queue)
        if (
            turn
            and answered
            and turn not in self.faulted
            and turn not in self.flipped
            and self.response.flips(self.task.task_id, turn, self._hints)
        ):
            # A false alarm on a correct turn: the worker "corrects" its answer into a wrong one.
            self.flipped.append(turn)
            changed = _changed_answer(self.answers[turn])
            code = f"result = json.loads({json.dumps(changed)!r})\nprint(json.dumps(result))"
            self._queue.append(_Cell(turn=turn, code=code, purpose="revise", last=True, meta={"flip": True}))
            return
        self.ignored_hints.append(f"{', '.join(names)}: {reason}")
