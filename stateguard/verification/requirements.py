"""Checkable requirements read from a task's text: the schema both extractors must produce.

A `Requirement` is one thing the question (or the task's standing instructions, or a definition
stated by an earlier turn) asks the computation to respect, in a form a probe can test:

    scope        rows limited to some category values ("the Gentoo penguins", "excluding JFK")
    comparison   rows on one side of a bound ("at least 13 mph", "between 10 and 20")
    not_null     rows with a recorded value ("with a recorded arrival delay")
    aggregation  the statistic computed ("the mean life expectancy", "total the population")
    share        parts of a whole ("what share ... does each carrier have": parts sum to the whole)
    grouping     one result per key ("per carrier and month")
    join         which rows two inputs are matched on, and whether unmatched rows stay
    order        ranking and top-k ("the 5 carriers with the largest shares")
    rounding     decimal places of reported values
    output       the fields the turn must report, each with a defined value
    source       the current version of a named table or frame is read ("with the current `jobs`")

The deterministic extractor (`extract.py`) and the LLM extractor (`llm_extract.py`) both return
`list[Requirement]`; the LLM's JSON is validated against this model, so a malformed requirement
is dropped with the validation error instead of reaching a probe.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Op = Literal[">", ">=", "<", "<=", "==", "!="]
Function = Literal["mean", "median", "sum", "count", "nunique", "min", "max", "std"]

MIRROR: dict[str, str] = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
COMPLEMENT: dict[str, str] = {">": "<=", "<=": ">", "<": ">=", ">=": "<", "==": "!=", "!=": "=="}


class Kind(StrEnum):
    SCOPE = "scope"
    COMPARISON = "comparison"
    NOT_NULL = "not_null"
    AGGREGATION = "aggregation"
    SHARE = "share"
    GROUPING = "grouping"
    JOIN = "join"
    ORDER = "order"
    ROUNDING = "rounding"
    OUTPUT = "output"
    SOURCE = "source"


class Requirement(BaseModel):
    """One checkable requirement; which fields are set depends on `kind` (validated below)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    text: str = Field(min_length=1, description="The words of the task that state it.")
    source: Literal["question", "context", "definition"] = "question"
    subject: list[str] = Field(default_factory=list, description="Words naming the quantity or column.")
    columns: list[str] = Field(default_factory=list, description="Data columns it is about, when known.")
    op: Op | None = Field(default=None, description="comparison: the kept side of the bound.")
    value: float | None = Field(default=None, description="comparison: the bound (a percentage as stated).")
    upper: float | None = Field(default=None, description="comparison: upper bound of a 'between' range.")
    percent: bool = False
    values: list[str] = Field(default_factory=list, description="scope: the category values named.")
    exclude: bool = Field(default=False, description="scope: the named values are to be left out.")
    function: Function | None = Field(default=None, description="aggregation: the statistic asked for.")
    keys: list[str] = Field(default_factory=list, description="grouping / join: key words or columns.")
    how: Literal["inner", "left", "outer"] | None = Field(
        default=None, description="join: unmatched rows kept?"
    )
    k: int | None = Field(default=None, ge=1, description="order: how many rows are asked for.")
    descending: bool | None = Field(default=None, description="order: largest first?")
    decimals: int | None = Field(default=None, ge=0, description="rounding: decimal places.")
    fields: list[str] = Field(default_factory=list, description="output: answer fields the turn reports.")
    term: str | None = Field(default=None, description="definition: the defined word ('windy', 'delayed').")

    @model_validator(mode="after")
    def _complete(self) -> Requirement:
        need: dict[Kind, tuple[str, ...]] = {
            Kind.SCOPE: ("values",),
            Kind.COMPARISON: ("op", "value"),
            Kind.AGGREGATION: ("function",),
            Kind.GROUPING: ("keys",),
            Kind.JOIN: ("how",),
            Kind.ORDER: ("descending",),
            Kind.ROUNDING: ("decimals",),
            Kind.OUTPUT: ("fields",),
            Kind.SOURCE: ("subject",),
        }
        missing = [f for f in need.get(self.kind, ()) if getattr(self, f) in (None, [], "")]
        if missing:
            raise ValueError(
                f"a {self.kind.value} requirement needs {', '.join(missing)} (text: {self.text!r})"
            )
        if self.kind is Kind.NOT_NULL and not (self.subject or self.columns):
            raise ValueError(f"a not_null requirement needs subject words or columns (text: {self.text!r})")
        if self.upper is not None and (self.value is None or self.upper < self.value):
            raise ValueError(f"a range needs value <= upper (text: {self.text!r})")
        return self

    def describe(self) -> str:
        """The requirement in words (constraint text; no computed values)."""
        what = " ".join(self.columns or self.subject) or "the kept rows"
        if self.kind is Kind.SCOPE:
            return f"{what} limited to {'everything but ' if self.exclude else ''}{', '.join(self.values)}"
        if self.kind is Kind.COMPARISON:
            bound = f"{self.value:g}{'%' if self.percent else ''}"
            if self.upper is not None:
                return f"{what} between {bound} and {self.upper:g}{'%' if self.percent else ''}"
            return f"{what} {self.op} {bound}"
        if self.kind is Kind.NOT_NULL:
            return f"{what} recorded (no missing values)"
        if self.kind is Kind.AGGREGATION:
            return f"the {self.function} of {what}"
        if self.kind is Kind.SHARE:
            return (
                f"the shares {'of ' + what if what != 'the kept rows' else ''} add up to the whole".replace(
                    "  ", " "
                )
            )
        if self.kind is Kind.GROUPING:
            return f"one result per {' and '.join(self.columns or self.keys)}"
        if self.kind is Kind.JOIN:
            keys = f" on {', '.join(self.columns or self.keys)}" if self.keys or self.columns else ""
            return f"{'matched rows only' if self.how == 'inner' else 'unmatched rows kept'}{keys}"
        if self.kind is Kind.ORDER:
            top = f"top {self.k} " if self.k else ""
            return f"{top}ranked by {what}, {'largest' if self.descending else 'smallest'} first"
        if self.kind is Kind.SOURCE:
            return f"reads the current {what}"
        if self.kind is Kind.ROUNDING:
            return f"decimal results are reported rounded to {self.decimals} decimal places"
        return f"reports {', '.join(self.fields)}, each with a defined value"


def holds(op: str, left: float, bound: float) -> bool:
    """Does `left op bound` hold (plain Python semantics)?"""
    return {
        ">": left > bound,
        ">=": left >= bound,
        "<": left < bound,
        "<=": left <= bound,
        "==": left == bound,
        "!=": left != bound,
    }[op]
