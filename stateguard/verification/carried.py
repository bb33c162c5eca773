"""A count followed by a count "of those": the second is taken from the first one's rows.

    "How many winter flights were operated by JetBlue (B6)? And how many of those were
     scheduled to leave at 6 pm or later?"

The question's two clauses say that the second count's rows are a subset of the first one's, so
the category the first clause names (carrier B6) holds on every row behind every value the turn
reports, not only on the rows of the statement that applies it. The ordinary scope check is
satisfied by any one statement that keeps B6; this one asks it of each statement whose result a
reported field is computed from directly. A faulty turn that counts the second part on all the
winter flights (`evening = winter[winter["hour"] >= 18]`) keeps other carriers' rows there.

Read only when the question is exactly those two clauses, the second refers back to the first
("of those", "among them", or the value named again), and the first clause's condition parses
whole with the data's vocabulary; a numeric code ("coded 1970") is not read as a category.
"""

from __future__ import annotations

import re

from sqlglot import exp

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.verification import extract, sql_edit
from stateguard.verification.binder import close
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import Vocabulary, column_tokens

_THOSE = extract.THOSE
_COUNT = re.compile(
    r"^\s*(?:and\s+)?(?:(?:in|for|on|at|over|across|during|from)\s+)?how\s+many\b", re.IGNORECASE
)
# "Wives with 13 or more years of school: how many are there, and how many of them ...": the rows
# named before the colon are the first count's
_NAMED_THEN_COUNTED = re.compile(
    r"^\s*(?P<rows>[^:?]{3,160}):\s*how\s+many\s+(?:are|were)\s+there\s*,?\s*(?:and\s+)?"
    r"(?P<rest>(?:(?:at|in|on|for|from|among)\s+)?how\s+many\b.+)$",
    re.IGNORECASE | re.DOTALL,
)
# "Marginal adhesion of 5 or higher: how many samples?": the rows named before the colon, counted
_ROWS_THEN_COUNT = re.compile(r"^\s*[^:?]{3,160}:\s*how\s+many\b", re.IGNORECASE)
# "Count the people who put in 2,000 hours or more": a count asked as an instruction
_COUNT_THE = re.compile(r"^\s*count\s+(?:the|all)\b", re.IGNORECASE)
# ", and, among those older heads, how many": a second count inside the same sentence
_SECOND_COUNT = re.compile(
    rf",?\s*\band\s*,?\s*(?=(?:(?:out\s+)?of|among|from)\s+{_THOSE}\b[^,?]{{0,40}},?\s*how\s+many\b|how\s+many\b)",
    re.IGNORECASE,
)
# "Count the species scored 3 or more ..., and among them, the ones that ...": the instruction's count
# taken again of a part of its rows
_ONES_BACK = rf"(?:(?:out\s+)?of|among|from)\s+{_THOSE}\s*,?\s*(?:the\s+ones|those)\s+(?:that|who|which)\b"
_SECOND_PART = re.compile(rf",?\s*\band\s*,?\s*(?={_ONES_BACK})", re.IGNORECASE)
_BACK_ONES = re.compile(rf"^\s*{_ONES_BACK}", re.IGNORECASE)
# "And of those, how many ...": the reference back opens the second clause
_BACK_FIRST = re.compile(
    rf"^\s*(?:and\s+)?(?:(?:out\s+)?of|among|from)\s+{_THOSE}(?:\s+[\w-]+){{0,3}}?\s*,?\s*how\s+many\b",
    re.IGNORECASE,
)
# "Report `n_books` and `n_over`": names the answer's fields, states nothing about rows
_FIELDS_ONLY = re.compile(r"^\s*(?:report|return|give)\s+(?:`\w+`(?:\s*(?:,|and)\s*)?)+\s*$", re.IGNORECASE)


def count_pair(question: str) -> tuple[str, str] | None:
    """The question's two clauses when it is exactly two counts (the second may open "And of
    those, how many")."""
    parts = [p for p in extract.clauses(question) if not _FIELDS_ONLY.match(p)]
    named = _NAMED_THEN_COUNTED.match(parts[0]) if len(parts) == 1 else None
    if named:
        return named.group("rows"), named.group("rest")
    if len(parts) == 1 and (joined := _SECOND_COUNT.search(parts[0])):
        # "How many heads are sixty or older, and, among those older heads, how many are women?"
        parts = [parts[0][: joined.start()], parts[0][joined.end() :]]
    elif len(parts) == 1 and _COUNT_THE.match(parts[0]) and (joined := _SECOND_PART.search(parts[0])):
        parts = [parts[0][: joined.start()], parts[0][joined.end() :]]
    if (
        len(parts) != 2
        or not (_COUNT.match(parts[0]) or _ROWS_THEN_COUNT.match(parts[0]) or _COUNT_THE.match(parts[0]))
        or not (
            _COUNT.match(parts[1])
            or _BACK_FIRST.match(parts[1])
            or (_COUNT_THE.match(parts[0]) and _BACK_ONES.match(parts[1]))
        )
    ):
        return None
    return parts[0], parts[1]


refers_back = extract.refers_back


def carried_bounds(question: str) -> list[Requirement]:
    """The first clause's bounds ("How many committees run no more than 5 subcommittees? And of
    those, how many ..."), for a question of two counts whose second refers back to the first's rows
    by words ("of those", "among them"). Which column a bound is on is left to the code: the caller
    keeps a bound only when the turn tests exactly one column that way."""
    pair = count_pair(question)
    if pair is None or not refers_back(pair[1]):
        return []
    return [r for r in extract.comparisons(pair[0]) if r.op is not None and r.value is not None]


def bound_column(bound: Requirement, sem: CodeSemantics) -> str | None:
    """The one column the turn's code tests against the bound's number on the stated side (`cmte['subs']
    <= 5` for "no more than 5 subcommittees"); None when no column or several are tested that way."""
    ends = [(bound.op, bound.value)] if bound.upper is None else [(">=", bound.value), ("<=", bound.upper)]
    tested = {
        c.column
        for sel in sem.selections
        for c in sel.conditions
        if c.column
        and c.clause in ("where", "mask", "query")
        and isinstance(c.value, float)
        and any(op == c.op and value is not None and close(c.value, value) for op, value in ends)
    }
    return tested.pop() if len(tested) == 1 else None


def untested_subqueries(sql: str, column: str) -> list[str]:
    """Scalar subqueries of a statement's select list that read a table and never test `column`
    (`SELECT count(*), (SELECT count_if(malignant) FROM bx) FROM adhesive`): a reported value
    taken from rows the statement's own condition does not reach."""
    tree = sql_edit.parse_select(sql)
    if tree is None:
        return []
    out = []
    for projection in tree.expressions:
        for sub in projection.find_all(exp.Subquery):
            inner = sub.this
            if not isinstance(inner, exp.Select) or inner.args.get("from_") is None:
                continue
            tests = [
                c
                for part in (inner.args.get("where"), *inner.find_all(exp.Filter))
                if part
                for c in part.find_all(exp.Column)
            ]
            if not any(c.name.lower() == column.lower() for c in tests):
                out.append(inner.sql(dialect="duckdb"))
    return out


def counted_frame(sel: Selection) -> str | None:
    """The one frame whose rows a pandas count or share written into a field tests
    (`int((cmte['staff'] > 50).sum())` -> cmte), where the statement reads other frames for other
    fields; None when its tests read several frames or none by name."""
    if sel.language != "pandas" or sel.frame or not sel.conditions:
        return None
    bases = {
        m.group(1) if (m := re.match(r"\s*\(?\s*(\w+)\s*[\[.]", c.lhs or "")) else "" for c in sel.conditions
    }
    return bases.pop() if len(bases) == 1 and all(b.isidentifier() for b in bases) else None


def carried_scopes(question: str, vocab: Vocabulary, tables: list[str] | None) -> list[Requirement]:
    """The first clause's category, for a question of two counts the second of which refers back."""
    pair = count_pair(question)
    if pair is None:
        return []
    first, second = pair
    out = []
    for req in extract.scopes(first, vocab, tables, counted=True):
        if req.exclude or len(req.columns) != 1 or len(req.values) != 1:
            continue
        if not (refers_back(second) or re.search(rf"(?<![\w-]){re.escape(req.values[0])}", second)):
            continue
        if extract.parses_whole(first, req, vocab, tables):  # else no requirement
            out.append(req)
    return out


def subset_count_fields(question: str, answer: object) -> tuple[str, str] | None:
    """The reported fields of a count and of its count "of those" when the second exceeds the first.

    A question of exactly two counts, the second of the first one's rows ("How many travellers went
    by train? And of those, how many waited more than 30 minutes?"), whose answer is exactly two
    whole numbers in the clauses' order: the second can never be larger. Words only say which count
    is the subset; the finding is the reported values themselves. Anything else (other fields, a
    share, a third clause, non-integers) abstains.
    """
    parts = [p for p in extract.clauses(question) if not _FIELDS_ONLY.match(p)]
    if len(parts) != 2 or not _COUNT.match(parts[0]):
        return None
    second = parts[1]
    if not (_BACK_FIRST.match(second) or (_COUNT.match(second) and refers_back(second))):
        return None
    if not isinstance(answer, dict):
        return None
    fields = [(k, v) for k, v in answer.items() if k != "answer_type"]
    if len(fields) != 2 or not all(type(v) is int for _, v in fields):
        return None
    (first_name, first), (second_name, second_value) = fields
    return (first_name, second_name) if second_value > first else None


# An instruction that leaves rows out of the turn ("Set General Motors aside for this one."):
# a sentence of its own, not a question, opening with the verb.
_LEAVE_OUT = re.compile(rf"^\s*(?:{'|'.join(LEXICON.leave_out_verbs)})\b", re.IGNORECASE)


# "For the steady quarters with dear money in the current sense: what was ...": a scope that opens
# the question and holds for everything after the colon
_PREAMBLE = re.compile(
    r"^\s*(?:[^:?.]{0,60},\s*)?(?P<pre>(?:for|among|within|across|over)\s+(?:the|all|those|these)\b[^:?.]{3,160}):\s+(?P<rest>.+)$",
    re.IGNORECASE | re.DOTALL,
)
# the rest of the question reaches past the scope: other rows, or all of them
_BEYOND = re.compile(
    r"\b(?:others?|the\s+rest|remaining|all\s+(?:the\s+)?\w+s\b|every\s+\w+|whole|overall|in\s+total|of\s+all)\b",
    re.IGNORECASE,
)


def preamble_scopes(question: str, vocab: Vocabulary, tables: list[str] | None) -> list[Requirement]:
    """The flag a question's opening scope names ("For the steady quarters with dear money in the
    current sense: ..."): every value asked after the colon is one of the flagged rows'. None when
    the rest of the question reaches past them ("the others", "all quarters")."""
    m = _PREAMBLE.match(question)
    if m is None or _BEYOND.search(m.group("rest")):
        return []
    pre = m.group("pre")
    found = extract.flag_scopes(pre, vocab, tables)
    if not found:
        flags = [
            col
            for col in extract.flag_columns(vocab, tables)
            if (tokens := column_tokens(col))
            and re.search(r"\bwith\s+" + r"[\s-]+".join(map(re.escape, tokens)) + r"\b", pre, re.IGNORECASE)
        ]
        if len(flags) == 1:
            found = [
                Requirement(
                    kind=Kind.SCOPE, text=pre, values=["True"], columns=flags, subject=column_tokens(flags[0])
                )
            ]
    return found


def instruction_scopes(question: str, vocab: Vocabulary, tables: list[str] | None) -> list[Requirement]:
    """Values an instruction sentence leaves out of the whole turn: every reported value is
    computed without them, whatever clause asks for it."""
    out = []
    for part in extract.clauses(question):
        at = question.find(part)
        after = question[at + len(part) : at + len(part) + 1] if at >= 0 else "?"
        if after == "?" or not _LEAVE_OUT.match(part):
            continue
        for req in extract.scopes(part, vocab, tables):
            if not req.exclude or len(req.columns) != 1:
                continue
            if extract.parses_whole(part, req, vocab, tables):
                out.append(req)
    return out


def counted_by_name(sel: Selection, sem: CodeSemantics) -> bool:
    """A mask the cell named (`low_school = ps["educatn"] <= 12`) that a reported field counts by name
    (`int(low_school.sum())`): its rows are behind that value."""
    target = sel.target or ""
    if sel.language != "pandas" or sel.frame or not sel.conditions or not target.isidentifier():
        return False
    pattern = re.compile(rf"(?<![\w.]){re.escape(target)}(?!\w)")
    return any(pattern.search(t) for f, t in sem.fields.items() if f != "answer_type")


def feeds_answer(sel: Selection, sem: CodeSemantics) -> bool:
    """A reported field's value is computed from the statement's result by name (`len(evening)`,
    `_row[1]`), or is the statement itself (`others.loc[others['year'] == 1954, 'invest'].mean()`):
    that statement's rows are behind a reported value."""
    texts = [text for field, text in sem.fields.items() if field != "answer_type"]
    if sel.language == "pandas" and sel.mask and any(sel.mask in t for t in texts):
        return True
    if sel.language == "pandas" and not sel.frame and sel.conditions:
        # a count or share written into the field itself (`int((few['staff'] > 50).sum())`)
        return all(c.text and any(c.text in t for t in texts) for c in sel.conditions)
    if sel.target and sel.target.isidentifier():
        pattern = re.compile(rf"(?<![\w.]){re.escape(sel.target)}(?!\w)")
        return any(pattern.search(text) for text in texts)
    return False
