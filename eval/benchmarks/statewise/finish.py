"""The last step of every case builder: seed the store, corrupt the target, derive the reference.

The reference action is what the scripted planner proposes from the valid store, i.e. every
slot bound to its true value (or a stop where the truth says not to act). A case is refused
(ValueError) when its corruption would not change the proposed action, or when a safe-stop
case's reference is not a stop: such a case would measure nothing.
"""

from __future__ import annotations

import random
from typing import Any

from eval.benchmarks.statewise.case import Case, EvidenceSeed, RecordSeed, World, store_for
from eval.benchmarks.statewise.seeding import corrupt, distractor_evidence, seed_records
from statewise.interface import Action, InterfaceSpec, TaskSpec
from statewise.planner import ScriptedPlanner


def _other_value(spec: InterfaceSpec) -> Any:
    def other(rec: RecordSeed) -> Any:
        domain = spec.type_of(rec.key).domain
        if domain:
            return next(v for v in domain if v != rec.value)
        if isinstance(rec.value, int):
            return rec.value + 7
        return f"old/{rec.value}"

    return other


def finish_case(
    rng: random.Random,
    *,
    spec: InterfaceSpec,
    case_id: str,
    split: str,
    interface: str,
    family: str,
    kind: str,
    corruption: str,
    task: TaskSpec,
    world: World,
    truth: dict[str, Any],
    key: str,
    target_scope: str,
    sibling_scope: str,
    project_scope: str,
    old_value: Any,
    protected: list[str],
    frozen: list[str],
    later: list[TaskSpec],
) -> Case:
    seeds = {(r.key, r.scope): r for r in seed_records(truth, spec, rng)}
    target = seeds.pop((key, target_scope))
    sibling = seeds.get((key, sibling_scope)) if corruption == "scope" else None
    if sibling is not None and sibling.value == target.value:
        raise ValueError(
            f"{case_id}: the sibling scope holds the same {key} value; a scope case needs another"
        )
    corrupted, conflicting, also = corrupt(corruption, target, old_value, sibling, project_scope, rng)
    records = sorted(seeds.values(), key=lambda r: (r.key, r.scope))
    evidence = distractor_evidence(records, rng, _other_value(spec))
    sib_rec = seeds.get((key, sibling_scope))
    if sib_rec is not None and rng.random() < 0.5:  # a newer observation elsewhere: not a conflict here
        evidence.append(
            EvidenceSeed(
                key=key,
                scope=sibling_scope,
                value=sib_rec.value,
                source="observation",
                detail="seen while working on the sibling",
                age_days=round(rng.uniform(1, 10), 2),
            )
        )
    case = Case(
        case_id=case_id,
        split=split,
        interface=interface,
        family=family,
        kind=kind,
        corruption=corruption,
        task=task,
        world=world,
        records=records,
        evidence=evidence,
        target=target,
        corrupted=corrupted,
        also_replaces=also,
        conflicting=conflicting,
        truth=truth,
        reference=Action(operation="stop", reason="placeholder until the valid store is built"),
        protected=protected,
        frozen=frozen,
        later=later,
    )
    clean = store_for(case, "clean")
    try:
        case = case.model_copy(
            update={"reference": ScriptedPlanner(spec).propose(task, clean.retrieve(task.scope))}
        )
    finally:
        clean.close()
    if (kind == "safe_stop") != case.reference.is_stop:
        raise ValueError(f"{case_id}: a {kind} case whose reference is {case.reference.operation!r}")
    planner = ScriptedPlanner(spec)
    bad = store_for(case, "corrupted")
    try:
        if planner.propose(task, bad.retrieve(task.scope)).signature() == case.reference.signature():
            raise ValueError(f"{case_id}: corrupting {key} does not change the proposed action")
    finally:
        bad.close()
    return case
