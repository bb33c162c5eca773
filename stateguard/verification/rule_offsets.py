"""The distance from a statistic that a relative rule states, against the one the code applies.

    "at least one standard deviation above the mean score of the pupil's own class"
    lang >= AVG(lang) OVER (PARTITION BY class) + 1.5 * STDDEV_SAMP(lang) OVER (...)  -- 1.5, not 1
    "at least two years younger than the median age of the mothers with the same schooling"
    kids["mthage"] <= school_median - 3                                                 -- 3, not 2

The words give a distance only where they say it whole: a number ("two", "1.5", "a") and its unit
("standard deviations", "SD", "years", "points"), perhaps with "or more" between them, then a side
("above", "below", "younger than", "more than", ...) and, within a few words, a statistic ("the mean",
"their class mean", "the group's median age", or an extreme: "the highest share of any state in its
region"), the row's own value of something ("one point above the patient's own baseline score"), or the
value of the row before it ("at least 1.5 minutes more than the eruption just before it", "its previous
reading").
Every such phrase of the rule must give the same distance and side, or nothing is read. A distance
said again in another unit in parentheses ("four years (48 months) older than") gives two readings:
the code's distance may be either, and another one is re-run with the reading of its order of size,
or with none where both are near it. The code's side is a fact: exactly one comparison of the turn's
code whose other side adds or subtracts a number from something (`+ 1.0 * STDDEV_SAMP(...)`, `- 2`),
in the direction the words say (a distance in standard deviations multiplies, one in the rule's own
unit does not). A finding needs the turn re-run with the stated distance to report another answer
(the answer gate).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification.requirements import CODE_COMPARATOR, Kind, Requirement
from stateguard.verification.rule_multiples import _NUM, _PART_WORDS, _PARTS, _WORDS, comparatives

# "three quarters of a standard deviation", "half of one SD": a fraction said before the distance
_FRACTION = re.compile(
    rf"(?:\b(?P<count>a|one|{'|'.join(_WORDS)}|{_NUM})\s+(?P<part>halves|(?:{_PART_WORDS})s?)|\b(?P<half>half))\s+of\s+$",
    re.IGNORECASE,
)


# the sides: the prepositions, and every one-word comparative the lexicon knows ("older", "taller")
_UP = ("above", "over", *comparatives(">"))
_DOWN = ("below", "under", *comparatives("<"))
# "one sample standard deviation", "a pooled SD": the kind of standard deviation said before it
_SD = r"(?:(?:sample|population|pooled)\s+)?(?:standard\s+deviations?|s\.?d\.?s?)"
# the statistics a distance is from: the central ones, and an extreme of a group ("8 points below the
# highest share of any state in its region")
_EXTREMES = ("highest", "lowest", "largest", "smallest", "greatest", "maximum", "minimum")
_STAT_WORDS = "|".join(
    [*(re.escape(w) for w in LEXICON.statistics if " " not in w and w not in ("total", "sum")), *_EXTREMES]
)
_STATED = re.compile(
    rf"(?<![\w.])(?P<n>{_NUM}|a|an|one|{'|'.join(_WORDS)})\s+(?:or\s+more\s+)?"
    rf"(?:(?:full|whole)\s+)?(?:(?P<unit>{_SD}|[a-z]+|°[CF])\s+)?(?:\((?P<again>{_NUM})\s+[a-z]+\)\s+)?(?:or\s+more\s+)?(?P<side>{'|'.join(_UP + _DOWN)})(?:\s+than)?\s+"
    rf"(?P<after>(?:[\w'-]+\s+){{0,5}}?(?:{_STAT_WORDS})\b|(?:the\s+[\w-]+'s\s+|their\s+|its\s+|his\s+|her\s+)own\s+[\w-]+"
    # the row before it: "the eruption just before it", "its previous reading"
    rf"|the\s+[\w-]+\s+(?:just\s+|right\s+|immediately\s+)?before\s+(?:it|them)\b"
    rf"|(?:the|its|their)\s+(?:previous|preceding|prior)\s+[\w-]+)",
    re.IGNORECASE,
)
# the code: a comparison whose other side adds or subtracts a number (times something, for an SD); a
# parenthesised part of that side may hold comparisons of its own (a correlated subquery's `WHERE
# r.year = m.year`), nested one level
_SITE = re.compile(
    rf"(?P<op>{CODE_COMPARATOR})(?P<rhs>(?:\((?:[^()]|\([^()]*\))*\)|[^\n<>=!])*?)"
    rf"(?P<sign>[+-])\s*(?P<k>{_NUM})(?P<times>\s*\*)?"
)

# the number written first: `sat >= 60 + (SELECT avg(p.sat) ...)`
_LEADING_SITE = re.compile(rf"(?P<op>{CODE_COMPARATOR})\s*(?P<k>{_NUM})\s*(?P<sign>\+)\s*(?=[A-Za-z_(])")


@dataclass(frozen=True)
class Stated:
    distance: float
    up: bool  # above the statistic (True) or below it
    sd: bool  # in standard deviations (the code multiplies the distance by one)
    text: str
    # the distance said again in another unit, in parentheses ("four years (48 months) older")
    again: float | None = None


@dataclass(frozen=True)
class Site:
    text: str  # the comparison as the code writes it, up to the distance
    distance: float
    up: bool
    times: bool
    subject: str | None = None  # the column written right before the comparison (`f["ageentry"] >=`)


def stated_phrases(rule: str) -> list[re.Match[str]]:
    """Every distance-from-a-statistic phrase of the rule ("48 months above their sex's median")."""
    return list(_STATED.finditer(rule))


def stated(rule: str) -> Stated | None:
    """The one distance from a statistic the rule states, with its side and unit."""
    found = []
    for m in _STATED.finditer(rule):
        word = m.group("n").lower()
        n = 1.0 if word in ("a", "an", "one") else _WORDS.get(word)
        if n is None:
            n = float(word)
        unit = (m.group("unit") or "").lower()
        if unit in ("times", "percent", "per", "of", "the") or unit in _UP + _DOWN:
            continue  # a multiple or a share of it (`rule_multiples.py`), not a distance
        sd = bool(unit) and bool(re.fullmatch(_SD, unit, re.IGNORECASE))
        before = rule[max(0, m.start() - 40) : m.start()]
        part = re.search(r"\bhalf\s+$", before, re.IGNORECASE) if word in ("a", "an") else None
        if part is not None and unit:
            n = 0.5  # "half a visit above the mean": half of one unit
        elif word in ("a", "an") and not sd:
            continue  # "a lot more than the mean", "a bit above": no number said
        if re.search(r"\bof\s+$", before, re.IGNORECASE):
            # a part of the distance ("three quarters of a standard deviation"): the fraction, whole,
            # or nothing
            part = _FRACTION.search(before)
            if part is None:
                continue
            n *= _fraction(part)
        said = (part.group(0) if part is not None else "") + m.group(0)
        again = float(m.group("again")) if m.group("again") else None
        found.append(Stated(n, m.group("side").lower() in _UP, sd, said.strip(), again))
    if not found or len({(s.distance, s.up, s.sd, s.again) for s in found}) != 1:
        return None
    return found[0]


def _fraction(m: re.Match[str]) -> float:
    """The fraction a `_FRACTION` match says: "three quarters" 0.75, "half" 0.5, "a third" 1/3."""
    if m.group("half"):
        return 0.5
    count = m.group("count").lower()
    k = 1.0 if count in ("a", "one") else _WORDS.get(count)
    if k is None:
        k = float(count)
    part = m.group("part").lower()
    part = "half" if part == "halves" else part.rstrip("s")
    return k / _PARTS[part]


def sites(code: str) -> list[Site]:
    """Every comparison of the code against something plus or minus a number, or a number plus
    something (`sat >= 60 + (SELECT avg(...) ...)`); comments left out."""
    text = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    out: dict[str, Site] = {}
    for m in _SITE.finditer(text):
        if re.search(r"[\w.)\]]\s*$", m.group("rhs")) is None:
            continue  # `>= -2`: a negative number, not a distance from something
        out[m.group(0)] = Site(
            m.group(0),
            float(m.group("k")),
            m.group("sign") == "+",
            bool(m.group("times")),
            _compared(text[: m.start()]),
        )
    for m in _LEADING_SITE.finditer(text):
        out.setdefault(
            m.group(0), Site(m.group(0), float(m.group("k")), True, False, _compared(text[: m.start()]))
        )
    return list(out.values())


def _compared(before: str) -> str | None:
    """The column a comparison tests, from the code right before its operator (`df["x"]`, `t.x`, `x`)."""
    lhs = re.search(r"(?:\[\s*([\"'])(?P<col>\w+)\1\s*\]|\b(?:\w+\.)?(?P<name>[A-Za-z_]\w*))\s*$", before)
    return None if lhs is None else lhs.group("col") or lhs.group("name")


@dataclass(frozen=True)
class Changed:
    stated: Stated
    site: Site
    after: str  # the site written as stated
    status: str = "threshold"  # the finding's status: another distance is another cut-off


def changed(rule: str, code: str) -> Changed | None:
    """The code's one offset comparison, when it applies another distance than the rule states (on
    the same side of the statistic, in the same kind of unit)."""
    said = stated(rule)
    found = sites(code)
    if said is None or len(found) != 1 or code.count(found[0].text) != 1:
        return None
    site = found[0]
    readings = [said.distance] if said.again is None else [said.distance, said.again]
    if site.up != said.up or site.times != said.sd or any(abs(site.distance - d) < 1e-9 for d in readings):
        return None
    if said.again is not None:
        # two units: the code's number is in one of them; the reading of its order of size is re-run,
        # and none where both are (or the code's number is not a positive one)
        if site.distance <= 0 or min(readings) <= 0:
            return None
        near = sorted(readings, key=lambda d: abs(math.log(site.distance / d)))
        if abs(math.log(site.distance / near[1])) < 2 * abs(math.log(site.distance / near[0])) + math.log(2):
            return None
        said = Stated(near[0], said.up, said.sd, said.text, said.again)
    k = list(re.finditer(_NUM, site.text))[-1]
    return Changed(said, site, site.text[: k.start()] + f"{said.distance:g}" + site.text[k.end() :])


def requirement(found: Changed) -> Requirement:
    side = "above" if found.stated.up else "below"
    return Requirement(
        kind=Kind.COMPARISON,
        text=found.stated.text,
        op=">=" if found.stated.up else "<=",
        value=found.stated.distance,
        subject=[f"the distance {side} the rule's statistic"],
    )


PROBE = "_v = True\n_o = {'applies_another_distance': True}"
