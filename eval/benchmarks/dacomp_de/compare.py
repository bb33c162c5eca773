"""Does one table of a built database equal the gold table? (DAComp-DE table check)

A table matches when (1) it exists on both sides, (2) the row counts are equal and (3) the
multisets of row hashes are equal. A row hash is SHA-256 over the compared columns, each value
cast to text, trimmed and lower-cased (NULL kept distinct from every string). Row order never
matters; duplicate rows count. There is no numeric tolerance: `1` and `1.0` differ.

The compared columns are the configured `compare_cols` that both tables have (matched
case-insensitively); with no `compare_cols`, every gold column the prediction also has. A table
that shares none of them fails. This mirrors the official evaluator, which also skips a
configured column the prediction lacks.

    with duckdb.connect(pred, read_only=True) as p, duckdb.connect(gold, read_only=True) as g:
        verdict = compare_table(p, "staging", g, "staging", "stg_shop__orders", ["order_id", "amount"])
        verdict.match, verdict.reason
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.dacomp_de.config import MART_ALIASES

# Separates column texts inside one row before hashing (a unit separator, absent from real data).
_SEP = "chr(31)"
_NULL = "chr(0)"


class TableVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    table: str
    layer: str = ""
    match: bool
    reason: str = Field(description="'match', or why not: missing table, row count, differing rows, ...")
    pred_rows: int | None = None
    gold_rows: int | None = None
    columns: list[str] = Field(default_factory=list, description="Columns the hashes covered.")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def run_sql(
    conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None, timeout_s: float | None = None
) -> list[tuple[Any, ...]]:
    """Execute and fetch all rows; past `timeout_s` the query is interrupted (InterruptException)."""
    timer = threading.Timer(timeout_s, conn.interrupt) if timeout_s else None
    if timer is not None:
        timer.start()
    try:
        return conn.execute(sql, params or []).fetchall()
    finally:
        if timer is not None:
            timer.cancel()


def resolve_schema(conn: duckdb.DuckDBPyConnection, schema: str) -> str:
    """The schema as this database spells it: `mart` and `marts` stand for each other."""
    if schema not in MART_ALIASES:
        return schema
    present = {r[0] for r in run_sql(conn, "SELECT schema_name FROM information_schema.schemata")}
    return next((s for s in (schema, *MART_ALIASES) if s in present), schema)


def table_columns(conn: duckdb.DuckDBPyConnection, schema: str, table: str) -> list[str] | None:
    """Column names in table order, or None when the table does not exist."""
    rows = run_sql(
        conn,
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND table_schema = ? AND lower(table_name) = lower(?) "
        "ORDER BY ordinal_position",
        [schema, table],
    )
    return [r[1] for r in rows] if rows else None


def row_hash_counts(
    conn: duckdb.DuckDBPyConnection,
    schema: str,
    table: str,
    columns: list[str],
    timeout_s: float | None = None,
) -> Counter[str]:
    """Multiset of normalized row hashes over `columns` (see module docstring)."""
    parts = [f"coalesce(lower(trim(CAST({quote(c)} AS VARCHAR))), {_NULL})" for c in columns]
    sql = (
        f"SELECT sha256(concat_ws({_SEP}, {', '.join(parts)})) AS h, count(*) "
        f"FROM {quote(schema)}.{quote(table)} GROUP BY h"
    )
    return Counter({h: int(n) for h, n in run_sql(conn, sql, timeout_s=timeout_s)})


def _shared_columns(gold_cols: list[str], pred_cols: list[str], compare_cols: list[str]) -> list[str]:
    gold_by_key = {c.lower(): c for c in gold_cols}
    pred_keys = {c.lower() for c in pred_cols}
    wanted = [c.lower() for c in compare_cols] if compare_cols else list(gold_by_key)
    return [gold_by_key[k] for k in dict.fromkeys(wanted) if k in gold_by_key and k in pred_keys]


def compare_table(
    pred: duckdb.DuckDBPyConnection,
    pred_schema: str,
    gold: duckdb.DuckDBPyConnection,
    gold_schema: str,
    table: str,
    compare_cols: list[str],
    *,
    layer: str = "",
    timeout_s: float | None = 300,
) -> TableVerdict:
    """Compare `table` between a predicted and the gold database (schemas resolved for mart/marts)."""
    pred_schema, gold_schema = resolve_schema(pred, pred_schema), resolve_schema(gold, gold_schema)
    gold_cols = table_columns(gold, gold_schema, table)
    pred_cols = table_columns(pred, pred_schema, table)
    if gold_cols is None:
        return TableVerdict(table=table, layer=layer, match=False, reason=f"missing in gold ({gold_schema})")
    if pred_cols is None:
        return TableVerdict(
            table=table, layer=layer, match=False, reason=f"missing in prediction ({pred_schema})"
        )
    columns = _shared_columns(gold_cols, pred_cols, compare_cols)
    if not columns:
        return TableVerdict(table=table, layer=layer, match=False, reason="no compared column in both tables")
    count_sql = "SELECT count(*) FROM {}.{}"
    n_pred = int(run_sql(pred, count_sql.format(quote(pred_schema), quote(table)))[0][0])
    n_gold = int(run_sql(gold, count_sql.format(quote(gold_schema), quote(table)))[0][0])
    sizes: dict[str, Any] = {"pred_rows": n_pred, "gold_rows": n_gold, "columns": columns}
    if n_pred != n_gold:
        return TableVerdict(
            table=table, layer=layer, match=False, reason=f"row count {n_pred} != gold {n_gold}", **sizes
        )
    try:
        got = row_hash_counts(pred, pred_schema, table, columns, timeout_s)
        want = row_hash_counts(gold, gold_schema, table, columns, timeout_s)
    except duckdb.Error as err:
        return TableVerdict(table=table, layer=layer, match=False, reason=f"hashing failed: {err}", **sizes)
    if got != want:
        unmatched = sum((got - want).values())
        return TableVerdict(
            table=table,
            layer=layer,
            match=False,
            reason=f"{unmatched} of {n_pred} rows have no equal gold row",
            **sizes,
        )
    return TableVerdict(table=table, layer=layer, match=True, reason="match", **sizes)
