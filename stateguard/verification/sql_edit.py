"""Counterfactual edits of one SELECT, for probes that re-run a query the way the task states it.

    replace_condition(sql, "wind_speed <= 13", "wind_speed >= 13")   # one WHERE/HAVING conjunct
    add_condition(sql, "arr_delay IS NOT NULL")                      # a missing conjunct
    swap_aggregate(sql, "MEDIAN(lifeExp)", "mean")                   # the statistic asked for
    set_join(sql, "inner")                                           # matched rows only
    set_order(sql, descending=True, limit=5)                         # the ranking asked for

Each returns the edited SQL, or None when the site is not there (then no probe is built). The
query as written is never changed; both versions run side by side in a forked probe.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

_FUNCS = {"mean": exp.Avg, "median": exp.Median, "sum": exp.Sum, "min": exp.Min, "max": exp.Max}


def parse_select(sql: str) -> exp.Select | None:
    """The one SELECT `sql` is, parsed (DuckDB dialect); None for anything else or a parse error."""
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None
    return tree if isinstance(tree, exp.Select) else None


def _bare(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren | exp.Not):
        node = node.this
    return node


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    return [node]


def replace_condition(sql: str, condition_text: str, predicate: str) -> str | None:
    """Replace the WHERE/HAVING conjunct whose text (NOT and parentheses aside) is `condition_text`."""
    select = parse_select(sql)
    if select is None:
        return None
    try:
        new = sqlglot.parse_one(predicate, dialect="duckdb")
    except Exception:  # noqa: BLE001
        return None
    for clause in ("where", "having"):
        node = select.args.get(clause)
        if not isinstance(node, exp.Where | exp.Having):
            continue
        for conjunct in _conjuncts(node.this):
            if (
                _bare(conjunct).sql(dialect="duckdb") == condition_text
                or conjunct.sql(dialect="duckdb") == condition_text
            ):
                if conjunct is node.this:
                    node.set("this", new)
                else:
                    conjunct.replace(new)
                return select.sql(dialect="duckdb")
    return None


def add_condition(sql: str, predicate: str) -> str | None:
    select = parse_select(sql)
    if select is None:
        return None
    try:
        return select.where(predicate, dialect="duckdb", copy=True).sql(dialect="duckdb")
    except Exception:  # noqa: BLE001
        return None


def swap_aggregate(sql: str, aggregate_text: str, function: str) -> str | None:
    select = parse_select(sql)
    target = _FUNCS.get(function)
    if select is None or target is None:
        return None
    for node in select.find_all(exp.AggFunc):
        if node.sql(dialect="duckdb") == aggregate_text:
            node.replace(target(this=node.this.copy()))
            return select.sql(dialect="duckdb")
    return None


def set_join(sql: str, how: str) -> str | None:
    select = parse_select(sql)
    if select is None or not select.args.get("joins"):
        return None
    for join in select.args["joins"]:
        join.set("side", {"inner": None, "left": "LEFT", "outer": "FULL"}.get(how))
        join.set("kind", None)
    return select.sql(dialect="duckdb")


def keep_join_side(sql: str, side: str) -> str | None:
    """The query with its one join keeping every row of one side ("left": the FROM side, "right":
    the joined one, "outer": both); None for a query with no join or several (which side a chain
    keeps is not one keyword)."""
    select = parse_select(sql)
    joins = select.args.get("joins") if select is not None else None
    if select is None or not joins or len(joins) != 1:
        return None
    joins[0].set("side", {"left": "LEFT", "right": "RIGHT", "outer": "FULL"}[side])
    joins[0].set("kind", None)
    return select.sql(dialect="duckdb")


def unfilter_kept_side(sql: str, side: str) -> str | None:
    """A one-join query whose outer join keeps `side` ("left": the FROM side) but whose WHERE then
    tests columns of the other side only (`LEFT JOIN votes v ... WHERE v.strong`), which drops the
    kept side's unmatched rows again: the query with those tests moved into the join's ON, where
    they only choose the matches. None when no such test is there (a test of `IS NULL` or through
    COALESCE holds on the unmatched rows and is left alone), or the query is not one such join."""
    select = parse_select(sql)
    joins = select.args.get("joins") if select is not None else None
    if select is None or not joins or len(joins) != 1:
        return None
    join = joins[0]
    keeps = {"left": "LEFT", "right": "RIGHT"}[side]
    if (join.args.get("side") or "").upper() not in (keeps, "FULL") or join.args.get("on") is None:
        return None
    source = select.args.get("from") or select.args.get("from_")
    if source is None:
        return None
    other = (join.this if side == "left" else source.this).alias_or_name
    where = select.args.get("where")
    if not other or not isinstance(where, exp.Where):
        return None
    moved, kept = [], []
    for conjunct in _conjuncts(where.this):
        tables = {c.table for c in conjunct.find_all(exp.Column) if c.find_ancestor(exp.Select) is select}
        # a test of `IS NULL`, or one through COALESCE (`coalesce(h.k, 0) = 0`), holds on the unmatched
        # rows too: a deliberate anti-join or count of zero, left alone
        if tables == {other} and not any(True for _ in conjunct.find_all(exp.Is, exp.Coalesce)):
            moved.append(conjunct)
        else:
            kept.append(conjunct)
    if not moved:
        return None
    on = join.args["on"]
    for conjunct in moved:
        on = exp.and_(on, conjunct.copy())
    join.set("on", on)
    if kept:
        condition = kept[0].copy()
        for conjunct in kept[1:]:
            condition = exp.and_(condition, conjunct.copy())
        where.set("this", condition)
    else:
        select.set("where", None)
    return select.sql(dialect="duckdb")


def alias_columns(sql: str, alias: str) -> set[str] | None:
    """The columns the select-list expression named `alias` reads (`CASE WHEN age < 30 ... END AS
    age_group` -> {age}); None when the query has no such alias, or it is a bare column."""
    select = parse_select(sql)
    if select is None:
        return None
    for node in select.expressions:
        if (
            isinstance(node, exp.Alias)
            and node.alias.lower() == alias.lower()
            and not isinstance(node.this, exp.Column)
        ):
            return {c.name.lower() for c in node.this.find_all(exp.Column)}
    return None


def set_group_by(sql: str, keys: list[str]) -> str | None:
    """The query grouped by `keys` (column names) instead of its own GROUP BY; None without one. An
    output that names a key as the alias of one of the old keys (`race AS marital`, grouped by race,
    where `marital` is to be the key) becomes that key's column."""
    select = parse_select(sql)
    if select is None or not isinstance(select.args.get("group"), exp.Group):
        return None
    old = {e.sql(dialect="duckdb").lower() for e in select.args["group"].expressions}
    wanted = {k.lower() for k in keys}
    try:
        for output in select.expressions:
            if (
                isinstance(output, exp.Alias)
                and output.alias.lower() in wanted
                and isinstance(output.this, exp.Column)
                and output.this.sql(dialect="duckdb").lower() in old
            ):
                output.replace(exp.column(output.alias))
        select.args["group"].set("expressions", [exp.column(k) for k in keys])
    except Exception:  # noqa: BLE001
        return None
    return select.sql(dialect="duckdb")


def set_order(sql: str, *, descending: bool | None = None, limit: int | None = None) -> str | None:
    select = parse_select(sql)
    if select is None:
        return None
    order = select.args.get("order")
    if descending is not None:
        if not isinstance(order, exp.Order) or not order.expressions:
            return None
        order.expressions[0].set("desc", descending)
    if limit is not None:
        select = select.limit(limit, copy=False)
    return select.sql(dialect="duckdb")


def without_limit(sql: str) -> str:
    """The query with its ORDER BY, LIMIT and OFFSET taken off (every group it makes, in any
    order): `sql` itself when it does not parse or has none of them."""
    select = parse_select(sql)
    if select is None or not any(select.args.get(k) for k in ("limit", "offset")):
        return sql
    for key in ("order", "limit", "offset"):
        select.set(key, None)
    return select.sql(dialect="duckdb")


def distinct_keys_sql(sql: str, keys: list[str]) -> str | None:
    """How many distinct key combinations the query's kept rows have."""
    select = parse_select(sql)
    if select is None:
        return None
    for key in ("group", "having", "order", "limit", "offset", "qualify", "distinct"):
        select.set(key, None)
    try:
        select.set("expressions", [sqlglot.parse_one(k, dialect="duckdb") for k in keys])
    except Exception:  # noqa: BLE001
        return None
    return f"SELECT COUNT(*) FROM (SELECT DISTINCT * FROM ({select.sql(dialect='duckdb')}))"
