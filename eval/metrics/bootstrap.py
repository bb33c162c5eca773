"""Paired cluster bootstrap over tasks (paper C.3, "Statistical Robustness").

Turns of one task are correlated, so the resampling unit is the task: each resample draws
n tasks with replacement, keeps all their turns, and computes the gain (StateGuard minus
baseline) on the *same* drawn tasks for both arms (paired). Reported: the observed gain, the
mean gain over resamples, the 95% percentile interval, and the share of resamples whose gain
is <= 0 (C.3: 10,000 resamples; 9.44 points, [1.69, 14.13], 0.59% non-positive).

    base, guard = accuracy_stats(baseline_units), accuracy_stats(stateguard_units)   # paired by task
    result = paired_cluster_bootstrap(base, guard, micro_accuracy, seed=0)
    result.ci_low, result.ci_high, result.share_nonpositive

How it is vectorized. Every metric here is a function of *sums over tasks* of a small per-task
statistic vector (micro accuracy: [correct, scored]; task-macro accuracy: [task accuracy, 1];
DCR: the four counts of Eq. 31). A resample is then an index matrix (B x n), the totals are one
fancy-indexed sum, and the metric maps the (B x k) totals to B values; there is no Python loop
over resamples or turns. A metric returns NaN where it is undefined (e.g. DCR with an empty
group); such resamples are dropped from the mean, the interval and the share, and counted.
Resamples are drawn in chunks of a size fixed by the input shape, so a seed always gives the
same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field

from eval.metrics.accuracy import UnitOutcome, per_task
from eval.metrics.dcr import DCRResult

Metric = Callable[[NDArray[np.float64]], NDArray[np.float64]]
"""Maps totals of shape (B, k) to B metric values (NaN where undefined)."""

_CHUNK_CELLS = 4_000_000  # index-matrix cells per chunk: bounds memory at ~32 MB per array


class TaskStats(BaseModel):
    """Per-task statistic vectors of one arm, in a fixed task order (the pairing key)."""

    model_config = ConfigDict(frozen=True)

    task_ids: list[str]
    columns: list[str]
    values: list[list[float]] = Field(description="One row per task, one column per statistic.")

    def array(self) -> NDArray[np.float64]:
        return np.asarray(self.values, dtype=np.float64).reshape(len(self.task_ids), len(self.columns))


class BootstrapResult(BaseModel):
    """Outcome of `paired_cluster_bootstrap`; gains are treatment minus baseline, in metric units."""

    model_config = ConfigDict(frozen=True)

    n_tasks: int
    n_resamples: int
    n_defined: int = Field(description="Resamples where the metric was defined in both arms.")
    seed: int | None
    confidence: float
    observed_gain: float | None = Field(description="Gain on the original tasks (no resampling).")
    mean_gain: float | None
    ci_low: float | None
    ci_high: float | None
    share_nonpositive: float | None = Field(description="Share of defined resamples with gain <= 0.")


def _safe_ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def micro_accuracy(totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """C.3 micro accuracy from columns [correct, scored] (see `accuracy_stats`)."""
    return _safe_ratio(totals[:, 0], totals[:, 1])


def task_macro_accuracy(totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """C.3 task-macro accuracy from columns [task accuracy, 1] (see `macro_accuracy_stats`)."""
    return _safe_ratio(totals[:, 0], totals[:, 1])


def dcr_metric(totals: NDArray[np.float64]) -> NDArray[np.float64]:
    """Eq. 31 from columns [contaminated_bad, contaminated_n, clean_bad, clean_n] (see `dcr_stats`)."""
    return _safe_ratio(totals[:, 0], totals[:, 1]) - _safe_ratio(totals[:, 2], totals[:, 3])


def accuracy_stats(units: Iterable[UnitOutcome]) -> TaskStats:
    """Per task [correct, scored] for `micro_accuracy`; task order is first-seen."""
    tasks = per_task(units)
    return TaskStats(
        task_ids=list(tasks),
        columns=["correct", "scored"],
        values=[[s.correct, s.scored] for s in tasks.values()],
    )


def macro_accuracy_stats(units: Iterable[UnitOutcome]) -> TaskStats:
    """Per task [accuracy, 1] for `task_macro_accuracy`; a task with nothing scored gets [0, 0]."""
    tasks = per_task(units)
    rows = [[s.value, 1.0] if s.value is not None else [0.0, 0.0] for s in tasks.values()]
    return TaskStats(task_ids=list(tasks), columns=["accuracy", "tasks"], values=rows)


def dcr_stats(results: Sequence[tuple[str, DCRResult]]) -> TaskStats:
    """Per task the four Eq. 31 counts for `dcr_metric`, from (task_id, DCRResult) pairs."""
    return TaskStats(
        task_ids=[task for task, _ in results],
        columns=["contaminated_bad", "contaminated_n", "clean_bad", "clean_n"],
        values=[[r.contaminated_bad, r.contaminated_n, r.clean_bad, r.clean_n] for _, r in results],
    )


def _paired(
    baseline: TaskStats | ArrayLike, treatment: TaskStats | ArrayLike
) -> tuple[NDArray[np.float64], ...]:
    if isinstance(baseline, TaskStats) and isinstance(treatment, TaskStats):
        for arm, stats in (("baseline", baseline), ("treatment", treatment)):
            if len(set(stats.task_ids)) != len(stats.task_ids):
                raise ValueError(f"{arm}: a task id appears twice in task_ids; give one row per task")
        if baseline.columns != treatment.columns:
            raise ValueError(
                f"baseline columns {baseline.columns} != treatment columns {treatment.columns}; "
                "build both arms with the same *_stats function"
            )
        if set(baseline.task_ids) != set(treatment.task_ids):
            only_b = sorted(set(baseline.task_ids) - set(treatment.task_ids))[:5]
            only_t = sorted(set(treatment.task_ids) - set(baseline.task_ids))[:5]
            raise ValueError(
                f"the bootstrap is paired, so both arms need the same tasks; only in baseline: {only_b}, "
                f"only in treatment: {only_t}; score both arms on the same task list"
            )
        order = {task: i for i, task in enumerate(baseline.task_ids)}
        t = treatment.array()[np.argsort([order[task] for task in treatment.task_ids])]
        return baseline.array(), t
    b = np.asarray(baseline.array() if isinstance(baseline, TaskStats) else baseline, dtype=np.float64)
    t = np.asarray(treatment.array() if isinstance(treatment, TaskStats) else treatment, dtype=np.float64)
    if b.ndim != 2 or b.shape != t.shape:
        raise ValueError(
            f"baseline {b.shape} and treatment {t.shape}: give two (tasks x statistics) arrays of one shape, "
            "rows in the same task order"
        )
    return b, t


def paired_cluster_bootstrap(
    baseline: TaskStats | ArrayLike,
    treatment: TaskStats | ArrayLike,
    metric: Metric = micro_accuracy,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> BootstrapResult:
    """C.3 paired cluster bootstrap of metric(treatment) - metric(baseline) over tasks.

    Percentile interval with numpy's default (linear) interpolation. With `seed=None` the
    generator is seeded from the OS (not reproducible).
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples}: need at least 1 (the paper uses 10,000)")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence}: give a level strictly between 0 and 1, e.g. 0.95")
    b, t = _paired(baseline, treatment)
    n, k = b.shape
    if n == 0:
        raise ValueError("no tasks to resample; the bootstrap needs at least one task per arm")
    observed = float((metric(t.sum(axis=0, keepdims=True)) - metric(b.sum(axis=0, keepdims=True)))[0])
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // (n * k)))
    gains = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):  # a few chunks, not one iteration per resample
        size = min(chunk, n_resamples - start)
        idx = rng.integers(0, n, size=(size, n))
        gains[start : start + size] = metric(t[idx].sum(axis=1)) - metric(b[idx].sum(axis=1))
    defined = gains[np.isfinite(gains)]
    if defined.size == 0:
        return BootstrapResult(
            n_tasks=n,
            n_resamples=n_resamples,
            n_defined=0,
            seed=seed,
            confidence=confidence,
            observed_gain=observed if np.isfinite(observed) else None,
            mean_gain=None,
            ci_low=None,
            ci_high=None,
            share_nonpositive=None,
        )
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return BootstrapResult(
        n_tasks=n,
        n_resamples=n_resamples,
        n_defined=int(defined.size),
        seed=seed,
        confidence=confidence,
        observed_gain=observed if np.isfinite(observed) else None,
        mean_gain=float(defined.mean()),
        ci_low=float(low),
        ci_high=float(high),
        share_nonpositive=float(np.mean(defined <= 0.0)),
    )
