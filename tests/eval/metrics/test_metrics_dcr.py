"""DCR (Eq. 31) and RR on hand-computed cases, pooling over tasks, and a real demo rollout pair.

Every expected count below was worked out by hand from C.4: a unit takes part only when it is
scored and has a scored parent; it is contaminated when any scored parent is wrong.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.longds import parse_dependencies
from eval.metrics.dcr import DCRResult, dcr, int_keyed, parents_from_graph, pooled_dcr
from eval.scorers.fields import per_turn_correct
from stateguard.artifacts import ArtifactError, RelationGraph, load_graph
from stateguard.rollout import RolloutResult
from stateguard.task import Task

DEMO_TASK = Path(__file__).resolve().parents[3] / "eval" / "benchmarks" / "demo" / "six_turn"
T, F = True, False

# (correct, parents, (contaminated_n, contaminated_bad, clean_n, clean_bad), dcr, rr)
CASES: list[
    tuple[dict[Any, Any], dict[Any, list[Any]], tuple[int, int, int, int], float | None, float | None]
] = [
    # 2,3,6 clean (3 wrong) -> 1/3; 4,5 contaminated by 3 (5 wrong) -> 1/2; DCR 1/6, RR 1.5
    (
        {1: T, 2: T, 3: F, 4: T, 5: F, 6: T},
        {1: [], 2: [1], 3: [1], 4: [3], 5: [3, 4], 6: [2]},
        (2, 1, 3, 1),
        1 / 6,
        1.5,
    ),
    # clean group without errors: DCR = 1/2 - 0, RR has a zero denominator -> undefined
    ({1: F, 2: T, 3: F, 4: T}, {2: [1], 3: [1], 4: [2]}, (2, 1, 1, 0), 0.5, None),
    # only clean units -> undefined, not 0
    ({1: T, 2: T, 3: F}, {2: [1], 3: [1, 2]}, (0, 0, 2, 1), None, None),
    # only contaminated units -> undefined
    ({1: F, 2: F, 3: T}, {2: [1], 3: [1]}, (2, 1, 0, 0), None, None),
    # an excluded parent is not observable: 3 sees only parent 2 (correct) -> clean, wrong
    ({1: None, 2: T, 3: F, 4: F}, {3: [1, 2], 4: [1, 3]}, (1, 1, 1, 1), 0.0, 1.0),
    # an excluded unit is skipped; its child has no observable parent left
    ({1: F, 2: None, 3: T}, {2: [1], 3: [2]}, (0, 0, 0, 0), None, None),
    # 0/1 scores (the judge's s_t) are read like booleans; a self-reference is dropped
    ({1: 0, 2: 1, 3: 1, 4: 0}, {2: [2, 1], 3: [2], 4: [3]}, (1, 0, 2, 1), -0.5, 0.0),
    # string units (DAComp-DE tables); a parent that was never scored counts as unobserved
    ({"stg": T, "fct": F, "rpt": F}, {"fct": ["stg", "raw"], "rpt": ["fct"]}, (1, 1, 1, 1), 0.0, 1.0),
]


@pytest.mark.parametrize(("correct", "parents", "counts", "expected_dcr", "expected_rr"), CASES)
def test_dcr_table(
    correct: dict[Any, Any],
    parents: dict[Any, list[Any]],
    counts: tuple[int, int, int, int],
    expected_dcr: float | None,
    expected_rr: float | None,
) -> None:
    result = dcr(correct, parents)
    assert (result.contaminated_n, result.contaminated_bad, result.clean_n, result.clean_bad) == counts
    if expected_dcr is None:
        assert result.dcr is None
    else:
        assert result.dcr == pytest.approx(expected_dcr)
    if expected_rr is None:
        assert result.risk_ratio is None
    else:
        assert result.risk_ratio == pytest.approx(expected_rr)


def test_skip_counters_say_why_units_left_out() -> None:
    result = dcr({1: F, 2: None, 3: T, 4: T}, {1: [], 2: [1], 3: [2], 4: [1], 5: [4]})
    # 2 unscored (has parents), 5 absent from correct (unscored), 3 has no observable parent, 1 has none at all
    assert (result.skipped_unscored, result.skipped_no_parents) == (2, 2)
    assert (result.contaminated_n, result.clean_n) == (1, 0)


def test_pooling_sums_counts_across_tasks() -> None:
    only_clean = dcr({1: T, 2: F, 3: T}, {2: [1], 3: [1]})  # clean 1/2, contaminated none
    only_contaminated = dcr({1: F, 2: F}, {2: [1]})  # contaminated 1/1, clean none
    assert only_clean.dcr is None and only_contaminated.dcr is None
    pooled = pooled_dcr([only_clean, only_contaminated])
    assert (pooled.contaminated_n, pooled.contaminated_bad, pooled.clean_n, pooled.clean_bad) == (1, 1, 2, 1)
    assert pooled.dcr == pytest.approx(0.5) and pooled.risk_ratio == pytest.approx(2.0)
    assert pooled_dcr([]).dcr is None
    dumped = pooled.model_dump()  # the derived numbers travel with the counts into reports
    assert dumped["dcr"] == pytest.approx(0.5) and dumped["risk_ratio"] == pytest.approx(2.0)
    assert dumped["p_contaminated"] == 1.0 and dumped["p_clean"] == 0.5


def _reference_counts(scores: dict[int, int], parents: dict[int, list[int]]) -> tuple[int, int, int, int]:
    """An independent reference for C.4's definition, written as set comprehensions: a unit with a
    score and at least one scored parent is contaminated when any scored parent is wrong."""
    units = {u: [scores[p] for p in ps if p in scores] for u, ps in parents.items() if u in scores}
    units = {u: seen for u, seen in units.items() if seen}
    dirty = {u for u, seen in units.items() if 0 in seen}
    clean = set(units) - dirty
    return len(dirty), sum(1 - scores[u] for u in dirty), len(clean), sum(1 - scores[u] for u in clean)


def test_matches_an_independent_reference_on_random_tasks() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 12)
        correct = {t: rng.choice([True, False, None]) for t in range(1, n + 1)}
        parents = {t: sorted(rng.sample(range(1, t), rng.randint(0, t - 1))) for t in range(1, n + 1)}
        scores = {t: int(v) for t, v in correct.items() if v is not None}
        got = dcr(correct, parents)
        assert (got.contaminated_n, got.contaminated_bad, got.clean_n, got.clean_bad) == _reference_counts(
            scores, parents
        )


def test_errors_name_the_field_and_the_fix() -> None:
    with pytest.raises(ValueError, match=r"correct\[2\] = 2: use True/1"):
        dcr({1: True, 2: 2}, {2: [1]})
    with pytest.raises(ValueError, match=r"parents keys are \['str'\] but correct is keyed by \['int'\]"):
        dcr({1: True, 2: False}, {"2": ["1"]})  # type: ignore[misc]
    with pytest.raises(ValueError, match="parent ids are .* convert JSON string ids with int_keyed"):
        dcr({1: True, 2: False}, {2: ["1"]})  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"parents\[2\] = '1': give a list"):
        dcr({1: True, 2: False}, {2: "1"})  # type: ignore[misc]
    assert dcr({1: T, 2: F}, int_keyed({"2": ["1"]})).clean_n == 1
    with pytest.raises(ValueError, match="unit ids must be integers"):
        int_keyed({"x": ["1"]})


def _graph(*stages: tuple[int, str, list[str]]) -> RelationGraph:
    return RelationGraph.model_validate(
        {
            "task_id": "t",
            "dataset": "penguins",
            "seed": 0,
            "threads": [],
            "stages": [
                {
                    "turn_id": t,
                    "state_id": f"S{i}",
                    "name": n,
                    "role": "thread",
                    "thread": "x",
                    "sql": "",
                    "deps": d,
                    "relations": [],
                }
                for i, (t, n, d) in enumerate(stages, 1)
            ],
        }
    )


def test_parents_from_a_synthesized_graph(tmp_path: Path) -> None:
    graph = _graph((1, "a", []), (2, "b", []), (3, "c", ["a"]), (4, "d", ["c", "b", "a"]))
    assert parents_from_graph(graph) == {1: [], 2: [], 3: [1], 4: [1, 2, 3]}
    with pytest.raises(ValueError, match="unknown stage 'zz'"):
        parents_from_graph(_graph((1, "a", ["zz"])))
    broken = tmp_path / "graph.json"  # a renamed field fails when the file is read, naming file and field
    broken.write_text(graph.model_dump_json(exclude_unset=True).replace('"deps"', '"depends"'))
    with pytest.raises(
        ArtifactError, match=r"graph.json: not a valid RelationGraph: stages.0.deps: Field required"
    ):
        load_graph(broken)


def test_real_demo_rollouts(demo_runs: dict[str, Path], demo_task: Task) -> None:
    """Pa from the task's '# Depends on' comments: 2<-1, 5<-{2,4}, 6<-5.

    Baseline: 2 clean+right, 5 clean+wrong (stale margin), 6 contaminated by 5 and wrong ->
    P(e|c=1)=1, P(e|c=0)=1/2, DCR 0.5, RR 2. StateGuard: every turn right -> no contaminated
    unit -> undefined."""
    parents = parse_dependencies(json.loads((DEMO_TASK / "task.json").read_text()))
    assert parents == {1: [], 2: [1], 3: [], 4: [], 5: [2, 4], 6: [5]}
    expected = {t.turn_id: t.answer for t in demo_task.turns}
    outcome: dict[str, DCRResult] = {}
    for arm in ("baseline", "stateguard"):
        result = RolloutResult.model_validate_json((demo_runs[f"turn/{arm}"] / "result.json").read_text())
        outcome[arm] = dcr(per_turn_correct(expected, result.answers), parents)
    base, guard = outcome["baseline"], outcome["stateguard"]
    assert (base.contaminated_n, base.contaminated_bad, base.clean_n, base.clean_bad) == (1, 1, 2, 1)
    assert base.dcr == pytest.approx(0.5) and base.risk_ratio == pytest.approx(2.0)
    assert (guard.contaminated_n, guard.clean_n, guard.clean_bad) == (0, 3, 0)
    assert guard.dcr is None and guard.risk_ratio is None
    assert pooled_dcr(outcome.values()).dcr == pytest.approx(1.0 - 1 / 5)
