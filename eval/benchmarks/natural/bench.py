"""`natural`: replay the bank of real models' mistakes with the scripted worker (no model needed).

    make eval BENCH=natural                                   # every confirmed entry, both arms, + clean runs
    make eval BENCH=natural ARGS='bench.entries=candidates arms=[baseline]'   # what harvest's confirm step runs

Each confirmed bank entry (`bank.py`) runs as its own variant `<task>~nat-<id>` of the dev task it
came from, cut after the entry's turn: the mistake is judged at its own turn, and the turns after
it would only cost time. The scripted worker replays the reference code up to that turn and the
model's own code at it. The clean run of each task with an entry runs in full beside them, so the
detection report can tell a repair the mistake caused from one the clean run issues anyway (the
prefix is the same reference code in both). Scoring, flow and data are the dev set's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval.benchmarks.base import EvalTask
from eval.benchmarks.dev.bench import DevBench
from eval.benchmarks.natural.bank import BANK_FILE, BankEntry, load_bank
from eval.benchmarks.variants import variant_id
from stateguard.workers.faults import check_faults

__all__ = ["ENTRY_SETS", "NaturalBench", "entry_task"]

ENTRY_SETS = ("confirmed", "candidates", "all")


def entry_task(base: EvalTask, entry: BankEntry, data_root: str | Path | None = None) -> EvalTask:
    """The replay of one entry: `base` (a clean dev task) cut after the entry's turn, with its fault
    (`data_root`: the dev-set folder the model's file paths are rewritten to)."""
    turns = [t for t in base.task.turns if t.turn_id <= entry.turn]
    if not turns or turns[-1].turn_id != entry.turn:
        raise ValueError(
            f"natural bank entry {entry.id!r}: task {entry.task} has no turn {entry.turn}; "
            "the bank no longer matches the dev set (harvest it again)"
        )
    task = base.task.model_copy(update={"turns": turns})
    fault = entry.fault(data_root)
    check_faults(task, [fault], where=f"natural bank entry {entry.id!r}")
    return base.model_copy(
        update={
            "task_id": variant_id(base.task_id, entry.variant),
            "task": task,
            "faults": [fault],
            "variant": entry.variant,
            "base_task": base.task_id,
            "parents": {t: p for t, p in base.parents.items() if t <= entry.turn},
        }
    )


class NaturalBench(DevBench):
    name = "natural"
    scoring_version = "dev-fields/1+natural-bank/1"

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        which = str(cfg.get("entries", "confirmed"))
        if which not in ENTRY_SETS:
            raise ValueError(f"bench.entries={which!r}: use one of {', '.join(ENTRY_SETS)}")
        bank = load_bank(Path(str(cfg.get("bank") or BANK_FILE)))
        entries = [
            e
            for e in bank.entries
            if which == "all"
            or (which == "confirmed" and e.status == "confirmed")
            or (which == "candidates" and e.status == "candidate")
        ]
        if not entries:
            raise ValueError(
                f"natural bank {cfg.get('bank') or BANK_FILE}: no {which} entries; add some with "
                "`python -m eval.benchmarks.natural.harvest add <llm run>` (see eval/benchmarks/natural/README.md)"
            )
        dev = {
            t.task_id: t for t in super().load({**cfg, "variants": ["clean"], "split": "all", "faults": []})
        }
        unknown = sorted({e.task for e in entries} - set(dev))
        if unknown:
            raise ValueError(f"natural bank: entries for tasks the dev set does not have: {unknown}")
        out = [dev[t] for t in sorted({e.task for e in entries})] if cfg.get("clean", True) else []
        root = Path(str(cfg.get("data_dir") or "data/dev")).resolve()
        out += [entry_task(dev[e.task], e, root) for e in entries]
        return sorted(out, key=lambda t: t.task_id)
