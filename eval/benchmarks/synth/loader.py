"""Load the frozen synthesized benchmark (`data/synth-bench`) and check it byte for byte.

    tasks = load_synth_tasks("data/synth-bench")       # list[EvalTask], verified against the record

The folder is what `make synth ARGS=synth=bench` writes: one `<task_id>/` per task with
`agent/` (questions + data, what the worker may see), `hidden/` (LongDS task.json with reference
code and answers, graph.json with the stage dependencies, faults.json with the scripted worker's
mistakes) and manifest.json. Each task runs as variants (eval.benchmarks.variants): `clean`, the
`shipped` counterfactuals, and with `bench.variants=all` one derived single mistake of each
mechanically checkable kind (`single_faults`). Every file must match `frozen_manifest.json` next to this module
(the same record `configs/synth/bench.yaml` pins by hash), so a score always refers to the same
benchmark. Parents Pa(t) come from graph.json's SQL-derived dependencies (stage -> turn).
Scoring: the deterministic field judge (`eval.scorers.fields`), one verdict per turn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval.benchmarks.base import Benchmark, EvalTask
from eval.benchmarks.variants import CLEAN, expand_variants, read_faults_file, select_variants
from eval.scorers.fields import per_turn_correct
from stateguard.answers import decimals_of, numbers
from stateguard.artifacts.graph import RelationGraph, load_graph
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.flows import FlowConfig
from stateguard.lifecycle import Regime
from stateguard.task import Task, load_task
from stateguard.workers.faults import Fault, check_fault

__all__ = ["FROZEN", "SYNTH_FLOW", "SynthBench", "load_synth_tasks", "verify_frozen"]

FROZEN = Path(__file__).with_name("frozen_manifest.json")
BUILD_HINT = "build it with `make synth ARGS=synth=bench` (about 1-2 minutes; `make eval` does this itself)"


class SynthBenchError(RuntimeError):
    """The benchmark folder is missing or differs from the frozen record."""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify_frozen(root: Path, frozen: Path = FROZEN) -> list[str]:
    """Task ids of the frozen record, after checking every file's SHA-256 under `root`."""
    if not root.is_dir():
        raise SynthBenchError(f"{root}: no synthesized benchmark here; {BUILD_HINT}")
    record = json.loads(frozen.read_text(encoding="utf-8"))
    bad: list[str] = []
    for task_id, files in sorted(record["tasks"].items()):
        for rel, digest in sorted(files.items()):
            path = root / task_id / rel
            if not path.is_file():
                bad.append(f"{task_id}/{rel} missing")
            elif _sha256(path) != digest:
                bad.append(f"{task_id}/{rel} differs")
    if bad:
        raise SynthBenchError(
            f"{root} is not the frozen benchmark ({len(bad)} file(s): {'; '.join(bad[:5])}); "
            f"delete the folder and {BUILD_HINT}"
        )
    return sorted(record["tasks"])


def _parents(graph: RelationGraph) -> dict[int, list[int]]:
    turn_of = graph.stage_turns()
    return {s.turn_id: sorted({turn_of[d] for d in s.deps if d in turn_of}) for s in graph.stages}


def load_synth_tasks(
    root: str | Path,
    *,
    verify: bool = True,
    variants: Mapping[str, Any] | None = None,
) -> list[EvalTask]:
    """The benchmark's tasks, one EvalTask per selected variant (default: `shipped`, the two
    counterfactuals each task ships, as the frozen record was measured; `variants` is the bench
    config's `variants`/`faults` selection, see eval.benchmarks.variants)."""
    root = Path(root)
    selection = variants if variants is not None else {"variants": ["shipped"]}
    ids = (
        verify_frozen(root)
        if verify
        else sorted(p.name for p in root.glob("*") if TaskFolder(p).task.is_file())
    )
    if not ids:
        raise SynthBenchError(f"{root}: no tasks; {BUILD_HINT}")
    out = []
    for task_id in ids:
        folder = TaskFolder(root / task_id)
        graph = load_graph(folder)
        declared = read_faults_file(folder.faults).variants
        task = load_task(folder.hidden, task_id=task_id, base_path=str(folder.agent.resolve()))
        n = len(task.turns)
        base = EvalTask(
            task_id=task_id,
            task=task,
            data_dir=folder.data,
            domain=graph.dataset,
            level="15-20 turns" if n <= 20 else "21-35 turns",
            parents=_parents(graph),
        )
        derived = single_faults(task) if _may_select_derived(declared, selection) else {}
        out += expand_variants(base, select_variants({**declared, **derived}, selection), bare="shipped")
    return out


DERIVED_KINDS = ("stale", "precision", "exec_error")  # the kinds (and labels) `single_faults` derives


def _may_select_derived(declared: Mapping[str, list[Fault]], selection: Mapping[str, Any]) -> bool:
    """Whether `selection` can pick a variant of `single_faults`, which replays the task to place
    each fault (most of loading synth-bench). It cannot when `faults` replaces the variants, or when
    every item of `variants` names clean, a declared variant or a declared fault's label or kind
    other than the derived kinds; anything else ("all", "stale-t5", a misspelling) derives them,
    as before, so the tasks selected are the same either way."""
    if selection.get("faults"):
        return False
    items = selection.get("variants", "all")
    items = [items] if isinstance(items, str) else [str(s) for s in items or []]
    known = {CLEAN, *declared} | {
        x for faults in declared.values() for f in faults for x in (f.label, f.kind)
    }
    return any(item not in known or item in DERIVED_KINDS for item in items)


def single_faults(task: Task) -> dict[str, list[Fault]]:
    """One mechanically checkable mistake per variant, placed deterministically where it can take
    effect: a stale reuse at the first turn that recomputes a stale variable, a precision slip at
    the first turn (from a third of the task on) that reports a number with 2+ decimals, an
    execution error at the middle turn. The frozen files stay as they are: these are derived."""
    out: dict[str, list[Fault]] = {}
    turns = [t.turn_id for t in task.turns]
    stale = next((t for t in turns[1:] if check_fault(task, Fault(kind="stale", turn=t)) is None), None)
    if stale is not None:
        out[f"stale-t{stale}"] = [Fault(kind="stale", turn=stale)]
    start = max(2, len(turns) // 3)
    precise = next(
        (
            t.turn_id
            for t in task.turns
            if t.turn_id >= start
            and _has_decimals(t.answer, 2)
            and check_fault(task, Fault(kind="precision", turn=t.turn_id)) is None
        ),
        None,
    )
    if precise is not None:
        out[f"precision-t{precise}"] = [Fault(kind="precision", turn=precise, decimals=1)]
    middle = turns[len(turns) // 2]
    out[f"exec_error-t{middle}"] = [Fault(kind="exec_error", turn=middle)]
    return out


def _has_decimals(answer: Any, places: int) -> bool:
    return any(decimals_of(v) >= places for _, v in numbers(answer))


# Post hoc review every 3 worker steps (A.2's segment-induced regime), 40 steps per turn: the
# manager often sees a turn's work after its answer was submitted, the case in which stopping
# contamination downstream (not only fixing the turn) decides the outcome. `flow=turn_aligned`
# reviews at every turn boundary instead, as LongDS does (Table 3).
SYNTH_FLOW = FlowConfig(
    name="synth",
    regime=Regime.SEGMENT_INDUCED,
    review_every=3,
    budget_unit="turn",
    baseline_budget=40,
    stateguard_budget=40,
)


class SynthBench(Benchmark):
    name = "synth"
    flow = SYNTH_FLOW
    scoring_version = "synth-fields/1"

    def load(self, cfg: Mapping[str, Any]) -> list[EvalTask]:
        return load_synth_tasks(
            cfg.get("data_dir", "data/synth-bench"),
            verify=bool(cfg.get("verify", True)),
            variants={
                "variants": cfg.get("variants", ["clean", "shipped"]),
                "faults": cfg.get("faults") or [],
            },
        )

    def score(self, task: EvalTask, answers: Mapping[int, Any]) -> dict[int, bool | None]:
        expected = {t.turn_id: t.answer for t in task.task.turns}
        return dict(per_turn_correct(expected, dict(answers)))
