"""The judge path against a real HTTP server (tests/support/scripted_server.py), and the
conservative path without one: what goes to the judge, what comes back, and what is counted."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stateguard.llm.client import LLMClient
from stateguard.llm.endpoints import EndpointConfig
from tests.support.scripted_server import Reply, ScriptedServer, Status
from tests.training.rewards.reward_world import FAULTY, Sales, labels
from training.rewards import Adjudicator, JudgeCase, LLMJudge
from training.rewards.judge import parse_verdict, render_case

UNSUPPORTED = "customers clearly prefer large orders"


def verdict(word: str) -> Reply:
    return Reply(content=json.dumps({"verdict": word, "reason": "scripted"}))


@pytest.fixture
def judged() -> Iterator[Callable[..., tuple[LLMJudge, ScriptedServer]]]:
    servers: list[ScriptedServer] = []

    def start(*script: Any) -> tuple[LLMJudge, ScriptedServer]:
        server = ScriptedServer(list(script), model="judge-model").start()
        servers.append(server)
        endpoint = EndpointConfig(
            role="judge",
            base_url=server.base_url,
            model="judge-model",
            timeout_s=5.0,
            max_retries=0,
            backoff_s=0.0,
            backoff_max_s=0.0,
            temperature=0.0,
        )
        return LLMJudge(LLMClient(endpoint), max_evidence_chars=2000), server

    yield start
    for server in servers:
        server.close()


def _unsupported_conclusion(sales: Callable[..., Sales]) -> Sales:
    run = sales()
    run.update_share(extra_conclusions=[UNSUPPORTED])
    run.settle()
    return run


@pytest.mark.parametrize(
    ("reply", "options", "parsed"),
    [
        ('{"verdict": "grounded", "reason": "x"}', ("grounded", "ungrounded"), "grounded"),
        (
            '<think>maybe ungrounded</think>{"verdict": "Partial"}',
            ("correct", "partial", "misleading"),
            "partial",
        ),
        ('{"verdict": "perhaps"}', ("grounded", "ungrounded"), None),
        ("consistent", ("inconsistent", "consistent"), "consistent"),
        ("grounded or ungrounded, hard to say", ("grounded", "ungrounded"), None),
        ("I cannot tell", ("grounded", "ungrounded"), None),
    ],
)
def test_parse_verdict(reply: str, options: tuple[str, ...], parsed: str | None) -> None:
    assert parse_verdict(reply, options) == parsed


def test_evidence_is_cut_to_the_budget() -> None:
    case = JudgeCase(kind="support", subject="x = 1", evidence=["a" * 150, "b" * 150, "c" * 150])
    user = render_case(case, max_evidence_chars=200)[1]["content"]
    assert "a" * 150 in user and "b" * 50 + " [...]" in user and "ccc" not in user
    assert "[further evidence omitted]" in user and "grounded, ungrounded" in user


def test_support_judge_over_http(sales: Callable[..., Sales], judged: Callable[..., Any]) -> None:
    judge, server = judged(verdict("grounded"))
    run = _unsupported_conclusion(sales)
    result = run.score(labels(False), judge=judge)
    item = next(i for i in result.support_items if i.key == UNSUPPORTED)
    assert (item.grounded, item.decided_by) == (True, "judge")
    assert result.judged == {"support": 1} and result.conservative == {} and result.judge_failures == 0
    assert result.support.value == 1.0
    [request] = server.requests
    user = request["messages"][-1]["content"]
    assert UNSUPPORTED in user and '"share": 0.7699' in user and request["model"] == "judge-model"


def test_repair_quality_judge_over_http(sales: Callable[..., Sales], judged: Callable[..., Any]) -> None:
    judge, server = judged(verdict("correct"))
    run = sales(threshold=FAULTY)
    run.repair(["big"])  # the continuation ends before the worker's retry: evidence cannot tell
    result = run.score(labels(True), judge=judge)
    outcome = result.decisions[0]
    assert (outcome.quality, outcome.quality_by, outcome.reward) == (1.0, "judge", 1.0)
    assert result.judged == {"repair_quality": 1}
    assert "affects ['big']" in server.requests[0]["messages"][-1]["content"]


def test_inconsistency_judge_labels_an_unlabelled_point(
    sales: Callable[..., Sales], judged: Callable[..., Any]
) -> None:
    judge, _ = judged(verdict("consistent"))
    run = sales(threshold=FAULTY)
    run.repair(["big"])
    run.retry()
    run.settle()
    result = run.score(labels(True), judge=judge)  # only the first decision point is labelled
    assert [(d.inconsistent, d.inconsistent_by, d.reward) for d in result.decisions] == [
        (True, "label", 1.0),
        (False, "judge", 1.0),
    ]
    assert result.intervention.count == 2 and result.judged == {"inconsistency": 1}


@pytest.mark.parametrize(
    "reply", [Status(500, "judge crashed"), Reply(content="I cannot tell")], ids=["http_500", "no_verdict"]
)
def test_a_failed_judge_falls_back_to_the_conservative_verdict(
    sales: Callable[..., Sales], judged: Callable[..., Any], reply: Any
) -> None:
    judge, server = judged(reply)
    result = _unsupported_conclusion(sales).score(labels(False), judge=judge)
    item = next(i for i in result.support_items if i.key == UNSUPPORTED)
    assert (item.grounded, item.decided_by) == (False, "conservative")
    assert result.judge_failures == 1 and result.conservative == {"support": 1} and result.judged == {}
    assert len(server.requests) == 1


def test_without_a_judge_undecidable_cases_are_conservative_and_counted(sales: Callable[..., Sales]) -> None:
    run = sales(threshold=FAULTY)
    run.repair(["big"])
    run.retry()
    run.update_share(extra_conclusions=[UNSUPPORTED])
    run.settle()
    result = run.score(labels(True))  # the second decision point has no label
    assert result.conservative == {"support": 1, "inconsistency": 1}
    assert result.judge_failures == 0 and result.judged == {}
    assert result.support.value == pytest.approx(4 / 5) and result.intervention.count == 1
    metrics = result.metrics()
    assert (metrics["conservative_support"], metrics["conservative_inconsistency"]) == (1.0, 1.0)


def test_the_same_case_is_asked_once(judged: Callable[..., Any]) -> None:
    judge, server = judged(verdict("ungrounded"))
    ledger = Adjudicator(judge)
    case = JudgeCase(kind="support", subject="S2 concludes: x", evidence=["out"])
    assert ledger.decide(case, conservative="ungrounded") == ("ungrounded", "judge")
    assert ledger.decide(case, conservative="ungrounded") == ("ungrounded", "judge")
    assert len(server.requests) == 1 and ledger.judged["support"] == 2
