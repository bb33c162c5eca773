"""Positive evidence that a turn reads an earlier version of a value on purpose.

Staleness is decided from facts (the dataflow recorded the read, a replay shows the value would
change); the question is read only for the one thing facts cannot say: whether the user *asked*
for the earlier value. Only positive evidence counts, and it must bind to the value:

* `compares_with_turn`: a comparison whose object is an earlier turn's result ("compare with the
  counts of turn 6", "versus Task 4", "how many fewer than in Task 4", "the change since turn 3",
  "the new counts minus those of Task 8")
  binds to the values that turn wrote;
* `earlier_version`: the question compares with a value as it was before a revision ("compared
  with the original definition"), or asks for it outright ("from before the update", "as it was
  before", "the join as turn 9 built it").

A comparison also needs a fact: the turn reads the revised input itself (it computes the new side;
a comparison whose new side is missing is what a skipped recomputation looks like). An outright
request for the earlier version does not.

Anything else -- a turn named without a comparison ("as in Task 5", "the Task 6 table", "rebuild
Task 6"), a redefinition restored ("with the original rule back") -- is no evidence, and the value
is recomputed. A missing word never counts: when the question says nothing, the manager recomputes.

    intent = question_intent("Compare with the wet-day counts of turn 4 ...")
    intent.turns        # {4: Asked(phrase='Compare with the wet-day counts of turn 4', compares=True)}
    intent.earlier      # None, or the phrase that asks for an earlier version
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Asked", "QuestionIntent", "question_intent"]

# Clauses: sentence ends, semicolons, colons, and ", and"/", but" joins (a comparison in one clause
# says nothing about the others). Parentheses stay: "(the original definition, turn 4)" explains
# the clause it sits in.
_CLAUSE = re.compile(r"[.;:?!]\s|[.;:?!]$|,\s*(?:and|but|then)\b", re.IGNORECASE)
_WORD = r"(?:[^\s.;:?!]|\.(?=\w))+"  # a word; a dot only inside one ("1.0")
_GAP = r"(?:[\s,()'\"-]+" + _WORD + r"){0,9}?"  # up to ten words of noun phrase, no clause break
_TURN = r"[\s,()'\"-]+(?:turn|task)\s*#?(\d+)\b"
_COMPARE_WORD = re.compile(
    r"\b(compar\w*|differ\w*|chang\w*|versus|vs\b|relative|fewer|more|less|higher|lower|drop\w*|"
    r"r[io]se[sn]?|increas\w*|decreas\w*|gain\w*|loss\w*|remov\w*|gap|shift\w*|lost|dropped out|minus|subtract\w*)",
    re.IGNORECASE,
)
# A comparison whose object names an earlier turn.
_TURN_OBJECT = [
    re.compile(r"\bcompar(?:e|es|ed|ing)\b" + _GAP + _TURN, re.IGNORECASE),
    re.compile(r"\b(?:with|to|against|versus|vs\.?|than|relative to|minus)\b" + _GAP + _TURN, re.IGNORECASE),
    re.compile(
        r"\b(?:chang\w*|differ\w*|drop\w*|r[io]se[sn]?|increas\w*|decreas\w*|gain\w*|shift\w*)\s+"
        r"(?:from|since|over)\b" + _GAP + _TURN,
        re.IGNORECASE,
    ),
]
_EARLIER_ADJ = (
    r"(?:old|original|previous|earlier|initial|former|prior|first|pre-update|pre-revision|superseded)"
)
# Time-series words: "the previous year" is a lag, not an earlier version of a value.
_TIME_UNIT = (
    r"(?:year|month|week|day|quarter|hour|minute|row|period|season|decade|date|time|observation|entry)s?\b"
)
_REVISION = (
    r"(?:update|change|revision|redefinition|correction|exclusion|switch|fix|new (?:definition|rule|scope))"
)
# Outright requests for a turn's result as that turn made it.
_KEPT_TURN = [
    re.compile(
        r"\bas (?:it|they) (?:was|were|stood) (?:in|at|after) (?:turn|task)\s*#?(\d+)\b", re.IGNORECASE
    ),
    re.compile(
        r"\bas (?:built|computed|made|defined|reported|left|found) (?:in|at|by) (?:turn|task)\s*#?(\d+)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bas (?:turn|task)\s*#?(\d+) (?:built|computed|made|defined|reported|left|found) (?:it|them)\b",
        re.IGNORECASE,
    ),
]
_EARLIER = [
    # outright: "from before the update", "the counts before the change", "prior to the revision"
    re.compile(r"\b(?:before|prior to)\s+(?:the|this|that|our|its)\s+" + _REVISION, re.IGNORECASE),
    # outright: "as it was before", "as they were originally"
    re.compile(r"\bas (?:it|they) (?:was|were|stood)\b(?:\s+(?:before|originally|at first))?", re.IGNORECASE),
    # a comparison: "compared with the original definition", "change from the figure under the
    # original definition", "versus the old counts" (not "the previous year")
    re.compile(
        r"\b(?:with|to|against|versus|vs\.?|than|from|relative to)\b"
        + _GAP
        + r"[\s,()'\"-]+(?:the\s+|its\s+|their\s+)?"
        + _EARLIER_ADJ
        + r"\s+(?!"
        + _TIME_UNIT
        + r")[a-z][\w-]*",
        re.IGNORECASE,
    ),
]
# An earlier version restored is the current one: "with the original rule back / restored".
_RESTORED = re.compile(r"\b(restor\w*|reinstat\w*|back|again|in place|in force)\b", re.IGNORECASE)


class Asked(BaseModel):
    """One piece of positive evidence: the phrase, and whether it is a comparison (which also needs
    the turn to compute the new side) or an outright request for the earlier version."""

    model_config = ConfigDict(frozen=True)
    phrase: str
    compares: bool


class QuestionIntent(BaseModel):
    """What the question positively asks to read as it was (each with the phrase that says so)."""

    model_config = ConfigDict(frozen=True)
    turns: dict[int, Asked] = Field(default_factory=dict, description="Earlier turn -> the phrase naming it.")
    earlier: Asked | None = Field(
        default=None, description="A phrase asking for a value as it was before a revision."
    )


def _clauses(question: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(question) if c and c.strip()]


def _phrase(match: re.Match[str], compares: bool) -> Asked:
    return Asked(phrase=" ".join(match.group(0).split()), compares=compares)


def question_intent(question: str) -> QuestionIntent:
    turns: dict[int, Asked] = {}
    earlier: Asked | None = None
    for clause in _clauses(question):
        comparing = bool(_COMPARE_WORD.search(clause))
        for pattern in _KEPT_TURN:
            for match in pattern.finditer(clause):
                turns[int(match.group(1))] = _phrase(match, compares=False)
        for pattern in _TURN_OBJECT:
            for match in pattern.finditer(clause):
                if comparing:
                    turns.setdefault(int(match.group(1)), _phrase(match, compares=True))
        if earlier is not None:
            continue
        for i, pattern in enumerate(_EARLIER):
            found = pattern.search(clause)
            if found is None:
                continue
            if i == 2 and (not comparing or _RESTORED.search(clause[found.end() : found.end() + 40])):
                continue  # "with the original definition restored": the current one, not an old value
            earlier = _phrase(found, compares=i == 2)
            break
    return QuestionIntent(turns=turns, earlier=earlier)
