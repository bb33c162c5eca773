"""Typed persistent operational records, the evidence about them, and repair lineage.

An `OpRecord` is one premise an agent carries from task to task ("the orders extract lives at
data/v2/orders.csv", "amounts are in cents", "tests run from tests/fast"): a typed key and value,
when it was observed and how long that stays fresh, the scope it applies to, where it came from
(provenance) and who may vouch for it (authority). Storing a record does not make it true; the
recovery core decides that before an action depends on it.

`Evidence` is an observation bound to a key and a scope (a read-only probe, a developer answer,
a tool log line, a teammate's note). A `Correction` is the lineage of one repair: which record
version it superseded, which versions it wrote, the evidence, the scope and the time. Nothing
is overwritten in place (see `statewise.store`).

Scopes are '/'-separated paths from general to specific (`shop`, `shop/orders_eu`); `*` is global.
A record applies to a task whose scope equals its scope or lies under it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator

from stateguard.records import Record

GLOBAL_SCOPE = "*"


class Authority(StrEnum):
    """Who stands behind a value, strongest first for intent: developer > verified > promoted > observed > inferred."""

    DEVELOPER = "developer"  # the developer said so (a confirmed answer, a written instruction)
    VERIFIED = "verified"  # a read-only probe established it
    PROMOTED = "promoted"  # a committed StateGuard state of an earlier task produced it
    OBSERVED = "observed"  # the agent saw it in passing (a tool log, a listing)
    INFERRED = "inferred"  # the agent guessed or generalized it


class RecordStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"  # a correction replaced this version; it stays for lineage


class Provenance(Record):
    source: str = Field(description="What produced it: a task id, 'probe', 'developer', 'promotion:<run>'.")
    scope: str = Field(default=GLOBAL_SCOPE, description="Where the fact was actually observed.")
    detail: str = Field(default="", description="Free text: the step, the file, the question.")


class _Observed(Record):
    """What records and evidence share: a scope in canonical form and a timezone-aware time."""

    @field_validator("scope", check_fields=False)
    @classmethod
    def _scope_form(cls, scope: str) -> str:
        return check_scope(scope)

    @field_validator("observed_at", check_fields=False)
    @classmethod
    def _aware(cls, when: datetime) -> datetime:
        return when if when.tzinfo else when.replace(tzinfo=UTC)


class OpRecord(_Observed):
    """One version of a persistent operational record (ids and versions are assigned by the store)."""

    id: str = Field(default="", description="Store-assigned id, e.g. 'r12'; empty before it is stored.")
    key: str = Field(min_length=1, description="Typed key, e.g. 'table.location', 'tests.dir'.")
    value: Any = Field(description="JSON value.")
    type: str = Field(min_length=1, description="State type of the interface, e.g. 'location', 'unit'.")
    scope: str = Field(default=GLOBAL_SCOPE, description="Where it applies ('*' or 'project/dataset').")
    observed_at: datetime = Field(description="When the value was last established (UTC).")
    ttl_days: float | None = Field(default=None, ge=0, description="Freshness window; None: no expiry.")
    provenance: Provenance
    authority: Authority
    status: RecordStatus = RecordStatus.ACTIVE
    version: int = Field(default=1, ge=1)
    supersedes: str | None = Field(default=None, description="Record id of the version this one replaced.")

    def age_days(self, now: datetime) -> float:
        return (now - self.observed_at) / timedelta(days=1)

    def expired(self, now: datetime) -> bool:
        return self.ttl_days is not None and self.age_days(now) > self.ttl_days

    def brief(self) -> dict[str, Any]:
        """The planner's view: what it may reason about (no store bookkeeping)."""
        return {
            "key": self.key,
            "value": self.value,
            "type": self.type,
            "scope": self.scope,
            "observed_at": self.observed_at.date().isoformat(),
            "authority": self.authority.value,
        }


class Evidence(_Observed):
    """An observation of a key's value in a scope; never a record by itself."""

    id: str = Field(default="", description="Store-assigned id, e.g. 'e3'.")
    key: str
    scope: str = GLOBAL_SCOPE
    value: Any = Field(
        default=None, description="The value observed; None when the observation was inconclusive."
    )
    source: str = Field(description="probe | developer | observation | note | promotion")
    detail: str = Field(default="", description="The probe and its output, or the question and the answer.")
    observed_at: datetime
    authority: Authority


class Correction(Record):
    """Lineage of one repair: old version -> new versions, bound to evidence, scope and time."""

    id: str = Field(default="", description="Store-assigned id, e.g. 'c2'.")
    old_record: str = Field(description="Id of the superseded version.")
    new_records: list[str] = Field(description="Ids of the versions written by this repair.")
    evidence_id: str
    scope: str = Field(description="The scope the evidence established the correction for.")
    reason: str = Field(description="stale | conflict | scope | ... and a short explanation.")
    at: datetime
    task_id: str = ""


def check_scope(scope: str) -> str:
    """A scope is '*' or non-empty '/'-separated parts without spaces; raises ValueError naming the fix."""
    if scope == GLOBAL_SCOPE:
        return scope
    parts = scope.split("/")
    if not scope or any(not p or p == GLOBAL_SCOPE or any(c.isspace() for c in p) for p in parts):
        raise ValueError(
            f"scope {scope!r}: use '*' or parts like 'shop/orders_eu' (no empty parts or spaces)"
        )
    return scope


def covers(outer: str, inner: str) -> bool:
    """Whether a record scoped `outer` applies to a task scoped `inner`."""
    if outer in (GLOBAL_SCOPE, inner):
        return True
    return inner != GLOBAL_SCOPE and inner.startswith(outer + "/")


def overlaps(a: str, b: str) -> bool:
    """Two scopes share ground when one covers the other."""
    return covers(a, b) or covers(b, a)


def depth(scope: str) -> int:
    """0 for '*', else the number of parts (more specific scopes are deeper)."""
    return 0 if scope == GLOBAL_SCOPE else len(scope.split("/"))
