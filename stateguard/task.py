"""A long-horizon task in LongDS's `task.json` format, and the agent-visible view of it.

`task.json` is a list of turns `{turn_id, context, question, code, answer}`; `code` is the
reference program (hidden from agents) written notebook-style against a persistent namespace
that starts with `pd`, `np`, `re`, `json`, `math`, `BASE_PATH`, `json_dumps_rounded` and LongDS's
`print_result` (the prelude below provides the same names; docs/faults.md lists the conventions). `answer` is the dict of requested fields.

    task = load_task("path/to/taskN")        # folder holding task.json (data under BASE_PATH)
    task.turns[0].prompt()                   # what a worker is shown for turn 1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Turn(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    turn_id: int = Field(ge=1)
    context: str = ""
    question: str
    code: str = Field(default="", description="Reference program (hidden from agents).")
    answer: Any = Field(default=None, description="Expected answer fields (hidden from agents).")

    def prompt(self) -> str:
        """Agent-visible text of the turn: context, then question."""
        return f"{self.context.strip()}\n\n{self.question.strip()}".strip()


class Task(BaseModel):
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
        return "\n".join(t.prompt() for t in self.turns)


PRELUDE = '''
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
'''


def prelude(task: Task) -> str:
    """Setup code run once in a fresh workspace before the first turn."""
    return PRELUDE.format(base_path=task.base_path)


def load_task(folder: str | Path, *, task_id: str | None = None, base_path: str | None = None) -> Task:
    """Read `<folder>/task.json`; errors name the file, the turn and the field."""
    folder = Path(folder)
    path = folder / "task.json"
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no task.json here; pass the task folder (…/taskN)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a list of turns, got {type(raw).__name__}")
    turns = []
    for i, item in enumerate(raw):
        try:
            turns.append(Turn.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{path}: turn #{i + 1}, field '{field}': {first['msg']}") from None
    ids = [t.turn_id for t in turns]
    if ids != sorted(set(ids)):
        raise ValueError(f"{path}: turn_id values must be unique and increasing, got {ids}")
    return Task(task_id=task_id or folder.name, turns=turns, base_path=base_path or str(folder))
