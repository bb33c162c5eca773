"""Stage dependencies recovered from the SQL text itself (paper B.2).

An analysis thread is an ordered list of stages; each stage materializes one named result
table. A SQL stage's upstream stages are the tables its SQL reads, found with sqlglot — never
hand labels. A pandas stage has no SQL, so it declares its `inputs` explicitly.

What counts as "read":
* every table in FROM / JOIN / subqueries / set operations (UNION, ...), at any depth;
* minus names that resolve to a CTE in scope (DuckDB scoping: a non-recursive CTE sees only the
  CTEs defined before it, so `WITH t AS (SELECT * FROM t)` reads the real table `t`);
* minus the target of `CREATE TABLE/VIEW ... AS`, the tables of `DROP`, and tables created by an
  earlier statement of the same script (a scratch table made and then read in one stage).
Comments never count (sqlglot keeps them out of the tree), aliases are resolved to the table
they name, table functions (`read_csv(...)`, `range(...)`) are not tables, and names are
lower-cased because DuckDB matches identifiers case-insensitively, quoted or not.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlglot import exp
from sqlglot.errors import SqlglotError

__all__ = [
    "SQLDependencyError",
    "Stage",
    "created_tables",
    "downstream_of",
    "parse_statements",
    "referenced_tables",
    "stage_dependencies",
]

# DuckDB's default schema; `main.s3` and `memory.main.s3` name the same table as `s3`.
DEFAULT_SCHEMA = "main"


class SQLDependencyError(ValueError):
    """SQL that cannot be parsed, or a stage list whose dependencies are not well formed."""


def parse_statements(sql: str, dialect: str = "duckdb") -> list[exp.Expr]:
    """Parse a (possibly multi-statement) SQL string; empty statements are dropped."""
    try:
        parsed = sqlglot.parse(sql, dialect=dialect)
    except SqlglotError as err:
        raise SQLDependencyError(f"cannot parse SQL as {dialect}: {err}") from err
    statements = [s for s in parsed if s is not None]
    if not statements:
        raise SQLDependencyError("SQL contains no statement")
    return statements


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


def _ordered_references(statements: Sequence[exp.Expr]) -> list[str]:
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
    Raises SQLDependencyError when sqlglot cannot parse the SQL.
    """
    return set(_ordered_references(parse_statements(sql, dialect)))


def created_tables(sql: str, dialect: str = "duckdb") -> list[str]:
    """Names the SQL creates with CREATE TABLE/VIEW, in order."""
    names: list[str] = []
    for statement in parse_statements(sql, dialect):
        target = _write_target(statement)
        if target is not None and (name := _table_name(target)) is not None:
            names.append(name)
    return names


def _strip_default_schema(name: str) -> str:
    """`main.x` / `<catalog>.main.x` -> `x`; other names unchanged."""
    parts = name.split(".")
    if len(parts) == 2 and parts[0] == DEFAULT_SCHEMA:
        return parts[1]
    if len(parts) == 3 and parts[1] == DEFAULT_SCHEMA:
        return parts[2]
    return name


class Stage(BaseModel):
    """One stage of an analysis thread: it materializes the result table `name`.

    SQL stages give `sql` (a bare query, or `CREATE TABLE <name> AS ...`); their inputs are
    parsed from it. Pandas stages have no SQL and must list their `inputs` (earlier stage names
    or raw base tables); `code` may carry the pandas source for the record.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, description="Result table name (case-insensitive).")
    kind: Literal["sql", "pandas"] = "sql"
    sql: str | None = None
    inputs: list[str] | None = Field(
        default=None, description="Pandas stages only: the tables the code reads."
    )
    code: str | None = Field(default=None, description="Pandas stages only: optional source text.")

    @field_validator("name")
    @classmethod
    def _normalize_name(cls, name: str) -> str:
        name = name.strip().lower()
        if not name:
            raise ValueError("stage name must not be blank")
        return name

    @field_validator("inputs")
    @classmethod
    def _normalize_inputs(cls, inputs: list[str] | None) -> list[str] | None:
        if inputs is None:
            return None
        out: list[str] = []
        for raw in inputs:
            name = raw.strip().lower()
            if not name:
                raise ValueError("pandas stage inputs must be non-blank table names")
            if name not in out:
                out.append(name)
        return out

    @model_validator(mode="after")
    def _kind_fields(self) -> Stage:
        if self.kind == "sql":
            if not self.sql or not self.sql.strip():
                raise ValueError(f"sql stage {self.name!r} needs `sql`")
            if self.inputs is not None:
                raise ValueError(
                    f"sql stage {self.name!r} must not list `inputs`; they are parsed from its SQL"
                )
            if self.code is not None:
                raise ValueError(f"sql stage {self.name!r} must not carry pandas `code`")
            made = [_strip_default_schema(n) for n in created_tables(self.sql)]
            if made and self.name not in made:
                raise ValueError(
                    f"sql stage {self.name!r} creates {', '.join(made)} but not {self.name!r}; "
                    "name the stage after the table it materializes"
                )
        else:
            if self.inputs is None:
                raise ValueError(
                    f"pandas stage {self.name!r} needs an explicit `inputs` list (use [] for none)"
                )
            if self.sql is not None:
                raise ValueError(f"pandas stage {self.name!r} must not carry `sql`")
        return self

    @classmethod
    def from_sql(cls, sql: str, dialect: str = "duckdb") -> Stage:
        """A SQL stage named after its CREATE target, e.g. `CREATE TABLE s3 AS ...` -> `s3`."""
        made = created_tables(sql, dialect)
        if not made:
            raise SQLDependencyError("SQL has no CREATE TABLE/VIEW target to name the stage after")
        return cls(name=_strip_default_schema(made[-1]), sql=sql)

    def references(self, dialect: str = "duckdb") -> list[str]:
        """Tables this stage reads, in order of first appearance."""
        if self.kind == "pandas":
            return list(self.inputs or [])
        assert self.sql is not None
        return _ordered_references(parse_statements(self.sql, dialect))


def stage_dependencies(
    stages: Sequence[Stage],
    *,
    base_tables: Collection[str] | None = None,
    dialect: str = "duckdb",
) -> dict[str, list[str]]:
    """Map each stage name to the EARLIER stages it reads, in stage order.

    References to raw base tables are dropped. With `base_tables` given, a reference that is
    neither an earlier stage nor a listed base table is an error; without it, every name that
    is not a stage is taken to be a raw base table. Reading a later stage, or the stage itself,
    is always an error.
    """
    position: dict[str, int] = {}
    for i, stage in enumerate(stages):
        if stage.name in position:
            raise SQLDependencyError(
                f"stage name {stage.name!r} appears twice (positions {position[stage.name] + 1} and "
                f"{i + 1}); each stage must materialize a distinct table"
            )
        position[stage.name] = i
    known_base = None if base_tables is None else {b.lower() for b in base_tables}
    if known_base is not None:
        known_base |= {_strip_default_schema(b) for b in known_base}

    deps: dict[str, list[str]] = {}
    for i, stage in enumerate(stages):
        upstream: set[str] = set()
        for ref in stage.references(dialect):
            name = _strip_default_schema(ref)
            j = position.get(name)
            if j is None:
                if known_base is not None and ref not in known_base and name not in known_base:
                    raise SQLDependencyError(
                        f"stage {stage.name!r} (position {i + 1}) reads {ref!r}, which is neither an "
                        f"earlier stage nor a known base table (base tables: {sorted(known_base)})"
                    )
                continue
            if j == i:
                raise SQLDependencyError(
                    f"stage {stage.name!r} (position {i + 1}) reads its own result table; a stage "
                    "may only read earlier stages or raw base tables"
                )
            if j > i:
                raise SQLDependencyError(
                    f"stage {stage.name!r} (position {i + 1}) reads {name!r}, which is defined later "
                    f"(position {j + 1}); a stage may only read earlier stages or raw base tables"
                )
            upstream.add(name)
        deps[stage.name] = sorted(upstream, key=position.__getitem__)
    return deps


def downstream_of(stage: str, deps: Mapping[str, Iterable[str]]) -> list[str]:
    """Stages that read `stage` directly or transitively (not `stage` itself), in `deps` order."""
    stage = stage.lower()
    affected: set[str] = {stage}
    out: list[str] = []
    changed = True
    while changed:
        changed = False
        for name, ups in deps.items():
            if name not in affected and any(u in affected for u in ups):
                affected.add(name)
                changed = True
    for name in deps:
        if name in affected and name != stage:
            out.append(name)
    return out
