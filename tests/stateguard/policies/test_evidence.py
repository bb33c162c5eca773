"""Evidence that a stale read is wrong now: the replay probe, and questions that want the old value."""

from __future__ import annotations

import pytest

from stateguard.observation import WorkerStep
from stateguard.policies.evidence import intended_turns, producing_statements, replay_differs
from stateguard.workspace import DictWorkspace


def _run(ws: DictWorkspace, cells: list[str], start: int = 0) -> dict[int, WorkerStep]:
    steps = {}
    for i, code in enumerate(cells, start):
        r = ws.run_cell(code)
        steps[i] = WorkerStep(
            index=i, action=code, success=r.ok, error=r.error, meta={"writes": r.writes, "reads": r.reads}
        )
    return steps


def test_replay_tells_a_changed_input_from_one_rebound_to_the_same_content() -> None:
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    steps = _run(
        ws,
        [
            "df = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})",
            "total = int(df['a'].sum())\nother = 1",
            "df['c'] = df['b'] * 2",  # a new column: `total` does not use it
            "df = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})",  # reloaded: the same content
        ],
    )
    assert ws.dataflow.is_stale("total")  # the pattern says stale ...
    assert replay_differs(ws, steps, "total", before=4) is False  # ... the evidence says it is not
    steps.update(_run(ws, ["df = pd.DataFrame({'a': [10, 20], 'b': [1, 1]})"], start=4))
    assert replay_differs(ws, steps, "total", before=5) is True
    assert ws.get_value("total") == 6  # the probe changed nothing
    assert replay_differs(ws, steps, "never_written", before=5) is None


def test_replay_rebuilds_a_frame_changed_in_place_after_it_was_made() -> None:
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    steps = _run(
        ws,
        [
            "scope = pd.DataFrame({'s': [1, 2, 3]})",
            "part = scope.copy()",
            "part['w'] = part['s'] > 1",
            "n = int(part['s'].sum())",
            "scope = pd.DataFrame({'s': [1]})",
        ],
    )
    assert producing_statements(steps, "part", before=5) == (
        1,
        ["part = scope.copy()", "part['w'] = part['s'] > 1"],
    )
    assert replay_differs(ws, steps, "n", before=5, stale_inputs={"part": ["scope"]}) is True


def test_replay_follows_stale_intermediates() -> None:
    ws = DictWorkspace()
    steps = _run(ws, ["base = [1, 2, 3]", "mid = [x * 2 for x in base]", "top = sum(mid)", "base = [5]"])
    chain = {"mid": ["base"]}
    assert replay_differs(ws, steps, "top", before=4) is False  # `mid` itself was not recomputed
    assert replay_differs(ws, steps, "top", before=4, stale_inputs=chain) is True


@pytest.mark.parametrize(
    ("question", "turns", "earlier"),
    [
        (
            "Compare with the wet-day counts per label from before the update (the original definition, turn 4).",
            {4},
            True,
        ),
        ("Under the current definition, redo the wind comparison of turn 7.", set(), False),
        (
            "With the original definition restored, compute the gap again, and compare it with the gap from turn 9.",
            {9},
            True,
        ),
        ("Combine the monthly table of turn 5 with the warm-day flag of turn 6.", {5, 6}, False),
        ("Restore the original definition. What share of days are wet?", set(), False),
    ],
)
def test_intended_turns(question: str, turns: set[int], earlier: bool) -> None:
    assert intended_turns(question) == (turns, earlier)
