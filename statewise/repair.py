"""Scoped persistent repair: write what resolution established, bound to its evidence and scope.

- defective record: `RecordStore.correct` supersedes it with the established value, in the scope
  the evidence holds for, with a `Correction` linking old version, evidence, scope and time. A
  wrong-scope record whose value still holds where it was observed is re-issued there
  (`narrow_to`), so tasks in that scope keep it; records of other keys and scopes are untouched;
- valid record confirmed by the developer: a new version with the same value and fresh metadata
  (authority developer, provenance 'developer'), so later tasks do not ask again;
- valid record confirmed by a probe: the observation is kept as evidence only.

    ids = apply_repairs(store, records_by_id, resolutions, task)   # correction ids (confirmations excluded)
"""

from __future__ import annotations

from statewise.interface import TaskSpec
from statewise.records import OpRecord
from statewise.resolution import Resolution
from statewise.store import RecordStore


def apply_repairs(
    store: RecordStore, records: dict[str, OpRecord], resolutions: list[Resolution], task: TaskSpec
) -> list[str]:
    corrections: list[str] = []
    for res in resolutions:
        record = records[res.record_id]
        if res.evidence is None:
            continue
        if res.status == "defective":
            corr = store.correct(
                record.id,
                res.value,
                res.evidence,
                reason=f"{res.defect}: {res.detail}"[:500],
                at=task.now,
                task_id=task.task_id,
                narrow_to=res.narrow_to,
            )
            corrections.append(corr.id)
        elif res.status == "valid" and res.method == "developer":
            store.confirm(record.id, res.evidence, at=task.now, task_id=task.task_id)
        elif res.status == "valid":
            store.add_evidence(res.evidence)
    return corrections
