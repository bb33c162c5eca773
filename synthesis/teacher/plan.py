"""What the synthesis teacher knows about one trajectory: the privileged plan (paper 3.4, B.3).

The plan's models (`TeacherPlan`, `StageCheck`, `Segment`, `Variant`) are stored with corpus
records and RL rows, so they live in `stateguard.artifacts.teacher_plan`; this module holds the
flows synthesized tasks run under.

At synthesis time the teacher knows the counterfactual θ -> θ' it injected, the task's hidden
relation graph and where each analytical stage ends. A `TeacherPlan` holds exactly that, and
nothing else decides what `TeacherPolicy` does; the same plan, stored with every RL row, lets
`training.rl.prefix` rebuild the identical prefix.

    plan = TeacherPlan(variant="repair", flow="longds", fault_turn=4, target="adelie_heavy",
                       kind="numeric_parameter", reason="...", checks={"adelie_heavy": StageCheck(...)})

The knowledge is used only to *choose* steps: which stage to recompute as the task states it
(`StageCheck.stated_sql`, the reference SQL), where a segment ends, which earlier state a
definition update replaces. Every choice becomes a tool call whose result is in the trajectory,
and the decision follows from that result.
"""

from __future__ import annotations

from stateguard.flows import DABSTEP, DACOMP_DE, LONGDS, FlowConfig

__all__ = ["FLOWS", "flow_named"]

# The flows synthesized tasks run under. Cadences are the benchmarks' (A.1); the worker budgets are
# larger than Table 3's because the scripted worker spends one step per code block and redoes the
# whole task after a repair.
FLOWS: dict[str, FlowConfig] = {
    "longds": LONGDS,
    "dabstep": DABSTEP.model_copy(
        update={"name": "dabstep_synth", "baseline_budget": 80, "stateguard_budget": 80}
    ),
    "dacomp_de": DACOMP_DE.model_copy(
        update={"name": "dacomp_de_synth", "baseline_budget": 120, "stateguard_budget": 120}
    ),
}


def flow_named(name: str) -> FlowConfig:
    try:
        return FLOWS[name]
    except KeyError:
        raise ValueError(f"unknown synthesis flow {name!r}; known: {sorted(FLOWS)}") from None
