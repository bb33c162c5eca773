"""The harness's trace lines, byte for byte, against a file written by an earlier commit.

The trace is read by the viewer, the metrics and the RL reward, so a faster way of writing it must
not change one byte. `fixtures/trace-cycle-lines.jsonl` was written by commit c06e4e4 (before the
trace learned to skip validating a shape it has seen) from `_scenario` below: three turns, each
OPEN + worker steps + UPDATE + FINALIZE + COMMIT, with repeated shapes (where a shortcut would
start to apply), a rejected action, a reselect, a failed executable constraint, non-ASCII text,
NaN and nested values, hints, and a clock that advances on every call (a line that asked the clock
twice would show it).

    pytest tests/stateguard/test_trace_lines.py
    python -m tests.stateguard.test_trace_lines > tests/stateguard/fixtures/trace-cycle-lines.jsonl  # rewrite
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path

from stateguard import (
    DictWorkspace,
    EventType,
    Harness,
    HarnessConfig,
    StateStore,
    Trace,
    WorkerStep,
    read_trace,
)
from stateguard.actions import RawAction

FIXTURE = Path(__file__).parent / "fixtures" / "trace-cycle-lines.jsonl"


def _clock() -> Callable[[], float]:
    """A clock that moves on every call, in steps a float prints exactly and inexactly."""
    ticks = itertools.count()
    return lambda: 1_765_000_000.0 + next(ticks) * 0.1


def _scenario(folder: Path) -> list[str]:
    trace = Trace(folder / "trace.jsonl", clock=_clock())
    workspace = DictWorkspace({"rows": 3})
    harness = Harness(
        StateStore(folder / "states.sqlite"),
        HarnessConfig(regime="turn_aligned"),
        trace=trace,
        workspace=workspace,
    )
    step = itertools.count()

    def act(name: str, accepted: bool = True, **arguments: object) -> None:
        result = harness.apply(RawAction(name=name, arguments=arguments))
        assert result.accepted is accepted, result.feedback

    def worker(code: str, started: float | None = None, **meta: object) -> None:
        harness.record_step(
            WorkerStep(index=next(step), action=code, output="ok", meta=meta), started=started
        )

    for turn in range(3):
        harness.begin_review(EventType.TURN_START)
        upstream = [{"related_state_id": f"S{turn}"}] if turn else []
        act("OPEN_STATE", issue=f"Größe of turn {turn} – ü", relations=upstream)
        act("COMMIT_STATE", accepted=False)  # not legal yet: one `action` line, nothing else
        worker(f"x{turn} = {turn}", reads=["rows"], writes=[f"x{turn}"])
        worker(f"y{turn} = x{turn} * 2", started=trace.now() if turn == 2 else None)
        used: list[dict[str, object]] = [
            {"name": f"x{turn}", "value": turn},
            {"name": f"y{turn}", "value": {"b": [math.nan, -0.0, 1e300], "a": "naïve ☃"}},
        ]
        if turn:
            used.append({"name": f"x{turn - 1}", "version": f"S{turn}", "value": turn - 1})
        act("UPDATE_STATE", used_variables=used, conclusions=[f"y{turn} is twice x{turn}", '\t"quoted"'])
        if turn == 2:
            act(
                "FINALIZE_RELATIONS",
                mode="reselect",
                relations=[{"related_state_id": "S1"}],
                conflict_evidence="S2 was built on a stale x1",
            )
        else:
            act("FINALIZE_RELATIONS", mode="confirm")
        act("COMMIT_STATE")
        harness.take_hints()
    harness.begin_review(EventType.TURN_START)
    act(
        "OPEN_STATE", issue="a checked state", constraints=[{"text": "rows is 4", "code": "assert rows == 4"}]
    )
    worker("z = rows")
    act("UPDATE_STATE", used_variables=[{"name": "z", "value": 3}], conclusions=["z is 3"])
    act("FINALIZE_RELATIONS", accepted=False, mode="confirm")  # the constraint failed
    act("ABANDON_STATE")
    harness.finish()
    trace.close()
    return (folder / "trace.jsonl").read_text().splitlines()


def test_the_harness_writes_the_same_trace_bytes_as_before(tmp_path: Path) -> None:
    lines = _scenario(tmp_path)
    assert lines == FIXTURE.read_text().splitlines()
    assert len(read_trace(tmp_path / "trace.jsonl")) == len(lines)


if __name__ == "__main__":
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        sys.stdout.write("\n".join(_scenario(Path(folder))) + "\n")
