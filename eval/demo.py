"""Built-in demo of the StateGuard runtime — what `make eval` runs until the eval issue lands.

A five-turn sales analysis in which turn 4 revises how revenue is defined and turn 5 reuses a
margin computed under the old definition (the paper's headline failure: a stale artifact).
The same scripted worker runs twice over an in-process workspace: once with the harness only
(baseline) and once with a scripted demo manager that drives the real harness: it opens,
updates, finalizes and commits one state per turn, and answers a stale read with REPAIR.
Nothing here is an LLM; the sandboxed workspace and the real rollout loop come with issue 3.

    python -m eval.demo                     # or: make eval
    python -m eval.demo run_dir=runs/demo2 repair_budget=1
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig
from pydantic import BaseModel

from stateguard import DictWorkspace, EventType, Harness, HarnessConfig, StateStore, Trace, WorkerStep
from stateguard.tools import inspect_python

DATA = "orders = [120.0, 80.0, 200.0, 100.0]\nrefunds = 50.0\ncogs_rate = 0.6\n"
TURNS: list[dict[str, Any]] = [
    {"question": "Total revenue?", "code": "revenue = sum(orders)", "answer": "revenue"},
    {"question": "Gross margin at the COGS rate?", "code": "margin = revenue * (1 - cogs_rate)", "answer": "margin"},
    {"question": "Margin ratio, 3 decimals?", "code": "ratio = round(margin / revenue, 3)", "answer": "ratio"},
    {"question": "Revise: revenue must exclude refunds.", "code": "revenue = sum(orders) - refunds",
     "answer": "revenue", "invalidates": 1},
    {"question": "Margin per order under the revised revenue?", "code": "per_order = margin / len(orders)",
     "answer": "per_order", "fix": "margin = revenue * (1 - cogs_rate)\nper_order = margin / len(orders)"},
]  # fmt: skip
EXPECTED = [500.0, 200.0, 0.4, 450.0, 45.0]


class DemoResult(BaseModel):
    run_dir: str
    baseline: list[float]
    stateguard: list[float]
    expected: list[float]
    repairs: int
    stale_states: list[str]


def _run_arm(cfg: DictConfig, with_manager: bool, run_dir: Path) -> tuple[list[float], int, list[str]]:
    ws = DictWorkspace()
    ws.run(DATA)
    store = StateStore(run_dir / "states.sqlite")
    trace = Trace(run_dir / "trace.jsonl")
    harness = Harness(
        store,
        HarnessConfig(regime=cfg.regime, repair_budget=cfg.repair_budget, context_budget_tokens=cfg.context_budget_tokens),
        trace=trace,
        workspace=ws,
    )
    answers, step, repairs = [], 0, 0

    def work(code: str, turn: int) -> None:
        nonlocal step
        ws.run(code)
        harness.record_step(WorkerStep(index=step, turn=turn, action=code, output="ok"))
        step += 1

    for k, turn in enumerate(TURNS, 1):
        if not with_manager:
            work(turn["code"], k)
            answers.append(float(ws.namespace[turn["answer"]]))
            continue
        harness.begin_review(EventType.TURN_START)
        rel = {"related_state_id": f"S{turn['invalidates']}", "type": "invalidate"} if "invalidates" in turn else None
        upstream = [rel] if rel else ([{"related_state_id": store.latest_id()}] if store.latest_id() else [])
        harness.apply(("OPEN_STATE", {"issue": turn["question"], "relations": upstream}))
        harness.take_hints()
        work(turn["code"], k)
        while True:
            harness.begin_review(EventType.TURN_END, terminal=k == len(TURNS))
            shape = inspect_python(turn["code"] if harness.repair_attempts == 0 else turn["fix"])
            used = [{"name": n, "version": (store.current_version(n) or "").split("@")[-1] or None,
                     "value": ws.namespace.get(n)} for n in shape["reads"]
                    if store.current_version(n) and n not in shape["writes"]]
            used += [{"name": n, "value": ws.namespace.get(n)} for n in shape["writes"]]
            harness.apply(("UPDATE_STATE", {"used_variables": used, "conclusions": [f"{turn['answer']} computed"]}))
            stale = [u["name"] for u in used if u.get("version") and store.is_invalid(f"{u['name']}@{u['version']}")]
            if not stale:
                break
            result = harness.apply(("REPAIR", {
                "analytical_evidence": f"{', '.join(stale)} come from states invalidated by a later revision",
                "error_hint": {"error_variables": stale,
                               "faulty_reasoning": "these values were derived before the revenue definition was revised"},
            }))  # fmt: skip
            if not result.accepted:  # budget exhausted: give the state up
                harness.apply(("ABANDON_STATE", {}))
                break
            repairs += 1
            if "fix" in turn:  # the scripted worker recomputes what the hint names
                work(turn["fix"], k)
        if harness.draft is not None:
            harness.apply(("FINALIZE_RELATIONS", {"mode": "confirm"}))
            harness.apply(("COMMIT_STATE", {}))
        answers.append(float(ws.namespace[turn["answer"]]))
    harness.finish()
    stale_states = store.invalid_states()
    trace.close()
    store.close()
    return answers, repairs, stale_states


def run(cfg: DictConfig) -> DemoResult:
    run_dir = Path(cfg.run_dir)
    baseline, _, _ = _run_arm(cfg, False, run_dir / "baseline")
    guarded, repairs, stale = _run_arm(cfg, True, run_dir / "stateguard")
    return DemoResult(run_dir=str(run_dir), baseline=baseline, stateguard=guarded, expected=EXPECTED,
                      repairs=repairs, stale_states=stale)  # fmt: skip


def render(result: DemoResult) -> str:
    lines = ["StateGuard runtime demo (built-in; the benchmark evaluation arrives with the eval issue)", "",
             f"{'turn':<5}{'expected':>10}{'baseline':>10}{'+StateGuard':>13}"]  # fmt: skip
    for i, (e, b, s) in enumerate(zip(result.expected, result.baseline, result.stateguard, strict=True), 1):
        lines.append(f"{i:<5}{e:>10g}{b:>9g}{' ' if b == e else 'x'}{s:>12g}{' ' if s == e else 'x'}")
    lines += ["", f"repairs issued: {result.repairs}; stale committed states: {', '.join(result.stale_states)}",
              f"traces and stores: {result.run_dir}/{{baseline,stateguard}}/"]  # fmt: skip
    return "\n".join(lines)


@hydra.main(version_base=None, config_path="../configs", config_name="demo")
def main(cfg: DictConfig) -> None:
    print(render(run(cfg)))


if __name__ == "__main__":
    main()
