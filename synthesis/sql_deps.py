"""Stage dependencies recovered from the SQL text itself (paper B.2).

An analysis thread is an ordered list of stages; each stage materializes one named result
table. A SQL stage's upstream stages are the tables its SQL reads, found with sqlglot — never
hand labels. A pandas stage has no SQL, so it declares its `inputs` explicitly.

What counts as "read" (implemented in `stateguard.sql`, shared with the runtime):
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

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stateguard.sql import (
    SQLParseError,
    created_tables,
    ordered_references,
    parse_statements,
    referenced_tables,
)

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


# SQL that cannot be parsed, or a stage list whose dependencies are not well formed (one class
# with the runtime's parse error, so either name catches both).
SQLDependencyError = SQLParseError


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
        return ordered_references(parse_statements(self.sql, dialect))


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
