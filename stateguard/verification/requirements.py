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

Those are the built-in kinds (`Kind`). A semantic rule registered from outside
(`stateguard.verification.rules`) adds a kind by name: `register_kind` records the fields it needs
and its words, and a requirement of that kind validates from then on. `kind` is read and written as
the same strings either way, so old traces stay readable.

The deterministic extractor (`extract.py`) and the LLM extractor (`llm_extract.py`) both return
`list[Requirement]`; the LLM's JSON is validated against this model, so a malformed requirement
is dropped with the validation error instead of reaching a probe.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Op = Literal[">", ">=", "<", "<=", "==", "!="]
Function = Literal["mean", "median", "sum", "count", "nunique", "min", "max", "std", "quantile"]

MIRROR: dict[str, str] = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
# the comparators that order values (a bound), as against equality tests
ORDER_OPS = (">", ">=", "<", "<=")
# pandas' comparison methods (`s.ge(5)`) and the comparator each one is
METHODS: dict[str, str] = {"ge": ">=", "le": "<=", "gt": ">", "lt": "<"}
# a number said in units and written in thousands or millions, or the other way round
UNIT_SCALES = (1e-3, 1e3, 1e-6, 1e6)


def coded(values: list[str]) -> bool:
    """Are all the scope's values whole numbers written as text, a codebook's codes ("2", "-1")?"""
    return bool(values) and all(re.fullmatch(r"-?\d+", str(v)) for v in values)


# an ordering comparator as code writes it (not part of `->`, `=>`, `<>` or `!=`)
CODE_COMPARATOR = r"(?:>=|<=|(?<![<>=!-])>(?!=)|<(?![=>]))"
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


@dataclass(frozen=True)
class KindSpec:
    """What the schema knows of a registered (not built-in) kind: the fields a requirement of it
    must set, and its words (`describe`: the requirement as a constraint text; `reason`: the
    worker-facing words of a finding, given the probe item's status). None: generic words."""

    needs: tuple[str, ...] = ()
    describe: Callable[[Requirement], str] | None = None
    reason: Callable[[Requirement, str], str] | None = None


_BUILT_IN = frozenset(k.value for k in Kind)
# Registered kinds by name; the built-in ones are `Kind` and never listed here.
_REGISTERED: dict[str, KindSpec] = {}


def register_kind(name: str, spec: KindSpec) -> None:
    """Let requirements of kind `name` validate (called by `rules.register_rule`)."""
    if name in _BUILT_IN or name in _REGISTERED:
        raise ValueError(f"requirement kind {name!r} is taken; give the new rule another kind name")
    _REGISTERED[name] = spec


def unregister_kind(name: str) -> None:
    _REGISTERED.pop(name, None)


def registered_kind(name: str) -> KindSpec | None:
    """The spec of a registered kind; None for a built-in or unknown one."""
    return _REGISTERED.get(name)


def kind_names() -> list[str]:
    """Every kind a requirement may have: the built-in ones, then the registered ones."""
    return [k.value for k in Kind] + list(_REGISTERED)


class Requirement(BaseModel):
    """One checkable requirement; which fields are set depends on `kind` (validated below)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind | str = Field(description="A built-in `Kind`, or the name of a registered rule's kind.")
    text: str = Field(min_length=1, description="The words of the task that state it.")
    source: Literal["question", "context", "definition"] = "question"
    subject: list[str] = Field(default_factory=list, description="Words naming the quantity or column.")
    after: list[str] = Field(
        default_factory=list,
        description="comparison: the noun right after the bound's number when words before it name a subject "
        "too ('these lines are short of 450 at-bats'); it is the quantity when it names exactly one column.",
    )
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
    descending: bool | None = Field(
        default=None,
        description="order: largest first? aggregation: the statistic's largest (True) or smallest (False) "
        "is asked ('the deepest mean depth'); None when no extreme is said",
    )
    decimals: int | None = Field(default=None, ge=0, description="rounding: decimal places.")
    fields: list[str] = Field(default_factory=list, description="output: answer fields the turn reports.")
    term: str | None = Field(default=None, description="definition: the defined word ('windy', 'delayed').")

    @field_validator("kind", mode="before")
    @classmethod
    def _known_kind(cls, value: Any) -> Any:
        # A built-in kind is always the enum member (code tests `req.kind is Kind.SCOPE`); any
        # other name must be registered.
        if isinstance(value, str) and value in _BUILT_IN:
            return Kind(value)
        if isinstance(value, str) and value in _REGISTERED:
            return value
        raise ValueError(
            f"unknown requirement kind {value!r}: expected one of {', '.join(kind_names())}; a new kind "
            "comes with its semantic rule (`stateguard.verification.rules.register_rule`)"
        )

    @model_validator(mode="after")
    def _complete(self) -> Requirement:
        need: dict[str, tuple[str, ...]] = {
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
        spec = _REGISTERED.get(self.kind)
        needed = spec.needs if spec is not None else need.get(self.kind, ())
        missing = [f for f in needed if getattr(self, f) in (None, [], "")]
        if missing:
            raise ValueError(f"a {self.kind} requirement needs {', '.join(missing)} (text: {self.text!r})")
        if self.kind is Kind.NOT_NULL and not (self.subject or self.columns):
            raise ValueError(f"a not_null requirement needs subject words or columns (text: {self.text!r})")
        if self.upper is not None and (self.value is None or self.upper < self.value):
            raise ValueError(f"a range needs value <= upper (text: {self.text!r})")
        return self

    @property
    def flag_scope(self) -> bool:
        """Rows named by a boolean flag column ("the efficient cars"): a scope on the value True."""
        return self.kind is Kind.SCOPE and self.values == ["True"] and not self.exclude

    def describe(self) -> str:
        """The requirement in words (constraint text; no computed values)."""
        what = " ".join(self.columns or self.subject) or "the kept rows"
        spec = _REGISTERED.get(self.kind)
        if spec is not None:
            return spec.describe(self) if spec.describe else f"{self.kind}: {self.text}"
        if self.flag_scope:
            return f"only rows whose flag {what} is true"
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
            # a quantile by its words ("the 80th percentile of lwage")
            return f"the {self.text if self.function == 'quantile' else self.function} of {what}"
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
            if self.how == "left" and self.subject:
                where = f" of {self.subject[1]}" if len(self.subject) > 1 else ""
                return f"every {self.subject[0]}{where} kept{keys}"
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
