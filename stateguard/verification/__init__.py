"""Semantic verification: what the task asks, checked against what the code did (paper 3.3, A.3-A.4).

requirements.py (schema) <- extract.py (deterministic) / llm_extract.py (endpoint)
inspect.py (+ code_sql.py, code_pandas.py, code_model.py): the code's conditions, aggregates, keys
vocabulary.py: the data's columns and category values; bind.py: requirement -> probe
probes.py, sql_edit.py: probe programs; definitions.py: current definitions of terms
verifier.py: the tool-call sequence a manager policy runs (`SemanticVerifier`)
"""
