"""Pa(t) from `# Depends on ...` comments: every surface form, the limits, and the real sample tasks.

The surface forms below are written by us in the shapes the published tasks use. The published
sample tasks are read in place from ../shared/benchmarks (tests/support/published.py); their
expected parent sets were read off their comments by hand. The invented bakery tasks in
tests/eval/fixtures/longds_layout cover the same forms offline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from eval.benchmarks.longds import parse_dependencies
from eval.benchmarks.longds.deps import MAX_RANGE_SPAN, dependency_comments, references, turn_dependencies
from tests.support.published import published

BAKERY = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "longds_layout"
    / "task"
    / "longds"
    / "retail"
    / "bakery"
)
SAMPLE_BI = "longds/samples/task/longds/education/bi"

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
    (9, "# recount: totals per store (from the name cleanup)", []),  # no turn named
    (9, "# Task 3 was slow; Task 4 too", []),  # a mention without a cue is not a declaration
    (9, 's = "# Depends on Task 3"', []),  # not a comment
    (5, "# Depends on Task 5 and Task 2", [2]),  # self-reference removed
    (5, "# Depends on Task 7 and Task 2", [2]),  # future turn removed
    (5, "# Depends on Task 0", []),
    (30, "# Depends on Tasks 4-2", [4]),  # reversed range: only its start
    (60, "# Depends on Tasks 3-40", [3]),  # implausibly wide range: only its start
    (60, f"# Depends on Tasks 3-{3 + MAX_RANGE_SPAN}", list(range(3, 4 + MAX_RANGE_SPAN))),
    (9, "# Depends on Task 3, Task 3 and Task 1", [1, 3]),  # duplicates merged, sorted
    (
        12,
        "# T12: [chained] depends on:\n#   - best3_a (T10 — best three)\n#   - score (T4)",
        [4, 10],
    ),  # bullets
    (12, "# T12: depends on:\n#   - a (T10)\nx = 1\n#   - b (T4)", [10]),  # bullets end at code
    (12, "# depends on:\n#   - best3_b  (T8) — weights 0.7/0.3 on the first pick", [8]),  # decimals not refs
    (23, "# T23: UPDATE — redefine binning.\n# until T30 replaces it; kept since T3", []),  # no cue
    (10, "# Depends on Task 3\nif x:\n  y = (", [3]),  # code that does not tokenize
]


@pytest.mark.parametrize(("turn_id", "code", "expected"), CASES)
def test_turn_dependencies(turn_id: int, code: str, expected: list[int]) -> None:
    assert turn_dependencies(turn_id, code) == expected


def test_label_of_the_current_turn_is_removed_before_parsing() -> None:
    assert dependency_comments("# T10: [chained] depends on:\n#   - x (T3)", turn_id=10) == [
        " [chained] depends on: ;    - x (T3)"
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


# Hand-read from the comments of the published task education/bi/task2 (read in place, not copied).
TASK2_PARENTS = {
    4: [3],
    10: [3, 7, 8],
    14: [11, 12],
    17: [12, 16],
    19: [13, 18],
    20: [12, 18],
    21: [11, 14, 18],
    22: [18],
    24: [18, 23],
    25: [18, 23],
    26: [3, 24],
    28: [16, 18, 27],
    29: [18, 23, 27],
    30: [3, 11, 12, 29],
}
# Words-only cues: a comment names an earlier result without a turn number, as in "(from the X)".
NAMED_IN_WORDS = re.compile(r"\(from (?:the )?[a-z][a-z ]+\)")


def expected_task2() -> dict[int, list[int]]:
    return {t: TASK2_PARENTS.get(t, []) for t in range(1, 31)}


@pytest.mark.published_data
def test_published_sample_task2() -> None:
    turns = json.loads(published(f"{SAMPLE_BI}/task2/task.json").read_text())
    assert parse_dependencies(turns) == expected_task2()
    assert sum(bool(p) for p in expected_task2().values()) == 14


@pytest.mark.published_data
def test_published_sample_task1_declares_no_numbered_dependencies() -> None:
    turns = json.loads(published(f"{SAMPLE_BI}/task1/task.json").read_text())
    assert any(NAMED_IN_WORDS.search(t["code"]) for t in turns)  # earlier results named in words only
    assert parse_dependencies(turns) == {t: [] for t in range(1, 28)}


def test_invented_layout_tasks() -> None:
    task2 = json.loads((BAKERY / "task2" / "task.json").read_text())
    assert parse_dependencies(task2) == {1: [], 2: [1], 3: [], 4: [1, 2, 3], 5: [1, 2], 6: [3, 4]}
    task1 = json.loads((BAKERY / "task1" / "task.json").read_text())
    assert NAMED_IN_WORDS.search(task1[-1]["code"])
    assert parse_dependencies(task1) == {1: [], 2: [], 3: [], 7: []}


def test_demo_task_in_the_repository() -> None:
    demo = Path(__file__).resolve().parents[3] / "eval" / "benchmarks" / "demo" / "six_turn" / "task.json"
    assert parse_dependencies(json.loads(demo.read_text())) == {
        1: [],
        2: [1],
        3: [],
        4: [],
        5: [2, 4],
        6: [5],
    }
