"""How often the hierarchical manager would ask its model: evidence trigger vs keyword trigger.

Each task's clean variant runs with the `hierarchical` manager twice, once per trigger
(`unverified_requirement`: a requirement semantic verification could not tie to code or data;
`semantic_requirement`: a keyword in the question). The model behind it is a scripted one
(`ConfirmingModel`) that confirms every state it is asked about, so the trajectory is the rules
tier's and the count is the trigger's alone: delegations = model calls when each delegated
decision takes one call. The `llm` manager asks its model at least once per manager activation,
so activations per task is a lower bound on its calls. This is a count, not a quality
measurement: what a real model would say (and how many calls it would spend per delegation) needs
an endpoint.

    python -m eval.perf.delegation                                   # synth, every task (clean runs)
    python -m eval.perf.delegation bench=dev 'task_ids=[agriculture/barley/task1]'
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig
from pydantic import BaseModel

from eval.benchmarks.registry import get_benchmark
from eval.components import make_workspace
from stateguard.policies.hierarchical import HierarchicalManager, Trigger
from stateguard.policies.llm_manager import LLMManager
from stateguard.policies.rules import RulesManager
from stateguard.rollout import rollout
from stateguard.verification.verifier import SemanticVerifier
from stateguard.workers import FaultModel, ScriptedWorker

TRIGGERS: dict[str, tuple[Trigger, ...]] = {
    "evidence": ("unverified_requirement",),
    "keyword": ("semantic_requirement",),
}


class ConfirmingModel:
    """A scripted chat model (no network): every answer is FINALIZE_RELATIONS(confirm)."""

    class _Reply(BaseModel):
        message: dict[str, Any]

    def __init__(self) -> None:
        self.asked: list[str] = []

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kw: Any
    ) -> Any:
        self.asked.append(str(messages[-1].get("content", "")))
        call = {
            "id": f"call_{len(self.asked)}",
            "type": "function",
            "function": {"name": "FINALIZE_RELATIONS", "arguments": json.dumps({"mode": "confirm"})},
        }
        return self._Reply(message={"role": "assistant", "content": "", "tool_calls": [call]})


class Row(BaseModel):
    task: str
    trigger: str
    turns: int
    activations: int
    delegations: int
    model_calls: int
    wall_s: float


def run_one(task: Any, trigger: str, flow: Any, out: Path) -> Row:
    shutil.rmtree(out, ignore_errors=True)
    workspace = make_workspace("sandbox", task.data_dir, out)
    model = ConfirmingModel()
    manager = HierarchicalManager(
        RulesManager(semantic=SemanticVerifier()), LLMManager(model), triggers=TRIGGERS[trigger]
    )
    start = time.perf_counter()
    try:
        result = rollout(
            task.task.agent_view(),
            ScriptedWorker(FaultModel(faults=[]), reference=task.task),
            workspace,
            flow=flow,
            manager=manager,
            run_dir=out,
        )
    finally:
        workspace.close()
    return Row(
        task=task.task_id,
        trigger=trigger,
        turns=len(task.task.turns),
        activations=result.manager_activations,
        delegations=manager.delegations,
        model_calls=len(model.asked),
        wall_s=round(time.perf_counter() - start, 1),
    )


def run(cfg: DictConfig) -> list[Row]:
    bench = get_benchmark(str(cfg.bench))
    tasks = bench.load({"data_dir": cfg.data_dir} if cfg.get("data_dir") else {})
    if cfg.task_ids:
        tasks = [t for t in tasks if t.task_id in set(cfg.task_ids)]
    out = Path(str(cfg.out))
    rows = [
        run_one(t, trig, bench.flow, out / t.task_id.replace("/", "__") / trig)
        for t in tasks
        for trig in TRIGGERS
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "delegation.json").write_text(json.dumps([r.model_dump() for r in rows], indent=1))
    if not cfg.keep_runs:  # the rollouts' checkpoints are large; the counts are in delegation.json
        for t in tasks:
            shutil.rmtree(out / t.task_id.replace("/", "__"), ignore_errors=True)
    return rows


def render(rows: list[Row]) -> str:
    lines = [f"{'task':<34}{'trigger':<10}{'turns':>6}{'activations':>13}{'delegations':>13}{'calls':>7}"]
    for r in rows:
        lines.append(
            f"{r.task:<34}{r.trigger:<10}{r.turns:>6}{r.activations:>13}{r.delegations:>13}{r.model_calls:>7}"
        )
    tasks = max(len({r.task for r in rows}), 1)
    for trig in TRIGGERS:
        mine = [r for r in rows if r.trigger == trig]
        acts, dels = sum(r.activations for r in mine), sum(r.delegations for r in mine)
        lines.append(
            f"{trig}: {dels / tasks:.1f} delegations/task; activations {acts / tasks:.1f}/task "
            f"(a lower bound on the llm manager's calls): {acts / max(dels, 1):.1f}x"
        )
    return "\n".join(lines)


@hydra.main(version_base=None, config_path="../../configs", config_name="perf_delegation")
def main(cfg: DictConfig) -> None:
    print(render(run(cfg)))


if __name__ == "__main__":
    main()
