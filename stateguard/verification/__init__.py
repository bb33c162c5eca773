"""Semantic verification, the rules manager's checker: what the task asks, checked against what the
code did (paper 3.3, A.3-A.4).

requirements.py (schema) <- extract.py (deterministic) / llm_extract.py (endpoint)
rules/: one `SemanticRule` per kind of requirement (its readers and its binding); `extract()` and
`bind()` iterate them. The built-in ones are registered here, on first import of the package.
the code's conditions, aggregates, keys: `stateguard.inspection` (the inspect_python backend)
finding.py: what a check found (`Finding`), shared with the rules' own checks (policies.checks)
vocabulary.py: the data's columns and category values; bind.py: requirement -> probe
probes.py, sql_edit.py: probe programs; definitions.py: current definitions of terms
verifier.py: the tool-call sequence a manager policy runs (`SemanticVerifier`)
"""

from stateguard.verification.rules import builtin as _builtin  # noqa: F401  (registers the built-in rules)
