"""synth-bench loading derives the single-fault variants only when the selection can pick one."""

from __future__ import annotations

import pytest

from eval.benchmarks.synth.loader import _may_select_derived
from stateguard.workers.faults import Fault

DECLARED = {"shipped": [Fault(kind="counterfactual", turn=3, code="x = 1\n", semantic="changed_threshold")]}


@pytest.mark.parametrize(
    ("selection", "derives"),
    [
        ({"variants": ["clean", "shipped"]}, False),  # make eval's default: nothing derived is wanted
        ({"variants": ["shipped"]}, False),
        ({"variants": "clean"}, False),
        ({"variants": ["counterfactual"]}, False),  # a declared fault's kind
        ({"variants": ["counterfactual:changed_threshold"]}, False),  # and its label
        ({"variants": ["clean", "shipped"], "faults": [{"kind": "stale", "turn": 2}]}, False),
        ({}, True),  # no selection means all
        ({"variants": "all"}, True),
        ({"variants": ["clean", "stale"]}, True),
        ({"variants": ["precision-t7"]}, True),
        ({"variants": ["exec_error"]}, True),
        ({"variants": ["shiped"]}, True),  # unknown: derive, as before, so the same tasks are selected
    ],
)
def test_derived_variants_only_when_selectable(selection: dict, derives: bool) -> None:
    assert _may_select_derived(DECLARED, selection) is derives
