"""A scope stated once for the rest of the analysis, and a later turn that reads around it.

    scopes = StandingScopes()
    scopes.record(turn_id, question, code, sem)       # each committed turn
    found = scopes.bypassed(question, code, sem)      # a turn under review

"Set the students aside for the rest of the analysis and keep everyone else in `wives`": the turn's
code builds the scoped rows as a frame or table of their own (`wives = fair[fair["occupation"] != 1]`,
`CREATE TABLE kept AS SELECT * FROM sun WHERE ...`). The words only mark the scope as standing
("for the rest of the analysis", "from now on", "from here on"); what it is, is the code's fact: the
child `wives` is `fair`'s rows under a row condition. A later turn whose code computes from the
parent `fair` and never reads the child computes on rows the analysis set aside.

Evidence before a finding: the parent holds rows the child does not (a probe), and the turn's
cells, re-run reading the child where they read the parent, print a different answer. It abstains
on a question that names the parent in backticks, points at an earlier version, or brings rows
back or in ("restore", "including", "the whole table"); on a turn that assigns the parent or the
child (an update or rollback of them); and when the parent was rebuilt after the scope. A
committed turn that brings rows back and reads the parent without the child ends the scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import CodeSemantics
from stateguard.verification.requirements import Requirement

KIND = "standing_scope"

_STANDING = re.compile(
    r"\b(?:from\s+(?:now|here|this\s+point)\s+on|for\s+the\s+rest\s+of\s+(?:the|this)\s+\w+|henceforth|"
    r"in\s+(?:all|every)\s+(?:later|following|remaining)\s+\w+|from\s+this\s+turn\s+on)\b",
    re.IGNORECASE,
)
_BACK_IN = re.compile(
    rf"\b(?:{'|'.join([*LEXICON.restoration, *LEXICON.earlier_version])}|includ\w*|whole|entire|full|again)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Scope:
    turn: int | None
    parent: str
    child: str
    sql: bool


def _assigns(code: str, name: str) -> bool:
    """The code assigns `name` or one of its columns (pandas), or creates / alters it (SQL)."""
    n = re.escape(name)
    return bool(
        re.search(rf"^\s*{n}\s*(?:\[[^\]]*\]\s*)?=(?!=)", code, re.M)
        or re.search(rf"\b(?:TABLE|INTO|UPDATE)\s+{n}\b", code, re.IGNORECASE)
    )


def _reads(code: str, name: str, sql: bool) -> bool:
    if sql:
        return bool(re.search(rf"\b(?:FROM|JOIN)\s+{re.escape(name)}\b", code, re.IGNORECASE))
    return bool(re.search(rf"(?<![\w.'\"]){re.escape(name)}(?=\s*[\[.])", code))


class StandingScopes:
    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    def record(self, turn: int | None, question: str, code: str, sem: CodeSemantics) -> None:
        """`question`: the turn's question and its own context (where an instruction may stand)."""
        # a turn that brings rows back and reads a parent without its child ends that scope
        if _BACK_IN.search(question):
            self.scopes = [
                s
                for s in self.scopes
                if not (_reads(code, s.parent, s.sql) and not _reads(code, s.child, s.sql))
            ]
        # a parent rebuilt from scratch ends the scope too (its rows are new); a child derived again
        # (an update refreshing it) keeps it
        self.scopes = [
            s for s in self.scopes if not re.search(rf"^\s*{re.escape(s.parent)}\s*=(?!=)", code, re.M)
        ]
        if not _STANDING.search(question):
            return
        for sel in sem.selections:
            child = sel.target or ""
            conds = [c for c in sel.conditions if c.clause in ("where", "mask", "query") and c.column]
            if not child.isidentifier() or not conds or sel.joins or sel.aggregates or sel.group_keys:
                continue
            parents = (
                {sel.frame} if sel.language == "pandas" and sel.frame.isidentifier() else set(sel.sources)
            )
            if len(parents) != 1:
                continue
            parent = parents.pop()
            if parent.lower() == child.lower() or not parent.isidentifier():
                continue
            if not any((s.parent, s.child) == (parent, child) for s in self.scopes):
                self.scopes.append(Scope(turn, parent, child, sel.language == "sql"))

    def bypassed(self, question: str, code: str) -> list[Scope]:
        """Standing scopes the turn's code reads around: it reads the parent, never the child."""
        if _BACK_IN.search(question):
            return []
        out = []
        for s in self.scopes:
            if f"`{s.parent}`" in question or _assigns(code, s.parent) or _assigns(code, s.child):
                continue
            if _reads(code, s.parent, s.sql) and not _reads(code, s.child, s.sql):
                out.append(s)
        return out


def requirement(scope: Scope) -> Requirement:
    return Requirement(
        kind=KIND,
        text=f"the rows kept in {scope.child} (turn {scope.turn})",
        source="definition",
        subject=[scope.child],
        columns=[scope.child],
        term=scope.child,
    )


def probe(scope: Scope, con: str | None) -> str | None:
    """The parent holds rows the child does not."""
    if scope.sql:
        if con is None:
            return None
        query = f"SELECT (SELECT COUNT(*) FROM {scope.parent}), (SELECT COUNT(*) FROM {scope.child})"
        head = f"_a, _b = {con}.execute({query!r}).fetchone()\n"
    else:
        head = f"_a, _b = len({scope.parent}), len({scope.child})\n"
    return head + "_v = int(_a) > int(_b)\n_o = {'rows_of_parent': int(_a), 'rows_in_scope': int(_b)}"


def edit_text(scope: Scope, cells: list[str]) -> tuple[str, str] | None:
    """(before, after): the one cell's lines that read the parent, reading the child instead."""
    if scope.sql:
        pattern, repl = rf"\b(FROM|JOIN)(\s+){re.escape(scope.parent)}\b", rf"\1\2{scope.child}"
    else:
        pattern, repl = rf"(?<![\w.'\"]){re.escape(scope.parent)}(?=\s*[\[.])", scope.child
    flags = re.IGNORECASE if scope.sql else 0
    found = [c for c in cells if re.search(pattern, c, flags)]
    if len(found) != 1:
        return None
    lines = found[0].splitlines(keepends=True)
    hit = [i for i, line in enumerate(lines) if re.search(pattern, line, flags)]
    before = "".join(lines[hit[0] : hit[-1] + 1])
    after = re.sub(pattern, repl, before, flags=flags)
    return (before, after) if after != before else None


def describe(req: Requirement) -> str:
    return f"the scope kept in {' '.join(req.columns)} holds for the rest of the analysis"


def reason(req: Requirement, status: str) -> str:
    return (
        f"the code computes from rows an earlier turn set aside for the rest of the analysis; read "
        f"{' '.join(req.columns)}, which holds the rows still in scope"
    )
