"""A summary built again that groups by other keys than the one it rebuilds.

    history = GroupingHistory()
    history.record(turn_id, sem)                      # each committed turn
    found = history.regrouped(question, code, sem)    # a turn under review

"Rebuild the island summary with the new flag", "Redo the religiousness table of Task 3 for the
women we kept": the committed code shows what the summary is grouped by (`by_religion =
fair.groupby("religious")...` at turn 3, `CREATE TABLE ages AS ... GROUP BY age_group`). A turn
that assigns the same name again from a grouping on other keys computes another breakdown than
the one it says it rebuilds. The facts are the code's: the name, its earlier keys and its new
keys. The question is read only to tie the turn to that summary, and to let it change the keys
on purpose:
- it refers back: names the turn that built it ("Task 3"), the summary in backticks, or says it
  rebuilds, redoes or repeats it;
- it names none of the new keys (a column the new grouping uses that the old one did not, or a
  word of it): "the same table, by education this time" abstains.

Evidence before a finding: the turn's cells, re-run grouping by the earlier keys, print another
answer (the answer gate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.verification import sql_edit
from stateguard.verification.requirements import Kind, Requirement

_AGAIN = re.compile(
    r"\b(?:rebuild\w*|rebuilt|redo\w*|redone|re-?run\w*|recompute\w*|refresh\w*|again|same\s+\w+(?:\s+\w+)?\s+as)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Grouping:
    turn: int | None
    name: str
    keys: tuple[str, ...]
    sql: bool
    # (output name, statistic, column) of each aggregate the summary holds under a name of its own
    stats: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class Regrouped:
    old: Grouping
    sel: Selection
    keys: tuple[str, ...]
    before: str
    after: str
    sql: bool

    def requirement(self) -> Requirement:
        since = f" of turn {self.old.turn}" if self.old.turn is not None else ""
        return Requirement(
            kind=Kind.GROUPING,
            text=f"{self.old.name} rebuilt with its grouping{since} ({', '.join(self.old.keys)})",
            source="definition",
            columns=list(self.old.keys),
            keys=list(self.old.keys),
            term=self.old.name,
        )


def _named(sel: Selection) -> str | None:
    name = sel.target or ""
    return name if name.isidentifier() and not name.startswith("_") and name != "result" else None


def _keys(sel: Selection) -> tuple[str, ...]:
    return tuple(k for k in sel.group_keys if k)


class GroupingHistory:
    def __init__(self) -> None:
        self.groupings: dict[str, Grouping] = {}

    def record(self, turn: int | None, sem: CodeSemantics) -> None:
        for sel in sem.selections:
            name, keys = _named(sel), _keys(sel)
            if name and keys and not sel.flag:
                stats = tuple(
                    (a.alias, a.function, a.column)
                    for a in sel.aggregates
                    if a.alias and a.column and a.standalone and not a.window
                )
                self.groupings[name.lower()] = Grouping(turn, name, keys, sel.language == "sql", stats)

    def earlier_statistics(self, question: str, sem: CodeSemantics) -> dict[str, str]:
        """For a summary the turn builds again under its name, referring back to it: the statistic each
        of its named outputs took before, by output name (`mean_price` -> mean), where the column is
        the same now."""
        out: dict[str, str] = {}
        for sel in sem.selections:
            old = self.groupings.get((_named(sel) or "").lower())
            if old is None or not _refers_back(old, question):
                continue
            now = {(a.alias or "").lower(): a.column for a in sel.aggregates if a.alias}
            for alias, function, column in old.stats:
                if now.get(alias.lower()) == column:
                    out[alias.lower()] = function
        return out

    def regrouped(self, question: str, code: str, sem: CodeSemantics) -> list[Regrouped]:
        out = []
        low = question.lower()
        for sel in sem.selections:
            name, keys = _named(sel), _keys(sel)
            old = self.groupings.get((name or "").lower())
            if old is None or not keys or {k.lower() for k in keys} == {k.lower() for k in old.keys}:
                continue
            new = [k for k in keys if k.lower() not in {o.lower() for o in old.keys}]
            if not _refers_back(old, question) or any(_said(k, low) for k in new):
                continue
            edit = _edit(sel, old.keys, code)
            if edit is not None:
                out.append(Regrouped(old, sel, keys, edit[0], edit[1], sel.language == "sql"))
        return out


def _refers_back(old: Grouping, question: str) -> bool:
    """The question ties the turn to the summary: it names the turn that built it, the summary in
    backticks, or says it rebuilds, redoes or repeats it."""
    low = question.lower()
    return bool(
        (old.turn is not None and re.search(rf"\btasks?\s+(?:\d+\s*(?:,|and)\s*)*{old.turn}\b", low))
        or f"`{old.name.lower()}`" in low
        or _AGAIN.search(question)
    )


def _said(key: str, low: str) -> bool:
    """The question names a key: the column, or a word of it ("weight_class" -> "weight")."""
    words = [w for w in re.split(r"[_\W\d]+", key.lower()) if len(w) >= 3]
    return any(re.search(rf"\b{re.escape(w)}", low) for w in [key.lower(), *words])


def _edit(sel: Selection, keys: tuple[str, ...], code: str) -> tuple[str, str] | None:
    """(before, after): the statement grouping by `keys` instead. SQL: the query with its GROUP BY
    set to them (None when that does not parse); pandas: the one `.groupby(...)` call of the
    statement's line, with the keys written as strings."""
    if sel.language == "sql":
        stated = sql_edit.set_group_by(sel.sql, list(keys)) if sel.sql else None
        return (sel.sql, stated) if stated else None
    calls = re.findall(r"\.groupby\((?:[^()]|\([^()]*\))*\)", code)
    mine = [c for c in calls if all(k in c for k in sel.group_keys)]
    if len(set(mine)) != 1:
        return None
    written = repr(keys[0]) if len(keys) == 1 else repr(list(keys))
    call = mine[0]
    tail = re.search(r",\s*(?:as_index|sort|dropna|observed)\s*=.*\)$", call)
    after = f".groupby({written}{tail.group(0) if tail else ')'}"
    return call, after
