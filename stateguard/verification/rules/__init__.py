"""Semantic rules: the kinds of requirement read from a question, one `SemanticRule` each.

registry.py  `SemanticRule`, `register_rule`, `rules()`: what `extract()` and `bind()` iterate
builtin.py   the built-in kinds (scope, comparison, ..., source), in the order they are read

A new rule is one module that builds a `SemanticRule` (its kind, a reader of question clauses, a
binding that adds probe items to the plan, and the probe builder the binding uses) and one
registration: `register_rule(RULE)` in that module, imported by the package that uses it, or an
entry in `builtin.BUILT_IN` for a rule that ships with StateGuard (docs/extending.md, section 6).
`builtin` is imported by `stateguard/verification/__init__.py`, not here: the registry must load
before `extract.py` and `bind.py`, which the built-in table reads.
"""

from stateguard.verification.rules.registry import (
    Binding,
    ClauseReader,
    QuestionReader,
    Reading,
    SemanticRule,
    register_rule,
    rules,
    unregister_rule,
)

__all__ = [
    "Binding",
    "ClauseReader",
    "QuestionReader",
    "Reading",
    "SemanticRule",
    "register_rule",
    "rules",
    "unregister_rule",
]
