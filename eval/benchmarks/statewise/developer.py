"""The simulated developer: answers targeted clarification questions from a case's hidden truth.

It answers about the scope the question names (the task's scope), using the truth of the most
specific scope that covers it: "confirm" when the recorded value is the truth, "undecided" when
the truth is an open decision, otherwise "correct" with the true value. It never volunteers
anything it was not asked, and it counts the questions (the clarification burden).

    dev = SimulatedDeveloper(case.truth)
"""

from __future__ import annotations

from typing import Any

from statewise.clarify import Answer, Question
from statewise.records import GLOBAL_SCOPE

UNDECIDED = "undecided"


class SimulatedDeveloper:
    def __init__(self, truth: dict[str, Any]):
        self.truth = truth
        self.questions = 0
        self.asked: list[str] = []

    def lookup(self, key: str, scope: str) -> tuple[bool, Any]:
        parts = scope.split("/") if scope != GLOBAL_SCOPE else []
        for i in range(len(parts), 0, -1):
            entry = f"{key}@{'/'.join(parts[:i])}"
            if entry in self.truth:
                return True, self.truth[entry]
        return (True, self.truth[f"{key}@*"]) if f"{key}@*" in self.truth else (False, None)

    def ask(self, question: Question) -> Answer:
        self.questions += 1
        self.asked.append(f"{question.key}@{question.task_scope}")
        known, value = self.lookup(question.key, question.task_scope)
        if not known:
            return Answer(kind="unknown", text="I don't know.")
        if value == UNDECIDED:
            return Answer(kind="undecided", value=UNDECIDED, text="That is not decided yet; hold off.")
        if value == question.recorded_value:
            return Answer(kind="confirm", text="yes")
        return Answer(kind="correct", value=value, text=f"no: {value!r}")
