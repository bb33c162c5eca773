"""Terms the task defines ("an hour at LGA is windy when ...") and which definition is current.

    defs.record(turn, "S11", requirements)          # a committed turn that defined 'windy' at LGA
    reqs = yield from defs.apply(turn, reqs, ctx)   # a later turn that uses 'windy' at LGA

A definition is keyed by its term and the category values its sentence names (windy at LGA is
not windy at EWR); a later definition with the same key replaces it (an update). A turn that
uses the term without restating its condition inherits the current definition's requirements,
after a `load_state` of the defining state confirms it is committed and not invalidated. A turn
that points back ("those windy hours", "the original definition") is left alone: which version
it means is not decidable from the words, so it is not a requirement.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any

from pydantic import BaseModel

from stateguard.artifacts.lexicon import LEXICON
from stateguard.artifacts.state import AnalyticalState
from stateguard.verification.extract import clauses, definition_clause, definition_term
from stateguard.verification.requirements import Kind, Requirement

_BACK = re.compile(
    r"\b(?:those|these|that|the same|original|previous|earlier|old|initial|first|prior|before)\W+(?:\w+\W+){0,2}$",
    re.IGNORECASE,
)
# The term followed by a pointer to a definition other than the current one ("did not count as fit
# under it", "large under the area rule", "at risk before the change"): that version is meant.
_BACK_AFTER = re.compile(
    r"^\W+(?:\w+\W+){0,2}?(?:under|by|according\s+to|with)\s+(?:it|that|them|those|the\s+(?:\w+\s+){0,2}?"
    r"(?:rule|definition|guidance|requirement|criterion|version))\b|^\W+(?:before|previously|earlier)\b",
    re.IGNORECASE,
)
_RESTORE = [w for w in LEXICON.restoration if w != "back"] + [r"revert\w*", r"go(?:es)?\s+back"]
_CHANGE = re.compile(
    rf"\b(?:{'|'.join(w for w in (*LEXICON.exclusion, *_RESTORE, 'back') if w != 'not')}"
    r"|again|no\s+longer|withdraw\w*|from\s+(?:now|here)\s+on|means|replac\w*|chang\w*)\b",
    re.IGNORECASE,
)
_RESTORING = re.compile(
    rf"\b(?:{'|'.join(_RESTORE)})\b", re.IGNORECASE
)  # in a question: restore, bring, revert
_ROWS = (Kind.COMPARISON, Kind.SCOPE, Kind.NOT_NULL)


class Definition(BaseModel):
    term: str
    scope: list[str]
    requirements: list[Requirement]
    turn_id: int
    state_id: str


class Definitions:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, tuple[str, ...]], Definition] = {}

    def record(self, turn: Any, state_id: str, requirements: list[Requirement]) -> None:
        term = definition_term(turn.question) or definition_term(_context(turn))
        if term is None:
            # A turn whose own words change a term's rule in a way not read as a definition ("the
            # sit-up requirement is dropped: fit means at least 12 chin-ups again"): the recorded
            # definition is no longer known to be the current one, so it is forgotten (abstain).
            for key in [k for k, e in self.entries.items() if self.revises(turn, e)]:
                del self.entries[key]
            return
        rows = [r for r in requirements if r.kind in _ROWS and r.source in ("question", "context")]
        # only what the defining sentence states: another sentence of the turn asks about other rows
        # ("what percentage of the conservatives (ideology 5 or higher) are low-wage?")
        said = [(definition_clause(t) or "").lower() for t in (turn.question, _context(turn))]
        elsewhere = " ".join(str(t) for t in (turn.question, _context(turn))).lower()
        rows = [
            r for r in rows if any(r.text.lower() in d for d in said if d) or r.text.lower() not in elsewhere
        ]
        if not any(r.kind is Kind.COMPARISON for r in rows):
            for key in [k for k in self.entries if k[0] == term]:
                del self.entries[key]  # the term is redefined by something we cannot check
            return
        scope = sorted(v for r in rows if r.kind is Kind.SCOPE for v in r.values)
        defined = [r.model_copy(update={"source": "definition", "term": term}) for r in rows]
        self.entries[(term, tuple(scope))] = Definition(
            term=term, scope=scope, requirements=defined, turn_id=turn.turn_id, state_id=state_id
        )

    def revises(self, turn: Any, entry: Definition) -> bool:
        """The turn's own context (where a task states rule changes) names the term in a sentence
        that changes it: a restoration, an exclusion or a word of change ("again", "no longer")."""
        text = _context(turn)
        if entry.turn_id >= getattr(turn, "turn_id", 0) or not text:
            return False
        for sentence in clauses(text):
            if re.search(rf"\b{re.escape(entry.term)}\b", sentence, re.IGNORECASE) and _CHANGE.search(
                sentence
            ):
                return True
        return False

    def uses(self, question: str, entry: Definition) -> bool:
        """The question uses the term (not pointing back at an earlier version) within its scope."""
        low = question.lower()
        found = [m for m in re.finditer(rf"\b{re.escape(entry.term)}\b", low)]
        if not found or any(
            _BACK.search(low[: m.start()]) or _BACK_AFTER.search(low[m.end() :]) for m in found
        ):
            return False
        return all(re.search(rf"(?<!\w){re.escape(v.lower())}(?!\w)", low) for v in entry.scope)

    def apply(
        self,
        turn: Any,
        reqs: list[Requirement],
        ctx: Any,
        max_loads: int = 2,
    ) -> Generator[tuple[str, dict[str, Any]], Any, list[Requirement]]:
        if (
            definition_term(turn.question) is not None
            or definition_term(_context(turn)) is not None
            or max_loads <= 0
        ):
            return reqs
        earlier = [
            str(getattr(t, "question", "")).strip()
            for t in getattr(ctx.task, "turns", [])
            if getattr(t, "turn_id", turn.turn_id) < turn.turn_id
        ]
        if turn.question.strip() in earlier:
            return reqs  # the same words asked again after an update: which version they mean is open
        if _CHANGE.search(_context(turn)) or _RESTORING.search(turn.question):
            # The turn changes or restores a rule ("go back to the 70-year rule", "restore the
            # 3-mile flag") without naming the term: which definition is current is its own to say.
            return reqs
        out = list(reqs)
        picked = [
            e
            for e in self.entries.values()
            if e.turn_id < turn.turn_id and self.uses(turn.question, e) and not self.revises(turn, e)
        ]
        for entry in picked[:max_loads]:
            result = yield ("load_state", {"state_id": entry.state_id})
            tool = getattr(result, "tool_result", None)
            if tool is None or not tool.ok or ctx.store.is_invalid(entry.state_id):
                continue
            committed = {c.text for c in AnalyticalState.model_validate(tool.data).constraints}
            for req in entry.requirements:
                if req.kind is Kind.COMPARISON and any(r.kind is Kind.COMPARISON for r in reqs):
                    continue  # the turn states its own bound
                if not any(req.describe() in text for text in committed):
                    continue  # not what the defining state recorded
                out.append(req)
        return out


def _context(turn: Any) -> str:
    """A turn's own context (not turn 1's task-wide description): where an update states its rule."""
    return str(getattr(turn, "context", "") or "") if getattr(turn, "turn_id", 1) > 1 else ""
