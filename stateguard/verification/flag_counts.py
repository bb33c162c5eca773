"""A count of flagged rows computed as a count of the flag's values.

    "How many road cars are frugal now?"   int(road["frugal"].count())       -- every car with a value
    "... how many are frugal ..."          n_frugal=("frugal", "count")      -- the same, per group
    "How many patients are frail?"         SELECT COUNT(frail) FROM cohort   -- non-null, not true

`count` of a boolean column counts the rows where the flag has a value, true or false; the number
of flagged rows is its sum. The code's facts decide: an aggregate `count` of a boolean column of the
data, named by the agent for that flag (`n_frugal`, `n_frail_now`: the flag's words in the name), in
a turn whose question asks how many rows have the flag ("how many ... are frugal", "the number of
frail ..."). The turn is re-run with the count written as a sum, and a finding needs that to report
another answer (the answer gate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.inspection.code_model import CodeSemantics
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import column_tokens, flag_words, token_run


@dataclass(frozen=True)
class Counted:
    flag: str
    field: str
    before: str
    after: str
    text: str  # the question's words asking for the count


def _named_for(name: str, flag: str) -> bool:
    return bool(token_run(column_tokens(name), column_tokens(flag)))


def _asked(question: str, flag: str) -> str | None:
    phrase = flag_words(flag)
    if not phrase:
        return None
    m = re.search(rf"\b(?:how\s+many|number\s+of|count\s+of)\b[^.?;]*?{phrase}", question, re.IGNORECASE)
    return m.group(0) if m else None


def _span(code: str, flag: str) -> tuple[str, str] | None:
    """The one place the code counts the flag's values, and that place written as a sum."""
    f = re.escape(flag)
    forms = [
        (rf"(\(\s*[\"']{f}[\"']\s*,\s*[\"'])count([\"']\s*\))", r"\1sum\2"),  # named aggregation
        (rf"(\[\s*[\"']{f}[\"']\s*\]\s*\.)count(\(\s*\))", r"\1sum\2"),  # frame["flag"].count()
        (rf"(\.{f}\s*\.)count(\(\s*\))", r"\1sum\2"),  # frame.flag.count()
        (rf"\bCOUNT\(\s*({f})\s*\)", r"SUM(CASE WHEN \1 THEN 1 ELSE 0 END)"),  # SQL
    ]
    found = [(m, repl) for pattern, repl in forms for m in re.finditer(pattern, code, re.IGNORECASE)]
    if len(found) != 1:
        return None
    m, repl = found[0]
    return m.group(0), m.expand(repl)


def counted(question: str, code: str, sem: CodeSemantics, flags: list[str]) -> list[Counted]:
    out: list[Counted] = []
    for flag in flags:
        asked = _asked(question, flag)
        if asked is None:
            continue
        for sel in sem.selections:
            for agg in sel.aggregates:
                if agg.function != "count" or agg.column != flag or re.search(r"\bsize\b", agg.text):
                    continue
                plain = agg.text.replace("'", '"')
                name = agg.alias or next(
                    (f for f, t in sem.fields.items() if plain in t.replace("'", '"')), None
                )
                if not name or not _named_for(name, flag):
                    continue
                span = _span(code, flag)
                if span is not None and not any(c.before == span[0] for c in out):
                    out.append(Counted(flag, name, span[0], span[1], asked))
    return out


def requirement(found: Counted) -> Requirement:
    return Requirement(kind=Kind.AGGREGATION, text=found.text, function="sum", columns=[found.flag])


PROBE = "_v = True\n_o = {'counts_values_of_the_flag': True}"
