"""Pa(t) from `# Depends on ...` comments: every surface form, the limits, and the real sample tasks.

The sample tasks are trimmed copies of two published LongDS tasks (tests/eval/fixtures/longds);
their expected parent sets were read off the comments by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.longds import parse_dependencies
from eval.benchmarks.longds.deps import MAX_RANGE_SPAN, dependency_comments, references, turn_dependencies

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "longds" / "task" / "longds" / "education" / "bi"
SHARED = Path(__file__).resolve().parents[4] / "shared" / "benchmarks" / "longds" / "samples"
SHARED_BI = SHARED / "task" / "longds" / "education" / "bi"

# (turn_id, code, expected parents)
CASES = [
    (5, "# Depends on Task 3\nx = 1", [3]),  # singular
    (12, "# Depends on Tasks 1, 8, and 9.", [1, 8, 9]),  # list with an Oxford "and"
    (12, "# Depends on Tasks 1, 8 and 9", [1, 8, 9]),
    (20, "# Depends on Task 14/17 (both splits)", [14, 17]),  # slash
    (9, "# Depends on Tasks 2-4", [2, 3, 4]),  # range
    (9, "# Depends on Tasks 2--4", [2, 3, 4]),  # LaTeX-style range
    (9, "# Depends on Tasks 2–4", [2, 3, 4]),  # en dash
    (9, "# Depends on Tasks 2 to 4", [2, 3, 4]),
    (9, "# Depends on Task 4 (revised revenue) and Task 2 (margin definition).", [2, 4]),
    (9, "# Depends on Task 1 (revenue): uses the 2 totals computed there.", [1]),  # later numbers ignored
    (9, "# depends on task 6\n# DEPENDS ON TASK 7", [6, 7]),  # case, several comments
    (9, "a = 1  # Depends on Task 2\nb = 2  # Depends on Task 5", [2, 5]),  # inline comments
    (9, "# Depends on T3 and T5", [3, 5]),
    (9, "# dependencies: Task 4", [4]),
    (9, "# Uses the table from Task 5.", [5]),  # "from Task N" cue
    (9, "# summary on baseline_sample (from T3).", [3]),
    (9, "# from Tasks 2-3 and Task 6", [2, 3, 6]),
    (9, "# re-derive: country counts (from country standardization)", []),  # no turn named
    (9, "# Task 3 was slow; Task 4 too", []),  # a mention without a cue is not a declaration
    (9, 's = "# Depends on Task 3"', []),  # not a comment
    (5, "# Depends on Task 5 and Task 2", [2]),  # self-reference removed
    (5, "# Depends on Task 7 and Task 2", [2]),  # future turn removed
    (5, "# Depends on Task 0", []),
    (30, "# Depends on Tasks 4-2", [4]),  # reversed range: only its start
    (60, "# Depends on Tasks 3-40", [3]),  # implausibly wide range: only its start
    (60, f"# Depends on Tasks 3-{3 + MAX_RANGE_SPAN}", list(range(3, 4 + MAX_RANGE_SPAN))),
    (9, "# Depends on Task 3, Task 3 and Task 1", [1, 3]),  # duplicates merged, sorted
    (12, "# T12: [multi-hop] depends on:\n#   - top5_v1 (T10 — top 5)\n#   - feature (T4)", [4, 10]),  # bullets
    (12, "# T12: depends on:\n#   - a (T10)\nx = 1\n#   - b (T4)", [10]),  # bullets end at code
    (12, "# depends on:\n#   - top5_v2  (T8) — first row = top-1 under 0.6/0.4", [8]),  # decimals not refs
    (23, "# T23: UPDATE — redefine binning.\n# until T30 replaces it; kept since T3", []),  # no cue
    (10, "# Depends on Task 3\nif x:\n  y = (", [3]),  # code that does not tokenize
]


@pytest.mark.parametrize(("turn_id", "code", "expected"), CASES)
def test_turn_dependencies(turn_id: int, code: str, expected: list[int]) -> None:
    assert turn_dependencies(turn_id, code) == expected


def test_label_of_the_current_turn_is_removed_before_parsing() -> None:
    assert dependency_comments("# T10: [multi-hop DD] depends on:\n#   - x (T3)", turn_id=10) == [
        " [multi-hop DD] depends on: ;    - x (T3)"
    ]
    assert references("Tasks 1, 8, and 9") == {1, 8, 9}


def test_parse_dependencies_maps_every_turn() -> None:
    turns: list[dict[str, Any]] = [
        {"turn_id": 1, "code": "x = 1"},
        {"turn_id": 2, "code": "# Depends on Task 1"},
        {"turn_id": 3},
        {"turn_id": 4, "code": "# Depends on Tasks 1-3"},
    ]
    assert parse_dependencies(turns) == {1: [], 2: [1], 3: [], 4: [1, 2, 3]}


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([{"code": "x"}], r"turn #1: 'turn_id' must be a positive integer, got None"),
        ([{"turn_id": "2"}], "got '2'"),
        ([{"turn_id": 1}, {"turn_id": 1}], "turn #2: turn_id 1 appears twice"),
        ([{"turn_id": 1, "code": 5}], "turn 1: 'code' must be a string"),
    ],
)
def test_bad_turns_are_named(turns: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_dependencies(turns)


# Hand-read from the comments of the published task education/bi/task2 (trimmed copy in the fixtures).
TASK2_PARENTS = {
    4: [3], 10: [3, 7, 8], 14: [11, 12], 17: [12, 16], 19: [13, 18], 20: [12, 18], 21: [11, 14, 18],
    22: [18], 24: [18, 23], 25: [18, 23], 26: [3, 24], 28: [16, 18, 27], 29: [18, 23, 27], 30: [3, 11, 12, 29],
}  # fmt: skip


def expected_task2() -> dict[int, list[int]]:
    return {t: TASK2_PARENTS.get(t, []) for t in range(1, 31)}


def test_sample_task2_fixture() -> None:
    turns = json.loads((FIXTURES / "task2" / "task.json").read_text())
    assert parse_dependencies(turns) == expected_task2()


def test_sample_task1_fixture_declares_no_numbered_dependencies() -> None:
    turns = json.loads((FIXTURES / "task1" / "task.json").read_text())
    assert "(from country standardization)" in turns[-1]["code"]
    assert parse_dependencies(turns) == {1: [], 2: [], 3: [], 12: []}


def test_demo_task_in_the_repository() -> None:
    demo = Path(__file__).resolve().parents[3] / "eval" / "benchmarks" / "demo" / "six_turn" / "task.json"
    assert parse_dependencies(json.loads(demo.read_text())) == {1: [], 2: [1], 3: [], 4: [], 5: [2, 4], 6: [5]}


def test_full_staged_samples_agree_with_the_trimmed_fixtures() -> None:
    if not SHARED_BI.is_dir():
        pytest.skip(f"staged LongDS samples not present at {SHARED_BI} (trimmed fixtures tested above)")
    task2 = json.loads((SHARED_BI / "task2" / "task.json").read_text())
    assert parse_dependencies(task2) == expected_task2()
    task1 = json.loads((SHARED_BI / "task1" / "task.json").read_text())
    assert parse_dependencies(task1) == {t: [] for t in range(1, 28)}
