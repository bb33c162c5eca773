"""The one table of mistake kinds: every reader of a kind of mistake looks it up here.

A kind is a row of `MISTAKES`, keyed by its label (what the detection report groups by and what
`bench.variants` selects): `stale`, `precision`, `exec_error`, or `counterfactual:<semantic>`.
Each row says
  fault          the scripted worker's fault kind that makes it (`Fault.kind`);
  semantic       for a counterfactual, what θ' changes (`Fault.semantic`);
  intervention   the synthesized SQL intervention family that makes it (`InterventionRecord.kind`),
                 with its `operations` (`synthesis.interventions`), or None for hand-declared only;
  hint_words     the words a repair hint's reason must use to name it (the response model,
                 `stateguard.workers.response`; lower case, matched as word prefixes);
  reason         the worded reason a teacher trajectory gives for it (no code, no values);
  stated         the test that the task text states what θ' changes (`synthesis.screen`), read
                 from `StatedFacts`;
  group          the row of the per-kind detection report it counts in (its own label: the report
                 merges no two kinds).

Adding a kind: one row here (and, for a synthesized one, its operation in
`synthesis.interventions`). The enum and the Literal below are the typed spellings of the same
names for pydantic and mypy; importing this module checks that they and the rows agree.

    mistake = MISTAKES["counterfactual:changed_threshold"]
    by_intervention(InterventionKind.CATEGORY_SCOPE).semantic      # 'category_scope'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Literal

from stateguard.artifacts.lexicon import LEXICON

__all__ = [
    "MISTAKES",
    "SEMANTIC_KINDS",
    "FaultKind",
    "InterventionKind",
    "Mistake",
    "SemanticKind",
    "StatedFacts",
    "by_intervention",
    "by_label",
]


class InterventionKind(StrEnum):
    """The families of stated counterfactuals θ -> θ' (`synthesis.interventions` applies them)."""

    NUMERIC_PARAMETER = "numeric_parameter"
    FORMULA_SEMANTICS = "formula_semantics"
    COMPARISON_DIRECTION = "comparison_direction"
    CATEGORY_SCOPE = "category_scope"
    FILTER_CONDITION = "filter_condition"


FaultKind = Literal["stale", "counterfactual", "precision", "exec_error"]
SemanticKind = Literal[
    "flipped_comparison",
    "aggregation_swap",
    "grouping_key",
    "join",
    "dropped_filter",
    "category_scope",
    "pre_update_definition",
    "changed_threshold",
    "other",
]
SEMANTIC_KINDS: tuple[str, ...] = SemanticKind.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class StatedFacts:
    """What a stated-test reads: the task text and the literals of the SQL site θ' rewrote."""

    text: str
    operation: str
    before: str  # the site's SQL before the change
    numbers: frozenset[Decimal]  # numeric literals of the site
    strings: frozenset[str]  # string literals of the site
    columns: tuple[str, ...]  # columns the site names
    stated_numbers: frozenset[Decimal]  # numbers the text mentions (digits or words)


@dataclass(frozen=True)
class Mistake:
    label: str
    fault: FaultKind
    hint_words: tuple[str, ...]
    semantic: SemanticKind | None = None
    intervention: InterventionKind | None = None
    operations: tuple[str, ...] = ()
    reason: str | None = None
    stated: Callable[[StatedFacts], bool] | None = None

    @property
    def group(self) -> str:
        """The per-kind detection report's row: one per kind, never shared."""
        return self.label


# ----------------------------------------------------------------------------- stated-tests
_DIRECTION = re.compile(rf"\b({LEXICON.pattern(LEXICON.direction_words())})\b", re.IGNORECASE)
_FORMULA_WORDS = {
    "avg_to_median": ("mean", "average"),
    "sum_to_avg": ("total", "sum", "share", "percent"),
    "swap_ratio": ("ratio", "share", "percent", "growth", "per capita", "rate"),
}
_PRESENCE = re.compile(
    r"\b(record|recorded|with (a|an|both)|measure|measured|measurement|known|present)\b", re.IGNORECASE
)
_SUPERLATIVE = re.compile(r"\b(which|the most|largest|highest|lowest|smallest|top)\b")


def _cites_numbers(f: StatedFacts) -> bool:
    return bool(f.numbers) and f.numbers <= f.stated_numbers


def _threshold_stated(f: StatedFacts) -> bool:
    if f.operation == "set_limit" and f.numbers == {Decimal(1)}:  # LIMIT 1: "which ... the most"
        return bool(_SUPERLATIVE.search(f.text.lower()))
    return _cites_numbers(f)


def _direction_stated(f: StatedFacts) -> bool:
    return _cites_numbers(f) and bool(_DIRECTION.search(f.text))


def _formula_stated(f: StatedFacts) -> bool:
    low = f.text.lower()
    return any(w in low for w in _FORMULA_WORDS.get(f.operation, ()))


def _values_stated(f: StatedFacts) -> bool:
    low = f.text.lower()
    return all(s.lower() in low for s in f.strings) and f.numbers <= f.stated_numbers


def _scope_stated(f: StatedFacts) -> bool:
    return _values_stated(f) and bool(f.strings or f.numbers)


def _column_named(column: str, low: str) -> bool:
    words = [
        w for w in column.lower().split("_") if len(w) >= 4 and w not in ("length", "depth", "count")
    ] or [column]
    return any(w in low for w in words)


def _filter_stated(f: StatedFacts) -> bool:
    """The dropped or negated conjunct's values, or the attribute it requires to be present."""
    if f.strings or f.numbers:
        return _values_stated(f)
    if "NULL" in f.before.upper():
        low = f.text.lower()
        return (
            bool(f.columns)
            and all(_column_named(c, low) for c in f.columns)
            and bool(_PRESENCE.search(f.text))
        )
    return False


# ----------------------------------------------------------------------------- the table
_STALE_WORDS = (
    "stale",
    "redefin",
    "earlier definition",
    "outdated",
    "invalidat",
    "recomput",
    "superseded",
    "no longer current",
    "before the update",
    "previous definition",
)
# A scope change and a dropped filter both change which rows are kept, and a hint names them the
# same way; the two kinds still count in separate report rows.
_ROWS_KEPT_WORDS = ("filter", "subset", "condition", "exclud", "restrict", "rows kept")

_ROWS = (
    Mistake("stale", "stale", _STALE_WORDS),
    Mistake("precision", "precision", ("decimal", "rounded", "rounding", "precision")),
    Mistake(
        "exec_error", "exec_error", ("error", "raised", "exception", "failed", "did not run", "never re-run")
    ),
    Mistake(
        "counterfactual:flipped_comparison",
        "counterfactual",
        ("comparison", "direction", "inequality", "reversed", "flipped"),
        semantic="flipped_comparison",
        intervention=InterventionKind.COMPARISON_DIRECTION,
        operations=("flip_comparison",),
        reason="a comparison in this result points the wrong way relative to the "
        "question, so it keeps the opposite side of the cut",
        stated=_direction_stated,
    ),
    Mistake(
        "counterfactual:aggregation_swap",
        "counterfactual",
        ("aggregat", "mean", "median", "average", "sum", "total", "count"),
        semantic="aggregation_swap",
        intervention=InterventionKind.FORMULA_SEMANTICS,
        operations=("avg_to_median", "sum_to_avg", "swap_ratio"),
        reason="the aggregate or ratio computed for this result is not the quantity the question defines",
        stated=_formula_stated,
    ),
    Mistake(
        "counterfactual:grouping_key",
        "counterfactual",
        ("group", "grouping", "per "),
        semantic="grouping_key",
    ),
    Mistake(
        "counterfactual:join",
        "counterfactual",
        ("join", "merge", "key", "matched rows", "unmatched"),
        semantic="join",
    ),
    Mistake(
        "counterfactual:dropped_filter",
        "counterfactual",
        _ROWS_KEPT_WORDS,
        semantic="dropped_filter",
        intervention=InterventionKind.FILTER_CONDITION,
        operations=("drop_conjunct", "negate_conjunct"),
        reason="a filter condition of this result differs from the conditions the question states",
        stated=_filter_stated,
    ),
    Mistake(
        "counterfactual:category_scope",
        "counterfactual",
        _ROWS_KEPT_WORDS,
        semantic="category_scope",
        intervention=InterventionKind.CATEGORY_SCOPE,
        operations=("add_in_item", "remove_in_item"),
        reason="the set of categories included in this result is not the scope the question asks for",
        stated=_scope_stated,
    ),
    Mistake(
        "counterfactual:pre_update_definition",
        "counterfactual",
        (
            "definition",
            "updated",
            "revised",
            "redefin",
            "stale",
            "earlier version",
            "before the update",
        ),
        semantic="pre_update_definition",
    ),
    Mistake(
        "counterfactual:changed_threshold",
        "counterfactual",
        ("threshold", "cut-off", "cutoff", "cut off", "stated value", "limit"),
        semantic="changed_threshold",
        intervention=InterventionKind.NUMERIC_PARAMETER,
        operations=("set_threshold", "set_limit"),
        reason="a numeric threshold or limit in this result does not follow the value the "
        "question states, so the selection of rows is off",
        stated=_threshold_stated,
    ),
    Mistake(
        "counterfactual:other",
        "counterfactual",
        ("requirement", "question asks", "does not answer"),
        semantic="other",
    ),
)

MISTAKES: dict[str, Mistake] = {m.label: m for m in _ROWS}
_BY_INTERVENTION = {m.intervention: m for m in _ROWS if m.intervention is not None}


def by_label(label: str) -> Mistake | None:
    """The row of a `Fault.label`, or None for a label no row has."""
    return MISTAKES.get(label)


def by_intervention(kind: InterventionKind | str) -> Mistake:
    """The row a synthesized intervention family makes."""
    return _BY_INTERVENTION[InterventionKind(kind)]


def _check_table() -> None:
    """The typed spellings and the rows name the same kinds (a new row needs both)."""
    semantics = {m.semantic for m in _ROWS if m.semantic is not None}
    if semantics != set(SEMANTIC_KINDS) or set(_BY_INTERVENTION) != set(InterventionKind):
        raise AssertionError(
            "stateguard.artifacts.mistakes: the rows and SemanticKind / InterventionKind disagree: "
            f"rows {sorted(semantics)}, Literal {sorted(SEMANTIC_KINDS)}, "
            f"interventions {sorted(map(str, _BY_INTERVENTION))}; add the kind to both"
        )
    for m in _ROWS:
        expected = f"counterfactual:{m.semantic}" if m.fault == "counterfactual" else m.fault
        if m.label != expected:
            raise AssertionError(f"stateguard.artifacts.mistakes: row {m.label!r} should be {expected!r}")


_check_table()
