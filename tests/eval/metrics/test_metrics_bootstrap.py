"""Paired cluster bootstrap (C.3): known distributions, reproducibility, pairing, undefined resamples."""

from __future__ import annotations

import numpy as np
import pytest

import eval.metrics.bootstrap as bootstrap_module
from eval.metrics.accuracy import unit_outcomes
from eval.metrics.bootstrap import (
    TaskStats,
    accuracy_stats,
    dcr_metric,
    dcr_stats,
    macro_accuracy_stats,
    micro_accuracy,
    paired_cluster_bootstrap,
    task_macro_accuracy,
)
from eval.metrics.dcr import DCRResult


def test_identical_tasks_collapse_the_interval() -> None:
    # every task: baseline 1/2 right, StateGuard 2/2 -> every resample gains exactly 0.5
    result = paired_cluster_bootstrap([[1, 2]] * 5, [[2, 2]] * 5, n_resamples=2000, seed=3)
    assert result.observed_gain == 0.5 and result.mean_gain == 0.5
    assert (result.ci_low, result.ci_high) == (0.5, 0.5)
    assert result.share_nonpositive == 0.0 and result.n_defined == 2000


def test_two_tasks_have_a_known_resampling_distribution() -> None:
    # task A: 0/1 -> 1/1 (gain +1), task B: 1/1 -> 0/1 (gain -1). Drawing 2 tasks with replacement:
    # AA (p 1/4) gains +1, AB/BA (p 1/2) gain 0, BB (p 1/4) gains -1.
    result = paired_cluster_bootstrap([[0, 1], [1, 1]], [[1, 1], [0, 1]], seed=0)
    assert result.n_resamples == 10_000 and result.n_tasks == 2
    assert result.observed_gain == 0.0
    assert (result.ci_low, result.ci_high) == (-1.0, 1.0)
    assert result.share_nonpositive == pytest.approx(0.75, abs=0.02)  # sd ~0.004
    assert result.mean_gain == pytest.approx(0.0, abs=0.03)  # sd ~0.007


def test_same_seed_same_numbers_other_seed_other_numbers() -> None:
    rng = np.random.default_rng(11)
    scored = rng.integers(5, 40, size=30)
    base = np.stack([rng.binomial(scored, 0.45), scored], axis=1)
    guard = np.stack([rng.binomial(scored, 0.55), scored], axis=1)
    first = paired_cluster_bootstrap(base, guard, seed=42, n_resamples=3000)
    assert paired_cluster_bootstrap(base, guard, seed=42, n_resamples=3000) == first
    assert paired_cluster_bootstrap(base, guard, seed=43, n_resamples=3000).mean_gain != first.mean_gain
    observed = guard[:, 0].sum() / guard[:, 1].sum() - base[:, 0].sum() / base[:, 1].sum()
    assert first.observed_gain == pytest.approx(observed)
    assert first.ci_low is not None and first.ci_high is not None and first.ci_low < observed < first.ci_high


def test_vectorized_draws_equal_a_plain_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same generator, resample by resample in Python: the same mean gain; chunking changes nothing."""
    base = np.array([[3, 5], [0, 4], [7, 9], [2, 2], [1, 6]], dtype=float)
    guard = np.array([[4, 5], [1, 4], [6, 9], [2, 2], [4, 6]], dtype=float)
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 5, size=(400, 5))
    loop = [
        guard[row, 0].sum() / guard[row, 1].sum() - base[row, 0].sum() / base[row, 1].sum() for row in idx
    ]
    result = paired_cluster_bootstrap(base, guard, seed=5, n_resamples=400)
    assert result.mean_gain == pytest.approx(float(np.mean(loop)))
    assert result.share_nonpositive == pytest.approx(float(np.mean(np.array(loop) <= 0)))
    monkeypatch.setattr(bootstrap_module, "_CHUNK_CELLS", 30)  # 3 resamples per chunk
    assert paired_cluster_bootstrap(base, guard, seed=5, n_resamples=400) == result


def test_pairing_follows_task_ids_not_row_order() -> None:
    base = TaskStats(task_ids=["a", "b", "c"], columns=["correct", "scored"], values=[[0, 1], [1, 1], [1, 2]])
    guard = TaskStats(
        task_ids=["a", "b", "c"], columns=["correct", "scored"], values=[[1, 1], [1, 1], [2, 2]]
    )
    shuffled = TaskStats(task_ids=["c", "a", "b"], columns=guard.columns, values=[[2, 2], [1, 1], [1, 1]])
    assert paired_cluster_bootstrap(base, shuffled, seed=1, n_resamples=500) == paired_cluster_bootstrap(
        base, guard, seed=1, n_resamples=500
    )
    other = TaskStats(task_ids=["a", "b", "d"], columns=guard.columns, values=guard.values)
    with pytest.raises(ValueError, match=r"only in baseline: \['c'\], only in treatment: \['d'\]"):
        paired_cluster_bootstrap(base, other)
    with pytest.raises(ValueError, match="a task id appears twice"):
        paired_cluster_bootstrap(
            TaskStats(task_ids=["a", "a"], columns=["c", "s"], values=[[0, 1], [1, 1]]), guard
        )
    with pytest.raises(ValueError, match="same \\*_stats function"):
        paired_cluster_bootstrap(
            base, TaskStats(task_ids=guard.task_ids, columns=["x", "y"], values=guard.values)
        )
    with pytest.raises(ValueError, match="two \\(tasks x statistics\\) arrays of one shape"):
        paired_cluster_bootstrap([[1, 2]], [[1, 2], [1, 2]])


def test_accuracy_stats_from_unit_outcomes() -> None:
    base = [*unit_outcomes("t1", {1: True, 2: False, 3: None}), *unit_outcomes("t2", {1: False})]
    guard = [*unit_outcomes("t1", {1: True, 2: True, 3: True}), *unit_outcomes("t2", {1: False})]
    assert accuracy_stats(base).values == [[1, 2], [0, 1]]
    assert macro_accuracy_stats(guard).values == [[1.0, 1.0], [0.0, 1.0]]
    micro = paired_cluster_bootstrap(accuracy_stats(base), accuracy_stats(guard), n_resamples=200)
    macro = paired_cluster_bootstrap(
        macro_accuracy_stats(base), macro_accuracy_stats(guard), task_macro_accuracy, n_resamples=200
    )
    assert micro.observed_gain == pytest.approx(3 / 4 - 1 / 3)  # 3/4 vs 1/3 pooled
    assert macro.observed_gain == pytest.approx((1.0 + 0.0) / 2 - (0.5 + 0.0) / 2)


def test_undefined_dcr_resamples_are_dropped_and_counted() -> None:
    # task a has only clean units, task b only contaminated ones: a resample of {a, a} or {b, b}
    # leaves a group empty (p = 1/2), so about half of the resamples are undefined.
    a = DCRResult(contaminated_n=0, contaminated_bad=0, clean_n=2, clean_bad=1)
    b = DCRResult(contaminated_n=1, contaminated_bad=1, clean_n=0, clean_bad=0)
    stats = dcr_stats([("a", a), ("b", b)])
    result = paired_cluster_bootstrap(stats, stats, dcr_metric, seed=0, n_resamples=4000)
    assert result.n_defined == pytest.approx(2000, abs=150)
    assert result.mean_gain == 0.0 and (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert dcr_metric(np.array([[1.0, 1.0, 1.0, 2.0]]))[0] == pytest.approx(0.5)
    never = dcr_stats([("a", a)])
    empty = paired_cluster_bootstrap(never, never, dcr_metric, n_resamples=50)
    assert empty.n_defined == 0 and empty.mean_gain is None and empty.observed_gain is None


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="n_resamples=0"):
        paired_cluster_bootstrap([[1, 1]], [[1, 1]], n_resamples=0)
    with pytest.raises(ValueError, match="confidence=95"):
        paired_cluster_bootstrap([[1, 1]], [[1, 1]], confidence=95)
    assert micro_accuracy(np.array([[0.0, 0.0]]))[0] != micro_accuracy(np.array([[0.0, 0.0]]))[0]  # NaN
