"""The hidden relation graph of a synthesized task (`hidden/graph.json`), as a typed record.

Written once by the task builders (`synthesis.tasks`, `synthesis.shapes`); read by replay,
worker faults, trajectories, the export, the eval loader, the DCR metric and the RL prefix.
Two shapes share one model: turn-aligned tasks (`turns`, threads with a tunable stage) and
segment-shaped tasks (`shape`/`flow`, stages with their own question, `segments`). Fields a
shape does not have stay unset and are not written, so `save_graph(load_graph(f))` gives the
same bytes (the frozen benchmark pins them).

    graph = load_graph(TaskFolder(root)); graph.stage_turns()   # {stage name: turn}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.files import load_model, write_json
from stateguard.artifacts.state import Relation
from stateguard.artifacts.task_folder import TaskFolder

__all__ = ["GraphSegment", "GraphStage", "GraphThread", "RelationGraph", "load_graph", "save_graph"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GraphThread(_Strict):
    thread_id: str
    family: str
    params: dict[str, Any] = Field(description="The SQL family's parameters as drawn.")
    tunable: str | None = Field(default=None, description="Turn-aligned tasks: the stage a variant re-tunes.")
    alternative: Any = Field(
        default=None, description="Turn-aligned tasks: the tunable parameter's other value."
    )


class GraphStage(_Strict):
    turn_id: int = Field(ge=1)
    state_id: str = Field(description="The analytical state the stage becomes (S1, S2, ...).")
    name: str = Field(description="The table the stage's SQL creates (unique within the task).")
    role: str = Field(description="thread | update | ... (how the planner placed the stage)")
    thread: str
    sql: str
    question: str | None = Field(default=None, description="Segment-shaped tasks: the stage's own question.")
    deps: list[str] = Field(description="Stages (table names) this stage reads.")
    relations: list[Relation]


class GraphSegment(_Strict):
    """Segment-shaped tasks: one stage of a turn, in build order (see synthesis.teacher.plan.Segment)."""

    key: str
    turn: int = Field(ge=1)
    marker: str
    issue: str


class RelationGraph(_Strict):
    FORMAT: ClassVar[str] = "stateguard/graph/1"  # not written: the frozen benchmark pins the file's bytes

    task_id: str
    dataset: str
    seed: int
    turns: int | None = Field(default=None, description="Turn-aligned tasks: the number of turns asked for.")
    shape: str | None = Field(default=None, description="Segment-shaped tasks: dabstep | dacomp_de.")
    flow: str | None = Field(default=None, description="The teacher flow; absent means longds.")
    threads: list[GraphThread]
    stages: list[GraphStage]
    segments: list[GraphSegment] | None = None

    @property
    def flow_name(self) -> str:
        return self.flow or "longds"

    def stage_turns(self) -> dict[str, int]:
        """stage name -> the turn that builds it."""
        return {s.name: s.turn_id for s in self.stages}

    def stages_by_turn(self) -> dict[int, list[str]]:
        """turn -> the stages it materializes, in order."""
        out: dict[int, list[str]] = {}
        for s in self.stages:
            out.setdefault(s.turn_id, []).append(s.name)
        return out


def load_graph(folder: TaskFolder | Path) -> RelationGraph:
    """`hidden/graph.json` of a task folder (or the file itself)."""
    path = folder.graph if isinstance(folder, TaskFolder) else Path(folder)
    return load_model(path, RelationGraph)


def save_graph(folder: TaskFolder, graph: RelationGraph) -> Path:
    """Write only the fields that were set, in declaration order (the builders' historical bytes)."""
    write_json(folder.graph, graph.model_dump(mode="json", exclude_unset=True))
    return folder.graph
