"""Store seeding shared by both interfaces: valid records from the truth, and the three corruptions.

- valid records: one per key and scope of the truth; ages up to 1.25x the type's freshness window
  (so some valid records look expired: verifying them must not 'repair' them), authority from the
  owner (developer for intent, now and then an inferred one; verified or observed for machine
  facts), provenance in the record's own scope;
- stale: the target keeps an old value; its age is drawn from 0.4-3x the freshness window, so
  some stale records still look fresh;
- conflict: an old value within its freshness window, and a newer observation (a tool log line
  or a teammate's note) in an overlapping scope carrying the true value;
- scope: a sibling scope's (true there) record stored for the whole project, with its provenance
  still naming the sibling scope; it stands in for the task scope's own record.
Distractor evidence: older observations with other values, and newer ones in a sibling scope.
"""

from __future__ import annotations

import random
from typing import Any

from eval.benchmarks.statewise.case import EvidenceSeed, RecordSeed
from statewise.interface import InterfaceSpec
from statewise.records import Authority


def split_key(entry: str) -> tuple[str, str]:
    key, scope = entry.rsplit("@", 1)
    return key, scope


def seed_records(truth: dict[str, Any], spec: InterfaceSpec, rng: random.Random) -> list[RecordSeed]:
    seeds = []
    for entry, value in sorted(truth.items()):
        key, scope = split_key(entry)
        stype = spec.type_of(key)
        ttl = stype.ttl_days or 365.0
        if stype.owner == "developer":
            authority = Authority.INFERRED if rng.random() < 0.1 else Authority.DEVELOPER
        else:
            authority = rng.choice([Authority.VERIFIED, Authority.OBSERVED])
        seeds.append(
            RecordSeed(
                key=key,
                value=value,
                type=stype.name,
                scope=scope,
                age_days=round(ttl * rng.uniform(0.05, 1.25), 2),
                ttl_days=stype.ttl_days,
                authority=authority,
                source=f"task-{rng.randint(100, 999)}",
                provenance_scope=scope,
            )
        )
    return seeds


def distractor_evidence(
    records: list[RecordSeed], rng: random.Random, other_value: Any
) -> list[EvidenceSeed]:
    """Older observations of a few records with other values (not newer, so no conflict)."""
    picks = rng.sample(records, k=min(3, len(records)))
    return [
        EvidenceSeed(
            key=r.key,
            scope=r.scope,
            value=other_value(r),
            age_days=round(r.age_days + rng.uniform(5, 60), 2),
            source="observation",
            detail="seen in an older tool log",
        )
        for r in picks
    ]


def corrupt(
    kind: str,
    target: RecordSeed,
    old_value: Any,
    sibling: RecordSeed | None,
    project_scope: str,
    rng: random.Random,
) -> tuple[RecordSeed, list[EvidenceSeed], list[RecordSeed]]:
    """(corrupted record, newer conflicting evidence, valid records it stands in for)."""
    ttl = target.ttl_days or 365.0
    if kind == "stale":
        rec = target.model_copy(
            update={"value": old_value, "age_days": round(ttl * rng.uniform(0.4, 3.0), 2)}
        )
        return rec, [], []
    if kind == "conflict":
        rec = target.model_copy(
            update={"value": old_value, "age_days": round(ttl * rng.uniform(0.2, 0.9), 2)}
        )
        where = target.scope if rng.random() < 0.7 else project_scope
        source, detail = rng.choice(
            [("observation", "a tool run printed it"), ("note", "a teammate's changelog note")]
        )
        ev = EvidenceSeed(
            key=target.key,
            scope=where,
            value=target.value,
            source=source,
            detail=detail,
            age_days=round(rec.age_days * rng.uniform(0.1, 0.8), 2),
        )
        return rec, [ev], []
    if kind == "scope":
        if sibling is None:
            raise ValueError(f"scope corruption of {target.key} needs a sibling scope's record")
        rec = sibling.model_copy(
            update={
                "scope": project_scope,
                "provenance_scope": sibling.scope,
                "age_days": round(ttl * rng.uniform(0.2, 0.95), 2),
            }
        )
        return rec, [], [sibling]
    raise ValueError(f"corruption kind {kind!r}: use stale, conflict or scope")
