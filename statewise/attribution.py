"""Attribution: which retrieved records the proposed action actually depends on.

Counterfactual replanning, one linked record at a time (`linked`: a key the operation's typed
slots read, or a value the proposal carries): re-plan with the record removed, and again with its
value replaced by a different value of the same type, holding every other input fixed. A
record is decision-critical when either probe changes the proposed action (operation or any slot
value). Retrieval relevance is not enough, and a critical record may still be valid.

Records whose dependence the probes do not show but that are strongly linked to the proposal
are kept for verification anyway: a probe failed (the planner gave no usable action) and the
record's key is declared for one of the operation's slots, or the proposed slots carry the
record's value verbatim although altering it moved nothing (another record may carry it too).

    result = attribute(planner, spec, task, records, proposal)
    result.critical, result.inconclusive, result.probes
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from statewise.interface import Action, InterfaceSpec, TaskSpec
from statewise.planner import Planner, PlannerError
from statewise.records import OpRecord

PROBE_MARK = "__counterfactual__"


class Probe(BaseModel):
    model_config = ConfigDict(frozen=True)
    record_id: str
    key: str
    variant: str = Field(description="'removed' or 'altered'.")
    changed: bool | None = Field(description="None when the planner failed on this probe.")
    action: str = Field(default="", description="The probe's action signature, for the trace.")


class Attribution(BaseModel):
    model_config = ConfigDict(frozen=True)
    critical: list[str] = Field(default_factory=list, description="Ids of decision-critical records.")
    inconclusive: list[str] = Field(
        default_factory=list, description="Strongly linked, dependence not shown."
    )
    probes: list[Probe] = Field(default_factory=list)

    @property
    def to_verify(self) -> list[str]:
        return self.critical + self.inconclusive


def alternative(spec: InterfaceSpec, record: OpRecord) -> Any:
    """A different value of the record's type, used only for planning (never executed)."""
    domain = spec.type_of(record.key).domain
    if domain:
        for value in domain:
            if value != record.value:
                return value
    if isinstance(record.value, bool):
        return not record.value
    if isinstance(record.value, int | float):
        return record.value + 1
    return f"{record.value}{PROBE_MARK}"


def _strongly_linked(spec: InterfaceSpec, task: TaskSpec, record: OpRecord, proposal: Action) -> bool:
    op = spec.operations.get(task.operation)
    declared = set(op.bound_keys(task.params).values()) if op is not None else set()
    return record.key in declared or any(v == record.value for v in proposal.slots.values())


def linked(spec: InterfaceSpec, task: TaskSpec, records: list[OpRecord], proposal: Action) -> list[OpRecord]:
    """The retrieved records linked to the proposal: of a key the operation's typed slots are declared to
    read, or carrying a value the proposed slots hold verbatim. Only these are probed (one planner call
    per probe), so records of unrelated keys cost nothing; they cannot reach the action through a slot."""
    op = spec.operations.get(task.operation)
    declared = set(op.bound_keys(task.params).values()) if op is not None else set()
    values = [] if proposal.is_stop else list(proposal.slots.values())
    return [r for r in records if r.key in declared or any(v == r.value for v in values)]


def attribute(
    planner: Planner, spec: InterfaceSpec, task: TaskSpec, records: list[OpRecord], proposal: Action
) -> Attribution:
    base = proposal.signature()
    critical: list[str] = []
    inconclusive: list[str] = []
    probes: list[Probe] = []
    for rec in linked(spec, task, records, proposal):
        outcomes: list[bool | None] = []
        variants = {
            "removed": [r for r in records if r.id != rec.id],
            "altered": [
                r.model_copy(update={"value": alternative(spec, r)}) if r.id == rec.id else r for r in records
            ],
        }
        for variant, context in variants.items():
            try:
                action = planner.propose(task, context)
            except PlannerError:
                outcomes.append(None)
                probes.append(Probe(record_id=rec.id, key=rec.key, variant=variant, changed=None))
                continue
            changed = action.signature() != base
            outcomes.append(changed)
            probes.append(
                Probe(
                    record_id=rec.id,
                    key=rec.key,
                    variant=variant,
                    changed=changed,
                    action=repr(action.signature()),
                )
            )
        if any(o is True for o in outcomes):
            critical.append(rec.id)
        elif (
            (any(o is None for o in outcomes) and _strongly_linked(spec, task, rec, proposal))
            or (not proposal.is_stop and any(v == rec.value for v in proposal.slots.values()))
        ):  # the action carries this record's value although the probes did not move it: not shown independent
            inconclusive.append(rec.id)
    return Attribution(critical=critical, inconclusive=inconclusive, probes=probes)
