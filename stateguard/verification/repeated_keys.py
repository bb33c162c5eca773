"""A reported mapping keyed by values that repeat: one entry per key, the other rows written over.

    _per = people.groupby(["bmi_class", "sex"]).size()...      # two rows per class
    _by = bmi_sheet.merge(_per, left_on="label", right_on="bmi_class", how="left")
    dict(zip(_by["label"], _by["n"]))                           # one entry per label: the last row wins

No words are read. The code builds a reported mapping from a frame's column or a row list's field:

    dict(zip(F["k"], ...)) / dict(zip(F.k, ...))       {r.k: ... for r in F.itertuples()}
    {r[0]: ... for r in rows}                          {k: ... for k, row in F.iterrows()}
    F.set_index("k")[...].to_dict()

and the live values hold one key on two rows that differ (in the columns the mapping reads, where the
code names them; in the whole row otherwise): the mapping keeps one of them and drops the rest
without a trace. Rows that repeat whole (a code listed beside its label on every row) lose nothing
and are no finding. Only mappings inside the code of a reported value are read.

    sites(text)         the mappings a reported value's code builds
    probe(site)         the probe: `_v` when a key repeats on different rows
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from stateguard.verification.requirements import Kind, Requirement


@dataclass(frozen=True)
class Site:
    frame: str  # the frame (or row list) the mapping reads
    key: str  # its key: a column name, a field position ("0"), or "" for the index
    columns: tuple[str, ...]  # the frame's columns the values read ((): the whole row)
    text: str


_NAME = r"[A-Za-z_]\w*"
_COL = rf"""(?:\[\s*["'](?P<{{g}}>\w+)["']\s*\]|\.(?P<{{g}}2>{_NAME})\b(?!\s*\())"""
_ZIP = re.compile(
    rf"dict\(\s*zip\(\s*(?P<f>{_NAME})" + _COL.format(g="k") + r"\s*,(?P<rest>[^\n]*)",
)
_TUPLES = re.compile(
    rf"\{{\s*(?P<r>{_NAME})\.(?P<k>{_NAME})\s*:[^\n]*?\bfor\s+(?P=r)\s+in\s+(?P<f>{_NAME})\.itertuples\("
)
_ROWS = re.compile(
    rf"\{{\s*(?P<r>{_NAME})\[(?P<k>\d+)\]\s*:[^\n]*?\bfor\s+(?P=r)\s+in\s+(?P<f>{_NAME})\s*(?:\}}|\bif\b)"
)
_ITERROWS = re.compile(rf"\bfor\s+(?P<k>{_NAME})\s*,\s*{_NAME}\s+in\s+(?P<f>{_NAME})\.iterrows\(\)")
_INDEXED = re.compile(
    rf"(?P<f>{_NAME})\.set_index\(\s*[\"'](?P<k>\w+)[\"']\s*\)(?:\[\s*[\"'](?P<v>\w+)[\"']\s*\])?\.to_dict\("
)


def _values(frame: str, rest: str) -> tuple[str, ...]:
    """The frame's columns the zipped values read (up to the zip's closing parenthesis)."""
    depth, end = 1, len(rest)
    for i, ch in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            end = i
            break
    part = rest[:end]
    f = re.escape(frame)
    return tuple(dict.fromkeys(re.findall(rf"\b{f}\[\s*[\"'](\w+)[\"']\s*\]", part)))


def sites(text: str) -> list[Site]:
    out: list[Site] = []
    for m in _ZIP.finditer(text):
        out.append(
            Site(
                m.group("f"),
                "" if (m.group("k") or m.group("k2")) == "index" else m.group("k") or m.group("k2"),
                _values(m.group("f"), m.group("rest")),
                m.group(0),
            )
        )
    for m in _TUPLES.finditer(text):
        out.append(Site(m.group("f"), m.group("k"), (), m.group(0)))
    for m in _ROWS.finditer(text):
        out.append(Site(m.group("f"), m.group("k"), (), m.group(0)))
    for m in _ITERROWS.finditer(text):
        out.append(Site(m.group("f"), "", (), m.group(0)))
    for m in _INDEXED.finditer(text):
        out.append(Site(m.group("f"), m.group("k"), (m.group("v"),) if m.group("v") else (), m.group(0)))
    return list({(s.frame, s.key, s.columns): s for s in out}.values())


def probe(site: Site) -> str:
    """`_v` when a key of the mapping stands on two rows that differ (as text, so that lists and NaN
    compare); `_o` the number of keys and of repeated ones."""
    return textwrap.dedent(f"""\
        import pandas as _pd
        _f = {site.frame}
        if isinstance(_f, _pd.DataFrame):
            _k = [str(x) for x in (_f.index if {site.key!r} == "" else _f[{site.key!r}])]
            _cols = [c for c in {list(site.columns)!r} if c in _f.columns and c != {site.key!r}] or [
                c for c in _f.columns if c != {site.key!r}]
            _t = _f[_cols].astype(str)
            _t.insert(0, "__key", _k)
            _keys = _t.drop_duplicates()["__key"]
        else:
            _rows = {{tuple(str(x) for x in r) for r in _f}}
            _keys = _pd.Series([r[int({site.key or "0"!r})] for r in _rows], dtype=object)
        _dup = int(_keys.duplicated().sum())
        _v = _dup > 0
        _o = {{'keys': int(_keys.nunique()), 'rows_written_over': _dup}}""")


def requirement(site: Site) -> Requirement:
    key = site.key if not site.key.isdigit() else f"field {site.key}"
    return Requirement(
        kind=Kind.GROUPING,
        text=f"one entry per {key or 'index value'} of {site.frame} (a repeated key keeps only one of its rows)",
        keys=[key or "index"],
        subject=[site.frame],
    )
