"""Read SQL statements (sqlglot) into `Selection`s: conditions, aggregates, keys, joins, order.

    selections = sql_selections("CREATE TABLE t AS SELECT * FROM f WHERE NOT (x >= 3)", step=4)
    # -> one Selection: target 't', sources ['f'], condition x < 3 (kept side), sql 'SELECT ...'

Every condition is recorded with the side the statement keeps: `NOT (x >= 3)` keeps `x < 3`,
`x IS NULL` keeps missing values. Conditions joined by OR are kept as one `other` condition that
still names its columns (so a filter on a column is never mistaken for a missing one).
"""

from __future__ import annotations

from sqlglot import exp

from stateguard.inspection.code_model import MIRROR, NEGATE, Aggregate, Condition, Join, Selection
from stateguard.sql import SQLParseError, parse_statements

_OPS: dict[type[exp.Expr], str] = {
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.EQ: "==",
    exp.NEQ: "!=",
}
_AGGS: dict[type[exp.Expr], str] = {
    exp.Avg: "mean",
    exp.Median: "median",
    exp.Sum: "sum",
    exp.Count: "count",
    exp.Min: "min",
    exp.Max: "max",
    exp.Stddev: "std",
    exp.StddevSamp: "std",
    exp.StddevPop: "std",
}


def _literal(node: exp.Expr) -> float | str | None:
    neg = isinstance(node, exp.Neg)
    inner = node.this if neg else node
    if isinstance(inner, exp.Paren):
        inner = inner.this
    if not isinstance(inner, exp.Literal):
        return None
    if inner.is_string:
        return None if neg else str(inner.this)
    try:
        value = float(str(inner.this).replace("_", ""))
    except ValueError:
        return None
    return -value if neg else value


def _columns(node: exp.Expr) -> list[str]:
    return sorted({c.name for c in node.find_all(exp.Column) if c.name})


def _column(node: exp.Expr) -> str | None:
    return node.name if isinstance(node, exp.Column) and node.name else None


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return _conjuncts(node.this)
    return [node]


def condition(
    node: exp.Expr, clause: str = "where", negated: bool = False, text: str = ""
) -> list[Condition]:
    """The kept-side condition(s) of one conjunct."""
    text = text or node.sql(dialect="duckdb")
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Not):
        return condition(node.this, clause, not negated, text)
    cols = _columns(node)
    out: list[Condition] = []
    if type(node) in _OPS:
        left, right = node.this, node.expression
        op = _OPS[type(node)]
        value = _literal(right)
        if value is None and _literal(left) is not None:
            left, right, value, op = right, left, _literal(left), MIRROR[op]
        if value is not None:
            out.append(
                Condition(
                    column=_column(left),
                    op=op,
                    value=value,
                    clause=clause,
                    lhs=left.sql(dialect="duckdb"),
                    text=text,
                    columns=cols,
                )
            )
    elif isinstance(node, exp.In) and node.expressions:
        values = [v for v in (_literal(e) for e in node.expressions) if v is not None]
        out.append(
            Condition(
                column=_column(node.this),
                op="in",
                values=values,
                clause=clause,
                lhs=node.this.sql(dialect="duckdb"),
                text=text,
                columns=cols,
            )
        )
    elif isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        out.append(
            Condition(
                column=_column(node.this),
                op="isnull",
                clause=clause,
                lhs=node.this.sql(dialect="duckdb"),
                text=text,
                columns=cols,
            )
        )
    elif isinstance(node, exp.Between):
        low, high = _literal(node.args["low"]), _literal(node.args["high"])
        if negated:  # NOT BETWEEN keeps either tail: record it as opaque
            return [Condition(column=_column(node.this), op="other", clause=clause, text=text, columns=cols)]
        for op, bound in ((">=", low), ("<=", high)):
            if bound is not None:
                out.append(
                    Condition(
                        column=_column(node.this),
                        op=op,
                        value=bound,
                        clause=clause,
                        lhs=node.this.sql(dialect="duckdb"),
                        text=text,
                        columns=cols,
                    )
                )
        return out
    if not out:
        return [Condition(column=None, op="other", clause=clause, text=text, columns=cols)]
    if negated:
        out = [c.model_copy(update={"op": NEGATE[c.op]}) for c in out]
    return out


def _aggregates(select: exp.Select) -> list[Aggregate]:
    out: list[Aggregate] = []
    for position, projection in enumerate(select.expressions):
        alias = projection.alias_or_name if isinstance(projection, exp.Alias) else None
        body = projection.this if isinstance(projection, exp.Alias) else projection
        top = body
        while isinstance(top, exp.Round | exp.Cast | exp.Paren | exp.TryCast) or (
            isinstance(top, exp.Anonymous) and top.name.lower() == "round"
        ):
            top = top.this if not isinstance(top, exp.Anonymous) else top.expressions[0]
        for node in body.find_all(*_AGGS):
            window = isinstance(node.parent, exp.Window)
            inner = node.this
            if isinstance(inner, exp.Distinct):
                inner = inner.expressions[0] if inner.expressions else inner
            function = (
                "nunique"
                if isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct)
                else _AGGS[type(node)]
            )
            out.append(
                Aggregate(
                    function=function,
                    column=_column(inner) if isinstance(inner, exp.Expr) else None,
                    alias=alias,
                    standalone=node is top or (window and node.parent is top),
                    window=window,
                    text=node.sql(dialect="duckdb"),
                    position=position,
                )
            )
    return out


def _joins(select: exp.Select) -> list[Join]:
    out: list[Join] = []
    base = select.args.get("from_") or select.args.get("from")
    left = base.this.sql(dialect="duckdb") if isinstance(base, exp.From) else ""
    for join in select.args.get("joins") or []:
        side = (join.side or "").lower()
        kind = (join.kind or "").lower()
        how = {"left": "left", "right": "right", "full": "outer"}.get(
            side, "cross" if kind == "cross" else "inner"
        )
        keys = [i.name for i in join.args.get("using") or [] if isinstance(i, exp.Expr)]
        on = join.args.get("on")
        if isinstance(on, exp.Expr):
            for eq in on.find_all(exp.EQ):
                keys.extend(c for c in (_column(eq.this), _column(eq.expression)) if c and c not in keys)
        out.append(
            Join(
                how=how,
                keys=keys,
                left=left,
                right=join.this.sql(dialect="duckdb"),
                text=join.sql(dialect="duckdb"),
            )
        )
    return out


def _sources(select: exp.Select) -> list[str]:
    names = []
    for table in select.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and table.name.lower() not in names:
            names.append(table.name.lower())
    return names


def _selection(select: exp.Select, target: str | None, step: int | None) -> Selection:
    conditions: list[Condition] = []
    for clause in ("where", "having"):
        node = select.args.get(clause)
        if isinstance(node, exp.Where | exp.Having):
            for conjunct in _conjuncts(node.this):
                conditions.extend(condition(conjunct, clause))
    group = select.args.get("group")
    keys = [e.sql(dialect="duckdb") for e in group.expressions] if isinstance(group, exp.Group) else []
    order = select.args.get("order")
    ordering = (
        [(o.this.sql(dialect="duckdb"), bool(o.args.get("desc"))) for o in order.expressions]
        if isinstance(order, exp.Order)
        else []
    )
    limit = select.args.get("limit")
    count = (
        _literal(limit.expression) if isinstance(limit, exp.Limit) and limit.expression is not None else None
    )
    return Selection(
        language="sql",
        step=step,
        target=target,
        sources=_sources(select),
        sql=select.sql(dialect="duckdb"),
        conditions=conditions,
        aggregates=_aggregates(select),
        group_keys=keys,
        joins=_joins(select),
        order=ordering,
        limit=int(count) if isinstance(count, float) else None,
        outputs=[p.alias_or_name for p in select.expressions],
        flags=_flags(select),
    )


def star_replaced(select: exp.Select) -> list[exp.Expr]:
    """The select list with the columns a star's REPLACE redefines (`SELECT f.* REPLACE (los > 14 AS
    prolonged)`: `prolonged` is set to the condition) as aliases of their own."""
    items = list(select.expressions)
    for star in select.expressions:
        if isinstance(star, exp.Column) and isinstance(star.this, exp.Star):
            star = star.this  # `s.* REPLACE (...)`: a table's star
        if isinstance(star, exp.Star):
            items.extend(star.args.get("replace") or [])
    return items


def _flags(select: exp.Select) -> dict[str, list[Condition]]:
    """`visib < 5 AS poor_vis` (or an AND of such comparisons) in the select list, or a star's REPLACE
    of such a column: a flag column stored beside the rows, whose comparisons say which rows it marks."""
    out: dict[str, list[Condition]] = {}
    for item in star_replaced(select):
        if not isinstance(item, exp.Alias):
            continue
        body = item.this
        while isinstance(body, exp.Paren):
            body = body.this
        parts = _conjuncts(body)
        if not all(type(_bare(p)) in _OPS for p in parts):
            continue
        conds = [c for p in parts for c in condition(p, "where")]
        if conds and all(c.op != "other" and c.column for c in conds):
            out[item.alias] = conds
    return out


def _bare(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def sql_selections(sql: str, step: int | None = None) -> list[Selection]:
    """One Selection per SELECT in the text (CTE bodies and set-operation arms included)."""
    try:
        statements = parse_statements(sql)
    except (SQLParseError, Exception):  # noqa: BLE001 - sqlglot raises several error types
        return []
    out: list[Selection] = []
    for statement in statements:
        if isinstance(statement, exp.Update):
            out.extend(_updated(statement, step))
        target = None
        body: exp.Expr | None = statement
        if isinstance(statement, exp.Create):
            t = statement.this.this if isinstance(statement.this, exp.Schema) else statement.this
            target = t.name.lower() if isinstance(t, exp.Table) else None
            body = statement.expression
        if not isinstance(body, exp.Expr):
            continue
        selects = [s for s in body.find_all(exp.Select)]
        for select in selects:
            out.append(_selection(select, target if select is selects[0] else None, step))
    return out


def sets_every_row(statement: exp.Update) -> bool:
    """An UPDATE of one named table with no FROM and no WHERE: every row gets the new values."""
    table = statement.this
    return (
        not (statement.args.get("where") or statement.args.get("from") or statement.args.get("from_"))
        and isinstance(table, exp.Table)
        and bool(table.name)
    )


def _updated(statement: exp.Update, step: int | None) -> list[Selection]:
    """`UPDATE marked SET tall = child >= 70` on every row: the table rebuilt with its flag set to the
    condition, read as `SELECT * REPLACE (child >= 70 AS tall) FROM marked`. An update of some rows,
    or from another table, keeps other rows' values: it is not read."""
    if not sets_every_row(statement):
        return []
    table = statement.this
    sets = [
        (e.this.name, e.expression)
        for e in statement.args.get("expressions") or []
        if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column) and e.this.name
    ]
    if not sets:
        return []
    items = ", ".join(f"{value.sql(dialect='duckdb')} AS {name}" for name, value in sets)
    select: exp.Expr = exp.maybe_parse(
        f"SELECT * REPLACE ({items}) FROM {table.sql(dialect='duckdb')}", dialect="duckdb"
    )
    if not isinstance(select, exp.Select):
        return []
    return [_selection(select, table.name.lower(), step)]


def sql_literals(sql: str) -> list[float]:
    try:
        statements = parse_statements(sql)
    except (SQLParseError, Exception):  # noqa: BLE001
        return []
    out = []
    for statement in statements:
        for lit in statement.find_all(exp.Literal):
            value = _literal(lit)
            if isinstance(value, float):
                out.append(value)
    return out
