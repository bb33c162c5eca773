"""A long-horizon task in LongDS's `task.json` format, and the agent-visible view of it.

`task.json` is a list of turns `{turn_id, context, question, code, answer}`; `code` is the
reference program (hidden from agents) written notebook-style against a persistent namespace
that starts with `pd`, `np`, `re`, `json`, `math`, `BASE_PATH`, `json_dumps_rounded` and LongDS's
`print_result` (the prelude below provides the same names; docs/faults.md lists the conventions). `answer` is the dict of requested fields.

Two types, so that the information boundary is checked by mypy rather than held by convention:
`Task`/`Turn` are the privileged reference (code and answers), read only by the scripted worker,
fault checks and scorers, which name them; `AgentTask`/`AgentTurn` are what every worker adapter,
manager policy, the harness and the rollout loop are typed against, and they have no `code` or
`answer` field to reach (`Task.agent_view()` makes one; tests/stateguard/test_agent_view.py holds
the line).

    task = load_task("path/to/taskN")        # folder holding task.json (data under BASE_PATH)
    view = task.agent_view()                 # what workers and managers get
    view.turns[0].prompt()                   # what a worker is shown for turn 1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stateguard.artifacts.task_folder import TASK_FILE


class AgentTurn(BaseModel):
    """One turn as an agent sees it: no reference code, no answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_id: int = Field(ge=1)
    context: str = ""
    question: str
    visible: dict[str, Any] = Field(
        default_factory=dict,
        description="Benchmark fields the worker protocol may "
        "show (e.g. DABstep's raw question and guidelines).",
    )

    def prompt(self) -> str:
        """Agent-visible text of the turn: context, then question."""
        return f"{self.context.strip()}\n\n{self.question.strip()}".strip()


class AgentTask(BaseModel):
    """The agent-facing task: the turns' text and where the data is, nothing hidden."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    turns: list[AgentTurn]
    base_path: str = Field(default=".", description="Value of BASE_PATH in the workspace.")

    def turn(self, turn_id: int) -> AgentTurn:
        for turn in self.turns:
            if turn.turn_id == turn_id:
                return turn
        raise KeyError(f"task {self.task_id} has no turn {turn_id}")

    @property
    def query_text(self) -> str:
        """All agent-visible text (numbers in it may appear in repair hints)."""
        return "\n".join(t.prompt() for t in self.turns)


class Turn(BaseModel):
    """Privileged: a turn with its hidden reference program and expected answer."""

    model_config = ConfigDict(extra="allow", frozen=True)

    turn_id: int = Field(ge=1)
    context: str = ""
    question: str
    code: str = Field(default="", description="Reference program (hidden from agents).")
    answer: Any = Field(default=None, description="Expected answer fields (hidden from agents).")
    visible: dict[str, Any] = Field(
        default_factory=dict, description="Copied to the agent view (AgentTurn.visible)."
    )

    def prompt(self) -> str:
        """Agent-visible text of the turn: context, then question."""
        return self.agent_view().prompt()

    def agent_view(self) -> AgentTurn:
        return AgentTurn(
            turn_id=self.turn_id, context=self.context, question=self.question, visible=self.visible
        )


class Task(BaseModel):
    """Privileged: the task with reference code and answers (scripted worker, faults, scorers)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    turns: list[Turn]
    base_path: str = Field(default=".", description="Value of BASE_PATH for the reference code.")

    def turn(self, turn_id: int) -> Turn:
        for turn in self.turns:
            if turn.turn_id == turn_id:
                return turn
        raise KeyError(f"task {self.task_id} has no turn {turn_id}")

    @property
    def query_text(self) -> str:
        """All agent-visible text (numbers in it may appear in repair hints)."""
        return self.agent_view().query_text

    def agent_view(self) -> AgentTask:
        """The task without its reference code and answers: what workers and managers receive."""
        return AgentTask(
            task_id=self.task_id, turns=[t.agent_view() for t in self.turns], base_path=self.base_path
        )


def agent_view(task: AgentTask | Task) -> AgentTask:
    """`task` as agents may see it (a privileged Task is stripped; an AgentTask is returned as is)."""
    return task.agent_view() if isinstance(task, Task) else task


PRELUDE = """
import json, math, re
import numpy as np
import pandas as pd
BASE_PATH = {base_path!r}

def _round_floats(obj, ndigits=4):
    if isinstance(obj, float):
        return round(obj, ndigits)
    if isinstance(obj, dict):
        return {{k: _round_floats(v, ndigits) for k, v in obj.items()}}
    if isinstance(obj, (list, tuple)):
        return [_round_floats(v, ndigits) for v in obj]
    return obj

def json_dumps_rounded(obj, ndigits=4, **kwargs):
    return json.dumps(_round_floats(obj, ndigits), default=str, **kwargs)

def print_result(obj, ndigits=4):
    print(json_dumps_rounded(obj, ndigits, ensure_ascii=False, indent=2))
"""


def prelude(task: AgentTask | Task) -> str:
    """Setup code run once in a fresh workspace before the first turn."""
    return PRELUDE.format(base_path=task.base_path)


MAX_TURN_CHARS = 1_000_000  # question, context, code and answer of one turn together
MAX_TASK_BYTES = 64 * 1024 * 1024


def _reference_problem(turn: Turn, raw: dict[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) when a turn lacks the reference a benchmark run needs."""
    if not isinstance(raw.get("code"), str):
        return "code", "missing or not a string: every turn needs its reference program (Python source)"
    if "answer" not in raw:
        return (
            "answer",
            "missing: every turn needs the expected answer, a JSON object of the requested fields",
        )
    if not isinstance(turn.answer, dict) or not turn.answer:
        return "answer", (
            f"is {type(turn.answer).__name__} {str(turn.answer)[:40]!r}, expected a non-empty JSON "
            'object of the requested fields, e.g. {"revenue": 720.5}'
        )
    return None


def load_task(
    folder: str | Path, *, task_id: str | None = None, base_path: str | None = None, reference: bool = True
) -> Task:
    """Read `<folder>/task.json`; errors name the file, the turn and the field, and say the fix.

    With `reference` (benchmark and synthesis files), every turn must carry its reference `code`
    (a string; replaying it needs it non-empty, which the eval runner checks for the scripted
    worker) and an `answer` object: a turn without them would be scored wrong rather than refused. A
    turn over MAX_TURN_CHARS is refused too (it would be fed whole to parsers and models)."""
    folder = Path(folder)
    path = folder / TASK_FILE
    try:
        size = path.stat().st_size
        if size > MAX_TASK_BYTES:
            raise ValueError(
                f"{path}: {size:,} bytes; a task.json is at most {MAX_TASK_BYTES:,} bytes (turn text "
                "only: put data in files under the task's data folder)"
            )
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no task.json here; pass the task folder (…/taskN)") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a list of turns, got {type(raw).__name__}")
    if not raw:
        raise ValueError(f"{path}: the list of turns is empty; a task needs at least one turn")
    turns = []
    for i, item in enumerate(raw):
        where = f"{path}: turn #{i + 1}" + (
            f" (turn_id {item.get('turn_id')})" if isinstance(item, dict) else ""
        )
        try:
            turn = Turn.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{where}, field '{field}': {first['msg']}") from None
        chars = len(json.dumps(item, ensure_ascii=False))
        if chars > MAX_TURN_CHARS:
            raise ValueError(
                f"{where}: {chars:,} characters; a turn is at most {MAX_TURN_CHARS:,} (question, "
                "context, code and answer together); put large data in files under the task's data "
                "folder"
            )
        problem = _reference_problem(turn, item) if reference else None
        if problem is not None:
            raise ValueError(f"{where}, field '{problem[0]}': {problem[1]}")
        turns.append(turn)
    ids = [t.turn_id for t in turns]
    if ids != sorted(set(ids)):
        raise ValueError(f"{path}: turn_id values must be unique and increasing, got {ids}")
    return Task(task_id=task_id or folder.name, turns=turns, base_path=base_path or str(folder))
