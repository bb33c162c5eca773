"""A turn's answer read from the output of the code that computed it (`answer_from_output`).

Under load each model call of the 1.5B worker took 80-225 s (issue 30, nat3a), and iris turns 1, 3
and 4 computed the right values, then ran out of time before the separate call that would have
written them inside <answer>. Agent protocols already let code finish a question (DABstep's
`final_answer(...)`, a CodeAct agent's printed result), so the LLM worker may take a successful
cell's output as the turn's answer when that output is one JSON object and nothing else: the
dev set's answer form (one object, one key per requested value). The model is told so in its
system prompt (`OUTPUT_ANSWER_NOTE`), so printing such an object is its own choice to answer; a
helper defined in its session, `print_answer(dict)` (`OUTPUT_ANSWER_SETUP`), prints pandas and
numpy values as plain JSON.

An intermediate print must not pass for an answer, so the rule is narrow: the whole output (the
cell's stdout plus its displayed value) parses as one JSON object (not a Python repr, not a list,
not labelled lines), it has at least one key, at most `MAX_KEYS` keys and `MAX_LEAVES` values in
all, and it fits in `MAX_CHARS` characters. A data dump (records, a column's values) breaks the
size bounds; `print(df.head())` or `print(dict)` is not JSON.

    json_object_output('{"n_flowers": 150}\\n', None) -> {"n_flowers": 150}
    json_object_output('n = 150\\n{"n_flowers": 150}', None) -> None   # more than the object
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "MAX_CHARS",
    "MAX_KEYS",
    "MAX_LEAVES",
    "OUTPUT_ANSWER_NOTE",
    "OUTPUT_ANSWER_SETUP",
    "json_object_output",
]

MAX_CHARS = 1500  # a requested answer is short; the dev set's longest reference answer is ~400
MAX_KEYS = 12  # top-level keys: the values a question asks for, not a table's columns
MAX_LEAVES = 60  # numbers and texts in all (a result per group of a few dozen groups at most)

# Run in the workspace when the option is on: the helper the note names. In nat4's first minutes
# the 1.5B model, told to print(json.dumps(...)), passed pandas Series and numpy ints to it and
# failed with "not JSON serializable" turn after turn; the helper converts them.
OUTPUT_ANSWER_SETUP = """
def print_answer(answer):
    \"\"\"Print `answer` as one JSON object: pandas and numpy values become plain numbers, lists and dicts.\"\"\"
    import json as _json
    import numpy as _np
    import pandas as _pd

    def plain(v):
        if isinstance(v, _pd.DataFrame):
            return [plain(r) for r in v.to_dict(orient="records")]
        if isinstance(v, _pd.Series):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, _pd.Timestamp):
            return v.date().isoformat() if v == v.normalize() else v.isoformat()
        if isinstance(v, (_pd.Index, _np.ndarray, _pd.api.extensions.ExtensionArray, list, tuple, set)):
            return [plain(x) for x in (sorted(v, key=str) if isinstance(v, set) else v)]
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, _np.generic):
            return v.item()
        return v

    value = plain(answer)
    print(_json.dumps(value if isinstance(value, dict) else {"answer": value}, default=str))
"""

# Added to the worker's system prompt when the option is on; no example object (the 1.5B model
# copied an example answer verbatim in nat3).
OUTPUT_ANSWER_NOTE = (
    "\nYou may also answer from code: print_answer(...) is defined in the session; give it a dict "
    "with one key per value the question asks for (pandas and numpy values are converted). When a "
    "code block runs without error and its whole output is that one printed object, the object "
    "is taken as your final answer to the current question and the question ends. So call it only "
    "once you have seen the values and the dict holds exactly what the question asks for; while "
    "exploring, print plain text."
)


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


def json_object_output(stdout: str, value: str | None) -> dict[str, Any] | None:
    """The JSON object that is a successful cell's whole output, or None when the output is
    anything else (see the module's rule). `value` is the cell's displayed last expression."""
    text = "\n".join(x for x in (stdout or "", value or "") if x).strip()
    if not text.startswith("{") or not text.endswith("}") or len(text) > MAX_CHARS:
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if not isinstance(parsed, dict) or not parsed or len(parsed) > MAX_KEYS:
        return None
    if _leaves(parsed) > MAX_LEAVES:
        return None
    return parsed
