"""R_support (Eq. 29): the grounding rules case by case, then on real-harness states."""

from __future__ import annotations

from typing import Any

import pytest

from tests.training.rewards.reward_world import labels
from training.rewards import Adjudicator, build_rollout
from training.rewards.evidence import Evidence, Number, number_of, numbers_in, same_number
from training.rewards.support import ground_conclusion, ground_variable, r_support, support_items

OUTPUT = '{"answer_type": "scalar", "revenue": 545.5, "top_region": "North", "orders": 5, "above_40": true}'


def evidence(*texts: str, written: tuple[str, ...] = (), checks: tuple[str, ...] = ()) -> Evidence:
    ev = Evidence(written=set(written), passed_checks=list(checks))
    for text in texts:
        ev.add_text(text)
    return ev


S3 = {"id": "S3"}
COMMITTED = {"S1": {"id": "S1", "used_variables": [{"name": "revenue", "version": "S1", "value": 545.5}]}}


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ('{"share": 0.7699, "n": 4}', [(0.7699, 4), (4.0, 0)]),
        ("above_40 is true for revenue@S4", []),  # digits inside identifiers and versions are not numbers
        ("1060.0 and 1.5e-3", [(1060.0, 1), (0.0015, 4)]),
        ("[100,200]", [(100.0, 0), (200.0, 0)]),  # machine output: no thousands separators
    ],
)
def test_numbers_are_read_with_the_precision_shown(text: str, numbers: list[tuple[float, int]]) -> None:
    assert [(n.value, n.decimals) for n in numbers_in(text)] == numbers


@pytest.mark.parametrize(
    ("recorded", "shown", "match"),
    [
        (66.42857142857143, "66.43", True),
        (1060.0, "1060.0", True),
        (0.7699360, "0.7699", True),
        (0.7699360, "0.77", True),
        (0.7699360, "0.7712", False),
        (545.5, "5455", False),
        (1e-05, "0.0001", False),
    ],
)
def test_numbers_match_at_the_coarser_precision(recorded: float, shown: str, match: bool) -> None:
    [number] = numbers_in(shown)
    assert same_number(number_of(recorded), number) is match


def test_grouped_numbers_in_prose() -> None:
    assert numbers_in("revenue was 1,060.5 in total", grouped=True) == [Number(value=1060.5, decimals=1)]


@pytest.mark.parametrize(
    ("variable", "ev", "verdict", "reason"),
    [
        ({"name": "revenue", "version": "S3", "value": 545.5}, evidence(OUTPUT), True, "value found"),
        ({"name": "revenue", "version": "S3", "value": 545.49}, evidence(OUTPUT), True, "value found"),
        (
            {"name": "revenue", "version": "S3", "value": 5000.0},
            evidence(OUTPUT, written=("revenue",)),
            False,
            "the evidence shows other values",
        ),
        (
            {"name": "cost", "version": "S3", "value": 595.0},
            evidence(OUTPUT, written=("cost",)),
            None,
            "written by the worker",
        ),
        (
            {"name": "forecast", "version": "S3", "value": 999.0},
            evidence(OUTPUT),
            False,
            "nothing in the state's source",
        ),
        (
            {
                "name": "sales",
                "version": "S3",
                "value": {"type": "DataFrame", "shape": [10, 5], "hash": "ab"},
            },
            evidence(OUTPUT, written=("sales",)),
            True,
            "written by a successful step",
        ),
        (
            {"name": "sales", "version": "S3", "value": {"type": "DataFrame", "hash": "ab"}},
            evidence(OUTPUT),
            False,
            "no successful step",
        ),
        (
            {"name": "kept", "version": "S3", "value": None},
            evidence(OUTPUT, written=("kept",)),
            True,
            "written",
        ),
        (
            {"name": "result", "version": "S3", "value": {"revenue": 545.5, "top_region": "North"}},
            evidence(OUTPUT),
            True,
            "value found",
        ),
        (
            {"name": "result", "version": "S3", "value": {"revenue": 545.5, "top_region": "South"}},
            evidence(OUTPUT, written=("result",)),
            None,
            "written by the worker",
        ),
        ({"name": "above_40", "version": "S3", "value": True}, evidence(OUTPUT), True, "value found"),
        (
            {"name": "flag", "version": "S3", "value": True},
            evidence(OUTPUT, written=("flag",)),
            None,
            "written",
        ),
        ({"name": "orders", "version": "S3", "value": 5}, evidence(OUTPUT), True, "value found"),  # keyed
        (
            {"name": "n", "version": "S3", "value": 5},
            evidence(OUTPUT, written=("n",)),
            None,
            "written",
        ),  # a bare 5
        (
            {"name": "total", "version": "S3", "value": 720.0},
            evidence(OUTPUT, written=("total",), checks=("assert abs(total - 720.0) < 0.01",)),
            True,
            "passed executable",
        ),
        ({"name": "revenue", "version": "S1", "value": 545.5}, evidence(), True, "equals the committed"),
        (
            {"name": "revenue", "version": "S1", "value": 600.0},
            evidence(),
            False,
            "differs from the committed",
        ),
        ({"name": "margin", "version": "S2", "value": 1.0}, evidence(), True, "the harness checked"),
    ],
)
def test_variable_grounding(
    variable: dict[str, Any], ev: Evidence, verdict: bool | None, reason: str
) -> None:
    got, why = ground_variable(variable, S3, ev, COMMITTED)
    assert got is verdict
    assert reason in why


@pytest.mark.parametrize(
    ("text", "cites", "verdict", "reason"),
    [
        ("revenue is 545.5 over 5 orders", ["revenue@S3"], True, "every number"),
        ("revenue is 1,060.5", [], None, "states 1060.5"),
        ("the margin is 43.87% of revenue", [], None, "states 43.87"),
        ("the forecast is 999.0", ["forecast@S3"], False, "cites ungrounded forecast@S3"),
        ("North has the most orders", [], True, "names the recorded value 'North'"),
        ("customers prefer large orders", [], None, "no value"),
        ("next, look at the top 3 regions", [], None, "no value"),  # small counts prove nothing
        ("the cut keeps 2 of 4 rows", [], None, "no value"),
    ],
)
def test_conclusion_grounding(text: str, cites: list[str], verdict: bool | None, reason: str) -> None:
    verdicts = {"revenue@S3": True, "forecast@S3": False}
    got, why = ground_conclusion({"text": text, "variables": cites}, [545.5], evidence(OUTPUT), verdicts)
    assert got is verdict
    assert reason in why


def test_grounded_state_scores_one(sales: Any) -> None:
    run = sales()
    run.settle()
    items = support_items(build_rollout(run.events, start_seq=run.start_seq), Adjudicator(None))
    assert [(i.key, i.grounded, i.decided_by) for i in items] == [
        ("big@S2", True, "evidence"),
        ("share@S2", True, "evidence"),
        ("revenue@S1", True, "evidence"),
        ("large orders bring 0.7699 of revenue", True, "evidence"),
    ]
    assert r_support(items) == 1.0


def test_ungrounded_variables_and_conclusions_lower_support(sales: Any) -> None:
    run = sales(threshold=100)
    run.update_share(  # the manager re-materializes S2 with contents nothing executed
        extra_variables=[{"name": "forecast", "value": 999.0}],
        extra_conclusions=[
            {"text": "next quarter's forecast is 999.0", "variables": ["forecast"]},
            "customers clearly prefer large orders",
        ],
    )
    run.settle()
    ledger = Adjudicator(None)
    result = support_items(build_rollout(run.events, start_seq=run.start_seq), ledger)
    verdicts = {i.key: (i.grounded, i.decided_by) for i in result}
    assert verdicts["forecast@S2"] == (False, "evidence")
    assert verdicts["next quarter's forecast is 999.0"] == (False, "evidence")
    assert verdicts["customers clearly prefer large orders"] == (False, "conservative")
    assert r_support(result) == pytest.approx(4 / 7)
    assert dict(ledger.conservative) == {"support": 1}
    assert run.score(labels(False)).support.value == pytest.approx(4 / 7)


@pytest.mark.parametrize(
    ("tool", "arguments", "grounded"),
    [
        ("run_probe", {"code": "print(sum(big))"}, True),  # 420.0, computed from the data
        ("run_probe", {"code": "result = {'top': sum(big)}"}, True),
        ("run_probe", {"code": "print(420.0)"}, False),  # the manager's own literal
        ("run_probe", {"code": "result = {'top': 420.0}"}, False),
        ("inspect_python", {"code": "top = 420.0"}, False),  # lists the literal; describes code only
        ("compile_python", {"code": "top = 420.0"}, False),
        ("load_state", {"state_id": "S1"}, False),  # S1 says nothing about 420.0
    ],
)
def test_tool_evidence_grounds_only_what_the_runtime_computed(
    sales: Any, tool: str, arguments: dict[str, Any], grounded: bool
) -> None:
    run = sales()
    run.act(tool, **arguments)
    run.update_share(extra_variables=[{"name": "top", "value": 420.0}])  # no worker step wrote `top`
    run.settle()
    items = support_items(build_rollout(run.events, start_seq=run.start_seq), Adjudicator(None))
    [top] = [i for i in items if i.key == "top@S2"]
    assert (top.grounded, top.decided_by) == (grounded, "evidence")


def test_only_states_committed_in_the_continuation_are_scored(sales: Any) -> None:
    run = sales()
    run.repair(["big"])  # no commit inside the continuation: nothing to score
    items = support_items(build_rollout(run.events, start_seq=run.start_seq), Adjudicator(None))
    assert items == [] and r_support(items) is None
    assert support_items(build_rollout(run.events, start_seq=0), Adjudicator(None))[0].state_id == "S1"
