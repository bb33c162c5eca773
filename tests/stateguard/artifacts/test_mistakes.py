"""The one table of mistake kinds: its rows agree with the typed names, and every reader reads it."""

from __future__ import annotations

from decimal import Decimal

import pytest

from eval.benchmarks.variants import read_faults_file
from stateguard.artifacts.faults import Fault, ShippedFault, save_shipped_faults
from stateguard.artifacts.mistakes import (
    MISTAKES,
    InterventionKind,
    StatedFacts,
    by_intervention,
    semantic_kinds,
)
from stateguard.workers.response import names_kind


def test_every_semantic_and_intervention_kind_has_one_row() -> None:
    assert {m.semantic for m in MISTAKES.values() if m.semantic} == set(semantic_kinds())
    assert {m.intervention for m in MISTAKES.values() if m.intervention} == set(InterventionKind)
    assert all(m.hint_words for m in MISTAKES.values())
    assert all(m.reason and m.stated and m.operations for m in MISTAKES.values() if m.intervention)


def test_scope_and_filter_changes_are_separate_kinds_and_report_rows() -> None:
    scope, dropped = by_intervention("category_scope"), by_intervention("filter_condition")
    assert (scope.semantic, dropped.semantic) == ("category_scope", "dropped_filter")
    assert scope.group != dropped.group
    # a hint names both the same way, so the scripted worker answers them as before
    assert scope.hint_words == dropped.hint_words
    assert names_kind("rows kept differ: a filter was lost", "counterfactual:category_scope")


def test_shipped_faults_keep_their_intervention_kind_in_the_report(tmp_path) -> None:
    path = tmp_path / "faults.json"
    save_shipped_faults(
        path,
        [
            ShippedFault(turn=3, kind="category_scope", code="x = 1", description="scope"),
            ShippedFault(turn=5, kind="filter_condition", code="y = 1", description="filter"),
            ShippedFault(turn=7, kind=None, code="z = 1"),
        ],
    )
    faults = read_faults_file(path).variants["shipped"]
    assert [f.group for f in faults] == [
        "counterfactual:category_scope",
        "counterfactual:dropped_filter",
        "counterfactual:other",
    ]


@pytest.mark.parametrize(
    ("kind", "operation", "text", "numbers", "strings", "stated"),
    [
        ("numeric_parameter", "set_threshold", "above 40 mm", {"40"}, set(), True),
        ("numeric_parameter", "set_threshold", "long bills", {"40"}, set(), False),
        ("numeric_parameter", "set_limit", "which island has the most", {"1"}, set(), True),
        ("comparison_direction", "flip_comparison", "at least 40 mm", {"40"}, set(), True),
        ("comparison_direction", "flip_comparison", "40 mm", {"40"}, set(), False),
        ("formula_semantics", "avg_to_median", "the average mass", set(), set(), True),
        ("category_scope", "add_in_item", "Adelie and Gentoo", set(), {"Adelie", "Gentoo"}, True),
        ("category_scope", "add_in_item", "all species", set(), set(), False),
        ("filter_condition", "drop_conjunct", "on Biscoe", set(), {"Biscoe"}, True),
    ],
)
def test_stated_tests_per_kind(kind, operation, text, numbers, strings, stated) -> None:
    facts = StatedFacts(
        text=text,
        operation=operation,
        before="",
        numbers=frozenset(Decimal(n) for n in numbers),
        strings=frozenset(strings),
        columns=(),
        stated_numbers=frozenset({Decimal(40)}) if "40" in text else frozenset(),
    )
    test = by_intervention(kind).stated
    assert test is not None and test(facts) is stated


def test_a_fault_reports_under_its_row() -> None:
    fault = Fault(kind="counterfactual", turn=2, semantic="category_scope", code="x = 2")
    assert fault.label == fault.group == "counterfactual:category_scope"
    assert Fault(kind="stale", turn=4).group == "stale"


def test_every_operation_the_interventions_make_is_a_row_of_its_kind() -> None:
    import random

    from synthesis.interventions import candidate_interventions

    rich = (
        "CREATE TABLE s3 AS WITH big AS (SELECT * FROM s1 WHERE age > 30 AND city IN ('a', 'b')) "
        "SELECT city, AVG(income) AS m, SUM(spend) / SUM(income) AS r FROM big "
        "GROUP BY city HAVING COUNT(*) >= 2 ORDER BY m DESC LIMIT 10"
    )
    made = {
        (r.kind, r.operation)
        for _, r in candidate_interventions(rich, random.Random(3), category_values={"city": ["a", "b", "c"]})
    }
    declared = {(m.intervention, op) for m in MISTAKES.values() if m.intervention for op in m.operations}
    assert made <= declared
    assert {k for k, _ in made} == set(InterventionKind)
