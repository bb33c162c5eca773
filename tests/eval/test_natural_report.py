"""The natural-mistake report over a small saved run (issue 30).

The run is a real `eval.runner` run of the six-turn demo task with the scripted worker's
declared mistakes (precision at turn 2, exec_error at turn 3, stale at turn 5), so the classes
have known answers; the report reads only the run folder (and the expected answers).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.metrics.natural import (
    NaturalReport,
    TurnMistake,
    classify,
    hint_responses,
    main,
    natural_mistake_report,
    render_natural,
)
from eval.runner import run
from stateguard.artifacts.events import WorkerStepData
from tests.eval.test_faults_and_detection import DEMO, FAULTS, _cfg, _layout


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("natural")
    run(
        _cfg(
            _layout(root / "ds", FAULTS),
            root / "run",
            "bench.variants=[clean,precision-t2,exec_error-t3,stale-t5]",
        )
    )
    return root / "run"


def _expected() -> dict[str, dict[int, object]]:
    answers = {t["turn_id"]: t["answer"] for t in json.loads((DEMO / "task.json").read_text())}
    base = "demo__sales__task1"
    return {f"{base}~{v}": answers for v in ("precision-t2", "exec_error-t3", "stale-t5")} | {base: answers}


def test_report_classifies_the_baselines_wrong_turns(saved_run: Path) -> None:
    report = natural_mistake_report(saved_run, _expected(), resamples=200)
    kinds = {(m.task_id.split("~")[-1], m.turn): m.kind for m in report.mistakes}
    assert kinds[("precision-t2", 2)] == "format_precision"
    assert kinds[("stale-t5", 5)] == "stale"
    assert kinds[("exec_error-t3", 3)] in {"exec_error", "missing_answer"}
    assert report.right_turns + len(report.mistakes) == 4 * 6
    flagged = {(m.task_id.split("~")[-1], m.turn) for m in report.mistakes if m.flagged}
    assert ("stale-t5", 5) in flagged  # the rules manager repairs the stale turn
    assert report.false_repairs == 0
    arms = {a.arm: a for a in report.arms}
    assert set(arms) == {"baseline", "stateguard"} and arms["baseline"].turns == 24
    assert (
        arms["stateguard"].accuracy is not None and arms["stateguard"].accuracy >= arms["baseline"].accuracy
    )
    low, high = arms["baseline"].accuracy_ci or (None, None)
    assert low is not None and high is not None and low <= arms["baseline"].accuracy <= high
    assert arms["baseline"].worker_model_s == 0.0  # the scripted worker calls no model
    text = render_natural(report)
    assert "format_precision" in text and "false repairs on turns the baseline got right: 0" in text


def test_without_expected_answers_a_near_miss_is_a_wrong_value(saved_run: Path) -> None:
    report = natural_mistake_report(saved_run, resamples=50)
    kinds = {(m.task_id.split("~")[-1], m.turn): m.kind for m in report.mistakes}
    assert kinds[("precision-t2", 2)] == "wrong_value"


@pytest.mark.parametrize(
    ("answer", "expected", "steps", "kind"),
    [
        (None, {"x": 1}, [], "missing_answer"),
        (
            None,
            {"x": 1},
            [WorkerStepData(index=0, action="x = y", success=False, error="NameError: y")],
            "exec_error",
        ),
        ({"x": 1.004}, {"x": 1.0}, [WorkerStepData(index=0, action="x = 1.004")], "format_precision"),
        ({"x": 2}, {"x": 1}, [WorkerStepData(index=0, action="x = 2")], "wrong_value"),
        # issue 30: the 1.5B model answered the right values as a sentence, not as fields
        (
            "Number of flowers: 150\nSpecies: ['setosa', 'versicolor', 'virginica']",
            {"answer_type": "overview", "n_flowers": 150, "species": ["setosa", "versicolor", "virginica"]},
            [WorkerStepData(index=0, action="print(1)")],
            "format_precision",
        ),
        (
            "Number of flowers: 149",
            {"n_flowers": 150, "species": ["setosa"]},
            [WorkerStepData(index=0, action="x")],
            "wrong_value",
        ),
        (
            {"x": 2},
            {"x": 1},
            [WorkerStepData(index=0, action="x = a", meta={"stale_reads": {"a": ["b"]}})],
            "stale",
        ),
    ],
)
def test_classify_table(answer: object, expected: object, steps: list[WorkerStepData], kind: str) -> None:
    assert classify(answer, expected, steps)[0] == kind


def test_cli_reads_the_expected_answers_from_the_runs_config(
    saved_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "natural.json"
    assert main([str(saved_run), "--json", str(out), "--resamples", "50"]) == 0
    assert "format_precision" in capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert any(m["kind"] == "format_precision" and m["turn"] == 2 for m in saved["mistakes"])


def _hint_trace(path: Path, answers: list[tuple[int, str]], repair_after: set[int]) -> Path:
    """A manager-arm trace: each (turn, reply) is a final reply; a REPAIR follows the replies whose
    index is in `repair_after` (the model then answers that turn again)."""
    from stateguard.trace import Trace

    trace = Trace(path)
    started: set[int] = set()
    hint = {
        "analytical_evidence": "[check] step 1",
        "error_hint": {"error_variables": ["x"], "faulty_reasoning": "x is stale"},
    }
    for i, (turn, reply) in enumerate(answers):
        if turn not in started:
            started.add(turn)
            trace.emit("turn_start", turn_id=turn, question=f"q{turn}")
        trace.emit(
            "worker_step", index=i, turn=turn, action="", output=reply, meta={"final": True, "turn_end": True}
        )
        if i in repair_after:
            trace.emit("action", activation=i, name="REPAIR", arguments=hint, accepted=True)
    trace.close()
    return path


def test_hint_responses_count_fixes_and_breaks(tmp_path: Path) -> None:
    """Issue 30 item 3: a hint on a wrong answer that ends right is a fix; on a right one that ends
    wrong, a break; a second hint on the same turn is not a second sample."""
    replies = [
        (1, '<answer>{"x": 5}</answer>'),  # wrong, then hinted
        (1, '<answer>{"x": 1}</answer>'),  # fixed
        (2, "<answer>{'y': 2}</answer>"),  # right (a Python literal), then hinted
        (2, '<answer>{"y": 3}</answer>'),  # broken, hinted again
        (2, '<answer>{"y": 4}</answer>'),
        (3, '<answer>{"z": 9}</answer>'),  # right, never hinted
    ]
    path = _hint_trace(tmp_path / "trace.jsonl", replies, repair_after={0, 2, 3})
    expected = {1: {"x": 1}, 2: {"y": 2}, 3: {"z": 9}}
    final = {1: {"x": 1}, 2: {"y": 4}, 3: {"z": 9}}
    hints = hint_responses(path, "t", final, expected)
    assert [(h.turn, h.before, h.before_right, h.after_right) for h in hints] == [
        (1, {"x": 5}, False, True),
        (2, {"y": 2}, True, False),
    ]
    assert hints[0].reason == "x is stale"
    report = NaturalReport(manager_arm="stateguard", hints=hints)
    assert report.hint_rates() == {"fix": (1, 1), "break": (1, 1)}
    text = render_natural(report)
    assert "ran no code at all" not in text
    unworked = TurnMistake(task_id="t", turn=4, kind="missing_answer", evidence="no answer; no code ran")
    assert "1 ran no code at all" in render_natural(report.model_copy(update={"mistakes": [unworked]}))
    assert "P(fix | hint on a wrong answer): 1/1" in text and "P(break | hint on a right answer): 1/1" in text
    assert hint_responses(tmp_path / "absent.jsonl", "t", final, expected) == []


def test_a_labelled_answer_before_a_hint_is_judged_as_the_worker_reads_it(tmp_path: Path) -> None:
    """Old: the answer before a hint was read as JSON only, so a right 'n: 150' text answer counted
    as wrong, and a hint that broke it counted as a fix attempt instead of a break."""
    replies = [
        (1, "<answer>\nNumber of flowers: 150\n</answer>"),
        (1, "<answer>\nNumber of flowers: 149\n</answer>"),
    ]
    path = _hint_trace(tmp_path / "trace.jsonl", replies, repair_after={0})
    hints = hint_responses(path, "t", {1: {"Number of flowers": 149}}, {1: {"n_flowers": 150}})
    assert [(h.before, h.before_right, h.after_right) for h in hints] == [
        ({"Number of flowers": 150}, True, False)
    ]


def test_time_per_worked_turn_leaves_out_turns_that_ran_nothing() -> None:
    from eval.metrics.natural import ArmNatural

    arm = ArmNatural(
        arm="baseline",
        tasks=1,
        turns=4,
        accuracy=0.0,
        worker_model_s=27.0,
        manager_model_s=3.0,
        degraded_turns=1,
    )
    assert (arm.model_s_per_turn, arm.model_s_per_worked_turn) == (7.5, 10.0)
    assert arm.model_copy(update={"degraded_turns": 4}).model_s_per_worked_turn is None


def test_answer_from_output_effect_on_a_saved_run(saved_run: Path) -> None:
    # the demo's reference cells print the answer object last, so with the scripted worker the
    # rule fires on the turns that printed it
    from eval.metrics.natural_output import OutputEffect, OutputTurn, output_answer_effect, render_effect

    effect = output_answer_effect([saved_run], _expected())
    counts = effect.counts()
    assert counts["taken"] == 0  # the scripted worker has no such option
    # baseline only; the precision fault is applied to the scripted worker's answer after its
    # print, so that print was right and the recorded answer wrong
    changed = [(t.task_id, t.turn) for t in effect.turns if t.arm == "baseline" and t.right != t.recorded]
    assert changed == [("demo__sales__task1~precision-t2", 2)]
    assert counts["would_fire"] >= 20 and counts["unchanged"] == counts["would_fire"] - 1
    assert counts["right_to_wrong"] == 0 and counts["wrong_to_right"] == 1
    assert "right -> wrong 0" in render_effect(effect)
    # the two changes it counts, by hand
    hand = OutputEffect(
        runs=["r"],
        turns=[
            OutputTurn(run="r", task_id="t", arm="baseline", turn=1, taken=False, right=False, recorded=True),
            OutputTurn(run="r", task_id="t", arm="baseline", turn=2, taken=False, right=True, recorded=False),
            OutputTurn(run="r", task_id="t", arm="baseline", turn=3, taken=True, right=True, recorded=True),
        ],
    )
    assert hand.counts() == {
        "taken": 1,
        "taken_right": 1,
        "would_fire": 2,
        "right_to_wrong": 1,
        "wrong_to_right": 1,
        "unchanged": 0,
    }
