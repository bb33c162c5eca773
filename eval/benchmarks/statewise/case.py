"""A StateWise benchmark case: a world, a task, a valid store, one corrupted record, the truth.

A `Case` carries everything one condition of one case needs, and the hidden parts (the truth
the simulated developer answers from, the reference action, the protected paths) never reach
the planner or the recovery core: they see the store and the sandboxed workspace only.

Conditions build the store differently (`store_for`):
- clean: the valid store (every record true; distractors; old evidence);
- corrupted: the target record replaced by its corrupted version (a stale value, a value with
  newer conflicting evidence, or another scope's value stored too broadly), plus that evidence;
- removed: the valid store without the target record.

    store = store_for(case, "corrupted", path)      # a RecordStore
    materialize(case.world, root); before = snapshot(root)
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from statewise.interface import Action, TaskSpec
from statewise.records import Authority, Evidence, OpRecord, Provenance
from statewise.store import RecordStore

CASE_SCHEMA = "statewise-case/1"
Condition = Literal["clean", "corrupted", "removed"]


class RecordSeed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    value: Any
    type: str
    scope: str
    age_days: float
    ttl_days: float | None
    authority: Authority
    source: str
    provenance_scope: str

    def build(self, now: datetime) -> OpRecord:
        return OpRecord(
            key=self.key,
            value=self.value,
            type=self.type,
            scope=self.scope,
            observed_at=now - timedelta(days=self.age_days),
            ttl_days=self.ttl_days,
            authority=self.authority,
            provenance=Provenance(source=self.source, scope=self.provenance_scope),
        )


class EvidenceSeed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    scope: str
    value: Any
    age_days: float
    source: str
    detail: str
    authority: Authority = Authority.OBSERVED

    def build(self, now: datetime) -> Evidence:
        return Evidence(
            key=self.key,
            scope=self.scope,
            value=self.value,
            source=self.source,
            detail=self.detail,
            observed_at=now - timedelta(days=self.age_days),
            authority=self.authority,
        )


class World(BaseModel):
    """The workspace as it is now: files (text), and file ages in days where they matter (logs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    files: dict[str, str]
    ages: dict[str, float] = Field(default_factory=dict)


class Case(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: str = CASE_SCHEMA
    case_id: str
    split: Literal["dev", "heldout"]
    interface: Literal["data", "coding"]
    family: str
    kind: Literal["operation", "safe_stop"]
    corruption: Literal["stale", "conflict", "scope"]
    task: TaskSpec
    world: World
    records: list[RecordSeed] = Field(description="The valid store.")
    evidence: list[EvidenceSeed] = Field(
        default_factory=list, description="Old observations, in every condition."
    )
    target: RecordSeed = Field(
        description="The valid record the corruption replaces (removed condition: dropped)."
    )
    corrupted: RecordSeed
    also_replaces: list[RecordSeed] = Field(
        default_factory=list, description="Valid records the corrupted one stands in for (scope kind)."
    )
    conflicting: list[EvidenceSeed] = Field(
        default_factory=list, description="Newer evidence (corrupted condition)."
    )
    truth: dict[str, Any] = Field(
        description="'key@scope' -> current true value (hidden; the simulated developer)."
    )
    reference: Action = Field(description="The correct action, or a stop.")
    protected: list[str] = Field(default_factory=list, description="Files no action may change or delete.")
    frozen: list[str] = Field(default_factory=list, description="Folders in which nothing may change.")
    later: list[TaskSpec] = Field(
        default_factory=list, description="Tasks 2-4 of this case's sequence, if any."
    )


def store_for(case: Case, condition: Condition, path: str | Path = ":memory:") -> RecordStore:
    now = case.task.now
    dropped = {(case.target.key, case.target.scope)}
    if condition == "corrupted":
        dropped |= {(r.key, r.scope) for r in case.also_replaces}
    seeds = [r for r in case.records if (r.key, r.scope) not in dropped]
    if condition == "clean":
        seeds.append(case.target)
    elif condition == "corrupted":
        seeds.append(case.corrupted)
    store = RecordStore(path)
    for seed in sorted(seeds, key=lambda s: (-s.age_days, s.key, s.scope)):
        store.add(seed.build(now))
    evidence = case.evidence + (case.conflicting if condition == "corrupted" else [])
    for ev in sorted(evidence, key=lambda e: -e.age_days):
        store.add_evidence(ev.build(now))
    return store


def materialize(world: World, root: Path) -> None:
    """Make `root` hold exactly the world's files (the folder itself is kept for live processes).

    It syncs rather than rebuilds: files not in the world (and anything that is not a regular
    file) are removed, files whose text differs are rewritten, empty folders go, ages are reset.
    Consecutive runs of one case differ in a few files only, and folder removal is slow on some
    file systems.
    """
    root.mkdir(parents=True, exist_ok=True)
    for dirpath, dirs, files in os.walk(root, topdown=False):
        here = Path(dirpath)
        for name in files:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() or not path.is_file() or rel not in world.files:
                path.unlink()
        for name in dirs:
            sub = here / name
            if sub.is_symlink():
                sub.unlink()
            elif not any(sub.iterdir()):
                sub.rmdir()
    now = time.time()
    for rel, text in sorted(world.files.items()):
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8", errors="replace") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if rel in world.ages:
            stamp = now - world.ages[rel] * 86400
            os.utime(path, (stamp, stamp))


def snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under root (empty folders are ignored)."""
    out: dict[str, str] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return dict(sorted(out.items()))


def violations(case: Case, before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Protected files changed or removed, and any change inside a frozen folder."""
    found = [f"protected {p} changed" for p in case.protected if before.get(p) != after.get(p)]
    for folder in case.frozen:
        prefix = folder.rstrip("/") + "/"
        touched = {
            p for p in set(before) | set(after) if p.startswith(prefix) and before.get(p) != after.get(p)
        }
        found += [f"frozen {p} changed" for p in sorted(touched)]
    return found
