"""The information boundary: workers and managers get the agent view, never reference code or answers.

Two checks. Statically, no agent-side module (worker adapters other than the scripted one,
manager policies and their verification, the harness, the rollout loop) imports the privileged `Task`/`Turn`, so mypy
refuses any `.code`/`.answer` they might reach for. At run time, a rollout hands a spy worker
and a spy manager objects without those fields, even when an untyped caller passes the
privileged task. Run: `python -m pytest -q tests/stateguard/test_agent_view.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from stateguard.actions import AbstainArgs, Action
from stateguard.flows import LONGDS
from stateguard.observation import ManagerObservation, WorkerStep
from stateguard.policies.base import Activation, ManagerContext
from stateguard.rollout import rollout
from stateguard.task import AgentTask, AgentTurn, Task, Turn, load_task
from stateguard.worker_contract import WorkerMessage
from stateguard.workers import ScriptedWorker
from stateguard.workspace import DictWorkspace, LiveWorkspace

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("code", "answer")
PRIVILEGED = {"Task", "Turn"}
# Modules that may name the privileged types: the scripted worker replays the reference and the
# static fault check reads it (both run only where a benchmark ships reference code).
# The scripted worker replays the privileged task; the worker registry hands it to that factory only.
ALLOWED = {"stateguard/workers/scripted.py", "stateguard/workers/faults.py", "stateguard/workers/registry.py"}


def agent_side() -> Iterator[Path]:
    yield ROOT / "stateguard" / "worker_contract.py"
    yield ROOT / "stateguard" / "harness.py"
    yield ROOT / "stateguard" / "rollout.py"
    yield from sorted((ROOT / "stateguard" / "workers").glob("*.py"))
    yield from sorted((ROOT / "stateguard" / "policies").glob("*.py"))
    yield from sorted((ROOT / "stateguard" / "verification").glob("*.py"))  # the rules tier's semantic checks
    yield ROOT / "synthesis" / "teacher" / "policy.py"  # the synthesis manager


def privileged_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "stateguard.task":
            names |= {a.name for a in node.names} & PRIVILEGED
        elif isinstance(node, ast.Attribute) and node.attr in PRIVILEGED and isinstance(node.value, ast.Name):
            names.add(f"{node.value.id}.{node.attr}")  # e.g. `task_module.Task`
    return names


def test_no_agent_side_module_names_the_privileged_task() -> None:
    modules = list(agent_side())
    assert len(modules) > 10  # the globs found the packages
    leaks = {str(p.relative_to(ROOT)): sorted(privileged_imports(p)) for p in modules}
    leaks = {k: v for k, v in leaks.items() if v and k not in ALLOWED}
    assert leaks == {}, (
        f"agent-side modules import the privileged task type: {leaks}; type them against AgentTask"
    )
    assert privileged_imports(ROOT / "stateguard" / "workers" / "scripted.py") == {
        "Task",
        "Turn",
    }  # the check sees imports


def test_the_agent_types_have_no_hidden_fields() -> None:
    for model in (AgentTask, AgentTurn):
        assert not set(model.model_fields) & set(HIDDEN)
    with pytest.raises(ValidationError):
        AgentTurn.model_validate({"turn_id": 1, "question": "q", "code": "x = 1", "answer": {"x": 1}})
    turn = Turn.model_validate(
        {
            "turn_id": 2,
            "context": "c",
            "question": "q",
            "code": "x = 1",
            "answer": {"x": 1},
            "note": "an extra field of task.json",
        }
    )
    view = turn.agent_view()
    assert view.model_dump() == {"turn_id": 2, "context": "c", "question": "q", "visible": {}}
    assert view.prompt() == turn.prompt() == "c\n\nq"


class SpyWorker:
    """Forwards to the scripted worker and records every object the rollout hands it."""

    def __init__(self, inner: ScriptedWorker):
        self.inner = inner
        self.seen: list[Any] = []

    def start(self, task: AgentTask, workspace: LiveWorkspace) -> None:
        self.seen.append(task)
        self.inner.start(task, workspace)

    def inject(self, message: WorkerMessage) -> None:
        self.seen.append(message.turn)
        self.inner.inject(message)

    def step(self, index: int) -> WorkerStep | None:
        return self.inner.step(index)

    def snapshot(self) -> Any:
        return self.inner.snapshot()

    def restore(self, token: Any) -> None:
        self.inner.restore(token)

    def done(self) -> bool:
        return self.inner.done()

    def final_answer(self) -> dict[int, Any]:
        return self.inner.final_answer()


class SpyManager:
    name = "spy"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def activate(self, obs: ManagerObservation, ctx: ManagerContext) -> Activation:
        self.seen += [ctx.task, ctx.turn, *ctx.task.turns]
        yield Action.of(AbstainArgs())


def _reaches_hidden(obj: Any) -> bool:
    return any(hasattr(obj, field) for field in HIDDEN)


@pytest.mark.parametrize("given", ["privileged", "view"])
def test_a_rollout_hands_workers_and_managers_only_the_agent_view(given: str, tmp_path: Path) -> None:
    task: Task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    worker, manager = SpyWorker(ScriptedWorker(reference=task)), SpyManager()
    # An untyped caller may pass the privileged task: the rollout strips it on entry.
    arg: Any = task if given == "privileged" else task.agent_view()
    result = rollout(arg, worker, DictWorkspace(), flow=LONGDS, manager=manager, run_dir=tmp_path)
    assert result.answers == {t.turn_id: t.answer for t in task.turns}  # the scripted worker still replays
    objects = [o for o in worker.seen + manager.seen if o is not None]
    assert isinstance(worker.seen[0], AgentTask) and len(manager.seen) > len(task.turns)
    assert [o for o in objects if _reaches_hidden(o)] == []
    assert all(isinstance(o, AgentTask | AgentTurn) for o in objects)


def test_the_scripted_worker_needs_its_reference_by_name() -> None:
    task = load_task(ROOT / "eval" / "benchmarks" / "demo" / "six_turn")
    with pytest.raises(ValueError, match=r"ScriptedWorker\(\.\.\., reference=task\)"):
        ScriptedWorker().start(task.agent_view(), DictWorkspace())
    other = Task(task_id="other", turns=[Turn(turn_id=1, question="q", code="x = 1", answer={"x": 1})])
    with pytest.raises(ValueError, match="build one worker per task"):
        ScriptedWorker(reference=other).start(task.agent_view(), DictWorkspace())
