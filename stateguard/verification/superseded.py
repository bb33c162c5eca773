"""A flag the analysis redefined, written out again in a form it replaced.

    history = FlagHistory()
    history.record(turn_id, code, sem)               # each committed turn's cells
    found = history.restated(question, code, sem)    # a turn under review

Decided from the run's own code, not from the question's words. The committed cells show a flag
column defined by an expression (`cars["efficient"] = cars["mpg"] >= 25`, or
`infl >= 6 AS high_infl` in a `CREATE TABLE ... AS SELECT`) and assigned again later (by any
expression, parsed or not). A turn whose code writes an earlier version's expression out again,
instead of reading the flag, computes with a rule the analysis has replaced. The question is read
only to bind it to the flag: every part of the flag's name starts a word of it ("the
high-inflation quarters" names `high_infl`), and it does not point at an earlier version
("the original definition", "the withdrawn rule"), which the turn would then compute on purpose.

The evidence the verifier asks for before a finding: the restated expression and the flag as it
stands now disagree on some rows of the table or frame that holds it (a probe), and the turn's
cells, re-run reading the flag in place of the restated expression, print a different answer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import CodeSemantics
from stateguard.inspection.code_sql import sets_every_row, star_replaced
from stateguard.verification import extract, renames
from stateguard.verification.binder import side_status
from stateguard.verification.code_text import balanced
from stateguard.verification.requirements import Requirement

KIND = "superseded_definition"

# A pandas flag assignment on one line: `frame["flag"] = <boolean expression>`.
_PANDAS_FLAG = re.compile(
    r"^[ \t]*([A-Za-z_]\w*)\[\s*[\"']([A-Za-z_]\w*)[\"']\s*\]\s*=(?!=)\s*(.+?)\s*$", re.M
)
_BOOLEAN = re.compile(
    r"(?:[<>]=?|[=!]=)|\bAND\b|\bOR\b|\bNOT\b|\.between\(|\.isin\(|\.(?:ge|gt|le|lt|eq|ne)\(", re.IGNORECASE
)
# Words that point at a version of a rule other than the one in force: the turn means that one.
# "old" said of an age ("how old were their mothers", "years old", "older than 60", "20 or older"): no
# version
_AGE = re.compile(
    r"\bhow\s+old\b|\byears?\s+old\b|\bold(?:er)?\s+than\b|\b(?:or|and)\s+older\b", re.IGNORECASE
)
_EARLIER = re.compile(rf"\b(?:{'|'.join(LEXICON.earlier_version)})\b", re.IGNORECASE)
# a plural noun right after the word: things of the data described by their time ("their number of
# earlier births", "prior abortions"), no version of a rule
_PLURAL_AFTER = re.compile(r"\s+([a-z]{3,}s)\b", re.IGNORECASE)
_WORD_AFTER = re.compile(r"\s+([a-z]{3,})\b", re.IGNORECASE)


def _points_earlier(text: str, described: frozenset[str] = frozenset()) -> bool:
    """Does the text point at an earlier version of a rule ("the original definition", "the rule we
    dropped", "before the change")? A word of the lexicon's `earlier_version` counts, unless a plural
    noun that is no rule's follows it ("earlier births"), or a word the task's text describes its
    data with (`described`: "the original form" where a column holds "msq" for the original form)."""
    for m in _EARLIER.finditer(text):
        after = _PLURAL_AFTER.match(text, m.end())
        noun = _WORD_AFTER.match(text, m.end())
        if noun is not None and noun.group(1).lower() in described and not LEXICON.names_rule(noun.group(1)):
            continue
        if after is None or LEXICON.names_rule(after.group(1)):
            return True
    return False


# how a ranking breaks its ties ("(earlier year on a tie)", "smaller code first if tied"): an order of
# rows, no version of a rule
_TIE_BREAK = re.compile(
    r"\([^()]*\b(?:ties?|tied)\b[^()]*\)|[^,;:()?.]*\b(?:on\s+(?:a\s+)?ties?|if\s+tied)\b", re.IGNORECASE
)
# Tokens of an expression: a pandas column access, a (qualified) SQL name, a number, an operator.
# pandas' comparison methods (`wage.ge(2.0)`) are read as the operator they stand for, so a rule
# defined as `males.wage.ge(2.0)` and written out as `late["wage"] >= 2.0` is the same rule.
_TOKEN = re.compile(
    r"\.(?P<meth>ge|gt|le|lt|eq|ne)\s*\("
    r"|(?P<col>(?P<frame>[A-Za-z_]\w*)\[\s*[\"'](?P<name>[^\"'\]]+)[\"']\s*\])"
    r"|(?P<qual>(?:(?P<alias>[A-Za-z_]\w*)\.)?(?P<ident>[A-Za-z_]\w*))"
    r"|(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
    r"|(?P<op>>=|<=|==|!=|<>|>|<|=|&|\||~|\+|-|\*|/|%)"
)
_WORD_OPS = {"and": "and", "or": "or", "not": "not"}
_SYMBOL_OPS = {"&": "and", "|": "or", "~": "not", "<>": "!=", "=": "=="}
_METHOD_OPS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "eq": "==", "ne": "!="}


@dataclass(frozen=True)
class Token:
    kind: str  # col, num, op, word
    value: str | float
    start: int
    end: int
    prefix: str = ""  # pandas: the frame (`cars`); SQL: the alias (`d`); "" for a bare name
    pandas: bool = False


def tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for m in _TOKEN.finditer(text):
        if m.group("meth"):
            out.append(Token("op", _METHOD_OPS[m.group("meth")], m.start(), m.end()))
        elif m.group("col"):
            out.append(Token("col", m.group("name").lower(), m.start(), m.end(), m.group("frame"), True))
        elif m.group("qual"):
            ident = m.group("ident")
            low = ident.lower()
            start, end = m.start(), m.end()
            if start and text[start - 1] in "'\"" and text[end : end + 1] == text[start - 1]:
                start, end = start - 1, end + 1  # a string literal (`rater = 'yes'`) spans its quotes
            if low in _WORD_OPS and not m.group("alias"):
                out.append(Token("op", _WORD_OPS[low], m.start(), m.end()))
            else:
                out.append(Token("col", low, start, end, m.group("alias") or ""))
        elif m.group("num"):
            out.append(Token("num", float(m.group("num")), m.start(), m.end()))
        else:
            op = m.group("op")
            out.append(Token("op", _SYMBOL_OPS.get(op, op), m.start(), m.end()))
    return out


def _same(a: Token, b: Token) -> bool:
    return a.kind == b.kind and a.value == b.value


@dataclass(frozen=True)
class Version:
    turn: int | None
    holder: str  # the frame variable (pandas) or the table (SQL) that holds the flag
    flag: str
    text: str  # the defining expression as written
    sql: bool

    @property
    def shape(self) -> tuple[tuple[str, str | float], ...]:
        return tuple((t.kind, t.value) for t in tokens(self.text))


@dataclass(frozen=True)
class Restatement:
    """Code of the turn under review that writes out `old`, a replaced version of a flag."""

    old: Version
    current: Version
    before: str  # the code's text of the restated expression
    after: str  # the same place reading the flag instead
    term: str  # the question's words naming the flag

    def change(self) -> str | None:
        """How the rule in the code departs from `old` when the two differ in comparisons or numbers
        only: "reversed" when a comparison runs the other way (`>` for `<=`), "threshold" when only
        cut-offs differ (a number, or a bound strict instead of inclusive); None otherwise."""
        a, b = self.old.shape, self.current.shape
        if len(a) != len(b) or a == b:
            return None
        pairs = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
        if any(x[0] != y[0] or x[0] not in ("op", "num") for x, y in pairs):
            return None
        ops = [(str(x[1]), str(y[1])) for x, y in pairs if x[0] == "op"]
        if any(x[:1] not in "<>" or y[:1] not in "<>" for x, y in ops):
            return None
        return "reversed" if any(side_status(x, y) == "differs" for x, y in ops) else "threshold"

    def requirement(self) -> Requirement:
        return Requirement(
            kind=KIND,
            text=self.term,
            source="definition",
            subject=[self.old.flag],
            columns=[self.old.flag],
            term=self.term,
        )

    def probe(self, con: str | None) -> str | None:
        """Rows of the flag's holder where the replaced expression and the flag disagree."""
        if self.current.sql:
            if con is None:
                return None
            query = (
                f"SELECT COUNT(*), COUNT(*) FILTER (WHERE COALESCE(CAST(({self.old.text}) AS BOOLEAN), FALSE) "
                f"<> COALESCE(CAST({self.old.flag} AS BOOLEAN), FALSE)) FROM {self.current.holder}"
            )
            return (
                f"_n, _bad = {con}.execute({query!r}).fetchone()\n_bad = int(_bad or 0)\n"
                f"_v = _bad > 0\n_o = {{'rows': int(_n or 0), 'rows_where_the_replaced_rule_differs': _bad}}"
            )
        old = self.old.text
        if self.old.holder != self.current.holder:  # the old rule on the frame that holds the flag now
            old = _retarget(old, self.old.holder, self.current.holder)
        return (
            f"_f = {self.current.holder}\n_old = ({old})\n"
            f"_old = _old.fillna(False).astype(bool)\n_now = _f[{self.old.flag!r}].fillna(False).astype(bool)\n"
            f"_bad = int((_old != _now).sum())\n"
            f"_v = _bad > 0\n_o = {{'rows': int(len(_f)), 'rows_where_the_replaced_rule_differs': _bad}}"
        )


# `np.where(cond, True, False)`: the flag `cond` written longhand
_WHERE_TRUE = re.compile(r"^(?:np|numpy)\.where\((?P<cond>.+),\s*True\s*,\s*False\s*\)$")


def _flag_assignments(code: str, sem: CodeSemantics, turn: int | None) -> list[Version]:
    out = []
    for m in _PANDAS_FLAG.finditer(code):
        text = m.group(3)
        if text.strip().isidentifier():  # `rich = mz["income"] >= 30000` then `mz["well_off"] = rich`
            named = list(
                re.finditer(
                    rf"^[ \t]*{re.escape(text.strip())}\s*=(?!=)\s*(.+?)\s*$", code[: m.start()], re.M
                )
            )
            text = named[-1].group(1) if named else text
        longhand = _WHERE_TRUE.match(text.strip())
        if longhand and balanced(longhand.group("cond")):
            text = longhand.group("cond").strip()
        if _BOOLEAN.search(text) and not text.rstrip().endswith(("(", ",", "\\")):
            out.append(Version(turn, m.group(1), m.group(2), text, False))
    for sel in sem.selections:
        if sel.language != "sql" or not sel.target or not sel.sql:
            continue
        for alias, text in _sql_flags(sel.sql):
            out.append(Version(turn, sel.target, alias, text, True))
    out += [Version(turn, table, flag, text, True) for table, flag, text in _sql_updates(sem)]
    return out


def _sql_updates(sem: CodeSemantics) -> list[tuple[str, str, str]]:
    """(table, flag, expression) for each `UPDATE t SET flag = <boolean expression> FROM ... WHERE ...`
    the cell runs: a flag set, or set again, in place. An UPDATE of every row is read above, as the
    table's SELECT with its flag (`code_sql.sets_every_row`)."""
    import sqlglot
    from sqlglot import exp

    out = []
    for sql in sem.statements:
        if not re.match(r"\s*UPDATE\b", sql, re.IGNORECASE):
            continue
        try:
            stmt = sqlglot.parse_one(sql, dialect="duckdb")
        except Exception:  # noqa: BLE001 - unreadable SQL records nothing
            continue
        if not isinstance(stmt, exp.Update) or not isinstance(stmt.this, exp.Table) or sets_every_row(stmt):
            continue
        for eq in stmt.expressions:
            if isinstance(eq, exp.EQ) and isinstance(eq.this, exp.Column):
                text = _flag_text(eq.expression)
                if text is not None:
                    out.append((stmt.this.name, eq.this.name, text))
    return out


def _sql_flags(sql: str) -> list[tuple[str, str]]:
    """Boolean columns a SELECT computes (`infl >= 6 AS high_infl`): alias -> expression."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # unreadable SQL: nothing is recorded from it
        return []
    if not isinstance(tree, exp.Select):
        return []
    # `SELECT *, speed_raw AS speed, speed_raw >= 0.8 AS fast`: a column the same list puts out under a
    # name of its own holds the same values under that name, the name later turns read
    renamed = renames.select_renames(tree)
    out = []
    for item in star_replaced(tree):  # `SELECT * REPLACE (kappa > 2 AS raised)` redefines `raised`
        if not isinstance(item, exp.Alias):
            continue
        body = item.this
        if renamed and item.alias not in renamed.values():
            body = body.copy().transform(
                lambda n: (
                    exp.column(renamed[n.name])
                    if isinstance(n, exp.Column) and not n.table and n.name in renamed
                    else n
                )
            )
        text = _flag_text(body)
        if text is not None:
            out.append((item.alias, text))
    return out


def _flag_text(node: Any) -> str | None:
    """The SQL of a boolean expression a flag is set to (its condition, when written longhand as a
    CASE); None for anything that is no condition."""
    from sqlglot import exp

    written = _case_condition(node) or node
    body = written
    while isinstance(body, (exp.Paren, exp.Coalesce)):
        if isinstance(body, exp.Coalesce):
            # `COALESCE(profits >= 2, FALSE)`: the condition, a missing value read as false; the rule
            # written out later is the condition alone
            written = body.this
        body = body.this
    if isinstance(body, (exp.Predicate, exp.Connector, exp.Not)):
        return str(written.sql(dialect="duckdb"))
    return None


def _case_condition(node: Any) -> Any:
    """`CASE WHEN p THEN TRUE ELSE FALSE END` (or `THEN 1 ELSE 0`, or `IF(p, TRUE, FALSE)`, which
    sqlglot reads as the same CASE) is the flag `p` written longhand: its condition, else None."""
    from sqlglot import exp

    if isinstance(node, exp.If):
        when, default = node, node.args.get("false")
    elif isinstance(node, exp.Case) and node.this is None and len(node.args.get("ifs") or []) == 1:
        when, default = node.args["ifs"][0], node.args.get("default")
    else:
        return None

    def value(v: Any) -> str | None:
        if isinstance(v, exp.Boolean):
            return "1" if v.this else "0"
        if isinstance(v, exp.Literal) and not v.is_string and v.this in ("0", "1"):
            return str(v.this)
        return None

    if value(when.args.get("true")) != "1" or (default is not None and value(default) != "0"):
        return None
    return when.this


def _assigned(code: str, sem: CodeSemantics) -> set[str]:
    """The flags the turn itself (re)defines: a redefinition or a rollback, not a use."""
    return {v.flag.lower() for v in _flag_assignments(code, sem, None)}


_PANDAS_COLUMN = re.compile(
    r"^[ \t]*[A-Za-z_]\w*\[\s*([\"'])(?P<name>\w+)\1\s*\]\s*=(?!=)\s*(?P<expr>[^\n]+?)\s*$", re.M
)


def _derived(code: str, sem: CodeSemantics) -> dict[str, tuple[tuple[str, str | float], ...]]:
    """Columns the code computes by arithmetic on two or more columns (`HomeGoals + AwayGoals AS total`,
    `df["total"] = df["a"] + df["b"]`, `minutes * 1.0 / (t1 + t2) AS per_txn`): name -> the
    expression's shape. A comparison is a flag, not one."""
    exprs: list[tuple[str, str]] = []
    for sel in sem.selections:
        if sel.language != "sql" or not sel.sql:
            continue
        try:
            tree = sqlglot.parse_one(sel.sql, dialect="duckdb")
        except Exception:  # noqa: BLE001 - sqlglot raises several error types
            continue
        if isinstance(tree, exp.Select):
            exprs += [
                (a.alias, a.this.sql(dialect="duckdb")) for a in tree.expressions if isinstance(a, exp.Alias)
            ]
    exprs += [(m.group("name"), m.group("expr")) for m in _PANDAS_COLUMN.finditer(code)]
    out: dict[str, tuple[tuple[str, str | float], ...]] = {}
    for name, text in exprs:
        shape = tuple((t.kind, t.value) for t in tokens(text))
        ops = {v for k, v in shape if k == "op"}
        if (
            sum(k == "col" for k, _ in shape) >= 2
            and ops
            and ops <= {"+", "-", "*", "/"}
            and all(k in ("col", "op", "num") for k, _ in shape)
        ):  # a constant in the arithmetic (`minutes * 1.0 / (t1 + t2) AS per_txn`) is part of it
            out[name.lower()] = shape
    return out


def _on_derived(
    shape: tuple[tuple[str, str | float], ...], derived: dict[str, tuple[tuple[str, str | float], ...]]
) -> list[tuple[tuple[str, str | float], ...]]:
    """The rule's shape with a computed column's expression in it replaced by that column."""
    out = []
    for name, expr in derived.items():
        n = len(expr)
        for i in range(len(shape) - n + 1):
            if shape[i : i + n] == expr:
                out.append((*shape[:i], ("col", name), *shape[i + n :]))
    return out


def _find(shape: tuple[tuple[str, str | float], ...], code_tokens: list[Token]) -> list[tuple[int, int]]:
    n = len(shape)
    hits = []
    for i in range(len(code_tokens) - n + 1):
        if all(
            code_tokens[i + j].kind == k and code_tokens[i + j].value == v for j, (k, v) in enumerate(shape)
        ):
            hits.append((i, i + n))
    return hits


def _closed(code: str, start: int, end: int) -> str:
    """code[start:end], with the closing parentheses of a comparison method it opens
    (`wage.ge(2.0` takes its `)`) when they follow directly."""
    text = code[start:end]
    while text.count("(") > text.count(")") and code[start + len(text) :].lstrip().startswith(")"):
        rest = code[start + len(text) :]
        text += rest[: len(rest) - len(rest.lstrip()) + 1]
    return text


def _compares(code: str, start: int, end: int, flag: str) -> bool:
    """The statement holding code[start:end] also reads the flag itself (`murder >= 6 AND NOT
    high_crime`): it sets the two versions side by side on purpose. An unparsable cell: True."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return True
    offsets = [0]
    for line in code.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    for node in tree.body:
        lo = offsets[node.lineno - 1] + node.col_offset
        hi = offsets[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0)
        if lo <= start and end <= hi:
            rest = code[lo:start] + " " + code[end:hi]
            return any(t.kind == "col" and t.value == flag.lower() for t in tokens(rest))
    return False


def names_term(flag: str, question: str) -> str | None:
    """The question's words naming the flag: each part of its name (3+ letters) starts a word, in
    order and within a few words of each other ("high-inflation quarters" for `high_infl`)."""
    parts = [p for p in re.split(r"[_\W]+", flag.lower()) if len(p) >= 3]
    if not parts:
        return None
    words = list(re.finditer(r"[A-Za-z]+", question))

    def names(word: str, part: str) -> bool:  # "drinking" names `drinker`: the same stem
        word = word.lower()
        return word.startswith(part) or (len(_stem(part)) >= 4 and _stem(word) == _stem(part))

    for i, w in enumerate(words):
        if not names(w.group(0), parts[0]):
            continue
        j, found = i, [w]
        for part in parts[1:]:
            nxt = next(
                (k for k in range(j + 1, min(j + 3, len(words))) if names(words[k].group(0), part)),
                None,
            )
            if nxt is None:
                break
            j, found = nxt, [*found, words[nxt]]
        else:
            return question[found[0].start() : found[-1].end()]
    return None


def _stem(word: str) -> str:
    """The extractor's stem, an agent noun's "-er" taken off first ("drinking", "drinker" -> drink)."""
    low = word.lower()
    return extract.stem(low[:-2] if low.endswith("er") and len(low) >= 6 else low)


# the term a definition gives its rows: "a husband is a high earner if his income tops ...",
# "earnings above $40,000 make someone a top earner.", "... is what the field team calls heavily
# infested.", "... I'll call short-lived."
_TERM = r"(?P<term>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2}?)"
_DEFINED_TERMS = [
    re.compile(rf"\b(?:is|are|counts?\s+as|count\s+as)\s+(?:an?\s+)?{_TERM}\s+(?:if|when|whenever)\b", re.I),
    re.compile(
        rf"\bmakes?\s+(?:someone|somebody|something|it|them|(?:an?|the)\s+[a-z]+)\s+(?:an?\s+)?{_TERM}\s*[.;:]",
        re.I,
    ),
    re.compile(rf"\bcalls?\s+(?:it\s+|them\s+)?{_TERM}\s*[.;:]", re.I),
]


class FlagHistory:
    """The versions of every flag column the run's committed cells defined, oldest first."""

    def __init__(self) -> None:
        # by flag name: a flag carried to a derived frame (`kept` from `sun`) is still the one flag
        self.versions: dict[str, list[Version]] = {}
        # the terms the turns that defined a flag called it by ("a high earner" for `big_earner`)
        self.terms: dict[str, list[str]] = {}
        # the numbers the turn that recorded a version stated ("80 or older (960 months or more)")
        self.stated_with: dict[Version, set[float]] = {}
        # columns the committed cells computed from others (`HomeGoals + AwayGoals AS total`): by name,
        # the expression's shape, so a replaced rule written on the column is found too (`total >= 5`)
        self.derived: dict[str, tuple[tuple[str, str | float], ...]] = {}

    def redefined_at(self, flag: str) -> int | None:
        """The turn of a flag's version in force when an earlier turn gave it another rule; None for
        a flag defined once (or always the same way)."""
        versions = self.versions.get(flag.lower(), [])
        if len({v.shape for v in versions}) < 2 or versions[-1].shape == versions[0].shape:
            return None
        return versions[-1].turn

    def record(self, turn: int | None, code: str, sem: CodeSemantics, question: str = "") -> None:
        assigned = []
        for v in _flag_assignments(code, sem, turn):
            assigned.append(v.flag.lower())
            self.versions.setdefault(v.flag.lower(), []).append(v)
            self.stated_with[v] = _numbers(question)
        self.derived.update(_derived(code, sem))
        defined = {m.group("term").lower() for p in _DEFINED_TERMS for m in p.finditer(question)}
        # a turn that (re)defines one flag and gives one term: the flag's term, at its first
        # definition or at a redefinition ("a chick is heavily infested when ...")
        if len(set(assigned)) == 1 and len(defined) == 1:
            said = self.terms.setdefault(assigned[0], [])
            term = defined.pop()
            if term not in said:
                said.append(term)

    def term_of(self, flag: str, question: str) -> str | None:
        """The question's words naming the flag: its own name's, or a term its definitions used."""
        term = names_term(flag, question)
        for said in self.terms.get(flag.lower(), []) if term is None else []:
            words = r"\s+".join(re.escape(w) for w in said.split())
            m = re.search(rf"\b{words}s?\b", question, re.IGNORECASE)
            if m is not None:
                term = m.group(0)
                break
        if term is None:
            term = self._head_term(flag, question)
        return term

    def _head_term(self, flag: str, question: str) -> str | None:
        """The flag named by the last part of its name alone ("patients with a signal" for
        `alt_signal`), when that part is a word of 4+ letters and no other recorded flag's name ends
        with it."""
        parts = [p for p in re.split(r"[_\W]+", flag.lower()) if p]
        if len(parts) < 2 or len(parts[-1]) < 4 or not parts[-1].isalpha():
            return None
        head = parts[-1]
        if any(other != flag.lower() and re.split(r"[_\W]+", other)[-1] == head for other in self.versions):
            return None
        m = re.search(rf"\b{re.escape(head)}s?\b", question, re.IGNORECASE)
        return m.group(0) if m else None

    def restated(
        self, question: str, code: str, sem: CodeSemantics, described: frozenset[str] = frozenset()
    ) -> list[Restatement]:
        if not self.versions:
            return []
        code_tokens = tokens(code)
        own = _assigned(code, sem)  # parsed once per turn, not once per flag
        out: list[Restatement] = []
        for key, versions in self.versions.items():
            current = versions[-1]
            if (
                len(versions) < 2
                or key in own
                or re.search(rf"\[\s*[\"']{re.escape(current.flag)}[\"']\s*\]\s*=(?!=)", code)
            ):
                continue
            term = self.term_of(current.flag, question)
            if term is None or _find(current.shape, code_tokens):
                continue  # the flag is not named, or its rule in force is written out too
            if _points_earlier(_TIE_BREAK.sub(" ", _AGE.sub(" ", question.replace(term, " "))), described):
                continue  # the question points at an earlier version (the flag's own name aside: `older`)
            numbers = _numbers(question)
            for old in reversed(versions[:-1]):
                shape = old.shape
                if shape == current.shape or not any(k == "col" for k, _ in shape):
                    continue
                if any(k == "num" and v in numbers for k, v in shape) and not _bound_elsewhere(
                    question, shape
                ):
                    continue  # the question states the replaced rule's number: that rule is asked for
                # the rule as written, or on a column computed from its expression (`total >= 5`)
                found = [
                    h
                    for form in [shape, *_on_derived(shape, self.derived)]
                    if (h := _find(form, code_tokens))
                ]
                hits = found[0] if len(found) == 1 else []
                if len(hits) != 1:
                    continue  # not written out, or in several places: which one answers is not known
                first, last = code_tokens[hits[0][0]], code_tokens[hits[0][1] - 1]
                before = _closed(code, first.start, last.end)
                if not balanced(before):
                    continue
                # `adults.assign(heavy=adults["spend"] >= 300)`: the old rule put in the flag's place
                # for the statement, whatever the statement then reads as `heavy`
                assigned = re.search(
                    rf"\bassign\([^()]*?\b{re.escape(current.flag)}\s*=\s*(?:lambda\s+\w+\s*:\s*)?$",
                    code[: first.start],
                )
                if not assigned and _compares(code, first.start, last.end, current.flag):
                    continue
                head = next(t for t in code_tokens[hits[0][0] : hits[0][1]] if t.kind == "col")
                if head.pandas:
                    after = f"{head.prefix}[{current.flag!r}]"
                else:
                    after = f"{head.prefix}.{current.flag}" if head.prefix else current.flag
                out.append(Restatement(old, current, before, after, term))
                break
        return out

    def restored(self, question: str, code: str, sem: CodeSemantics) -> list[Restatement]:
        """A turn that puts an earlier rule of a flag back ("Restore the radius-based flag", "put
        the old `unhappy` rule back") and assigns the flag an expression that is none of its recorded
        versions, but written on the columns of exactly one earlier version (not the one in force):
        that version is the one to restore. The question states no number of its own (a number
        would state a new rule), and names the flag."""
        if not self.versions or not _RESTORING.search(question):
            return []
        numbers = _numbers(question)
        code_tokens = tokens(code)
        out: list[Restatement] = []
        for now in _flag_assignments(code, sem, None):
            versions = self.versions.get(now.flag.lower(), [])
            term = names_term(now.flag, question) or (now.flag if f"`{now.flag}`" in question else None)
            if len(versions) < 2 or term is None or any(now.shape == v.shape for v in versions):
                continue
            columns = {v for k, v in now.shape if k == "col"}
            earlier = [
                v
                for v in versions[:-1]
                if v.shape != versions[-1].shape and {x for k, x in v.shape if k == "col"} <= columns
            ]
            if len({v.shape for v in earlier}) != 1:
                continue
            old = earlier[-1]
            if numbers - {x for k, x in old.shape if k == "num"} - self.stated_with.get(old, set()):
                # the question states a number the earlier rule does not have, nor the turn that
                # stated it ("Restore the age-80 flag" for `ageentry >= 960`, stated as "80 or older
                # (960 months or more)")
                continue
            if not now.sql and code.count(now.text) == 1:
                before = now.text  # the assignment's own text, closing parenthesis included
            else:
                hits = _find(now.shape, code_tokens)
                if len(hits) != 1:
                    continue
                first, last = code_tokens[hits[0][0]], code_tokens[hits[0][1] - 1]
                before = _closed(code, first.start, last.end)
            after = (
                old.text
                if old.sql or old.holder == now.holder
                else _retarget(old.text, old.holder, now.holder)
            )
            if not balanced(before):
                continue
            out.append(Restatement(old, now, before, after, term))
        return out


def _bound_elsewhere(question: str, shape: tuple[tuple[str, str | float], ...]) -> bool:
    """The replaced rule is one comparison (`days > 50`) and every bound the question states on its
    number compares the other way ("lasted no more than 50 days" among the long ones): the number
    bounds another clause, it does not ask for the replaced rule."""
    if len(shape) != 3 or [k for k, _ in shape] != ["col", "op", "num"]:
        return False
    op, number = shape[1][1], shape[2][1]
    stated = [r for c in extract.clauses(question) for r in extract.comparisons(c) if r.value == number]
    mentions = _mentions(question).count(float(number))
    return bool(stated) and len(stated) == mentions and all(r.op != op for r in stated)


# the answer's scale ("as a number from 0 to 1", "between 0 and 100"): no number of a rule
_SCALE = re.compile(
    r"\b(?:from\s+|between\s+)?0\s+(?:to|and)\s+(?:1|100)\b(?!\s*(?:\.\d|%|percent))", re.IGNORECASE
)


def _mentions(question: str) -> list[float]:
    """Every number the question writes, in order, references to other turns ("As in Task 2") and the
    answer's scale ("from 0 to 1") aside."""
    text = re.sub(r"\b(?:task|turn|step)\s+\d+", " ", question.replace(",", ""), flags=re.IGNORECASE)
    text = _SCALE.sub(" ", text)
    return [float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)]


def _numbers(question: str) -> set[float]:
    """The numbers a question states, references to other turns ("As in Task 2") aside."""
    return set(_mentions(question))


def _retarget(text: str, holder: str, to: str) -> str:
    """A pandas expression on `holder` written on the frame `to` instead."""
    return re.sub(rf"(?<![\w.]){re.escape(holder)}(?=\s*\[)", to, text)


# Words that put an earlier rule back.
_RESTORING = re.compile(rf"\b(?:{'|'.join(LEXICON.restoration)})\b", re.IGNORECASE)


def describe(req: Requirement) -> str:
    return f"the flag {' '.join(req.columns)} is read as it is now defined"


def reason(req: Requirement, status: str) -> str:
    if status.startswith("restored"):
        how = {
            "restored_reversed": "its comparison direction is reversed against the earlier rule",
            "restored_threshold": "its cut-off (threshold) is not the earlier rule's",
        }.get(status, "it is none of the rules the analysis used")
        return (
            f"the rule the code puts back for '{req.term}' is not the earlier definition: {how}; "
            f"restore the earlier definition of {' '.join(req.columns)} as it was written"
        )
    return (
        f"the code writes out a rule for '{req.term}' that a later turn replaced, instead of using the "
        f"definition now in force (the flag {' '.join(req.columns)} holds it)"
    )
