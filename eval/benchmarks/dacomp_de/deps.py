"""Table dependencies of a DAComp-DE pipeline, read from its SQL with sqlglot (paper C.4).

Each SQL file `sql/<layer>/<table>.sql` materializes one table. Pa(T) is the set of the
pipeline's *own* tables that T's SQL reads in a FROM or JOIN (at any depth: CTE bodies,
subqueries, set operations). Raw-source tables, CTE names and T itself are left out. Comments
never count: sqlglot keeps them out of the parse tree, so a commented-out JOIN is no edge.

    graph = table_dependencies({"staging": {"stg_a": sql_a}, "marts": {"m": sql_m}})
    graph.parents["m"]            # ['stg_a']
    graph.build_order()           # parents before children; staging < intermediate < marts on ties

A reference may be qualified (`staging.stg_a`, `mart.m`) or bare (`stg_a`). A qualified one
counts only when its schema is the layer that produces the table (`mart` and `marts` are the
same layer); a bare one counts when the name is an own table.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp
from sqlglot.errors import SqlglotError

from eval.benchmarks.dacomp_de.config import CANONICAL_LAYERS, MART_ALIASES


class DependencyCycleError(ValueError):
    """The SQL files read each other in a cycle, so no build order exists."""


class TableGraph(BaseModel):
    model_config = ConfigDict(frozen=True)

    layer_of: dict[str, str] = Field(description="Own table -> the layer folder its SQL lives in.")
    parents: dict[str, list[str]] = Field(description="Own table -> own tables its SQL reads (sorted).")
    unparsed: dict[str, str] = Field(default_factory=dict, description="Table -> sqlglot error, no edges.")

    def children(self, table: str) -> list[str]:
        return sorted(t for t, ps in self.parents.items() if table in ps)

    def build_order(self, layer_order: list[str] | None = None) -> list[str]:
        """Tables with every parent first (Kahn); ties go by layer rank, then name."""
        rank = _layer_rank(layer_order or [], set(self.layer_of.values()))
        waiting = {t: set(ps) for t, ps in self.parents.items()}
        ready = [(rank[self.layer_of[t]], t) for t, ps in waiting.items() if not ps]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            _, table = heapq.heappop(ready)
            order.append(table)
            for child in self.children(table):
                waiting[child].discard(table)
                if not waiting[child]:
                    heapq.heappush(ready, (rank[self.layer_of[child]], child))
        if len(order) < len(waiting):
            stuck = sorted(set(waiting) - set(order))
            raise DependencyCycleError(
                f"SQL files read each other in a cycle among {stuck}; a table may only read tables built before it"
            )
        return order


def _layer_rank(preferred: list[str], present: set[str]) -> dict[str, int]:
    ordered = [x for x in preferred if x in present]
    ordered += [x for x in CANONICAL_LAYERS if x in present and x not in ordered]
    ordered += sorted(present - set(ordered))
    return {layer: i for i, layer in enumerate(ordered)}


def _same_layer(schema: str, layer: str) -> bool:
    return schema == layer or (schema in MART_ALIASES and layer in MART_ALIASES)


def read_references(sql: str, dialect: str = "duckdb") -> list[tuple[str | None, str]]:
    """(schema or None, table) pairs the SQL reads, lower-cased, in order; CTE names excluded.

    Raises sqlglot's error when the SQL does not parse.
    """
    refs: list[tuple[str | None, str]] = []
    for statement in sqlglot.parse(sql, dialect=dialect):
        if statement is None:
            continue
        ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
        target = statement.this if isinstance(statement, exp.Create) else None
        if isinstance(target, exp.Schema):
            target = target.this
        for table in statement.find_all(exp.Table):
            if table is target or not isinstance(table.this, exp.Identifier):
                continue  # the CREATE target itself, or a table function such as read_csv(...)
            schema = table.db.lower() or None
            name = table.name.lower()
            if schema is None and name in ctes:
                continue
            if (schema, name) not in refs:
                refs.append((schema, name))
    return refs


def table_dependencies(sql_by_layer: Mapping[str, Mapping[str, str]], dialect: str = "duckdb") -> TableGraph:
    """Pa(T) for every table of a pipeline given as {layer: {table: sql text}}.

    A file that sqlglot cannot parse gets no edges and is listed in `unparsed` (DuckDB may still
    run it; the build then places it by layer rank).
    """
    layer_of: dict[str, str] = {}
    for layer, tables in sql_by_layer.items():
        for table in tables:
            name = table.lower()
            if name in layer_of:
                raise ValueError(
                    f"table {name!r} has SQL in both sql/{layer_of[name]}/ and sql/{layer}/; keep one file per table"
                )
            layer_of[name] = layer
    parents: dict[str, list[str]] = {}
    unparsed: dict[str, str] = {}
    for tables in sql_by_layer.values():
        for table, sql in tables.items():
            me = table.lower()
            found: set[str] = set()
            try:
                references = read_references(sql, dialect)
            except SqlglotError as err:
                unparsed[me] = str(err).splitlines()[0] if str(err) else type(err).__name__
                references = []
            for schema, name in references:
                if name == me or name not in layer_of:
                    continue
                if schema is None or _same_layer(schema, layer_of[name]):
                    found.add(name)
            parents[me] = sorted(found)
    return TableGraph(layer_of=layer_of, parents=parents, unparsed=unparsed)
