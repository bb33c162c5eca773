"""Relations between synthesized stages (paper Eq. 22), consistent with the runtime (Eq. 13).

Stage i (1-based position in the interleaved SQL/pandas list) becomes state `S<i>`; every stage
is committed in order, so the "latest committed" state seen by stage i is `S<i-1>`. With Dep the
set of earlier stages that stage i reads:

    Init      Dep = {}
    Progress  Dep = {s_(i-1)}
    Branch    Dep = {s_j}, j < i-1
    Combine   |Dep| >= 2  (one Combine edge per upstream, in stage order)

Invalidate is never inferred from structure: a definition update attaches it explicitly with
`invalidate`, exactly as `stateguard.relation_rules.normalize_relations` keeps it as proposed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from stateguard.state import Relation, RelationType, state_id
from synthesis.sql_deps import Stage

__all__ = ["derive_relations", "invalidate", "stage_state_ids"]


def stage_state_ids(stages: Sequence[Stage]) -> dict[str, str]:
    """Stage name -> state id by position: the first stage is `S1`."""
    ids: dict[str, str] = {}
    for i, stage in enumerate(stages, start=1):
        if stage.name in ids:
            raise ValueError(f"stage name {stage.name!r} appears twice; stage names must be distinct")
        ids[stage.name] = state_id(i)
    return ids


def _positions(stages: Sequence[Stage]) -> dict[str, int]:
    return {name: int(sid[1:]) for name, sid in stage_state_ids(stages).items()}


def derive_relations(stages: Sequence[Stage], deps: Mapping[str, Iterable[str]]) -> dict[str, list[Relation]]:
    """Eq. 22 for every stage; `deps` maps a stage name to the earlier stages it reads.

    Stages missing from `deps` have no upstream. Raises ValueError for a dependency that is
    not an earlier stage (later, self, or unknown), or for deps keyed by an unknown stage.
    """
    pos = _positions(stages)
    ids = {name: state_id(i) for name, i in pos.items()}
    unknown_keys = sorted(set(deps) - set(pos))
    if unknown_keys:
        raise ValueError(f"deps name stages that are not in the stage list: {unknown_keys}")

    relations: dict[str, list[Relation]] = {}
    for stage in stages:
        i = pos[stage.name]
        upstream: list[str] = []
        for dep in deps.get(stage.name, ()):
            dep = dep.lower()
            j = pos.get(dep)
            if j is None:
                raise ValueError(f"stage {stage.name!r} depends on {dep!r}, which is not a stage")
            if j >= i:
                raise ValueError(
                    f"stage {stage.name!r} (position {i}) depends on {dep!r} (position {j}); "
                    "dependencies must be earlier stages"
                )
            if dep not in upstream:
                upstream.append(dep)
        upstream.sort(key=pos.__getitem__)

        if not upstream:
            rels = [Relation(type=RelationType.INIT)]
        elif len(upstream) == 1:
            (only,) = upstream
            kind = RelationType.PROGRESS if pos[only] == i - 1 else RelationType.BRANCH
            rels = [Relation(type=kind, related_state_id=ids[only])]
        else:
            rels = [Relation(type=RelationType.COMBINE, related_state_id=ids[u]) for u in upstream]
        relations[stage.name] = rels
    return relations


def invalidate(
    stage_name: str,
    target: str,
    *,
    stages: Sequence[Stage],
    relations: Mapping[str, Sequence[Relation]],
) -> dict[str, list[Relation]]:
    """Return a copy of `relations` where `stage_name` explicitly invalidates `target`.

    Used when a later stage updates the definition behind an earlier one (θ -> θ'). The target
    must be an earlier stage the updating stage does not also build on (the runtime rejects a
    state that both inherits and invalidates the same upstream). Init is dropped since the stage
    now has an upstream; inherited relations keep their Eq. 22 types, as the runtime does.
    """
    pos = _positions(stages)
    stage_name, target = stage_name.lower(), target.lower()
    if stage_name not in pos:
        raise ValueError(f"{stage_name!r} is not a stage")
    if target not in pos:
        raise ValueError(f"invalidate target {target!r} is not a stage")
    if pos[target] >= pos[stage_name]:
        raise ValueError(
            f"stage {stage_name!r} (position {pos[stage_name]}) can only invalidate an earlier stage; "
            f"{target!r} is at position {pos[target]}"
        )
    target_id = state_id(pos[target])
    current = list(relations.get(stage_name, ()))
    inherited = [r for r in current if r.type not in (RelationType.INIT, RelationType.INVALIDATE)]
    if any(r.related_state_id == target_id for r in inherited):
        raise ValueError(
            f"stage {stage_name!r} builds on {target!r} ({target_id}); it cannot also invalidate it"
        )
    invalidated = [r for r in current if r.type is RelationType.INVALIDATE]
    if all(r.related_state_id != target_id for r in invalidated):
        invalidated.append(Relation(type=RelationType.INVALIDATE, related_state_id=target_id))
    out = {name: list(rels) for name, rels in relations.items()}
    out[stage_name] = inherited + invalidated
    return out
