"""Stale reads are decided from facts: a replay on today's inputs, in dependency order, and intent
only from positive evidence in the question (stateguard.policies.replay / intent / staleness)."""

from __future__ import annotations

import pytest

from stateguard.observation import WorkerStep
from stateguard.policies.intent import Asked, question_intent
from stateguard.policies.replay import replay_differs, replay_plan
from stateguard.policies.staleness import AcceptedVersions, decide
from stateguard.workspace import DictWorkspace


def _run(
    ws: DictWorkspace, cells: list[str], start: int = 0, turns: list[int] | None = None
) -> dict[int, WorkerStep]:
    steps = {}
    for i, code in enumerate(cells, start):
        r = ws.run_cell(code)
        assert r.ok, r.error
        steps[i] = WorkerStep(
            index=i,
            turn=(turns[i - start] if turns else i + 1),
            action=code,
            output=r.stdout,
            success=r.ok,
            error=r.error,
            meta={"writes": r.writes, "reads": r.reads, "stale_reads": r.stale_reads},
        )
    return steps


def test_replay_tells_a_changed_input_from_one_rebound_to_the_same_content() -> None:
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    steps = _run(
        ws,
        [
            "df = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})",
            "total = int(df['a'].sum())\nother = 1",
            "df['c'] = df['b'] * 2",  # a new column: `total` does not use it
            "df = pd.DataFrame({'a': [1, 2, 3], 'b': [4, 5, 6]})",  # reloaded: the same content
        ],
    )
    assert ws.dataflow.is_stale("total")  # the pattern says stale ...
    assert replay_differs(ws, steps, "total", before=4) is False  # ... the evidence says it is not
    steps.update(_run(ws, ["df = pd.DataFrame({'a': [10, 20], 'b': [1, 1]})"], start=4))
    assert replay_differs(ws, steps, "total", before=5) is True
    assert ws.get_value("total") == 6  # the probe changed nothing
    assert replay_differs(ws, steps, "never_written", before=5) is None


def test_replay_rebuilds_a_frame_changed_in_place_after_it_was_made() -> None:
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    steps = _run(
        ws,
        [
            "scope = pd.DataFrame({'s': [1, 2, 3]})",
            "part = scope.copy()",
            "part['w'] = part['s'] > 1",
            "n = int(part['s'].sum())",
            "scope = pd.DataFrame({'s': [1]})",
        ],
    )
    plan = replay_plan(steps, "n", before=5)
    assert plan is not None
    assert plan.statements == ["part = scope.copy()", "part['w'] = part['s'] > 1", "n = int(part['s'].sum())"]
    assert plan.revised == ["scope"]
    assert replay_differs(ws, steps, "n", before=5) is True


def test_replay_follows_stale_intermediates_by_itself() -> None:
    ws = DictWorkspace()
    steps = _run(ws, ["base = [1, 2, 3]", "mid = [x * 2 for x in base]", "top = sum(mid)", "base = [5]"])
    plan = replay_plan(steps, "top", before=4)
    assert plan is not None and plan.statements == ["mid = [x * 2 for x in base]", "top = sum(mid)"]
    assert replay_differs(ws, steps, "top", before=4) is True


def test_replay_runs_statements_of_one_step_in_dependency_order() -> None:
    """Two stale variables from one cell: the recomputation of `a_total` needs `b_rows` first,
    although its text sorts before it (the old planner sorted statement lists by their text)."""
    ws = DictWorkspace()
    steps = _run(
        ws,
        [
            "limit = 2\nvalues = [1, 2, 3, 4]",
            "b_rows = [v for v in values if v > limit]\na_total = sum(b_rows)",
            "limit = 3",
        ],
    )
    plan = replay_plan(steps, "a_total", before=3)
    assert plan is not None
    assert plan.statements == ["b_rows = [v for v in values if v > limit]", "a_total = sum(b_rows)"]
    assert replay_differs(ws, steps, "a_total", before=3) is True


def test_a_scratch_input_is_recomputed_from_the_version_the_value_consumed() -> None:
    """A report-only turn formats scalars an earlier turn computed through a scratch frame that a
    later turn rebound: the replay re-derives the scratch frame on today's inputs instead of taking
    the unrelated frame the name holds now."""
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    steps = _run(
        ws,
        [
            "df = pd.DataFrame({'x': [1, 2, 3, 4, 5], 'g': list('aabbb')})",
            "df['hi'] = df['x'] > 2\n_sel = df[df['hi']]\nmean_hi = float(_sel['x'].mean())",
            "df['hi'] = df['x'] > 3\n_sel = df[df['g'] == 'a']",
            "result = {'mean_hi': round(mean_hi, 2)}",
        ],
    )
    assert steps[3].meta["stale_reads"] == {"mean_hi": ["_sel['x']"]}  # only a scratch name is named
    plan = replay_plan(steps, "mean_hi", before=3)
    assert plan is not None
    assert plan.statements == ["_sel = df[df['hi']]", "mean_hi = float(_sel['x'].mean())"]
    assert plan.revised == ["df"]
    decisions = decide([steps[3]], steps, ws, "Report the mean of the high values.")
    assert [(d.name, d.decision, d.inputs) for d in decisions] == [("mean_hi", "finding", ["df"])]


@pytest.mark.parametrize(
    ("question", "turns", "earlier"),
    [
        (
            "Compare with the wet-day counts per label from before the update (the original definition, turn 4).",
            {},
            Asked(phrase="before the update", compares=False),
        ),
        ("Under the current definition, redo the wind comparison of turn 7.", {}, None),
        (
            "With the original definition restored, compute the gap again, and compare it with the gap "
            "under the 1.0 mm definition from turn 9.",
            {9: Asked(phrase="with the gap under the 1.0 mm definition from turn 9", compares=True)},
            None,
        ),
        ("Combine the monthly table of turn 5 with the warm-day flag of turn 6.", {}, None),
        ("Restore the original definition. What share of days are wet?", {}, None),
        ("Rebuild the Task 6 table with the new rule and report the top three.", {}, None),
        ("As in Task 5, report the mean per group.", {}, None),
        ("With the new rule, what is the Task 6 table's total?", {}, None),
        ("Under the current definition, how many days are wet?", {}, None),
        ("How does the share compare with the previous year?", {}, None),
        (
            "How many fewer days than in Task 4 count as wet now?",
            {4: Asked(phrase="than in Task 4", compares=True)},
            None,
        ),
        (
            "How much did the count change from the original definition?",
            {},
            Asked(phrase="from the original definition", compares=True),
        ),
        (
            "What is the mean now, and how much did it change from the figure under the original definition?",
            {},
            Asked(phrase="from the figure under the original definition", compares=True),
        ),
        ("With the original definition back, what is the mean?", {}, None),
        (
            "Compare with the counts of turn 6 (simple returns).",
            {6: Asked(phrase="Compare with the counts of turn 6", compares=True)},
            None,
        ),
        (
            "Per stock, the good months under the new rule minus those under the old one (the profile of Task 8).",
            {8: Asked(phrase="minus those under the old one (the profile of Task 8", compares=True)},
            None,
        ),
        (
            "Take the regional join as turn 9 built it, on the narrower scope.",
            {9: Asked(phrase="as turn 9 built it", compares=False)},
            None,
        ),
    ],
)
def test_question_intent_needs_a_comparison_that_names_the_earlier_value(
    question: str, turns: dict[int, Asked], earlier: Asked | None
) -> None:
    intent = question_intent(question)
    assert intent.turns == turns
    assert intent.earlier == earlier


def _wet_days(*later: str) -> tuple[DictWorkspace, dict[int, WorkerStep]]:
    """Turn 1 flags wet days, turn 2 counts them (`wet_days`), then the `later` cells run."""
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    first = [
        "wx = pd.DataFrame({'p': [0.0, 0.2, 1.5, 3.0]})\nwx['wet'] = wx['p'] > 0",
        "wet_days = int(wx['wet'].sum())",
    ]
    return ws, _run(ws, [*first, *later])


def _revision_task() -> tuple[DictWorkspace, dict[int, WorkerStep]]:
    """Turn 2 counts wet days, turn 3 redefines `wet`, turn 4 reads turn 2's count."""
    return _wet_days(
        "wx['wet'] = wx['p'] >= 1.0",
        "now_days = int(wx['wet'].sum())\nresult = {'old': wet_days, 'new': now_days}",
    )


def test_a_turn_named_without_a_comparison_is_no_evidence_of_intent() -> None:
    ws, steps = _revision_task()
    decisions = decide([steps[3]], steps, ws, "With the new rule, report the Task 2 count and today's.")
    assert [(d.name, d.decision) for d in decisions] == [("wet_days", "finding")]


def test_a_comparison_with_the_turn_that_made_the_value_is_intent() -> None:
    ws, steps = _revision_task()
    memory = AcceptedVersions()
    decisions = decide(
        [steps[3]], steps, ws, "Compare the current count with the count of turn 2.", accepted=memory
    )
    assert [(d.name, d.decision) for d in decisions] == [("wet_days", "intended")]
    assert "count of turn 2" in decisions[0].evidence
    # the same phrase naming another turn binds nothing
    other = decide([steps[3]], steps, ws, "Compare the current count with the count of turn 1.")
    assert [d.decision for d in other] == ["finding"]


def test_intent_needs_the_turn_to_read_the_revised_input_too() -> None:
    """'Compared with the original definition' while the turn never touches the revised data: the
    new side of the comparison is missing, which is what a skipped recomputation looks like."""
    ws, steps = _wet_days(
        "wx['wet'] = wx['p'] >= 1.0",
        "result = {'wet_days': wet_days}",
    )
    decisions = decide(
        [steps[3]], steps, ws, "How many wet days are there, compared with the original definition?"
    )
    assert [d.decision for d in decisions] == ["finding"]


def test_a_frame_that_only_gained_columns_is_unchanged() -> None:
    ws = DictWorkspace()
    ws.run("import pandas as pd")
    steps = _run(
        ws,
        [
            "cars = pd.DataFrame({'w': [1, 5, 9], 'mpg': [30, 20, 10]})",
            "heavy = cars[cars['w'] > 2]",
            "cars['l100'] = 235 / cars['mpg']",
            "n = len(heavy)",
        ],
    )
    assert steps[3].meta["stale_reads"] == {"heavy": ["cars"]}
    assert [d.decision for d in decide([steps[3]], steps, ws, "How many heavy cars?")] == ["unchanged"]


def _report_task(report: str) -> tuple[DictWorkspace, dict[int, WorkerStep]]:
    """Turn 2 keeps a dict of figures per season, turn 3 redefines the data, turn 4 reports."""
    ws = DictWorkspace()
    ws.run("import json")
    steps = _run(
        ws,
        [
            "temps = {'summer': [20, 24], 'winter': [2, 4]}",
            "by_season = {k: sum(v) / len(v) for k, v in temps.items()}",
            "temps['summer'] = [30, 34]",
            report,
        ],
    )
    return ws, steps


def test_a_stale_value_the_answer_does_not_depend_on_is_no_finding() -> None:
    """The report recomputes the one entry it reports; the stale rest of the dict changes nothing."""
    ws, steps = _report_task(
        "summary = dict(by_season)\nsummary['summer'] = sum(temps['summer']) / 2\n"
        "result = {'summer': summary['summer']}\nprint(json.dumps(result))"
    )
    decisions = decide([steps[3]], steps, ws, "Report the summer mean under the current definition.")
    assert [(d.name, d.decision) for d in decisions] == [("by_season", "unchanged")]
    assert "reported answer comes out the same" in decisions[0].evidence


def test_a_stale_value_the_answer_is_printed_from_is_a_finding() -> None:
    ws, steps = _report_task("result = {'summer': by_season['summer']}\nprint(json.dumps(result))")
    decisions = decide([steps[3]], steps, ws, "Report the summer mean under the current definition.")
    assert [(d.name, d.decision) for d in decisions] == [("by_season", "finding")]


def test_every_recorded_stale_read_gets_a_decision() -> None:
    ws, steps = _revision_task()
    steps.update(_run(ws, ["wx['wet'] = wx['p'] > 0", "again = wet_days + 0"], start=4))
    # turn 5 restored the definition `wet_days` was made with: its replay comes out the same
    decisions = decide([steps[5]], steps, ws, "Report the count.")
    assert [(d.name, d.decision) for d in decisions] == [("wet_days", "unchanged")]
    assert decide([steps[5]], steps, ws, "Report the count.", skip={"wet_days"})[0].decision == "superseded"


@pytest.mark.parametrize(("new_side", "decision"), [(True, "intended"), (False, "finding")])
def test_a_comparison_whose_new_side_an_earlier_turn_made_from_the_revision(
    new_side: bool, decision: str
) -> None:
    """Turn 3 revises `wet` and counts under it; turn 4 asks for that count minus turn 2's. The new
    side is a value made from the revised input (by turn 3), so turn 2's count is read on purpose.
    Without the new side (turn 3 made nothing from the revision), the same words are no evidence."""
    revise = "wx['wet'] = wx['p'] >= 1.0" + ("\nnow_days = int(wx['wet'].sum())" if new_side else "")
    report = "result = {'gap': now_days - wet_days}" if new_side else "result = {'gap': 3 - wet_days}"
    ws, steps = _wet_days(revise, report)
    decisions = decide([steps[3]], steps, ws, "The new wet-day count minus the one of turn 2.")
    assert [(d.name, d.decision) for d in decisions] == [("wet_days", decision)]


def test_a_value_made_before_the_revision_is_no_new_side() -> None:
    """The turn subtracts two values both made before `wet` was revised: neither is the new side
    of a comparison, so the words naming turn 2 are no evidence and the stale read is a finding."""
    ws, steps = _wet_days(
        "other_days = int((~wx['wet']).sum())",
        "wx['wet'] = wx['p'] >= 1.0",
        "result = {'gap': other_days - wet_days}",
    )
    decisions = decide([steps[4]], steps, ws, "The dry-day count minus the one of turn 2.")
    assert ("wet_days", "finding") in [(d.name, d.decision) for d in decisions]
