"""Counterfactual interventions on one stage's SQL (paper B.2).

Each intervention perturbs ONE localized assumption θ -> θ' by rewriting exactly one subtree of
the stage's sqlglot AST; every other part of the SQL is regenerated unchanged, so the output is
byte-identical to the normalized input (`normalize_sql`) outside the rewritten subtree.

Kinds and the operations that realize them:
* numeric_parameter:    a numeric literal of a WHERE/HAVING condition, or the LIMIT count;
* formula_semantics:    AVG -> MEDIAN, SUM -> AVG, or swap a ratio's numerator and denominator;
* comparison_direction: `>` <-> `<`, `>=` <-> `<=` (operands stay in place);
* category_scope:       add one item to, or remove one item from, an IN (...) list;
* filter_condition:     drop one conjunct of a WHERE AND-chain, or negate one.

Every operation returns `(new_sql, InterventionRecord)` and raises `InterventionNotApplicable`
(a ValueError) with the reason when the SQL has no such site. Sites are numbered by
`occurrence` in pre-order over declared argument order (close to source order), statement by
statement.

Whether an applied intervention matters is judged from stage fingerprints (`is_genuine`): it is
genuine when some downstream stage's fingerprint changes, benign otherwise.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import partial
from typing import Any

from sqlglot import exp

from stateguard.artifacts.corpus_records import InterventionKind, InterventionRecord
from synthesis.sql_deps import parse_statements

__all__ = [
    "InterventionKind",
    "InterventionNotApplicable",
    "InterventionRecord",
    "add_in_item",
    "avg_to_median",
    "candidate_interventions",
    "changed_subtree",
    "drop_conjunct",
    "flip_comparison",
    "is_genuine",
    "negate_conjunct",
    "node_at",
    "node_path",
    "normalize_sql",
    "propose_numeric_value",
    "remove_in_item",
    "set_numeric_parameter",
    "sum_to_avg",
    "swap_ratio",
]

# InterventionRecord is a field of the corpus records (stateguard.artifacts.corpus_records) and
# InterventionKind a column of the one table of mistake kinds (stateguard.artifacts.mistakes, which
# also names each kind's operations below); this module applies them and re-exports them.
Result = tuple[str, "InterventionRecord"]


class InterventionNotApplicable(ValueError):
    """The requested intervention has no site in this SQL (or would change nothing)."""


# --------------------------------------------------------------------------------------------
# AST helpers


def normalize_sql(sql: str, dialect: str = "duckdb") -> str:
    """sqlglot's canonical rendering, the baseline that interventions leave byte-identical."""
    return _render(parse_statements(sql, dialect), dialect)


def _render(statements: Sequence[exp.Expr], dialect: str) -> str:
    return ";\n".join(s.sql(dialect=dialect) for s in statements)


def node_path(node: exp.Expr) -> list[str]:
    """Path from the statement root to `node`: arg keys, with `[i]` for list members."""
    parts: list[str] = []
    cur = node
    while cur.parent is not None:
        key = cur.arg_key
        assert key is not None  # every non-root node hangs under an argument of its parent
        parts.append(key if cur.index is None else f"{key}[{cur.index}]")
        cur = cur.parent
    return parts[::-1]


_STEP = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?:\[(?P<index>\d+)\])?$")


def node_at(root: exp.Expr, path: Sequence[str]) -> exp.Expr:
    """The node at `path` (as produced by `node_path`); KeyError when there is none."""
    cur: Any = root
    for step in path:
        match = _STEP.match(step)
        if match is None or not isinstance(cur, exp.Expr):
            raise KeyError(f"bad path step {step!r} in {list(path)}")
        cur = cur.args.get(match.group("key"))
        if match.group("index") is not None:
            if not isinstance(cur, list) or int(match.group("index")) >= len(cur):
                raise KeyError(f"no list member at {step!r} in {list(path)}")
            cur = cur[int(match.group("index"))]
        if not isinstance(cur, exp.Expr):
            raise KeyError(f"no node at {step!r} in {list(path)}")
    assert isinstance(cur, exp.Expr)
    return cur


def _absent(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, list) and not value)


def _diff(a: exp.Expr, b: exp.Expr, path: list[str], out: list[list[str]]) -> None:
    if type(a) is not type(b):
        out.append(path)
        return
    found: list[list[str]] = []
    for key in dict.fromkeys([*a.args, *b.args]):
        va, vb = a.args.get(key), b.args.get(key)
        if _absent(va) and _absent(vb):
            continue
        if isinstance(va, list) and isinstance(vb, list):
            if len(va) != len(vb):
                out.append(path)
                return
            for i, (x, y) in enumerate(zip(va, vb, strict=True)):
                if isinstance(x, exp.Expr) and isinstance(y, exp.Expr):
                    _diff(x, y, [*path, f"{key}[{i}]"], found)
                elif x != y:
                    out.append(path)
                    return
        elif isinstance(va, exp.Expr) and isinstance(vb, exp.Expr):
            _diff(va, vb, [*path, key], found)
        elif va != vb:
            out.append(path)
            return
    out.extend(found)


def changed_subtree(before: exp.Expr, after: exp.Expr) -> list[str] | None:
    """Path of the smallest subtree holding every difference between two ASTs (None: equal).

    Identifiers and literals compare exactly (case included); comments are ignored.
    """
    diffs: list[list[str]] = []
    _diff(before, after, [], diffs)
    if not diffs:
        return None
    prefix = diffs[0]
    for d in diffs[1:]:
        n = 0
        while n < min(len(prefix), len(d)) and prefix[n] == d[n]:
            n += 1
        prefix = prefix[:n]
    return list(prefix)


def _default_stage(statements: Sequence[exp.Expr]) -> str | None:
    for statement in reversed(statements):
        if isinstance(statement, exp.Create):
            target = statement.this
            if isinstance(target, exp.Schema):
                target = target.this
            if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier):
                return target.name.lower()
    return None


def _walk(node: exp.Expr) -> Iterator[exp.Expr]:
    """Pre-order walk visiting arguments in their declared order (roughly source order:
    WITH, select list, FROM, joins, WHERE, GROUP BY, HAVING, ..., LIMIT), whatever order the
    parser happened to fill them in."""
    yield node
    keys = [*node.arg_types, *(k for k in node.args if k not in node.arg_types)]
    for key in keys:
        value = node.args.get(key)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, exp.Expr):
                yield from _walk(child)


def _sites(
    statements: Sequence[exp.Expr], accept: Callable[[exp.Expr], bool]
) -> Iterator[tuple[int, exp.Expr]]:
    for i, statement in enumerate(statements):
        for node in _walk(statement):
            if accept(node):
                yield i, node


def _pick(
    sql: str,
    dialect: str,
    accept: Callable[[exp.Expr], bool],
    occurrence: int,
    what: str,
) -> tuple[list[exp.Expr], int, exp.Expr]:
    statements = parse_statements(sql, dialect)
    sites = list(_sites(statements, accept))
    if not sites:
        raise InterventionNotApplicable(f"no {what} in this SQL")
    if not 0 <= occurrence < len(sites):
        raise InterventionNotApplicable(
            f"occurrence {occurrence} out of range: the SQL has {len(sites)} {what} site(s)"
        )
    i, node = sites[occurrence]
    return statements, i, node


def _apply(
    statements: list[exp.Expr],
    index: int,
    node: exp.Expr,
    replacement: exp.Expr,
    *,
    kind: InterventionKind,
    operation: str,
    description: str,
    stage: str | None,
    dialect: str,
) -> Result:
    before = node.sql(dialect=dialect)
    # The recorded path is the smallest subtree that actually differs (e.g. only the literal
    # under `-2.5` when the new value is also negative), i.e. what an AST diff will find.
    inner = changed_subtree(node, replacement)
    path = node_path(node) + (inner or [])
    if node.parent is None:
        statements[index] = replacement
    else:
        node.replace(replacement)
    after = replacement.sql(dialect=dialect)
    if before == after:
        raise InterventionNotApplicable(f"{operation} would leave `{before}` unchanged")
    record = InterventionRecord(
        kind=kind,
        operation=operation,
        stage=stage if stage is not None else _default_stage(statements),
        description=description,
        before=before,
        after=after,
        statement=index,
        path=path,
    )
    return _render(statements, dialect), record


def _context(node: exp.Expr, dialect: str) -> str:
    """The nearest enclosing predicate (or the clause) of a node, for descriptions."""
    cur: exp.Expr | None = node
    while cur is not None and not isinstance(cur, exp.Predicate | exp.Limit | exp.Where | exp.Having):
        cur = cur.parent
    return (cur or node).sql(dialect=dialect)


def _clause(node: exp.Expr) -> str:
    cur = node.parent
    while cur is not None:
        if isinstance(cur, exp.Where):
            return "WHERE"
        if isinstance(cur, exp.Having):
            return "HAVING"
        if isinstance(cur, exp.Query):
            return "query"
        cur = cur.parent
    return "statement"


# --------------------------------------------------------------------------------------------
# numeric parameter

# Nodes a threshold may sit under on its way up to WHERE/HAVING: comparisons, arithmetic,
# AND/OR/NOT, parentheses, BETWEEN. A literal under a function call, CASE, CAST or IN-list is
# not a filter parameter (IN-lists are category scope).
_PASS_THROUGH = (exp.Binary, exp.Neg, exp.Paren, exp.Not, exp.Between)


def _numeric_value(node: exp.Expr) -> Decimal | None:
    literal = node.this if isinstance(node, exp.Neg) else node
    if not isinstance(literal, exp.Literal) or literal.is_string:
        return None
    try:
        value = Decimal(str(literal.this).replace("_", ""))
    except ArithmeticError:
        return None
    return -value if isinstance(node, exp.Neg) else value


def _is_numeric_parameter(node: exp.Expr) -> bool:
    if _numeric_value(node) is None:
        return False
    if isinstance(node, exp.Literal) and isinstance(node.parent, exp.Neg):
        return False  # the Neg above it is the site
    if isinstance(node.parent, exp.Limit):
        return node.arg_key == "expression"
    cur = node.parent
    while isinstance(cur, _PASS_THROUGH):
        cur = cur.parent
    return isinstance(cur, exp.Where | exp.Having)


def _is_integer_text(node: exp.Expr) -> bool:
    literal = node.this if isinstance(node, exp.Neg) else node
    return re.fullmatch(r"[0-9_]+", str(literal.this)) is not None


def _number_node(value: int | float | Decimal) -> exp.Expr:
    if isinstance(value, bool):
        raise TypeError("a boolean is not a numeric parameter")
    text = repr(abs(value)) if isinstance(value, float) else format(abs(Decimal(value)), "f")
    literal = exp.Literal.number(text)
    return exp.Neg(this=literal) if value < 0 else literal


def set_numeric_parameter(
    sql: str,
    new_value: int | float | Decimal,
    *,
    occurrence: int = 0,
    stage: str | None = None,
    dialect: str = "duckdb",
) -> Result:
    """Replace one numeric literal of a WHERE/HAVING condition or the LIMIT count."""
    statements, i, node = _pick(sql, dialect, _is_numeric_parameter, occurrence, "numeric parameter")
    old = _numeric_value(node)
    assert old is not None
    if Decimal(str(new_value)) == old:
        raise InterventionNotApplicable(f"new value {new_value} equals the current value {old}")
    in_limit = isinstance(node.parent, exp.Limit)
    if in_limit and (int(new_value) != new_value or new_value < 0):
        raise InterventionNotApplicable(f"LIMIT needs a non-negative integer, got {new_value}")
    where = "LIMIT" if in_limit else f"{_clause(node)} condition `{_context(node, dialect)}`"
    return _apply(
        statements,
        i,
        node,
        _number_node(new_value),
        kind=InterventionKind.NUMERIC_PARAMETER,
        operation="set_limit" if in_limit else "set_threshold",
        description=f"Changes the parameter {node.sql(dialect=dialect)} of the {where} to {new_value}.",
        stage=stage,
        dialect=dialect,
    )


_FACTORS = (Decimal("0.5"), Decimal("0.75"), Decimal("1.25"), Decimal("1.5"), Decimal("2"))


def propose_numeric_value(node: exp.Expr, rng: random.Random) -> Decimal:
    """A different value of the same flavor (integer stays integer; LIMIT stays >= 1)."""
    old = _numeric_value(node)
    if old is None:
        raise InterventionNotApplicable(f"`{node.sql()}` is not a numeric literal")
    integer = _is_integer_text(node)
    if old == 0:
        new = Decimal(rng.choice((1, 5, 10))) if integer else Decimal(rng.choice(("0.5", "1.0")))
    else:
        new = old * rng.choice(_FACTORS)
        if integer:
            new = new.to_integral_value()
        else:
            places = max(1, -int(old.as_tuple().exponent))
            new = new.quantize(Decimal(1).scaleb(-(places + 1)))
    if isinstance(node.parent, exp.Limit):
        new = max(new, Decimal(1))
    if new == old:
        new = old + (1 if old >= 0 else -1)
    return new


# --------------------------------------------------------------------------------------------
# formula semantics


def _replace_aggregate(
    sql: str,
    source: type[exp.Expr],
    target: type[exp.Expr],
    operation: str,
    occurrence: int,
    stage: str | None,
    dialect: str,
) -> Result:
    statements, i, node = _pick(
        sql, dialect, lambda n: type(n) is source, occurrence, f"{source.__name__.upper()} call"
    )
    new = target(this=node.this.copy())
    return _apply(
        statements,
        i,
        node,
        new,
        kind=InterventionKind.FORMULA_SEMANTICS,
        operation=operation,
        description=(
            f"Aggregates with {target.__name__.upper()} instead of {source.__name__.upper()}: "
            f"`{node.sql(dialect=dialect)}` becomes `{new.sql(dialect=dialect)}`."
        ),
        stage=stage,
        dialect=dialect,
    )


def avg_to_median(
    sql: str, *, occurrence: int = 0, stage: str | None = None, dialect: str = "duckdb"
) -> Result:
    """AVG(x) -> MEDIAN(x) (DuckDB `median`); window and DISTINCT forms keep their wrappers."""
    return _replace_aggregate(sql, exp.Avg, exp.Median, "avg_to_median", occurrence, stage, dialect)


def sum_to_avg(sql: str, *, occurrence: int = 0, stage: str | None = None, dialect: str = "duckdb") -> Result:
    """SUM(x) -> AVG(x)."""
    return _replace_aggregate(sql, exp.Sum, exp.Avg, "sum_to_avg", occurrence, stage, dialect)


def _operand(node: exp.Expr) -> exp.Expr:
    """Wrap a compound operand in parentheses: sqlglot renders operator trees without them."""
    node = node.copy()
    if isinstance(node, exp.Binary | exp.Unary) and not isinstance(node, exp.Paren):
        return exp.Paren(this=node)
    return node


def swap_ratio(sql: str, *, occurrence: int = 0, stage: str | None = None, dialect: str = "duckdb") -> Result:
    """a / b -> b / a (compound operands are parenthesized so precedence cannot shift)."""
    statements, i, node = _pick(sql, dialect, lambda n: type(n) is exp.Div, occurrence, "ratio (a / b)")
    new = node.copy()
    new.set("this", _operand(node.expression))
    new.set("expression", _operand(node.this))
    return _apply(
        statements,
        i,
        node,
        new,
        kind=InterventionKind.FORMULA_SEMANTICS,
        operation="swap_ratio",
        description=(
            f"Inverts the ratio `{node.sql(dialect=dialect)}`: the former denominator becomes the "
            "numerator and vice versa."
        ),
        stage=stage,
        dialect=dialect,
    )


# --------------------------------------------------------------------------------------------
# comparison direction

_FLIPPED: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.GT: exp.LT,
    exp.LT: exp.GT,
    exp.GTE: exp.LTE,
    exp.LTE: exp.GTE,
}


def flip_comparison(
    sql: str, *, occurrence: int = 0, stage: str | None = None, dialect: str = "duckdb"
) -> Result:
    """`a > b` <-> `a < b` and `a >= b` <-> `a <= b`, operands left where they are."""
    statements, i, node = _pick(
        sql, dialect, lambda n: type(n) in _FLIPPED, occurrence, "ordering comparison (<, >, <=, >=)"
    )
    new = _FLIPPED[type(node)](this=node.this.copy(), expression=node.expression.copy())
    return _apply(
        statements,
        i,
        node,
        new,
        kind=InterventionKind.COMPARISON_DIRECTION,
        operation="flip_comparison",
        description=(
            f"Reverses the direction of the comparison `{node.sql(dialect=dialect)}` in the "
            f"{_clause(node)}, giving `{new.sql(dialect=dialect)}`."
        ),
        stage=stage,
        dialect=dialect,
    )


# --------------------------------------------------------------------------------------------
# category scope


def _is_in_list(node: exp.Expr) -> bool:
    return (
        isinstance(node, exp.In)
        and bool(node.expressions)
        and not any(node.args.get(k) for k in ("query", "unnest", "field"))
    )


def _item_node(value: str | int | float | Decimal) -> exp.Expr:
    if isinstance(value, str):
        return exp.Literal.string(value)
    return _number_node(value)


def add_in_item(
    sql: str,
    value: str | int | float | Decimal,
    *,
    occurrence: int = 0,
    stage: str | None = None,
    dialect: str = "duckdb",
) -> Result:
    """Append one item to an IN (...) list; the value must not already be listed."""
    statements, i, node = _pick(sql, dialect, _is_in_list, occurrence, "IN (...) list")
    item = _item_node(value)
    listed = [e.sql(dialect=dialect) for e in node.expressions]
    if item.sql(dialect=dialect) in listed:
        raise InterventionNotApplicable(f"{item.sql(dialect=dialect)} is already in the list {listed}")
    new = node.copy()
    new.set("expressions", [*(e.copy() for e in node.expressions), item])
    return _apply(
        statements,
        i,
        node,
        new,
        kind=InterventionKind.CATEGORY_SCOPE,
        operation="add_in_item",
        description=(
            f"Widens the category set of `{node.sql(dialect=dialect)}` by admitting "
            f"{item.sql(dialect=dialect)}."
        ),
        stage=stage,
        dialect=dialect,
    )


def remove_in_item(
    sql: str,
    *,
    occurrence: int = 0,
    item: int = 0,
    stage: str | None = None,
    dialect: str = "duckdb",
) -> Result:
    """Drop item number `item` from an IN (...) list that has at least two items."""
    statements, i, node = _pick(sql, dialect, _is_in_list, occurrence, "IN (...) list")
    items = list(node.expressions)
    if len(items) < 2:
        raise InterventionNotApplicable(
            f"`{node.sql(dialect=dialect)}` has a single item; removing it would leave an empty list"
        )
    if not 0 <= item < len(items):
        raise InterventionNotApplicable(f"item {item} out of range: the list has {len(items)} items")
    new = node.copy()
    new.set("expressions", [e.copy() for k, e in enumerate(items) if k != item])
    return _apply(
        statements,
        i,
        node,
        new,
        kind=InterventionKind.CATEGORY_SCOPE,
        operation="remove_in_item",
        description=(
            f"Narrows the category set of `{node.sql(dialect=dialect)}` by leaving out "
            f"{items[item].sql(dialect=dialect)}."
        ),
        stage=stage,
        dialect=dialect,
    )


# --------------------------------------------------------------------------------------------
# filter condition


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    """Members of an AND-chain (parenthesized groups count as one member)."""
    if isinstance(condition, exp.And):
        return _conjuncts(condition.this) + _conjuncts(condition.expression)
    return [condition]


def _pick_conjunct(
    sql: str, where: int, conjunct: int, dialect: str
) -> tuple[list[exp.Expr], int, exp.Expr, list[exp.Expr]]:
    statements, i, clause = _pick(sql, dialect, lambda n: isinstance(n, exp.Where), where, "WHERE clause")
    members = _conjuncts(clause.this)
    if not 0 <= conjunct < len(members):
        raise InterventionNotApplicable(
            f"conjunct {conjunct} out of range: WHERE `{clause.this.sql(dialect=dialect)}` has "
            f"{len(members)} conjunct(s)"
        )
    return statements, i, members[conjunct], members


def drop_conjunct(
    sql: str,
    *,
    where: int = 0,
    conjunct: int = 0,
    stage: str | None = None,
    dialect: str = "duckdb",
) -> Result:
    """Remove one member of a WHERE AND-chain (the chain must have at least two)."""
    statements, i, member, members = _pick_conjunct(sql, where, conjunct, dialect)
    if len(members) < 2:
        raise InterventionNotApplicable(
            f"WHERE `{member.sql(dialect=dialect)}` is a single condition; there is no AND-chain "
            "to drop a conjunct from (negate it instead)"
        )
    parent = member.parent
    assert isinstance(parent, exp.And)
    sibling = parent.expression if member.arg_key == "this" else parent.this
    return _apply(
        statements,
        i,
        parent,
        sibling.copy(),
        kind=InterventionKind.FILTER_CONDITION,
        operation="drop_conjunct",
        description=f"Stops filtering on `{member.sql(dialect=dialect)}`; the other WHERE conditions stay.",
        stage=stage,
        dialect=dialect,
    )


def negate_conjunct(
    sql: str,
    *,
    where: int = 0,
    conjunct: int = 0,
    stage: str | None = None,
    dialect: str = "duckdb",
) -> Result:
    """Negate one member of a WHERE AND-chain (`c` -> `NOT (c)`; `NOT c` -> `c`)."""
    statements, i, member, _ = _pick_conjunct(sql, where, conjunct, dialect)
    if isinstance(member, exp.Not):
        new = member.this.copy()
    else:
        inner = member.copy()
        new = exp.Not(this=inner if isinstance(inner, exp.Paren) else exp.Paren(this=inner))
    return _apply(
        statements,
        i,
        member,
        new,
        kind=InterventionKind.FILTER_CONDITION,
        operation="negate_conjunct",
        description=(
            f"Keeps the rows the WHERE condition `{member.sql(dialect=dialect)}` used to reject "
            f"(now `{new.sql(dialect=dialect)}`)."
        ),
        stage=stage,
        dialect=dialect,
    )


# --------------------------------------------------------------------------------------------
# enumeration and judgement


def candidate_interventions(
    sql: str,
    rng: random.Random | int,
    *,
    stage: str | None = None,
    category_values: Mapping[str, Sequence[str | int | float]] | None = None,
    dialect: str = "duckdb",
) -> list[Result]:
    """Every applicable single-site intervention, in a fixed order; same seed -> same list.

    Order: numeric parameters, AVG->MEDIAN, SUM->AVG, ratio swaps, comparison flips, IN-list
    removals and additions, conjunct drops and negations; within a kind, source order. The rng
    only picks new numeric values and which unlisted category to add. Additions need
    `category_values` (column name -> known values); without it only removals are proposed.
    """
    if not isinstance(rng, random.Random):
        rng = random.Random(rng)
    statements = parse_statements(sql, dialect)
    out: list[Result] = []

    def attempt(make: Callable[[], Result]) -> None:
        with contextlib.suppress(InterventionNotApplicable):
            out.append(make())

    common: dict[str, Any] = {"stage": stage, "dialect": dialect}
    for k, (_, node) in enumerate(_sites(statements, _is_numeric_parameter)):
        value = propose_numeric_value(node, rng)
        attempt(partial(set_numeric_parameter, sql, value, occurrence=k, **common))
    rewrites: list[tuple[Callable[[exp.Expr], bool], Callable[..., Result]]] = [
        (lambda n: type(n) is exp.Avg, avg_to_median),
        (lambda n: type(n) is exp.Sum, sum_to_avg),
        (lambda n: type(n) is exp.Div, swap_ratio),
        (lambda n: type(n) in _FLIPPED, flip_comparison),
    ]
    for accept, apply in rewrites:
        for k, _ in enumerate(_sites(statements, accept)):
            attempt(partial(apply, sql, occurrence=k, **common))
    known = {key.lower(): list(vals) for key, vals in (category_values or {}).items()}
    for k, (_, node) in enumerate(_sites(statements, _is_in_list)):
        if len(node.expressions) >= 2:
            for j in range(len(node.expressions)):
                attempt(partial(remove_in_item, sql, occurrence=k, item=j, **common))
        column = node.this
        if isinstance(column, exp.Column) and column.name.lower() in known:
            listed = {e.sql(dialect=dialect) for e in node.expressions}
            unlisted = [
                v for v in known[column.name.lower()] if _item_node(v).sql(dialect=dialect) not in listed
            ]
            if unlisted:
                attempt(partial(add_in_item, sql, rng.choice(unlisted), occurrence=k, **common))
    for w, (_, clause) in enumerate(_sites(statements, lambda n: isinstance(n, exp.Where))):
        members = _conjuncts(clause.this)
        if len(members) >= 2:
            for c in range(len(members)):
                attempt(partial(drop_conjunct, sql, where=w, conjunct=c, **common))
        for c in range(len(members)):
            attempt(partial(negate_conjunct, sql, where=w, conjunct=c, **common))
    return out


def is_genuine(
    before_fingerprints: Mapping[str, str] | Sequence[str],
    after_fingerprints: Mapping[str, str] | Sequence[str],
    *,
    downstream: Sequence[str] | None = None,
) -> bool:
    """True when the fingerprint of some downstream stage changed (genuine), else benign.

    Fingerprints are opaque strings, keyed by stage name (or given as equally long sequences
    in stage order). `downstream` restricts the comparison to those stages.
    """
    if isinstance(before_fingerprints, Mapping) != isinstance(after_fingerprints, Mapping):
        raise ValueError("give both fingerprint collections as mappings or both as sequences")
    if isinstance(before_fingerprints, Mapping) and isinstance(after_fingerprints, Mapping):
        before, after = dict(before_fingerprints), dict(after_fingerprints)
    else:
        if len(before_fingerprints) != len(after_fingerprints):
            raise ValueError(
                f"{len(before_fingerprints)} fingerprints before but {len(after_fingerprints)} after"
            )
        before = {str(k): v for k, v in enumerate(before_fingerprints)}
        after = {str(k): v for k, v in enumerate(after_fingerprints)}
    keys = list(before) if downstream is None else [str(d).lower() for d in downstream]
    if downstream is not None and not isinstance(before_fingerprints, Mapping):
        raise ValueError("`downstream` names stages; pass the fingerprints as mappings")
    missing = [k for k in keys if k not in before or k not in after]
    if downstream is None:
        missing += [k for k in after if k not in before]
    if missing:
        raise ValueError(f"fingerprints missing on one side for stage(s) {sorted(set(missing))}")
    return any(before[k] != after[k] for k in keys)
