"""Relation normalization (paper Eq. 13) — owned by the harness, not the manager.

The manager names upstream states; structure decides the type: no upstream -> Init, one
upstream -> Progress when it is the immediately preceding committed state, else Branch;
two or more -> Combine. Invalidate is a semantic decision and is kept exactly as proposed.
"Immediately preceding" is by commit order, since abandoned drafts burn ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stateguard.actions import ActionError, RelationArg
from stateguard.state import Relation, RelationType


def normalize_relations(
    proposed: Sequence[RelationArg | Relation],
    *,
    draft_id: str,
    latest_committed: str | None,
    is_committed: Callable[[str], bool],
) -> tuple[list[Relation], list[str]]:
    """Return (canonical relations, notes on every type the harness changed).

    Raises ActionError for a self-reference, an id that is not a committed state, or a state
    listed both as invalidated and as inherited.
    """
    notes: list[str] = []
    inherited: list[str] = []
    invalidated: list[str] = []
    asked: dict[str, RelationType | None] = {}
    for rel in proposed:
        sid = rel.related_state_id
        if sid is None:
            if rel.type not in (None, RelationType.INIT):
                raise ActionError(f"a '{rel.type}' relation needs related_state_id, e.g. 'S2'")
            continue
        if sid == draft_id:
            raise ActionError(
                f"relation to {sid} is a self-reference; relate the draft to earlier committed states"
            )
        if not is_committed(sid):
            raise ActionError(
                f"relation to {sid}: no committed state has that id; use an id from the committed-state index"
            )
        target = invalidated if rel.type is RelationType.INVALIDATE else inherited
        if sid not in target:
            target.append(sid)
        asked.setdefault(sid, rel.type)
    both = sorted(set(inherited) & set(invalidated))
    if both:
        raise ActionError(
            f"{', '.join(both)} listed both as invalidated and as inherited; a state either invalidates "
            "an upstream assumption or builds on it — keep one relation per upstream state"
        )

    relations: list[Relation] = []
    if len(inherited) == 1:
        sid = inherited[0]
        kind = RelationType.PROGRESS if sid == latest_committed else RelationType.BRANCH
        relations.append(Relation(type=kind, related_state_id=sid))
    elif len(inherited) > 1:
        relations.extend(Relation(type=RelationType.COMBINE, related_state_id=s) for s in inherited)
    relations.extend(Relation(type=RelationType.INVALIDATE, related_state_id=s) for s in invalidated)
    if not relations:
        relations.append(Relation(type=RelationType.INIT))

    for rel in relations:
        want = asked.get(rel.related_state_id or "")
        if want is not None and want is not rel.type:
            notes.append(
                f"relation to {rel.related_state_id} normalized from '{want.value}' to '{rel.type.value}'"
            )
    return relations, notes
