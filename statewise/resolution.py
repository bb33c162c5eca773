"""Resolution: is a decision-critical record valid, defective, or unresolved right now?

First the metadata, without touching anything: is it past its freshness window (`expired`), is
there newer evidence in an overlapping scope with another value (`conflict`), was it observed in
a scope that does not cover the task's although it is stored for a broader one (`scope`), does an
intent record rest on the agent's own observation or guess (`authority`), is its value outside
its type's domain (`type`).

Then evidence from the right authority:
- machine-owned facts are observed read-only by the interface's verifier adapter (probes in the
  sandboxed workspace or a read-only shell). Same value: valid; another value: defective, with
  the observation as evidence; no conclusive observation: the developer is asked as data owner
  (or unresolved without one); a value the owner confirmed in an earlier clarification stands
  while nothing casts doubt on it;
- developer-owned intent is asked about with one targeted question when it is in doubt (any
  signal), or — policy `doubt_or_irreversible`, the default — when the operation is irreversible
  and the developer has not confirmed the record through a clarification. Otherwise it stands.

Unresolved premises stop the action. Without verification (an ablation) a record in doubt is
unresolved and one without signals stands.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from statewise.clarify import Developer, Question
from statewise.interface import Environment, Interface, Operation, TaskSpec
from statewise.records import Authority, Evidence, OpRecord, covers, overlaps
from statewise.store import RecordStore

Status = Literal["valid", "defective", "unresolved"]


class ResolutionPolicy(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    verify: bool = Field(
        default=True, description="Read-only probes and clarification questions are allowed."
    )
    clarify: Literal["doubt", "doubt_or_irreversible", "always"] = Field(
        default="doubt_or_irreversible", description="When a developer-owned premise is asked about."
    )
    ask_owner_when_inconclusive: bool = Field(
        default=True, description="A machine fact no probe settles goes to the developer as data owner."
    )


class Resolution(BaseModel):
    model_config = ConfigDict(frozen=True)
    record_id: str
    key: str
    status: Status
    value: Any = Field(default=None, description="The corrected value (defective only).")
    defect: str = Field(
        default="", description="stale | conflict | scope | type | undecided (defective only)."
    )
    signals: list[str] = Field(default_factory=list)
    method: Literal["metadata", "probe", "developer"] = "metadata"
    evidence: Evidence | None = None
    narrow_to: str | None = Field(
        default=None, description="Scope the old value is re-issued for (scope defects)."
    )
    detail: str = ""


def signals_for(
    record: OpRecord, task: TaskSpec, interface: Interface, store: RecordStore
) -> tuple[list[str], list[Any]]:
    """The doubts metadata alone raises, and the newer conflicting values."""
    stype = interface.spec.type_of(record.key)
    signals: list[str] = []
    if record.expired(task.now):
        signals.append("expired")
    newer = [
        e.value
        for e in store.evidence(key=record.key, scope=task.scope)
        if e.observed_at > record.observed_at
        and e.value is not None
        and e.value != record.value
        and overlaps(e.scope, record.scope)
    ]
    if newer:
        signals.append("conflict")
    prov = record.provenance.scope
    if record.scope != task.scope and prov != "*" and not covers(prov, task.scope):
        signals.append("scope")
    if stype.owner == "developer" and record.authority in (Authority.OBSERVED, Authority.INFERRED):
        signals.append("authority")
    if (
        stype.domain is not None
        and record.value not in stype.domain
        and record.value not in interface.spec.stop_values
    ):
        signals.append("type")
    return signals, list(dict.fromkeys(map(_hashable, newer)))


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else repr(value)


def _owner_confirmed(record: OpRecord) -> bool:
    """The developer stated this value in a clarification (expiry and doubts are signals of their own)."""
    return record.authority is Authority.DEVELOPER and record.provenance.source == "developer"


def _defect(signals: list[str]) -> str:
    for name in ("scope", "conflict", "type"):
        if name in signals:
            return name
    return "stale"


def _narrow(record: OpRecord, task: TaskSpec) -> str | None:
    prov = record.provenance.scope
    if prov != record.scope and covers(record.scope, prov) and not overlaps(prov, task.scope):
        return prov
    return None


def resolve(
    record: OpRecord,
    task: TaskSpec,
    op: Operation,
    interface: Interface,
    env: Environment,
    store: RecordStore,
    developer: Developer | None,
    policy: ResolutionPolicy,
) -> Resolution:
    signals, conflicting = signals_for(record, task, interface, store)
    base = {"record_id": record.id, "key": record.key, "signals": signals}
    if not policy.verify:
        return Resolution(
            **base,
            status="unresolved" if signals else "valid",
            detail="no verification: " + (", ".join(signals) or "no doubt signals"),
        )
    stype = interface.spec.type_of(record.key)
    probe_detail = ""
    if stype.owner == "machine":
        verdict = interface.verify(env, record.key, task)
        evidence = Evidence(
            key=record.key,
            scope=task.scope,
            value=verdict.value if verdict.conclusive else None,
            source="probe",
            detail=verdict.detail,
            observed_at=task.now,
            authority=Authority.VERIFIED,
        )
        if verdict.conclusive:
            if verdict.value == record.value:
                return Resolution(
                    **base, status="valid", method="probe", evidence=evidence, detail=verdict.detail
                )
            return Resolution(
                **base,
                status="defective",
                value=verdict.value,
                defect=_defect(signals),
                method="probe",
                evidence=evidence,
                narrow_to=_narrow(record, task) if "scope" in signals else None,
                detail=verdict.detail,
            )
        if _owner_confirmed(record) and not signals:
            return Resolution(
                **base,
                status="valid",
                method="probe",
                detail=f"probe inconclusive ({verdict.detail}); the owner confirmed this value before",
            )
        if not (policy.ask_owner_when_inconclusive and developer is not None):
            return Resolution(
                **base, status="unresolved", method="probe", evidence=evidence, detail=verdict.detail
            )
        probe_detail = f"probe inconclusive ({verdict.detail}); "
    else:
        confirmed = _owner_confirmed(record)
        wanted = (
            bool(signals)
            or policy.clarify == "always"
            or (policy.clarify == "doubt_or_irreversible" and op.irreversible and not confirmed)
        )
        if not wanted:
            return Resolution(**base, status="valid", detail="developer-owned, no doubt signals")
        if developer is None:
            return Resolution(**base, status="unresolved", detail="needs the developer; no developer channel")
    assert developer is not None  # both branches above return without one
    return _ask(record, task, developer, signals, conflicting, base, probe_detail)


def _ask(
    record: OpRecord,
    task: TaskSpec,
    developer: Developer,
    signals: list[str],
    conflicting: list[Any],
    base: dict[str, Any],
    prefix: str,
) -> Resolution:
    question = Question(
        key=record.key,
        task_scope=task.scope,
        record_scope=record.scope,
        recorded_value=record.value,
        recorded_on=record.observed_at.date().isoformat(),
        signals=signals,
        conflicting=conflicting,
        task=task.instruction,
    )
    answer = developer.ask(question)
    # The answer is about the task's scope when the record's scope is in question, else the record's own.
    scope = task.scope if "scope" in signals else record.scope
    evidence = Evidence(
        key=record.key,
        scope=scope,
        value=answer.value if answer.kind != "confirm" else record.value,
        source="developer",
        detail=f"Q: {question.text()} A: {answer.text or answer.kind}",
        observed_at=task.now,
        authority=Authority.DEVELOPER,
    )
    detail = (
        prefix
        + f"developer answered {answer.kind}"
        + (f" {answer.value!r}" if answer.value is not None else "")
    )
    if answer.kind == "confirm":
        return Resolution(**base, status="valid", method="developer", evidence=evidence, detail=detail)
    if answer.kind in ("correct", "undecided") and answer.value is not None:
        defect = "undecided" if answer.kind == "undecided" else _defect(signals)
        if answer.value == record.value:
            return Resolution(**base, status="valid", method="developer", evidence=evidence, detail=detail)
        return Resolution(
            **base,
            status="defective",
            value=answer.value,
            defect=defect,
            method="developer",
            evidence=evidence,
            narrow_to=_narrow(record, task) if "scope" in signals else None,
            detail=detail,
        )
    return Resolution(**base, status="unresolved", method="developer", evidence=evidence, detail=detail)
