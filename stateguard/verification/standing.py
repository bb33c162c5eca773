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
from collections.abc import Callable
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import CodeSemantics, Condition, Selection
from stateguard.verification import sql_edit
from stateguard.verification.carried import feeds_answer
from stateguard.verification.extract import RULE_VERSION
from stateguard.verification.requirements import Requirement

KIND = "standing_scope"

_STANDING = re.compile(
    r"\b(?:from\s+(?:now|here|this\s+point)\s+on(?:wards?)?|(?:for|out\s+of|in|through)\s+the\s+(?:rest|remainder)\s+of\s+(?:the|this)\s+\w+|"
    r"henceforth|until\s+further\s+notice|in\s+(?:all|every)\s+(?:later|following|remaining)\s+\w+|from\s+this\s+(?:turn|step|question)\s+on|"
    r"(?:in|for|across|through)\s+(?:all\s+|every\s+|each\s+)?(?:of\s+)?(?:the\s+)?(?:later|following|remaining|subsequent|coming)\s+"
    r"(?:questions?|turns?|steps?|parts?|analys[ie]s|work|tasks?)|going\s+forward|for\s+good|in\s+what\s+follows|"
    r"(?:every|each|all)\s+(?:later\s+|following\s+|other\s+)?(?:questions?|turns?|steps?|parts?)\s+(?:after|following|beyond)\s+(?:this|here|now)(?:\s+one)?|"
    r"(?:everything|all)\s+(?:that\s+)?(?:follows|comes\s+next|after\s+this(?:\s+point)?)\s+(?:is|will\s+be|sticks\s+to|keeps\s+to|stays\s+with|uses|covers|concerns)\b|"
    r"(?:through|till|to)\s+the\s+(?:very\s+)?end(?:\s+of\s+(?:this|the|our)\s+(?:analysis|work|session|task|study|report|project))?(?!\s+of\b)|"
    r"from\s+now\s+(?:until|till|to)\b|from\s+this\s+point(?!\s+of\b)|(?:in|for)\s+(?:all|every|each)\s+\w+\s+that\s+follows?|"
    r"(?:the|all\s+the)\s+(?:remaining|following|later|subsequent|coming)\s+(?:questions|turns|steps|parts|tasks)\s+(?:concern|cover|use|are\s+about|look\s+at|deal\s+with|keep\s+to|stay\s+with)|"
    r"(?:out\s+of|from|in|for)\s+(?:everything|all)\s+(?:below|further\s+on|further\s+down)(?=\s*[;,.:)]|\s*$)|"
    r"(?:in|for)\s+(?:everything|all)\s+that\s+follows|(?:in|for)\s+(?:everything|all|anything)\s+(?:after|from)\s+(?:this|here|now)\b|until\s+(?:we\s+(?:finish|are\s+done)|the\s+(?:very\s+)?end(?:\s+of\s+(?:this|the|our)\s+(?:analysis|work|session|task|study|report|project))?(?!\s+of\b)))\b",
    re.IGNORECASE,
)
# "old" / "older" point at a version only before what has versions ("the old rule", "the older
# figures"); "the older children", "older than 60" compare ages
_OLD = r"old(?:er)?"
_VERSIONED = (
    r"(?=\s+(?:rule|definition|version|cut\w*|threshold|criterion|data|table|frame|figures|values|numbers|"
    r"reading|rows|list|flag|one)s?\b)"
)
_VERSION_WORDS = [w if w != _OLD else _OLD + _VERSIONED for w in LEXICON.earlier_version]
_BACK_IN = re.compile(  # "how old are they" asks an age, it points at no old version; "do the table
    # again" repeats work, "with them again" / "count them again" brings rows back; "full-year" and
    # "full-time" name a kind of row, not the full table, as "prior-treatment" and "old-growth" do
    rf"\b(?<!\bhow\s)(?:(?:{'|'.join([*LEXICON.restoration, *_VERSION_WORDS])})(?!-)|includ\w*|(?:whole|entire|full)(?!-)|"
    rf"(?:with|add\w*|count\w*|put\w*|let\w*|allow\w*)\b[^.;,]{{0,30}}\bagain)\b",
    re.IGNORECASE,
)


def _brings_back(question: str) -> bool:
    """The question brings rows back or points at the data as it was (not at a rule's old version)."""
    return bool(_BACK_IN.search(RULE_VERSION.sub(" ", question)))


@dataclass(frozen=True)
class Scope:
    """A standing scope: the rows of `parent` kept in a `child` of their own, or (no child) kept by
    `condition`, the one SQL condition the code applies to `parent` and the instruction's words
    anchor (its number, value or backticked table), on `columns`."""

    turn: int | None
    parent: str
    child: str
    sql: bool
    condition: str = ""
    columns: tuple[str, ...] = ()
    # the tables or frames the parent was itself cut from, nearest first (`flagged` is `SELECT *, ...
    # FROM states`): reading one of them is reading around the scope as much as reading the parent
    ancestors: tuple[str, ...] = ()

    @property
    def sources(self) -> tuple[str, ...]:
        return (self.parent, *self.ancestors)


def _rebuilt(code: str, parent: str) -> bool:
    """The parent is assigned anew from something else than itself (`pos = pd.read_csv(...)`); an
    assignment from its own rows (`pos = pos.merge(medians, on="eucalyptus")`, a column added by a
    merge) keeps the rows the scope was cut from."""
    name = re.escape(parent)
    return any(
        not re.search(rf"(?<![\w.]){name}(?!\w)", m.group("rhs"))
        for m in re.finditer(rf"^\s*{name}\s*=(?!=)(?P<rhs>[^\n]*)$", code, re.M)
    )


def _assigns(code: str, name: str) -> bool:
    """The code assigns `name` or one of its columns (pandas), or creates / alters it (SQL)."""
    n = re.escape(name)
    return bool(
        re.search(rf"^\s*{n}\s*(?:\[[^\]]*\]\s*)?=(?!=)", code, re.M)
        or re.search(rf"\b(?:TABLE|INTO|UPDATE)\s+{n}\b", code, re.IGNORECASE)
    )


# Words that ask about rows beyond a kept set ("of all patients", "in total", "overall", "everyone")
_BEYOND = re.compile(
    r"\b(?:all|every|total|overall|everyone|everybody|anyone|whole|entire|full|both|altogether|original|raw)\b",
    re.IGNORECASE,
)


def _names_child_only(question: str, scope: Scope, instructed: bool = False) -> bool:
    """The question calls the rows by the child's name as a plain word ("how many frail cohort
    patients died") and never names the parent or asks beyond the kept rows: a statement of the turn
    that reads the parent reads around the scope even where another statement reads the child.
    `instructed`: a parent named in backticks is where the turn's instruction acts ("Restore the
    flag in `nes`"), not rows it asks about, so only a parent named outside backticks counts."""
    plain = re.sub(r"`[^`]*`", " ", question)
    if not scope.child:
        return False
    # the child's name as a word, its singular ("adult heavy spenders" for `adults`), or backticked
    # (`bigfam`) where the question names no source of it at all
    names = [scope.child] + ([scope.child[:-1]] if re.fullmatch(r"[a-z]{4,}s", scope.child) else [])
    said = any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", plain, re.IGNORECASE) for n in names)
    quoted = f"`{scope.child}`" in question and not any(
        re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", question, re.IGNORECASE) for n in scope.sources
    )
    if not (said or quoted):
        return False
    # "cohort patients": a parent's name right after the child's is the child's noun, not the parent
    read = plain if instructed else question
    rest = re.sub(rf"(?<![\w-]){re.escape(scope.child)}\s+[\w-]+", " ", read, flags=re.IGNORECASE)
    if any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", rest, re.IGNORECASE) for n in scope.sources):
        return False
    return not _BEYOND.search(plain.replace("in all", " "))


def remade_read_around(question: str, code: str, scope: Scope) -> tuple[str, str] | None:
    """An earlier turn's standing scope whose child this turn makes again (a redefinition that
    rebuilds `adults` from `nes`), after which a line reads the parent without the scope's test
    (`own_edit`), while the question calls the rows by the child's name (`_names_child_only`, the
    instruction's backticked parent aside): (before, after) with the child read instead. None
    otherwise."""
    if not scope.child or (_brings_back(question) and not _remade_with_test(scope, code)):
        return None
    if not _names_child_only(question, scope, instructed=True):
        return None
    return own_edit(scope, [code])


def _statistics_only(code: str, scope: Scope) -> bool:
    """Every read of the parent computes a per-group statistic for the child's rows to be compared
    with (`JOIN (SELECT sex, MEDIAN(wages) AS med FROM paid GROUP BY sex) s ON ...` beside `FROM core
    c`, or `paid.groupby("sex")["wages"].median()`): a rule taken over the whole population, which the
    scope does not narrow, not rows read around it."""
    names = "|".join(re.escape(n) for n in scope.sources)
    if scope.sql:
        reads = list(re.finditer(rf"\b(?:FROM|JOIN)\s+(?:{names})\b", code, re.IGNORECASE))
        grouped = re.compile(
            rf"\(\s*SELECT\b[^()]*(?:\([^()]*\)[^()]*)*\bFROM\s+(?:{names})\b[^()]*\bGROUP\s+BY\b[^()]*\)",
            re.IGNORECASE,
        )
        # or one statistic per row, correlated with the outer row's keys (`(SELECT median(f.los) FROM
        # flagged f WHERE f.hosp = y.hosp)`): the same per-group statistic, looked up row by row
        correlated = re.compile(
            rf"\(\s*SELECT\s+\w+\s*\([^()]*\)\s+FROM\s+(?:{names})\b(?:\s+(?:AS\s+)?\w+)?\s+WHERE\b"
            r"[^()]*\b\w+\.\w+\s*=\s*\w+\.\w+[^()]*\)",
            re.IGNORECASE,
        )
        inside = [(m.start(), m.end()) for p in (grouped, correlated) for m in p.finditer(code)]
        return bool(reads) and all(any(a <= r.start() < b for a, b in inside) for r in reads)
    reads = list(re.finditer(rf"(?<![\w.'\"])(?:{names})(?=\s*[\[.])", code))
    return bool(reads) and all(re.match(r"\s*\.groupby\(", code[r.end() :]) for r in reads)


def _flag_test(text: str) -> str | None:
    """The flag column a bare SQL test reads (`WHERE NOT u75`, `WHERE e.high`)."""
    m = re.fullmatch(r"\s*(?:NOT\s+)?(?:\w+\.)?([A-Za-z_]\w*)\s*", text or "", re.IGNORECASE)
    return m.group(1) if m and m.group(1).upper() not in ("TRUE", "FALSE", "NULL") else None


# `workers = ps.loc[worked].copy()`: a frame's rows under a mask the cell named
_MASKED = re.compile(
    r"^[ \t]*(?P<child>[A-Za-z_]\w*)\s*=\s*(?P<parent>[A-Za-z_]\w*)(?:\.loc)?\[\s*(?P<mask>[A-Za-z_]\w*)\s*\]"
    r"(?:\.copy\(\))?\s*$",
    re.M,
)


def _masked_subsets(code: str, sem: CodeSemantics) -> list[tuple[str, str, tuple[str, ...]]]:
    """(parent, child, columns) for each frame cut from another by a mask variable of the same cell
    that tests the parent's columns (`worked = ps["hours"] > 0` then `workers = ps.loc[worked]`)."""
    masks = {
        sel.target: sel
        for sel in sem.selections
        if sel.language == "pandas" and sel.target and not sel.frame and sel.conditions
    }
    out = []
    for m in _MASKED.finditer(code):
        mask = masks.get(m.group("mask"))
        parent, child = m.group("parent"), m.group("child")
        if mask is None or mask.sources != [parent] or parent == child:
            continue
        columns = tuple(dict.fromkeys(c.column for c in mask.conditions if c.column))
        if columns:
            out.append((parent, child, columns))
    return out


def _reads(code: str, name: str, sql: bool) -> bool:
    if sql:
        return bool(re.search(rf"\b(?:FROM|JOIN)\s+{re.escape(name)}\b", code, re.IGNORECASE))
    return bool(re.search(rf"(?<![\w.'\"]){re.escape(name)}(?=\s*[\[.])", code))


_ALL_COLUMNS = re.compile(r"^\s*SELECT\s+(?:\w+\.)?\*", re.IGNORECASE)


def _cut_from(sel: Selection) -> str | None:
    """The one table or frame a statement keeps rows of, with every column (`CREATE TABLE rest AS
    SELECT * FROM flagged WHERE ...`, `SELECT *, a > 1 AS f FROM t`, `kept = t[t['x'] > 1]`); None
    for anything that joins, groups, aggregates or picks columns."""
    if not (sel.target or "").isidentifier() or sel.joins or sel.aggregates or sel.group_keys:
        return None
    if sel.language == "sql":
        if len(sel.sources) != 1 or not _ALL_COLUMNS.match(sel.sql or ""):
            return None
        parent = sel.sources[0]
    else:
        if not (sel.frame.isidentifier() and sel.mask):
            return None
        parent = sel.frame
    return parent if parent.isidentifier() and parent.lower() != (sel.target or "").lower() else None


class StandingScopes:
    def __init__(self, lineage: dict[str, str] | None = None) -> None:
        self.scopes: list[Scope] = []
        # table or frame (lower-cased) -> the one it was cut from, over the committed turns
        self.lineage: dict[str, str] = dict(lineage or {})

    def ancestors(self, name: str) -> tuple[str, ...]:
        """The tables or frames `name` was cut from, nearest first."""
        out: list[str] = []
        at = name.lower()
        while at in self.lineage and len(out) < 6:
            up = self.lineage[at]
            if up.lower() == name.lower() or up in out:
                break
            out.append(up)
            at = up.lower()
        return tuple(out)

    def _trace(self, sem: CodeSemantics) -> None:
        for sel in sem.selections:
            target = (sel.target or "").lower()
            if not target.isidentifier():
                continue
            parent = _cut_from(sel)
            if parent is None:
                self.lineage.pop(target, None)  # rebuilt some other way: no longer a cut of anything
            else:
                self.lineage[target] = parent

    def record(self, turn: int | None, question: str, code: str, sem: CodeSemantics) -> None:
        """`question`: the turn's question and its own context (where an instruction may stand)."""
        # a turn that brings rows back and reads a parent without its child ends that scope
        if _brings_back(question):
            self.scopes = [
                s
                for s in self.scopes
                if not (
                    _reads(code, s.parent, s.sql)
                    and not (_reads(code, s.child, s.sql) if s.child else s.condition in _sql_text(sem))
                )
            ]
        # a parent rebuilt from scratch ends the scope too (its rows are new); a child derived again
        # (an update refreshing it) keeps it
        self.scopes = [s for s in self.scopes if not _rebuilt(code, s.parent)]
        self._trace(sem)
        if not _STANDING.search(question):
            return
        for scope in inline_scopes(turn, question, sem):
            if scope not in self.scopes:
                self.scopes.append(scope)
        for parent, child, columns in _masked_subsets(code, sem):
            if not any((s.parent, s.child) == (parent, child) for s in self.scopes):
                ancestors = tuple(a for a in self.ancestors(parent) if a.lower() != child.lower())
                self.scopes.append(Scope(turn, parent, child, False, columns=columns, ancestors=ancestors))
        # "keep the herbaceous ones as `herbs`": where the instruction names what it keeps, the frames
        # the cell cuts for one answer alone (`top = herbs.dropna(...).head(5)`) are no standing scope
        kept = {n.lower() for n in re.findall(r"`([A-Za-z_]\w*)`", question)}
        named = kept & {(sel.target or "").lower() for sel in sem.selections}
        for sel in sem.selections:
            child = sel.target or ""
            if sel.is_mask:
                continue  # a boolean mask (`worked = ps["hours"] > 0`), not rows of a frame
            if named and child.lower() not in named:
                continue
            # a row condition, or the rows with a recorded value (`people.dropna(subset=[...])`)
            conds = [
                c
                for c in sel.conditions
                if c.clause in ("where", "mask", "query", "dropna") and (c.column or _flag_test(c.text))
            ]
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
                columns = tuple(
                    dict.fromkeys(
                        c
                        for cond in conds
                        for c in (cond.columns or [cond.column or _flag_test(cond.text) or ""])
                        if c
                    )
                )
                self.scopes.append(
                    Scope(
                        turn,
                        parent,
                        child,
                        sel.language == "sql",
                        columns=columns,
                        ancestors=tuple(a for a in self.ancestors(parent) if a.lower() != child.lower()),
                    )
                )

    def bypassed(self, question: str, code: str) -> list[Scope]:
        """Standing scopes the turn's code reads around: it reads the parent, never the child."""
        if _brings_back(question):
            return []
        out = []
        for s in self.scopes:
            if not s.child:
                continue  # a condition on the parent's rows: `read_without` finds the statements
            if any(f"`{n}`" in question for n in s.sources) or any(
                _assigns(code, n) for n in (*s.sources, s.child)
            ):
                continue
            if any(_reads(code, n, s.sql) for n in s.sources) and (
                not _reads(code, s.child, s.sql)
                or (_names_child_only(question, s) and not _statistics_only(code, s))
            ):
                out.append(s)
        return out

    def conditions(self) -> list[Scope]:
        """The standing scopes kept by a condition on the parent's rows (no child of their own)."""
        return [s for s in self.scopes if not s.child]


# The instruction's anchors: a number ("fewer than 48 readings", "the 1950s" -> 1950 and 1960), a
# quoted or capitalised value ("District of Columbia"), a backticked table (`islands`).
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(s\b)?")


def _sentences(question: str) -> list[str]:
    return [p for p in re.split(r"(?<=[.?!])\s+", question) if p.strip()]


def _anchored(cond: Condition, sentence: str) -> bool:
    numbers: set[float] = set()
    for m in _NUMBER.finditer(re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", sentence)):  # "1,000" is 1000
        value = float(m.group(1))
        numbers |= {value, value + 10} if m.group(2) and value % 10 == 0 else {value}
    if (
        isinstance(cond.value, int | float)
        and not isinstance(cond.value, bool)
        and float(cond.value) in numbers
    ):
        return True
    listed = [float(v) for v in cond.values if isinstance(v, int | float) and not isinstance(v, bool)]
    if listed and all(v in numbers for v in listed):  # `yr NOT IN (1990, 1991)` for "1990 and 1991"
        return True
    texts = [v for v in [cond.value, *cond.values] if isinstance(v, str) and len(v) > 2]
    if texts and all(re.search(rf"(?<!\w){re.escape(v)}(?!\w)", sentence, re.IGNORECASE) for v in texts):
        return True
    named = re.findall(r"`(\w+)`", sentence)
    return any(re.search(rf"\bFROM\s+{re.escape(n)}\b", cond.text, re.IGNORECASE) for n in named)


def inline_scopes(turn: int | None, question: str, sem: CodeSemantics) -> list[Scope]:
    """Scopes the code keeps with a condition on a table's rows, not in a table of their own: the
    sentence that sets the scope for the rest of the analysis anchors exactly one condition the
    turn's SQL applies (the same text wherever it stands) on rows of exactly one table."""
    said = " ".join(p for p in _sentences(question) if _STANDING.search(p))
    if not said or _brings_back(said):
        return []
    found: dict[str, tuple[set[str], tuple[str, ...], list[int]]] = {}
    for sel in sem.selections:
        if sel.language != "sql" or sel.flag or sel.joins:
            continue
        for cond in sel.conditions:
            if cond.clause != "where" or not cond.text or not _anchored(cond, said):
                continue
            # the table whose rows it keeps: the statement's one source besides a table the
            # condition reads itself (`council NOT IN (SELECT council FROM islands)`)
            inner = {t.lower() for t in re.findall(r"\bFROM\s+(\w+)", cond.text, re.IGNORECASE)}
            sources = [t for t in sel.sources if t.lower() not in inner]
            if len(sources) != 1:
                continue
            columns = tuple(cond.columns or ([cond.column] if cond.column else []))
            entry = found.setdefault(cond.text, (set(), columns, [0]))
            entry[0].add(sources[0])
            entry[2][0] += 1
    # several conditions the words anchor ("population 0": `popul > 0` in every statement, `vote =
    # 0` in one): the scope is the one the turn applies most often, in two statements at least
    ranked = sorted(found.items(), key=lambda kv: -kv[1][2][0])
    if not ranked or (
        len(ranked) > 1 and (ranked[0][1][2][0] == ranked[1][1][2][0] or ranked[0][1][2][0] < 2)
    ):
        return []
    text, (parents, columns, _) = ranked[0]
    if len(parents) != 1 or not columns:
        return []
    return [Scope(turn, parents.pop(), "", True, text, columns)]


def read_without(scope: Scope, question: str, code: str, sem: CodeSemantics) -> list[tuple[Selection, str]]:
    """The turn's SQL statements behind a reported value that read the scope's table without its
    condition (none of them tests its columns), each with the query as the scope states it. None on
    a question that names the table in backticks or brings rows back, or code that rebuilds it."""
    if not scope.condition or _brings_back(question) or f"`{scope.parent}`" in question:
        return []
    if _assigns(code, scope.parent):
        return []  # the table rebuilt or updated (a definition changed, rows put back)
    out = []
    inner = {t.lower() for t in re.findall(r"\bFROM\s+(\w+)", scope.condition, re.IGNORECASE)}
    for sel in sem.selections:
        sources = [s.lower() for s in sel.sources if s.lower() not in inner]
        if sel.language != "sql" or sel.flag or sel.joins or sources != [scope.parent.lower()]:
            continue
        if sel.target and not (sel.aggregates or sel.group_keys) and not feeds_answer(sel, sem):
            continue  # a row-level table (`CREATE TABLE voters AS SELECT *, ... AS follower`): rows are
            # stored with their flags, and the scope applies where they are counted
        tested = {c.lower() for cond in sel.conditions for c in (cond.columns or [cond.column or ""])}
        if tested & {c.lower() for c in scope.columns} or not behind_answer(sel, sem, code):
            continue
        stated = sql_edit.add_condition(sel.sql, scope.condition) if sel.sql else None
        if stated:
            out.append((sel, stated))
    return out


def _sql_text(sem: CodeSemantics) -> str:
    return "\n".join(c.text for sel in sem.selections if sel.language == "sql" for c in sel.conditions)


def behind_answer(sel: Selection, sem: CodeSemantics, code: str) -> bool:
    """A reported value is computed from the statement's result, or from a table it creates; where
    the code names no reported dict (`print(json.dumps({...}))`), a result it reads again."""
    if feeds_answer(sel, sem):
        return True
    if not sem.fields and sel.target and sel.target.isidentifier():
        uses = re.findall(rf"(?<![\w.]){re.escape(sel.target)}(?!\w)", code)
        return len(uses) > 1
    target = (sel.target or "").lower()
    return bool(target) and any(
        target in (s.lower() for s in other.sources) and feeds_answer(other, sem)
        for other in sem.selections
        if other is not sel
    )


def requirement(scope: Scope) -> Requirement:
    if not scope.child:
        since = f"turn {scope.turn}" if scope.turn is not None else "this turn"
        return Requirement(
            kind=KIND,
            text=f"the rows of {scope.parent} with {scope.condition} ({since})",
            source="definition",
            subject=[scope.parent],
            columns=list(scope.columns),
            term=scope.parent,
        )
    return Requirement(
        kind=KIND,
        text=f"the rows kept in {scope.child} ({f'turn {scope.turn}' if scope.turn is not None else 'this turn'})",
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
    names = "|".join(re.escape(n) for n in scope.sources)
    if scope.sql:
        pattern, repl = rf"\b(FROM|JOIN)(\s+)(?:{names})\b", rf"\1\2{scope.child}"
    else:
        pattern, repl = rf"(?<![\w.'\"])(?:{names})(?=\s*[\[.])", scope.child
    flags = re.IGNORECASE if scope.sql else 0
    found = [c for c in cells if re.search(pattern, c, flags)]
    if len(found) != 1:
        return None
    lines = found[0].splitlines(keepends=True)
    hit = [i for i, line in enumerate(lines) if re.search(pattern, line, flags)]
    before = "".join(lines[hit[0] : hit[-1] + 1])
    after = re.sub(pattern, repl, before, flags=flags)
    return (before, after) if after != before else None


def _shapes(scope: Scope) -> tuple[re.Pattern[str], re.Pattern[str], list[str], Callable[[str], str]]:
    """How the code makes the child, reads a parent, and tests the scope's columns; and the line
    rewritten to read the child."""
    parent, child = "(?:" + "|".join(re.escape(n) for n in scope.sources) + ")", scope.child
    if scope.sql:
        made = re.compile(rf"\bTABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?{re.escape(child)}\b", re.IGNORECASE)
        pattern = re.compile(rf"\b(FROM|JOIN)(\s+){parent}\b", re.IGNORECASE)
        op = r"(?:[<>]=?|[!=]=|(?<![<>!])=|\b(?:BETWEEN|IN|IS|NOT)\b)"
        # a line testing the scope's own column itself (not one that only reads it: `SUM(enrolment)`)
        columns = [rf"\b{re.escape(c)}\s*{op}|{op}\s*{re.escape(c)}\b" for c in scope.columns]

        def put(line: str) -> str:
            return pattern.sub(lambda m: f"{m.group(1)}{m.group(2)}{child}", line)
    else:
        made = re.compile(rf"^\s*{re.escape(child)}\s*=(?!=)")
        pattern = re.compile(rf"(?<![\w.'\"]){parent}(?=\s*[\[.])")
        columns = [
            rf"[\"']{re.escape(c)}[\"']\s*\]?\s*(?:[<>]=?|[!=]=|\.(?:isna|notna|isnull|notnull|between|isin)\()"
            rf"|(?:dropna|notna|isna)\([^)]*[\"']{re.escape(c)}[\"']"
            for c in scope.columns
        ]

        def put(line: str) -> str:
            return pattern.sub(child, line)

    return made, pattern, columns, put


def _remade_with_test(scope: Scope, code: str) -> bool:
    """The code makes the child again with a test of the scope's columns (`adults = nes[nes["age"] >=
    25]`): the scope still holds for the child, whatever the words bring back (a rule, not rows)."""
    made, _, columns, _ = _shapes(scope)
    lines = code.splitlines()
    flags = re.IGNORECASE if scope.sql else 0
    for i, line in enumerate(lines):
        if made.search(line):
            statement = "\n".join(lines[i : i + (6 if scope.sql else 1)])
            return any(re.search(c, statement, flags) for c in columns)
    return False


def own_edit(scope: Scope, cells: list[str]) -> tuple[str, str] | None:
    """The turn that sets a scope and keeps it in a child frame or table, then reads the parent
    again: the lines after the child is made that read the parent without testing the scope's
    columns ("How many remain, and their median?" computed on `birds` after `kept = birds[...]`, or
    `(SELECT COUNT(*) FROM marked ...) FROM kept` after `CREATE TABLE kept AS SELECT * FROM marked
    WHERE ...`), as (before, after) with the child read instead. None when no line does."""
    if not scope.child:
        return None
    made, pattern, columns, put = _shapes(scope)
    for cell in cells:
        lines = cell.splitlines(keepends=True)
        start = next((i for i, line in enumerate(lines) if made.search(line)), None)
        if start is None:
            continue
        if scope.sql:  # the child's own SELECT reads the parent: the first read at or after it
            own = next((i for i in range(start, len(lines)) if pattern.search(lines[i])), None)
            if own is None or len(pattern.findall(lines[own])) != 1:
                return None
            start = own
        hits = [
            i
            for i in range(start + 1, len(lines))
            if pattern.search(lines[i])
            and not any(re.search(c, lines[i], re.IGNORECASE if scope.sql else 0) for c in columns)
            and not made.search(lines[i])
        ]
        if not hits:
            return None
        block = lines[hits[0] : hits[-1] + 1]
        after = [put(line) if hits[0] + k in hits else line for k, line in enumerate(block)]
        return "".join(block), "".join(after)
    return None


def describe(req: Requirement) -> str:
    if req.text.startswith("the rows of "):
        return f"{req.text[len('the rows of ') :]} holds for the rest of the analysis"
    return f"the scope kept in {' '.join(req.columns)} holds for the rest of the analysis"


def reason(req: Requirement, status: str) -> str:
    if req.text.startswith("the rows of "):
        return f"the code computes from rows filtered out for the rest of the analysis; keep {req.text[len('the rows of ') :]}"
    who = "this turn" if req.text.endswith("(this turn)") else "an earlier turn"
    return (
        f"the code computes from rows {who} filtered out for the rest of the analysis; read "
        f"{' '.join(req.columns)}, which holds the rows still in scope"
    )
