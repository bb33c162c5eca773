"""A small run of commits that exercises every kind of row the store keeps: Init, Progress, Branch,
Combine and Invalidate relations, defined and read variables (values of several JSON kinds), an
abandoned reserved id, and staleness spread by a read and by a relation. The store's public API
only, so that the code of an earlier layout can run it too: `fixtures/store-layout1/` was written
by commit 27ba99a's `StateStore` with

    PYTHONPATH=<an unpacked 27ba99a> python tests/stateguard/store_scenario.py <folder>
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from stateguard.state import AnalyticalState, Conclusion, Relation, RelationType, VariableRef
from stateguard.store import StateStore


def _state(
    sid: str, variables: list[tuple[str, str, Any]], relations: list[tuple[str | None, str]]
) -> AnalyticalState:
    return AnalyticalState(
        id=sid,
        issue=f"issue of {sid} — with text past ASCII",
        used_variables=[VariableRef(name=n, version=v, value=x) for n, v, x in variables],
        conclusions=[Conclusion(text=f"{sid} done"), Conclusion(text="second", variables=[])],
        relations=[Relation(type=RelationType(t), related_state_id=u) for u, t in relations],
        source_step_start=1,
        source_step_end=2,
    )


def write(store: StateStore) -> None:
    """S1..S8 with S4 reserved and abandoned; S7 invalidates S1; S8 reads a stale version."""
    steps: list[tuple[list[tuple[str, str, Any]], list[tuple[str | None, str]]]] = [
        ([("revenue", "S1", 1000), ("sales", "S1", "table")], [(None, "init")]),
        ([("revenue", "S1", 1000), ("margin", "S2", 400.5)], [("S1", "progress")]),
        ([("margin", "S2", 400.5), ("ratio", "S3", [0.4, None, True])], [("S2", "progress")]),
        ([], []),  # S4: reserved, never committed
        ([("note", "S5", {"b": 1, "a": [1, 2]}), ("nan", "S5", float("nan"))], [("S1", "branch")]),
        (
            [("ratio", "S3", [0.4, None, True]), ("note", "S5", {"b": 1, "a": [1, 2]}), ("both", "S6", 2)],
            [("S3", "combine"), ("S5", "combine")],
        ),
        ([("sales", "S1", "table"), ("revenue", "S7", 950)], [("S6", "progress"), ("S1", "invalidate")]),
        ([("margin", "S2", 400.5), ("late", "S8", -1)], [("S7", "branch")]),
    ]
    for variables, relations in steps:
        sid = store.reserve_id()
        if relations:
            store.commit(_state(sid, variables, relations))


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    made = StateStore(folder / "states.sqlite")
    write(made)
    made.close()
