"""The semantic rule registry: one entry per kind of requirement read from the question.

    register_rule(SemanticRule(kind="distinct_rows", read_clause=..., bind=..., needs=(...)))

A rule is everything the rules manager's semantic checker needs for one kind: how a requirement
of that kind is read from the question (per clause, or from the whole question), and how it is
tied to the code and turned into probe items (`bind`, which adds `ProbeItem`s built by the rule's
own probe builder to the plan, or the requirement to `plan.unverified`). `extract()` and `bind()`
iterate the rules in the order they were registered; the built-in kinds come first
(`rules/builtin.py`), so a registered rule only adds requirements after theirs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from stateguard.verification.binder import Binder, Plan
from stateguard.verification.requirements import Kind, KindSpec, Requirement, register_kind, unregister_kind
from stateguard.verification.vocabulary import Vocabulary


@dataclass(frozen=True)
class Reading:
    """What a reader may use besides its clause: the turn's question, the task's standing
    instructions, the data's vocabulary (None before any code ran) and the tables the code
    touches, and the answer fields the question names in backticks."""

    question: str
    context: str = ""
    vocab: Vocabulary | None = None
    tables: list[str] | None = None
    fields: list[str] = field(default_factory=list)


ClauseReader = Callable[[str, Reading], list[Requirement]]
QuestionReader = Callable[[Reading], list[Requirement]]
Binding = Callable[[Binder, Requirement, Plan], None]


@dataclass(frozen=True)
class SemanticRule:
    """One kind of requirement, end to end. Readers may return requirements of other kinds too
    (the comparison reader also reads 'in 1931 and in 1932' as a scope); `bind` is called for
    each requirement of this rule's kind."""

    kind: str
    bind: Binding | None = None  # None: nothing to probe (rounding is checked by the answer format)
    read_clause: ClauseReader | None = None  # called once per clause of the question
    read_question: QuestionReader | None = None  # called once, after every clause was read
    # A row condition is kept only when the clause segment holding it parses whole (every word is a
    # lexicon word, a column, a value, a table or a number): a misread one would become a filter.
    row_condition: bool = False
    # The schema of a registered kind (built-in kinds have theirs in requirements.py).
    needs: tuple[str, ...] = ()
    describe: Callable[[Requirement], str] | None = None
    reason: Callable[[Requirement, str], str] | None = None


RULES: dict[str, SemanticRule] = {}


def register_rule(rule: SemanticRule) -> SemanticRule:
    """Add `rule`; a kind that is not built in becomes a valid `Requirement.kind` from now on."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", rule.kind):
        raise ValueError(f"semantic rule kind {rule.kind!r}: use a lower-case name like 'distinct_rows'")
    built_in = rule.kind in {k.value for k in Kind}
    if built_in and (rule.needs or rule.describe or rule.reason):
        raise ValueError(
            f"the built-in kind {rule.kind!r} has its fields and words in requirements.py and binder.py"
        )
    if rule.kind in RULES:
        raise ValueError(f"a semantic rule for kind {rule.kind!r} is registered already; pick another kind")
    if not built_in:
        register_kind(rule.kind, KindSpec(needs=rule.needs, describe=rule.describe, reason=rule.reason))
    RULES[rule.kind] = rule
    return rule


def unregister_rule(kind: str) -> None:
    """Remove a registered rule (tests, or a plugin that is switched off)."""
    RULES.pop(kind, None)
    unregister_kind(kind)


def rules() -> list[SemanticRule]:
    """The rules in registration order (built-in ones first)."""
    if not RULES:
        raise RuntimeError(
            "no semantic rules are registered: the built-in ones are registered when the package "
            "`stateguard.verification` is imported (its __init__ imports rules.builtin)"
        )
    return list(RULES.values())


def row_condition_kinds() -> set[str]:
    return {r.kind for r in rules() if r.row_condition}
