"""Corpus statistics (`stateguard.corpus_stats.CorpusStats`) from the exported trajectories.

    stats = corpus_stats(kept, attempted, sft_samples, rl_rows, tasks=12, elapsed_s=300.0)

Counted over the kept trajectories: accepted control actions and tool calls, what each committed
state holds (constraints, executable ones, variables, conclusions, relation types), repairs by kind
(light, heavy, abandoned), rollbacks, interventions by kind and variant, the genuine / benign split
of the intervention trajectories' SFT samples, hints, and the lifecycle regimes; plus the RL
decision points by action and label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from stateguard.artifacts.corpus_records import TrajectoryRecord
from stateguard.artifacts.rl_prompts import RlPromptRow
from stateguard.artifacts.sft_rows import SftRow
from stateguard.corpus_stats import CorpusStats
from synthesis.teacher import flow_named

__all__ = ["corpus_stats"]


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def corpus_stats(
    kept: Sequence[TrajectoryRecord],
    attempted: Sequence[TrajectoryRecord],
    samples: Sequence[SftRow],
    rows: Sequence[RlPromptRow],
    *,
    tasks: int,
    elapsed_s: float,
) -> CorpusStats:
    actions: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    for rec in kept:
        for act in rec.activations:
            for a in act.actions:
                if a.accepted:
                    (actions if a.control else tools)[a.name] += 1
    states = [s for rec in kept for s in rec.states]
    stated = [s for s in states if s.constraints]
    repairs: Counter[str] = Counter(m for rec in kept for m in rec.repair_modes)
    repairs["abandon"] = actions.get("ABANDON_STATE", 0)
    interventions: dict[str, Counter[str]] = {}
    detected: Counter[str] = Counter()
    for rec in kept:
        if rec.intervention is None:
            continue
        interventions.setdefault(rec.intervention.kind.value, Counter())[rec.variant] += 1
        if not rec.benign:
            detected["detected" if rec.repair_modes else "missed"] += 1
    for rec in attempted:  # auto branches the live manager did not catch are the misses we know of
        if rec.variant == "auto" and not rec.keep and "autonomous_detection" in rec.rejections:
            detected["missed"] += 1
    samples_kind: Counter[str] = Counter()
    samples_regime: Counter[str] = Counter()
    for s in samples:
        samples_regime[s.regime] += 1
        if s.variant != "clean":
            samples_kind["benign" if s.benign else "genuine"] += 1
    labels: Counter[str] = Counter()
    for row in rows:
        lab = row.extra_info.label()
        labels["benign" if lab.benign else ("g=1" if lab.g else "g=0")] += 1
    return CorpusStats(
        tasks=tasks,
        trajectories=len(kept),
        attempted=len(attempted),
        by_variant=dict(Counter(r.variant for r in kept)),
        by_flow=dict(Counter(r.flow for r in kept)),
        by_regime=dict(Counter(flow_named(r.flow).regime.value for r in kept)),
        samples_by_regime=dict(samples_regime),
        actions=dict(actions),
        tools=dict(tools),
        states=len(states),
        constraints_per_state=_mean([s.constraints for s in states]),
        executable_constraints_per_state=_mean([s.executable for s in states]),
        constraints_per_state_stated=_mean([s.constraints for s in stated]),
        variables_per_state=_mean([s.variables for s in states]),
        conclusions_per_state=_mean([s.conclusions for s in states]),
        relations=dict(Counter(t for s in states for t in s.relations)),
        repairs=dict(repairs),
        rollbacks=sum(r.rollbacks for r in kept),
        interventions={k: dict(v) for k, v in sorted(interventions.items())},
        intervention_samples=dict(samples_kind),
        detected=dict(detected),
        hints=dict(sum((Counter(r.hints) for r in kept), Counter())),
        rl_rows=len(rows),
        rl_by_action=dict(Counter(r.reward_model.truth().action for r in rows)),
        rl_labels=dict(labels),
        elapsed_s=round(elapsed_s, 1),
        kept_per_minute=round(len(kept) / (elapsed_s / 60), 1) if elapsed_s > 0 else 0.0,
    )
