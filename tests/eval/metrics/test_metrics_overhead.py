"""Eq. 32 on hand-built traces with known timestamps, and the interval split of real demo traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eval.metrics.overhead import decompose, manager_call_stats, step_intervals
from stateguard.artifacts.events import parse_event
from stateguard.trace import TraceEvent, read_trace

TURN_FLOW = {"regime": "turn_aligned", "review_every": 3}


def _trace(*items: tuple[str, float | None, dict[str, Any]]) -> list[TraceEvent]:
    return [
        parse_event({"seq": i, "kind": kind, "ts": ts, "data": data})
        for i, (kind, ts, data) in enumerate(items)
    ]


def step(index: int, ts: float | None) -> tuple[str, float | None, dict[str, Any]]:
    return ("worker_step", ts, {"index": index})


def review(ts: float, event: str = "turn_end") -> tuple[str, float, dict[str, Any]]:
    return ("review", ts, {"event": event, "terminal": False, "stage": "idle"})


def _start(flow: dict[str, Any], ts: float | None = 0.0) -> tuple[str, float | None, dict[str, Any]]:
    return ("run_start", ts, {"task_id": "t", "arm": "stateguard", "flow": flow, "manager": "rules"})


def turn(ts: float, turn_id: int) -> tuple[str, float, dict[str, Any]]:
    return ("turn_start", ts, {"turn_id": turn_id})


# StateGuard arm, three turns of two steps; timestamps in seconds.
STATEGUARD = _trace(
    ("run_start", 0.0, {"task_id": "t", "arm": "stateguard", "flow": TURN_FLOW, "manager": "rules"}),
    turn(0.0, 1),
    review(0.0, "turn_start"),  # cycle 1 (before any step: untimed)
    step(0, 10.0),
    step(1, 12.0),  # local 2
    review(12.5),
    turn(13.0, 2),
    review(13.0, "turn_start"),  # cycle 2
    step(2, 22.0),
    step(3, 26.0),  # boundary 10, local 4
    review(27.0),
    turn(27.0, 3),
    review(28.0, "turn_start"),  # cycle 3
    step(4, 1000.0),
    step(5, 1003.0),  # boundary 974 s > 900 s: interrupted, dropped; local 3
    review(1003.5, "turn_end"),  # cycle 4 (after the last step: untimed)
)
# Manager-free arm of the same task: turn_start marks the boundaries.
BASELINE = _trace(
    ("run_start", 0.0, {"task_id": "t", "arm": "baseline", "flow": TURN_FLOW, "manager": None}),
    turn(0.0, 1),
    step(0, 0.0),
    step(1, 2.0),  # local 2
    turn(2.0, 2),
    step(2, 7.0),
    step(3, 9.0),  # boundary 5, local 2
)


def test_intervals_split_at_reviews() -> None:
    sg = step_intervals(STATEGUARD)
    assert (sg.task_id, sg.arm, sg.rule) == ("t", "stateguard", "review")
    assert sg.boundary_s == [10.0] and sg.local_s == [2.0, 4.0, 3.0]
    assert (sg.cycles, sg.review_events, sg.dropped_long) == (4, 6, 1)
    base = step_intervals(BASELINE)
    assert (base.rule, base.boundary_s, base.local_s, base.cycles) == ("turn", [5.0], [2.0, 2.0], 2)


def test_eq32_decomposition() -> None:
    result = decompose([step_intervals(STATEGUARD)], [step_intervals(BASELINE)])
    # Delta_bdry 10, Delta_local (2+4+3)/3 = 3, Delta_harness 5 - 2 = 3 -> T_M = 4; 4 cycles -> 16 s/task
    assert (result.delta_bdry_s, result.delta_local_s, result.delta_harness_s) == (10.0, 3.0, 3.0)
    assert result.t_manager_s == 4.0 and result.reviews_per_task == 4.0 and result.t_manager_task_s == 16.0
    assert (result.boundary_intervals, result.local_intervals, result.dropped_long) == (1, 3, 1)
    assert result.review_events_per_task == 6.0
    no_base = decompose([step_intervals(STATEGUARD)])
    assert no_base.delta_bdry_s == 10.0 and no_base.delta_harness_s is None and no_base.t_manager_s is None


def test_pooling_weights_intervals_not_tasks() -> None:
    second = _trace(
        ("run_start", 0.0, {"task_id": "u", "arm": "stateguard", "flow": TURN_FLOW, "manager": "rules"}),
        step(0, 0.0),
        review(1.0),
        step(1, 20.0),
        review(21.0),
        step(2, 40.0),
        step(3, 43.0),
    )  # boundaries 20, 20; local 3; cycles 2
    result = decompose([step_intervals(STATEGUARD), step_intervals(second)], [step_intervals(BASELINE)])
    assert result.delta_bdry_s == pytest.approx((10 + 20 + 20) / 3)  # not (10 + 20) / 2
    assert result.delta_local_s == pytest.approx(3.0) and result.reviews_per_task == 3.0
    assert result.t_manager_s == pytest.approx(50 / 3 - 3 - 3)


def test_segment_baseline_uses_the_review_cadence() -> None:
    flow = {"regime": "segment_induced", "review_every": 2}
    events = _trace(_start(flow), step(0, 0.0), step(1, 1.0), step(2, 3.0), step(3, 4.0), step(4, 6.0))
    got = step_intervals(events)  # nominal reviews after steps 2 and 4
    assert (got.rule, got.boundary_s, got.local_s, got.cycles) == ("every", [2.0, 2.0], [1.0, 1.0], 2)
    assert step_intervals(events, rule="turn").boundary_s == []  # no turn_start events at all


def test_missing_timing_data_is_an_error_not_a_guess() -> None:
    with pytest.raises(ValueError, match="has no ts"):
        step_intervals(_trace(_start(TURN_FLOW, None), step(0, None), step(1, None)))
    with pytest.raises(ValueError, match="pass rule='turn' or rule='every'"):
        step_intervals(_trace(step(0, 1.0), step(1, 2.0)))
    with pytest.raises(ValueError, match="no StateGuard runs"):
        decompose([])


def _call(role: str, latency_s: float, error: str | None = None) -> dict[str, Any]:
    """An `llm_call` payload as stateguard.llm.client writes it."""
    return {
        "role": role,
        "model": "m",
        "outcome": "error" if error else "ok",
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "usage_estimated": False,
        "finish_reason": "stop",
        "latency_s": latency_s,
        "attempts": 1,
        "status": None,
        "error": error,
    }


def test_manager_call_stats_table5() -> None:
    calls = [
        _trace(
            ("llm_call", 1.0, _call("manager", 10.0)),
            ("llm_call", 2.0, _call("worker", 99.0)),
            ("llm_call", 3.0, _call("manager", 20.0)),
        ),
        _trace(("llm_call", 1.0, _call("manager", 5.0, "LLMError: HTTP 500"))),
    ]
    stats = manager_call_stats(calls)
    assert (stats.tasks, stats.calls, stats.failed_calls, stats.calls_per_task) == (2, 3, 1, 1.5)
    assert stats.mean_latency_s == 15.0
    assert manager_call_stats([[]]).mean_latency_s is None


def test_real_demo_traces(demo_runs: dict[str, Path]) -> None:
    """Turn-aligned demo, 14 StateGuard steps: 6 boundary intervals (5 turn changes + the repair
    return inside turn 5), 7 local ones, 8 cycles (plus the one before step 0 and the terminal one);
    the 12-step baseline has 5 turn changes and 6 local intervals."""
    sg = step_intervals(read_trace(demo_runs["turn/stateguard"] / "trace.jsonl"))
    base = step_intervals(read_trace(demo_runs["turn/baseline"] / "trace.jsonl"))
    assert (len(sg.boundary_s), len(sg.local_s), sg.cycles, sg.review_events) == (6, 7, 8, 13)
    assert (base.rule, len(base.boundary_s), len(base.local_s), base.cycles) == ("turn", 5, 6, 6)
    assert all(x >= 0 for x in sg.boundary_s + sg.local_s + base.boundary_s + base.local_s)
    result = decompose([sg], [base])
    assert result.t_manager_s is not None and result.reviews_per_task == 8.0
    seg = step_intervals(read_trace(demo_runs["segment/baseline"] / "trace.jsonl"))
    assert (seg.rule, len(seg.boundary_s), len(seg.local_s), seg.cycles) == ("every", 3, 8, 4)
