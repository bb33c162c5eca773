"""The six-turn offline demo (`make demo`): one hand-written task, per-turn side by side.

The six-turn task of `eval/benchmarks/demo/six_turn` (turn 4 revises how revenue is defined;
turn 5 needs the margin under the new definition) runs in both arms with the same scripted
worker and fault model: Baseline = Worker + Harness, StateGuard = Worker + Harness + the
deterministic `rules` manager. It prints per-turn correctness side by side.

    python -m eval.demo                               # or: make demo
    python -m eval.demo flow=segment workspace=dict 'faults=[{kind: exec_error, turn: 3}]'
    STATEGUARD_MANAGER_BASE_URL=http://127.0.0.1:8765/v1 STATEGUARD_MANAGER_MODEL=local \
        python -m eval.demo manager=hierarchical        # rules first, the model where rules cannot decide
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, Field

from eval.components import (
    MANAGERS,
    WORKERS,
    WORKSPACES,
    endpoint_settings,
    llm_settings,
    make_manager,
    make_worker,
    make_workspace,
    quiet_http_logs,
)
from eval.scorers.fields import per_turn_correct
from stateguard.artifacts.run_folder import RolloutFolder
from stateguard.flows import LONGDS, FlowConfig
from stateguard.policies.base import ManagerPolicy
from stateguard.rollout import RolloutResult, rollout
from stateguard.task import Task, load_task
from stateguard.trace import Trace
from stateguard.worker_contract import WorkerAdapter
from stateguard.workspace import LiveWorkspace


class DemoResult(BaseModel):
    run_dir: str
    questions: dict[int, str]
    baseline: dict[int, bool]
    stateguard: dict[int, bool]
    repairs: int
    committed_states: list[str]
    stale_states: list[str]
    workspace: str
    worker: str = "scripted"
    manager: str = "rules"
    manager_calls: int = 0
    manager_fallbacks: int = 0
    manager_usage: dict[str, int | float] = Field(default_factory=dict)
    answers: dict[str, dict[int, Any]] = Field(
        default_factory=dict, description="arm -> turn -> the answer as parsed (None: none given)"
    )
    degraded_turns: dict[str, dict[int, str]] = Field(
        default_factory=dict, description="arm -> turns in which no worker code ran, with why"
    )
    worker_model_s: dict[str, float] = Field(
        default_factory=dict, description="arm -> the LLM worker's model seconds (worker=llm only)"
    )


def _flow(cfg: DictConfig) -> FlowConfig:
    if cfg.flow == "turn_aligned":
        return LONGDS
    if cfg.flow == "segment":
        return FlowConfig(
            name="demo-segment",
            regime="segment_induced",
            review_every=cfg.review_every,
            budget_unit="task",
            baseline_budget=200,
            stateguard_budget=200,
        )
    raise ValueError(f"flow={cfg.flow!r}: use 'turn_aligned' or 'segment'")


def _workspace(cfg: DictConfig, task_dir: Path, arm_dir: Path) -> LiveWorkspace:
    sandbox: Any = OmegaConf.to_container(cfg.get("sandbox") or {}, resolve=True)
    return make_workspace(str(cfg.workspace), task_dir / "data", arm_dir, sandbox)


def _manager(cfg: DictConfig, trace: Trace) -> ManagerPolicy:
    llm: Any = OmegaConf.to_container(cfg.llm, resolve=True) if cfg.get("llm") else None
    semantic: Any = (
        OmegaConf.to_container(cfg.semantic, resolve=True) if cfg.get("semantic") is not None else None
    )
    return make_manager(
        str(cfg.manager),
        trace=trace,
        context_budget_tokens=cfg.harness.context_budget_tokens,
        llm=llm,
        semantic=semantic,
    )


def _worker(cfg: DictConfig, trace: Trace, task: Task) -> WorkerAdapter:
    faults: Any = OmegaConf.to_container(cfg.faults, resolve=True)
    endpoint: Any = OmegaConf.to_container(cfg.worker_llm, resolve=True) if cfg.get("worker_llm") else None
    response: Any = OmegaConf.to_container(cfg.response, resolve=True) if "response" in cfg else None
    return make_worker(
        str(cfg.worker),
        trace=trace,
        faults=faults,
        seed=cfg.seed,
        response=response,
        endpoint=endpoint,
        reference=task,
    )


def _arm(cfg: DictConfig, task: Task, task_dir: Path, arm: str) -> tuple[RolloutResult, float | None]:
    """The arm's result, and its LLM worker's model seconds (None for the scripted worker)."""
    arm_dir = Path(cfg.run_dir) / arm
    calls = Trace(RolloutFolder(arm_dir).llm_calls)  # model calls of both roles, with token counts
    workspace = _workspace(cfg, task_dir, arm_dir)
    worker = _worker(cfg, calls, task)
    try:
        result = rollout(
            task.agent_view(),
            worker,
            workspace,
            flow=_flow(cfg),
            manager=_manager(cfg, calls) if arm == "stateguard" else None,
            run_dir=arm_dir,
            harness_config=dict(cfg.harness),
            arm=arm,
        )
        return result, getattr(worker, "model_s", None)
    finally:
        workspace.close()
        calls.close()


def _check(cfg: DictConfig) -> Path:
    """Start-up checks: option values, the `llm:` / `worker_llm:` blocks, the task folder and its
    data folder (the sandbox mounts it; a missing one would make every turn fail and the demo report 0%)."""
    for key, allowed in (
        ("workspace", WORKSPACES),
        ("worker", WORKERS),
        ("manager", MANAGERS),
        ("flow", ("turn_aligned", "segment")),
    ):
        if str(cfg[key]) not in allowed:
            raise ValueError(f"{key}={cfg[key]!r}: use one of {', '.join(allowed)}")
    if not isinstance(cfg.review_every, int) or cfg.review_every < 1:
        raise ValueError(f"review_every={cfg.review_every!r}: use a whole number of worker steps >= 1")
    llm_settings(OmegaConf.to_container(cfg.llm, resolve=True) if cfg.get("llm") else None)  # type: ignore[arg-type]
    endpoint_settings(OmegaConf.to_container(cfg.worker_llm, resolve=True) if cfg.get("worker_llm") else None)  # type: ignore[arg-type]
    task_dir = Path(cfg.task_dir).resolve()
    data = task_dir / "data"
    if not data.is_dir() or not any(data.iterdir()):
        raise FileNotFoundError(
            f"{data}: the task's data folder is {'empty' if data.is_dir() else 'missing'}; "
            f"task_dir={cfg.task_dir} must hold task.json and data/ (the shipped one is "
            "eval/benchmarks/demo/six_turn)"
        )
    return task_dir


def run(cfg: DictConfig) -> DemoResult:
    task_dir = _check(cfg)
    task = load_task(task_dir)
    expected = {t.turn_id: t.answer for t in task.turns}
    base, base_s = _arm(cfg, task, task_dir, "baseline")
    guard, guard_s = _arm(cfg, task, task_dir, "stateguard")
    model_s = {arm: s for arm, s in (("baseline", base_s), ("stateguard", guard_s)) if s is not None}
    return DemoResult(
        run_dir=str(cfg.run_dir),
        questions={t.turn_id: t.question for t in task.turns},
        baseline=per_turn_correct(expected, base.answers),
        stateguard=per_turn_correct(expected, guard.answers),
        repairs=guard.repairs,
        committed_states=guard.committed_states,
        stale_states=guard.stale_states,
        workspace=str(cfg.workspace),
        worker=str(cfg.worker),
        manager=str(cfg.manager),
        manager_calls=guard.manager_llm_calls,
        manager_fallbacks=guard.manager_fallbacks,
        manager_usage=guard.manager_usage,
        answers={
            "baseline": {t: base.answers.get(t) for t in expected},
            "stateguard": {t: guard.answers.get(t) for t in expected},
        },
        degraded_turns={"baseline": base.degraded_turns, "stateguard": guard.degraded_turns},
        worker_model_s={k: round(v, 1) for k, v in model_s.items()},
    )


def render(result: DemoResult) -> str:
    mark = {True: "ok", False: "WRONG"}
    lines = [
        f"StateGuard six-turn demo ({result.worker} worker + {result.manager} manager; the benchmark run is "
        "`make eval`)",
        "",
        f"{'turn':<5}{'baseline':<10}{'+StateGuard':<13}question",
    ]
    for turn, question in result.questions.items():
        short = question if len(question) <= 70 else question[:67] + "..."
        lines.append(f"{turn:<5}{mark[result.baseline[turn]]:<10}{mark[result.stateguard[turn]]:<13}{short}")
    acc = {
        arm: sum(v.values()) / len(v)
        for arm, v in (("baseline", result.baseline), ("stateguard", result.stateguard))
    }
    lines += [
        "",
        f"accuracy: baseline {acc['baseline']:.0%}, +StateGuard {acc['stateguard']:.0%}; repairs issued: {result.repairs}",
        f"committed states: {len(result.committed_states)}; stale after revisions: {', '.join(result.stale_states) or 'none'}",
        f"workspace: {result.workspace}; traces, stores and results: {result.run_dir}/{{baseline,stateguard}}/",
    ]
    turns = len(result.questions)
    if result.answers:
        parsed = {
            arm: sum(isinstance(a, dict) for a in answers.values()) for arm, answers in result.answers.items()
        }
        lines.append(
            f"answers parsed (a dict of fields): baseline {parsed.get('baseline', 0)}/{turns}, "
            f"+StateGuard {parsed.get('stateguard', 0)}/{turns}"
        )
    if result.worker != "scripted" and result.answers:  # a model's own answers are worth seeing
        lines.append("answers as parsed (baseline | +StateGuard):")
        for turn in result.questions:
            shown = [_short(result.answers.get(arm, {}).get(turn)) for arm in ("baseline", "stateguard")]
            lines.append(f"  turn {turn}: {shown[0]} | {shown[1]}")
    for arm, seconds in result.worker_model_s.items():
        lines.append(f"worker model time, {arm}: {seconds:.0f} s ({seconds / max(turns, 1):.0f} s per turn)")
    for arm, degraded in result.degraded_turns.items():
        if degraded:
            lines.append(
                f"WARNING: {arm}: {len(degraded)} of {turns} turns ran no worker code, so their answers rest on "
                f"nothing executed: " + "; ".join(f"turn {t} {why}" for t, why in sorted(degraded.items()))
            )
    usage = result.manager_usage
    if usage:
        lines.append(
            f"model: {result.manager_calls} real completions ({usage.get('constrained_completions', 0)} constrained), "
            f"{usage.get('rejected_for_size', 0) + usage.get('rejected_requests', 0)} refused and "
            f"{usage.get('failed_requests', 0)} failed requests; {usage.get('valid_actions', 0)} answers parsed into "
            f"an offered action, {usage.get('parse_failures', 0) + usage.get('illegal_actions', 0)} did not; "
            f"{usage.get('forced_actions', 0)} forced COMMIT_STATE"
        )
    if result.manager_fallbacks:
        lines.append(
            f"WARNING: {result.manager_fallbacks} of {usage.get('activations', 0) or 'the'} model activations "
            "ended in a fallback, not a decision of the manager; see `manager_fallback` in "
            f"{RolloutFolder(Path(result.run_dir) / 'stateguard').trace}"
        )
    return "\n".join(lines)


def _short(answer: Any, width: int = 58) -> str:
    text = "none" if answer is None else json.dumps(answer, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def run_cli(cfg: DictConfig) -> int:
    """`python -m eval.demo`: the table, or one error line and exit status 2 for bad input."""
    try:
        load_task(_check(cfg))  # the input checks only: an error inside the run keeps its traceback
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(run(cfg)))
    return 0


@hydra.main(version_base=None, config_path="../configs", config_name="demo")
def main(cfg: DictConfig) -> None:
    quiet_http_logs()
    sys.exit(run_cli(cfg))


if __name__ == "__main__":
    main()
