"""Requirements that a turn reads the current version of a named table or frame, and their binding.

A question that says `with the current jobs`, `with the current trials`, `using the current scope`
asks for the table as the latest update left it (an earlier turn redefined it). Reading the data
it was built from instead (`FROM payroll`, `airports[...]` rebuilt by hand) is the pre-update
definition, and runs cleanly. Extraction reads the name after `the current`; binding looks for it
among what the span's code reads. When the code reads none of the candidate names, a probe
compares the named object in the workspace (a DataFrame variable, or a table through the SQL
connection) with each table or frame the code read instead: a violation is a named object that
exists and differs from all of them (rows, or content when the rows match). A name nothing in the
workspace holds (`the current definition`) decides nothing.
"""

from __future__ import annotations

import re
import textwrap

from stateguard.verification.binder import Binder, Plan
from stateguard.verification.requirements import Kind, Requirement

_CURRENT = re.compile(
    r"\b(?:with|using|on|from|in|under)\s+the\s+(?:current|updated|latest|revised)\s+"
    r"`?(?P<a>[A-Za-z_][A-Za-z0-9_]*)`?(?P<own>'s?)?(?:[ \t]+(?P<b>[a-z][a-z]*))?",
    re.IGNORECASE,
)
_NOT_NAMES = {
    "definition",
    "definitions",
    "rule",
    "rules",
    "version",
    "data",
    "values",
    "setup",
    "one",
    "meaning",
    "sense",
}


def current_sources(question: str) -> list[Requirement]:
    out = []
    for m in _CURRENT.finditer(question):
        words = [m.group("a")] + ([m.group("b")] if m.group("b") else [])
        if words[0].lower() in _NOT_NAMES or m.group("own"):
            continue  # "the current stations' mean yields": a possessive qualifies a noun, names no table
        out.append(Requirement(kind=Kind.SOURCE, text=m.group(0), subject=words))
    return out


def candidates(req: Requirement) -> list[str]:
    """`clean share` -> clean_share, clean; `jobs` -> jobs."""
    words = [w.lower() for w in req.subject]
    return list(dict.fromkeys(["_".join(words), words[0]]))


def source_probe(names: list[str], reads: list[str], con: str | None) -> str:
    return textwrap.dedent(f"""\
        _con = {con or "None"}
        def _get(_n):
            _g = globals().get(_n)
            if _g is not None and hasattr(_g, 'shape') and hasattr(_g, 'equals'):
                return ('frame', _g)
            if _con is not None:
                try:
                    _con.execute('SELECT 1 FROM "' + _n + '" LIMIT 0')
                    return ('table', _n)
                except Exception:
                    return None
            return None
        def _differ(_a, _b):
            if _a[0] == 'frame' and _b[0] == 'frame':
                return not _a[1].equals(_b[1])
            if _a[0] == 'table' and _b[0] == 'table':
                try:
                    _q = 'SELECT COUNT(*) FROM (SELECT * FROM "{{}}" EXCEPT ALL SELECT * FROM "{{}}")'
                    return _con.execute(_q.format(_a[1], _b[1])).fetchone()[0] + _con.execute(_q.format(_b[1], _a[1])).fetchone()[0] > 0
                except Exception:
                    return True  # other columns: another table
            _len = lambda _x: len(_x[1]) if _x[0] == 'frame' else _con.execute('SELECT COUNT(*) FROM "' + _x[1] + '"').fetchone()[0]
            return _len(_a) != _len(_b)
        _cur = next((_x for _x in map(_get, {names!r}) if _x is not None), None)
        _read = [_x for _x in map(_get, {reads!r}) if _x is not None]
        _d = [_differ(_cur, _x) for _x in _read] if _cur is not None else []
        _v = bool(_d) and all(_d)
        _o = {{'current_found': _cur is not None, 'read_instead': {reads!r}, 'differs_from_each': _v}}""")


def bind_source(b: Binder, req: Requirement, plan: Plan) -> None:
    names = candidates(req)
    read_by: dict[str, list[str]] = {}
    for sel in b.sem.selections:
        for src in [*sel.sources, sel.frame]:
            if src and re.fullmatch(r"[A-Za-z_]\w*", src):
                read_by.setdefault(src.lower(), []).extend(b.variables(sel))
    read = set(read_by) | {v.lower() for v in b.sem.frames} | {t.lower() for t in b.sem.frames.values()}
    if any(n in read for n in names):
        plan.notes.append(f"{req.describe()}: the code reads it")
        return
    instead = [n for n in read_by if n in b.vocab.tables and n not in b.rewritten]
    if not instead:
        plan.unverified.append(req)
        return
    plan.notes.append(f"{req.describe()}: the code reads {', '.join(instead)} instead")
    variables = list(dict.fromkeys(v for n in instead for v in read_by[n]))
    plan.items.append(
        b.item(req, "source", source_probe(names, instead, b.con), variables, "source", constraint=False)
    )
