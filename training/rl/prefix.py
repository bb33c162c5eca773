"""The fixed worker prefix of an RL prompt: which task, which faults, and the teacher that built it.

    spec = PrefixSpec.from_extra_info(extra_info)   # verl's dict of an RlPromptRow's extra_info
    task = load_row_task(tasks_dir, spec.task_id)
    policy = PrefixPolicy(spec)          # drives every activation before spec.decision_point

An RL row (synthesis/export.py rl_prompts()) is one verification decision point of a synthesized
manager trajectory. Its prompt is the manager's view at that point; to let the sampled manager act
there with real tools, the runtime behind the prompt is rebuilt by running the same task under the
same flow with the same scripted worker and faults, and replaying the synthesis teacher itself:
the row carries the teacher's plan (extra_info.worker_prefix.plan, a
`synthesis.teacher.TeacherPlan`), and `PrefixPolicy` is `synthesis.teacher.TeacherPolicy` on that
plan -- one policy for synthesis and replay, so the two cannot drift apart. An `auto` trajectory
decided by the rules manager from its fault turn on replays exactly; one decided by an LLM teacher
cannot be replayed past its fault turn, and such a row is refused with that reason.

The rebuilt runtime is deterministic; `signature()` reduces an observation to what must match the
row (stage, steps and their code, the draft's variables, the committed index), so
`check_prefix()` proves each rollout of a group starts from the prefix its prompt shows. Values are
left out: object reprs, and the sandbox's richer value summaries, differ from run to run.

Task location: a row names its task by extra_info.task_id; the task folder is
<stateguard.tasks_dir>/<task_id>/ with hidden/task.json (turns, reference code) and agent/ (the
data the worker reads), as `make synth` writes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.rl_prompts import RlExtraInfo
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.artifacts.teacher_plan import Variant
from stateguard.flows import FlowConfig
from stateguard.observation import ManagerObservation
from stateguard.policies.base import Activation, ManagerContext
from stateguard.task import Task, load_task
from stateguard.workers.faults import Fault
from stateguard.workers.scripted import ScriptedWorker
from synthesis.teacher import TeacherPlan, TeacherPolicy, flow_named, teacher_worker
from synthesis.teacher.worker import ResistingWorker

__all__ = ["PrefixMismatch", "PrefixPolicy", "PrefixSpec", "check_prefix", "load_row_task", "signature"]

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class PrefixMismatch(RuntimeError):
    """The rebuilt runtime does not show the prefix the row's prompt shows."""


class PrefixSpec(BaseModel):
    """What a row says about its prefix (extra_info of synthesis/export.py)."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    turn: int
    decision_point: int = Field(ge=0, description="Index of the manager activation the rollout samples.")
    variant: Variant
    fault_turn: int | None = None
    faulty_code: str | None = None
    plan: TeacherPlan = Field(description="The synthesis teacher's plan for the whole trajectory.")

    @classmethod
    def from_extra_info(cls, extra_info: Mapping[str, Any]) -> PrefixSpec:
        """The spec of a verl row's `extra_info` (`RlExtraInfo`); ArtifactError naming what is missing."""
        info = RlExtraInfo.from_runtime(extra_info)
        prefix = info.prefix()
        if prefix.plan is None:
            raise ArtifactError(
                "extra_info.worker_prefix has no teacher plan: the parquet was written before the shared "
                "teacher (synthesis.teacher); re-run `make synth` and `python -m training.rl.data`"
            )
        return cls(
            task_id=info.task_id,
            turn=info.turn,
            decision_point=info.decision_point,
            variant=info.variant,
            fault_turn=prefix.fault_turn,
            faulty_code=prefix.faulty_code,
            plan=TeacherPlan.model_validate(prefix.plan),
        )

    @property
    def flow(self) -> FlowConfig:
        return flow_named(self.plan.flow)

    def faults(self) -> list[Fault]:
        if self.fault_turn is None or not self.faulty_code:
            return []
        return [Fault(kind="counterfactual", turn=self.fault_turn, code=self.faulty_code)]

    def worker(self, task: Task) -> ScriptedWorker | ResistingWorker:
        """The worker the synthesis ran on `task` (its reference): same faults, response model, resistance."""
        return teacher_worker(self.faults(), self.plan.resist, reference=task)


def load_row_task(tasks_dir: str | Path, task_id: str) -> Task:
    """The built task <tasks_dir>/<task_id>/ as the worker sees it (data under agent/)."""
    folder = TaskFolder(Path(tasks_dir) / task_id)
    if not folder.task.is_file():
        raise FileNotFoundError(
            f"task {task_id!r} not found: {folder.task} does not exist. Set "
            "stateguard.tasks_dir to the `make synth` output folder that holds the task folders "
            "(the RL parquet names them by task_id)"
        )
    return load_task(folder.hidden, task_id=task_id, base_path=str(folder.agent.resolve()))


class PrefixPolicy:
    """The synthesis teacher on the row's plan, for the activations before the decision point."""

    name = "prefix"

    def __init__(self, spec: PrefixSpec):
        self.spec = spec
        self.teacher = TeacherPolicy(spec.plan)

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        turn = ctx.turn.turn_id if ctx.turn is not None else None
        plan = self.spec.plan
        if (
            plan.variant == "auto"
            and plan.live != "rules"
            and plan.fault_turn is not None
            and (turn or 0) >= plan.fault_turn
        ):
            raise PrefixMismatch(
                f"{self.spec.task_id} turn {turn}: this auto trajectory was decided by the {plan.live} teacher from "
                f"turn {plan.fault_turn} on, which cannot be replayed; train on rows before that turn or on "
                "rules-teacher rows"
            )
        yield from self.teacher.activate(obs, ctx)


def signature(observation: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of an observation that identify the prefix (no values, no outputs)."""
    draft = observation.get("current_draft") or {}
    index = observation.get("committed_state_index") or []
    return {
        "event_type": observation.get("event_type"),
        "stage": observation.get("stage"),
        "available_state_id": observation.get("available_state_id"),
        "legal_control_actions": observation.get("legal_control_actions"),
        "pending": [observation.get("pending_start_step"), observation.get("pending_end_step")],
        "steps": [
            (s.get("index"), _ADDRESS.sub("0x", str(s.get("action"))))
            for s in observation.get("untraced_steps") or []
        ],
        "draft": draft.get("id"),
        "variables": [(v.get("name"), v.get("version")) for v in draft.get("used_variables") or []],
        "committed": [s.get("id") if isinstance(s, Mapping) else s for s in index],
    }


def prompt_observation(prompt: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The observation JSON inside a row's prompt (the user message after 'OBSERVATION')."""
    for message in reversed(prompt):
        content = str(message.get("content") or "")
        if message.get("role") == "user" and "OBSERVATION\n" in content:
            return json.loads(content.split("OBSERVATION\n", 1)[1])
    raise ValueError("the row's prompt has no user message with an OBSERVATION block; re-run `make synth`")


def check_prefix(live: ManagerObservation, prompt: Sequence[Mapping[str, Any]], where: str) -> None:
    """Raise PrefixMismatch (naming the first differing field) unless the rebuilt view matches the row."""
    got = signature(live.model_dump(mode="json", exclude={"schema_version"}))
    want = signature(prompt_observation(prompt))
    diff = [k for k in want if got.get(k) != want[k]]
    if diff:
        key = diff[0]
        raise PrefixMismatch(
            f"{where}: the rebuilt runtime differs from the row's prompt in {diff} "
            f"(rebuilt {key}={got.get(key)!r}, row {key}={want[key]!r}). "
            "The task folder under stateguard.tasks_dir "
            "must be the one `make synth` built this parquet from; set stateguard.prefix_check=false to skip"
        )
