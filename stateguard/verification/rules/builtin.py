"""The built-in semantic rules: each kind's readers and binding, in the order they are read.

The order is behaviour: a clause is read by comparison, not_null, scope, aggregation, share,
grouping, order and join in that order, then the whole question by aggregation (the `mean_*`
fields), source, rounding and output; `dedupe` keeps the first of two equal requirements and probe
items are numbered in binding order. Registered rules come after these. The readers are the
functions of `extract.py` and `current.py`; the bindings are `RequirementBinder`'s methods and the
functions of `bind_shape.py` and `current.py` (their probes are built in `probes.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from stateguard.verification import bind_shape, counted_rows, current, extract, standing, superseded
from stateguard.verification.bind import RequirementBinder
from stateguard.verification.binder import Binder, Plan
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.rules.registry import Binding, Reading, SemanticRule, register_rule


def _method(bound: Callable[[RequirementBinder, Requirement, Plan], None]) -> Binding:
    """A `RequirementBinder` method as a binding (`bind()` always hands rules that binder)."""

    def call(binder: Binder, req: Requirement, plan: Plan) -> None:
        assert isinstance(binder, RequirementBinder), "bind() hands every rule a RequirementBinder"
        bound(binder, req, plan)

    return call


def _scopes(clause: str, reading: Reading) -> list[Requirement]:
    if reading.vocab is None:
        return []
    return extract.scopes(clause, reading.vocab, reading.tables) + extract.flag_scopes(
        clause, reading.vocab, reading.tables
    )


BUILT_IN: tuple[SemanticRule, ...] = (
    SemanticRule(
        Kind.COMPARISON,
        bind=_method(RequirementBinder.rows),
        read_clause=lambda clause, reading: (
            extract.comparisons(clause) + extract.percent_bounds(clause, reading.vocab)
        ),
        row_condition=True,
    ),
    SemanticRule(
        Kind.NOT_NULL,
        bind=_method(RequirementBinder.rows),
        read_clause=lambda clause, _: extract.not_null(clause),
        row_condition=True,
    ),
    SemanticRule(Kind.SCOPE, bind=_method(RequirementBinder.rows), read_clause=_scopes, row_condition=True),
    SemanticRule(
        Kind.AGGREGATION,
        bind=_method(RequirementBinder.aggregation),
        read_clause=lambda clause, _: extract.aggregations(clause, []),
        read_question=lambda reading: extract.aggregations("", reading.fields),
    ),
    SemanticRule(
        Kind.SHARE,
        bind=_method(RequirementBinder.share),
        read_clause=lambda clause, reading: extract.shares(clause, reading.fields),
    ),
    SemanticRule(
        Kind.GROUPING,
        bind=bind_shape.grouping,
        read_clause=lambda clause, reading: extract.unqualified_keys(extract.groupings(clause), reading),
    ),
    SemanticRule(Kind.ORDER, bind=bind_shape.order, read_clause=lambda clause, _: extract.rankings(clause)),
    SemanticRule(Kind.JOIN, bind=bind_shape.join, read_clause=lambda clause, _: extract.joins(clause)),
    SemanticRule(
        Kind.SOURCE,
        bind=current.bind_source,
        read_question=lambda reading: current.current_sources(reading.question),
    ),
    SemanticRule(
        Kind.ROUNDING, read_question=lambda reading: extract.rounding(reading.question, reading.context)
    ),
    SemanticRule(
        Kind.OUTPUT,
        bind=_method(RequirementBinder.output),
        read_question=lambda reading: extract.outputs(reading.fields),
    ),
)

# Kinds read from the run's committed code, not from the question (`superseded.py`, `standing.py`,
# `counted_rows.py`): the verifier
# makes these requirements and their probe items itself, so the rule has no reader or binding.
FROM_CODE: tuple[SemanticRule, ...] = (
    SemanticRule(superseded.KIND, needs=("term",), describe=superseded.describe, reason=superseded.reason),
    SemanticRule(standing.KIND, needs=("term",), describe=standing.describe, reason=standing.reason),
    SemanticRule(
        counted_rows.KIND, needs=("fields",), describe=counted_rows.describe, reason=counted_rows.reason
    ),
)

for _rule in BUILT_IN + FROM_CODE:
    register_rule(_rule)
