"""Worker mistakes that ship with a benchmark task: genuine counterfactuals that contaminate.

    plan = plan_worker_faults(task_root, seed=0)     # -> hidden/faults.json

The offline benchmark runs a scripted worker; for its baseline to show dependency contamination
(and StateGuard a chance to stop it), the task must say which mistakes the worker makes. This
module picks them at build time: for candidate stages that have downstream dependents, it takes
single-site interventions (`synthesis.interventions`), reruns the task with θ' in place of θ and
keeps an intervention only when it is *genuine at the answer level*: the turn's own answer
changes and so does the answer of at least one later turn (its contamination). One fault is a
numeric parameter (a stated cut-off the worker got wrong); the other, when there is one, is of a
different kind. The choice is seeded, so the file is part of the frozen benchmark's bytes.

`hidden/faults.json`: [{turn, stage, kind, operation, description, code, contaminates: [turns]}],
where `code` is the complete faulty program of the turn (what `Fault(kind="counterfactual")`
takes). Hidden: the agent never sees it.
"""

from __future__ import annotations

import random
from pathlib import Path

from stateguard.artifacts.faults import ShippedFault, save_shipped_faults
from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.mistakes import InterventionKind
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.task import load_task
from synthesis.interventions import candidate_interventions
from synthesis.replay import run_turns

__all__ = ["plan_worker_faults"]


def plan_worker_faults(task_root: str | Path, *, seed: int, n: int = 2, tries: int = 8) -> list[ShippedFault]:
    """Choose up to `n` contaminating worker faults for a built task and write hidden/faults.json."""
    root = Path(task_root)
    folder = TaskFolder(root)
    turns = load_task(folder.hidden, task_id=root.name).turns
    graph = load_graph(folder)
    codes = [t.code for t in turns]
    reference = [t.answer for t in turns]
    children: dict[str, list[int]] = {}
    for stage in graph.stages:
        for dep in stage.deps:
            children.setdefault(dep, []).append(stage.turn_id)
    rng = random.Random(f"faults:{root.name}:{seed}")
    candidates = []
    for stage in graph.stages:
        turn = stage.turn_id
        if not children.get(stage.name) or codes[turn - 1].count(stage.sql) != 1 or stage.role != "thread":
            continue
        for new_sql, record in candidate_interventions(stage.sql, rng, stage=stage.name):
            candidates.append((turn, stage, new_sql, record))
    rng.shuffle(candidates)
    # A numeric parameter first (a cut-off the question states), then other kinds.
    candidates.sort(key=lambda c: c[3].kind is not InterventionKind.NUMERIC_PARAMETER)
    chosen: list[ShippedFault] = []
    used_turns: set[int] = set()
    attempts = 0
    for turn, stage, new_sql, record in candidates:
        if len(chosen) >= n or attempts >= tries:
            break
        kinds = {c.kind for c in chosen}
        if turn in used_turns or record.kind.value in kinds:
            continue
        attempts += 1
        faulty = codes[turn - 1].replace(stage.sql, new_sql)

        def same_answer(turn_id: int, _namespace: object, answer: object, turn: int = turn) -> bool:
            return turn_id == turn and answer == reference[turn - 1]  # rejected: stop here

        try:
            answers = run_turns([*codes[: turn - 1], faulty, *codes[turn:]], folder.agent, same_answer)
        except Exception:  # noqa: BLE001 - a θ' that breaks the program is not a quiet contamination
            continue
        if len(answers) < len(codes) or answers[turn - 1] == reference[turn - 1]:
            continue  # θ' leaves its own turn's answer as it was (the later turns were not run)
        contaminated = [i + 1 for i in range(turn, len(codes)) if answers[i] != reference[i]]
        if not contaminated:
            continue
        chosen.append(
            ShippedFault(
                turn=turn,
                stage=stage.name,
                kind=record.kind.value,
                operation=record.operation,
                description=record.description,
                code=faulty,
                contaminates=contaminated,
            )
        )
        used_turns.add(turn)
    chosen.sort(key=lambda c: c.turn)
    save_shipped_faults(folder.faults, chosen)
    return chosen
