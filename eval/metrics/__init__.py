"""Evaluation metrics of the paper: accuracy, DCR, the paired cluster bootstrap, manager overhead,
and the state/intervention statistics. Every function is pure over typed inputs (per-unit
verdicts, parent maps, trace events, a state store) and imports only `stateguard`.

    from eval.metrics import dcr, pooled_dcr, paired_cluster_bootstrap, accuracy_stats
    bench = pooled_dcr(dcr(correct, parents) for correct, parents in tasks)      # C.4, Eq. 31
    boot = paired_cluster_bootstrap(accuracy_stats(base), accuracy_stats(guard))  # C.3

| module | paper | what |
|---|---|---|
| `accuracy.py` | C.3 | micro accuracy per domain / level / benchmark, task-macro accuracy; None = excluded |
| `dcr.py` | Sec. 4.3, C.4, Eq. 31 | DCR and the risk ratio RR, per task and pooled over a benchmark |
| `bootstrap.py` | C.3 | paired cluster bootstrap over tasks (10,000 resamples, 95% percentile CI) |
| `overhead.py` | D.1, Eq. 32, Table 5 | T_M = Delta_bdry - Delta_local - Delta_harness; manager calls per task |
| `states.py` | D.2, Figure 4 | states per task, coverage, content per state, relation mix, hints, repairs, tools |
"""

from eval.metrics.accuracy import (
    AccuracySummary,
    UnitOutcome,
    accuracy,
    accuracy_by,
    per_task,
    task_macro_accuracy,
    unit_outcomes,
)
from eval.metrics.bootstrap import (
    BootstrapResult,
    TaskStats,
    accuracy_stats,
    dcr_metric,
    dcr_stats,
    macro_accuracy_stats,
    micro_accuracy,
    paired_cluster_bootstrap,
)
from eval.metrics.dcr import DCRResult, dcr, int_keyed, parents_from_graph, pooled_dcr
from eval.metrics.overhead import (
    INTERRUPTED_S,
    ManagerCallStats,
    OverheadDecomposition,
    StepIntervals,
    decompose,
    manager_call_stats,
    step_intervals,
)
from eval.metrics.states import RunStateStats, StateStatsSummary, run_state_stats, summarize

__all__ = [
    "INTERRUPTED_S",
    "AccuracySummary",
    "BootstrapResult",
    "DCRResult",
    "ManagerCallStats",
    "OverheadDecomposition",
    "RunStateStats",
    "StateStatsSummary",
    "StepIntervals",
    "TaskStats",
    "UnitOutcome",
    "accuracy",
    "accuracy_by",
    "accuracy_stats",
    "dcr",
    "dcr_metric",
    "dcr_stats",
    "decompose",
    "int_keyed",
    "macro_accuracy_stats",
    "manager_call_stats",
    "micro_accuracy",
    "paired_cluster_bootstrap",
    "parents_from_graph",
    "per_task",
    "pooled_dcr",
    "run_state_stats",
    "step_intervals",
    "summarize",
    "task_macro_accuracy",
    "unit_outcomes",
]
