"""Held-out manager decisions read from an exported SFT corpus (the files synthesis/export.py writes).

    (library module; `python -m eval.decisions` uses it)

A corpus folder is a Hugging Face `datasets` folder of `stateguard.artifacts.sft_rows.SftRow`
(`messages` as JSON chat, `tools` as JSON schemas, `kind`, `variant`, `task_id`, ...), which
`read_sft_rows` reads with pyarrow alone (this package imports neither synthesis nor training).
Every assistant message of an ATOMIC sample is one decision: the prompt is the chat before it
(system prompt, the task with the observation, earlier tool calls and their results), the
teacher's answer is the message's tool calls, and the lifecycle stage is the one the observation
states (tool calls do not move it, so it holds for every decision of an activation).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.sft_rows import SftKind, SftRow, read_sft_rows
from stateguard.lifecycle import ControlAction, Regime, Stage

__all__ = ["CorpusFormatError", "DecisionItem", "decision_class", "load_items", "read_rows", "select"]

TOOL = "tool"  # the class of a decision that calls evidence tools instead of a control action
_OBS = "OBSERVATION\n"


class CorpusFormatError(ValueError):
    """The folder is not an SFT corpus as synthesis/export.py writes it."""


class DecisionItem(BaseModel):
    id: str = Field(description="<trajectory_id>/a<activation>/m<message index>: stable across runs")
    task_id: str
    variant: str = Field(description="clean | repair | auto (the trajectory the decision comes from)")
    intervention_kind: str
    turn: int
    regime: Regime
    stage: Stage
    messages: list[dict[str, Any]] = Field(description="the chat up to the decision (what the manager sees)")
    tools: list[dict[str, Any]]
    teacher: list[dict[str, Any]] = Field(description="the teacher's calls: [{name, arguments}]")
    teacher_class: str = Field(description="`tool` or the teacher's control action")


def decision_class(names: list[str]) -> str:
    """`tool` when every call is an evidence tool, else the (single) control action's name."""
    controls = [n for n in names if n in ControlAction.__members__]
    return controls[0] if controls else TOOL


def read_rows(corpus: str | Path) -> list[SftRow]:
    """Every row of the corpus folder; CorpusFormatError saying how to make one when it is not."""
    root = Path(corpus)
    try:
        return read_sft_rows(root)
    except ArtifactError as exc:
        raise CorpusFormatError(
            f"{exc}. `make synth` writes one to <out_dir>/corpus/sft; for held-out decisions run "
            "`python -m synthesis.pipeline synth=heldout` (runs/synth-heldout/corpus/sft)"
        ) from None


def _stage(user_text: str, where: str) -> Stage:
    if _OBS not in user_text:
        raise CorpusFormatError(f"{where}: the user message has no OBSERVATION block")
    try:
        obs = json.loads(user_text.split(_OBS, 1)[1])
    except json.JSONDecodeError as exc:
        raise CorpusFormatError(f"{where}: the observation is not JSON ({exc})") from exc
    return Stage(obs["stage"])


def _regime(system_text: str) -> Regime:
    # the export writes the turn-aligned prompt; a segment corpus names its regime the same way
    return Regime.SEGMENT_INDUCED if "segment-induced" in system_text.lower() else Regime.TURN_ALIGNED


def load_items(corpus: str | Path) -> list[DecisionItem]:
    """Every decision of every atomic sample, in corpus order."""
    items: list[DecisionItem] = []
    for row in read_rows(corpus):
        if row.kind is not SftKind.ATOMIC:
            continue
        messages = json.loads(row.messages)
        tools = json.loads(row.tools)
        where = f"{row.trajectory_id} activation {row.activation}"
        user = next(m for m in messages if m["role"] == "user")
        stage = _stage(user["content"], where)
        regime = _regime(messages[0]["content"])
        for i, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            calls = [c["function"] for c in m.get("tool_calls") or []]
            teacher = [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in calls]
            items.append(
                DecisionItem(
                    id=f"{row.trajectory_id}/a{row.activation}/m{i}",
                    task_id=row.task_id,
                    variant=row.variant,
                    intervention_kind=row.intervention_kind,
                    turn=row.turn,
                    regime=regime,
                    stage=stage,
                    messages=messages[:i],
                    tools=tools,
                    teacher=teacher,
                    teacher_class=decision_class([c["name"] for c in teacher]),
                )
            )
    return items


def select(items: list[DecisionItem], per_class: int | None, seed: int = 0) -> list[DecisionItem]:
    """The first `per_class` decisions of each teacher class in a seeded shuffle (all of a rarer class).

    Lifecycle bookkeeping (OPEN, COMMIT) outnumbers the verification verdicts many times over; a
    cap per class keeps REPAIR, FINALIZE and tool use visible in a small, affordable sample. The
    samples are nested (per_class=2 is part of per_class=5), so a run can be extended and its
    scores reused. The result is sorted by id so that consecutive prompts share long prefixes
    (servers that cache the previous prompt, such as llama.cpp, then skip most of the prefill).
    """
    if per_class is None:
        return sorted(items, key=lambda x: x.id)
    by: dict[str, list[DecisionItem]] = defaultdict(list)
    for it in sorted(items, key=lambda x: x.id):
        by[it.teacher_class].append(it)
    out: list[DecisionItem] = []
    for cls in sorted(by):
        group = list(by[cls])
        random.Random(f"{seed}:{cls}").shuffle(group)
        out += group[:per_class]
    return sorted(out, key=lambda x: x.id)
