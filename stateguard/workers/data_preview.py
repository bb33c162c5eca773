"""What the LLM worker is shown of the data before it writes code: a compact preview.

A data analyst opens a file before computing with it. The 1.5B model run as the worker on the dev
set (issue 30, docs/results/llm_worker_dev.md) did not: it guessed `petal_length` where iris has
`petalLength` and failed turn after turn on the first column name it had to guess. So the worker
now starts a task with a preview of the task's data files (their names, shape, column names and
dtypes, and the first rows), and every later turn with the data frames its session holds (name,
shape, columns). Both are read by a workspace probe: a forked copy of the session that changes
nothing and records no dataflow, so the analysis itself is the same with or without a preview.

Both texts are bounded in characters (about four to a token), so a preview cannot push the prompt
past a small served window (the worker's 8,192-token llama.cpp server).

    text = preview_text(workspace.run_probe(files_probe(1600)))
"""

from __future__ import annotations

from stateguard.workspace import ProbeResult

# The probe's code, run in the workspace with `BASE_PATH` from the task's prelude. Every file of
# `BASE_PATH/data` (CSV, TSV, JSON, JSON lines, parquet, gzipped or not) is loaded the way an
# analyst would first try, and described in an even share of the budget left. Each file is named
# by its full path: shown only `barley.json`, the 1.5B model opened 'barley.json' relative to its
# working folder (FileNotFoundError, nat3), although the system prompt names the folder. Names start
# with `_pv_` so that nothing of the probe can clash with a name the session holds.
_FILES_PROBE = r"""
import os as _pv_os, json as _pv_json, gzip as _pv_gzip
import pandas as _pv_pd

_pv_budget = {budget}
_pv_root = _pv_os.path.join(str(BASE_PATH), "data")
_pv_files = sorted(
    _pv_os.path.relpath(_pv_os.path.join(d, f), _pv_root)
    for d, _, fs in _pv_os.walk(_pv_root) for f in fs if not f.startswith(".")
)


def _pv_columns(frame):
    return ", ".join(f"{{c}} ({{t}})" for c, t in zip(frame.columns, frame.dtypes.astype(str)))


def _pv_rows(frame):
    with _pv_pd.option_context("display.width", 200, "display.max_columns", 12):
        text = frame.head(3).to_string(index=False)
    return "\n".join("    " + line[:160] for line in text.splitlines())


def _pv_describe(rel):
    path = _pv_os.path.join(_pv_root, rel)
    name = rel[:-3] if rel.endswith(".gz") else rel
    opener = _pv_gzip.open if rel.endswith(".gz") else open
    if name.endswith(".json"):
        with opener(path, "rt", encoding="utf-8") as fh:
            raw = _pv_json.load(fh)
        if isinstance(raw, list) and raw and all(isinstance(r, dict) for r in raw[:50]):
            frame = _pv_pd.DataFrame(raw)
            shape = f"JSON: a list of {{len(raw)}} records (dicts), fields"
        elif isinstance(raw, dict):
            keys = list(raw)[:12]
            return f"{{path}}: JSON object with keys {{keys}}"
        else:
            return f"{{path}}: JSON {{type(raw).__name__}} of {{len(raw)}} items"
    elif name.endswith(".jsonl"):
        frame = _pv_pd.read_json(path, lines=True)
        shape = f"JSON lines: {{len(frame)}} records, fields"
    elif name.endswith((".csv", ".tsv", ".txt")):
        frame = _pv_pd.read_csv(path, sep="\t" if name.endswith(".tsv") else ",")
        shape = f"{{len(frame)}} rows x {{frame.shape[1]}} columns"
    elif name.endswith(".parquet"):
        frame = _pv_pd.read_parquet(path)
        shape = f"parquet, {{len(frame)}} rows x {{frame.shape[1]}} columns"
    else:
        return f"{{path}}: {{_pv_os.path.getsize(path)}} bytes"
    return f"{{path}} ({{shape}}): {{_pv_columns(frame)}}\n  first rows:\n{{_pv_rows(frame)}}"


_pv_used = 0
for _pv_i, _pv_rel in enumerate(_pv_files):
    _pv_left = _pv_budget - _pv_used
    if _pv_left < 160:  # no room to describe the rest: name them, so the model knows they exist
        _pv_rest = _pv_files[_pv_i:]
        print(f"... {{len(_pv_rest)}} more files: " + ", ".join(_pv_rest)[: max(_pv_left, 200)])
        break
    _pv_share = max(_pv_left // (len(_pv_files) - _pv_i), 160)  # an even share of what is left
    try:
        _pv_text = _pv_describe(_pv_rel)
    except Exception as _pv_exc:
        _pv_text = f"{{_pv_os.path.join(_pv_root, _pv_rel)}}: not previewed ({{type(_pv_exc).__name__}})"
    if len(_pv_text) > _pv_share:
        _pv_text = _pv_text[: _pv_share - 4] + " ..."
    print(_pv_text)
    _pv_used += len(_pv_text) + 1
"""

# The data frames (and Series) of the session: the worker lists the session's names (the
# workspace's own listing) and the probe describes those it was given, most recent last.
_FRAMES_PROBE = r"""
import pandas as _pv_pd

_pv_budget = {budget}
_pv_lines = []
for _pv_name in {names!r}:
    _pv_value = globals().get(_pv_name)
    if isinstance(_pv_value, _pv_pd.DataFrame):
        _pv_cols = [str(c) for c in _pv_value.columns]
        _pv_more = f", ... ({{len(_pv_cols)}} in all)" if len(_pv_cols) > 12 else ""
        _pv_lines.append(
            f"{{_pv_name}}: DataFrame {{_pv_value.shape[0]}}x{{_pv_value.shape[1]}}, "
            f"columns {{', '.join(_pv_cols[:12])}}{{_pv_more}}"
        )
    elif isinstance(_pv_value, _pv_pd.Series):
        _pv_lines.append(f"{{_pv_name}}: Series of {{len(_pv_value)}} ({{_pv_value.dtype}})")
_pv_out, _pv_used = [], 0
for _pv_line in reversed(_pv_lines):  # the names made last are the likeliest to be built on
    _pv_line = _pv_line[:300]
    if _pv_used + len(_pv_line) > _pv_budget:
        _pv_out.append(f"... and {{len(_pv_lines) - len(_pv_out)}} more")
        break
    _pv_out.append(_pv_line)
    _pv_used += len(_pv_line) + 1
print("\n".join(reversed(_pv_out)))
"""

FILES_HEADER = "The task's data files (a preview, read them yourself to use them):"
FRAMES_HEADER = "Data frames in your session now:"


def files_probe(budget_chars: int) -> str:
    """Probe code that prints a preview of every file under `BASE_PATH/data` in about
    `budget_chars` characters (files past the budget are only named)."""
    return _FILES_PROBE.format(budget=int(budget_chars))


def frames_probe(names: list[str], budget_chars: int) -> str:
    """Probe code that describes the data frames and Series among `names` (the session's
    variables, oldest first) in at most `budget_chars`; other names are skipped."""
    return _FRAMES_PROBE.format(budget=int(budget_chars), names=[str(n) for n in names])


def preview_text(result: ProbeResult, header: str, max_chars: int) -> str:
    """The preview as a block for the turn's message, or "" when the probe failed or found
    nothing (a failed preview must not stop the turn; the model can still look for itself)."""
    body = (result.stdout or "").strip()
    if not result.ok or not body:
        return ""
    if len(body) > max_chars:
        body = body[: max_chars - 4] + " ..."
    return f"{header}\n{body}"
