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
        # decimals the data is kept with are no reporting precision; the instruction after them is
        (
            "hospital, a facility code stored as a number with one decimal, such as 3.6. Report to 2 decimals.",
            2,
        ),
        ("the code is stored as a number with one decimal", None),
        ("prices are floats with two decimals; round answers to 3 decimals", 3),
    ],
)
def test_required_decimals(text: str, places: int | None) -> None:
    assert required_decimals(text) == places


def test_answer_helpers() -> None:
    assert last_json('noise\n{"a": 1}\n{"b": [1, 2]}') == {"b": [1, 2]}
    assert last_json("no json") is None
    # an LLM worker's final answer: the closing tag must not hide the JSON (issue 30)
    assert last_json('The counts are below.\n<answer>{"n": 71, "by": {"a": 1}}</answer>') == {
        "n": 71,
        "by": {"a": 1},
    }
    assert last_json('<answer>{"n": 1}</answer> then <answer>\n```json\n{"n": 2}\n```\n</answer>') == {"n": 2}
    assert last_json("<answer>71 flowers</answer>") is None
    assert [decimals_of(x) for x in (0.125, 2.0, 43.87, 1e-7)] == [3, 0, 2, 0]


@pytest.mark.parametrize(
    ("answer", "printed", "fired"),
    [
        ({"pct": 43.87}, {"pct": 43.8679}, False),
        ({"pct": 43.9}, {"pct": 43.8679}, True),  # rounded more coarsely than required
        ({"pct": 43.8679}, {"pct": 43.8679}, True),  # more decimals than required
        ({"n": 5}, {"n": 4.6}, False),  # integers are counts, never "too coarse"
        ({"pct": 0.5}, {"other": 0.47}, False),  # no value at the same field: no evidence of a cut
        ({"by": {"Adelie": 3.5}}, {"by": {"Adelie": 3.46}}, True),  # nested fields compare by path
        ({"xs": [1.5, 2.25]}, {"xs": [1.5, 2.25]}, False),
        (
            {"ratio": 6.0},
            {"ratio": 6.27},
            True,
        ),  # rounded to a whole number although the value has a fraction
        ({"n": 6.0}, {"n": 6}, False),
        ({"m": 47.5}, {"m": 47.495}, False),  # a tie: numpy rounds it up to 47.50, Python down to 47.49
        ({"m": 47.5}, {"m": 47.46}, True),
    ],
)
def test_precision(answer, printed, fired: bool) -> None:
    findings = checks.precision(answer, 2, ("result", printed))
    assert bool(findings) is fired
    for f in findings:  # the hint names the printed variable (not answer keys) and passes the guard
        assert f.variables == ["result"]
        check_repair_hint(
            f.reason, f.variables, protected_values=list(answer.values()) + list(printed.values())
        )


def test_grounding_and_execution() -> None:
    assert checks.grounding({"revenue": 720.0}, ("result", {"revenue": 720.0})) == []
    assert checks.grounding({"revenue": 720.0}, None) == []
    assert (
        checks.grounding({"x": float("nan")}, ("result", {"x": float("nan")})) == []
    )  # NaN reported faithfully
    bad = checks.grounding({"revenue": 1060.0}, ("result", {"revenue": 720.0}))
    assert bad[0].variables == ["result"] and bad[0].check == "grounding"
    failed = WorkerStep(index=3, action="total = revnue * 2", error="NameError: name 'revnue'", success=False)
    assert checks.execution([failed])[0].variables == ["total"]
    rerun = WorkerStep(index=4, action="total = revenue * 2", meta={"writes": ["total"]})
    assert checks.execution([failed, rerun]) == []


def test_staleness_reports_only_confirmed_reads_once_each() -> None:
    found = checks.staleness([(1, "margin", ["revenue"]), (2, "margin", ["revenue"]), (3, "share", ["wet"])])
    assert [(f.variables, f.check) for f in found] == [(["margin"], "staleness"), (["share"], "staleness")]
    for f in found:
        assert "stale" in f.reason
        check_repair_hint(f.reason, f.variables)


@pytest.mark.parametrize(
    ("question", "code", "fired"),
    [
        ("Keep the cars with at least 25 mpg.", "x = cars[cars.mpg >= 30]", True),
        ("Keep the cars with at least 25 mpg.", "x = cars[cars.mpg >= 25]", False),
        (
            "Keep the cars with at least 25 mpg.",
            "x = cars.query_efficient()",
            False,
        ),  # no literal cut-off: no evidence
        ("Mean yield pooled over 2000-2014, for stations above 10 to 20 m.", "x = df[df.y > 3]", False),
        (
            "Months that fell by more than 500 thousand jobs.",
            "con.execute('SELECT * FROM t WHERE c < -400')",
            True,
        ),
        ("Share below 30%.", "x = df[df.share < 0.3]", False),
        ("Airports with a longitude below -100 degrees.", "x = df[df.lon < -100]", False),
        ("Airports with a longitude below -100 degrees.", "x = df[df.lon < -110]", True),
        # a unit rescales the stated number in code: cents in dollars, millions, a relative percent
        (
            "Days whose range is at least 60 cents.",
            "x = con.execute('SELECT * FROM q WHERE hi - lo >= 0.6')",
            False,
        ),
        (
            "Days whose range is at least 60 cents.",
            "x = con.execute('SELECT * FROM q WHERE hi - lo >= 0.5')",
            True,
        ),
        (
            "Days that closed more than 0.5% above the open with no fewer than 60 million shares.",
            "x = con.execute('SELECT * FROM q WHERE close > open * 1.005 AND volume >= 60000000')",
            False,
        ),
        (
            "Days that closed more than 0.5% above the open with no fewer than 60 million shares.",
            "x = con.execute('SELECT * FROM q WHERE close > open * 1.005 AND volume >= 6000000')",
            True,
        ),
        ("Months that fell by more than 500 thousand jobs.", "x = df[df.change < -500000]", False),
    ],
)
def test_parameters_needs_a_different_literal_in_the_code(question: str, code: str, fired: bool) -> None:
    step = WorkerStep(index=0, action=code, meta={"writes": ["x"]})
    assert bool(checks.parameters(question, [step], {})) is fired


def test_constraints_and_related(tmp_path) -> None:
    results = [
        ConstraintResult(text="non-negative", passed=False, error="AssertionError"),
        ConstraintResult(text="other", passed=True),
    ]
    assert [f.reason for f in checks.constraints(results)] == [
        "the result violates a stated requirement: non-negative"
    ]
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(
        AnalyticalState(
            id="S1",
            issue="a",
            used_variables=[VariableRef(name="k", version="S1", value=3.0)],
            relations=[Relation(type="init")],
        )
    )
    assert checks.related({"k": "S1"}, store, {"k": 3.0}) == []
    assert checks.related({"k": "S1"}, store, {"k": 4.0})[0].variables == ["k"]


def test_a_repair_hint_gives_every_reason_its_check_found() -> None:
    from stateguard.policies.rules import hint_reason
    from stateguard.verification.finding import Finding

    def found(check: str, reason: str) -> Finding:
        return Finding(check=check, variables=["result"], reason=reason, evidence="e")

    findings = [
        found("semantic", "the comparison keeps the wrong side"),
        found("semantic", "the flag is read under its earlier definition"),
        found("semantic", "the comparison keeps the wrong side"),
        found("staleness", "margin is stale"),
    ]
    assert hint_reason(findings) == (
        "the comparison keeps the wrong side; the flag is read under its earlier definition"
    )
    assert hint_reason(findings[3:]) == "margin is stale"
