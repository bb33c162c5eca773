"""The LongDS judges: the LLM judge over real HTTP (scripted server), and the offline field judge."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eval.benchmarks.longds import JUDGE_VERSION, FieldJudge, LLMJudge, judge_turns
from eval.benchmarks.longds.judge import JUDGE_SYSTEM, parse_score
from stateguard.llm import EndpointConfig, LLMClient
from stateguard.task import Turn
from tests.support.scripted_server import ScriptedServer, Status

TURN = Turn(
    turn_id=3,
    context="Fill the missing exam scores.",
    question="Report the value used to fill the gaps and how many rows were filled.",
    answer={"answer_type": "fill_report", "mean_fill_value": 41.2706, "rows_filled": 3},
)


def client(server: ScriptedServer) -> LLMClient:
    cfg = EndpointConfig(
        role="judge",
        base_url=server.base_url,
        model="judge-model",
        timeout_s=5.0,
        max_retries=0,
        backoff_s=0.0,
        backoff_max_s=0.0,
        temperature=0.0,
    )
    return LLMClient(cfg)


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("fields match\n<score>1</score>", 1),
        ("<score> 0 </score>", 0),
        ("<score>1</score> ... <score>1</score>", 1),
        ("<score>1</score> then <score>0</score>", None),  # contradictory
        ("Score: 1", None),
        ("<score>2</score>", None),
        ("", None),
    ],
)
def test_parse_score(text: str, score: int | None) -> None:
    assert parse_score(text) == score


@pytest.mark.parametrize(
    ("reply", "correct"),
    [("Both values agree.\n<score>1</score>", True), ("The mean differs.\n<score>0</score>", False)],
)
def test_llm_judge_reads_the_verdict(reply: str, correct: bool) -> None:
    with ScriptedServer([reply]) as server:
        verdict = LLMJudge(client(server)).judge(TURN, "Fill value 41.2706, 3 rows filled.")
        request = server.requests[0]
    assert (verdict.correct, verdict.attempts, verdict.judge) == (correct, 1, "llm")
    assert verdict.reasoning == reply.split("\n")[0]
    system, user = request["messages"]
    assert system == {"role": "system", "content": JUDGE_SYSTEM}
    assert "Fill the missing exam scores.\nQuestion: Report the value" in user["content"]
    assert '"mean_fill_value": 41.2706' in user["content"]
    assert user["content"].endswith("Agent's answer:\nFill value 41.2706, 3 rows filled.")
    assert request["model"] == "judge-model" and request["temperature"] == 0.0


def test_unreadable_verdicts_are_retried_then_succeed() -> None:
    with ScriptedServer(["I am not sure.", "Score: 1", "<score>1</score>"]) as server:
        verdict = LLMJudge(client(server)).judge(TURN, {"mean_fill_value": 41.2706, "rows_filled": 3})
        assert len(server.requests) == 3 and server.remaining == 0
        assert (
            '"rows_filled": 3}' in server.requests[0]["messages"][1]["content"]
        )  # dict answers sent as JSON
    assert (verdict.correct, verdict.attempts) == (True, 3)


def test_unreadable_verdicts_three_retries_then_the_turn_is_excluded() -> None:
    script = [
        "maybe",
        "<score>yes</score>",
        "<score>1</score><score>0</score>",
        "no idea",
        "<score>1</score>",
    ]
    with ScriptedServer(script) as server:
        verdict = LLMJudge(client(server)).judge(TURN, "41.2706 and 3")
        assert len(server.requests) == 4 and server.remaining == 1  # 1 call + 3 retries, then stop
    assert verdict.correct is None and verdict.excluded
    assert verdict.attempts == 4
    assert "no single <score>0|1</score> in 4 replies" in (verdict.error or "")


def test_endpoint_failure_excludes_without_counting_wrong() -> None:
    with ScriptedServer([Status(401, "bad key")]) as server:
        verdict = LLMJudge(client(server)).judge(TURN, "41.2706")
    assert verdict.correct is None and verdict.attempts == 1
    assert "judge endpoint failed" in (verdict.error or "") and "401" in (verdict.error or "")


def test_no_answer_is_wrong_without_a_call() -> None:
    with ScriptedServer([]) as server:
        judge = LLMJudge(client(server))
        assert judge.judge(TURN, None).correct is False
        assert judge.judge(TURN, "   ").correct is False
        assert server.requests == []
    with pytest.raises(ValueError, match="retries must be >= 0"):
        LLMJudge(judge.client, retries=-1)


def test_task_judgement_skips_excluded_turns() -> None:
    turns = [TURN.model_copy(update={"turn_id": i}) for i in (1, 2, 3, 4)]
    script = ["<score>1</score>", "?", "?", "?", "?", "<score>0</score>"]
    with ScriptedServer(script) as server:
        result = judge_turns(LLMJudge(client(server)), turns, {1: "a", 2: "b", 3: "c"})
        assert len(server.requests) == 6  # turn 4 has no answer: no call
    assert result.judge_version == JUDGE_VERSION
    assert result.scores == {1: 1, 3: 0, 4: 0}
    assert result.excluded == [2]
    assert result.accuracy == pytest.approx(1 / 3)


# ----------------------------------------------------------------------------- offline judge


@pytest.mark.parametrize(
    ("prediction", "correct", "reasoning"),
    [
        ({"mean_fill_value": 41.27060, "rows_filled": 3}, True, "fields match"),
        ('Result:\n{"Mean Fill Value": "41.2706", "rows_filled": "3"}', True, "fields match"),
        ({"mean_fill_value": 41.271, "rows_filled": 3}, False, "a field differs"),
        ("The fill value is 41.2706 and 3 rows were filled.", False, "no JSON answer found"),
        (None, False, "no JSON answer found"),
    ],
)
def test_field_judge(prediction: Any, correct: bool, reasoning: str) -> None:
    verdict = FieldJudge().judge(TURN, prediction)
    assert (verdict.correct, verdict.judge, verdict.attempts, verdict.reasoning) == (
        correct,
        "fields",
        0,
        reasoning,
    )


def test_field_judge_over_a_task() -> None:
    turns = [TURN, TURN.model_copy(update={"turn_id": 4, "answer": {"value": 0.7837}})]
    result = judge_turns(FieldJudge(), turns, {3: json.dumps(TURN.answer), 4: {"value": 0.78}})
    assert result.scores == {3: 1, 4: 0} and result.excluded == [] and result.accuracy == 0.5
