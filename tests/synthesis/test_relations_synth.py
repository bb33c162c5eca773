"""Synthesis relations (paper Eq. 22) and their agreement with the runtime rule (Eq. 13)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stateguard.actions import RelationArg
from stateguard.relation_rules import normalize_relations
from stateguard.state import Relation, RelationType
from synthesis.sql_deps import Stage, stage_dependencies
from synthesis.stage_relations import derive_relations, invalidate, stage_state_ids

INIT = RelationType.INIT
PROGRESS = RelationType.PROGRESS
BRANCH = RelationType.BRANCH
COMBINE = RelationType.COMBINE
INVALIDATE = RelationType.INVALIDATE


def _stages(n: int) -> list[Stage]:
    """n stages s1..sn; their SQL is irrelevant to derive_relations (deps are given)."""
    return [Stage(name=f"s{i}", sql="SELECT 1 AS v") for i in range(1, n + 1)]


def _pairs(rels: list[Relation]) -> list[tuple[RelationType, str | None]]:
    return [(r.type, r.related_state_id) for r in rels]


@pytest.mark.parametrize(
    ("stage", "deps", "expected"),
    [
        # Init: no upstream stage
        ("s1", [], [(INIT, None)]),
        ("s4", [], [(INIT, None)]),
        # Progress: exactly the immediately preceding stage
        ("s2", ["s1"], [(PROGRESS, "S1")]),
        ("s5", ["s4"], [(PROGRESS, "S4")]),
        # Branch: exactly one upstream further back
        ("s3", ["s1"], [(BRANCH, "S1")]),
        ("s5", ["s2"], [(BRANCH, "S2")]),
        # Combine: two or more upstreams, one edge each, in stage order
        ("s3", ["s1", "s2"], [(COMBINE, "S1"), (COMBINE, "S2")]),
        ("s5", ["s4", "s1"], [(COMBINE, "S1"), (COMBINE, "S4")]),
        ("s5", ["s1", "s2", "s3"], [(COMBINE, "S1"), (COMBINE, "S2"), (COMBINE, "S3")]),
        # duplicates collapse: one upstream is still Progress
        ("s3", ["s2", "S2"], [(PROGRESS, "S2")]),
    ],
)
def test_eq22(stage: str, deps: list[str], expected: list[tuple[RelationType, str | None]]) -> None:
    relations = derive_relations(_stages(5), {stage: deps})
    assert _pairs(relations[stage]) == expected
    assert set(relations) == {f"s{i}" for i in range(1, 6)}


def test_stage_order_is_the_interleaved_position() -> None:
    """A pandas stage between two SQL stages takes a position: s3 reading s1 is a Branch."""
    stages = [
        Stage(name="load", sql="CREATE TABLE load AS SELECT * FROM raw"),
        Stage(name="plot", kind="pandas", inputs=["load"]),
        Stage(name="summary", sql="CREATE TABLE summary AS SELECT COUNT(*) AS n FROM load"),
        Stage(name="joined", sql="SELECT * FROM summary, plot"),
    ]
    assert stage_state_ids(stages) == {"load": "S1", "plot": "S2", "summary": "S3", "joined": "S4"}
    relations = derive_relations(stages, stage_dependencies(stages))
    assert {k: _pairs(v) for k, v in relations.items()} == {
        "load": [(INIT, None)],
        "plot": [(PROGRESS, "S1")],
        "summary": [(BRANCH, "S1")],
        "joined": [(COMBINE, "S2"), (COMBINE, "S3")],
    }


@pytest.mark.parametrize(
    ("deps", "message"),
    [
        ({"s2": ["s3"]}, "dependencies must be earlier stages"),
        ({"s2": ["s2"]}, "dependencies must be earlier stages"),
        ({"s2": ["nope"]}, "'nope', which is not a stage"),
        ({"s9": []}, "not in the stage list"),
    ],
)
def test_bad_dependencies(deps: dict[str, list[str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        derive_relations(_stages(3), deps)


def test_invalidate_attaches_an_explicit_relation() -> None:
    stages = _stages(4)
    relations = derive_relations(stages, {"s2": ["s1"], "s4": ["s3"]})
    updated = invalidate("s4", "s2", stages=stages, relations=relations)
    assert _pairs(updated["s4"]) == [(PROGRESS, "S3"), (INVALIDATE, "S2")]
    assert _pairs(relations["s4"]) == [(PROGRESS, "S3")]  # the input is not mutated
    # an Init stage that invalidates loses its Init (it now has an upstream)
    updated = invalidate("s3", "s1", stages=stages, relations=updated)
    assert _pairs(updated["s3"]) == [(INVALIDATE, "S1")]
    # attaching the same invalidation twice is a no-op
    again = invalidate("s3", "s1", stages=stages, relations=updated)
    assert _pairs(again["s3"]) == [(INVALIDATE, "S1")]


@pytest.mark.parametrize(
    ("stage", "target", "message"),
    [
        ("s2", "s3", "can only invalidate an earlier stage"),
        ("s2", "s2", "can only invalidate an earlier stage"),
        ("s3", "s2", "builds on 's2'"),
        ("s3", "zz", "not a stage"),
        ("zz", "s1", "not a stage"),
    ],
)
def test_invalidate_errors(stage: str, target: str, message: str) -> None:
    stages = _stages(3)
    relations = derive_relations(stages, {"s3": ["s2"]})
    with pytest.raises(ValueError, match=message):
        invalidate(stage, target, stages=stages, relations=relations)


# ------------------------------------------------------------------------------------------
# agreement with the runtime normalization


def _runtime(i: int, upstream: list[int], invalidated: list[int]) -> list[Relation]:
    """What stateguard's harness makes of the same upstreams when every earlier stage is
    committed in order, so the latest committed state for stage i is S(i-1)."""
    proposed = [RelationArg(related_state_id=f"S{j}") for j in upstream]
    proposed += [RelationArg(related_state_id=f"S{j}", type=INVALIDATE) for j in invalidated]
    relations, _notes = normalize_relations(
        proposed,
        draft_id=f"S{i}",
        latest_committed=f"S{i - 1}" if i > 1 else None,
        is_committed=lambda sid: 1 <= int(sid[1:]) < i,
    )
    return relations


def _synth(n: int, deps: dict[int, list[int]], inv: dict[int, list[int]]) -> dict[str, list[Relation]]:
    stages = _stages(n)
    relations = derive_relations(stages, {f"s{i}": [f"s{j}" for j in js] for i, js in deps.items()})
    for i, targets in inv.items():
        for j in targets:
            relations = invalidate(f"s{i}", f"s{j}", stages=stages, relations=relations)
    return relations


@pytest.mark.parametrize(
    ("i", "upstream", "invalidated"),
    [
        (1, [], []),
        (4, [], []),
        (4, [3], []),  # single upstream, the latest commit
        (4, [1], []),  # single upstream further back
        (4, [2], []),
        (4, [1, 3], []),  # several upstreams
        (5, [1, 2, 4], []),
        (5, [4], [2]),  # definition update on top of progress
        (5, [], [3]),
        (5, [1, 3], [2]),
    ],
)
def test_agrees_with_runtime_normalization(i: int, upstream: list[int], invalidated: list[int]) -> None:
    synth = _synth(i, {i: upstream}, {i: invalidated})[f"s{i}"]
    assert synth == _runtime(i, upstream, invalidated)


@st.composite
def _threads(draw: st.DrawFn) -> tuple[int, dict[int, list[int]], dict[int, list[int]]]:
    n = draw(st.integers(min_value=1, max_value=8))
    deps: dict[int, list[int]] = {}
    inv: dict[int, list[int]] = {}
    for i in range(1, n + 1):
        earlier = list(range(1, i))
        ups = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        deps[i] = sorted(ups)
        rest = [j for j in earlier if j not in ups]
        inv[i] = draw(st.lists(st.sampled_from(rest), unique=True, max_size=2)) if rest else []
    return n, deps, inv


@settings(max_examples=200, deadline=None)
@given(_threads())
def test_agrees_with_runtime_on_random_threads(
    thread: tuple[int, dict[int, list[int]], dict[int, list[int]]],
) -> None:
    n, deps, inv = thread
    synth = _synth(n, deps, inv)
    for i in range(1, n + 1):
        assert synth[f"s{i}"] == _runtime(i, deps[i], inv[i]), f"stage s{i}"
