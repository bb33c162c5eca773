"""A count "of those" taken on rows outside the first count's: the rows behind both counts, compared.

    "How many journals have collected more than a thousand citations, and of those, how many are
     published by a society?"

The words say only which count is taken from the other's rows. Which rows each count covers is
read from the code, not from the words:

- a SQL aggregate of a statement's select list: `count(*)`, `count(*) FILTER (WHERE c)`,
  `count_if(c)`, `sum(CASE WHEN c THEN 1 ELSE 0 END)`, `count(col)`, or one of those in a scalar
  subquery. Its rows are the statement's FROM and WHERE with that aggregate's own condition.
- a pandas `len(frame)` or `frame.shape[0]`, or the sum of a boolean mask (`int((near["x"] ==
  "yes").sum())`, `int((many & saw).sum())`). Its rows are the mask's frame, kept where the mask holds.

A probe takes both row sets from the live workspace. The reported values must be the sizes of
the two row sets, so the code read is the code that answered. It then counts the rows of the second
set that are not among the first's, as a multiset, on the columns both sets share with equal types.
Any such row means the second value counts rows the first excludes; counted on the first count's
rows, the answer would be smaller. A projection of the rows can only hide such a row, never
invent one. Anything the reading does not account for abstains: another aggregate, a grouped
statement, a value that is not a plain count.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from stateguard.inspection.code_model import CodeSemantics
from stateguard.verification import carried, extract
from stateguard.verification.code_text import unwrapped
from stateguard.verification.requirements import Requirement
from stateguard.verification.vocabulary import STOP

KIND = "subset_rows"

# "How many?", "How many are there?", "How many are they?": a count of the rows a sentence before it describes
_BARE_COUNT = re.compile(r"^\s*how\s+many(?:\s+(?:are|were)\s+(?:there|they))?\s*$", re.IGNORECASE)
# "How many are they, and how many of that number ...": a count of those rows, then one of a part of them
_COUNT_THEN_PART = re.compile(
    r"^\s*how\s+many(?:\s+(?:are|were)\s+(?:there|they))?\s*,?\s*and\s+(?P<rest>how\s+many\b.+)$",
    re.IGNORECASE | re.DOTALL,
)
_HOW_MANY = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
# "... for each label, count the working wives ..., and tell me how many of those wives are Black": a
# count of a part of the rows counted before, as the question's last part ("Give their number and how
# many of them ...", "..., and the number of those poor runs that ...")
_LAST_PART = re.compile(
    r"(?:[,;]\s*(?:(?:and|plus)\s*,?\s*)?|\s+and\s+)(?:(?:tell|show|give)\s+me\s+|say\s+)?"
    r"(?:(?:in|on|for|among|at)\s+(?=how\s+many\b))?"  # "and in how many of those did ..."
    r"(?P<rest>(?:how\s+many|the\s+(?:number|count)\s+of)\b[^,;:?.]*)[?.!]?\s*$",
    re.IGNORECASE,
)
_ASKS_NAME = re.compile(r"^\s*(?:which|what|who|whose|where|when)\b", re.IGNORECASE)
_COUNT_WORD = re.compile(r"\b(?:how\s+many|number\s+of|count)\b", re.IGNORECASE)
# where the words that say which rows a count takes end: its groups, its aside, its rule
_COUNTED_END = re.compile(r"[(,;]|\b(?:for|per|in|by|under|on|across|within|where|at|with)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z][\w-]*", re.IGNORECASE)
_COPULA = {"was", "were"}  # past forms of the copula; STOP holds "is", "are", "be"


def _counted_words(text: str) -> list[str]:
    """The stems of the words a count says its rows by ("how many budgeted films are acclaimed under
    the current rule" -> budget, film, acclaim), up to its groups, an aside or its rule."""
    cut = _COUNTED_END.search(text)
    words = _WORD.findall(text[: cut.start()] if cut else text)
    return [extract.stem(w) for w in words if w.lower() not in STOP and w.lower() not in _COPULA]


def names_counted_again(before: str, last: str) -> bool:
    """Does the last count ("how many acclaimed budgeted films are comedies") open with every word
    the count before it took its rows by ("how many budgeted films are acclaimed"), and nothing
    else, then say more? Then it counts a part of those rows. Fewer words (a count of all budgeted
    films) or another word among them says other rows: no reading."""
    counts = list(_COUNT_WORD.finditer(before))
    if not counts:
        return False
    first = set(_counted_words(before[counts[-1].end() :]))
    words = _WORD.findall(_HOW_MANY.sub("", last, count=1))
    while words and words[0].lower() in ("of", "the"):
        words = words[1:]
    taken: set[str] = set()
    for word in words:
        if extract.stem(word) not in first:  # the first word of the part's own condition
            return len(first) >= 2 and taken == first
        taken.add(extract.stem(word))
    return False  # nothing said after the first count's words


def count_of_those(question: str) -> bool:
    """Is the question a count followed by a count of a part of its rows? The forms of `carried`,
    and a sentence that describes the rows followed by a bare count ("Some people took three or more
    medicines. How many? And of those, how many also ...")."""
    pair = carried.count_pair(question)
    if pair is not None:
        # "how many of these orders ..., and how many of these orders ...": both refer to rows named
        # before the question, not the second to the first
        return carried.refers_back(pair[1]) and not carried.refers_back(pair[0])
    last = _LAST_PART.search(question)
    before = question[: last.start()] if last else ""
    if last and carried.refers_back(last.group("rest")) and before.strip():
        # what the rows before are need not be said as a count ("the long stays per procedure name, 0
        # for a name without any, and how many of those ..."): the probe holds the first reported
        # value to the size of the rows the code took, so a first value that is no count abstains;
        # a question for a name ("Which region has the most orders, and how many of those ...") asks
        # no count first
        asked = re.split(r"[?.!:]\s+", before)[-1]
        return not carried.refers_back(before) and not _ASKS_NAME.match(asked)
    if last and names_counted_again(question[: last.start()], last.group("rest")):
        return not carried.refers_back(question[: last.start()])
    parts = extract.clauses(question)
    if not parts or _HOW_MANY.search(parts[0]) or carried.refers_back(parts[0]):
        return False
    if len(parts) == 3 and _BARE_COUNT.match(parts[1]):
        second = parts[2]
    elif len(parts) == 2 and (joined := _COUNT_THEN_PART.match(parts[1])):
        second = joined.group("rest")
    else:
        return False
    return bool(_HOW_MANY.search(second) and carried.refers_back(second))


@dataclass(frozen=True)
class Rows:
    """How to take a count's rows in the probe: a SQL query of them, or a pandas expression (a
    frame, or a mask over one of the candidate frames)."""

    sql: str | None = None
    frame: str | None = None
    mask: str | None = None
    frames: tuple[str, ...] = ()
    key: str | None = None  # a per-group count's column: the frame is counted per value of it


def _condition(agg: exp.Expression) -> tuple[exp.Expression | None, str | None] | None:
    """The condition an aggregate counts its rows by (None: every row) and the alias of the table a
    `count(alias.col)` counts, or None when it is not a plain count."""
    while isinstance(agg, (exp.Alias, exp.Paren)):
        agg = agg.this
    if isinstance(agg, exp.Coalesce) and all(
        isinstance(e, exp.Literal) and e.this == "0" for e in agg.expressions
    ):
        agg = agg.this
    if isinstance(agg, exp.Filter) and isinstance(agg.expression, exp.Where):
        inner = _condition(agg.this)
        if inner is None or inner[0] is not None:
            return None
        return agg.expression.this, inner[1]
    if isinstance(agg, exp.Count) and not agg.args.get("distinct"):
        target = agg.this
        if isinstance(target, exp.Star):
            return None, None
        if isinstance(target, exp.Column):
            return exp.Not(this=exp.Is(this=target.copy(), expression=exp.Null())), target.table or None
        return None
    if isinstance(agg, exp.CountIf):
        return agg.this, None
    if isinstance(agg, exp.Sum):
        body = agg.this
        while isinstance(body, exp.Paren):
            body = body.this
        if isinstance(body, exp.Case) and len(body.args.get("ifs") or []) == 1:
            when = body.args["ifs"][0]
            other = body.args.get("default")
            if _is_number(when.args.get("true"), 1) and (other is None or _is_number(other, 0)):
                return when.this, None
        if isinstance(body, exp.Cast) and body.to.is_type("int", "bigint", "integer", "smallint", "tinyint"):
            return body.this, None
        if isinstance(body, exp.Column):
            # `sum(censor)` of a 0/1 column counts its rows at 1 (the probe holds the reported value to
            # the rows' number, so a column with other values abstains)
            return exp.EQ(
                this=exp.Cast(this=body.copy(), to=exp.DataType.build("int")),
                expression=exp.Literal.number(1),
            ), None
    return None


def _is_number(node: exp.Expression | None, value: int) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this == str(value)


def _select(sql: str, grouped: bool) -> exp.Select | None:
    """The statement, when it is a SELECT this module reads: no HAVING, DISTINCT, QUALIFY or window,
    and grouped exactly when the caller adds up per-group counts."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None
    if not isinstance(tree, exp.Select) or not tree.expressions:
        return None
    if any(tree.args.get(k) for k in ("having", "distinct", "qualify")) or tree.find(exp.Window):
        return None
    return tree if bool(tree.args.get("group")) == grouped else None


def _bare(node: exp.Expression) -> exp.Expression:
    while isinstance(node, (exp.Alias, exp.Paren)):
        node = node.this
    return node


def _aggregate_rows(tree: exp.Select, output: exp.Expression, grouped: bool) -> str | None:
    """A query of the rows one count of the statement counts (a scalar subquery's own rows)."""
    output = _bare(output)
    if isinstance(output, exp.Subquery) and not grouped:
        inner = output.this
        if not isinstance(inner, exp.Select) or len(inner.expressions) != 1:
            return None
        if inner.args.get("with_") is None and tree.args.get("with_") is not None:
            inner = inner.copy()
            inner.set("with_", tree.args["with_"].copy())
        return sql_rows(inner.sql(dialect="duckdb"), 0)
    found = _condition(output)
    if found is None or tree.args.get("from_") is None:
        return None
    condition, alias = found
    if alias is not None:
        return _joined_table_rows(tree, alias, condition)
    rows = tree.copy()
    for key in ("group", "order", "limit", "offset"):
        rows.set(key, None)
    rows.set(
        "expressions", [exp.Column(this=exp.Star(), table=exp.to_identifier(alias)) if alias else exp.Star()]
    )
    if condition is not None:
        rows = rows.where(condition.copy(), copy=False)
    return rows.sql(dialect="duckdb")


def _own_terms(node: exp.Expr | None, alias: str) -> list[exp.Expr] | None:
    """The AND-ed terms of a condition that read only the table `alias`; None when a term reads it
    together with another table in any other way than the join's key equalities."""
    if node is None:
        return []
    terms: list[exp.Expr] = list(node.flatten()) if isinstance(node, exp.And) else [node]
    out: list[exp.Expr] = []
    for term in terms:
        tables = {c.table for c in term.find_all(exp.Column)}
        if tables == {alias}:
            out.append(term)
        elif alias in tables and not (
            isinstance(term, exp.EQ)
            and isinstance(term.this, exp.Column)
            and isinstance(term.expression, exp.Column)
        ):
            return None
    return out


def _joined_table_rows(tree: exp.Select, alias: str, counted: exp.Expression | None) -> str | None:
    """The rows a `count(alias.col)` counts of a table joined to a list (`FROM regions r LEFT JOIN intl i
    ON i.country = r.country AND i.star`, or a subquery joined so): the table's own rows that meet the
    join's and the WHERE's conditions on it alone, the key equalities with the list left out (what the
    list keeps is checked by the caller's sum of the per-group counts)."""
    for join in tree.args.get("joins") or []:
        table = join.this
        if not isinstance(table, (exp.Table, exp.Subquery)) or table.alias_or_name != alias:
            continue
        on = _own_terms(join.args.get("on"), alias)
        where = tree.args.get("where")
        kept = _own_terms(where.this if where is not None else None, alias)
        if on is None or kept is None:
            return None
        rows = exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(alias))).from_(table.copy())
        for term in [*on, *kept, *([counted] if counted is not None else [])]:
            rows = rows.where(term.copy(), copy=False)
        with_ = tree.args.get("with_")
        if with_ is not None:
            rows.set("with_", with_.copy())
        return rows.sql(dialect="duckdb")
    return None


def sql_rows(sql: str, position: int, grouped: bool = False) -> str | None:
    """A query of the rows the statement's `position`-th output counts, or None when that output
    is not a plain count of an ungrouped statement (`grouped`: of a statement grouped by its other
    outputs, whose counts the caller adds up)."""
    tree = _select(sql, grouped)
    if tree is None or not -len(tree.expressions) <= position < len(tree.expressions):
        return None
    return _aggregate_rows(tree, tree.expressions[position], grouped)


def _ratio(node: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """A share written as a ratio of two counts (`100.0 * count_if(x) / count(*)`, rounded or not):
    its numerator's and denominator's counts."""
    node = _bare(node)
    if isinstance(node, exp.Round):
        node = _bare(node.this)
    if not isinstance(node, exp.Div):
        return None
    top, bottom = _bare(node.this), _bare(node.expression)
    if isinstance(top, exp.Mul):
        left, right = _bare(top.this), _bare(top.expression)
        scale = [e for e in (left, right) if isinstance(e, exp.Literal) and not e.is_string]
        if len(scale) != 1 or float(scale[0].this) != 100:
            return None
        top = right if scale[0] is left else left
    if isinstance(bottom, exp.Nullif) and _is_number(bottom.expression, 0):
        bottom = _bare(bottom.this)
    return top, bottom


def sql_share_rows(sql: str, position: int) -> tuple[str, str] | None:
    """Queries of the rows a share's numerator counts and of those its denominator counts."""
    tree = _select(sql, False)
    if tree is None or not 0 <= position < len(tree.expressions):
        return None
    parts = _ratio(tree.expressions[position])
    if parts is None:
        return None
    top, bottom = (_aggregate_rows(tree, part, False) for part in parts)
    return (top, bottom) if top and bottom else None


def _joined_counts(sql: str) -> str | None:
    """The rows behind a per-group count that a statement takes from a grouped subquery it joins
    (`SELECT e.label, coalesce(h.n, 0) FROM codes e LEFT JOIN (SELECT g, count(*) AS n FROM t WHERE
    x GROUP BY g) h ON ...`): the subquery's rows, before grouping."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("group") or not tree.expressions:
        return None
    output = tree.expressions[-1]
    while isinstance(output, (exp.Alias, exp.Paren)) or (
        isinstance(output, exp.Coalesce) and all(_is_number(e, 0) for e in output.expressions)
    ):
        output = output.this
    if not isinstance(output, exp.Column) or not output.table:
        return None
    for sub in tree.find_all(exp.Subquery):
        inner = sub.this
        if sub.alias_or_name != output.table or not isinstance(inner, exp.Select):
            continue
        names = [e.alias_or_name for e in inner.expressions]
        if names.count(output.name) == 1:
            return sql_rows(inner.sql(dialect="duckdb"), names.index(output.name), grouped=True)
    return None


@dataclass(frozen=True)
class _Fetched:
    sql: str
    index: int | None  # the output a name holds; None: the whole row (or every row)
    every: bool = False  # fetchall: every row of a grouped statement


@functools.lru_cache(maxsize=32)  # read once per turn's code, for every field and share of its answer
def _fetched(code: str) -> dict[str, _Fetched]:
    """Names bound to a SQL statement's fetched rows: `a, b = con.execute(SQL).fetchone()` binds a to
    output 0 and b to output 1; `a = con.execute(SQL).fetchone()[0]` binds a to output 0;
    `row = con.execute(SQL).fetchone()` binds the row; `rows = con.execute(SQL).fetchall()` binds
    every row. Only a literal SQL string is read."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    out: dict[str, _Fetched] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        value: ast.expr = node.value
        index: int | None = None
        if isinstance(value, ast.Subscript):
            taken = value.slice
            if not (isinstance(taken, ast.Constant) and isinstance(taken.value, int)):
                continue
            value, index = value.value, taken.value
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("fetchone", "fetchall")
            and isinstance(value.func.value, ast.Call)
            and isinstance(value.func.value.func, ast.Attribute)
            and value.func.value.func.attr == "execute"
            and value.func.value.args
            and isinstance(value.func.value.args[0], ast.Constant)
            and isinstance(value.func.value.args[0].value, str)
        ):
            continue
        sql, every = value.func.value.args[0].value, value.func.attr == "fetchall"
        target = node.targets[0]
        if isinstance(target, ast.Name) and not (every and index is not None):
            out[target.id] = _Fetched(sql, index, every)
        elif isinstance(target, ast.Tuple) and index is None and not every:
            for k, elt in enumerate(target.elts):
                if isinstance(elt, ast.Name):
                    out[elt.id] = _Fetched(sql, k)
    return out


def _grouped_frame(code: str) -> tuple[str, str | None] | None:
    """The frame of the code's one count per group (`x.groupby("g").size()`, `x["g"].value_counts()`),
    as source text, with the grouping column when it is one column named by a literal; None when
    there is no such count or more than one."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or node.args:
            continue
        receiver = node.func.value
        if (
            node.func.attr == "size"
            and isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Attribute)
            and receiver.func.attr == "groupby"
        ):
            by = receiver.args[0] if len(receiver.args) == 1 and not receiver.keywords else None
            key = by.value if isinstance(by, ast.Constant) and isinstance(by.value, str) else None
            found.append((ast.unparse(receiver.func.value), key))
        elif node.func.attr == "value_counts" and not node.keywords and isinstance(receiver, ast.Subscript):
            found.append(_column_of_rows(receiver))
    return found[0] if len(found) == 1 else None


def _column_of_rows(taken: ast.Subscript) -> tuple[str, str | None]:
    """The rows and the column of a column taken from a frame: `x["g"]` is x's rows; `x.loc[m, "g"]`
    the rows of x where m holds. The column is None unless one is named by a literal."""
    frame, part = taken.value, taken.slice
    if (
        isinstance(frame, ast.Attribute)
        and frame.attr == "loc"
        and isinstance(part, ast.Tuple)
        and len(part.elts) == 2
    ):
        rows, column = part.elts
        key = column.value if isinstance(column, ast.Constant) and isinstance(column.value, str) else None
        return f"{ast.unparse(frame)}[{ast.unparse(rows)}]", key
    key = part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else None
    return ast.unparse(frame), key


_LEN = re.compile(r"^\s*(?:len\(\s*(?P<a>\w+)\s*\)|(?P<b>\w+)\.shape\[0\])\s*$")
_SUM = re.compile(r"^\s*(?P<mask>.+?)\s*\.sum\(\)\s*$", re.DOTALL)
_FRAME_READ = re.compile(r"(?<![\w.])(\w+)\s*(?:\[|\.(?:loc|eq|ne|ge|le|gt|lt|isin|between)\b)")
_NAME = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?![\w'\"])")


def field_rows(text: str, sem: CodeSemantics, code: str) -> Rows | None:
    """How to take the rows behind a reported field whose value is `text` (its source in the code)."""
    text = unwrapped(text)
    fetched = _fetched(code)
    if (m := re.fullmatch(r"dict\((\w+)\)", text)) and (got := fetched.get(m.group(1))) and got.every:
        # a count per group, reported as a mapping: its rows are those of every group
        query = sql_rows(got.sql, -1, grouped=True) or _joined_counts(got.sql)
        return Rows(sql=query) if query else None
    if (
        (m := re.fullmatch(r"(\w+)(?:\[(\d)\])?", text))
        and (got := fetched.get(m.group(1)))
        and not got.every
    ):
        index = int(m.group(2)) if m.group(2) is not None else None
        if (got.index is None) == (index is None):  # a name for one output, or a row subscripted once
            return None
        query = sql_rows(got.sql, got.index if got.index is not None else index or 0)
        return Rows(sql=query) if query else None
    if text.startswith("dict(zip(") and (grouped := _grouped_frame(code)):
        # a count per label written out from a merged table: the rows of the one grouped count
        return Rows(frame=grouped[0], key=grouped[1])
    if m := _LEN.match(text):
        return Rows(frame=m.group("a") or m.group("b"))
    if m := _SUM.match(text):
        mask = m.group("mask").strip()
        frames = list(dict.fromkeys(_FRAME_READ.findall(mask)))
        for name in _NAME.findall(mask):
            sel = sem.for_target(name)
            if sel is not None and sel.is_mask:
                frames += [f for c in sel.conditions for f in _FRAME_READ.findall(c.lhs or c.text)]
        frames = list(dict.fromkeys(frames))
        return Rows(mask=mask, frames=tuple(frames)) if frames else None
    return None


def share_rows(text: str, sem: CodeSemantics, code: str) -> tuple[Rows, Rows] | None:
    """The rows a reported share's numerator counts and those its denominator counts: a pandas
    ratio of two counts (`100 * (f["a"] & g).sum() / g.sum()`, `part.sum() / len(whole)`), or a SQL
    output that divides one count by another."""
    text = unwrapped(text)
    if (m := re.fullmatch(r"(\w+)(?:\[(\d)\])?", text)) and (got := _fetched(code).get(m.group(1))):
        index = int(m.group(2)) if m.group(2) is not None else None
        if got.every or (got.index is None) == (index is None):
            return None
        found = sql_share_rows(got.sql, got.index if got.index is not None else index or 0)
        return (Rows(sql=found[0]), Rows(sql=found[1])) if found else None
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    while (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("round", "float")
    ):
        if not node.args:
            return None
        node = node.args[0]
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return None
    top, bottom = node.left, node.right
    if isinstance(top, ast.BinOp) and isinstance(top.op, ast.Mult):
        scale = [e for e in (top.left, top.right) if isinstance(e, ast.Constant) and e.value in (100, 100.0)]
        if len(scale) != 1:
            return None
        top = top.right if scale[0] is top.left else top.left
    part = field_rows(ast.unparse(top), sem, code)
    whole = field_rows(ast.unparse(bottom), sem, code)
    return (part, whole) if part and whole else None


def _take(rows: Rows, con: str | None) -> str | None:
    """Python that evaluates to a DataFrame of the rows."""
    if rows.sql is not None:
        return f"{con}.execute({rows.sql!r}).df()" if con else None
    if rows.frame is not None:
        return rows.frame
    return f"_rows_of_mask(({rows.mask}), [{', '.join(repr(f) for f in rows.frames)}])"


PROBE = "subset_rows"

_HELPERS = """
import pandas as _pd
from collections import Counter as _Counter
def _rows_of_mask(_m, _names):
    _m = _pd.Series(_m)
    _kept = _m.index[_m.fillna(False).astype(bool)]
    for _n in _names:
        _f = globals().get(_n)
        if isinstance(_f, _pd.DataFrame) and _f.index.is_unique and _m.index.isin(_f.index).all():
            return _f.loc[_kept]
    raise LookupError('no frame holds the rows of the mask')
def _size(_x):
    if isinstance(_x, dict):
        _k = [_size(_y) for _y in _x.values()]
        return None if None in _k else sum(_k)
    if isinstance(_x, bool) or _x is None:
        return None
    try:
        return int(_x) if float(_x).is_integer() else None
    except (TypeError, ValueError):
        return None
def _counts_fit(_x, _rows, _key):
    if not isinstance(_x, dict) or _key not in _rows.columns:
        return False
    _n = [_size(_y) for _y in _x.values()]
    if None in _n or not any(_n):
        return False
    _have = _Counter(_rows.groupby(_key).size().tolist())
    return not (_Counter(_k for _k in _n if _k) - _have)
def _share_is(_r, _part, _whole):
    if _whole == 0 or isinstance(_r, bool) or not isinstance(_r, (int, float)):
        return False
    return any(abs(float(_r) - _k * _part / _whole) <= 0.0051 for _k in (100, 1))
def _outside(_inner, _outer):
    _inner = _inner.loc[:, ~_inner.columns.duplicated()]
    _outer = _outer.loc[:, ~_outer.columns.duplicated()]
    _cols = [c for c in _inner.columns if c in _outer.columns and _inner[c].dtype == _outer[c].dtype]
    if not _cols:
        return None
    _ho = _Counter(_pd.util.hash_pandas_object(_outer[_cols], index=False).tolist())
    _hi = _Counter(_pd.util.hash_pandas_object(_inner[_cols], index=False).tolist())
    return sum(max(0, _n - _ho.get(_h, 0)) for _h, _n in _hi.items())
"""


def _compare(inner: Rows, outer: Rows, con: str | None, bound: str) -> str | None:
    """A snippet: violated when `bound` holds (the reported values are these row sets' sizes) and the
    inner set holds rows the outer does not, as a multiset on the columns both share with equal types.
    None of the inner rows among the outer's is another set of rows (the same countries in another
    year), not a part of it: no finding."""
    take_in, take_out = _take(inner, con), _take(outer, con)
    if take_in is None or take_out is None:
        return None
    return (
        _HELPERS
        + f"""
_inner = {take_in}
_outer = {take_out}
_bound = {bound}
_out = _outside(_inner, _outer) if _bound else None
_v = bool(_out) and _out < len(_inner)
_o = {{'outer_rows': int(len(_outer)), 'inner_rows': int(len(_inner)), 'inner_rows_outside': _out,
      'reported_values_are_these_sizes': bool(_bound)}}
"""
    ).strip()


def probe(report: str, first: str, second: str, rows1: Rows, rows2: Rows, con: str | None) -> str | None:
    """A count "of those": the second count's rows (inner) must be among the first's (outer). A first
    count per group of a listed codebook is held to the outer rows' group sizes instead of their
    number: each non-zero count it reports is the size of a different group (a list may leave a
    group out)."""
    first_is = (
        f"_counts_fit({report}[{first!r}], _outer, {rows1.key!r})"
        if rows1.key is not None
        else f"_size({report}[{first!r}]) == len(_outer)"
    )
    bound = f"{first_is} and _size({report}[{second!r}]) == len(_inner)"
    return _compare(rows2, rows1, con, bound)


def share_probe(report: str, field: str, part: Rows, whole: Rows, con: str | None) -> str | None:
    """A share of a group: its numerator's rows (inner) must be among its denominator's (outer); the
    reported share is the ratio of the two sizes, as a percentage or a fraction, to two decimals."""
    return _compare(part, whole, con, f"_share_is({report}[{field!r}], len(_inner), len(_outer))")


def requirement(first: str, second: str | None = None) -> Requirement:
    """Two fields: the second count is of the first one's rows; one field: a share's part is of its whole."""
    if second is None:
        return Requirement(
            kind=KIND,
            text=f"the rows counted in the numerator of {first} are among its denominator's",
            fields=[first],
        )
    return Requirement(
        kind=KIND,
        text=f"the rows counted for {second} are among those counted for {first}",
        fields=[first, second],
    )


def describe(req: Requirement) -> str:
    return req.text


def reason(req: Requirement, status: str) -> str:
    if len(req.fields) == 1:
        return (
            f"the share '{req.fields[0]}' counts rows in its numerator that its denominator leaves out; take the "
            f"part from the rows of the whole"
        )
    first, second = req.fields
    return (
        f"'{second}' is asked of the rows counted for '{first}', but it counts rows that the filter of "
        f"'{first}' excludes; count it on the first count's rows"
    )
