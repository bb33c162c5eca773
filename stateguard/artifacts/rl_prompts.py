"""`corpus/rl/prompts.parquet`: the RL prompts, one `RlPromptRow` per verification decision point.

`synthesis.export` builds the rows and writes them with `write_rl_prompts`; `training.rl.data` reads
them back with `read_rl_prompts` and writes verl's train/val parquet as `PreparedRlRow`s
(`extra_info.index` and `agent_name` added). verl reads the parquet by its own column names
(data_source, prompt, ability, reward_model, extra_info), so the field names and their order are
verl's layout and the bytes are pinned by the debug corpus: fields are only ever appended.
`reward_model.ground_truth` and `extra_info.labels` / `worker_prefix` stay JSON text (one Arrow
string each); `RlGroundTruth` and `RlLabels` type their reading.

    write_rl_prompts(CorpusFolder(out).rl_prompts, rows)
    rows = read_rl_prompts(path)               # ArtifactError naming the file, row and field
    rows[0].reward_model.truth().action, rows[0].extra_info.label().g
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stateguard.artifacts.files import ArtifactError, describe_errors

__all__ = [
    "RL_TRAIN_FILE",
    "RL_VAL_FILE",
    "PreparedExtraInfo",
    "PreparedRlRow",
    "RlColumn",
    "RlExtraInfo",
    "RlGroundTruth",
    "RlLabels",
    "RlMessage",
    "RlPromptRow",
    "RlRewardSpec",
    "RlWorkerPrefix",
    "read_rl_prompts",
    "rl_row_dicts",
    "write_rl_prompts",
]


class RlMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field(description="system | user")
    content: str


class RlGroundTruth(BaseModel):
    """`reward_model.ground_truth` (JSON): the expected control action; for a repair the affected
    variables and the intervention family."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: str
    affected_variables: list[str] | None = None
    intervention_kind: str | None = None

    def to_json(self) -> str:
        """The column's text: the fields that were set, sorted keys (the pinned corpus bytes)."""
        return json.dumps(self.model_dump(exclude_unset=True), sort_keys=True)


class RlLabels(BaseModel):
    """`extra_info.labels` (JSON): g_i of Eq. 30 and what the reward needs around it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    g: int = Field(description="1 when an inconsistency is present at this decision point")
    benign: bool = False
    affected_variables: list[str] = []
    intervention_kind: str | None = None

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), sort_keys=True)


class RlRewardSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    style: str = "rule"
    ground_truth: str = Field(description="JSON of RlGroundTruth (sorted keys)")

    def truth(self) -> RlGroundTruth:
        try:
            return RlGroundTruth.model_validate_json(self.ground_truth)
        except ValidationError as exc:
            raise ArtifactError(
                f"reward_model.ground_truth: {describe_errors(exc)}; re-run `make synth`"
            ) from None


class RlWorkerPrefix(BaseModel):
    """`extra_info.worker_prefix` (JSON): what the prefix replay needs to re-run the worker up to
    the decision point (`plan` is `synthesis.teacher.TeacherPlan`'s JSON; None before the shared
    teacher)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trajectory_id: str
    fault_turn: int | None = None
    faulty_code: str | None = None
    worker_step_upto: int = -1
    plan: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(self.model_dump())  # field order, as the first exports wrote it


class RlExtraInfo(BaseModel):
    """verl passes `extra_info` back to the agent loop and the reward as a plain dict, with its own
    keys added (`index`, the rollout's trace): `from_runtime` reads such a dict."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    turn: int
    decision_point: int = Field(description="the activation's index in its trajectory")
    variant: str
    flow: str
    teacher: str
    worker_prefix: str = Field(
        description="JSON: trajectory_id, fault_turn, faulty_code, worker_step_upto, plan"
    )
    labels: str = Field(description="JSON of RlLabels (sorted keys)")

    @classmethod
    def from_runtime(cls, extra_info: Mapping[str, Any]) -> Self:
        """The fields of this model out of verl's `extra_info` dict (other keys are verl's or later
        stages'); ArtifactError naming the missing or bad fields."""
        try:
            return cls.model_validate({k: v for k, v in extra_info.items() if k in cls.model_fields})
        except ValidationError as exc:
            raise ArtifactError(
                f"extra_info: {describe_errors(exc)}: the row is not an RL prompt of synthesis/export.py "
                "rl_prompts(); re-run `make synth` and prepare the parquet with `python -m training.rl.data`"
            ) from None

    def prefix(self) -> RlWorkerPrefix:
        try:
            return RlWorkerPrefix.model_validate_json(self.worker_prefix)
        except ValidationError as exc:
            raise ArtifactError(
                f"extra_info.worker_prefix: {describe_errors(exc)}; re-run `make synth`"
            ) from None

    def label(self) -> RlLabels:
        try:
            return RlLabels.model_validate_json(self.labels)
        except ValidationError as exc:
            raise ArtifactError(f"extra_info.labels: {describe_errors(exc)}; re-run `make synth`") from None


class RlPromptRow(BaseModel):
    """One RL prompt in verl's layout (the field order is the parquet's column order)."""

    FORMAT: ClassVar[str] = "stateguard/rl-prompt/1"  # not written: corpus bytes are pinned

    model_config = ConfigDict(extra="forbid", frozen=True)

    data_source: str
    prompt: list[RlMessage] = Field(description="the system message, then the user message")
    ability: str
    reward_model: RlRewardSpec
    extra_info: RlExtraInfo


class PreparedExtraInfo(RlExtraInfo):
    index: int = Field(description="a unique row number; verl groups a prompt's rollouts by it")


class PreparedRlRow(RlPromptRow):
    """A row of training.rl.data's train/val parquet: the prompt plus what verl's agent loop needs."""

    extra_info: PreparedExtraInfo
    agent_name: str

    @classmethod
    def of(cls, row: RlPromptRow, index: int, agent_name: str) -> PreparedRlRow:
        extra = PreparedExtraInfo(**row.extra_info.model_dump(), index=index)
        return cls(**{**dict(row), "extra_info": extra, "agent_name": agent_name})


RL_TRAIN_FILE = "train.parquet"  # training.rl.data's output folder: verl's data.train_files
RL_VAL_FILE = "val.parquet"  # and data.val_files


class RlColumn(StrEnum):
    """Column names for code that reads the parquet columnwise or through verl's dataset (a dict
    per row); each is a field of `RlPromptRow` (tests/test_artifact_names.py checks)."""

    EXTRA_INFO = "extra_info"
    PROMPT = "prompt"
    REWARD_MODEL = "reward_model"


def rl_row_dicts(rows: Sequence[RlPromptRow]) -> list[dict[str, Any]]:
    """The rows as pyarrow receives them (plain values, the model's field order)."""
    return [r.model_dump(mode="json") for r in rows]


def write_rl_prompts(path: str | Path, rows: Sequence[RlPromptRow]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rl_row_dicts(rows)), target)


def read_rl_prompts(path: str | Path) -> list[RlPromptRow]:
    """Every row of an RL prompts parquet; ArtifactError naming the file (and row and field) when it
    is missing or not the layout `write_rl_prompts` writes."""
    import pyarrow.parquet as pq

    source = Path(path)
    if not source.is_file():
        raise ArtifactError(
            f"{source} does not exist: run `make synth` (or `python -m synthesis.pipeline synth=debug "
            "out_dir=...`) first; it writes <out_dir>/corpus/rl/prompts.parquet"
        )
    rows: list[RlPromptRow] = []
    for number, raw in enumerate(pq.read_table(source).to_pylist()):
        try:
            rows.append(RlPromptRow.model_validate(raw))
        except ValidationError as exc:
            raise ArtifactError(
                f"{source} row {number}: not an RlPromptRow ({describe_errors(exc)}); re-run `make synth`"
            ) from None
    return rows
