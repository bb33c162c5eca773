"""Turn-level judges for LongDS: an LLM judge on any OpenAI-compatible endpoint, and an offline one.

LongDS scores each turn 0/1 against the ground-truth fields (paper C.3). The criteria, applied
by both judges:
* only the fields the question asks for are judged; extra output is ignored;
* numbers must equal the truth up to insignificant trailing zeros, unless the truth states a
  tolerance;
* when the question asks for an order, the order must match, but items tied on the ranking
  value may come in any order;
* labels (`answer_type`, field names), case, punctuation, spacing, currency symbols and
  wording around the values are ignored. All requested fields must be right.

`LLMJudge` asks a model (the prompt below is ours) for `<score>1</score>` or `<score>0</score>`.
A reply without exactly one such score is asked again, up to `retries` more times; after
that, or when the endpoint fails, the turn is **excluded** (`correct=None`), not counted as
wrong. DCR and accuracy skip excluded turns. `FieldJudge` is the deterministic offline judge
(`eval.scorers.fields`); it reads the last JSON object of a text answer.

    judge = LLMJudge(LLMClient(EndpointConfig.from_env("judge", temperature=0.0)))
    verdicts = judge_turns(judge, task.turns, answers)      # TaskJudgement: .scores, .accuracy
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.longds.prompts import turn_message
from eval.scorers.fields import judge_fields
from stateguard.answers import last_json
from stateguard.llm.client import LLMClient, LLMError
from stateguard.task import Turn

JUDGE_VERSION = "longds-llm-judge/1"
FIELDS_VERSION = "longds-field-judge/1"

JUDGE_SYSTEM = """You grade one answer from a data-analysis agent against the ground truth of a multi-turn benchmark.

How to grade:
1. Read the question and work out which ground-truth fields it actually asks for. Grade only those. Ground-truth fields the question does not ask for, and anything extra the agent reports, do not count.
2. Numbers must equal the ground truth exactly; only insignificant trailing zeros may differ (75.85 and 75.850 are equal, 75.85 and 75.86 are not, and a value rounded to different precision is wrong). Use a tolerance only when the ground truth itself states one.
3. When the question asks for a ranking or another ordered result, the order must match. Items that are tied on the value being ranked may appear in any order among themselves.
4. Ignore labels such as `answer_type` and the exact field names, as well as capitalization, punctuation, spacing, currency symbols and explanatory wording, as long as each required value is clearly stated.
5. The answer is correct only when every required field is present and correct.

Write a short justification, then end with exactly one line: <score>1</score> if the answer is correct, or <score>0</score> if it is not."""

_SCORE = re.compile(r"<score>\s*([01])\s*</score>")


class JudgeVerdict(BaseModel):
    """The judgement of one turn; `correct` is None when the turn is excluded (judge failed)."""

    model_config = ConfigDict(frozen=True)

    turn_id: int
    correct: bool | None
    judge: Literal["llm", "fields"]
    attempts: int = Field(ge=0, description="Judge calls made (0: decided without a call).")
    reasoning: str = ""
    error: str | None = Field(default=None, description="Why the turn was excluded, when it was.")

    @property
    def excluded(self) -> bool:
        return self.correct is None


class TurnJudge(Protocol):
    version: str

    def judge(self, turn: Turn, prediction: Any) -> JudgeVerdict: ...


def parse_score(text: str) -> int | None:
    """The 0/1 score of a judge reply; None unless it holds exactly one distinct <score> value."""
    found = set(_SCORE.findall(text))
    return int(found.pop()) if len(found) == 1 else None


def _as_text(prediction: Any) -> str:
    if isinstance(prediction, str):
        return prediction.strip()
    return json.dumps(prediction, ensure_ascii=False, default=str)


def judge_messages(turn: Turn, prediction: Any) -> list[dict[str, str]]:
    """System criteria plus one user message holding question, ground truth and the agent's answer."""
    truth = json.dumps(turn.answer, ensure_ascii=False, indent=1, default=str)
    user = (
        f"Question (with its context):\n{turn_message(turn.agent_view()).strip()}\n\n"
        f"Ground truth (JSON):\n{truth}\n\n"
        f"Agent's answer:\n{_as_text(prediction)}"
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


class LLMJudge:
    """The LLM judge; `retries` extra calls are made for replies without a readable score."""

    version = JUDGE_VERSION

    def __init__(self, client: LLMClient, *, retries: int = 3):
        if retries < 0:
            raise ValueError(f"LLMJudge retries must be >= 0, got {retries}")
        self.client = client
        self.retries = retries

    def judge(self, turn: Turn, prediction: Any) -> JudgeVerdict:
        if prediction is None or (isinstance(prediction, str) and not prediction.strip()):
            return JudgeVerdict(
                turn_id=turn.turn_id,
                correct=False,
                judge="llm",
                attempts=0,
                reasoning="the agent gave no answer",
            )
        messages = judge_messages(turn, prediction)
        last_reply = ""
        for attempt in range(1, self.retries + 2):
            try:
                reply = self.client.chat(messages)
            except LLMError as exc:  # the client already retried transport errors
                return JudgeVerdict(
                    turn_id=turn.turn_id,
                    correct=None,
                    judge="llm",
                    attempts=attempt,
                    error=f"judge endpoint failed: {exc}",
                )
            last_reply = reply.content
            score = parse_score(last_reply)
            if score is not None:
                reasoning = _SCORE.sub("", last_reply).strip()
                return JudgeVerdict(
                    turn_id=turn.turn_id,
                    correct=bool(score),
                    judge="llm",
                    attempts=attempt,
                    reasoning=reasoning,
                )
        return JudgeVerdict(
            turn_id=turn.turn_id,
            correct=None,
            judge="llm",
            attempts=self.retries + 1,
            error=f"no single <score>0|1</score> in {self.retries + 1} replies; last: {last_reply[-200:]!r}",
        )


class FieldJudge:
    """Deterministic offline judge: the answer's JSON fields against the truth (never excludes)."""

    version = FIELDS_VERSION

    def judge(self, turn: Turn, prediction: Any) -> JudgeVerdict:
        got = last_json(prediction) if isinstance(prediction, str) else prediction
        ok = judge_fields(turn.answer, got)
        reasoning = "no JSON answer found" if got is None else ("fields match" if ok else "a field differs")
        return JudgeVerdict(turn_id=turn.turn_id, correct=ok, judge="fields", attempts=0, reasoning=reasoning)


class TaskJudgement(BaseModel):
    """All verdicts of one task, and what DCR and accuracy read from them."""

    model_config = ConfigDict(frozen=True)

    judge_version: str
    verdicts: list[JudgeVerdict]

    @property
    def scores(self) -> dict[int, int]:
        """turn_id -> 1/0 for judged turns; excluded turns are absent (paper C.4)."""
        return {v.turn_id: int(v.correct) for v in self.verdicts if v.correct is not None}

    @property
    def excluded(self) -> list[int]:
        return [v.turn_id for v in self.verdicts if v.correct is None]

    @property
    def accuracy(self) -> float | None:
        scores = self.scores
        return sum(scores.values()) / len(scores) if scores else None


def judge_turns(judge: TurnJudge, turns: Iterable[Turn], predictions: Mapping[int, Any]) -> TaskJudgement:
    """Judge every turn; a turn missing from `predictions` has no answer and is wrong."""
    verdicts = [judge.judge(turn, predictions.get(turn.turn_id)) for turn in turns]
    return TaskJudgement(judge_version=judge.version, verdicts=verdicts)
