"""Requirements the teacher writes into OPEN_STATE: what the question text states, as constraints.

    requirements("Keep birds with a body mass of at least 3550 g. Report `n_heavy` ...", places=2,
                 frame="heavy_birds")
    -> [{"text": "the result reports `n_heavy`"}, {"text": "stated condition: body mass of at least 3550 g"},
        {"text": "decimal results are reported rounded to 2 decimal places"},
        {"text": "`heavy_birds` holds at least one row", "code": "assert len(heavy_birds) > 0, ..."}]

Everything here is read off text a manager without the teacher's knowledge sees: the question
(the fields it asks to report, its stated thresholds and scopes, the rounding it asks for) and, in
the segment-induced regime where a state is formed from steps already run, the name of the frame
those steps built. The one executable check is that this frame is not empty (every stage of a
synthesized task asks for rows to keep or groups to form); it runs at UPDATE_STATE in the
workspace, and a failure blocks FINALIZE until repaired. The rest are worded requirements the
verification step (the as-stated recomputation probe) checks.
"""

from __future__ import annotations

import re
from typing import Any

from stateguard.artifacts.lexicon import LEXICON

__all__ = ["requirements"]

_FIELD = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
_REPORT = re.compile(r"\breport\b(.*)", re.DOTALL | re.IGNORECASE)
# A stated comparison with a number: "at least 3550 g", "below 40", "more than 12 birds"
_WORDED = [p for p in LEXICON.comparator_phrases(temporal=False) if p[0].isalpha()]
_COMPARE = re.compile(
    rf"((?:[A-Za-z-]+ ){{0,4}}(?:{LEXICON.pattern([*_WORDED, 'exceed'])})\s+-?\d[\d,]*(?:\.\d+)?(?:\s*(?:%|[A-Za-z]+))?)"
)
# A stated scope: "for female penguins", "on Dream island", "in the Americas"
_SCOPE = re.compile(
    r"\b((?:on|in|for|among) (?:the )?[A-Z][A-Za-z]+(?: [A-Za-z]+)?)"
    r"|(?:^|\. )((?:For|Among) (?:the )?[a-z]+ [a-z]+)"
)
_TRAILING = re.compile(r"\s+(?:by|with|and|that|of|to|in|on|for)$")
_MAX_CONDITIONS = 3


def _fields(question: str) -> list[str]:
    match = _REPORT.search(question)
    return list(dict.fromkeys(_FIELD.findall(match.group(1)))) if match else []


def _conditions(question: str) -> list[str]:
    out: list[str] = []
    for m in _COMPARE.finditer(question):
        text = " ".join(m.group(1).split()).strip(" ,.")
        if text and text not in out:
            out.append(text)
    for m in _SCOPE.finditer(question):
        text = _TRAILING.sub("", m.group(1) or m.group(2))
        if text not in out and not any(text in o for o in out):
            out.append(text)
    return out[:_MAX_CONDITIONS]


def requirements(question: str, *, places: int | None, frame: str | None = None) -> list[dict[str, Any]]:
    """Constraints for a state whose question is `question` (see the module docstring)."""
    out: list[dict[str, Any]] = []
    fields = _fields(question)
    if fields:
        out.append({"text": "the result reports " + ", ".join(f"`{f}`" for f in fields)})
    out += [{"text": f"stated condition: {c}"} for c in _conditions(question)]
    if places is not None:
        out.append({"text": f"decimal results are reported rounded to {places} decimal places"})
    if frame is not None and frame.isidentifier():
        out.append(
            {
                "text": f"`{frame}` holds at least one row",
                "code": f"assert len({frame}) > 0, '{frame} is empty'",
            }
        )
    return out
