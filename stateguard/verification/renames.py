"""Columns the run's code renamed, and the task's words read with the names the data now has; the
words a question gives a column it names.

A task that loads `radarImage.csv` "with b1, b2 and b3" for `Band.1`, `Band.2` and `Band.3` goes on
saying "a Band 2 value below 0": the words name the column by the name the code took away. The code's
own renames are facts (`"Band.2" AS b2` in SQL, `.rename(columns={"Band.2": "b2"})` in pandas), so a
question is read with each former name that the data no longer has spelled as the column's present
name ("a b2 value below 0"), and the task's description of `Band.2` becomes `b2`'s.

A question that names a column says what it holds, as a load's or a new column's gloss: "with eid for
the row number, dur for the eruption time", "Add n_txn, the branch's transactions of both kinds
together, and per_txn, its minutes per transaction". Those words describe the column as the context's
"dur (the eruption time)" would, where the context describes it nowhere (`said_for`).

Only former names that no everyday word could be are read this way: a name of several parts (letters
and a number, or words joined by a dot, underscore, hyphen or a change of case: `Band.2`, `X.coord`,
`gdpPercap`). A plain word renamed ("minutes for time") stays a word: "the same time" is no column.
"""

from __future__ import annotations

import ast
import re

import sqlglot
from sqlglot import expressions as exp

from stateguard.inspection.code_model import CodeSemantics

_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _parts(name: str) -> list[str]:
    """`Band.2` -> [Band, 2]; `gdpPercap` -> [gdp, Percap]; `X.coord` -> [X, coord]."""
    return _PARTS.findall(name)


def _distinct(former: str, new: str) -> bool:
    """A rename worth reading: the former name has several parts, and the new one is another name."""
    return len(_parts(former)) >= 2 and former.lower() != new.lower()


def select_renames(select: exp.Select) -> dict[str, str]:
    """The columns a select list puts out under another name (`speed_raw AS speed`): former -> new."""
    return {
        item.this.name: item.alias
        for item in select.expressions
        if isinstance(item, exp.Alias) and isinstance(item.this, exp.Column) and item.this.name != item.alias
    }


def _sql_renames(sql: str) -> dict[str, str]:
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types; unreadable SQL renames nothing
        return {}
    return {
        new: former
        for select in tree.find_all(exp.Select)
        for former, new in select_renames(select).items()
        if former and new and _distinct(former, new)
    }


def _pandas_renames(code: str) -> dict[str, str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "rename":
            continue
        for keyword in node.keywords:
            if keyword.arg == "columns" and isinstance(keyword.value, ast.Dict):
                for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and isinstance(key.value, str)
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                        and _distinct(key.value, value.value)
                    ):
                        out[value.value] = key.value
    return out


def renames_in(code: str, sem: CodeSemantics) -> dict[str, str]:
    """The code's renames of columns: present name -> former name (only former names of several
    parts, see the module's docstring)."""
    out: dict[str, str] = {}
    for sel in sem.selections:
        if sel.language == "sql" and sel.sql:
            out.update(_sql_renames(sel.sql))
    out.update(_pandas_renames(code))
    return out


def spelled(text: str, renamed: dict[str, str], live: set[str]) -> str:
    """`text` with each former name of a renamed column, written whole or with its parts apart
    ("Band.2", "Band 2", "band-2"), spelled as the column's present name. A former name the data still
    has (a column of that name is live) is left as it is: the words may mean that column."""
    live_lower = {c.lower() for c in live}
    for new, former in sorted(renamed.items(), key=lambda kv: -len(kv[1])):
        if former.lower() in live_lower or new.lower() not in live_lower:
            continue
        pattern = r"[\s._-]?".join(re.escape(p) for p in _parts(former))
        text = re.sub(rf"(?<![\w.]){pattern}(?![\w])", new, text, flags=re.IGNORECASE)
    return text


# "dur for the eruption time", "minutes for time": a name the question gives a column, and what it holds
_FOR = re.compile(
    r"(?<![\w.`])`?(?P<name>[A-Za-z_]\w*)`?\s+for\s+(?:the\s+|its\s+|their\s+|each\s+)?"
    r"(?P<desc>[A-Za-z][A-Za-z' -]{1,50}?)(?=\s*(?:[,;.]|\band\b|$))",
)
# the sentence a "for" gloss names columns in: one that loads, reads or renames ("Load ... as a table
# `eruptions` with eid for the row number"), not "the wait for the longest eruption"
_NAMING = re.compile(r"\b(?:load|read|bring|import|renam|call|nam)\w*", re.IGNORECASE)
# "Add n_txn, the branch's transactions of both kinds together, and per_txn, its minutes per transaction"
_GLOSS = re.compile(
    r"(?<![\w.`])(?P<before>[A-Za-z]+\s+)?`?(?P<name>[A-Za-z_]\w*)`?\s*,\s+(?:the|its|their|his|her)\s+"
    r"(?P<desc>[A-Za-z][A-Za-z0-9' -]{2,60}?)(?=\s*(?:[,;.(]|$))",
)
_INTRODUCING = {"add", "a", "an", "and", "called", "named", "column", "as"}
# "Put each species in a two-month flowering period by ...; call the column period": the name given
# after the sentence used it as the head of a phrase
_CALL = re.compile(
    r"\b(?:call|name)\s+(?:the\s+(?:new\s+)?column|it)\s+`?(?P<name>[A-Za-z_]\w*)`?", re.IGNORECASE
)
_DETERMINERS = {"a", "an", "the", "each", "every", "its", "their", "one"}


def said_for(question: str, columns: set[str]) -> dict[str, str]:
    """What the question says each live column it names holds: "X for the <words>" (the words a load
    names a column by), "X, its/the <words>" where X is a name of its own (an underscore or a digit in
    it) or follows a word that introduces one ("Add", "and"), or "<words> X ...; call the column X". A name the context describes too keeps
    the context's words (the caller merges these only where none were given)."""
    live = {c.lower(): c for c in columns}
    out: dict[str, str] = {}
    for m in _FOR.finditer(question):
        sentence = re.split(r"(?<=[.?!])\s", question[: m.start()])[-1]
        if not _NAMING.search(sentence):
            continue
        name = live.get(m.group("name").lower())
        if name is not None and m.group("name") == name:
            out.setdefault(name, m.group("desc").strip())
    for m in _GLOSS.finditer(question):
        name = live.get(m.group("name").lower())
        if name is None or m.group("name") != name:
            continue
        before = (m.group("before") or "").strip().lower()
        if re.search(r"[_\d]", name) or before in _INTRODUCING:
            out.setdefault(name, m.group("desc").strip())
    for m in _CALL.finditer(question):
        name = live.get(m.group("name").lower())
        if name is None:
            continue
        sentence = re.split(r"(?<=[.?!])\s", question[: m.start()])[-1]
        uses = list(re.finditer(rf"((?:[A-Za-z][\w-]*\s+){{1,3}}){re.escape(m.group('name'))}\b", sentence))
        if not uses:
            continue
        words = uses[-1].group(1).split()
        while words and words[0].lower() in _DETERMINERS:
            words = words[1:]
        if words:
            out.setdefault(name, " ".join([*words, m.group("name")]))
    return out
