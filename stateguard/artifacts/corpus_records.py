"""`corpus/records/<task_id>.jsonl`: the trajectory export's per-task cache of teacher trajectories.

The first line is a `RecordsKey` (the export options the records were made with: a rerun with the
same key resumes from the file instead of running the teacher again); every further line is one
`TrajectoryRecord` (a variant of the task: clean, repair, heavy, abandon, benign or auto) with
its Keep verdict. `synthesis.trajectories` makes the records, `synthesis.export` writes and reads
the file, the viewer (`eval.viewer.rollouts`) reads it for each variant's answers and verdict.
The bytes are pinned by the debug corpus tests, so the models keep the written field order.

    save_records(CorpusFolder(out).record_file(task_id), key, records)
    key, records = load_records(path)          # ArtifactError naming file, line and field
    observation_of(act).pending_end_step       # an activation's logged observation, typed
    tool_stdout(action)                        # what a logged tool call printed ("" for none)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stateguard.artifacts.activation_log import ActionLog, ActivationLog
from stateguard.artifacts.events import ToolResultData
from stateguard.artifacts.files import ArtifactError, describe_errors
from stateguard.artifacts.mistakes import InterventionKind
from stateguard.artifacts.teacher_plan import TeacherPlan, Variant

__all__ = [
    "ActionRow",
    "InterventionKind",
    "InterventionRecord",
    "ObservationView",
    "RecordsKey",
    "StateStats",
    "TrajectoryRecord",
    "WorkerStepRow",
    "load_key",
    "load_records",
    "observation_of",
    "save_records",
    "tool_result_of",
    "tool_stdout",
]


class InterventionRecord(BaseModel):
    """What an intervention changed, where, and in words."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: InterventionKind
    operation: str = Field(description="e.g. 'avg_to_median', 'drop_conjunct'.")
    stage: str | None = Field(description="Stage whose SQL was changed (its CREATE target by default).")
    description: str = Field(min_length=1)
    before: str = Field(description="SQL of the rewritten site before the change.")
    after: str = Field(description="SQL of what replaced the site.")
    statement: int = Field(default=0, ge=0, description="Index of the statement within the SQL.")
    path: list[str] = Field(
        description="Location, in that statement's AST, of the one subtree that differs, e.g. "
        "['where', 'this']; it is the site itself or lies inside it."
    )


class WorkerStepRow(BaseModel):
    """One worker step of the rollout, as Keep(τ) compares it with the clean twin."""

    model_config = ConfigDict(frozen=True)

    index: int
    turn: int | None
    action: str
    output: str
    success: bool
    purpose: str | None = Field(description="Scripted worker: reference | faulty | recompute | ...")
    turn_end: bool


class ActionRow(BaseModel):
    """One manager action of the rollout (trace event `action`) and the harness verdict."""

    model_config = ConfigDict(frozen=True)

    seq: int
    name: str | None
    accepted: bool
    stage: str | None = None
    activation: int


class StateStats(BaseModel):
    """What a committed state holds (for the corpus statistics)."""

    model_config = ConfigDict(frozen=True)

    id: str
    constraints: int
    executable: int
    variables: int
    conclusions: int
    relations: list[str] = Field(description="relation types, in the state's order")


class ObservationView(BaseModel):
    """The fields of an activation's logged observation (a `ManagerObservation` dump) that the export
    and Keep(τ) read. The log keeps the dict as written (the corpus bytes are pinned); readers
    go through `observation_of` so a renamed field fails here rather than reading as a default."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    stage: str
    pending_end_step: int | None = None
    repair_budget: int = 3


def observation_of(act: ActivationLog) -> ObservationView:
    """The activation's observation, typed; ArtifactError naming the activation and the field."""
    try:
        return ObservationView.model_validate(act.observation)
    except ValidationError as exc:
        raise ArtifactError(
            f"activation {act.index}: observation is not a manager observation ({describe_errors(exc)})"
        ) from None


def tool_result_of(action: ActionLog) -> ToolResultData | None:
    """A logged tool call's result (`stateguard.tools.ToolResult` as dumped), None for a control
    action or a rejected call; ArtifactError naming the action and the field."""
    if action.tool_result is None:
        return None
    try:
        return ToolResultData.model_validate(action.tool_result)
    except ValidationError as exc:
        raise ArtifactError(
            f"action {action.name}: tool_result is not a ToolResult ({describe_errors(exc)})"
        ) from None


def tool_stdout(action: ActionLog) -> str:
    """What a logged tool call printed (`run_probe`'s verdict line is in it); "" when nothing."""
    result = tool_result_of(action)
    return "" if result is None else str(result.data.get("stdout", ""))


class TrajectoryRecord(BaseModel):
    """One teacher trajectory of a synthesized task and its Keep verdict (paper Eq. 24)."""

    FORMAT: ClassVar[str] = "stateguard/trajectory-record/1"  # not written: corpus bytes are pinned

    trajectory_id: str = Field(description="<task_id>/<variant>[-<attempt>]")
    task_id: str
    variant: Variant
    seed: int
    flow: str = "longds"
    teacher: str = ""
    plan: TeacherPlan | None = None
    t_star: int | None = None
    stage: str | None = None
    intervention: InterventionRecord | None = None
    faulty_code: str | None = None
    benign: bool = False
    worker_steps: list[WorkerStepRow] = Field(default_factory=list)
    action_events: list[ActionRow] = Field(default_factory=list)
    activations: list[ActivationLog] = Field(default_factory=list)
    answers: dict[int, Any] = Field(default_factory=dict)
    reference_answers: dict[int, Any] = Field(default_factory=dict)
    repair_modes: list[str] = Field(default_factory=list)
    rollbacks: int = 0
    states: list[StateStats] = Field(default_factory=list, description="per committed state")
    hints: dict[str, int] = Field(default_factory=dict, description="hints delivered by kind")
    degraded: bool = False
    trace_kinds: list[str] = Field(default_factory=list)
    run_dir: str | None = None
    keep: bool = False
    rejections: list[str] = Field(default_factory=list)

    @property
    def variant_name(self) -> str:
        """The rollout folder's name under `corpus/runs/<task_id>/` (`clean`, `repair-2`, ...)."""
        return self.trajectory_id.rsplit("/", 1)[-1]


class RecordsKey(BaseModel):
    """The export options a records file was made with (its first line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    repairs: int
    autos: int
    benign: int
    heavy: int
    abandon: int
    teacher: str
    version: str = Field(description="synthesis.teacher.TEACHER_VERSION")


def save_records(path: str | Path, key: RecordsKey, records: list[TrajectoryRecord]) -> None:
    """Write the key line and one line per record, atomically (a killed export leaves no half file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    lines = [json.dumps(key.model_dump(mode="json")), *(r.model_dump_json() for r in records)]
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_key(path: str | Path) -> RecordsKey | None:
    """The file's key line, or None when the file is missing, empty or its key is of another form
    (the records are then stale and are made again)."""
    path = Path(path)
    if not path.is_file():
        return None
    with path.open(encoding="utf-8") as fh:
        first = fh.readline()
    try:
        return RecordsKey.model_validate_json(first)
    except ValidationError:
        return None


def load_records(path: str | Path) -> tuple[RecordsKey | None, list[TrajectoryRecord]]:
    """The key (None when it is not a current key line) and every record; a record line that does
    not parse is an ArtifactError naming the file, the line and the field."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ArtifactError(f"{path}: file missing") from None
    key = load_key(path) if lines else None
    records = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            records.append(TrajectoryRecord.model_validate_json(line))
        except ValidationError as exc:
            raise ArtifactError(
                f"{path}:{number}: not a TrajectoryRecord ({describe_errors(exc)}); re-export the corpus"
            ) from None
    return key, records
