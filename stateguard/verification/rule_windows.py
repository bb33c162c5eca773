"""The group a rule's per-row statistic is taken over, as the turn's own rule states it.

    "a state is hard-pressed when its poverty rate is strictly above the median poverty rate of
     its own SOUTH group"                                -> MEDIAN(poverty) OVER (PARTITION BY south)
    "the average flow of the ten years before it (taken over the whole series)"
                                                         -> AVG(vol) OVER (ORDER BY yr ROWS ...), no partition

A definition update states a rule relative to a statistic of the row's own group, in the turn's
own context or its question. The group is read from a whole phrase: "of/for/in its (own) <words>",
"with/at/in the same <words>", "their <words>'s median", whose longest run of words names exactly
one column of the data (a group noun such as "group", "code", "level" may follow), or "over the
whole series / file / data" (no group at all); two group phrases in a row, each naming its own column,
state two keys ("at the same loudness in the same kind of noise", "of the same sex and the same birth
order"); a parenthesis after a phrase that says the group's two sides and one column's very name glosses
it ("(first-born or not)"); "whose fathers held the same class of job" keeps its owner, which tells two
described columns apart; a text that says groups in other places, or none, abstains. The
code's side is a fact: the turn computes exactly one per-row statistic (a SQL window, a pandas
`groupby(...).transform(...)`, or transforms of one grouped object bound to a name) over some keys, or (`joined_site`) exactly one group statistic
computed apart and joined or looked up back onto the rows (a grouped CTE or subquery joined on its
keys; `groupby(...).median()` then `.map(...)`, `.join(..., on=...)` or `.merge(..., on=...)`). Other keys are re-run as
stated, and a finding needs other values and a changed answer (the answer gate).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.verification.bind_shape import key_name
from stateguard.verification.extract import _WORDNUM
from stateguard.verification.probes import SpanEdit
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import (
    GROUP_NOUNS,
    STOP,
    TIME_WORDS,
    Vocabulary,
    column_tokens,
    described_columns,
    described_group,
    described_roots,
    named_and_described,
    resolve_column,
    rival_reading,
)

# "of its own SOUTH group", "of the student's own teaching method", "of its size class"
_OWN = re.compile(
    r"\b(?:of|for|within|in|at)\s+(?:its|their|his|her|that|the\s+[a-z]+'s)\s+(?:own\s+)?"
    r"(?P<words>[A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*){0,2})",
    re.IGNORECASE,
)
# "the same", "that same", "this very same": a determiner pointing back, then "same"
_THE_SAME = r"(?:the|that|this)\s+(?:very\s+)?same"
# "the median ratio of the districts with the same grade span", "of the patients from the same state",
# "of the interviews done by the same interviewer",
# "of all wives whose husbands have the same occupation code" (the owner, `husbands`, kept apart: it
# tells two described columns apart), "whose fathers held the same class of job",
# "of the same sex and the same birth order" (the second phrase of a coordinated pair)
_SAME = re.compile(
    r"(?:\bwhose\s+(?P<owner>[A-Za-z]+)\s+)?"
    r"\b(?:with|from|in|of|for|at|on|by|under|within|and|than|sharing|shares?|ha(?:ve|s|d|ving)|h[eo]ld(?:s|ing)?)"
    rf"\s+{_THE_SAME}\s+"
    r"(?P<words>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2})",
    re.IGNORECASE,
)
# "the same <words>" whatever leads it ("who saw the same film"): read only right before a phrase above
# "that same day", "the very same ward": "same" after any determiner that points back
_ANY_SAME = re.compile(
    rf"\b{_THE_SAME}\s+" r"(?P<words>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2})", re.IGNORECASE
)
# "the same birth order (first-born or not)", "the same nationality status (Swiss or foreign)": a
# parenthesis right after a group phrase that says its two sides glosses it ("(highest first, lower
# id first on ties)" says no sides)
_GLOSS = re.compile(
    r"\s*\((?P<gloss>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?\s+or\s+[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?)\)"
    # "the same kind of job, blue-collar or not": one side and its negation, after a comma
    r"|,\s*(?P<gloss2>[A-Za-z][\w-]*\s+or\s+not)\b"
)
# "three times their mode's median price", "its own district's average", "that player's average": the
# group, then the statistic
_POSSESSIVE = re.compile(
    r"\b(?:its|their|his|her|that)\s+(?:own\s+)?(?P<words>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2}?)'s\s+"
    r"(?:own\s+)?(?:median|mean|average|typical)\b",
    re.IGNORECASE,
)
# "all tracts that share its highway-access index", "the cabinets sharing its majority status": the rows
# the statistic is taken over share the group
_SHARED = re.compile(
    r"\b(?:(?:that|which|who)\s+shares?|sharing)\s+(?:its|their|his|her)\s+(?:own\s+)?"
    r"(?P<words>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2})",
    re.IGNORECASE,
)
# "the median wait of the patients with their disease": the rows the statistic is taken over have the
# row's own value
_WITH_THEIR = re.compile(
    r"\bof\s+(?:the|all|those)\s+[A-Za-z]+s\s+with\s+(?:its|their|his|her)\s+"
    r"(?P<words>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2})",
    re.IGNORECASE,
)
# "within five years of their age": a distance on the row's value, no group
_WITHIN_DISTANCE = re.compile(r"\bwithin\s+(?:[\w.]+\s+){1,3}$", re.IGNORECASE)
# "compares each state with its own year": `own` said, so the words name the row's group
_WITH_OWN = re.compile(
    r"\bwith\s+(?:its|their|his|her)\s+own\s+(?P<words>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2})",
    re.IGNORECASE,
)
_WHOLE = re.compile(
    r"\b(?:over|across|on)\s+the\s+(?:whole|entire|full)\s+(?:series|file|data(?:set)?|table|sample|period)\b"
    # "(all of the file, the quick refills included)"
    r"|(?:\(|\b(?:over|across|on|from|in|of|using)\s+)all\s+of\s+the\s+(?:series|file|data(?:set)?|table|sample)\b"
    # "fitted over all the branches (...)", "over every branch,": the rows themselves, nothing said after
    r"|\b(?:over|across)\s+(?:all\s+(?:of\s+)?the|every)\s+[a-z]+(?=\s*(?:[,;.()]|$))"
    # "the six readings before it in the file": rows counted back in the order of the whole file
    r"|\b(?:before|after|preceding|following)\s+(?:it|them)\s+in\s+the\s+(?:whole\s+)?(?:series|file|data(?:set)?|table)\b",
    re.IGNORECASE,
)
# words that end a group phrase: the clause goes on after them (a preposition does not: "the same
# amount of RAM")
_CLAUSE_WORDS = {
    "yet",
    "and",
    "or",
    "but",
    "who",
    "whose",
    "that",
    "which",
    "than",
    "while",
    "without",
    "is",
    "are",
    "was",
    "were",
    "as",
    "when",
    "where",
    "if",
    # auxiliary verbs: "more than the same firm did in the year before"
    "did",
    "does",
    "do",
    "had",
    "has",
    "have",
    "would",
    "will",
}
# a statistic's word ends a group phrase: "of their cell's median angle" says the cell's statistic of
# the angle, the group is the cell
_STATISTIC_WORDS = {w for w in LEXICON.statistics if " " not in w}


# group nouns that bin a measure ("neuroticism band", "income bracket")
_BIN_NOUNS = {"band", "bands", "bracket", "brackets", "tier", "tiers"}


@dataclass(frozen=True)
class Stated:
    """The rule's group: `column` (with `more` keys when the words state two groups in a row, "at the
    same loudness in the same kind of noise"), or None for the whole series."""

    column: str | None
    text: str
    more: tuple[str, ...] = ()

    @property
    def keys(self) -> list[str]:
        return [self.column, *self.more] if self.column else []

    def matches(self, keys: list[str]) -> bool:
        """The code's keys are the stated ones, in any order."""
        return sorted(k.lower() for k in keys) == sorted(k.lower() for k in self.keys)


# a numeric column groups rows when it holds whole-number codes in a short range (0/1, 1-12)
_CODES = 50


def groupable(
    vocab: Vocabulary, tables: list[str] | None = None, years: bool = False, ids: bool = False
) -> list[str]:
    """Columns that can name a group: text, or whole-number codes in a short range (`south`,
    `wave`), not a measure (`income`); with `tables`, only columns of those (the turn reads them);
    `years`: only whole numbers within calendar years (`year`, 1893 to 2005), a group said as "the same
    year" but also a row's own time ("that year's rate"); `ids`: only whole numbers in a wider range,
    not calendar years (`class`, numbered 180 to 27,380), a group only where the words say its whole
    name ("the pupil's own class")."""
    out: list[str] = []
    for table_name, table in vocab.tables.items():
        if tables is not None and table_name not in tables:
            continue
        for name, info in table.items():
            if name in out:
                continue
            codes = calendar = False
            low, high = info.low, info.high
            whole = (
                low is not None and high is not None and float(low).is_integer() and float(high).is_integer()
            )
            if info.kind == "num" and whole and low is not None and high is not None:
                codes = high - low <= _CODES
                calendar = 1700 <= low <= high <= 2100
            if years:
                keep = calendar and not codes
            elif ids:
                keep = info.kind == "num" and whole and not codes and not calendar
            else:
                keep = info.kind == "text" or codes
            if keep:
                out.append(name)
    return out


def _names_after(words: list[str], columns: list[str]) -> bool:
    """Do the words after a coordination name a column, or a part of one's name ("and model year" for
    `model_year`)?"""
    tokens = {t for c in columns for t in [*column_tokens(c), c.lower()]}  # `e4` by its whole name
    return any(w.lower() in tokens for w in words)


def stated_group(
    rule: str,
    columns: list[str],
    described: dict[str, tuple[str, ...]] | None = None,
    measures: list[str] | None = None,
    values: dict[str, tuple[str, ...]] | None = None,
    years: list[str] | None = None,
    ids: list[str] | None = None,
) -> Stated | None:
    """The group the rule's statistic is taken over, when the rule says it one way only; `described`:
    the words the task's text describes each column with, read where no column's name is said;
    `measures`: the other columns of the tables, a phrase naming one of them ("its council-tax band",
    bands of `council_tax`) is no group column; `ids`: numbered groups (`class`), named only whole."""
    pool = list(dict.fromkeys([*columns, *(years or []), *(ids or [])]))
    rule = _asked_of(rule, pool)
    aside: list[re.Match[str]] = []
    found = _stated_group(rule, columns, described, measures, values, years, ids, pool, aside)
    # a phrase set aside may name no column but the keys read: "against its own site and season: ... of
    # the same site in the same month (... over all of that site's readings that month)"
    if found is not None and any(
        not _columns_said(m, pool) <= {k.lower() for k in found.keys} for m in aside
    ):
        return None
    # a relative clause that shares a second key ("of the same sex who share the student's major"):
    # a key the reading left out, so none is taken
    if found is not None and any(
        not _named_by(m.group("words").split(), pool) <= {k.lower() for k in found.keys}
        for m in _SHARING.finditer(rule)
    ):
        return None
    # the rule glosses a group by a column's very name elsewhere ("of its own map: order the readings of
    # each map (each col, ...)") that the reading left out: two readings, none is taken
    each = {c.lower() for w in _GLOSS_NAME.findall(rule) for c in pool if _is_name([w], c)}
    if found is not None and not each <= {k.lower() for k in found.keys}:
        return None
    return found


# "who share the student's major", "sharing their region": a further key said as what rows share
_SHARING = re.compile(
    r"\bshar(?:e|es|ed|ing)\s+(?:(?:the|a)\s+[\w-]+'s|their|its|his|her|the|a)\s+(?:own\s+|same\s+)?"
    r"(?P<words>[\w-]+(?:\s+[\w-]+)?)",
    re.IGNORECASE,
)

# "(each col, as Belin made two)", "(`site`)": a parenthesis that opens with a column's very name glosses
# the group said before it
_GLOSS_NAME = re.compile(r"\(\s*(?:(?:each|every|per)\s+)?`?([A-Za-z_]\w*)`?\s*[,;)]", re.IGNORECASE)


def _stated_group(
    rule: str,
    columns: list[str],
    described: dict[str, tuple[str, ...]] | None,
    measures: list[str] | None,
    values: dict[str, tuple[str, ...]] | None,
    years: list[str] | None,
    ids: list[str] | None,
    everything: list[str],
    aside: list[re.Match[str]],
) -> Stated | None:
    """`stated_group` on a rule already read for "the same answer to X"; `everything`: every column a
    phrase may name; the phrases it sets aside (peers said before the keys, a parenthesis that restates
    them) are added to `aside`."""
    whole = _WHOLE.search(rule)
    found: list[tuple[str, str]] = []
    hits = _phrase_hits(rule)
    # "at the same loudness in the same kind of noise": a second group phrase right after the first
    # states a second key; each phrase is read on its own words, up to where the next one starts
    # "who saw the same film in the same study": a "the same" phrase whose lead is no phrase's word,
    # right before a phrase read, is the first of two keys (each must then name its own column)
    hits = sorted(
        [
            *hits,
            *(m for m in _overlapping(_ANY_SAME, rule) if not _covered(m, hits) and _chains(rule, m, hits)),
        ],
        key=lambda m: m.start(),
    )
    set_aside = _set_aside(rule, hits, everything)
    if set_aside:
        aside += set_aside
        hits = [m for m in hits if m not in set_aside]
    if _unread_same(rule, hits, everything):
        return None
    ends = [
        next((o.start() for o in hits if m.start() < o.start() <= _reach(rule, m) + 3), None) for m in hits
    ]
    chained = any(e is not None for e in ends)
    pairs: list[tuple[str, str, str]] = []  # two keys said in one word ("centre-and-baseline")
    unread = False
    for m, end in zip(hits, ends, strict=True):
        # a calendar-year column groups when said as the rows' shared time ("the same year", "with its
        # own year", "in their year"), not as a row's own ("the mean of that year's rate")
        own_time = m.re is not _OWN or not (
            "'s" in m.group("words") or re.match(r"\S+\s+that\b", m.group(0), re.IGNORECASE)
        )
        pool = [*columns, *(years or [])] if m.re is not _POSSESSIVE and own_time else columns
        # a column listed twice (short-range codes in one table, calendar years in another) is one column
        pool = list(dict.fromkeys([*pool, *(ids or [])]))
        said = m.group("words") if end is None else rule[m.start("words") : min(end, m.end("words"))]
        stop = m.end("words")
        if end is None:
            # the phrase goes on past the words the pattern takes ("the same number of years of
            # schooling", "their admission type and age group"): read it to its end
            said, stop = _run_on(rule, said, stop)
        words = re.sub(r"'s\b", "", said).split()
        # "the same five-year span": the width of the bins said first, then the noun that names them
        while len(words) > 1 and _WIDTH.fullmatch(words[0]):
            words = words[1:]
        # the phrase ends where the clause goes on ("for their husband's occupation yet work ..."), or
        # where a participle naming no column starts a clause of its own, in a chain ("in its own sector
        # controlled from the same nation")
        cut = _clause_cut(words, participles=pool if end is not None else None)
        if (
            cut < len(words)
            and words[cut].lower() in ("and", "or")
            and (_names_after(_second(words[cut + 1 :]), pool) or _nouns(_second(words[cut + 1 :])))
        ):
            # "of the same gender and race": two keys, read when the words on each side of the "and" name
            # one column each (by name or by the task's words for it: "their treatment and day") and
            # the phrase ends there, at a stop or where the clause goes on; else ("of the same origin
            # and model", cut short) not the first one alone
            follow = re.match(r"\s+([A-Za-z]+)", rule[stop:])
            ends_here = end is None and (follow is None or follow.group(1).lower() in _CLAUSE_WORDS)
            pair = (
                _two_keys([words[:cut], _second(words[cut + 1 :])], pool, described or {}, values or {})
                if words[cut].lower() == "and"
                else None
            )
            if pair is not None and ends_here:
                pairs.append((*pair, m.group(0)))
            else:
                unread = True
            continue
        compound = next((w for w in words[:cut] if re.search(r"\w-and-\w", w, re.IGNORECASE)), None)
        if compound is not None:
            # "their centre-and-baseline group": two keys in one word, read only when each part names
            # one column; a part left unread leaves the whole phrase unread
            pair = _two_keys([[p] for p in re.split(r"-and-", compound, flags=re.IGNORECASE)], pool)
            if pair is not None:
                pairs.append((*pair, m.group(0)))
            else:
                unread = True
            continue
        # a parenthesis right after the phrase that says one column's very name glosses it: the name
        # beats a reading of the words by parts of names ("the same birth order (first-born or not)" is
        # `first`, though "birth" begins `birthyr`)
        glossed = _glossed(rule[stop:], pool, described or {}) if cut == len(words) else None
        if glossed is not None:
            found.append((glossed, m.group(0)))
            continue
        words = words[:cut]
        # "the same neuroticism band" with a column named `band`: the bins of the score as the data keeps
        # them, named by the bin noun itself ("the same occupation code" is still `occupation`: a code
        # names its thing, a band bins it)
        own = _bin_column(words, pool)
        if own is not None:
            found.append((own, m.group(0)))
            continue
        # every word by one column's name and the task's words for it together ("the same age band"
        # for `age_group (five bands: ...)`), where no column's name or description says them all
        mixed = named_and_described(words, pool, described or {})
        if (
            len(mixed) == 1
            and not any(_is_name(words, c) for c in [*pool, *(measures or [])])
            and not described_roots(words, pool, described or {})
        ):
            found.append((mixed[0], m.group(0)))
            continue
        # the longest run of leading words that names exactly one column ("age band" -> age_band, not
        # age; "SOUTH group" -> south, the group noun left over)
        named_any = False
        for n in range(len(words), 0, -1):
            wider = resolve_column(words[:n], [*pool, *measures]) if measures else []
            if any(c in (measures or []) for c in wider):
                named_any = True  # bands of a measure ("its council-tax band"): a computed key, not read
                break
            named = resolve_column(words[:n], pool)
            named_any = named_any or bool(named)
            if len(named) > 1:  # "town-size class" names `town` and `size`: the description that says both
                said = [w for w in words[:n] if w.lower() not in GROUP_NOUNS]
                named = [c for c in named if c in described_roots(said, named, described or {})]
            if (
                len(named) == 1
                and named[0] in (ids or [])
                and not (n == len(words) and _is_name(words, named[0]))
            ):
                named = []  # a numbered group only by its whole name, and nothing after it
            if len(named) == 1:
                rest = [w.lower() for w in words[n:]]
                # "the same education level": `educ` by a word of its name, `edlevel (education level)`
                # by the whole phrase in its description: two readings, none is taken
                # (or "the same recurrence number": `number` by its name, "recurrence" said only of `enum`);
                # the column's very name ("its own class" for `class`) beats a description
                other = described_columns(_uncounted(words), pool, described or {}, in_row=True)
                rival = not _is_name(words[:n], named[0]) and (
                    (bool(other) and other != named)
                    or rival_reading(_uncounted(words), named[0], pool, described or {})
                )
                if all(w in GROUP_NOUNS for w in rest[:1]) and not rival:
                    found.append((named[0], m.group(0)))
                break
        else:
            # the words name several columns ("South" for south66 and south76): two readings
            owner = m.groupdict().get("owner")
            column = (
                None
                if named_any
                else described_group(
                    words, pool, described or {}, values or {}, [owner] if owner else [], ids
                )
            )
            if column is not None:
                found.append((column, m.group(0)))
    if unread or (pairs and (found or len(pairs) > 1 or whole)):
        return None
    if pairs:
        return Stated(pairs[0][0], pairs[0][2], (pairs[0][1],))
    keys = {c for c, _ in found}
    if whole and not found:
        return Stated(None, whole.group(0))
    if chained:
        # two phrases in a row: each must name its own column, two keys in all, no phrase elsewhere
        if whole or len(found) != len(hits) or len(hits) != 2 or len(keys) != 2:
            return None
        span = rule[hits[0].start() : hits[1].end()]
        return Stated(found[0][0], span, (found[1][0],))
    if len(keys) == 1 and not whole:
        if len(hits) == 2 and len(found) == 1 and _relative_peer(rule, hits):
            # "of the same era whose previous day moved in the same direction": the peers' second key
            # is said in words that name no column, so the group is not read whole
            return None
        return Stated(found[0][0], found[0][1])
    if not whole and len(hits) == 2 and len(found) == 2 and len(keys) == 2 and _one_peer_clause(rule, hits):
        # "the spells of people of the same sex who are out of work for the same reason": two phrases
        # of one clause that says the peers, each naming its own column
        span = rule[hits[0].start() : hits[1].end()]
        return Stated(found[0][0], span, (found[1][0],))
    return None


# what between two group phrases starts another part of the rule: a comparison, a quantile, a new
# sentence (a statistic's word, the lexicon's, too)
_APART = re.compile(
    r"[.,;:!?()]|\d|\b(?:than|times|above|below|over|under|percentile|quartile|but|while|whereas)\b",
    re.IGNORECASE,
)


# the width of a bin said before its noun ("five-year", "10-year", "two-week")
_WIDTH = re.compile(
    rf"(?:\d+|{'|'.join(_WORDNUM)})-(?:{'|'.join(sorted(TIME_WORDS))})(?:-long)?", re.IGNORECASE
)
# nouns that say "the rows like this one" and name no key of their own
_PEER_NOUNS = {*GROUP_NOUNS, "cohort", "cohorts", "peer", "peers", "fellows", "counterparts"}


def _phrase_words(m: re.Match[str]) -> list[str]:
    """A group phrase's own words, up to where the clause goes on."""
    words = re.sub(r"'s\b", "", m.group("words")).split()
    return words[: _clause_cut(words)]


def _columns_said(m: re.Match[str], pool: list[str]) -> set[str]:
    """The columns (lower case) that any run of a group phrase's leading words names."""
    return _named_by(_phrase_words(m), pool)


def _named_by(words: list[str], pool: list[str]) -> set[str]:
    """The columns (lower case) that any run of the leading `words` names."""
    return {c.lower() for n in range(len(words), 0, -1) for c in resolve_column(words[:n], pool)}


def _peers_only(m: re.Match[str], pool: list[str]) -> bool:
    """Is the group phrase `m` only peer nouns ("its own cohort", "their peers"), naming no column?"""
    words = _phrase_words(m)
    return bool(words) and all(w.lower() in _PEER_NOUNS for w in words) and not _columns_said(m, pool)


def _in_parenthesis(rule: str, at: int) -> bool:
    """Is position `at` inside a parenthesis of the rule?"""
    return rule[:at].count("(") > rule[:at].count(")")


def _set_aside(rule: str, hits: list[re.Match[str]], pool: list[str]) -> list[re.Match[str]]:
    """The group phrases that point at the keys other phrases state, where those others remain:
    - peer nouns alone ("compared with its own cohort: ... the same month ... the same certificate
      status");
    - a summary before a colon, whose definition follows it in the same sentence ("measure each month
      against its own season in its own time: ... the same calendar month over the same decade");
    - a parenthesis that restates the keys ("(... over all of that site's readings that month)").
    The caller checks that each names no column but the keys read (`stated_group`)."""
    out = [m for m in hits if _peers_only(m, pool)]
    for m in hits:
        colon = rule.find(":", m.end())
        later = [o for o in hits if o.start() > colon >= m.end()]
        if colon >= 0 and later and not re.search(r"[.!?]\s", rule[m.end() : colon]):
            out.append(m)
    outside = [m for m in hits if not _in_parenthesis(rule, m.start())]
    if outside:
        out += [m for m in hits if _in_parenthesis(rule, m.start())]
    out = list(dict.fromkeys(out))
    return out if len(out) < len(hits) else []


def _asked_of(rule: str, columns: list[str]) -> str:
    """ "the same answer to MBSA2" read as "the same MBSA2": a noun of what a column holds, then the
    column's very name after "to", "on" or "for" (as the data writes it), is a group by that column."""
    names = sorted({c for c in columns if len(c) >= 2}, key=len, reverse=True)
    if not names:
        return rule
    pattern = rf"\b({_THE_SAME})\s+[a-z]+\s+(?:to|on|for)\s+`?({'|'.join(map(re.escape, names))})`?(?![\w-])"
    return re.sub(pattern, lambda m: f"{m.group(1)} {m.group(2)}", rule)


def _relative_peer(rule: str, hits: list[re.Match[str]]) -> bool:
    """Is the second of two group phrases said in a relative clause of the first's peers ("of the same
    era whose previous day moved in the same direction")?"""
    first, second = sorted(hits, key=lambda m: m.start())
    between = rule[first.start() : second.start()]
    return (
        first.end() <= second.start()
        and re.search(r"\b(?:whose|who|which|where)\b", between, re.IGNORECASE) is not None
        and _one_peer_clause(rule, hits)
    )


def _one_peer_clause(rule: str, hits: list[re.Match[str]]) -> bool:
    """Do two group phrases lie in one clause that says the rows the statistic is taken over: nothing
    between them that compares, counts or starts another sentence ("of the same sex who are out of work
    for the same reason")?"""
    first, second = sorted(hits, key=lambda m: m.start())
    between = rule[first.end() : second.start()]
    return len(between.split()) <= 8 and not _APART.search(between) and not LEXICON.statistics_in(between)


# words that count what the phrase names ("the same number of years of schooling")
_QUANTITY = {"number", "amount", "count"}


def _run_on(rule: str, said: str, stop: int) -> tuple[str, int]:
    """The phrase's words, taken on past where the pattern stopped while a coordination or an "of"
    joins more words to them (whether the pattern's last word or the next one is the "and"; after it,
    nouns up to a phrase's three), or a group noun or a count follows (four words at most): the words
    and where they end in the rule."""
    for _ in range(4):
        before = [w.lower() for w in said.split()]
        last = before[-1] if before else ""
        # the second key's words after an "and", its possessive aside ("and its colonial flag"): read
        # on while they are nouns, as many as a phrase's own
        joined = max((i for i, w in enumerate(before) if w in ("and", "or")), default=None)
        second = [w for w in before[joined + 1 :] if w not in _OWNERS] if joined is not None else None
        nxt = re.match(r"\s+([A-Za-z][\w-]*)", rule[stop:])
        if nxt is None:
            break
        word = nxt.group(1).lower()
        # a run of nouns the pattern's window cut short ("the same number of prior spontaneous
        # abortions"): read on to its end, six words at most
        cut_short = (
            joined is None
            and len(before) >= 3
            and all(w == "of" or w not in _ENDS_PHRASE for w in before)
            and len(before) < 6
        )
        if not (
            last in ("and", "or", "of")
            or (last in ("the", "a", "an") and before[-2:-1] == ["of"])  # "part of the day"
            or (second is not None and len(second) < 3 and _nouns([word]))
            or (cut_short and word not in _ENDS_PHRASE and word.replace("-", "").isalpha())
            or word in ("of", "and", "or")
            or word in GROUP_NOUNS
            or word in _QUANTITY  # "their spontaneous-abortion count"
        ):
            break
        said, stop = f"{said} {nxt.group(1)}", stop + nxt.end()
    return said, stop


def _uncounted(words: list[str]) -> list[str]:
    """The words without a leading count ("number of years of schooling" -> years of schooling)."""
    if len(words) > 2 and words[0].lower() in _QUANTITY and words[1].lower() == "of":
        return words[2:]
    return words


def _phrase_hits(rule: str) -> list[re.Match[str]]:
    """Every group phrase of the rule, in order; one phrase found from two starts ("whose fathers held
    the same ..." and "held the same ..."): the longer reading only."""
    phrases = [_OWN, _SAME, _POSSESSIVE, _SHARED, _WITH_OWN, _WITH_THEIR]
    hits = sorted(
        (
            hit
            for pattern in phrases
            for hit in _overlapping(pattern, rule)
            if not _WITHIN_DISTANCE.search(rule[: hit.start()])
        ),
        key=lambda m: m.start(),
    )
    hits = [m for i, m in enumerate(hits) if all(o.start("words") != m.start("words") for o in hits[:i])]
    # "(a percent rank of 0.75 or more within that group)": "that" and a bare group noun point back at a
    # group said before; they name no key of their own
    hits = [
        m
        for m in hits
        if not (
            re.search(r"\bthat\s+(?:own\s+)?$", m.string[m.start() : m.start("words")], re.I)
            and m.group("words").lower() in GROUP_NOUNS
        )
    ]
    # "... unusually angry for that kind of answer. The suggestion: ... the upper quartile of the scores
    # of people of the same gender": where sentences of the rule name its statistic, a group phrase in a
    # sentence that names none explains, it does not state the group
    stating = [m for m in hits if _names_statistic(_sentence_at(rule, m.start()))]
    return stating or hits


_QUANTILE_WORDS = re.compile(r"\b(?:percentile|centile|quartile|quintile|decile|tercile|quantile)s?\b", re.I)


def _sentence_at(text: str, at: int) -> str:
    """The sentence of `text` around position `at` (sentences end at ., ! or ? before a space)."""
    start = max((m.end() for m in re.finditer(r"[.!?](?:\s+|$)", text[:at])), default=0)
    end = re.search(r"[.!?](?:\s|$)", text[at:])
    return text[start : at + end.end() if end else len(text)]


def _names_statistic(sentence: str) -> bool:
    return bool(LEXICON.statistics_in(sentence) or _QUANTILE_WORDS.search(sentence))


def _clause_cut(words: list[str], participles: list[str] | None = None) -> int:
    """Where a group phrase's words stop: at the first word the clause goes on with, or a statistic's
    word after the first; with `participles` (a chain's first phrase), also at a participle that names
    none of those columns ("in its own sector controlled from the same nation")."""
    return next(
        (
            i
            for i, w in enumerate(words)
            if w.lower() in _CLAUSE_WORDS
            or (i > 0 and w.lower() in _STATISTIC_WORDS)
            or (
                participles is not None
                and i > 0
                and w.lower().endswith("ed")
                and not resolve_column([w], participles)
            )
        ),
        len(words),
    )


def _covered(m: re.Match[str], hits: list[re.Match[str]]) -> bool:
    """Is the "the same" of `m` the one a phrase read starts with (not one inside a phrase's words)?"""
    return any(h.start() <= m.start() < h.start("words") for h in hits)


def _chains(rule: str, m: re.Match[str], hits: list[re.Match[str]]) -> bool:
    """Does `m` lead right into a phrase read, or follow right after one ("in the same arm during the
    same period"; "admitted the same way (elective or emergency) in the same age group", over its
    gloss)?"""
    return any(
        m.start() < h.start() <= _reach(rule, m) + 3 or h.start() < m.start() <= _reach(rule, h) + 3
        for h in hits
    )


def _reach(rule: str, m: re.Match[str]) -> int:
    """Where a phrase ends in the rule: its words, and a gloss right after them."""
    gloss = _GLOSS.match(rule[m.end("words") :])
    return m.end("words") + gloss.end() if gloss else m.end()


def _unread_same(rule: str, hits: list[re.Match[str]], pool: list[str]) -> bool:
    """Does the rule say "the same <column>" outside every phrase read ("who saw the same film in the
    same study": "saw" is no phrase's lead, so only the study would be read)? Then the group is not
    accounted for whole, and no key is read."""
    for m in _overlapping(_ANY_SAME, rule):
        if _covered(m, hits):
            continue
        words = m.group("words").split()
        if any(resolve_column(words[:n], pool) for n in range(_clause_cut(words), 0, -1)):
            return True
        if _GLOSS.match(rule[m.end("words") :]):
            return True  # "the same way (elective or emergency)": a group said, by its two sides
    return False


def readings(
    rule: str,
    columns: list[str],
    described: dict[str, tuple[str, ...]] | None = None,
    measures: list[str] | None = None,
    years: list[str] | None = None,
) -> list[Stated]:
    """The two or three columns one group phrase may mean where `stated_group` abstains for that
    reason alone ("with the same South status": `south66` or `south76`; "in the same season": `Round`
    and `Year` both described by it). One phrase of one key only, no other group said anywhere, and no
    word of a measure; each reading is the phrase read as that column. Empty otherwise."""
    if _WHOLE.search(rule):
        return []
    hits = _phrase_hits(rule)
    pool = list(dict.fromkeys([*columns, *(years or [])]))
    # one phrase only, and no other "the same" anywhere (read or not)
    if len(hits) != 1 or any(not _covered(m, hits) for m in _overlapping(_ANY_SAME, rule)):
        return []
    (m,) = hits
    words = re.sub(r"'s\b", "", m.group("words")).split()
    words = words[: _clause_cut(words)]
    said = [w for w in words if w.lower() not in GROUP_NOUNS]
    if not said or resolve_column(said, measures or []):
        return []
    named: set[str] = set()
    for n in range(len(words), 0, -1):
        if found := resolve_column(words[:n], pool):
            named.update(found)
            break
    if len(said) >= 2:
        named.update(described_columns(said, pool, described or {}, in_row=True))
    named.update(described_roots(said, pool, described or {}))
    if not 2 <= len(named) <= 3:
        return []
    return [Stated(c, m.group(0)) for c in sorted(named)]


# words of a group phrase that say nothing of which group
_PLAIN = {"the", "a", "an", "of", "own", "same", "group", "groups", "kind", "one", "whole", "their", "its"}


def group_words(rule: str) -> set[str]:
    """The words of the rule's group phrases ("with the same nationality status" -> nationality,
    status), up to where each phrase's clause goes on; none when the rule says no group."""
    out: set[str] = set()
    for pattern in (_OWN, _SAME, _POSSESSIVE, _SHARED, _WITH_OWN):
        for m in _overlapping(pattern, rule):
            words = re.sub(r"'s\b", "", m.group("words")).replace("-", " ").split()
            cut = next((i for i, w in enumerate(words) if w.lower() in _CLAUSE_WORDS), len(words))
            out |= {
                w.lower()
                for w in words[:cut]
                if w.lower() not in _PLAIN and w.lower() not in LEXICON.statistics
            }
    return out


def _overlapping(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """Every match of `pattern`, one starting inside another's words included ("at the same loudness
    in the same kind of noise": the first phrase's words run into the second)."""
    out: list[re.Match[str]] = []
    m = pattern.search(text)
    while m is not None:
        out.append(m)
        m = pattern.search(text, m.start() + 1)
    return out


def _is_name(words: list[str], column: str) -> bool:
    """The words are the column's very name ("class" for `class`, "council-tax" for `council_tax`)."""
    return "_".join(w.lower() for w in words).replace("-", "_") == column.lower()


# words after an "and" in a group phrase that begin no noun of a second key ("and then", "and is")
_NOT_NOUNS = {
    "the",
    "a",
    "an",
    "then",
    "so",
    "also",
    "it",
    "its",
    "their",
    "they",
    "not",
    "no",
    "each",
    "all",
}


def _nouns(words: list[str]) -> bool:
    """Are the words after a coordination a bare run of nouns ("and day", "and spontaneous-abortion
    count"), a second key said in part of the phrase, rather than a clause that goes on ("and is
    flagged", "and then")?"""
    return bool(words) and all(
        w.lower() not in _CLAUSE_WORDS | _NOT_NOUNS
        and w.replace("-", "").isalnum()
        and not w.replace("-", "").isdigit()  # "and e4 carrier group": a name with a number is a noun
        for w in words
    )


# words that end a run of nouns: a clause going on, a determiner, a preposition
_ENDS_PHRASE = (
    _CLAUSE_WORDS
    | _NOT_NOUNS
    | STOP
    | {
        "from",
        "during",
        "over",
        "under",
        "among",
        "within",
        "across",
        "after",
        "before",
        "into",
        "per",
        "since",
    }
)
# possessives that may open the second key's words ("of its international flag and its colonial flag")
_OWNERS = {"its", "their", "his", "her"}


def _second(words: list[str]) -> list[str]:
    """The words of a second key after the "and": a possessive that opens them left out, a hyphenated
    word read by its parts ("spontaneous-abortion count" -> spontaneous abortion count)."""
    if len(words) > 1 and words[0].lower() in _OWNERS:
        words = words[1:]
    return [p for w in words for p in w.split("-") if p]


def _bin_column(words: list[str], columns: list[str]) -> str | None:
    """The column a phrase's closing bin noun names by its very name ("the same neuroticism band"
    with a column named `band`), the words before it naming no group noun; None otherwise."""
    if len(words) < 2 or any(w.lower() in GROUP_NOUNS for w in words[:-1]):
        return None
    own = [c for c in columns if c.lower() == words[-1].lower() in _BIN_NOUNS]
    return own[0] if len(own) == 1 else None


def _two_keys(
    sides: list[list[str]],
    columns: list[str],
    described: dict[str, tuple[str, ...]] | None = None,
    values: dict[str, tuple[str, ...]] | None = None,
) -> tuple[str, str] | None:
    """Two coordinated words or runs ("gender" and "race", "centre" and "baseline"), each naming one
    column by its name or (`described`) by the task's words for it, and not the same one; None
    otherwise."""
    named = []
    for side in sides:
        found = resolve_column(side, columns)
        binned = _bin_column(side, columns)
        if binned is not None:
            # "their health label and age band" with a column named `band`: the bin noun names it, as
            # in a phrase of one key ("the same neuroticism band")
            named.append([binned])
            continue
        if (
            found
            and not _is_name(side, found[0])
            and any(w.lower() == c.lower() for w in side for c in columns if c != found[0])
        ):
            return None  # another word of the side is another column's very name: two readings
        if described is not None and found and not _is_name(side, found[0]):
            # "education level": `educ` by a word of its name, `edlevel (education level)` by the whole
            # side in its description: two readings, no pair
            other = described_columns(_uncounted(side), columns, described, in_row=True)
            if other and set(other) != set(found):
                return None
            if rival_reading(_uncounted(side), found[0], columns, described):
                return None
        if described is not None:
            # "age band" for `age_group (five bands)`, by its name and its description together: a name
            # that reads the side in part (`age`) is a second reading, and two readings are none
            mixed = named_and_described(side, columns, described)
            if mixed and found and set(mixed) != set(found):
                return None
            found = (
                found or mixed or [c for c in [described_group(side, columns, described, values or {})] if c]
            )
        named.append(found)
    if len(named) != 2 or any(len(n) != 1 for n in named) or named[0] == named[1]:
        return None
    # "their nitrogen-dioxide and sulphur bands" beside `no2_band` and `so2_band`: a bin noun that names
    # other columns than the two read is a word the reading left out, so none is taken
    bins = {w.lower().removesuffix("s") for side in sides for w in side if w.lower() in _BIN_NOUNS}
    pair = {named[0][0], named[1][0]}
    if any(bins & {t.lower() for t in column_tokens(c)} for c in columns if c not in pair):
        return None
    return named[0][0], named[1][0]


def _glossed(
    after: str, columns: list[str], described: dict[str, tuple[str, ...]] | None = None
) -> str | None:
    """The one column a parenthesis right after a group phrase names by its very name ("(first-born or
    not)" -> `first`, "(Swiss or foreign)" -> `foreign`), else (`described`) whose description in the
    task's text holds both sides ("(elective or emergency)" for `type1 (1 for an emergency ..., 0 for
    an elective one)`); None when it names none or several."""
    m = _GLOSS.match(after)
    if m is None:
        return None
    gloss = m.group("gloss") or m.group("gloss2")
    said = {w.lower() for w in re.findall(r"[A-Za-z]\w*", gloss)}
    named = [c for c in columns if c.lower() in said]
    if not named:
        # a side whose words spell a name, each cut short ("blue-collar" for `bluecol`)
        sides = [re.findall(r"[a-z]+", side.lower()) for side in re.split(r"\s+or\s+", gloss, flags=re.I)]
        named = [c for c in columns if any(len(w) >= 2 and _spells(w, c.lower()) for w in sides)]
    if not named and described:
        # both sides said by one column's description, every content word of each
        content = [[w for w in side if w not in STOP and len(w) > 2] for side in sides]
        named = [
            c
            for c in columns
            if all(side and all(w in described.get(c, ()) for w in side) for side in content)
        ]
    return named[0] if len(named) == 1 else None


def _spells(words: list[str], name: str) -> bool:
    """Is the name the words in order, each cut to its first letters and some later ones ("bluecol":
    blue + col of collar)?"""
    if not words:
        return not name
    word = words[0]
    if not name or not name.isalpha() or name[0] != word[0]:
        return False
    for k in range(1, min(len(name), len(word)) + 1):
        letters = iter(word)
        if all(ch in letters for ch in name[:k]) and _spells(words[1:], name[k:]):
            return True
    return False


def _parse(sql: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, dialect="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot raises several error types
        return None


def _windows(tree: exp.Expr) -> list[exp.Window]:
    return [w for w in tree.find_all(exp.Window)]


def _named(w: exp.Window) -> exp.Window | None:
    """The definition a window names (`OVER w` with `WINDOW w AS (PARTITION BY ...)`), or None."""
    name = w.args.get("alias")
    select = w.find_ancestor(exp.Select)
    if not isinstance(name, exp.Identifier) or w.args.get("partition_by") or select is None:
        return None
    for d in select.args.get("windows") or []:
        if isinstance(d.this, exp.Identifier) and d.this.name.lower() == name.name.lower():
            return d
    return None


def _partition(w: exp.Window) -> list[str]:
    w = _named(w) or w
    return [p.sql(dialect="duckdb").split(".")[-1].lower() for p in w.args.get("partition_by") or []]


@dataclass(frozen=True)
class Site:
    sel: Selection
    keys: list[str]
    fixed: str  # SQL: the whole query with the stated partition; pandas: the receiver as stated
    before: str  # pandas: the receiver as written
    probe_suffix: str = ""  # pandas: what makes the receiver a per-row statistic (a grouped object's)


# a window function whose value for a row depends on the row's partition: an aggregate, a lag or lead,
# or a ranking ("in the top fifth of the boxes of the same season": `percent_rank() OVER (PARTITION BY
# season ...)`)
_PER_ROW = (
    exp.AggFunc,
    exp.Lag,
    exp.Lead,
    exp.Rank,
    exp.DenseRank,
    exp.PercentRank,
    exp.CumeDist,
    exp.RowNumber,
    exp.Ntile,
)
# pandas methods of a grouped column that give each row a value from its own group
_PER_ROW_METHODS = frozenset(
    {"rank", "shift", "diff", "pct_change", "cumsum", "cumprod", "cummax", "cummin", "cumcount"}
)


def _grouped_per_row(code: str, sem: CodeSemantics) -> list[tuple[Selection, list[str], str, str]]:
    """pandas statements that bind `<frame>.groupby(<keys>)[<col>].<rank|shift|diff|...>(...)` (a
    ranking or lag within each group): (statement, keys, "pandas", the expression's text) each."""
    code = textwrap.dedent(code)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    out: list[tuple[Selection, list[str], str, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _PER_ROW_METHODS
        ):
            continue
        grouped = call.func.value
        if isinstance(grouped, ast.Subscript):
            grouped = grouped.value
        if not (
            isinstance(grouped, ast.Call)
            and isinstance(grouped.func, ast.Attribute)
            and grouped.func.attr == "groupby"
            and len(grouped.args) == 1
        ):
            continue
        arg = grouped.args[0]
        items = arg.elts if isinstance(arg, ast.List | ast.Tuple) else [arg]
        if not items or not all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
            continue
        keys = [str(i.value).lower() for i in items if isinstance(i, ast.Constant)]
        text = ast.get_source_segment(code, call)
        target = node.targets[0]
        name = target.id if isinstance(target, ast.Name) else None
        if text is None:
            continue
        sel = next(
            (x for x in sem.selections if x.language == "pandas" and name and x.target == name),
            Selection(language="pandas", target=name, group_keys=keys),
        )
        out.append((sel, keys, "pandas", text))
    return out


def _statistic_sites(
    sem: CodeSemantics, code: str = ""
) -> list[tuple[Selection, list[str], str, str]] | None:
    """The turn's per-row statistics (SQL windows, pandas transforms, and with `code` a pandas
    ranking or lag within groups) when they are one statistic, or several over the same keys in one
    statement: (statement, keys, language, text) each; else None."""
    sites: list[tuple[Selection, list[str], str, str]] = _grouped_per_row(code, sem) if code else []
    sql_sites: list[tuple[Selection, list[str], str, str]] = []
    named_groups = _grouped_names(sem)
    for sel in sem.selections:
        if sel.language == "sql" and sel.sql:
            tree = _parse(sel.sql)
            if tree is None:
                continue
            wins = [w for w in _windows(tree) if isinstance(w.this, _PER_ROW)]
            for w in wins:
                sql_sites.append((sel, _partition(w), "sql", w.sql(dialect="duckdb")))
        elif sel.language == "pandas":
            for agg in sel.aggregates:
                if ".transform(" in agg.text and ".groupby(" in agg.text:
                    sites.append((sel, [k.lower() for k in sel.group_keys], "pandas", agg.text))
                    continue
                # `peers = df.groupby([...])["x"]` then `peers.transform("mean")`: the keys of the
                # grouped object the name holds
                grouped = named_groups.get(_transform_receiver(agg.text) or "")
                if grouped is not None:
                    sites.append((sel, [k.lower() for k in grouped.group_keys], "pandas", agg.text))
    # a window inside a subquery is listed with the subquery and with the statement around it:
    # the statement the code runs is the longest one that holds it
    longest: dict[str, Selection] = {}
    for sel, _, _, text in sql_sites:
        if text not in longest or len(sel.sql) > len(longest[text].sql):
            longest[text] = sel
    sites += [site for site in sql_sites if longest[site[3]] is site[0]]
    # one statistic, or several over the same keys (a sum of cases over a sum of residents)
    if not sites or len({tuple(k) for _, k, _, _ in sites}) != 1 or len({id(s) for s, _, _, _ in sites}) != 1:
        return None
    return sites


def _grouped_names(sem: CodeSemantics) -> dict[str, Selection]:
    """Names bound to a grouped pandas object (`peers = students.groupby(["sex", "band"])["x"]`)."""
    return {
        sel.target: sel
        for sel in sem.selections
        if sel.language == "pandas"
        and sel.group_keys
        and sel.target
        and re.fullmatch(r"[A-Za-z_]\w*", sel.target)
    }


def _transform_receiver(text: str) -> str | None:
    """The name a transform is called on (`peers.transform("mean")` -> peers), or None."""
    m = re.match(r"([A-Za-z_]\w*)\.transform\(", text)
    return m.group(1) if m else None


# `peers = students.groupby(["sex", "band"])["extraversion"]`: the grouped object's own line
def _grouped_line(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"^[ \t]*{re.escape(name)}\s*=\s*(?P<expr>[A-Za-z_]\w*\.groupby\([^\n]*?\)(?:\[[^\n]*?\])?)[ \t]*$",
        re.M,
    )


def rule_keys(code: str, sem: CodeSemantics) -> list[str] | None:
    """The keys of the turn's one group statistic behind a rule (a window or transform, or a statistic
    joined or looked up back onto the rows), lower-cased; None when there is none or several."""
    sites = _statistic_sites(sem, code)
    if sites is not None:
        return sites[0][1] or None
    joined = joined_site(code, sem, Stated("\x00", ""))
    return [k.lower() for k in joined.keys] if joined is not None else None


def code_site(sem: CodeSemantics, stated: Stated, code: str = "") -> Site | None:
    """The turn's one per-row statistic, when its keys differ from the stated group's; None when
    the turn computes none, several, or one over the stated group. `code`: the turn's code, where a
    grouped object bound to a name (`peers = df.groupby(...)["x"]`) is regrouped on its own line."""
    sites = _statistic_sites(sem, code)
    if sites is None:
        return None
    sel, keys, language, _ = sites[0]
    if stated.matches(keys) or _grouped_as_stated(sem, stated):
        return None
    names = {_transform_receiver(t) for _, _, _, t in sites}
    if language == "pandas" and len(names) == 1 and None not in names:
        return _regrouped_name(sem, stated, code, str(names.pop()))
    if language == "sql":
        tree = _parse(sel.sql)
        assert tree is not None
        for w in _windows(tree):
            if isinstance(w.this, _PER_ROW):
                (_named(w) or w).set("partition_by", [exp.column(k) for k in stated.keys] or None)
        return Site(sel, keys, tree.sql(dialect="duckdb"), sel.sql)
    if not stated.column or len(sites) != 1:
        return None
    text = sites[0][3]
    m = re.search(r"\.groupby\(\s*([\"'])(\w+)\1\s*\)", text)
    # a Series of the frame as the key (`share.groupby(cn["block"])`): the stated column of that frame
    by_series = re.search(r"\.groupby\(\s*(?P<frame>[A-Za-z_]\w*)\[\s*([\"'])\w+\2\s*\]\s*\)", text)
    listed = re.search(r"\.groupby\(\s*\[[^\]\n]*\]\s*\)", text)  # `groupby(["year", "Short"])`
    said = repr(stated.keys) if stated.more else repr(stated.column)
    if m is not None:
        fixed = text[: m.start()] + f".groupby({said})" + text[m.end() :]
    elif listed is not None:
        fixed = text[: listed.start()] + f".groupby({said})" + text[listed.end() :]
    elif by_series is not None and not stated.more:
        key = f"{by_series.group('frame')}[{stated.column!r}]"
        fixed = text[: by_series.start()] + f".groupby({key})" + text[by_series.end() :]
    else:
        return None
    return Site(sel, keys, fixed, text)


def _grouped_as_stated(sem: CodeSemantics, stated: Stated) -> bool:
    """Does a statement of the turn group by exactly the stated keys and take a statistic other than a
    count there? Then the rule's statistic is taken as stated there (`rated.groupby(["month",
    "onset"])["x"].mean()` joined back), and a per-row statistic over other keys is another step (a
    completeness filter by `subject`), not the rule's. A count per group ("the state with the most of
    them", `only.groupby("state").size()`, `value_counts()`) takes no such statistic."""
    return any(
        sel.group_keys
        and stated.matches([key_name(k) for k in sel.group_keys])
        and any(a.function not in ("count", "nunique") for a in sel.aggregates)
        for sel in sem.selections
    )


def _regrouped_name(sem: CodeSemantics, stated: Stated, code: str, name: str) -> Site | None:
    """The line binding `name` to a grouped object, regrouped by the stated keys; the probe compares
    the groups' means under the two keys."""
    grouped = _grouped_names(sem).get(name)
    found = list(_grouped_line(name).finditer(code))
    if grouped is None or len(found) != 1 or not stated.keys:
        return None
    expr = found[0].group("expr")
    said = repr(stated.keys) if stated.more else repr(stated.column)
    fixed = re.sub(r"\.groupby\([^\n]*?\)(?=\[|$)", f".groupby({said})", expr, count=1)
    if fixed == expr:
        return None
    return Site(
        grouped, [k.lower() for k in grouped.group_keys], fixed, expr, probe_suffix='.transform("mean")'
    )


def pandas_probe(before: str, after: str) -> str:
    return textwrap.dedent(f"""\
        _a = {before}
        _b = {after}
        _v = not _a.round(9).equals(_b.round(9))
        _o = {{'values_differ': bool(_v)}}""")


def requirement(stated: Stated, others: list[Stated] | None = None) -> Requirement:
    said = f"over each {' and '.join(stated.keys)}" if stated.column else "over the whole series"
    if others:  # the words' readings, each a key of its own
        said = f"over each {' or '.join(c for o in [stated, *others] for c in o.keys)}"
    return Requirement(
        kind=Kind.GROUPING,
        text=f"the rule's statistic taken {said} ({stated.text})",
        source="context",
        subject=stated.keys or ["whole series"],
        keys=stated.keys or ["the whole series"],
    )


def reading_edit(code: str, sem: CodeSemantics, stated: Stated) -> SpanEdit | None:
    """The turn's code with its one group statistic taken over the reading's keys, as the answer check
    applies it; None where the code's statistic cannot be re-keyed."""
    site = code_site(sem, stated, code)
    if site is not None:
        if site.sel.language == "sql":
            return SpanEdit(kind="sql", before=site.sel.sql or "", after=site.fixed)
        return SpanEdit(kind="text", before=site.before, after=site.fixed)
    joined = joined_site(code, sem, stated)
    if joined is None:
        return None
    if joined.sel is None:
        return SpanEdit(kind="text", before=joined.before, after=joined.after)
    return SpanEdit(kind="sql", before=joined.sel.sql or "", after=joined.after)


@dataclass(frozen=True)
class Joined:
    """A group statistic computed apart and joined or looked up back onto the rows: `WITH m AS
    (SELECT k, MEDIAN(x) ... GROUP BY k) ... JOIN m USING (k)`, or `med = f.groupby("k")["x"].median()`
    then `rows["k"].map(med)` / `rows.join(med, on="k")`."""

    keys: list[str]
    before: str
    after: str  # the same text grouped and joined by the stated column only
    sel: Selection | None  # SQL: the query re-run as `after`; pandas: None (a text edit of the cell)
    names: list[str]  # pandas: the names the edited statements assign


# pandas: `name = frame.groupby(<keys>)[...].median()` (any statistic but a per-row transform)
_GROUP_STAT = re.compile(
    r"^[ \t]*(?P<name>[A-Za-z_]\w*)\s*=\s*[A-Za-z_]\w*(?:\[[^\n]*?\])?\.groupby\(\s*(?P<keys>([\"'])\w+\3|\[[^\]\n]*\])"
    r"\s*(?:,\s*as_index\s*=\s*False\s*)?\)(?P<rest>[^\n]*)$",
    re.M,
)
# (the frame may be a selection of rows: `ps[ps["hours"] > 0].groupby("married")["earnings"].median()`)
_STAT_CALL = re.compile(r"\.(?:median|mean|std|min|max|sum|quantile|agg|aggregate)\(")


def joined_site(code: str, sem: CodeSemantics, stated: Stated) -> Joined | None:
    """The turn's one group statistic joined back onto the rows, when it is grouped by other keys
    than the stated group; None when the turn has a window or a transform (`code_site` reads those),
    none or several such statistics, or one grouped by the stated column."""
    if stated.column is None or re.search(r"\bOVER\s*\(|\.transform\(", code, re.IGNORECASE):
        return None
    found: list[Joined] = []
    sqls = [sel for sel in sem.selections if sel.language == "sql" and sel.sql]
    for sel in sqls:
        if any(sel.sql in other.sql and other is not sel and len(other.sql) > len(sel.sql) for other in sqls):
            continue  # a subquery listed apart from the statement that runs it
        hit = _sql_joined(sel.sql, stated.keys)
        if hit is not None:
            found.append(Joined(hit[0], sel.sql, hit[1], sel, []))
    if stated.more:  # two stated keys: a grouped subquery joined back, a pandas statistic merged or
        # joined back, or an UPDATE ... FROM
        found += [j for j in (_mapped(code, stated.keys), _update_from(code, stated.keys)) if j is not None]
        if len(found) != 1 or stated.matches(found[0].keys):
            return None
        return found[0]
    mapped = _mapped(code, stated.column)
    if mapped is not None:
        found.append(mapped)
    for other in (
        _correlated(code, stated.column),
        _update_from(code, [stated.column]),
        _inline_map(code, stated.column),
    ):
        if other is not None:
            found.append(other)
    if len(found) != 1 or stated.matches(found[0].keys):
        return None
    return found[0]


def _sql_joined(sql: str, columns: list[str]) -> tuple[list[str], str] | None:
    """The keys of the one grouped subquery or CTE the statement joins back on them, and the statement
    with it grouped and joined by `columns` instead."""
    tree = _parse(sql)
    if tree is None:
        return None
    ctes = {c.alias_or_name.lower(): c.this for c in tree.find_all(exp.CTE)}
    sites: list[tuple[exp.Join, exp.Select, list[str]]] = []
    for join in tree.find_all(exp.Join):
        target = join.this
        inner = target.this if isinstance(target, exp.Subquery) else None
        if isinstance(target, exp.Table):
            inner = ctes.get(target.name.lower())
        if not isinstance(inner, exp.Select):
            continue
        group = inner.args.get("group")
        if group is None or not any(e.find(exp.AggFunc) for e in inner.expressions):
            continue
        if not all(isinstance(g, exp.Column) for g in group.expressions):
            return None
        keys = [g.name for g in group.expressions]
        # `geo AS year` in the grouped SELECT: the joined side's `year` is `geo`
        renamed = {
            e.alias.lower(): e.this.name
            for e in inner.expressions
            if isinstance(e, exp.Alias) and isinstance(e.this, exp.Column)
        }
        # `0 AS year` joined on `c.year = 0`: a key held constant, no group of the statistic
        constant = {
            e.alias.lower(): e.this.sql(dialect="duckdb")
            for e in inner.expressions
            if isinstance(e, exp.Alias) and isinstance(e.this, exp.Literal)
        }
        side = target.alias_or_name.lower()

        def held(t: exp.Expr, constant: dict[str, str] = constant, side: str = side) -> bool:
            ends = [t.this, t.expression] if isinstance(t, exp.EQ) else []
            cols = [e for e in ends if isinstance(e, exp.Column) and e.table.lower() == side]
            lits = [e for e in ends if isinstance(e, exp.Literal)]
            return (
                len(cols) == 1
                and len(lits) == 1
                and constant.get(cols[0].name.lower()) == lits[0].sql(dialect="duckdb")
            )

        def underlying(c: exp.Column, renamed: dict[str, str] = renamed, side: str = side) -> str:
            return renamed.get(c.name.lower(), c.name) if c.table.lower() == side else c.name

        using, on = join.args.get("using"), join.args.get("on")
        if using:
            joined = [i.name for i in using]
        elif on is not None:
            terms = list(on.flatten()) if isinstance(on, exp.And) else [on]
            terms = [t for t in terms if not held(t)]
            if not terms or not all(
                isinstance(t, exp.EQ | exp.NullSafeEQ)  # `=`, or `IS NOT DISTINCT FROM`
                and isinstance(t.this, exp.Column)
                and isinstance(t.expression, exp.Column)
                and underlying(t.this).lower() == underlying(t.expression).lower()
                for t in terms
            ):
                return None  # a join on anything but equal keys: not read
            joined = [underlying(t.this) for t in terms]
        else:
            return None
        if {k.lower() for k in joined} - {k.lower() for k in keys}:
            return None
        sites.append((join, inner, keys))
    if len(sites) != 1:
        return None
    join, inner, keys = sites[0]
    if sorted(k.lower() for k in keys) == sorted(c.lower() for c in columns):
        return keys, sql
    _regroup(inner, keys, columns)
    if join.args.get("using"):
        join.set("using", [exp.to_identifier(c) for c in columns])
    else:
        on = join.args["on"]
        first = next(iter(on.flatten())) if isinstance(on, exp.And) else on
        join.set("on", exp.and_(*(_matched_on(first, c) for c in columns)))
    return keys, tree.sql(dialect="duckdb")


def _regroup(inner: exp.Select, keys: list[str], columns: list[str]) -> None:
    """The grouped statistic's SELECT, grouped by `columns` instead of its keys (in place)."""
    low, stated = {k.lower() for k in keys}, {c.lower() for c in columns}
    kept = [
        e
        for e in inner.expressions
        if not (isinstance(e, exp.Column) and e.name.lower() in low)
        and not (isinstance(e, exp.Alias) and isinstance(e.this, exp.Column) and e.this.name.lower() in low)
        # a key held constant under a stated key's name (`0 AS year`) gives way to the stated key
        and not (isinstance(e, exp.Alias) and isinstance(e.this, exp.Literal) and e.alias.lower() in stated)
    ]
    inner.set("expressions", [*(exp.column(c) for c in columns), *kept])
    inner.set("group", exp.Group(expressions=[exp.column(c) for c in columns]))


def _matched_on(key: exp.Expr, column: str) -> exp.Expr:
    """A key condition (`g.k = t.k`, `g.k IS NOT DISTINCT FROM t.k`) matching `column` instead, each
    side keeping its table."""
    return type(key)(
        this=exp.column(column, table=key.this.table or None),
        expression=exp.column(column, table=key.expression.table or None),
    )


# `(SELECT median(f2.wfood) FROM fam f2 WHERE f2.town = fam.town)`: a group statistic taken for each
# row by a scalar subquery whose conditions match the row's own keys; other conditions may narrow the
# peers further (`AND abs(q.age - p.age) <= 5`)
_EQUAL = r"\w+\.\w+\s*=\s*\w+\.\w+"
_CORRELATED = re.compile(
    r"\(\s*SELECT\s+\w+\s*\([^()]*\)\s+FROM\s+\w+\s+(?:AS\s+)?(?P<alias>\w+)\s+WHERE\s+",
    re.IGNORECASE,
)
_PAIR = re.compile(r"(?P<a>\w+)\.(?P<k1>\w+)\s*=\s*(?P<b>\w+)\.(?P<k2>\w+)")


def _subquery_condition(code: str, m: re.Match[str]) -> str | None:
    """The WHERE condition of the subquery opened at `m`, up to its closing parenthesis."""
    depth = 0
    for i in range(m.end(), len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            if depth == 0:
                return code[m.end() : i].rstrip()
            depth -= 1
    return None


def _conjuncts(cond: str) -> list[str]:
    """The condition's source text cut at each AND outside any parenthesis, each part stripped; none
    where an OR stands outside them. (Text, not a sqlglot tree: the re-run edits the source as written.)"""
    parts, depth, last = [], 0, 0
    for t in re.finditer(r"[()]|\bAND\b|\bOR\b", cond, re.IGNORECASE):
        if t.group(0) == "(":
            depth += 1
        elif t.group(0) == ")":
            depth -= 1
        elif depth == 0 and t.group(0).upper() == "OR":
            return []  # an OR at the top: no conjunction of keys
        elif depth == 0:
            parts.append(cond[last : t.start()].strip())
            last = t.end()
    return [*parts, cond[last:].strip()]


def _correlated(code: str, column: str) -> Joined | None:
    """The code's one correlated scalar subquery taking a statistic over the rows that share the
    outer row's keys (one equality per key, joined by AND, beside any other conditions on the peers),
    with those keys replaced by the stated column on both sides."""
    sites: list[tuple[str, list[str], str, list[str], str]] = []
    for m in _CORRELATED.finditer(code):
        alias = m.group("alias").lower()
        cond = _subquery_condition(code, m)
        if not cond:
            continue
        parts = _conjuncts(cond)
        pairs = [p for p in (_PAIR.fullmatch(part) for part in parts) if p is not None]
        others = [part for part in parts if not _PAIR.fullmatch(part)]
        outers = {
            (p.group("b") if p.group("a").lower() == alias else p.group("a"))
            for p in pairs
            if alias in (p.group("a").lower(), p.group("b").lower())
        }
        if (
            pairs
            and all(
                p.group("k1").lower() == p.group("k2").lower()
                and alias in (p.group("a").lower(), p.group("b").lower())
                and p.group("a").lower() != p.group("b").lower()
                for p in pairs
            )
            and not any(re.search(_EQUAL, part) for part in others)
            and len({o.lower() for o in outers}) == 1
        ):
            sites.append((cond, [p.group("k1") for p in pairs], outers.pop(), others, m.group("alias")))
    if len(sites) != 1:
        return None
    cond, keys, outer, others, alias = sites[0]
    if any(
        re.search(rf"\b{re.escape(alias)}\.{re.escape(column)}\b", part, re.IGNORECASE) for part in others
    ):
        return None  # the peers are already held to the row by the stated column (a distance on it)
    after = " AND ".join([f"{alias}.{column} = {outer}.{column}", *others])
    return Joined(keys, cond, after, None, [outer])


# `chem["fem"].map(chem.groupby("fem")["ment"].median())`: the group statistic looked up in one expression
_INLINE_MAP = re.compile(
    r"\[\s*(?P<q1>[\"'])(?P<k1>\w+)(?P=q1)\s*\]\.map\(\s*[A-Za-z_]\w*\.groupby\(\s*(?P<q2>[\"'])(?P<k2>\w+)(?P=q2)\s*\)"
    r"\[\s*(?P<q3>[\"'])\w+(?P=q3)\s*\]\.(?:median|mean|min|max|sum|std)\(\)\s*\)"
)


def _inline_map(code: str, column: str) -> Joined | None:
    """The code's one group statistic looked up by the row's own key inside one expression, with that
    key replaced by the stated column in the look-up and the grouping."""
    sites = [m for m in _INLINE_MAP.finditer(code) if m.group("k1") == m.group("k2")]
    if len(sites) != 1:
        return None
    m = sites[0]
    text, key = m.group(0), m.group("k1")
    after = text.replace(f"{m.group('q1')}{key}{m.group('q1')}", repr(column), 1)
    after = after.replace(f"{m.group('q2')}{key}{m.group('q2')}", repr(column), 1)
    return Joined([key], text, after, None, [])


def _sql_literals(code: str) -> list[str]:
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _update_from(code: str, columns: list[str]) -> Joined | None:
    """The code's one `UPDATE t SET ... FROM (SELECT k, MEDIAN(x) ... GROUP BY k) AS g WHERE g.k = t.k`
    (one key or several, each matched by equality): a group statistic joined onto the rows it updates,
    regrouped and matched by the stated columns."""
    found: list[Joined] = []
    for text in _sql_literals(code):
        if not re.match(r"\s*UPDATE\b", text, re.IGNORECASE) or text not in code:
            continue
        tree = _parse(text)
        if not isinstance(tree, exp.Update):
            continue
        source = tree.args.get("from_") or tree.args.get("from")
        inner = source.this.this if source is not None and isinstance(source.this, exp.Subquery) else None
        if not isinstance(inner, exp.Select):
            continue
        group = inner.args.get("group")
        where = tree.args.get("where")
        if group is None or where is None:
            continue
        terms = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
        if not (
            all(
                isinstance(eq, exp.EQ)
                and isinstance(eq.this, exp.Column)
                and isinstance(eq.expression, exp.Column)
                and eq.this.name.lower() == eq.expression.name.lower()
                for eq in terms
            )
            and all(isinstance(g, exp.Column) for g in group.expressions)
            and sorted(g.name.lower() for g in group.expressions)
            == sorted(eq.this.name.lower() for eq in terms)
        ):
            continue
        keys = [eq.this.name for eq in terms]
        if sorted(k.lower() for k in keys) == sorted(c.lower() for c in columns):
            found.append(Joined(keys, text, text, None, [tree.this.name]))
            continue
        _regroup(inner, keys, columns)
        matched = [_matched_on(terms[0], c) for c in columns]
        where.set("this", exp.and_(*matched) if len(matched) > 1 else matched[0])
        found.append(Joined(keys, text, tree.sql(dialect="duckdb"), None, [tree.this.name]))
    return found[0] if len(found) == 1 else None


def _keys_of(text: str) -> list[str] | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _mapped(code: str, column: str | list[str]) -> Joined | None:
    """`name = frame.groupby(keys)[...].median()` looked up, joined or merged back on the same keys:
    the two key texts as written, and as `column` (one key, or a list of keys)."""
    stats = [m for m in _GROUP_STAT.finditer(code) if _STAT_CALL.search(m.group("rest"))]
    if len(stats) != 1:
        return None
    m = stats[0]
    keys = _keys_of(m.group("keys"))
    name = re.escape(m.group("name"))
    lookups = [
        *re.finditer(rf"\[\s*(?P<k>([\"'])\w+\2)\s*\]\s*\.map\(\s*{name}\s*\)", code),
        *re.finditer(rf"\.join\(\s*{name}\s*,\s*on\s*=\s*(?P<k>([\"'])\w+\2|\[[^\]\n]*\])", code),
        # `pos = pos.merge(medians, on="eucalyptus", how="left")`: the statistic merged back as a column
        *re.finditer(rf"\.merge\(\s*{name}\s*,\s*on\s*=\s*(?P<k>([\"'])\w+\2|\[[^\]\n]*\])", code),
    ]
    if keys is None or len(lookups) != 1 or lookups[0].start() < m.end():
        return None
    look = lookups[0]
    if _keys_of(look.group("k")) != keys:
        return None
    if isinstance(column, list) and ".map(" in look.group(0):
        return None  # several keys cannot be looked up by one column's `.map`
    before = code[m.start("keys") : look.end("k")]
    between = code[m.end("keys") : look.start("k")]
    # `survey[["vote88"]].merge(medians, on=["vote88"])`: the rows' own key columns, picked for the
    # merge, are the keys too
    picked = re.search(rf"\[\s*(?P<k>\[[^\]\n]*\])\s*\]\s*\.merge\(\s*{name}\s*,\s*on\s*=\s*$", between)
    if picked is not None and _keys_of(picked.group("k")) == keys:
        wanted = column if isinstance(column, list) else [column]
        between = between[: picked.start("k")] + repr(wanted) + between[picked.end("k") :]
    after = repr(column) + between + repr(column)
    names = [m.group("name")]
    line = code[code.rfind("\n", 0, look.start()) + 1 : look.start()]
    assigned = re.match(r"\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*=(?!=)", line)
    if assigned and assigned.group(1) not in names:
        names.append(assigned.group(1))
    return Joined(keys, before, after, None, names)


PROBE = "_v = True\n_o = {'group_statistic_rejoined_over_the_stated_group': True}"
