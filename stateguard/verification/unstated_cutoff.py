"""A cut-off the turn states that its code never holds, against the code's one cut-off no text states.

    "how many of them understated their weight by less than 2 kg"
    int((_gap < 1).sum())          -- the turn says 2, the code tests 1, and no question says 1

The evidence is numbers, not words:
- stated: the numbers the turn's question and own context put right after a comparator ("less
  than 2", "at least 0.5", "2 or more") or as a cut on a ranking ("one of the eight countries with
  the highest rates", "the top five": at most that place); exactly one of them must be missing from
  the turn's code in every form (as written, as a fraction of a percentage, in thousands or
  millions; the places a rounding call or a comment names do not count as the code's numbers);
- applied: the code's comparisons against a plain number (`x < 1`, `1 > x`, `.gt(1)`, `>= 20` in
  SQL text, not a multiple or a sum: `>= 1.5 * m` and `> 1 + k` are not read); exactly one of
  them must test a number that no question or context of the task so far names in any form (0,
  "positive" or "any", is never read as one), and its text must occur once in the code;
- the answer gate: the turn re-run with the stated number in that comparison must report
  another answer, or there is no finding.

    changed(stated_text, texts_so_far, code)    the comparison and its stated version, or None
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification.extract import (
    _BETWEEN,
    _NUM,
    _POSTFIX,
    _POSTFIX_DIRS,
    _PREFIX,
    _PREFIX_OPS,
    _RANGE,
    _UNITS,
    _WORDNUM,
    FRACTION_AFTER,
    RELATIVE,
    pronoun_one,
    word_number,
)
from stateguard.verification.requirements import CODE_COMPARATOR, METHODS, UNIT_SCALES, Kind, Requirement

_NUMBER = r"\d+(?:\.\d+)?"
_OP = CODE_COMPARATOR
_SITES = [
    # `x < 1`, `>= 20` in SQL text: the number not part of a sum, product or name
    re.compile(rf"(?P<op>{_OP})\s*(?P<k>-?{_NUMBER})(?![\w.]|\s*[-+*/%])"),
    # `1 > x`: a plain number before the comparator
    re.compile(rf"(?<![\w.*/+%-]\s)(?<![\w.*/+%-])(?P<k>{_NUMBER})\s*(?P<op>{_OP})(?!\s*[-+]?\d)"),
    # pandas: `.gt(1)`
    re.compile(rf"\.(?P<op>gt|ge|lt|le)\(\s*(?P<k>-?{_NUMBER})\s*\)"),
]
# the ends of a range: `.between(30, 50)`, `BETWEEN 30 AND 50` (each end a site of its own)
_ENDS = [
    (re.compile(rf"\.between\(\s*(?P<k>-?{_NUMBER})\s*,\s*-?{_NUMBER}"), ">="),
    (re.compile(rf"\.between\(\s*-?{_NUMBER}\s*,\s*(?P<k>-?{_NUMBER})\s*[,)]"), "<="),
    (re.compile(rf"\bBETWEEN\s+(?P<k>-?{_NUMBER})\s+AND\s+-?{_NUMBER}(?![\w.])", re.IGNORECASE), ">="),
    (re.compile(rf"\bBETWEEN\s+-?{_NUMBER}\s+AND\s+(?P<k>-?{_NUMBER})(?![\w.])", re.IGNORECASE), "<="),
]
# "more than half", "at least half": 50 percent
HALF = re.compile(
    r"\b(?P<phrase>" + "|".join(f"(?:{p})" for p, _ in _PREFIX_OPS) + r")\s+(?:a\s+)?half\b", re.IGNORECASE
)
# a comparator, then the line it is against named before its number: "above the laboratory's
# reference limit of 1.94", "under the poverty line of $12,000"
_NAMED_LINE = re.compile(
    r"\b(?P<phrase>" + "|".join(f"(?:{p})" for p, _ in _PREFIX_OPS) + r")\s+(?:the|a|an|its|their)\s+"
    r"(?:[\w'-]+\s+){0,4}?(?:limit|threshold|cut-?off|line|mark|level|bar|ceiling|floor)\s+(?:of|at)\s+"
    + _NUM,
    re.IGNORECASE,
)
_ROUNDING = re.compile(
    r"(?:\b\w*round\w*|\bprint_result)\s*\((?:[^()]|\([^()]*\))*?,\s*\d+\s*\)|\.round\(\s*\d+\s*\)"
)
# a number in digits or words, read with the scale word after it ("two decades", "3 dozen", "60 cents")
_NAMED_NUMBER = re.compile(
    rf"\b(?P<num>\d+(?:\.\d+)?|{'|'.join(sorted(_WORDNUM, key=len, reverse=True))})\b", re.IGNORECASE
)
_SCALE_WORDS = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_A_SCALE = re.compile(r"\b(?:a|one)\s+(thousand|million|billion)\b", re.IGNORECASE)
_PCT = re.compile(r"\s*(?:%|percent\b|per\s+cent\b)", re.IGNORECASE)
_PLAIN = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
_WORDS = _WORDNUM | {"half": 0.5, "quarter": 0.25, "third": 1 / 3, "dozen": 12, "hundred": 100, "zero": 0}
# numbers past ten in words, for what a text names ("sixteen or more years", "twenty-five")
_TEENS = {w: i for w, i in _WORDNUM.items() if 11 <= i <= 19}
_TENS = {w: i for w, i in _WORDNUM.items() if i >= 20}
_ONES = {w: _WORDNUM[w] for w in _UNITS}  # one..nine, not once/twice
_LARGE = re.compile(
    r"\b(?:(?P<teen>"
    + "|".join(_TEENS)
    + r")|(?P<tens>"
    + "|".join(_TENS)
    + r")(?:[-\s](?P<unit>"
    + "|".join(_ONES)
    + r"))?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Changed:
    stated: float
    text: str  # the question's or context's words stating it
    before: str  # the comparison as the code writes it
    after: str  # the comparison with the stated number
    op: str  # the code's comparator


def _forms(x: float, pct: bool) -> list[float]:
    """The literals code may write for a number: as said, in thousands or millions, an amount with
    cents in hundredths, and a percentage as a fraction or a factor."""
    out = [x, *(x * s for s in UNIT_SCALES)]
    if not float(x).is_integer() and float(round(x * 100, 6)).is_integer():
        out.append(round(x * 100, 6))  # "a dollar eighty" tested in cents (`>= 180`)
    return out + [x / 100, 1 + x / 100, 1 - x / 100] if pct else out


def _has(numbers: set[float], x: float, pct: bool = False) -> bool:
    """Does a number of the set write x in some form (its sign aside: "falls by more than 5%", `< -5`)?"""
    return any(abs(abs(f) - abs(n)) <= 1e-9 * max(1.0, abs(n)) for f in _forms(abs(x), pct) for n in numbers)


def _in_scale(x: float, pct: bool, k: float) -> float:
    """The stated number written in the scale of the code's number `k`: of its forms (thousands,
    millions, a percentage's fraction) the one nearest k by ratio ("$10,000" where the code tests
    `< 12` on a column in thousands is 10)."""
    forms = [f for f in _forms(abs(x), pct) if f > 0]
    if not forms or k == 0:
        return x
    return min(forms, key=lambda f: abs(math.log(f / abs(k))))


def _value(token: str) -> float | None:
    token = token.lower().replace(",", "")
    if token in _WORDS:
        return float(_WORDS[token])
    if (word := word_number(token)) is not None:
        return word
    try:
        return float(token)
    except ValueError:
        return None


def _op_of(phrase: str) -> str | None:
    return next((o for p, o in _PREFIX_OPS if re.fullmatch(p, phrase, re.IGNORECASE)), None)


# "a math SAT of 700 or better": a cut-off whose side the words leave to the measure (a score is better
# higher, a time lower): the number is stated, its side is not
_UNSIDED = re.compile(_NUM + r"\s+(?:or|and)\s+(?:better|worse)\b", re.IGNORECASE)
_AND_A_HALF = re.compile(r"\s*and\s+a\s+half\b", re.IGNORECASE)
# "one shoot in four", "1 in 5": the number is a count out of another
_RATE = re.compile(
    r"(?:\s+[a-z]+){0,2}?\s+(?:in|out\s+of)\s+(?:every\s+)?(?P<den>\d+|[a-z]+)\b", re.IGNORECASE
)


# a cut on a ranking: "one of the eight countries with the highest rates", "among the 10 largest",
# "the top five": at most that place
_RANKED_CUT = re.compile(
    rf"\b(?:(?:one\s+of|among)\s+the\s+(?P<num>{_NUMBER}|{'|'.join(_ONES)}|ten|twelve|twenty)\s+"
    r"(?:[\w'-]+\s+){0,4}?(?:highest|lowest|largest|smallest|biggest|greatest|best|worst|top|most|fewest)"
    rf"|\b(?:the\s+)?top\s+(?P<top>{_NUMBER}|{'|'.join(_ONES)}|ten|twelve|twenty))\b",
    re.IGNORECASE,
)


def bounds(text: str) -> list[tuple[float, bool, str | None, str]]:
    """(number, said as a percentage, comparator, words) for each number the text puts after a
    comparator (prefix or postfix; "more than half" is 50 percent), at a range's end, or before "or
    better" (comparator None: "between 10 and 20", "from 3 to 5 inclusive", "700 or better")."""
    out: list[tuple[float, bool, str | None, str]] = []
    for m in _PREFIX.finditer(text):
        if _AND_A_HALF.match(text[m.end() : m.end() + 30]) or FRACTION_AFTER.match(
            text[m.end() : m.end() + 30]
        ):
            continue  # "at least one and a half times the median", "three quarters of": not the number
        if pronoun_one(m.group("num"), text[m.end() : m.end() + 30]):
            continue  # "less than one after a fall": a pronoun, no number
        if RELATIVE.match(text[m.end() : m.end() + 80]):
            continue  # "more than one sample standard deviation above the average": a distance from it
        if (x := _value(m.group("num"))) is not None:
            rate = _RATE.match(text[m.end() : m.end() + 40])
            den = _value(rate.group("den")) if rate else None
            if rate and den and x < den < 1000:  # not "2 children in 1990"
                # "more than one shoot in four": a rate, one quarter
                out.append((x / den, False, _op_of(m.group("phrase")), m.group(0) + rate.group(0)))
                continue
            out.append((x, bool(m.group("pct")), _op_of(m.group("phrase")), m.group(0)))
    for m in _POSTFIX.finditer(text):
        if (x := _value(m.group("num"))) is not None:
            out.append((x, bool(m.group("pct")), _POSTFIX_DIRS.get(m.group("dir").lower()), m.group(0)))
    for m in _UNSIDED.finditer(text):
        if (x := _value(m.group("num"))) is not None:
            out.append((x, bool(m.group("pct")), None, m.group(0)))
    for m in _NAMED_LINE.finditer(text):
        if (x := _value(m.group("num"))) is not None and (op := _op_of(m.group("phrase"))) is not None:
            out.append((x, bool(m.group("pct")), op, m.group(0)))
    out += [(50.0, True, _op_of(m.group("phrase")), m.group(0)) for m in HALF.finditer(text)]
    for m in _RANKED_CUT.finditer(text):
        if (x := _value(m.group("num") or m.group("top"))) is not None:
            out.append((x, False, "<=", m.group(0)))
    for m in _BETWEEN.finditer(text):
        for end in (m.group("num"), m.group("num2")):
            if (x := _value(end)) is not None:
                out.append((x, bool(m.group("pct")), None, m.group(0)))
    for m in _RANGE.finditer(text):
        for end in ("a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"):
            if m.group(end) and (x := _value(m.group(end).lstrip("$"))) is not None:
                out.append((x, bool(m.group("pct")), None, m.group(0)))
    return out


def stated(text: str) -> dict[tuple[float, bool], str]:
    """(number, said as a percentage) for each number `bounds` reads, with its first words."""
    out: dict[tuple[float, bool], str] = {}
    for x, pct, _, words in bounds(text):
        out.setdefault((x, pct), words)
    return out


def mentioned(texts: list[str]) -> set[float]:
    """Every number the texts name, in digits or in words ("one" only as a bound, "at least one": it is
    a pronoun as often, "a 100 kg one"), a percentage in its fraction form too."""
    out: set[float] = set()
    for text in texts:
        for m in _PLAIN.finditer(text):
            x = float(m.group(0).replace(",", ""))
            out |= set(_forms(x, bool(_PCT.match(text, m.end())))) - set(_forms(x, False)[1:])
        out |= {
            float(v) for w, v in _WORDS.items() if w != "one" and re.search(rf"\b{w}\b", text, re.IGNORECASE)
        }
        out |= {x for x, _ in stated(text)}
        for m in _NAMED_NUMBER.finditer(text):  # "two decades": 20 (years)
            factor = LEXICON.unit_factor(text, m.end())
            if factor != 1.0 and (count := _value(m.group("num"))) is not None:
                out.add(count * factor)
        # "fewer than a million residents": one thousand, million or billion said with "a" (a column
        # in thousands writes it 1000)
        out |= {_SCALE_WORDS[m.group(1).lower()] for m in _A_SCALE.finditer(text)}
        for m in _LARGE.finditer(text):
            if m.group("teen"):
                out.add(float(_TEENS[m.group("teen").lower()]))
            else:
                unit = _ONES[m.group("unit").lower()] if m.group("unit") else 0
                out.add(float(_TENS[m.group("tens").lower()] + unit))
    return out


def _code_text(code: str) -> str:
    """The code without comment lines and rounding calls' places."""
    lines = [line for line in code.splitlines() if not line.lstrip().startswith("#")]
    return _ROUNDING.sub(" ", "\n".join(lines))


def numbers_of(code: str) -> set[float]:
    """Every plain number the code writes (comments, rounding places and positions such as `row[1]`
    aside: an index is no quantity, and would hold a stated 1,000 in thousands)."""
    text = re.sub(r"\[\s*-?\d+\s*\]", "[]", _code_text(code))
    return {float(m.group(0).replace(",", "")) for m in _PLAIN.finditer(text)}


def sites(code: str) -> list[tuple[str, float, re.Match[str]]]:
    """(text, number, match) of each comparison of the code against a plain number."""
    text = _code_text(code)
    out: list[tuple[str, float, re.Match[str]]] = []
    for pattern in [*_SITES, *(p for p, _ in _ENDS)]:
        for m in pattern.finditer(text):
            out.append((m.group(0), float(m.group("k")), m))
    return out


def site_op(m: re.Match[str]) -> str:
    """The comparator of a site as code writes it (a range's end: >= for its lower, <= for its upper)."""
    op = m.groupdict().get("op")
    if op is not None:
        return METHODS.get(op, op)
    return next(side for p, side in _ENDS if p is m.re)


# A unit of time after a number: the code may count it in another unit ("longer than three hours" is
# `length > 180` in minutes), so the number is held in any of those forms
_TIME_UNIT = re.compile(
    r"\s*(?P<unit>hours?|hrs?|minutes?|mins?|days?|weeks?|months?|years?)\b", re.IGNORECASE
)
_PER_UNIT = {"hour": (60.0, 3600.0, 1 / 24), "hr": (60.0, 3600.0, 1 / 24), "minute": (1 / 60, 60.0),
             "min": (1 / 60, 60.0), "day": (24.0, 1 / 7, 1 / 365), "week": (7.0, 1 / 52),
             "month": (1 / 12, 30.0), "year": (12.0, 52.0, 365.0)}  # fmt: skip


def _unit_forms(said: str, words: str, x: float) -> list[float]:
    """The number in the other units of the time unit said right after it, if any."""
    at = said.find(words)
    m = _TIME_UNIT.match(said, at + len(words)) if at >= 0 else None
    if m is None:
        return []
    unit = m.group("unit").lower().rstrip("s")
    return [x * f for f in _PER_UNIT.get(unit, ())]


def changed(said: str, texts_so_far: list[str], code: str, described: str = "") -> Changed | None:
    """The code's one comparison against a number that neither the texts so far (questions and turn
    contexts) nor the task's description (only its cut-offs: it names ranges of the data too, "ids 1
    to 200") name, and the turn's one stated number the code never holds: that comparison written
    with the stated number."""
    numbers = numbers_of(code)
    # a time said in another unit is held only by a number the code compares with ("365 days" is not
    # held by the 1 of `rinfct = 1`, though a year is one)
    found = sites(code)
    compared = {k for _, k, _ in found}
    # held in any form, a percentage's fraction included even where the words give no percent sign
    # a whole number the code writes as the end of a name ("aged 16 or over" for `pop16`) names that
    # column, not a cut-off the code left out
    named = {float(m.group(1)) for m in re.finditer(r"(?<![\w.])[A-Za-z]+(\d+)\b", _code_text(code))}
    missing = {
        key: words
        for key, words in stated(said).items()
        if not _has(numbers, key[0], True)
        and key[0] not in named
        and not any(_has(compared, y, True) for y in _unit_forms(said, words, key[0]))
    }
    if len(missing) != 1:
        return None
    ((x, pct), words) = next(iter(missing.items()))
    known = mentioned(texts_so_far) | {k for k, _ in stated(described)}
    odd = [(t, k, m) for t, k, m in found if k != 0 and not _has(known, k)]
    if len({t for t, _, _ in odd}) != 1 or code.count(odd[0][0]) != 1:
        return None
    before, k, m = odd[0]
    x = _in_scale(x, pct, k)
    new = f"{x:g}" if not float(x).is_integer() else str(int(x))
    start, end = m.start("k") - m.start(0), m.end("k") - m.start(0)
    after = before[:start] + (new if k >= 0 else f"-{new}") + before[end:]
    return Changed(x, words, before, after, site_op(m))


def requirement(found: Changed) -> Requirement:
    return Requirement(
        kind=Kind.COMPARISON, text=found.text, op=found.op, value=found.stated, subject=["the compared value"]
    )


PROBE = "_v = True\n_o = {'tests_an_unstated_number': True}"
