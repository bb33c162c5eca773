"""A query grouped by a key it never reports, where that key splits the groups it does report.

    SELECT p.phase, COUNT(c.yr) AS n_years FROM phases p LEFT JOIN copper c ON ...
    GROUP BY p.phase, p.first_yr, c.decade            -- the faulty version: decade is not reported

The select list names the groups the answer is about (`p.phase`); a GROUP BY key that the select
list does not show is harmless when it follows from the reported keys (`p.first_yr`, one per
phase) and wrong when it cuts a reported group in pieces: the result then holds several rows under
one label, and an answer keyed by the label keeps one piece of each. No words are read: the
evidence is the query itself, run with and without the hidden keys (the results must differ), and
the answer gate re-running the turn that way (the reported answer must change).

Only the outermost SELECT of a statement that a reported value is computed from is read; a
grouped subquery or CTE (a two-step aggregation: count per phase and decade, then average per
phase) is left alone, with one exception: a subquery that picks the most common value of one
column (`SELECT dose FROM rel GROUP BY dose, patient ORDER BY count(*) DESC, dose LIMIT 1`). A key
it neither selects nor orders by makes it count pairs, not the column's rows (`mode_keys`); a key it
orders by (a tie-break: `GROUP BY i.infection, i.iinfct ... ORDER BY count(*) DESC, i.iinfct`) is
kept, so the re-run breaks ties as the code does.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.sql_edit import parse_select as _parse


def _key(node: exp.Expr) -> str:
    return node.sql(dialect="duckdb").lower()


def hidden_keys(sql: str) -> tuple[list[str], list[str]] | None:
    """(reported, hidden): the GROUP BY keys the select list shows (as an expression or by its
    alias), and those it does not. None for a query without both kinds, a positional or ALL key,
    or one that does not parse."""
    select = _parse(sql)
    group = select.args.get("group") if select is not None else None
    if select is None or not isinstance(group, exp.Group) or not group.expressions:
        return None
    shown: set[str] = set()
    for node in select.expressions:
        if isinstance(node, exp.Star):
            return None
        inner = node.this if isinstance(node, exp.Alias) else node
        shown.add(_key(inner))
        if isinstance(node, exp.Alias):
            shown.add(node.alias.lower())
    split = _split(group, shown)
    if split is None:
        return None
    return [k.sql(dialect="duckdb") for k in split[0]], [k.sql(dialect="duckdb") for k in split[1]]


def _split(group: exp.Group, shown: set[str]) -> tuple[list[exp.Expr], list[exp.Expr]] | None:
    """The GROUP BY keys `shown` names (as written, or a column by its name) and the others; None
    unless there are both, or for a positional or ALL key."""
    reported: list[exp.Expr] = []
    hidden: list[exp.Expr] = []
    for key in group.expressions:
        if isinstance(key, exp.Literal) or not list(key.find_all(exp.Column)):
            return None  # GROUP BY 1, GROUP BY ALL: positions, not keys
        shows = _key(key) in shown or (isinstance(key, exp.Column) and key.name.lower() in shown)
        (reported if shows else hidden).append(key)
    return (reported, hidden) if reported and hidden else None


def without_keys(sql: str, hidden: list[str]) -> str | None:
    """The query grouped by its other keys only; an ORDER BY item that is one of the dropped keys
    goes too. None when nothing is left to group by or the result does not parse."""
    select = _parse(sql)
    if select is None:
        return None
    drop = {h.lower() for h in hidden}
    group = select.args["group"]
    kept = [k for k in group.expressions if _key(k) not in drop]
    if not kept or len(kept) == len(group.expressions):
        return None
    group.set("expressions", kept)
    order = select.args.get("order")
    if isinstance(order, exp.Order):
        items = [o for o in order.expressions if _key(o.this) not in drop]
        if items:
            order.set("expressions", items)
        else:
            select.set("order", None)
    return select.sql(dialect="duckdb")


def requirement(reported: list[str], hidden: list[str]) -> Requirement:
    return Requirement(
        kind=Kind.GROUPING,
        text=f"one result row per {', '.join(reported)} (the query also groups by {', '.join(hidden)}, "
        "which it does not report)",
        source="question",
        subject=reported,
        keys=reported,
    )


def mode_keys(sql: str) -> tuple[list[str], list[str], str] | None:
    """(reported, hidden, the statement re-written): the one most-common-value subquery of `sql`
    grouped by keys it neither selects nor orders by, re-written grouped by the others. None when
    there is no such subquery, several, or the statement does not parse."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None
    found: list[tuple[exp.Select, list[exp.Expr], list[exp.Expr]]] = []
    for select in tree.find_all(exp.Select):
        if select is tree:
            continue
        group, order, limit = select.args.get("group"), select.args.get("order"), select.args.get("limit")
        if not isinstance(group, exp.Group) or not isinstance(order, exp.Order) or limit is None:
            continue
        if limit.expression is None or limit.expression.sql() != "1" or len(group.expressions) < 2:
            continue
        first = order.expressions[0] if order.expressions else None
        if first is None or not first.args.get("desc") or not isinstance(first.this, exp.Count):
            continue  # the most common value: the count, highest first, one row
        picked = [
            n
            for n in select.expressions
            if not isinstance(n.this if isinstance(n, exp.Alias) else n, exp.Count)
        ]
        if len(picked) != 1:
            continue
        shown = {_key(picked[0].this if isinstance(picked[0], exp.Alias) else picked[0])}
        shown |= {_key(o.this) for o in order.expressions[1:]}
        split = _split(group, shown)
        if split is not None:
            found.append((select, *split))
    if len(found) != 1:
        return None
    select, reported, hidden = found[0]
    names = ([k.sql(dialect="duckdb") for k in reported], [k.sql(dialect="duckdb") for k in hidden])
    select.args["group"].set("expressions", reported)
    return names[0], names[1], tree.sql(dialect="duckdb")
