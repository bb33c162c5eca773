"""Statistics of a synthesized manager corpus, next to the paper's D.2 figures.

    stats = CorpusStats.model_validate_json(Path("runs/synth/corpus/corpus_stats.json").read_text())
    print(render_markdown(stats))

`synthesis.export` writes the record (`corpus_stats.json`) when `make synth` exports a corpus;
`make tables RUN=<synth out_dir>` (eval.tables) reads and renders it. The record lives here because
both sides read it and neither may import the other. What it counts, over the kept trajectories:
control actions and tool calls (accepted), committed states (constraints, executable constraints,
variables, conclusions), relations by type, repairs by kind (light / heavy / abandon), interventions
by kind and variant (genuine / benign hard negative, detected or not), hints, and the two
lifecycle regimes. The paper's D.2 column is a reference for shape, not a target: the paper counts
its manager's behaviour on benchmark runs, we count the teacher's demonstrations.
"""

from __future__ import annotations

from pydantic import Field

from stateguard.records import Record

__all__ = ["PAPER_D2", "CorpusStats", "render_markdown"]

# Paper D.2 (manager with DeepSeek-V4-Pro), for side-by-side reading.
PAPER_D2: dict[str, str] = {
    "constraints_per_state": "3-4",
    "variables_per_state": "3-5",
    "conclusions_per_state": "2-3",
    "relations": "LongDS: combine 44.0%, progress 34.3%, branch 14.6%; DAComp-DE: progress 56.8% / 64.5%",
    "hints": "LongDS: 1,827 state hints vs 36 error hints",
    "repairs_per_task": "0.20-0.52 (mostly first attempts; heavy repair rare)",
    "tool_use": "evidence tools on 96% of LongDS tasks, all DAComp-DE tasks",
    "regimes": "turn-aligned (LongDS) and segment-induced (DABstep, DAComp-DE)",
}


class CorpusStats(Record):
    tasks: int = 0
    trajectories: int = Field(default=0, description="kept trajectories")
    attempted: int = 0
    by_variant: dict[str, int] = Field(default_factory=dict)
    by_flow: dict[str, int] = Field(
        default_factory=dict, description="kept trajectories per task shape / flow"
    )
    by_regime: dict[str, int] = Field(
        default_factory=dict, description="kept trajectories per lifecycle regime"
    )
    samples_by_regime: dict[str, int] = Field(default_factory=dict)
    actions: dict[str, int] = Field(default_factory=dict, description="accepted control actions")
    tools: dict[str, int] = Field(default_factory=dict, description="accepted tool calls by tool")
    states: int = Field(default=0, description="committed states")
    constraints_per_state: float = 0.0
    executable_constraints_per_state: float = 0.0
    constraints_per_state_stated: float = Field(
        default=0.0, description="over states whose question states a checkable requirement"
    )
    variables_per_state: float = 0.0
    conclusions_per_state: float = 0.0
    relations: dict[str, int] = Field(default_factory=dict, description="committed relations by type")
    repairs: dict[str, int] = Field(
        default_factory=dict, description="light / heavy repairs, abandoned states"
    )
    rollbacks: int = 0
    interventions: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="intervention kind -> variant -> kept trajectories"
    )
    intervention_samples: dict[str, int] = Field(
        default_factory=dict, description="SFT samples of intervention trajectories: genuine / benign"
    )
    detected: dict[str, int] = Field(
        default_factory=dict, description="genuine interventions repaired / missed"
    )
    hints: dict[str, int] = Field(default_factory=dict, description="hints delivered by kind")
    rl_rows: int = 0
    rl_by_action: dict[str, int] = Field(default_factory=dict)
    rl_labels: dict[str, int] = Field(default_factory=dict, description="g=1 / g=0 / benign decision points")
    elapsed_s: float = 0.0
    kept_per_minute: float = 0.0

    @property
    def benign_share(self) -> float:
        total = sum(self.intervention_samples.values())
        return self.intervention_samples.get("benign", 0) / total if total else 0.0


def _mix(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    if not total:
        return "none"
    return ", ".join(
        f"{k} {v} ({100 * v / total:.1f}%)" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])
    )


def render_markdown(stats: CorpusStats) -> str:
    """One Markdown table: what the corpus shows, and the paper's D.2 figure where it has one."""
    s = stats
    per_task = (s.repairs.get("light", 0) + s.repairs.get("heavy", 0)) / s.tasks if s.tasks else 0.0
    rows = [
        ("trajectories kept / attempted", f"{s.trajectories} / {s.attempted} ({_mix(s.by_variant)})", "3K"),
        ("task shapes", _mix(s.by_flow), ""),
        ("regimes (trajectories)", _mix(s.by_regime), PAPER_D2["regimes"]),
        ("regimes (SFT samples)", _mix(s.samples_by_regime), ""),
        ("control actions", _mix(s.actions), ""),
        ("tool calls", _mix(s.tools), PAPER_D2["tool_use"]),
        ("committed states", str(s.states), ""),
        (
            "constraints / state (all; where the question states requirements)",
            f"{s.constraints_per_state:.2f}; {s.constraints_per_state_stated:.2f}",
            PAPER_D2["constraints_per_state"],
        ),
        ("executable constraints / state", f"{s.executable_constraints_per_state:.2f}", ""),
        ("variables / state", f"{s.variables_per_state:.2f}", PAPER_D2["variables_per_state"]),
        ("conclusions / state", f"{s.conclusions_per_state:.2f}", PAPER_D2["conclusions_per_state"]),
        ("relations", _mix(s.relations), PAPER_D2["relations"]),
        (
            "repairs (light / heavy / abandoned), rollbacks",
            f"{s.repairs.get('light', 0)} / {s.repairs.get('heavy', 0)} / {s.repairs.get('abandon', 0)}, {s.rollbacks}",
            "",
        ),
        ("repairs per task", f"{per_task:.2f}", PAPER_D2["repairs_per_task"]),
        (
            "interventions (kind: variants)",
            "; ".join(
                f"{k}: {', '.join(f'{v} {n}' for v, n in sorted(d.items()))}"
                for k, d in sorted(s.interventions.items())
            )
            or "none",
            "",
        ),
        (
            "intervention SFT samples (genuine / benign)",
            f"{s.intervention_samples.get('genuine', 0)} / {s.intervention_samples.get('benign', 0)} "
            f"(benign {100 * s.benign_share:.1f}%)",
            "benign interventions serve as hard negatives (3.4)",
        ),
        (
            "genuine interventions detected / missed",
            f"{s.detected.get('detected', 0)} / {s.detected.get('missed', 0)}",
            "",
        ),
        ("hints", _mix(s.hints), PAPER_D2["hints"]),
        ("RL decision points", f"{s.rl_rows} ({_mix(s.rl_by_action)}); labels {_mix(s.rl_labels)}", ""),
        ("build", f"{s.elapsed_s:.0f} s, {s.kept_per_minute:.1f} kept trajectories / min", ""),
    ]
    lines = ["| statistic | this corpus | paper D.2 |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines) + "\n"
