"""Code inspection, the backend of the `inspect_python` tool: what a span of worker code computes.

inspect.py     `inspect_code(code)`: the code's row conditions, aggregates, group keys and joins,
               read from pandas statements (code_pandas.py) and the SQL the code runs (code_sql.py)
code_model.py  the records both readers produce (`CodeSemantics`, `Selection`, `Condition`, ...)

It knows nothing of managers or requirements: `stateguard.tools` runs it for any policy, and the
rules manager's semantic checker (`stateguard.verification`) reads its records.
"""
