"""Rebuild an agent's DAComp-DE pipeline for scoring, in the two modes of the benchmark.

CFS (Cascading Failure Score): copy the clean `<proj>_start.duckdb`, then run every agent SQL
file in dependency order (deps.py), each as `CREATE OR REPLACE TABLE <layer schema>.<table> AS
<its SELECT>`. An upstream table that fails (SQL error, timeout) is simply absent, so every
table reading it fails too: the error cascades, as it would in the agent's own run.

CS (Component Score): copy the gold database, then run each *configured* table's agent SQL
against it, writing the result to schema `agent__<layer schema>`. Every input the SQL reads
is therefore the gold table, so an upstream mistake cannot reach a downstream component.

    res = build_cfs(read_sql(pred / "sql"), task.start_db, work / "cfs" / ex.database_file, ex)
    res.tables["int_shop__orders"].ok, res.tables["int_shop__orders"].error

A file holding one SELECT is wrapped as above; anything else (several statements, DDL) runs
as written and must itself create the table. Bare table names resolve through a search path
of the layer schemas, `raw` and `main`. Because gold databases spell the marts schema `mart`
or `marts`, each marts table is also reachable under the other spelling (a view).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from eval.benchmarks.dacomp_de.compare import quote, run_sql, table_columns
from eval.benchmarks.dacomp_de.config import MART_ALIASES, ExampleSpec
from eval.benchmarks.dacomp_de.deps import DependencyCycleError, table_dependencies

CS_PREFIX = "agent__"
Sources = dict[str, dict[str, str]]  # layer -> table -> SQL text


class TableBuild(BaseModel):
    model_config = ConfigDict(frozen=True)

    table: str
    layer: str
    schema_name: str = Field(description="Schema the table was written to.")
    ok: bool
    error: str | None = None


class BuildResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["cfs", "cs"]
    db_path: Path
    order: list[str] = Field(description="Tables in the order their SQL ran.")
    tables: dict[str, TableBuild]
    note: str | None = Field(default=None, description="Why the build could not start or was reordered.")

    @property
    def run_success(self) -> bool:
        """RunSuccess gate: the rebuild started and at least one agent SQL file ran."""
        return any(t.ok for t in self.tables.values())


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:500]


def _schemas(conn: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        r[0]
        for r in run_sql(
            conn,
            "SELECT schema_name FROM information_schema.schemata WHERE catalog_name = current_database()",
        )
    }


def _set_search_path(conn: duckdb.DuckDBPyConnection, example: ExampleSpec) -> None:
    wanted = [example.schema_for(layer) for layer in example.layer_order()] + ["raw", "main"]
    present = _schemas(conn)
    path = ",".join(dict.fromkeys(s for s in wanted if s in present))
    conn.execute(f"SET search_path = '{path}'")


def _mirror_marts(conn: duckdb.DuckDBPyConnection, schema: str, table: str) -> None:
    """Make `mart.t` and `marts.t` name the same table, whichever one holds it."""
    if schema not in MART_ALIASES:
        return
    for other in MART_ALIASES:
        if other != schema and table_columns(conn, other, table) is None:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(other)}")
            conn.execute(
                f"CREATE VIEW {quote(other)}.{quote(table)} AS SELECT * FROM {quote(schema)}.{quote(table)}"
            )


def _run_table(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    schema: str,
    table: str,
    timeout_s: float,
    allow_script: bool = True,
) -> str | None:
    """Materialize one table; returns an error text, or None on success."""
    try:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(schema)}")
        statements = conn.extract_statements(sql)
        if len(statements) == 1 and statements[0].type == duckdb.StatementType.SELECT:
            target = f"{quote(schema)}.{quote(table)}"
            run_sql(conn, f"CREATE OR REPLACE TABLE {target} AS\n{statements[0].query}", timeout_s=timeout_s)
        elif not allow_script:
            return "CS runs one SELECT per file on gold inputs; this file holds other statements"
        else:
            run_sql(conn, sql, timeout_s=timeout_s)
            if table_columns(conn, schema, table) is None:
                return f"the SQL ran but did not create {schema}.{table}; a file should hold one SELECT"
    except duckdb.Error as err:
        return _short(err)
    return None


def _fresh_copy(src: Path, dst: Path) -> None:
    if not src.is_file():
        raise FileNotFoundError(f"{src}: database to copy from does not exist")
    dst.parent.mkdir(parents=True, exist_ok=True)
    for stale in (dst, dst.with_name(dst.name + ".wal")):
        stale.unlink(missing_ok=True)
    shutil.copyfile(src, dst)


def build_cfs(
    sources: Sources, start_db: Path, out_db: Path, example: ExampleSpec, timeout_s: float = 300
) -> BuildResult:
    """Rebuild the whole agent pipeline from a clean copy of the start database."""
    _fresh_copy(start_db, out_db)
    graph = table_dependencies(sources)
    note = None
    try:
        order = graph.build_order(example.layer_order())
    except DependencyCycleError as err:  # still run everything, layer by layer, so the rest can score
        note = str(err)
        rank = {layer: i for i, layer in enumerate(example.layer_order())}
        order = sorted(graph.layer_of, key=lambda t: (rank.get(graph.layer_of[t], len(rank)), t))
    results: dict[str, TableBuild] = {}
    with duckdb.connect(str(out_db)) as conn:
        for table in order:
            layer = graph.layer_of[table]
            schema = example.schema_for(layer)
            _set_search_path(conn, example)
            error = _run_table(conn, sources[layer][table], schema, table, timeout_s)
            if error is None:
                _mirror_marts(conn, schema, table)
            results[table] = TableBuild(
                table=table, layer=layer, schema_name=schema, ok=error is None, error=error
            )
    return BuildResult(mode="cfs", db_path=out_db, order=order, tables=results, note=note)


def _fill_from_start(conn: duckdb.DuckDBPyConnection, start_db: Path) -> None:
    """Copy start-database tables (raw inputs) the gold copy lacks."""
    conn.execute(f"ATTACH '{str(start_db).replace(chr(39), chr(39) * 2)}' AS start_db (READ_ONLY)")
    rows = run_sql(
        conn,
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_catalog = 'start_db' AND table_type = 'BASE TABLE'",
    )
    for schema, table in rows:
        if table_columns(conn, schema, table) is None:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(schema)}")
            conn.execute(
                f"CREATE TABLE {quote(schema)}.{quote(table)} AS "
                f"SELECT * FROM start_db.{quote(schema)}.{quote(table)}"
            )
    conn.execute("DETACH start_db")


def build_cs(
    sources: Sources,
    gold_db: Path,
    out_db: Path,
    example: ExampleSpec,
    start_db: Path | None = None,
    timeout_s: float = 300,
) -> BuildResult:
    """Run each configured table's agent SQL on gold inputs; outputs go to `agent__<schema>`."""
    _fresh_copy(gold_db, out_db)
    results: dict[str, TableBuild] = {}
    order: list[str] = []
    with duckdb.connect(str(out_db)) as conn:
        if start_db is not None:
            _fill_from_start(conn, start_db)
        for schema in MART_ALIASES:
            present = _schemas(conn)
            if schema in present:
                for (table,) in run_sql(
                    conn,
                    "SELECT table_name FROM information_schema.tables WHERE "
                    "table_catalog = current_database() AND table_schema = ?",
                    [schema],
                ):
                    _mirror_marts(conn, schema, table)
        _set_search_path(conn, example)
        for table, (layer, spec) in example.tables().items():
            schema = CS_PREFIX + example.schema_for(layer)
            sql = sources.get(layer, {}).get((spec.sql_name or table).lower())
            order.append(table)
            if sql is None:
                error: str | None = f"no agent SQL file sql/{layer}/{spec.sql_name or table}.sql"
            else:
                error = _run_table(conn, sql, schema, table, timeout_s, allow_script=False)
            results[table] = TableBuild(
                table=table, layer=layer, schema_name=schema, ok=error is None, error=error
            )
    return BuildResult(mode="cs", db_path=out_db, order=order, tables=results)
