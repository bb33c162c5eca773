"""The judge for reward cases runtime evidence cannot settle (paper B.4: GPT-OSS-120B in the paper).

Three kinds of question reach it: is a state assertion supported by the evidence (Eq. 29), how good
was a repair of a labelled inconsistency (q_i, Eq. 30), and is there an inconsistency at a decision
point the pipeline did not label (g_i). Each is a `JudgeCase` with a fixed set of answers.

    judge = LLMJudge(LLMClient(EndpointConfig(role="judge", base_url=..., model="openai/gpt-oss-120b")))
    ledger = Adjudicator(judge)                   # or Adjudicator(None): every case decided conservatively
    verdict = ledger.decide(case, conservative="ungrounded")

`Adjudicator` is what the reward terms call. It asks the judge (if any) once per distinct case and
keeps the counts that the reward result reports: cases judged, and cases decided conservatively
(no judge, or the judge failed to answer with one of the options).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from stateguard.answers import last_json
from stateguard.llm.client import LLMClient, LLMError
from stateguard.llm.endpoints import EndpointConfig

CaseKind = Literal["support", "repair_quality", "inconsistency"]
How = Literal["evidence", "judge", "conservative"]

OPTIONS: dict[CaseKind, tuple[str, ...]] = {
    "support": ("grounded", "ungrounded"),
    "repair_quality": ("correct", "partial", "misleading"),
    "inconsistency": ("inconsistent", "consistent"),
}

_QUESTIONS: dict[CaseKind, str] = {
    "support": "Is the assertion below backed by the evidence: does some execution output, tool result or "
    "passed executable check show this value or fact? Reasoning or plans that nothing executed count as "
    "ungrounded, even when they sound right.",
    "repair_quality": "A known inconsistency existed and the manager asked the worker to repair it. Judge "
    "the repair: correct if it points at the real problem and the worker's retry fixes it; partial if it is "
    "appropriate but only partly effective or only partly localized; misleading if it points at the wrong "
    "variables or reasoning.",
    "inconsistency": "Does the draft state below contain an analytical inconsistency (a stale input, a wrong "
    "filter or formula, a result the evidence contradicts) that warrants a repair?",
}

_SYSTEM = (
    "You grade the runtime behaviour of a state manager that supervises a data-analysis agent. "
    "Answer from the evidence given, nothing else. Reply with one JSON object and no other text: "
    '{"verdict": <one of the allowed answers>, "reason": <one short sentence>}.'
)


class JudgeCase(BaseModel):
    """One question for the judge, with the evidence it may use."""

    model_config = ConfigDict(frozen=True)

    kind: CaseKind
    subject: str = Field(description="What is judged: the assertion, the repair, or the draft state.")
    evidence: list[str] = Field(default_factory=list, description="Execution outputs, tool results, checks.")

    @property
    def options(self) -> tuple[str, ...]:
        return OPTIONS[self.kind]

    def key(self) -> str:
        return json.dumps([self.kind, self.subject, self.evidence])


class Judge(Protocol):
    def decide(self, case: JudgeCase) -> str | None:
        """One of `case.options`, or None when no verdict could be obtained."""


def render_case(case: JudgeCase, max_evidence_chars: int) -> list[dict[str, str]]:
    """The chat messages for one case; evidence is cut to `max_evidence_chars` in total."""
    budget = max_evidence_chars
    pieces = []
    for item in case.evidence:
        if budget <= 0:
            pieces.append("[further evidence omitted]")
            break
        text = item if len(item) <= budget else item[:budget] + " [...]"
        budget -= len(text)
        pieces.append(text)
    evidence = "\n---\n".join(pieces) if pieces else "(no evidence was recorded)"
    user = (
        f"QUESTION\n{_QUESTIONS[case.kind]}\n\nALLOWED ANSWERS\n{', '.join(case.options)}\n\n"
        f"JUDGED\n{case.subject}\n\nEVIDENCE\n{evidence}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def parse_verdict(text: str, options: tuple[str, ...]) -> str | None:
    """The verdict of a judge reply: a JSON object's 'verdict', or failing that a lone option word."""
    parsed = last_json(re.sub(r"<think>.*?</think>", "", text, flags=re.S))
    if isinstance(parsed, dict) and isinstance(parsed.get("verdict"), str):
        verdict = parsed["verdict"].strip().lower()
        return verdict if verdict in options else None
    words = set(re.findall(r"[a-z_]+", text.lower()))
    found = [o for o in options if o in words]
    return found[0] if len(found) == 1 else None


class LLMJudge:
    """A judge behind any OpenAI-compatible endpoint (stateguard.llm.LLMClient)."""

    def __init__(self, client: LLMClient, *, max_evidence_chars: int = 6000):
        self.client = client
        self.max_evidence_chars = max_evidence_chars

    @classmethod
    def from_endpoint(cls, endpoint: EndpointConfig, *, max_evidence_chars: int = 6000) -> LLMJudge:
        return cls(LLMClient(endpoint), max_evidence_chars=max_evidence_chars)

    def decide(self, case: JudgeCase) -> str | None:
        try:
            result = self.client.chat(render_case(case, self.max_evidence_chars))
        except LLMError:
            return None  # the caller counts it and decides conservatively
        return parse_verdict(result.content, case.options)


class Adjudicator:
    """Asks the judge once per distinct case and counts how every undecidable case was settled."""

    def __init__(self, judge: Judge | None):
        self.judge = judge
        self.judged: Counter[str] = Counter()
        self.conservative: Counter[str] = Counter()
        self.failures = 0
        self._cache: dict[str, str | None] = {}

    def decide(self, case: JudgeCase, *, conservative: str | None) -> tuple[str | None, How]:
        """(verdict, how it was reached); `conservative` (None: leave it undecided) when no judge answers."""
        if conservative is not None and conservative not in case.options:
            raise ValueError(f"conservative verdict {conservative!r} is not one of {case.options}")
        verdict: str | None = None
        if self.judge is not None:
            key = case.key()
            if key not in self._cache:
                self._cache[key] = self.judge.decide(case)
                if self._cache[key] is None:
                    self.failures += 1
            verdict = self._cache[key]
        if verdict is None:
            self.conservative[case.kind] += 1
            return conservative, "conservative"
        self.judged[case.kind] += 1
        return verdict, "judge"
