"""What a turn's code does, in terms a requirement can be checked against (the output of the
semantic part of `inspect_python`).

A `Selection` is one computation over rows: a SQL statement (CREATE ... AS SELECT, or a bare
SELECT) or one pandas statement. It records the row conditions it applies (with the *kept*
side after folding NOT / `~` / drop-masks), the aggregates it computes, its group keys, joins,
ordering and row limit, what it reads and what it binds. `CodeSemantics` collects the selections
of a span of worker steps plus the bindings a probe needs: which DataFrame variable holds which
SQL table, which connection variable runs the SQL, and which dict variable holds the reported
fields. Built by `code_sql.py` and `code_pandas.py`; `inspect.py` is the entry point.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CondOp = Literal[">", ">=", "<", "<=", "==", "!=", "in", "not_in", "notnull", "isnull", "other"]


# a comparison read with its operands swapped, and its negation (NOT ..., ~mask); shared by
# the SQL and the pandas readers
MIRROR: dict[str, str] = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
NEGATE: dict[str, str] = {
    ">": "<=",
    "<=": ">",
    "<": ">=",
    ">=": "<",
    "==": "!=",
    "!=": "==",
    "in": "not_in",
    "not_in": "in",
    "notnull": "isnull",
    "isnull": "notnull",
    "other": "other",
}


class Condition(BaseModel):
    """One row condition; `op` is the side of it the computation keeps."""

    model_config = ConfigDict(frozen=True)
    column: str | None = Field(description="Column compared (None for an aggregate, e.g. COUNT(*)).")
    op: CondOp
    value: float | str | None = None
    values: list[float | str] = Field(default_factory=list, description="IN-list members.")
    clause: Literal["where", "having", "mask", "query", "dropna", "on"] = "where"
    lhs: str = Field(default="", description="Source text of the compared expression.")
    text: str = Field(default="", description="Source text of the whole condition.")
    columns: list[str] = Field(default_factory=list, description="Every column the condition mentions.")


class Aggregate(BaseModel):
    model_config = ConfigDict(frozen=True)
    function: str = Field(description="mean, median, sum, count, nunique, min, max, std, or other.")
    column: str | None = None
    alias: str | None = Field(default=None, description="Output column / answer field it is bound to.")
    standalone: bool = Field(
        default=True, description="It is the output itself, not an operand of arithmetic."
    )
    window: bool = False
    text: str = ""
    receiver: str = Field(default="", description="pandas: source text of the series it is taken over.")
    position: int | None = Field(default=None, description="SQL: index of the output column it feeds.")

    @property
    def per_row(self) -> bool:
        """A value for each row (an SQL window; a pandas `transform`, `rolling`, `expanding` or `ewm`),
        not one summary of the rows."""
        return self.window or bool(
            re.search(r"\.transform\(", self.text)
            or re.search(r"\.(?:rolling|expanding|ewm)\(", self.receiver)
        )


class Join(BaseModel):
    model_config = ConfigDict(frozen=True)
    how: Literal["inner", "left", "right", "outer", "cross"]
    keys: list[str] = Field(default_factory=list)
    left: str = ""
    right: str = ""
    text: str = ""


class Selection(BaseModel):
    """One SQL statement or pandas statement of the span."""

    model_config = ConfigDict(frozen=True)
    language: Literal["sql", "pandas"]
    step: int | None = Field(default=None, description="Worker step the code came from.")
    target: str | None = Field(default=None, description="Table created / variable bound.")
    sources: list[str] = Field(default_factory=list, description="Tables or frames read.")
    frame: str = Field(default="", description="pandas: source text of the frame the mask selects from.")
    mask: str = Field(default="", description="pandas: source text of the row mask (kept side).")
    sql: str = Field(default="", description="SQL: the statement's query (without CREATE ... AS).")
    conditions: list[Condition] = Field(default_factory=list)
    aggregates: list[Aggregate] = Field(default_factory=list)
    group_keys: list[str] = Field(default_factory=list)
    joins: list[Join] = Field(default_factory=list)
    order: list[tuple[str, bool]] = Field(default_factory=list, description="(expression, descending).")
    limit: int | None = None
    outputs: list[str] = Field(default_factory=list, description="Output column names, in order.")
    flag: tuple[str, str, bool] | None = Field(
        default=None,
        description="pandas: `frame['col'] = <mask>` stores a flag column: (frame, column, exact). "
        "exact: the mask is one comparison, so the flag must equal it; else an `&` of parts, so a "
        "flagged row must meet each part.",
    )
    flags: dict[str, list[Condition]] = Field(
        default_factory=dict,
        description="SQL: boolean columns the select list computes from comparisons "
        "(`visib < 5 AS poor_vis`): alias -> the comparisons, AND-ed. Not row filters.",
    )

    @property
    def is_mask(self) -> bool:
        """pandas: a boolean mask of its own (`worked = ps["hours"] > 0`), not rows of a frame."""
        return (
            self.language == "pandas"
            and not self.frame
            and bool(self.conditions)
            and all(c.clause == "mask" for c in self.conditions)
        )

    def mentions(self, column: str) -> bool:
        low = column.lower()
        return any(
            low in (c.lower() for c in cond.columns) or (cond.column or "").lower() == low
            for cond in self.conditions
        )


class CodeSemantics(BaseModel):
    model_config = ConfigDict(frozen=True)
    selections: list[Selection] = Field(default_factory=list)
    frames: dict[str, str] = Field(
        default_factory=dict, description="DataFrame variable -> SQL table it holds."
    )
    connection: str | None = Field(default=None, description="Variable of the SQL connection.")
    reports: dict[str, list[str]] = Field(
        default_factory=dict, description="dict variable -> reported fields."
    )
    fields: dict[str, str] = Field(
        default_factory=dict, description="answer field -> source text of its value."
    )
    literals: list[float] = Field(
        default_factory=list, description="Numeric literals of the code and its SQL."
    )
    errors: list[str] = Field(
        default_factory=list, description="Code that could not be read (kept, not fatal)."
    )
    listed: list[str] = Field(
        default_factory=list,
        description="DataFrames and SQL tables the code builds from values written out in it (a hand-typed "
        "list or codebook: `pd.DataFrame({...literals...})`, `CREATE TABLE t AS ... VALUES ...`).",
    )
    statements: list[str] = Field(
        default_factory=list, description="The SQL texts the code runs (`con.execute(...)`), in order."
    )

    def tables(self) -> set[str]:
        return {s.target.lower() for s in self.selections if s.target and s.language == "sql"}

    def for_target(self, name: str) -> Selection | None:
        low = name.lower()
        found = [s for s in self.selections if (s.target or "").lower() == low]
        return found[-1] if found else None
