"""Intervention quality: R_intervention (paper Eq. 8 with the coefficients of Eq. 30).

    points = decision_points(rollout)
    outcomes = score_decisions(rollout, points, labels, config, ledger); r = r_intervention(outcomes)

A decision point is a verification opportunity: the draft stands at lifecycle stage `updated`
(materialized, awaiting a verdict) -- at the start of the continuation, after each UPDATE_STATE
from `open` or `repairing` (e.g. after the worker's retry), or at a review that finds the draft
there. Its decision d_i is the first applied control action that leaves the verdict stage
(UPDATE_STATE only revises the draft and keeps the point open); none if the continuation ends first.

Labels are matched to decision points in order. A label whose point was never reached scores with
d_i = none; a point beyond the labels asks the judge for g_i and is left out of M without one.
Per point i, with pass decisions P (config.pass_actions):

    R_i = q_i·I[g=1, d=REPAIR] + I[g=0, d∈P] − β_fp·I[g=0, d=REPAIR] − β_fn·I[g=1, d≠REPAIR]

q_i (repair of a genuine inconsistency) from the repair's named variables N and the label's
affected variables A: N ∩ A = ∅ -> misleading; A ⊆ N and |N| ≤ slack·|A| -> localized, else
partial. A localized repair is correct when the worker's retry rewrote an affected variable and
the state was then committed; one followed by abandonment, another repair, or a commit without
that recomputation is partial. Unknown A, or a retry the continuation does not show, goes to the
judge, and without one takes config.undecided_quality.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from stateguard.actions import RepairArgs
from stateguard.artifacts.events import StateCommittedEvent, StateUpdatedEvent, WorkerStepEvent
from stateguard.lifecycle import ControlAction, Stage
from stateguard.trace_payloads import named_args
from training.rewards.config import RewardConfig
from training.rewards.evidence import state_evidence, written_names
from training.rewards.judge import Adjudicator, How, JudgeCase
from training.rewards.labels import DecisionLabel, RewardLabels
from training.rewards.timeline import Rollout

REPAIR = ControlAction.REPAIR.value


class DecisionPoint(BaseModel):
    """One verification opportunity in the continuation and the manager's decision there."""

    model_config = ConfigDict(frozen=True)

    seq: int
    state_id: str | None
    decision: str | None = None
    decision_seq: int | None = None
    arguments: dict[str, Any] = {}

    @property
    def repair(self) -> RepairArgs | None:
        """The decision's arguments when it was a REPAIR (typed; None for any other decision)."""
        return named_args(self.decision, self.arguments, RepairArgs)

    @property
    def named(self) -> list[str]:
        repair = self.repair
        return [] if repair is None else [n.split("@")[0] for n in repair.error_hint.error_variables]


class DecisionOutcome(BaseModel):
    """R_i for one decision point, with how g_i and q_i were obtained."""

    model_config = ConfigDict(frozen=True)

    index: int
    seq: int | None
    state_id: str | None
    decision: str | None
    label: DecisionLabel | None
    inconsistent: bool | None
    inconsistent_by: Literal["label", "judge", "conservative"]
    quality: float | None = None
    quality_by: How | None = None
    reward: float | None
    reason: str


def decision_points(rollout: Rollout) -> list[DecisionPoint]:
    """The continuation's decision points in order (see the module docstring)."""
    actions = {a.seq: a for a in rollout.actions}
    draft: str | None = None
    points: list[DecisionPoint] = []
    open_at: int | None = rollout.start_seq if rollout.start_stage is Stage.UPDATED else None
    for event in rollout.events:
        if event.kind == "state_opened":
            draft = event.data.state_id
        if not rollout.in_window(event.seq):
            continue
        if event.kind == "review" and event.data.stage == Stage.UPDATED.value and open_at is None:
            open_at = event.seq
        act = actions.get(event.seq) if event.kind == "action" else None
        if act is None or not act.accepted or act.control is None:
            continue
        if act.control is ControlAction.UPDATE_STATE:
            if act.stage_before in (Stage.OPEN, Stage.REPAIRING) and open_at is None:
                open_at = event.seq
        elif act.stage_before is Stage.UPDATED:
            seq = event.seq if open_at is None else open_at
            points.append(
                DecisionPoint(
                    seq=seq,
                    state_id=draft,
                    decision=act.name,
                    decision_seq=event.seq,
                    arguments=act.arguments,
                )
            )
            open_at = None
    if open_at is not None:
        points.append(DecisionPoint(seq=open_at, state_id=draft))
    return points


def decision_reward(
    inconsistent: bool, decision: str | None, quality: float | None, config: RewardConfig
) -> float:
    """R_i^+ − R_i^- of Eq. 8 for one decision point."""
    repair = decision == REPAIR
    passed = decision in {a.value for a in config.pass_actions}
    plus = (quality or 0.0) * (inconsistent and repair) + 1.0 * (not inconsistent and passed)
    minus = config.beta_fp * (not inconsistent and repair) + config.beta_fn * (inconsistent and not repair)
    return plus - minus


def localization(named: Sequence[str], affected: Sequence[str], slack: float) -> str:
    """misleading / partial / localized, or unknown when the label names no variables."""
    if not affected:
        return "unknown"
    hit = set(named) & set(affected)
    if not hit:
        return "misleading"
    if set(affected) <= set(named) and len(set(named)) <= slack * len(set(affected)):
        return "localized"
    return "partial"


def effectiveness(rollout: Rollout, point: DecisionPoint, targets: Sequence[str]) -> tuple[str, str]:
    """(effective / ineffective / unknown, why) for the repair decided at `point`."""
    assert point.decision_seq is not None
    after = [e for e in rollout.events if e.seq > point.decision_seq]
    end, end_kind = None, None
    for event in after:
        if event.kind == "state_committed" and event.data.state.id == point.state_id:
            end, end_kind = event.seq, "committed"
        elif event.kind == "state_abandoned" and event.data.state_id == point.state_id:
            end, end_kind = event.seq, "abandoned"
        elif event.kind == "repair" and event.data.state_id == point.state_id:
            end, end_kind = event.seq, "repaired again"
        if end is not None:
            break
    retry = [e.data for e in after if isinstance(e, WorkerStepEvent) and (end is None or e.seq < end)]
    rewrote = any(set(targets) & set(written_names(s)) for s in retry if s.success and not s.error)
    if end_kind == "committed" and rewrote:
        return "effective", "the retry recomputed an affected variable and the state was committed"
    if end_kind is not None:
        done = "recomputed" if rewrote else "did not recompute"
        return "ineffective", f"the retry {done} the affected variables; the state was then {end_kind}"
    return "unknown", "the continuation ends before the repaired state is settled"


def _quality_case(rollout: Rollout, point: DecisionPoint, label: DecisionLabel) -> JudgeCase:
    repair = point.repair
    named, reasoning = (
        (repair.error_hint.error_variables, repair.error_hint.faulty_reasoning) if repair else (None, None)
    )
    affected = label.affected_variables or "unknown variables"
    subject = (
        f"Known inconsistency in state {point.state_id}: affects {affected} "
        f"(kind: {label.intervention_kind or 'unknown'}). The manager's REPAIR named "
        f"{named} with the reason {reasoning!r} "
        f"and the evidence {repair.analytical_evidence if repair else None!r}."
    )
    after = [e for e in rollout.events if point.decision_seq is not None and e.seq > point.decision_seq]
    evidence = [
        f"worker step {e.data.index}: {e.data.action}\noutput: {e.data.output}"
        for e in after
        if isinstance(e, WorkerStepEvent)
    ][:20]
    evidence += [
        f"committed state: {e.data.state.model_dump(mode='json')}"
        for e in after
        if isinstance(e, StateCommittedEvent)
    ][:2]
    return JudgeCase(kind="repair_quality", subject=subject, evidence=evidence)


def repair_quality(
    rollout: Rollout, point: DecisionPoint, label: DecisionLabel, config: RewardConfig, ledger: Adjudicator
) -> tuple[float, How, str]:
    """q_i of Eq. 30 for a repair at a labelled inconsistency."""
    scale = {"correct": config.q_correct, "partial": config.q_partial, "misleading": config.q_misleading}
    where = localization(point.named, label.affected_variables, config.localization_slack)
    if where in ("misleading", "partial"):
        return scale[where], "evidence", f"repair is {where}ly localized: named {point.named}"
    if where == "localized":
        how_well, why = effectiveness(rollout, point, label.affected_variables)
        if how_well != "unknown":
            return (config.q_correct if how_well == "effective" else config.q_partial), "evidence", why
    else:
        why = "the label does not say which variables are affected"
    verdict, how = ledger.decide(_quality_case(rollout, point, label), conservative=None)
    if verdict is None:
        return config.undecided_quality, "conservative", why
    return scale[verdict], how, f"judge: {verdict}"


def _inconsistency_case(rollout: Rollout, point: DecisionPoint) -> JudgeCase:
    upto = point.decision_seq or point.seq
    updates = [e for e in rollout.of_kind(StateUpdatedEvent) if e.seq <= upto]
    drafts = [e.data.draft for e in updates if e.data.state_id == point.state_id]
    draft = drafts[-1] if drafts else {"id": point.state_id}
    return JudgeCase(
        kind="inconsistency",
        subject=f"Draft state: {draft}",
        evidence=state_evidence(rollout, draft).digest(),
    )


def score_decisions(
    rollout: Rollout,
    points: Sequence[DecisionPoint],
    labels: RewardLabels,
    config: RewardConfig,
    ledger: Adjudicator,
) -> list[DecisionOutcome]:
    """R_i for every labelled or judged decision point, in order."""
    outcomes = []
    for i in range(max(len(points), len(labels.decision_points))):
        point = points[i] if i < len(points) else None
        label = labels.decision_points[i] if i < len(labels.decision_points) else None
        decision = point.decision if point else None
        base = {
            "index": i,
            "seq": point and point.seq,
            "state_id": point and point.state_id,
            "decision": decision,
            "label": label,
        }
        if label is not None:
            g: bool | None = label.inconsistent
            g_by: Literal["label", "judge", "conservative"] = "label"
        else:
            assert point is not None
            verdict, how = ledger.decide(_inconsistency_case(rollout, point), conservative=None)
            g = None if verdict is None else verdict == "inconsistent"
            g_by = "judge" if how == "judge" else "conservative"
        if g is None:
            why = "unlabelled and no judge verdict: left out of M"
            outcomes.append(
                DecisionOutcome(**base, inconsistent=None, inconsistent_by=g_by, reward=None, reason=why)
            )
            continue
        quality, quality_by, why = None, None, "no repair"
        if (
            g and decision == REPAIR and point is not None
        ):  # a judged point: nothing known about what is wrong
            known = label or DecisionLabel(inconsistent=True)
            quality, quality_by, why = repair_quality(rollout, point, known, config, ledger)
        reached = "" if point else "never reached; "
        outcomes.append(
            DecisionOutcome(
                **base,
                inconsistent=g,
                inconsistent_by=g_by,
                quality=quality,
                quality_by=quality_by,
                reward=decision_reward(g, decision, quality, config),
                reason=reached + why,
            )
        )
    return outcomes


def r_intervention(outcomes: Sequence[DecisionOutcome]) -> float | None:
    """R_intervention (Eq. 8): (1/M) Σ_i (R_i^+ − R_i^-) over scored points; None when M = 0."""
    scored = [o.reward for o in outcomes if o.reward is not None]
    return sum(scored) / len(scored) if scored else None
