"""The multiple of a statistic that a relative rule states, against the one the code applies.

    "a day is smoggy when its ozone is at least twice the median ozone of its own month"
    air["smoggy"] = air["ozone"] >= 1.5 * air["month_med"]          -- 1.5 times, not 2
    "its mpg is at least 10 percent below the median mpg of its class, i.e. no more than 0.9 times"
    cars["mpg"] <= 0.85 * cars["cyl_med"]                            -- 0.85, not 0.9

The words give a number only where they say it whole: a multiple ("twice", "one and a half times",
"1.5 times", "half") or a distance in percent ("10 percent below", "25 % faster than": a side or any
one-word comparative the lexicon knows) right before a statistic ("the median ...", "the pooled case
share", "that average"), the row's own value, or its value a period before ("30 % more than the same
firm did in the year before"); every such phrase of the rule must give the same multiple, or nothing
is read. The comparison's side is read from the comparator before it ("at
least", "no more than"), mirrored for a distance below. The code's side is a fact: exactly one
comparison of the turn's code against a number times something (`>= 2 * month_med`, `.le(x * 0.9)`).
A finding needs the turn re-run with the stated multiple (and side) to report another answer (the
answer gate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification.extract import _PREFIX_OPS, _UNITS, _WORDNUM
from stateguard.verification.requirements import CODE_COMPARATOR, METHODS, MIRROR, Kind, Requirement

_PHRASE = "|".join(f"(?:{p})" for p, _ in _PREFIX_OPS)
_WORDS = {w: float(_WORDNUM[w]) for w in [*_UNITS, "ten"]}  # "eight times the median"
# a fraction's part by its denominator ("a fifth", "three fifths"; "halves" is the plural of half)
_PARTS = {
    "half": 2,
    "halve": 2,
    "third": 3,
    "quarter": 4,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "eighth": 8,
    "tenth": 10,
}
_PART_WORDS = "|".join(w for w in _PARTS if w != "halve")


def comparatives(op: str) -> tuple[str, ...]:
    """The lexicon's one-word comparatives of a side ("taller" from "taller than")."""
    return tuple(
        p.removesuffix(" than")
        for p in LEXICON.comparator_phrases(op=op)
        if p.endswith(" than") and " " not in p.removesuffix(" than")
    )


# a distance's side: the prepositions and every one-word comparative the lexicon knows ("25 % faster
# than the median", "a fifth slower than")
_DOWN_WORDS = ("below", "under", *comparatives("<"))
_SIDES = "|".join(
    [r"above|over|below|under", *(rf"{w}\s+than" for w in (*comparatives(">"), *comparatives("<")))]
)
_NUM = r"\d+(?:\.\d+)?"
_MULT = (
    r"(?P<mult>twice|double|thrice|triple|half"
    rf"|(?P<word>{'|'.join(_WORDS)})(?P<half>\s+and\s+a\s+half)?\s+times"
    rf"|(?P<num>{_NUM})\s*(?:times|x|×)"
    rf"|(?P<pct>{_NUM})\s*(?:percent|per\s+cent|%)\s+(?P<dir>{_SIDES})"
    rf"|(?P<part>{_NUM})\s*(?:percent|per\s+cent|%)\s+of"  # "below 85 percent of the median": 0.85 times
    # "one fifth above the median", "a quarter below": a fraction of it, as a distance
    rf"|(?:a|one)\s+(?P<frac>{_PART_WORDS})\s+(?P<fdir>{_SIDES})"
    # "three fifths of the median income": a fraction of it
    rf"|(?P<fnum>a|{'|'.join(_UNITS)})\s+(?P<fden>halves|(?:{_PART_WORDS})s?)\s+of"
    # "1.75 times or more the median", "two and a half times, or more, the median": the side after it
    r")(?:\s*,?\s+(?P<post>or\s+(?:more|above|higher|greater|over|less|below|lower|under|fewer))\s*,?)?"
    r"(?:\s+as\s+[a-z]+\s+as)?"  # "twice as long as the median spell"
)
_STAT_WORDS = "|".join(re.escape(w) for w in LEXICON.statistics if " " not in w) + "|pooled"
# the base a multiple is of may be the row's own earlier value: "30 % more than the same firm did in
# the year before", "at least twice its previous month's count"
_EARLIER = re.compile(
    r"\b(?:(?:year|month|week|day|quarter|season|period|round|game|match)\s+(?:before|earlier)"
    r"|(?:previous|preceding|prior|last)\s+(?:year|month|week|day|quarter|season|period|round|game|match)"
    r"|(?:year|month|week|day|quarter|season|period|round|game|match)\s+(?:before\s+it|earlier))\b",
    re.IGNORECASE,
)
_STATED = re.compile(
    rf"(?:(?P<phrase>{_PHRASE})\s+)?{_MULT}\s+(?:the|that|this|its|their|his|her|what)\b"
    rf"(?P<after>(?:\s+[\w'-]+){{0,6}})",
    re.IGNORECASE,
)
_STAT = re.compile(rf"\b(?:{_STAT_WORDS})\b", re.IGNORECASE)
# a fitted line's value as the base: "10 % above what the line predicts", "the fitted line's time",
# "twice the trend's prediction"
_FITTED = re.compile(r"\b(?:predicts?|predicted|prediction|fitted|regression|trend(?:'s)?)\b", re.IGNORECASE)

# the code: a comparison against a number times something, in either order, or a pandas method
_OPERAND = r"[A-Za-z_][\w.]*(?:\[[^\]]+\])*"
_OP = rf"(?P<op>{CODE_COMPARATOR})"
_SITES = [
    re.compile(rf"(?P<lhs>{_OPERAND})?\s*{_OP}\s*(?P<k>{_NUM})\s*\*"),
    re.compile(rf"(?P<lhs>{_OPERAND})?\s*{_OP}\s*{_OPERAND}\s*\*\s*(?P<k>{_NUM})(?![\w.])"),
    re.compile(rf"(?P<lhs>{_OPERAND})\.(?P<m>ge|le|gt|lt)\(\s*(?P<k>{_NUM})\s*\*"),
    re.compile(rf"(?P<lhs>{_OPERAND})\.(?P<m>ge|le|gt|lt)\(\s*{_OPERAND}\s*\*\s*(?P<k>{_NUM})\s*\)"),
]
_METHOD = METHODS


@dataclass(frozen=True)
class Stated:
    multiple: float
    op: str | None  # None: the rule's words give no single side
    text: str


@dataclass(frozen=True)
class Site:
    text: str  # the comparison as the code writes it
    op: str
    multiple: float
    subject: str  # the compared column's name, for the reason


def _multiple(m: re.Match[str]) -> tuple[float, str | None]:
    phrase = m.group("phrase")
    op = next((o for p, o in _PREFIX_OPS if re.fullmatch(p, phrase, re.IGNORECASE)), None) if phrase else None
    if op is None and m.group("post"):
        op = (
            ">="
            if m.group("post").split()[-1].lower() in ("more", "above", "higher", "greater", "over")
            else "<="
        )
    word = m.group("mult").lower()
    if m.group("fden"):
        count = 1.0 if m.group("fnum").lower() == "a" else _WORDS[m.group("fnum").lower()]
        return count / _PARTS[m.group("fden").lower().removesuffix("s")], op
    if m.group("frac") or m.group("pct"):  # a distance above or below it: a fifth of it, a percentage
        distance = 1 / _PARTS[m.group("frac").lower()] if m.group("frac") else float(m.group("pct")) / 100
        below = (m.group("fdir") or m.group("dir")).split()[0].lower() in _DOWN_WORDS
        return (1 - distance if below else 1 + distance), (MIRROR[op] if op and below else op)
    if m.group("part"):
        return float(m.group("part")) / 100, op
    if m.group("num"):
        return float(m.group("num")), op
    if m.group("word"):
        return _WORDS[m.group("word").lower()] + (0.5 if m.group("half") else 0.0), op
    return {"twice": 2.0, "double": 2.0, "thrice": 3.0, "triple": 3.0, "half": 0.5}[word], op


# "three times the patient's own baseline level", "twice their own first reading": a multiple of the
# row's own value of another column, said as its own
_OWN_VALUE = re.compile(r"\s+(?:[a-z]+'s\s+)?own\s+[a-z]", re.IGNORECASE)


def stated_phrases(rule: str) -> list[re.Match[str]]:
    """Every multiple of a statistic the rule states ("1.5 times the median price of its field"), of
    a fitted line's value ("more than 10 % above what the line predicts"), of the row's own value ("three times the patient's own baseline level"), or of its value a period
    before ("30 % more than the same firm did in the year before": to the clause's end)."""
    return [
        m
        for m in _STATED.finditer(rule)
        if _STAT.search(m.group("after") or "")
        or _FITTED.search(m.group("after") or "")
        or _OWN_VALUE.match(m.group("after") or "")
        or _EARLIER.search(_clause_rest(rule, m.start("after")))
    ]


def _clause_rest(rule: str, start: int) -> str:
    """The rule's words from `start` to the end of their clause (a stop, a semicolon, a colon or a
    comma), twelve words at most."""
    rest = re.split(r"[.;:,]", rule[start:], maxsplit=1)[0]
    return " ".join(rest.split()[:12])


def stated(rule: str) -> Stated | None:
    """The one multiple of a statistic the rule states (and its side, when it says one)."""
    found = [(m, *_multiple(m)) for m in stated_phrases(rule)]
    if not found or len({round(k, 9) for _, k, _ in found}) != 1:
        return None
    ops = {op for _, _, op in found if op}
    return Stated(found[0][1], ops.pop() if len(ops) == 1 else None, found[0][0].group(0).strip())


def sites(code: str) -> list[Site]:
    """Every comparison of the code against a number times something (comments left out)."""
    text = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    out: dict[str, Site] = {}
    for pattern in _SITES:
        for m in pattern.finditer(text):
            op = _METHOD[m.group("m")] if "m" in pattern.groupindex and m.group("m") else m.group("op")
            lhs = m.group("lhs") or ""
            name = re.findall(r"[\"'](\w+)[\"']\]$", lhs) or re.findall(r"(\w+)$", lhs)
            out[m.group(0).strip()] = Site(
                m.group(0).strip(), op, float(m.group("k")), name[-1] if name else ""
            )
    return list(out.values())


@dataclass(frozen=True)
class Changed:
    stated: Stated
    site: Site
    after: str  # the site written as stated
    status: str  # "threshold" (another multiple) or "differs" (the other side)


def changed(rule: str, code: str) -> Changed | None:
    """The code's one multiplied comparison, when it applies another multiple or side than the rule."""
    said = stated(rule)
    found = sites(code)
    if said is None or len(found) != 1 or code.count(found[0].text) != 1:
        return None
    site = found[0]
    other_multiple = abs(site.multiple - said.multiple) > 1e-9
    other_side = said.op is not None and said.op != site.op
    if not (other_multiple or other_side):
        return None
    after = site.text
    if other_multiple:
        k = _number_at(site.multiple, after)
        if k is None:
            return None
        after = after[: k.start()] + f"{said.multiple:g}" + after[k.end() :]
    if other_side:
        assert said.op is not None
        if re.search(r"\.(?:ge|le|gt|lt)\(", after):
            inverse = {v: k for k, v in _METHOD.items()}
            after = re.sub(r"\.(?:ge|le|gt|lt)\(", f".{inverse[said.op]}(", after, count=1)
        else:
            after = re.sub(r">=|<=|>|<", said.op, after, count=1)
    return Changed(said, site, after, "threshold" if other_multiple else "differs")


def _number_at(value: float, text: str) -> re.Match[str] | None:
    """Where the site writes the number (a whole number, not a digit of a name)."""
    for m in re.finditer(rf"(?<![\w.]){_NUM}(?![\w])", text):
        if abs(float(m.group(0)) - value) < 1e-12:
            return m
    return None


def requirement(found: Changed) -> Requirement:
    return Requirement(
        kind=Kind.COMPARISON,
        text=found.stated.text,
        op=found.stated.op or found.site.op,
        value=found.stated.multiple,
        subject=[found.site.subject or "the compared value"],
    )


PROBE = "_v = True\n_o = {'applies_another_multiple': True}"
