"""The statistic a relative rule states, against the one the code's rule is built on.

    "a journal is pricey when its library price is at least 1.5 times the median library price of
     all journals in its field"
        libprice >= 1.5 * avg(libprice) OVER (PARTITION BY field)        -- a mean, not the median
    "which adults spend at least eight times their rating's median"
        medians = mx.groupby("health")["med"].mean()
        adults["med"] >= 8 * adults["health"].map(medians)             -- a mean, not the median

The words give the statistic only inside a multiple of it ("1.5 times the median ...", "eight
times their rating's median", read by `rule_multiples.stated_phrases`) or a distance from it ("48
months above their sex's median", `rule_offsets.stated_phrases`; the compared column is then the one
the code writes right before the comparison): the mean or the median,
said the same way in every such phrase of the turn's own rule (its context or its question), and
neither said beside it in the same phrase. The code's side is a fact: the turn tests exactly one
comparison against a number times something, and computes exactly one group statistic of the
compared column that can stand behind it (a SQL window, an aggregate of a grouped subquery or CTE
the query joins, a correlated subquery the comparison multiplies, a pandas `transform`, or a
`groupby(...)[col].<stat>()` looked up with `.map` or `.join`). A mean, median, minimum or maximum other than the stated one is re-run as stated, and a
finding needs the turn's answer to change (the answer gate).

A quantile is read where no multiple or distance states a central statistic: "at or above the 80th
percentile of the log wages of ...", "the upper quartile (the 75th percentile) of ...", every such
phrase of the rule naming the same fraction. The code's one group statistic of a column the code
compares is then re-run as that quantile: `avg(lwage) OVER (...)` as `quantile_cont(lwage, 0.8) OVER
(...)`, `quantile_cont(age, 0.8)` as `quantile_cont(age, 0.75)`, a pandas `.transform("mean")` as
`.transform(lambda s: s.quantile(0.8))`; again a finding needs the answer to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification import rule_multiples, rule_offsets
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.unstated_cutoff import _code_text

_CENTRAL = ("mean", "median")
# the statistics a rule's group value may be taken with in code, by the name each is written
_SQL = {
    "avg": "mean",
    "mean": "mean",
    "median": "median",
    "min": "min",
    "max": "max",
    "quantile_cont": "quantile",
    "quantile_disc": "quantile",
    "quantile": "quantile",
}
_PANDAS = {"mean": "mean", "median": "median", "min": "min", "max": "max"}
_SQL_NAME = {"mean": "avg", "median": "median"}
# "the 80th percentile", "the upper quartile": the fraction of the rows at or below it
_QUANTILE = re.compile(
    r"\b(?:(?P<n>\d{1,2})(?:st|nd|rd|th)\s+(?:percentile|centile)"
    r"|(?P<side>upper|lower|top|bottom|third|first)\s+(?:[a-z]+\s+)?quartile)\b",
    re.IGNORECASE,
)
_UPPER = {"upper", "top", "third"}
_ID = r"[A-Za-z_]\w*"


@dataclass(frozen=True)
class Stated:
    function: str  # "mean", "median" or "quantile"
    text: str
    p: float | None = None  # the quantile's fraction


@dataclass(frozen=True)
class Site:
    text: str  # the span of code that holds the statistic (its window, its joined subquery)
    function: str
    column: str
    call: str  # the statistic as the code writes it
    after: str = ""  # `text` taking the stated statistic
    p: float | None = None  # a quantile's fraction as the code writes it


def stated(rule: str) -> Stated | None:
    """The one central statistic every multiple of a statistic in the rule names."""
    said: set[str] = set()
    text = ""
    phrases = [*rule_multiples.stated_phrases(rule), *rule_offsets.stated_phrases(rule)]
    for m in phrases:
        after = m.group("after") or ""
        found = {
            f
            for w, f in LEXICON.statistics.items()
            if f in _CENTRAL and re.search(rf"\b{re.escape(w)}\b", after, re.IGNORECASE)
        }
        if len(found) > 1:
            return None  # "twice the mean or the median": not one statistic
        said |= found
        text = text or (m.group(0).strip() if found else "")
    if len(said) > 1 or (not said and phrases):
        return None
    if not said:
        return _stated_quantile(rule)
    return Stated(said.pop(), text)


def _stated_quantile(rule: str) -> Stated | None:
    """The one quantile every percentile or quartile phrase of the rule names (not the median)."""
    phrases = list(_QUANTILE.finditer(rule))
    found = {
        (int(m.group("n")) / 100 if m.group("n") else 0.75 if m.group("side").lower() in _UPPER else 0.25): m
        for m in phrases
    }
    # another ordinal said beside them ("or the 90th for the oldest") may be another fraction
    read = [m.span() for m in phrases]
    others = [
        o
        for o in re.finditer(r"\b\d{1,2}(?:st|nd|rd|th)\b", rule)
        if not any(a <= o.start() < b for a, b in read)
    ]
    if len(found) != 1 or others:
        return None
    ((p, m),) = found.items()
    return Stated("quantile", m.group(0), p) if 0 < p < 1 and p != 0.5 else None


def _sql_sites(code: str) -> list[Site]:
    """Window statistics (`median(x) OVER (...)`) and the aggregates of a grouped subquery or CTE that
    the statement joins (`JOIN (SELECT g, median(x) AS m FROM t GROUP BY g)`)."""
    out: list[Site] = []
    names = "|".join(_SQL)
    call = rf"\b(?P<fn>{names})\s*\(\s*(?P<col>(?:{_ID}\.)?{_ID}|\"[^\"]+\")\s*(?:,\s*(?P<p>0?\.\d+)\s*)?\)"
    for m in re.finditer(rf"{call}\s*(?:\*\s*[\d.]+\s*)?OVER\b", code, re.IGNORECASE):
        out.append(_site(m, _SQL))
    # a grouped select joined back: "(SELECT <keys>, <stat>(<col>) ... GROUP BY <keys>)"
    for block in re.finditer(r"\(\s*SELECT\b(?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\)", code, re.IGNORECASE):
        body = block.group("body")
        if not re.search(r"\bGROUP\s+BY\b", body, re.IGNORECASE) or re.search(
            r"\bOVER\b", body, re.IGNORECASE
        ):
            continue
        joined = (
            re.search(r"\bJOIN\s*$", code[: block.start()], re.IGNORECASE)
            or re.search(rf"\bWITH\s+{_ID}\s+AS\s*$|,\s*{_ID}\s+AS\s*$", code[: block.start()], re.IGNORECASE)
            # `UPDATE t SET ... FROM (SELECT g, stat(x) ... GROUP BY g) q WHERE q.g = t.g`
            or re.search(r"\bUPDATE\b[^;]*?\bFROM\s*$", code[: block.start()], re.IGNORECASE)
        )
        if not joined:
            continue
        for m in re.finditer(call, body, re.IGNORECASE):
            out.append(_site(m, _SQL, block.group(0)))
    # a correlated subquery multiplied in the rule: "* (SELECT median(h.x) FROM t h WHERE h.g = w.g)",
    # or compared with, a distance added: ">= (SELECT median(m.sr) FROM marked m WHERE ...) + 8"
    for block in re.finditer(
        r"(?:\*|[<>]=?)\s*(?P<sub>\(\s*SELECT\s+(?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\))", code, re.IGNORECASE
    ):
        body = block.group("body")
        if re.search(r"\bGROUP\s+BY\b", body, re.IGNORECASE) or not re.search(
            rf"\bWHERE\s+{_ID}\.{_ID}\s*=\s*{_ID}\.{_ID}\b", body, re.IGNORECASE
        ):
            continue  # a grouped subquery is read above; an uncorrelated one is a statistic of all rows
        first = re.match(call, body.strip(), re.IGNORECASE)
        if first is not None:
            out.append(_site(first, _SQL, block.group("sub")))
    return out


def _site(m: re.Match[str], names: dict[str, str], text: str | None = None) -> Site:
    """The statistic `m` found, named by `text` (the span of code around it, the match by default)."""
    column = m.group("col").strip('"').split(".")[-1]
    function = names[m.group("fn").lower()]
    p = m.groupdict().get("p")
    if function == "quantile" and p is None:
        function = "other"  # a quantile without its fraction is read as nothing
    return Site(text or m.group(0), function, column, m.group(0), p=float(p) if p else None)


def _pandas_sites(code: str) -> list[Site]:
    """`.groupby(...)["x"].transform("median")`, and `name = f.groupby(...)["x"].median()` that a later
    line looks up with `.map(name)` or `.join(name, ...)`."""
    out: list[Site] = []
    names = "|".join(_PANDAS)
    for m in re.finditer(
        rf"\.groupby\([^)\n]*\)\s*\[\s*([\"'])(?P<col>\w+)\1\s*\]\s*\.transform\(\s*([\"'])(?P<fn>{names})\3\s*\)",
        code,
    ):
        out.append(_site(m, _PANDAS))
    # a moving or growing window: `["speed"].rolling(9, center=True).median()`, in a grouped transform
    # too (`["drivers"].transform(lambda s: s.shift(1).rolling(3).mean())`, `s.expanding().median()`)
    window = r"(?:\.shift\(\s*-?\d*\s*\))?\.(?:rolling|expanding)\([^()\n]*\)"
    for m in re.finditer(
        rf"\[\s*([\"'])(?P<col>\w+)\1\s*\]\s*(?:\.transform\(\s*lambda\s+(?P<arg>\w+)\s*:\s*(?P=arg)"
        rf"{window}|{window})\.(?P<fn>mean|median|min|max)\(\s*\)",
        code,
    ):
        out.append(_site(m, _PANDAS))
    # `.transform(lambda s: s.quantile(0.8))`, `.transform("quantile", 0.8)`
    for m in re.finditer(
        r"\.groupby\([^)\n]*\)\s*\[\s*([\"'])(?P<col>\w+)\1\s*\]\s*\.transform\(\s*"
        r"(?:lambda\s+(?P<arg>\w+)\s*:\s*(?P=arg)\.quantile\(\s*(?:q\s*=\s*)?(?P<p>0?\.\d+)\s*\)"
        r"|([\"'])quantile\5\s*,\s*(?:q\s*=\s*)?(?P<p2>0?\.\d+))\s*\)",
        code,
    ):
        out.append(
            Site(m.group(0), "quantile", m.group("col"), m.group(0), p=float(m.group("p") or m.group("p2")))
        )
    for m in re.finditer(
        rf"^[ \t]*(?P<name>{_ID})\s*=\s*{_ID}\.groupby\([^)\n]*\)\s*\[\s*([\"'])(?P<col>\w+)\2\s*\]\s*"
        r"\.quantile\(\s*(?:q\s*=\s*)?(?P<p>0?\.\d+)\s*\)",
        code,
        re.M,
    ):
        name = re.escape(m.group("name"))
        if re.search(rf"\.map\(\s*{name}\s*\)|\.join\(\s*{name}\b", code[m.end() :]):
            call = m.group(0)[m.group(0).index(".quantile") :]
            out.append(Site(m.group(0), "quantile", m.group("col"), call, p=float(m.group("p"))))
    # ... also renamed and made a frame (`.rename("m").reset_index()`) that a later `.merge` joins back
    for m in re.finditer(
        rf"^[ \t]*(?P<name>{_ID})\s*=\s*{_ID}\.groupby\([^)\n]*\)\s*\[\s*([\"'])(?P<col>\w+)\2\s*\]\s*\.(?P<fn>{names})\(\s*\)"
        r"(?=(?:\.rename\([^)\n]*\))?(?:\.reset_index\(\s*\))?[ \t]*$)",
        code,
        re.M,
    ):
        name = re.escape(m.group("name"))
        if re.search(
            rf"\.map\(\s*{name}\s*\)|\.join\(\s*{name}\b|\.merge\(\s*{name}\b|merge\(\s*{_ID}\s*,\s*{name}\b",
            code[m.end() :],
        ):
            out.append(_site(m, _PANDAS))
    return out


def _rewritten(site: Site, function: str, p: float | None = None) -> str:
    """The site's text taking `function` instead (a quantile: at the fraction `p`)."""
    call = site.call
    if function == "quantile":
        return site.text.replace(site.call, _as_quantile(site, p or 0.5), 1)
    if site.function == "quantile" and (call.startswith(".") or ".quantile(" in call):
        return site.text  # a pandas quantile is not rewritten as a central statistic
    if site.function == "quantile":
        call = re.sub(r"\s*,\s*0?\.\d+\s*\)", ")", call, count=1)
    if call.startswith("."):
        call = re.sub(r"\.transform\(\s*([\"'])\w+\1", f".transform({function!r}", call, count=1)
    elif re.search(r"\.\w+\(\s*\)$", call):
        call = re.sub(r"\.\w+\(\s*\)$", f".{function}()", call)
    else:
        call = re.sub(rf"^{re.escape(call.split('(')[0])}", _SQL_NAME[function], call, count=1)
    return site.text.replace(site.call, call, 1)


def _as_quantile(site: Site, p: float) -> str:
    """The site's statistic written as the quantile at `p`: SQL keeps the code's own quantile function
    (continuous otherwise), pandas takes the column's `quantile(p)`."""
    call = site.call
    if site.function == "quantile" and re.search(r"quantile", call):
        # the code's own quantile call at the stated fraction
        return re.sub(r"(?<=[(,=])(\s*)0?\.\d+(?=\s*\))", rf"\g<1>{p}", call, count=1)
    if call.startswith("."):
        return re.sub(
            r"\.transform\(\s*([\"'])\w+\1\s*\)", f".transform(lambda _s: _s.quantile({p}))", call, count=1
        )
    if re.search(r"\.\w+\(\s*\)$", call):
        return re.sub(r"\.\w+\(\s*\)$", f".quantile({p})", call)
    m = re.match(r"\s*(?P<fn>\w+)\s*\(\s*(?P<col>[^,()]+?)\s*(?:,\s*0?\.\d+\s*)?\)", call)
    if m is None:
        return call
    fn = m.group("fn") if site.function == "quantile" else "quantile_cont"
    return f"{fn}({m.group('col')}, {p})" + call[m.end() :]


@dataclass(frozen=True)
class Changed:
    stated: Stated
    site: Site
    compared: str  # the rule's comparison as the code writes it


def changed(rule: str, code: str) -> Changed | None:
    """The code's one group statistic behind its one multiplied comparison, when it is taken with
    another statistic than the rule states."""
    said = stated(rule)
    if said is None:
        return None
    text = _code_text(code)
    if said.function == "quantile":
        return _changed_quantile(said, code, text)
    compared: list[tuple[str, str | None]] = [(c.text, c.subject) for c in rule_multiples.sites(code)]
    if not compared:  # a distance from the statistic ("48 months above their sex's median")
        compared = [(c.text, c.subject) for c in rule_offsets.sites(code)]
    found = list({(s.text, s.call): s for s in [*_sql_sites(text), *_pandas_sites(text)]}.values())
    if len(compared) != 1 or len(found) != 1:
        return None
    site = found[0]
    subject = compared[0][1]
    if site.function == said.function or subject is None or site.column.lower() != subject.lower():
        return None
    if code.count(site.text) != 1:
        return None
    after = _rewritten(site, said.function)
    if after == site.text:
        return None
    return Changed(said, Site(site.text, site.function, site.column, site.call, after), compared[0][0])


def _changed_quantile(said: Stated, code: str, text: str) -> Changed | None:
    """The code's one group statistic, of a column the code compares, when it is not the stated
    quantile (another statistic, or another fraction)."""
    found = list({(s.text, s.call): s for s in [*_sql_sites(text), *_pandas_sites(text)]}.values())
    if len(found) != 1:
        return None
    site = found[0]
    if site.function == "other" or (site.function == "quantile" and site.p == said.p):
        return None
    compared = re.search(
        rf"(?:\b{re.escape(site.column)}\b[\"'\]]*\s*(?:>=|<=|>|<)|(?:>=|<=|>|<)\s*{_ID}(?:\.|\[[\"']){re.escape(site.column)}\b)",
        text,
        re.IGNORECASE,
    )
    if compared is None or code.count(site.text) != 1:
        return None
    after = _rewritten(site, "quantile", said.p)
    if after == site.text:
        return None
    kept = Site(site.text, site.function, site.column, site.call, after, site.p)
    return Changed(said, kept, compared.group(0).strip())


def requirement(found: Changed) -> Requirement:
    return Requirement(
        kind=Kind.AGGREGATION,
        text=found.stated.text,
        function=found.stated.function,
        subject=[found.site.column],
        columns=[found.site.column],
    )


PROBE = "_v = True\n_o = {'takes_another_statistic': True}"
