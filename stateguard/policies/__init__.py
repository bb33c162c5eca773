"""Manager policies, each a generator over the action protocol (`base.py`).

rules.py (deterministic checks), llm_manager.py (a model over an OpenAI-compatible endpoint),
hierarchical.py (rules first, the model where they cannot decide), and the ablations
observer.py and freeform.py (paper C.5). `registry.py` names them (`MANAGERS`, the one registry
`manager=<name>` reads); `eval.components.make_manager(kind)` builds one from it.
"""
