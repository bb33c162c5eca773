"""Fault variants of a task: a clean run and runs with declared worker mistakes, from a hidden file.

Any task folder in the LongDS layout may hold `faults.json` next to its `task.json` (the hidden
side: agents never see it). It declares named variants, each a list of the scripted worker's
mistakes (`stateguard.workers.faults.Fault`; docs/faults.md has the format):

    {"schema_version": 1,
     "variants": {"stale-t9":      [{"kind": "stale", "turn": 9}],
                  "precision-t4":  [{"kind": "precision", "turn": 4, "decimals": 1}],
                  "agg-t6":        [{"kind": "counterfactual", "turn": 6, "semantic": "aggregation_swap",
                                     "replace": [[".mean()", ".median()"]]}]}}

The synthesized benchmark's list form (records with `turn`, `code`, `kind`) is read as one
variant, `shipped`. Every task also has the `clean` variant (no mistake). A variant runs as its
own `EvalTask` with id `<task>~<variant>` (`<task>` alone for clean; for the synthesized
benchmark, whose tasks were frozen with their mistakes, `<task>` alone is `shipped` and the
clean run is `<task>~clean`), so the runner, results and resume treat it like any task, and the
detection report pairs it with its clean run.

Selection (`bench.variants`): `all` (default), or a list of variant names and fault labels
(`clean`, `stale-t9`, `stale`, `counterfactual`, `counterfactual:join`). `bench.faults`, a list of
faults, replaces the declared variants with one variant `custom` for every task. Faults are
checked before any run; one that cannot apply is an error naming the task, variant and fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from eval.benchmarks.base import EvalTask
from stateguard.artifacts.faults import FaultsFile, load_faults
from stateguard.artifacts.files import ArtifactError
from stateguard.artifacts.mistakes import InterventionKind, SemanticKind, by_intervention
from stateguard.workers.faults import Fault, FaultError, check_faults

__all__ = [
    "CLEAN",
    "FaultsFile",
    "expand_variants",
    "read_faults_file",
    "select_variants",
    "unmatched_selection",
    "variant_fields",
    "variant_id",
]

CLEAN = "clean"
SEP = "~"


def variant_id(task_id: str, variant: str, bare: str = CLEAN) -> str:
    """`<task>~<variant>`; the `bare` variant (clean, or synth's `shipped`) keeps the task's own id."""
    return task_id if variant == bare else f"{task_id}{SEP}{variant}"


def read_faults_file(path: Path) -> FaultsFile:
    """The variants declared in `path` (empty when the file is absent); errors name the file."""
    try:
        loaded = load_faults(path)
        if isinstance(loaded, list):  # the synthesized benchmark's shipped counterfactuals
            faults = [
                Fault(
                    kind="counterfactual",
                    turn=r.turn,
                    code=r.code,
                    semantic=_semantic_of(r.kind),
                    description=r.description,
                )
                for r in loaded
            ]
            return FaultsFile(variants={"shipped": faults} if faults else {})
    except (ArtifactError, ValidationError) as exc:
        raise FaultError(str(exc).splitlines()[0]) from None
    parsed = loaded if loaded is not None else FaultsFile(variants={})
    if CLEAN in parsed.variants or any(SEP in n for n in parsed.variants):
        raise FaultError(f"{path}: variant names may not be '{CLEAN}' or contain '{SEP}'")
    return parsed


def _semantic_of(intervention: str | None) -> SemanticKind:
    """The semantic kind a synthesized intervention family makes (the mistakes table's row)."""
    if intervention not in set(InterventionKind):
        return "other"
    return by_intervention(str(intervention)).semantic or "other"


def _wanted(name: str, faults: Sequence[Fault], selection: Sequence[str]) -> bool:
    for item in selection:
        if item in ("all", name):
            return True
        if name != CLEAN and any(f.label == item or f.kind == item for f in faults):
            return True
    return False


def select_variants(declared: Mapping[str, list[Fault]], cfg: Mapping[str, Any]) -> dict[str, list[Fault]]:
    """The variants to run: clean + declared (or `bench.faults` as `custom`), filtered by `bench.variants`."""
    override = cfg.get("faults")
    if override:
        try:
            variants = {"custom": [Fault.model_validate(dict(f)) for f in override]}
        except ValidationError as exc:
            raise FaultError(f"bench.faults: {exc}") from None
    else:
        variants = dict(declared)
    selection = cfg.get("variants", "all")
    selection = [selection] if isinstance(selection, str) else [str(s) for s in selection or []]
    out: dict[str, list[Fault]] = {CLEAN: []} if _wanted(CLEAN, [], selection) else {}
    out.update({n: f for n, f in variants.items() if _wanted(n, f, selection)})
    return out


def unmatched_selection(selection: Any, tasks: Sequence[EvalTask]) -> list[str]:
    """The items of `bench.variants` that selected no task at all (a misspelt name selects nothing)."""
    items = [selection] if isinstance(selection, str) else [str(s) for s in selection or []]
    return [
        item
        for item in items
        if item != "all"
        and not any(
            t.variant == item or any(f.label == item or f.kind == item for f in t.faults) for t in tasks
        )
    ]


def expand_variants(
    task: EvalTask,
    variants: Mapping[str, list[Fault]],
    *,
    split: str = "all",
    bare: str = CLEAN,
) -> list[EvalTask]:
    """One EvalTask per variant; every fault is checked against the task first."""
    out = []
    for name, faults in variants.items():
        check_faults(task.task, list(faults), where=f"task {task.task_id}, variant {name!r}")
        out.append(
            task.model_copy(
                update={
                    "task_id": variant_id(task.task_id, name, bare),
                    "faults": list(faults),
                    "variant": name,
                    "base_task": task.task_id,
                    "split": split,
                }
            )
        )
    return out


def variant_fields(task: EvalTask) -> dict[str, Any]:
    """What a result records about the task's variant (ArmResult's variant, base_task, split, faults)."""
    return {
        "variant": task.variant,
        "base_task": task.base_task or task.task_id,
        "split": task.split,
        "faults": [f.model_dump(mode="json", exclude_defaults=True) for f in task.faults],
    }
