"""The deterministic checks of the rules manager, as tables of cases."""

from __future__ import annotations

import pytest

from stateguard.answers import decimals_of, last_json, required_decimals
from stateguard.hint_guard import check_repair_hint
from stateguard.observation import WorkerStep
from stateguard.policies import checks
from stateguard.state import AnalyticalState, ConstraintResult, Relation, VariableRef
from stateguard.store import StateStore


@pytest.mark.parametrize(
    ("text", "places"),
    [
        ("report all results rounded to 4 decimal places", 4),
        ("Round to two decimals.", 2),
        ("give it to 3 d.p.", 3),
        ("a 1-decimal figure", 1),
        ("no precision stated", None),
    ],
)
def test_required_decimals(text: str, places: int | None) -> None:
    assert required_decimals(text) == places


def test_answer_helpers() -> None:
    assert last_json('noise\n{"a": 1}\n{"b": [1, 2]}') == {"b": [1, 2]}
    assert last_json("no json") is None
    assert [decimals_of(x) for x in (0.125, 2.0, 43.87, 1e-7)] == [3, 0, 2, 0]


@pytest.mark.parametrize(
    ("answer", "scalars", "fired"),
    [
        ({"pct": 43.87}, {"pct": 43.8679}, False),
        ({"pct": 43.9}, {"pct": 43.8679}, True),  # rounded more coarsely than required
        ({"pct": 43.8679}, {}, True),  # more decimals than required
        ({"n": 5}, {"x": 4.6}, False),  # integers are counts, never "too coarse"
        ({"pct": 0.5}, {"other": 0.47}, True),  # no same-named scalar: any scalar may show the cut
    ],
)
def test_precision(answer, scalars, fired: bool) -> None:
    findings = checks.precision(answer, 2, scalars)
    assert bool(findings) is fired
    for f in findings:  # the worker-facing reason must pass the hint guard
        check_repair_hint(f.reason, f.variables, protected_values=list(answer.values()) + list(scalars.values()))


def test_grounding_and_execution() -> None:
    assert checks.grounding({"revenue": 720.0}, {"revenue": 720.0}) == []
    bad = checks.grounding({"revenue": 1060.0}, {"revenue": 720.0})
    assert bad[0].variables == ["revenue"] and bad[0].check == "grounding"
    failed = WorkerStep(index=3, action="total = revnue * 2", error="NameError: name 'revnue'", success=False)
    assert checks.execution([failed])[0].variables == ["total"]
    rerun = WorkerStep(index=4, action="total = revenue * 2", meta={"writes": ["total"]})
    assert checks.execution([failed, rerun]) == []


def test_staleness_from_dataflow_and_from_the_store(tmp_path) -> None:
    step = WorkerStep(index=1, action="m = margin / 2", meta={"stale_reads": {"margin": ["revenue"]}})
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(AnalyticalState(id="S1", issue="a", used_variables=[VariableRef(name="rev", version="S1", value=1)],
                                 relations=[Relation(type="init")]))  # fmt: skip
    store.commit(AnalyticalState(id="S2", issue="b", used_variables=[VariableRef(name="rev", version="S1", value=1)],
                                 relations=[Relation(type="progress", related_state_id="S1")]))  # fmt: skip
    store.commit(AnalyticalState(id="S3", issue="c", used_variables=[VariableRef(name="rev", version="S3", value=2)],
                                 relations=[Relation(type="invalidate", related_state_id="S1")]))  # fmt: skip
    found = checks.staleness([step], {"rev": "S1"}, store)
    assert [(f.variables, f.check) for f in found] == [(["margin"], "staleness"), (["rev"], "staleness")]
    assert "invalidated by S3" in found[1].evidence
    assert checks.staleness([], {"rev": "S3"}, store) == []
    for f in found:
        check_repair_hint(f.reason, f.variables)


def test_constraints_and_related(tmp_path) -> None:
    results = [ConstraintResult(text="non-negative", passed=False, error="AssertionError"),
               ConstraintResult(text="other", passed=True)]  # fmt: skip
    assert [f.reason for f in checks.constraints(results)] == ["the result violates a stated requirement: non-negative"]
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(AnalyticalState(id="S1", issue="a", used_variables=[VariableRef(name="k", version="S1", value=3.0)],
                                 relations=[Relation(type="init")]))  # fmt: skip
    assert checks.related({"k": "S1"}, store, {"k": 3.0}) == []
    assert checks.related({"k": "S1"}, store, {"k": 4.0})[0].variables == ["k"]
