"""Which tables a SQL text reads and creates (sqlglot), shared by the runtime and its users.

    referenced_tables("WITH t AS (SELECT * FROM a) SELECT * FROM t JOIN b USING (k)")  # {"a", "b"}
    created_tables("CREATE OR REPLACE TABLE s1 AS SELECT * FROM raw")                  # ["s1"]

What counts as "read":
* every table in FROM / JOIN / subqueries / set operations (UNION, ...), at any depth;
* minus names that resolve to a CTE in scope (DuckDB scoping: a non-recursive CTE sees only the
  CTEs defined before it, so `WITH t AS (SELECT * FROM t)` reads the real table `t`);
* minus the target of `CREATE TABLE/VIEW ... AS`, the tables of `DROP`, and tables created by an
  earlier statement of the same script (a scratch table made and then read in one script).
Comments never count (sqlglot keeps them out of the tree), aliases resolve to the table they
name, table functions (`read_csv(...)`, `range(...)`) are not tables, and names are lower-cased
because DuckDB matches identifiers case-insensitively, quoted or not. The workspace dataflow
(`stateguard.dataflow`) uses this to see SQL run through a connection; synthesis uses it to
recover stage dependencies, and the DAComp-DE scorer to order a pipeline's tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = ["SQLParseError", "created_tables", "ordered_references", "parse_statements", "referenced_tables"]


class SQLParseError(ValueError):
    """SQL that sqlglot cannot parse (or that holds no statement)."""


# Parsed trees by (sql, dialect), or the error message: the same stage SQL is parsed again by the
# dataflow of every cell that runs it, by inspect_python and by the synthesis screens. Callers get
# copies (sqlglot trees are mutable and some callers edit them); a copy costs a tenth of a parse.
_PARSED: dict[tuple[str, str], list[exp.Expr] | str] = {}
_PARSED_CAP = 2048


def parse_statements(sql: str, dialect: str = "duckdb") -> list[exp.Expr]:
    """Parse a (possibly multi-statement) SQL string; empty statements are dropped."""
    key = (sql, dialect)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = _parse(sql, dialect)
        if len(_PARSED) >= _PARSED_CAP:
            _PARSED.pop(next(iter(_PARSED)))  # oldest first
        _PARSED[key] = parsed
    if isinstance(parsed, str):
        raise SQLParseError(parsed)
    return [s.copy() for s in parsed]


def _parse(sql: str, dialect: str) -> list[exp.Expr] | str:
    """The statements, or the message of the SQLParseError they raise."""
    try:
        parsed = sqlglot.parse(sql, dialect=dialect)
    except SqlglotError as err:
        return f"cannot parse SQL as {dialect}: {err}"
    statements = [s for s in parsed if s is not None]
    return statements or "SQL contains no statement"


def _table_name(table: exp.Table) -> str | None:
    """Dotted, lower-cased name of a real table; None for table functions and the like."""
    if not isinstance(table.this, exp.Identifier):
        return None
    return ".".join(part.name.lower() for part in table.parts)


def _write_target(statement: exp.Expr) -> exp.Table | None:
    """The table a CREATE statement defines (through a column list `t(a INT)` if present)."""
    if not isinstance(statement, exp.Create):
        return None
    target = statement.this
    if isinstance(target, exp.Schema):
        target = target.this
    return target if isinstance(target, exp.Table) else None


def _cte_names(with_: exp.With) -> list[str]:
    return [cte.alias_or_name.lower() for cte in with_.expressions if isinstance(cte, exp.CTE)]


def _is_cte_reference(table: exp.Table) -> bool:
    """Whether an unqualified table name resolves to a CTE visible at its position."""
    if table.args.get("db") or table.args.get("catalog"):
        return False  # `main.t` always names a catalog table, never a CTE
    name = table.name.lower()
    child: exp.Expr = table
    parent = table.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            # Inside the body of CTE number k: only CTEs 0..k-1 are visible (plus itself if
            # RECURSIVE).
            names = _cte_names(parent)
            k = child.index if child.index is not None else len(names)
            visible = names[: k + 1] if parent.args.get("recursive") else names[:k]
            if name in visible:
                return True
        else:
            with_ = parent.args.get("with_")
            # `child is not with_`: coming up through a CTE body is handled by the branch above.
            if isinstance(with_, exp.With) and child is not with_ and name in _cte_names(with_):
                return True
        child, parent = parent, parent.parent
    return False


def _statement_reads(statement: exp.Expr) -> list[str]:
    """Names read by one statement, in order of first appearance."""
    if isinstance(statement, exp.Drop):
        return []
    target = _write_target(statement)
    names: list[str] = []
    for table in statement.find_all(exp.Table):
        if table is target or _is_cte_reference(table):
            continue
        name = _table_name(table)
        if name is not None and name not in names:
            names.append(name)
    return names


def ordered_references(statements: Sequence[exp.Expr]) -> list[str]:
    made: set[str] = set()
    names: list[str] = []
    for statement in statements:
        for name in _statement_reads(statement):
            if name not in made and name not in names:
                names.append(name)
        target = _write_target(statement)
        if target is not None and (created := _table_name(target)) is not None:
            made.add(created)
    return names


def referenced_tables(sql: str, dialect: str = "duckdb") -> set[str]:
    """Tables the SQL reads (lower-cased; schema-qualified ones as `schema.table`).

    CTE names defined in the statement and the statement's own CREATE target are excluded.
    Raises SQLParseError when sqlglot cannot parse the SQL.
    """
    return set(ordered_references(parse_statements(sql, dialect)))


def created_tables(sql: str, dialect: str = "duckdb") -> list[str]:
    """Names the SQL creates with CREATE TABLE/VIEW, in order."""
    names: list[str] = []
    for statement in parse_statements(sql, dialect):
        target = _write_target(statement)
        if target is not None and (name := _table_name(target)) is not None:
            names.append(name)
    return names
