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

Adding a kind: one row here, or `register_mistake(Mistake(...))` from a package of your own (the
table is a registry: every reader looks a kind up when it needs it, and `Fault.semantic` accepts
any semantic a row has). A synthesized kind also needs its family in `InterventionKind` and its
operation in `synthesis.interventions`; importing this module checks that the families and the
rows agree.

    mistake = MISTAKES["counterfactual:changed_threshold"]
    by_intervention(InterventionKind.CATEGORY_SCOPE).semantic      # 'category_scope'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator

from stateguard.artifacts.lexicon import LEXICON

__all__ = [
    "MISTAKES",
    "FaultKind",
    "InterventionKind",
    "Mistake",
    "SemanticKind",
    "StatedFacts",
    "by_intervention",
    "by_label",
    "register_mistake",
    "semantic_kinds",
]


class InterventionKind(StrEnum):
    """The families of stated counterfactuals θ -> θ' (`synthesis.interventions` applies them)."""

    NUMERIC_PARAMETER = "numeric_parameter"
    FORMULA_SEMANTICS = "formula_semantics"
    COMPARISON_DIRECTION = "comparison_direction"
    CATEGORY_SCOPE = "category_scope"
    FILTER_CONDITION = "filter_condition"


FaultKind = Literal["stale", "counterfactual", "precision", "exec_error"]


def semantic_kinds() -> tuple[str, ...]:
    """What θ' can change, as the table's counterfactual rows name it (registered ones included)."""
    return tuple(m.semantic for m in MISTAKES.values() if m.semantic is not None)


def _known_semantic(value: str) -> str:
    if value not in semantic_kinds():
        raise ValueError(
            f"unknown semantic kind {value!r}: the mistakes table has {', '.join(semantic_kinds())}; "
            "add a row (stateguard.artifacts.mistakes.register_mistake) to declare another"
        )
    return value


# A `Fault.semantic`: a string that some row of the table names (checked when a fault is read).
SemanticKind = Annotated[str, AfterValidator(_known_semantic)]


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
    semantic: str | None = None
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
def _counterfactual(
    semantic: str,
    hint_words: tuple[str, ...],
    intervention: InterventionKind | None = None,
    operations: tuple[str, ...] = (),
    stated: Callable[[StatedFacts], bool] | None = None,
    reason: str | None = None,
) -> Mistake:
    """A counterfactual row: its label is always `counterfactual:<semantic>`."""
    return Mistake(
        f"counterfactual:{semantic}",
        "counterfactual",
        hint_words,
        semantic,
        intervention,
        operations,
        reason,
        stated,
    )


# The table is laid out by hand, one kind per row group: the columns read across better than
# the one-argument-per-line form the formatter would give.
# fmt: off
_STALE_WORDS = ("stale", "redefin", "earlier definition", "outdated", "invalidat", "recomput", "superseded",
                "no longer current", "before the update", "previous definition")
# A scope change and a dropped filter both change which rows are kept, and a hint names them the
# same way; the two kinds still count in separate report rows.
_ROWS_KEPT_WORDS = ("filter", "subset", "condition", "exclud", "restrict", "rows kept")

_ROWS = (
    Mistake("stale", "stale", _STALE_WORDS),
    Mistake("precision", "precision", ("decimal", "rounded", "rounding", "precision")),
    Mistake("exec_error", "exec_error", ("error", "raised", "exception", "failed", "did not run", "never re-run")),
    _counterfactual("flipped_comparison", ("comparison", "direction", "inequality", "reversed", "flipped"),
                    InterventionKind.COMPARISON_DIRECTION, ("flip_comparison",), _direction_stated,
                    "a comparison in this result points the wrong way relative to the question, so it keeps the opposite side of the cut"),
    _counterfactual("aggregation_swap", ("aggregat", "mean", "median", "average", "sum", "total", "count"),
                    InterventionKind.FORMULA_SEMANTICS, ("avg_to_median", "sum_to_avg", "swap_ratio"), _formula_stated,
                    "the aggregate or ratio computed for this result is not the quantity the question defines"),
    _counterfactual("grouping_key", ("group", "grouping", "per ")),
    _counterfactual("join", ("join", "merge", "key", "matched rows", "unmatched")),
    _counterfactual("dropped_filter", _ROWS_KEPT_WORDS,
                    InterventionKind.FILTER_CONDITION, ("drop_conjunct", "negate_conjunct"), _filter_stated,
                    "a filter condition of this result differs from the conditions the question states"),
    _counterfactual("category_scope", _ROWS_KEPT_WORDS,
                    InterventionKind.CATEGORY_SCOPE, ("add_in_item", "remove_in_item"), _scope_stated,
                    "the set of categories included in this result is not the scope the question asks for"),
    _counterfactual("pre_update_definition",
                    ("definition", "updated", "revised", "redefin", "stale", "earlier version", "before the update")),
    _counterfactual("changed_threshold", ("threshold", "cut-off", "cutoff", "cut off", "stated value", "limit"),
                    InterventionKind.NUMERIC_PARAMETER, ("set_threshold", "set_limit"), _threshold_stated,
                    "a numeric threshold or limit in this result does not follow the value the question states, so the selection of rows is off"),
    _counterfactual("other", ("requirement", "question asks", "does not answer")),
)
# fmt: on

MISTAKES: dict[str, Mistake] = {}
_BY_INTERVENTION: dict[InterventionKind, Mistake] = {}


def by_label(label: str) -> Mistake | None:
    """The row of a `Fault.label`, or None for a label no row has."""
    return MISTAKES.get(label)


def by_intervention(kind: InterventionKind | str) -> Mistake:
    """The row a synthesized intervention family makes."""
    return _BY_INTERVENTION[InterventionKind(kind)]


def register_mistake(mistake: Mistake) -> None:
    """Add a kind to the table; every reader (faults, variants, the response model, the detection
    report, screening, trajectories) finds it from then on. Refused, with the reason: a label or a
    semantic already taken, an intervention family another row makes, or a label that does not
    follow the fault kind (`counterfactual:<semantic>` for a counterfactual, else the kind)."""
    expected = f"counterfactual:{mistake.semantic}" if mistake.fault == "counterfactual" else mistake.fault
    problem = None
    if mistake.label != expected:
        problem = f"its label should be {expected!r}"
    elif mistake.label in MISTAKES:
        problem = "that label is taken"
    elif mistake.semantic is not None and mistake.semantic in semantic_kinds():
        problem = f"semantic {mistake.semantic!r} is taken"
    elif mistake.intervention is not None and mistake.intervention in _BY_INTERVENTION:
        problem = f"intervention {mistake.intervention.value!r} is made by another row"
    elif mistake.intervention is not None and not (mistake.operations and mistake.reason and mistake.stated):
        problem = "a synthesized kind needs its operations, its worded reason and its stated-test"
    if problem is not None:
        raise ValueError(f"mistake {mistake.label!r} not registered: {problem}")
    MISTAKES[mistake.label] = mistake
    if mistake.intervention is not None:
        _BY_INTERVENTION[mistake.intervention] = mistake


for _row in _ROWS:
    register_mistake(_row)
if set(_BY_INTERVENTION) != set(InterventionKind):  # every synthesized family has its row
    raise AssertionError(
        "stateguard.artifacts.mistakes: InterventionKind and the rows disagree: "
        f"rows make {sorted(map(str, _BY_INTERVENTION))}; add a row for each family"
    )
