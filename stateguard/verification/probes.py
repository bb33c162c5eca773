"""Probe programs: small read-only checks of a requirement against live workspace values.

Each check is a `ProbeItem` whose `code` is a snippet that sets `_v` (True = the requirement is
violated) and `_o` (a dict of what it observed). The same snippet serves twice:

    batch(items)            one program for the `run_probe` tool; prints one JSON line
                            {item id: {"v": bool, "o": {...}} or {"error": "..."}}
    constraint_code(item)   the executable form of a state constraint: raises AssertionError
                            with the observation when violated, passes otherwise (also when the
                            check cannot run: an unverifiable requirement is not a violation)

Builders here make the snippets: rows kept by a SQL query or a pandas mask that break a stated
condition, a SQL query re-run with one part changed, a statistic recomputed another way, shares
that must add up to the whole, reported fields without a value.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from typing import Any, Literal

import sqlglot
from pydantic import BaseModel, ConfigDict, Field
from sqlglot import exp

from stateguard.verification import rerun
from stateguard.verification.requirements import Kind, Requirement, coded

_SQL_OPS = {"==": "=", "!=": "<>"}


class ProbeItem(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    requirement: Requirement
    check: str = Field(description="What is compared, e.g. 'kept_rows', 'rerun', 'share_sum'.")
    code: str
    variables: list[str] = Field(
        default_factory=list, description="Workspace variables a violation localizes to."
    )
    reason: str = Field(description="Worker-safe words: what is wrong, no code and no computed values.")
    status: str = Field(
        default="", description="What inspection saw: agrees, differs, missing, threshold, aggregation, ..."
    )
    constraint: bool = Field(
        default=False,
        description="It checks an artifact the turn left (a table, frame or "
        "report), so it can be the state's executable constraint and stays valid after a retry.",
    )
    edit: SpanEdit | None = Field(
        default=None,
        description="The turn's code as the requirement states it, for the answer check: a finding "
        "whose corrected code reports the same answer is dropped.",
    )
    also: list[SpanEdit] = Field(
        default_factory=list,
        description="The code as each other reading of the same words states it (a group phrase two "
        "columns answer to): the answer check must see every reading change the answer.",
    )
    needs_changed: bool = Field(
        default=False,
        description="A finding only when the answer check sees a changed answer (an unknown one is "
        "none): for checks bound through the code itself rather than words that name a column.",
    )
    list_entries: bool = Field(
        default=False,
        description="A scope whose values only a typed-in list and the tables joined from it hold: a "
        "finding needs rows beyond the list's own entries to meet it (`emptied.entries_only`).",
    )


class SpanEdit(BaseModel):
    """How the turn's code would read with the requirement as stated: one SELECT (as the inspection
    normalizes it) replaced by its stated version, or one piece of cell text by another."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["sql", "text"]
    before: str
    after: str


class ProbeOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    violated: bool | None = Field(description="None when the probe could not decide.")
    observed: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


def _quote(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(int(value)) if float(value).is_integer() else repr(float(value))
    return "'" + str(value).replace("'", "''") + "'"


def sql_predicate(
    req: Requirement, column: str, numeric: bool = True, scale: float = 1.0, missing_ok: bool = False
) -> str:
    """The stated condition on `column` as SQL; with `missing_ok`, a missing value meets it too."""
    if missing_ok:
        return f"({sql_predicate(req, column, numeric, scale)}) OR {column} IS NULL"
    if req.kind is Kind.NOT_NULL:
        return f"{column} IS NOT NULL"
    if req.kind is Kind.SCOPE:
        items = ", ".join(
            _quote(float(v)) if numeric and re.fullmatch(r"-?\d+(\.\d+)?", v) else _quote(v)
            for v in req.values
        )
        return f"{column} {'NOT IN' if req.exclude else 'IN'} ({items})"
    assert req.value is not None and req.op is not None
    if req.upper is not None:
        return f"{column} BETWEEN {_quote(req.value * scale)} AND {_quote(req.upper * scale)}"
    return f"{column} {_SQL_OPS.get(req.op, req.op)} {_quote(req.value * scale)}"


def pandas_predicate(req: Requirement, series: str, scale: float = 1.0, missing_ok: bool = False) -> str:
    """The stated condition on a pandas Series expression; with `missing_ok`, a missing value meets it."""
    if missing_ok:
        return f"({pandas_predicate(req, series, scale)} | ({series}).isna())"
    if req.kind is Kind.NOT_NULL:
        return f"({series}).notna()"
    if req.kind is Kind.SCOPE:
        vals = [str(v) for v in req.values]
        text = f"({series}).astype(str)"
        if coded(vals):
            # a codebook's code: `2.0` in a float column (one with missing values) is the code 2
            text += r".str.replace(r'\.0$', '', regex=True)"
        test = f"{text}.isin({vals!r})"
        return f"~{test}" if req.exclude else test
    assert req.value is not None and req.op is not None
    if req.upper is not None:
        return f"({series}).between({req.value * scale!r}, {req.upper * scale!r})"
    return f"(({series}) {req.op} {req.value * scale!r})"


def _strip_to_rows(select_sql: str) -> exp.Select | None:
    try:
        select = sqlglot.parse_one(select_sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None
    if not isinstance(select, exp.Select):
        return None
    for key in ("group", "having", "order", "limit", "offset", "qualify", "distinct"):
        select.set(key, None)
    return select


def kept_rows_sql(select_sql: str, predicate: str) -> str | None:
    """Count the rows the query keeps (before grouping) and those that break `predicate`."""
    select = _strip_to_rows(select_sql)
    if select is None:
        return None
    try:
        select.set(
            "expressions",
            [
                sqlglot.parse_one("COUNT(*) AS n"),
                sqlglot.parse_one(f"COUNT(*) FILTER (WHERE NOT ({predicate})) AS bad", dialect="duckdb"),
            ],
        )
    except Exception:  # noqa: BLE001
        return None
    return select.sql(dialect="duckdb")


def kept_rows_probe(con: str, select_sql: str, predicate: str) -> str | None:
    query = kept_rows_sql(select_sql, predicate)
    if query is None:
        return None
    return (
        f"_n, _bad = {con}.execute({query!r}).fetchone()\n"
        f"_v = bool(_bad)\n_o = {{'kept_rows': int(_n or 0), 'rows_breaking_requirement': int(_bad or 0)}}"
    )


def table_rows_probe(con: str, table: str, predicate: str) -> str:
    """Rows of a SQL table (an artifact the turn created) that break `predicate`."""
    query = f"SELECT COUNT(*), COUNT(*) FILTER (WHERE NOT ({predicate})) FROM {table}"
    return (
        f"_n, _bad = {con}.execute({query!r}).fetchone()\n"
        f"_v = bool(_bad)\n_o = {{'rows': int(_n or 0), 'rows_breaking_requirement': int(_bad or 0)}}"
    )


def frame_rows_probe(frame: str, predicate: str) -> str:
    """Rows of a DataFrame expression that break a pandas predicate (written over `_f`)."""
    return (
        f"_f = {frame}\n_ok = {predicate}\n_bad = int((~_ok.astype(bool)).sum()) if len(_f) else 0\n"
        f"_v = _bad > 0\n_o = {{'rows': int(len(_f)), 'rows_breaking_requirement': _bad}}"
    )


def flag_probe(frame: str, column: str, predicate: str, exact: bool) -> str:
    """A stored flag column against the stated condition (a pandas predicate over `_f`): an exact
    flag must equal it row by row; a flag built from several `&` parts must imply it."""
    test = "(_flag != _ok)" if exact else "(_flag & ~_ok)"
    return (
        f"_f = {frame}\n_ok = ({predicate}).fillna(False).astype(bool)\n"
        f"_flag = _f[{column!r}].fillna(False).astype(bool)\n_bad = int({test}.sum())\n"
        f"_v = _bad > 0\n_o = {{'rows': int(len(_f)), 'flagged': int(_flag.sum()), 'rows_breaking_requirement': _bad}}"
    )


def table_flag_probe(con: str, table: str, flag: str, predicate: str, exact: bool) -> str:
    """A flag column of a SQL table against the stated condition: an exact flag (one comparison)
    must equal it row by row; a flag AND-ed from several parts must imply it. Only the flag is
    tested, never the table's other rows: a flag marks rows, it keeps them all."""
    marked = f"COALESCE(CAST({flag} AS BOOLEAN), FALSE)"
    stated = f"COALESCE(({predicate}), FALSE)"
    test = f"{marked} <> {stated}" if exact else f"{marked} AND NOT {stated}"
    query = f"SELECT COUNT(*), COUNT(*) FILTER (WHERE {marked}), COUNT(*) FILTER (WHERE {test}) FROM {table}"
    return (
        f"_n, _m, _bad = {con}.execute({query!r}).fetchone()\n_v = bool(_bad)\n"
        f"_o = {{'rows': int(_n or 0), 'flagged': int(_m or 0), 'rows_breaking_requirement': int(_bad or 0)}}"
    )


def rerun_probe(con: str, original: str, changed: str) -> str:
    """The query as written and as the requirement states it give different rows."""
    return textwrap.dedent(f"""\
        def _canon(_rows):
            _out = []
            for _r in _rows:
                _out.append(tuple(round(float(_x), 6) if isinstance(_x, float) else _x for _x in _r))
            return sorted(_out, key=repr)
        _a = _canon({con}.execute({original!r}).fetchall())
        _b = _canon({con}.execute({changed!r}).fetchall())
        _v = _a != _b
        _o = {{'rows_as_written': len(_a), 'rows_as_stated': len(_b), 'differ': _v}}""")


def count_probe(frame: str, mask: str, stated_mask: str) -> str:
    """Rows a pandas mask keeps as written and as the task states it. A stated condition that keeps
    no row at all is no evidence: the answer it implies is empty, so the binding is the likelier
    mistake (a definition's "two years before" bound to the year column)."""
    return (
        f"_f = {frame}\n_a = int(len(_f[({mask})]))\n_b = int(len(_f[({stated_mask})]))\n"
        f"_v = _a != _b and _b > 0\n_o = {{'rows_as_written': _a, 'rows_as_stated': _b}}"
    )


def cutoff_probe(written: str, stated: str) -> str:
    """A pandas comparison as written and as the task states it, on the same live values: the rows
    (or the scalar) they keep differ, and the stated one keeps some (see `count_probe`)."""
    return textwrap.dedent(f"""\
        import numpy as _np
        _a = _np.asarray({written}, dtype=bool).ravel()
        _b = _np.asarray({stated}, dtype=bool).ravel()
        _v = bool((_a != _b).any()) and bool(_b.any())
        _o = {{'kept_as_written': int(_a.sum()), 'kept_as_stated': int(_b.sum())}}""")


def defined_probe(con: str, table: str, column: str) -> str:
    """A stored table the answer aggregates holds values of that column (the statistic is defined)."""
    query = f"SELECT COUNT(*), COUNT({column}) FROM {table}"
    return (
        f"_n, _k = {con}.execute({query!r}).fetchone()\n"
        f"_v = int(_k or 0) == 0\n_o = {{'rows': int(_n or 0), 'rows_with_value': int(_k or 0)}}"
    )


def table_matches_probe(con: str, table: str, query: str) -> str:
    """A stored table holds the same rows as the query as the task states it (order aside)."""
    return textwrap.dedent(f"""\
        def _canon(_rows):
            return sorted((tuple(round(float(_x), 6) if isinstance(_x, float) else _x for _x in _r) for _r in _rows), key=repr)
        _a = _canon({con}.execute({f"SELECT * FROM {table}"!r}).fetchall())
        _b = _canon({con}.execute({query!r}).fetchall())
        _v = _a != _b
        _o = {{'stored_rows': len(_a), 'rows_as_stated': len(_b), 'differ': _v}}""")


def compare_probe(actual: str, expected: str) -> str:
    """Two pandas expressions (as computed, as stated) give different values."""
    return textwrap.dedent(f"""\
        import numpy as _np
        _a, _b = {actual}, {expected}
        try:
            _v = not bool(_np.allclose(_np.asarray(_a, dtype=float), _np.asarray(_b, dtype=float), equal_nan=True))
        except (TypeError, ValueError):
            _v = not bool((_a == _b).all()) if hasattr(_a, 'all') else _a != _b
        _o = {{'differ': bool(_v)}}""")


def share_probe(total_expr: str, percent: bool) -> str:
    whole = 100.0 if percent else 1.0
    return (
        f"_s = float({total_expr})\n_v = abs(_s - {whole}) > {0.02 * whole}\n"
        f"_o = {{'sum_of_shares': round(_s, 4), 'whole': {whole}}}"
    )


def null_output_probe(report: str, fields: list[str]) -> str:
    return textwrap.dedent(f"""\
        import math as _m
        def _empty(_x):
            if _x is None or (isinstance(_x, float) and _m.isnan(_x)):
                return True
            if isinstance(_x, dict):
                return any(_empty(_y) for _y in _x.values())
            if isinstance(_x, (list, tuple)):
                return any(_empty(_y) for _y in _x)
            return False
        _r = {report}
        _missing = [_k for _k in {fields!r} if _k in _r and _empty(_r[_k])]
        _v = bool(_missing)
        _o = {{'fields_without_value': _missing}}""")


def batch(items: list[ProbeItem]) -> str:
    """One probe program running every item in isolation; prints one JSON line of outcomes."""
    parts = ["import json as _json\n_results = {}"]
    for item in items:  # each snippet compiled on its own: one that does not even parse spoils nothing else
        parts.append(
            f"try:\n    exec(compile({item.code!r}, {item.id!r}, 'exec'), globals())\n"
            f"    _results[{item.id!r}] = {{'v': bool(_v), 'o': _o}}\n"
            f"except Exception as _e:\n    _results[{item.id!r}] = {{'error': type(_e).__name__ + ': ' + str(_e)[:200]}}"
        )
    parts.append("print('SEMANTIC_PROBE ' + _json.dumps(_results, default=str))")
    return "\n".join(parts)


def parse_batch(stdout: str) -> dict[str, ProbeOutcome]:
    for line in reversed(stdout.splitlines()):
        if line.startswith("SEMANTIC_PROBE "):
            try:
                raw = json.loads(line[len("SEMANTIC_PROBE ") :])
            except json.JSONDecodeError:
                return {}
            return {
                k: ProbeOutcome(violated=v.get("v"), observed=v.get("o") or {}, error=v.get("error"))
                for k, v in raw.items()
            }
    return {}


def all_sites(snippets: list[str]) -> str:
    """Several candidate sites of one requirement: violated only when every site that could be
    checked breaks it (one site that meets it is enough, e.g. the filtered frame of two)."""
    parts = ["_decided, _broken, _obs = 0, 0, []"]
    for snippet in snippets:
        parts.append(
            f"try:\n    exec(compile({snippet!r}, 'site', 'exec'), globals())\n    _decided += 1\n    _broken += int(bool(_v))\n    _obs.append(_o)\n"
            "except Exception as _e:\n    _obs.append({'error': type(_e).__name__})"
        )
    parts.append("_v = _decided > 0 and _broken == _decided\n_o = {'sites': _obs}")
    return "\n".join(parts)


def constraint_code(item: ProbeItem) -> str:
    """The item as an executable constraint: fails (AssertionError) only on a decided violation."""
    return (
        f"try:\n    exec(compile({item.code!r}, 'constraint', 'exec'), globals())\n"
        f"except Exception:\n    _v, _o = False, {{}}\n"
        f"assert not _v, 'requirement not met: ' + repr(_o)"
    )


_NOT_MET = "requirement not met: "


def constraint_outcome(passed: bool, error: str | None) -> ProbeOutcome:
    """The outcome of an item run as the state's constraint (`constraint_code`): what its probe
    observed is read back from the failure's message, so the gates that read it (only a typed-in
    list's own entries kept) decide as they do on a probe's outcome; the message itself is kept."""
    observed: dict[str, Any] = {"constraint": error}
    if not passed and error and _NOT_MET in error:
        try:
            said = ast.literal_eval(error.split(_NOT_MET, 1)[1].strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            said = None
        if isinstance(said, dict):
            observed = {**said, "constraint": error}
    return ProbeOutcome(violated=not passed, observed=observed)


ANSWER_MARK = "__sg_answer_as_stated__"


# A table the turn rebuilt from itself with columns added (`CREATE OR REPLACE TABLE t AS SELECT *,
# price >= 3000 AS high_end FROM t`) holds those columns when the turn runs a second time, and
# DuckDB keeps both copies (the new one as `high_end_1`): later queries would read the first run's
# values. Run again, such a statement leaves out of `*` the columns it adds that the table has.
# Only a plain copy of the one table is read so (no filter, join, grouping, distinct or limit).
_SELF_INPUT = [
    "import sqlglot as _sg",
    "def _self_input(c, q):",
    "    try:",
    "        t = _sg.parse_one(q, dialect='duckdb')",
    "    except Exception:",
    "        return q",
    "    if not isinstance(t, _sg.exp.Create) or not isinstance(t.expression, _sg.exp.Select):",
    "        return q",
    "    s, target = t.expression, t.this.this if isinstance(t.this, _sg.exp.Schema) else t.this",
    # `SELECT *, f AS fast FROM (SELECT *, b AS band FROM panel)`: each level a star and its additions
    "    added = []",
    "    while True:",
    "        if any(s.args.get(k) for k in ('joins', 'where', 'group', 'having', 'qualify', 'distinct', 'limit')):",
    "            return q",
    "        if len([e for e in s.expressions if isinstance(e, _sg.exp.Star)]) != 1:",
    "            return q",
    "        added += [e.alias for e in s.expressions if isinstance(e, _sg.exp.Alias)]",
    "        src = s.args.get('from_')",
    "        if src is not None and isinstance(src.this, _sg.exp.Subquery) and isinstance(src.this.this, _sg.exp.Select):",
    "            s = src.this.this",
    "            continue",
    "        break",
    "    if src is None or not isinstance(src.this, _sg.exp.Table) or not isinstance(target, _sg.exp.Table):",
    "        return q",
    "    if src.this.name.lower() != target.name.lower():",
    "        return q",
    "    stars = [e for e in s.expressions if isinstance(e, _sg.exp.Star)]",
    "    if not added:",
    "        return q",
    "    try:",
    "        have = {d[0].lower() for d in c.execute('SELECT * FROM ' + src.this.sql(dialect='duckdb') + ' LIMIT 0').description}",
    "    except Exception:",
    "        return q",
    "    out = list(stars[0].args.get('except_') or [])",
    "    gone = {x.name.lower() for x in out}",
    "    more = [a for a in added if a.lower() in have and a.lower() not in gone]",
    "    if not more:",
    "        return q",
    "    stars[0].set('except_', out + [_sg.exp.column(a) for a in more])",
    "    return t.sql(dialect='duckdb')",
]
# `UPDATE t SET flag = <condition>` on every row is read as `SELECT * REPLACE (<condition> AS flag)
# FROM t` (`code_sql._updated`): an edit of that SELECT is run as the UPDATE it stands for
_UPDATES = [
    "def _as_select(u):",
    "    if u.args.get('where') or u.args.get('from') or u.args.get('from_') or not isinstance(u.this, _sg.exp.Table):",
    "        return None",
    "    sets = [e for e in u.args.get('expressions') or [] if isinstance(e, _sg.exp.EQ) and isinstance(e.this, _sg.exp.Column)]",
    "    if not sets:",
    "        return None",
    "    items = ', '.join(e.expression.sql(dialect='duckdb') + ' AS ' + e.this.name for e in sets)",
    "    q = 'SELECT * REPLACE (' + items + ') FROM ' + u.this.sql(dialect='duckdb')",
    "    return _sg.parse_one(q, dialect='duckdb').sql(dialect='duckdb')",
    "def _as_update(u, s):",
    "    star = next(e for e in s.expressions if isinstance(e, _sg.exp.Star))",
    "    items = ', '.join(a.alias + ' = ' + a.this.sql(dialect='duckdb') for a in star.args.get('replace') or [])",
    "    return 'UPDATE ' + u.this.sql(dialect='duckdb') + ' SET ' + items",
]
_WRAPPER_METHODS = [
    "    def execute(self, q, *a, **k):",
    "        return self._c.execute(self._fix(q), *a, **k)",
    "    def sql(self, q, *a, **k):",
    "        return self._c.sql(self._fix(q), *a, **k)",
    "    def __getattr__(self, name):",
    "        return getattr(self._c, name)",
]


def answer_probe(cells: list[str], edit: SpanEdit, con: str | None) -> str:
    """A probe program that re-runs the turn's cells with `edit` applied: what the cells print,
    then ANSWER_MARK and how often the edit applied (`{"applied": n}`). SQL edits
    go through a stand-in for the connection `con` that rewrites the one SELECT before it runs."""
    lines = ["import json as _json", f"_cells = {cells!r}", "_applied = [0]"]
    if con is not None:
        lines += _SELF_INPUT + _UPDATES
    if edit.kind == "sql":
        assert con is not None
        try:
            want = sqlglot.parse_one(edit.before, dialect="duckdb").sql(dialect="duckdb")
        except Exception:  # noqa: BLE001 - sqlglot raises several error types
            want = edit.before
        lines += [
            f"_cells = {rerun.cells_to_rerun(cells, want, sql=True, con=con)!r}",
            f"_want, _new = {edit.before!r}, _sg.parse_one({edit.after!r}, dialect='duckdb')",
            "class _StatedCon:",
            "    def __init__(self, c):",
            "        self._c = c",
            "    def _fix(self, q):",
            "        q = _self_input(self._c, q)",
            "        try:",
            "            t = _sg.parse_one(q, dialect='duckdb')",
            "        except Exception:",
            "            return q",
            "        if isinstance(t, _sg.exp.Select) and t.sql(dialect='duckdb') == _want:",
            "            _applied[0] += 1",
            "            return _new.sql(dialect='duckdb')",
            "        if isinstance(t, _sg.exp.Update) and _as_select(t) == _want:",
            "            _applied[0] += 1",
            "            return _as_update(t, _new)",
            "        hits = [s for s in t.find_all(_sg.exp.Select) if s.sql(dialect='duckdb') == _want]",
            "        for s in hits:",
            "            s.replace(_new.copy())",
            "        _applied[0] += len(hits)",
            "        return t.sql(dialect='duckdb') if hits else q",
            *_WRAPPER_METHODS,
            f"{con} = _StatedCon({con})",
        ]
    else:
        lines += [
            f"_before, _after = {edit.before!r}, {edit.after!r}",
            # the inspection writes strings in single quotes; the cell may use double ones
            'if not any(_before in c for c in _cells) and "\'" in _before:',
            # each quote of the inspection's text matches either quote: the cell may mix them
            "    import re as _re",
            "    _pat = _re.compile(''.join('[\\'\"]' if ch == \"'\" else _re.escape(ch) for ch in _before))",
            "    _hits = {m.group(0) for c in _cells for m in _pat.finditer(c)}",
            "    _before = _hits.pop() if len(_hits) == 1 else _before",
            f"_cells = {rerun.cells_to_rerun(cells, edit.before)!r}",
            "_applied[0] = sum(c.count(_before) for c in _cells)",
            "_cells = [c.replace(_before, _after) for c in _cells]",
        ]
        if con is not None:
            lines += [
                "class _StatedCon:",
                "    def __init__(self, c):",
                "        self._c = c",
                "    def _fix(self, q):",
                "        return _self_input(self._c, q)",
                *_WRAPPER_METHODS,
                f"if {con!r} in globals():",
                f"    {con} = _StatedCon({con})",
            ]
    lines += [
        "for _cell in _cells:",
        "    exec(compile(_cell, '<turn as stated>', 'exec'), globals())",
        f"print({ANSWER_MARK!r} + _json.dumps({{'applied': _applied[0]}}))",
    ]
    return "\n".join(lines)


def parse_answer(stdout: str) -> tuple[int, str]:
    """(times the edit applied, what the cells printed) from an `answer_probe` run's stdout."""
    printed, _, tail = stdout.rpartition(ANSWER_MARK)
    try:
        applied = int(json.loads(tail.strip() or "{}").get("applied", 0))
    except (ValueError, AttributeError):
        applied = 0
    return applied, printed
