"""Targeted clarification: one question about one developer-owned premise, and its answer.

A question names the record (key, recorded value, its scope and age), the task scope it is
needed for, and why it is in doubt; the developer confirms it, corrects it, says the matter is
undecided, or does not know. Three channels implement `Developer`:

- `CallbackDeveloper(fn)`: a person at a console or UI; `fn(question_text) -> reply text`, read
  as "yes" / "no: <value>" / "undecided" / anything else = unknown;
- `EndpointDeveloper(client)`: an OpenAI-compatible endpoint acting for the developer (JSON reply);
- the benchmark's simulated developer (`eval.benchmarks.statewise.developer`), which answers from
  the case's hidden intent.

    answer = EndpointDeveloper(LLMClient(EndpointConfig.from_env("judge"))).ask(question)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from stateguard.answers import last_json


class Question(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    task_scope: str
    record_scope: str
    recorded_value: Any
    recorded_on: str = Field(description="ISO date the value was last established.")
    signals: list[str] = Field(
        default_factory=list, description="Why it is in doubt (expired, conflict, scope...)."
    )
    conflicting: list[Any] = Field(default_factory=list, description="Newer values seen elsewhere.")
    task: str = Field(description="The task instruction the answer is needed for.")

    def text(self) -> str:
        doubt = f" It is in doubt: {', '.join(self.signals)}." if self.signals else ""
        seen = f" Newer notes mention {', '.join(map(repr, self.conflicting))}." if self.conflicting else ""
        return (
            f'For the task "{self.task}" (scope {self.task_scope}) I rely on the stored record '
            f"{self.key} = {self.recorded_value!r} (scope {self.record_scope}, set {self.recorded_on}).{doubt}{seen} "
            f"Is that still right for {self.task_scope}? Reply yes, no: <correct value>, or undecided."
        )


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: Literal["confirm", "correct", "undecided", "unknown"]
    value: Any = None
    text: str = ""


class Developer(Protocol):
    questions: int

    def ask(self, question: Question) -> Answer: ...


_NO = re.compile(r"^\s*no\b[\s:,-]*(.*)$", re.I | re.S)


def parse_reply(text: str) -> Answer:
    """'yes' -> confirm; 'no: <value>' -> correct (a JSON value if it parses, else the text); 'undecided'."""
    body = text.strip()
    low = body.lower()
    if low.startswith(("yes", "y ", "correct", "still right")) or low == "y":
        return Answer(kind="confirm", text=body)
    if "undecided" in low or "not decided" in low or "pending" in low:
        return Answer(kind="undecided", value="undecided", text=body)
    match = _NO.match(body)
    if match and match.group(1).strip():
        raw = match.group(1).strip()
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw.strip("'\"")
        return Answer(kind="correct", value=value, text=body)
    return Answer(kind="unknown", text=body)


class CallbackDeveloper:
    """A person answering through a function (console input, a chat UI)."""

    def __init__(self, reply: Callable[[str], str]):
        self.reply = reply
        self.questions = 0

    def ask(self, question: Question) -> Answer:
        self.questions += 1
        return parse_reply(self.reply(question.text()))


ENDPOINT_SYSTEM = (
    "You answer questions about a software project on behalf of its developer. Reply with one JSON object: "
    '{"answer": "confirm" | "correct" | "undecided" | "unknown", "value": <the correct value when answer is correct>}.'
)


class EndpointDeveloper:
    """An OpenAI-compatible endpoint answering for the developer (`client`: stateguard.llm.LLMClient)."""

    def __init__(self, client: Any, *, system_prompt: str = ENDPOINT_SYSTEM):
        self.client = client
        self.system_prompt = system_prompt
        self.questions = 0

    def ask(self, question: Question) -> Answer:
        self.questions += 1
        result = self.client.chat(
            [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": question.text()}]
        )
        data = last_json(result.content)
        if not isinstance(data, dict) or data.get("answer") not in (
            "confirm",
            "correct",
            "undecided",
            "unknown",
        ):
            return parse_reply(result.content)
        kind = data["answer"]
        if kind == "correct" and data.get("value") is None:
            return Answer(kind="unknown", text=result.content)
        return Answer(
            kind=kind, value="undecided" if kind == "undecided" else data.get("value"), text=result.content
        )
