"""The LLM requirement extractor against the scripted OpenAI-compatible server: valid requirements
are kept, invalid ones are refused with the schema's message, and the deterministic extraction is
never lost (not even when the endpoint fails)."""

from __future__ import annotations

import json

from stateguard.llm import EndpointConfig, LLMClient
from stateguard.verification.llm_extract import LLMExtractor
from stateguard.verification.requirements import Kind
from tests.support.scripted_server import Reply, ScriptedServer, Status

QUESTION = "Among the toys orders, what is the average price? Report `avg_price`."


def client(server: ScriptedServer) -> LLMClient:
    return LLMClient(
        EndpointConfig(
            role="manager", base_url=server.base_url, model="scripted", timeout_s=5.0, max_retries=0
        )
    )


def test_valid_requirements_are_kept_and_invalid_ones_refused() -> None:
    answer = [
        {"kind": "scope", "text": "Among the toys orders", "values": ["toys"], "columns": ["category"]},
        {"kind": "comparison", "text": "above", "subject": ["price"]},  # no op / value: refused
        {"kind": "teleport", "text": "x"},  # unknown kind: refused
    ]
    with ScriptedServer([Reply(json.dumps(answer))]) as server:
        extractor = LLMExtractor(client(server))
        reqs = extractor(QUESTION)
        prompt = server.requests[0]["messages"][0]["content"]
    assert QUESTION in prompt
    kinds = {r.kind for r in reqs}
    assert Kind.SCOPE in kinds and Kind.AGGREGATION in kinds and Kind.OUTPUT in kinds  # model + deterministic
    assert [r.values for r in reqs if r.kind is Kind.SCOPE] == [["toys"]]
    assert len(extractor.rejected) == 2 and "needs op, value" in extractor.rejected[0]


def test_endpoint_failure_keeps_the_deterministic_requirements() -> None:
    with ScriptedServer([Status(500, "down")]) as server:
        extractor = LLMExtractor(client(server))
        reqs = extractor(QUESTION)
    assert {r.kind for r in reqs} == {Kind.AGGREGATION, Kind.OUTPUT}
    assert extractor.rejected and "model call failed" in extractor.rejected[0]


def test_prose_is_not_a_requirement_list() -> None:
    with ScriptedServer([Reply("I think the question wants the mean.")]) as server:
        extractor = LLMExtractor(client(server), merge_deterministic=False)
        assert extractor(QUESTION) == []
    assert "not a JSON array" in extractor.rejected[0]
