"""RL data preparation: the synthesized RL prompts as verl train/val parquet for the agent loop.

    python -m training.rl.data runs/synth/corpus/rl/prompts.parquet runs/rl/data [--val-fraction 0.05]

Input: the parquet of synthesis/export.py rl_prompts() (`make synth`), one `RlPromptRow` per verification
decision point: data_source, prompt (system + user messages), ability, reward_model.ground_truth,
extra_info (task_id, turn, decision_point, variant, worker_prefix JSON, labels JSON).

What this adds for verl and for training/rl/agent_loop.py:
* `agent_name`: the registered agent loop that runs the row (verl's AgentLoopWorker reads it);
* `extra_info.index`: a unique row number (verl groups a prompt's rollouts by it in traces);
* duplicates dropped: rows before the fault turn of different variants are the same prompt;
* a split by whole tasks (`val_fraction` of the task ids, seeded), so no task is in both files.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import re
from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.rl_prompts import (
    RL_TRAIN_FILE,
    RL_VAL_FILE,
    PreparedRlRow,
    RlPromptRow,
    read_rl_prompts,
    write_rl_prompts,
)

__all__ = ["PrepStats", "load_prompts", "main", "prepare", "prepare_rows", "split_by_task"]

log = logging.getLogger(__name__)
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


class PrepStats(BaseModel):
    rows_in: int
    duplicates: int
    train_rows: int
    val_rows: int
    train_tasks: list[str]
    val_tasks: list[str]
    inconsistent_points: int  # rows with g=1 (an inconsistency to repair)
    train_path: str
    val_path: str


def load_prompts(path: str | Path) -> list[RlPromptRow]:
    """Read the synthesized RL parquet as typed rows (ArtifactError naming the file, row and field,
    and what to re-run) and check each prompt is a system then a user message."""
    rows = read_rl_prompts(path)
    for i, row in enumerate(rows):
        roles = [m.role for m in row.prompt]
        if roles[:1] != ["system"] or "user" not in roles:
            raise ArtifactError(
                f"{path}: row {i} prompt roles are {roles}; expected a system then a user message"
            )
    return rows


def _key(row: RlPromptRow) -> str:
    """Two rows are the same prompt when task, decision point, prompt text and labels agree."""
    extra = row.extra_info
    text = _ADDRESS.sub("0x", json.dumps([m.model_dump() for m in row.prompt], sort_keys=True, default=str))
    return json.dumps(
        [extra.task_id, extra.turn, extra.decision_point, text, row.reward_model.ground_truth, extra.labels]
    )


def prepare_rows(rows: list[RlPromptRow], agent_name: str) -> tuple[list[PreparedRlRow], int]:
    """Rows with agent_name and extra_info.index; duplicates dropped. The prefix replay needs nothing
    else: each row carries the synthesis teacher's plan (extra_info.worker_prefix)."""
    seen: set[str] = set()
    out: list[PreparedRlRow] = []
    for row in rows:
        key = _key(row)
        if key in seen:
            continue
        seen.add(key)
        out.append(PreparedRlRow.of(row, index=len(out), agent_name=agent_name))
    return out, len(rows) - len(out)


def split_by_task(task_ids: list[str], val_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """(train task ids, val task ids): whole tasks, seeded; one task only -> it is both."""
    tasks = sorted(set(task_ids))
    if len(tasks) < 2 or val_fraction <= 0:
        return tasks, tasks
    n_val = min(len(tasks) - 1, max(1, math.ceil(val_fraction * len(tasks))))
    val = sorted(random.Random(f"rl-split:{seed}").sample(tasks, n_val))
    return [t for t in tasks if t not in val], val


def prepare(
    prompts: str | Path,
    out_dir: str | Path,
    *,
    val_fraction: float = 0.05,
    seed: int = 0,
    agent_name: str = "stateguard_manager",
) -> PrepStats:
    """Read, validate, augment and split the RL prompts; writes <out_dir>/{train,val}.parquet."""
    rows, duplicates = prepare_rows(load_prompts(prompts), agent_name)
    train_tasks, val_tasks = split_by_task([r.extra_info.task_id for r in rows], val_fraction, seed)
    train = [r for r in rows if r.extra_info.task_id in train_tasks]
    val = [r for r in rows if r.extra_info.task_id in val_tasks]
    if train_tasks == val_tasks:
        log.warning("only %d task(s): validation reuses the training rows", len(train_tasks))
    out = Path(out_dir)
    write_rl_prompts(out / RL_TRAIN_FILE, train)
    write_rl_prompts(out / RL_VAL_FILE, val)
    g = Counter(r.extra_info.label().g for r in rows)
    return PrepStats(
        rows_in=len(rows) + duplicates,
        duplicates=duplicates,
        train_rows=len(train),
        val_rows=len(val),
        train_tasks=train_tasks,
        val_tasks=val_tasks,
        inconsistent_points=g.get(1, 0),
        train_path=str(out / RL_TRAIN_FILE),
        val_path=str(out / RL_VAL_FILE),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Prepare verl train/val parquet from the synthesized RL prompts."
    )
    parser.add_argument("prompts", help="<synth out_dir>/corpus/rl/prompts.parquet")
    parser.add_argument("out_dir", help="folder for train.parquet and val.parquet")
    parser.add_argument("--val-fraction", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agent-name", default="stateguard_manager")
    args = parser.parse_args(argv)
    stats = prepare(
        args.prompts, args.out_dir, val_fraction=args.val_fraction, seed=args.seed, agent_name=args.agent_name
    )
    print(stats.model_dump_json(indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
