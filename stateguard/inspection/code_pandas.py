"""Read pandas statements (Python AST) into `Selection`s: masks, aggregates, keys, merges, order.

    sel = pandas_selection(ast.parse("big = df[(df.mass > 4000) & ~(df.sex == 'male')]").body[0], step=2)
    # -> target 'big', frame 'df', conditions mass > 4000 and sex != 'male' (kept side)

Row conditions come from boolean masks in `frame[mask]` / `frame.loc[mask]`, `frame.query("...")`,
`dropna(subset=...)`, and `frame.drop(frame[mask].index)` (a drop keeps the complement).
Comparisons outside a selection (`(df.x > 4).mean()`, `np.where(...)`) are recorded too, with
clause `mask` and no frame: they show the code *uses* that comparison.
"""

from __future__ import annotations

import ast

from stateguard.inspection.code_model import MIRROR, NEGATE, Aggregate, Condition, Join, Selection

_OPS: dict[type[ast.cmpop], str] = {
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
# pandas' comparison methods: `s.gt(80)` is `s > 80`
_METHOD_OPS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}
_AGG_METHODS = {
    "mean": "mean",
    "median": "median",
    "sum": "sum",
    "count": "count",
    "nunique": "nunique",
    "min": "min",
    "max": "max",
    "std": "std",
    "size": "count",
    "average": "mean",
}
_ARITH = (ast.BinOp, ast.UnaryOp)


def _scaled_by_constant(parent: ast.AST, node: ast.AST) -> bool:
    """`100 * s.mean()`, `s.median() / 1000`: a unit change keeps which statistic it is (the mean of
    scaled values is the scaled mean; likewise median and sum). The mean of a mask times 100 is a
    percentage of rows, not a statistic of values (the caller leaves it out)."""
    if not isinstance(parent, ast.BinOp) or not isinstance(parent.op, ast.Mult | ast.Div):
        return False
    other = parent.right if parent.left is node else parent.left
    if isinstance(parent.op, ast.Div) and other is parent.left:
        return False  # 1 / s.mean() is another statistic
    return isinstance(_const(other), float | int) and not isinstance(_const(other), bool)


def _const(node: ast.AST) -> float | str | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _const(node.operand)
        return -inner if isinstance(inner, float) else None
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


# aggregate names pandas accepts for the same statistic
_AGG_ALIASES = {"avg": "mean", "average": "mean", "size": "count"}


def _named_aggregates(node: ast.Call, recv: ast.AST) -> list[Aggregate]:
    """`.agg(median_mm=("flipper_length_mm", "median"), n=("species", "size"))`: one aggregate per
    output column, taken over the receiver's column (`recv["flipper_length_mm"]`)."""
    out = []
    for kw in node.keywords:
        pair = kw.value
        if kw.arg is None or not isinstance(pair, ast.Tuple) or len(pair.elts) != 2:
            continue
        col, fn = (_const(e) for e in pair.elts)
        if not (isinstance(col, str) and isinstance(fn, str)):
            continue
        fn = _AGG_ALIASES.get(fn, fn)
        out.append(
            Aggregate(
                function=fn if fn in _AGG_METHODS.values() else "other",
                column=col,
                alias=kw.arg,
                text=ast.unparse(kw),
                receiver=f"{ast.unparse(recv)}[{col!r}]",
            )
        )
    return out


def column_of(node: ast.AST, bare: bool = False) -> str | None:
    """`df.col`, `df['col']`, `df.loc[:, 'col']` -> 'col' (a bare name only inside query strings)."""
    if isinstance(node, ast.Attribute) and isinstance(
        node.value, ast.Name | ast.Attribute | ast.Subscript | ast.Call
    ):
        return node.attr if node.attr not in ("str", "dt", "values", "index") else column_of(node.value)
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    if (  # df.loc[mask, 'col']: rows by the mask, one column
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "loc"
        and isinstance(node.slice, ast.Tuple)
        and len(node.slice.elts) == 2
        and isinstance(node.slice.elts[1], ast.Constant)
        and isinstance(node.slice.elts[1].value, str)
    ):
        return node.slice.elts[1].value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return column_of(node.func.value, bare)  # df.col.abs() > 3, df.col.str.len() > 2
    if bare and isinstance(node, ast.Name):
        return node.id
    return None


def _columns(node: ast.AST, bare: bool = False) -> list[str]:
    found = {
        column_of(n, bare) for n in ast.walk(node) if isinstance(n, ast.Attribute | ast.Subscript | ast.Name)
    }
    return sorted(c for c in found if c)


def mask_conditions(
    node: ast.AST, clause: str = "mask", negated: bool = False, bare: bool = False
) -> list[Condition]:
    """Kept-side conditions of a boolean mask: `&`-joined parts, `~`, comparisons, isin, notna, between."""
    text = ast.unparse(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd) and not negated:
        return mask_conditions(node.left, clause, False, bare) + mask_conditions(
            node.right, clause, False, bare
        )
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and not negated:
        return [c for v in node.values for c in mask_conditions(v, clause, False, bare)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert | ast.Not):
        return mask_conditions(node.operand, clause, not negated, bare)
    out: list[Condition] = []
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPS:
        left, right, op = node.left, node.comparators[0], _OPS[type(node.ops[0])]
        value = _const(right)
        if value is None and _const(left) is not None:
            left, right, value, op = right, left, _const(left), MIRROR[op]
        if value is not None:
            out.append(
                Condition(
                    column=column_of(left, bare),
                    op=op,
                    value=value,
                    clause=clause,
                    lhs=ast.unparse(left),
                    text=text,
                    columns=_columns(node, bare),
                )
            )
    elif isinstance(node, ast.Compare) and len(node.ops) == 2 and all(type(o) in _OPS for o in node.ops):
        low, col, high = node.left, node.comparators[0], node.comparators[1]  # 10 <= df.x <= 20
        for op_node, bound, flip in ((node.ops[0], low, True), (node.ops[1], high, False)):
            value, op = _const(bound), _OPS[type(op_node)]
            if value is not None:
                out.append(
                    Condition(
                        column=column_of(col, bare),
                        op=MIRROR[op] if flip else op,
                        value=value,
                        clause=clause,
                        lhs=ast.unparse(col),
                        text=text,
                        columns=_columns(node, bare),
                    )
                )
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn):
        items = node.comparators[0]  # query strings: species in ['a', 'b']
        values = [v for v in (_const(e) for e in getattr(items, "elts", [])) if v is not None]
        op = "in" if isinstance(node.ops[0], ast.In) else "not_in"
        out.append(
            Condition(
                column=column_of(node.left, bare),
                op=op,
                values=values,
                clause=clause,
                lhs=ast.unparse(node.left),
                text=text,
                columns=_columns(node, bare),
            )
        )
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        method, recv = node.func.attr, node.func.value
        if (
            method in _METHOD_OPS
            and len(node.args) == 1
            and not node.keywords
            and _const(node.args[0]) is not None
        ):
            out.append(
                Condition(
                    column=column_of(recv, bare),
                    op=_METHOD_OPS[method],
                    value=_const(node.args[0]),
                    clause=clause,
                    lhs=ast.unparse(recv),
                    text=text,
                    columns=_columns(node, bare),
                )
            )
        elif method == "isin" and node.args:
            values = [v for v in (_const(e) for e in getattr(node.args[0], "elts", [])) if v is not None]
            out.append(
                Condition(
                    column=column_of(recv, bare),
                    op="in",
                    values=values,
                    clause=clause,
                    lhs=ast.unparse(recv),
                    text=text,
                    columns=_columns(node, bare),
                )
            )
        elif method in ("notna", "notnull", "isna", "isnull"):
            op = "notnull" if method in ("notna", "notnull") else "isnull"
            out.append(
                Condition(
                    column=column_of(recv, bare),
                    op=op,
                    clause=clause,
                    lhs=ast.unparse(recv),
                    text=text,
                    columns=_columns(node, bare),
                )
            )
        elif method == "between" and len(node.args) >= 2:
            for op, bound in ((">=", node.args[0]), ("<=", node.args[1])):
                value = _const(bound)
                if value is not None and not negated:
                    out.append(
                        Condition(
                            column=column_of(recv, bare),
                            op=op,
                            value=value,
                            clause=clause,
                            lhs=ast.unparse(recv),
                            text=text,
                            columns=_columns(node, bare),
                        )
                    )
            if negated:
                return [
                    Condition(
                        column=column_of(recv, bare),
                        op="other",
                        clause=clause,
                        text=text,
                        columns=_columns(node, bare),
                    )
                ]
            return out
    if not out:
        return [Condition(column=None, op="other", clause=clause, text=text, columns=_columns(node, bare))]
    return [c.model_copy(update={"op": NEGATE[c.op]}) for c in out] if negated else out


def _is_mask(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (
            node.func.attr in ("isin", "notna", "notnull", "isna", "isnull", "between")
            or (node.func.attr in _METHOD_OPS and len(node.args) == 1 and _const(node.args[0]) is not None)
        )
    )


def _kwarg(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _names(node: ast.AST | None) -> list[str]:
    if node is None:
        return []
    if isinstance(node, ast.List | ast.Tuple):
        return [n for e in node.elts for n in _names(e)]
    value = _const(node)
    if isinstance(value, str):
        return [value]
    col = column_of(node)
    return [col] if col else [ast.unparse(node)]


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def pandas_selection(stmt: ast.stmt, step: int | None = None) -> Selection | None:
    """The semantic content of one statement, or None when it has none."""
    target = None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0]
        target = t.id if isinstance(t, ast.Name) else ast.unparse(t)
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        target = stmt.target.id
    parents = _parents(stmt)
    conditions: list[Condition] = []
    aggregates: list[Aggregate] = []
    keys: list[str] = []
    joins: list[Join] = []
    order: list[tuple[str, bool]] = []
    limit: int | None = None
    frame = mask = ""
    seen_masks: set[int] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Subscript) and _is_mask(node.slice):
            base = (
                node.value.value
                if isinstance(node.value, ast.Attribute) and node.value.attr == "loc"
                else node.value
            )
            frame, mask = frame or ast.unparse(base), mask or ast.unparse(node.slice)
            dropped = _inside_drop(node, parents)
            conditions += mask_conditions(node.slice, "mask", negated=dropped)
            seen_masks.update(id(n) for n in ast.walk(node.slice))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "loc"
        ):
            sl = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            if _is_mask(sl):
                frame, mask = frame or ast.unparse(node.value.value), mask or ast.unparse(sl)
                conditions += mask_conditions(sl, "mask")
                seen_masks.update(id(n) for n in ast.walk(sl))
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method, recv = node.func.attr, node.func.value
        if method == "query" and node.args and isinstance(_const(node.args[0]), str):
            try:
                expr = ast.parse(
                    str(_const(node.args[0])).replace("&", " and ").replace("|", " or "), mode="eval"
                ).body
            except SyntaxError:
                continue
            frame = frame or ast.unparse(recv)
            conditions += mask_conditions(expr, "query", bare=True)
        elif method == "dropna":
            subset = _kwarg(node, "subset")
            for col in _names(subset):
                conditions.append(
                    Condition(
                        column=col,
                        op="notnull",
                        clause="dropna",
                        lhs=col,
                        text=ast.unparse(node),
                        columns=[col],
                    )
                )
        elif method in ("agg", "aggregate") and not node.args and node.keywords:
            aggregates += _named_aggregates(node, recv)
        elif method in _AGG_METHODS or (method in ("agg", "aggregate", "transform") and node.args):
            fn = _AGG_METHODS.get(method) or (
                str(_const(node.args[0])) if isinstance(_const(node.args[0]), str) else "other"
            )
            fn = _AGG_ALIASES.get(fn, fn)
            parent = parents.get(id(node))
            standalone = (
                not isinstance(parent, _ARITH)
                or (_scaled_by_constant(parent, node) and not isinstance(recv, ast.Compare))
            ) and not isinstance(parent, ast.Compare)
            aggregates.append(
                Aggregate(
                    function=fn if fn in _AGG_METHODS.values() else "other",
                    column=column_of(recv),
                    standalone=standalone,
                    text=ast.unparse(node),
                    receiver=ast.unparse(recv),
                )
            )
        elif method == "groupby":
            keys += _names(node.args[0] if node.args else _kwarg(node, "by"))
        elif method == "value_counts" and column_of(recv):
            keys.append(column_of(recv) or "")
        elif method == "pivot_table":
            keys += _names(_kwarg(node, "index")) + _names(_kwarg(node, "columns"))
        elif method in ("merge", "join"):
            left, right = (
                (node.args[0], node.args[1])
                if isinstance(recv, ast.Name) and recv.id == "pd" and len(node.args) >= 2
                else (recv, node.args[0] if node.args else None)
            )
            how_node = _kwarg(node, "how")
            how = (
                str(_const(how_node))
                if how_node is not None and isinstance(_const(how_node), str)
                else ("inner" if method == "merge" else "left")
            )
            on = (
                _names(_kwarg(node, "on"))
                + _names(_kwarg(node, "left_on"))
                + _names(_kwarg(node, "right_on"))
            )
            if how in ("inner", "left", "right", "outer", "cross"):
                joins.append(
                    Join(
                        how=how,
                        keys=list(dict.fromkeys(on)),
                        left=ast.unparse(left),
                        right=ast.unparse(right) if right is not None else "",
                        text=ast.unparse(node),
                    )
                )
        elif method == "sort_values":
            by = _names(node.args[0] if node.args else _kwarg(node, "by")) or [ast.unparse(recv)]
            asc = _kwarg(node, "ascending")
            if isinstance(asc, (ast.List, ast.Tuple)) and len(asc.elts) == len(by):
                # `ascending=[False, True]`: each key its own direction
                order += [
                    (b, isinstance(a, ast.Constant) and a.value is False)
                    for b, a in zip(by, asc.elts, strict=True)
                ]
            else:
                order += [(b, isinstance(asc, ast.Constant) and asc.value is False) for b in by]
        elif method in ("nlargest", "nsmallest") and node.args:
            k = _const(node.args[0])
            limit = int(k) if isinstance(k, float) else limit
            cols = _names(node.args[1]) if len(node.args) > 1 else _names(_kwarg(node, "columns"))
            order += [(c, method == "nlargest") for c in cols or [ast.unparse(recv)]]
        elif method in ("idxmax", "idxmin"):
            order.append((ast.unparse(recv), method == "idxmax"))
            limit = 1
        elif method == "head" and node.args and isinstance(_const(node.args[0]), float):
            limit = int(_const(node.args[0]))  # type: ignore[arg-type]
    for node in ast.walk(stmt):  # comparisons used outside a selection: (df.x > 4).mean(), np.where(...)
        if (
            isinstance(node, ast.Compare)
            and id(node) not in seen_masks
            and len(node.ops) == 1
            and type(node.ops[0]) in _OPS
        ):
            found = [c for c in mask_conditions(node, "mask") if c.op != "other" and c.column]
            conditions += found
        elif (  # a range test counted or averaged: df.x.between(3, 5).sum(); a method comparison: df.x.gt(80)
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (node.func.attr == "between" or (node.func.attr in _METHOD_OPS and _is_mask(node)))
            and id(node) not in seen_masks
        ):
            conditions += [c for c in mask_conditions(node, "mask") if c.op != "other" and c.column]
    if not (conditions or aggregates or keys or joins or order or limit):
        return None
    return Selection(
        language="pandas",
        step=step,
        target=target,
        frame=frame,
        mask=mask,
        flag=_flag(stmt),
        sources=sorted(
            {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        ),
        conditions=conditions,
        aggregates=aggregates,
        group_keys=keys,
        joins=joins,
        order=order,
        limit=limit,
    )


def _inside_drop(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """`frame.drop(frame[mask].index)`: the mask names the rows removed."""
    cur = parents.get(id(node))
    while cur is not None:
        if isinstance(cur, ast.Call) and isinstance(cur.func, ast.Attribute) and cur.func.attr == "drop":
            return True
        cur = parents.get(id(cur))
    return False


def _flag(stmt: ast.stmt) -> tuple[str, str, bool] | None:
    """`wx["warm"] = wx["temp_max"] >= 25` (or an `&` of such parts): the frame and flag column."""
    if not (
        isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript)
    ):
        return None
    t, value = stmt.targets[0], stmt.value
    if not (
        isinstance(t.value, ast.Name) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str)
    ):
        return None
    if (isinstance(value, ast.Compare) and len(value.ops) == 1) or (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _METHOD_OPS
        and _is_mask(value)
    ):
        return (t.value.id, t.slice.value, True)
    parts = (
        mask_conditions(value) if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitAnd) else []
    )
    if parts and all(c.op != "other" for c in parts):
        return (t.value.id, t.slice.value, False)
    return None
