"""The words of the question language, as data: one table that every reader of task text uses.

Requirement extraction (`stateguard.verification.extract`), the rules manager's stated cut-offs
(`stateguard.policies.checks`), the hierarchical manager's routing, the teacher's constraints
(`synthesis.teacher.requirements`) and the screening of interventions (`stateguard.artifacts.mistakes`)
all read their comparators, directions, statistics, units and scope words from here, so a new
phrasing is one entry in one place and every reader sees it.

    LEXICON.ops_of("at least")                     # ('>=',)
    LEXICON.pattern(LEXICON.comparator_phrases())  # 'no fewer than|no less than|...' longest first
    LEXICON.statistic("average")                   # 'mean'

Only words live here; how a clause is parsed with them is the parser's business. A word that is in
no category is a content word: it must bind to a column, a value or a number, or the parse abstains.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

Op = Literal[">", ">=", "<", "<=", "==", "!="]
Position = Literal["prefix", "postfix"]


class Comparator(BaseModel):
    """Words that state a bound: `at least 3`, `3 or more`, `before 2010`."""

    model_config = ConfigDict(frozen=True)
    phrases: tuple[str, ...]
    op: Op
    position: Position = "prefix"
    temporal: bool = False  # bounds on time when the number is a year ("before 2010", "over 2015")
    core: bool = False  # the plain comparators every reader knows (the rules manager's stated cut-offs)


class Lexicon(BaseModel):
    model_config = ConfigDict(frozen=True)

    comparators: tuple[Comparator, ...]
    statistics: dict[str, str]  # word -> requirement function (mean, median, sum, ...)
    comparatives: tuple[str, ...]  # bare comparative words ("greater", "exceed") that point a direction
    descending: tuple[str, ...]  # ranking words that put the largest first
    ascending: tuple[str, ...]
    exclusion: tuple[str, ...]  # words (regex stems) that leave named values out
    exclusion_frames: tuple[
        tuple[str, str], ...
    ]  # (verb stem, particle) around the values: "leave Biscoe aside"
    scope_markers: tuple[str, ...]  # words that restrict a turn to some rows
    units: tuple[str, ...]  # a unit or multiplier after a number names no attribute
    scales: dict[str, float]  # a unit word after a number that rescales it in code: "60 cents" is 0.6
    count_units: tuple[str, ...]  # the scale words that count in a larger unit ("two decades": 20 years)
    # a unit said after a number, and the words a column's description spells it with ("36.8 °C or
    # above" of `temp (the body temperature in degrees Celsius)`)
    unit_names: dict[str, tuple[str, ...]]
    arithmetic: tuple[str, ...]  # "divided by", "times": an operator between quantities, not a grouping
    share_words: tuple[str, ...]
    group_markers: tuple[str, ...]
    join_verbs: tuple[str, ...]  # regex stems: "join X to Y by date" names a join key, not a grouping
    presence: tuple[str, ...]  # "recorded", "known": a value that must be present
    year_spans: tuple[str, ...]  # "over 2015", "during 2015": that year, not a bound
    restoration: tuple[str, ...]  # "bring X back", "restore X": X returns; the turn is not limited to X
    earlier_version: tuple[
        str, ...
    ]  # "the original rule", "the withdrawn definition": a version not in force
    # said only after a rule's noun and its subject ("the rule we set aside"): a version not in force;
    # alone the words leave rows out ("set aside the missing rows")
    undone_version: tuple[str, ...]
    leave_out_verbs: tuple[str, ...]  # an instruction sentence opening with one leaves values out of the turn
    abbreviations: dict[str, str]  # column-name short forms and the word they stand for (`yr` -> year)
    value_words: dict[
        str, str
    ]  # everyday words for a category value as data often writes it ("women" -> female)
    category_nouns: dict[
        str, tuple[str, ...]
    ]  # a noun naming a kind of category and the values such a column holds ("sex" -> female, male)
    marker_nouns: dict[
        str, tuple[str, ...]
    ]  # a noun naming the column that holds one of these values among a few others ("arm" -> placebo)
    measure_nouns: tuple[str, ...]  # a noun after a column's word that names its values ("a grassy score")
    rule_names: tuple[str, ...]  # a noun right after a statistic that makes it a rule's name ("the median
    # rule", "the mean-line"): the text names the rule, it asks for no statistic
    tying_words: tuple[str, ...]  # a participle that ties rows to the value beside it ("the wives living in
    # the south", "woman-headed households"): it says no condition of its own
    function_words: frozenset[str]  # words that carry no content of their own (question words, verbs
    # of analysis, determiners): a clause of only these, lexicon words, columns, values and numbers parses whole

    # -- lookups --------------------------------------------------------------------------------
    def comparator_phrases(
        self,
        *,
        op: str | None = None,
        position: Position = "prefix",
        temporal: bool | None = None,
        core: bool | None = None,
    ) -> list[str]:
        """Phrases of the comparators that match every given filter (None: either)."""
        out: list[str] = []
        for c in self.comparators:
            if c.position != position or (op is not None and c.op != op):
                continue
            if temporal is not None and c.temporal != temporal:
                continue
            if core is not None and c.core != core:
                continue
            out += [p for p in c.phrases if p not in out]
        return out

    def ops_of(self, phrase: str, position: Position = "prefix") -> tuple[str, ...]:
        """The ops a comparator phrase can state (one, unless the lexicon is ambiguous)."""
        low = " ".join(phrase.lower().split())
        return tuple(
            dict.fromkeys(c.op for c in self.comparators if c.position == position and low in c.phrases)
        )

    def is_temporal(self, phrase: str) -> bool:
        low = " ".join(phrase.lower().split())
        return any(c.temporal and low in c.phrases for c in self.comparators)

    def statistic(self, word: str) -> str | None:
        return self.statistics.get(" ".join(word.lower().split()))

    def statistics_in(self, text: str, *, asked: bool = False) -> set[str]:
        """The statistics (functions) a text names by any of their words, each as a whole word.
        `asked`: only those it asks for, not a statistic that names a rule ("the median rule")."""
        names = self.pattern(self.rule_names)
        return {
            f
            for w, f in self.statistics.items()
            for m in re.finditer(rf"\b{re.escape(w)}\b", text, re.IGNORECASE)
            if not (asked and re.match(rf"[\s-]+(?:{names})\b", text[m.end() :], re.IGNORECASE))
        }

    def names_rule(self, word: str) -> bool:
        """Is the word a rule's noun (`rule_names`)?"""
        return word.lower() in self.rule_names

    def direction_words(self) -> list[str]:
        """Every word that states the direction of a bound: comparators (prefix, not temporal, and
        postfix) and bare comparatives."""
        words = self.comparator_phrases(temporal=False) + self.comparator_phrases(position="postfix")
        return [w for w in [*words, *self.comparatives] if re.search(r"[a-z]", w)]

    def unit_factor(self, text: str, at: int, units: Iterable[str] | None = None) -> float:
        """The factor of the scale word right after position `at` of `text` ("two decades" read
        at the end of "two": 10), else 1.0. `units` limits the words read (default: every
        alphabetic scale word)."""
        words = tuple(w for w in (self.scales if units is None else units) if w.isalpha())
        m = _unit_after(words).match(text, at)
        return self.scales[m.group("unit").lower()] if m else 1.0

    @staticmethod
    def pattern(phrases: Iterable[str]) -> str:
        """A regex alternation of `phrases`, longest first (so "at least" wins over "least");
        spaces match any whitespace."""
        ordered = sorted(dict.fromkeys(phrases), key=lambda p: (-len(p), p))
        return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in ordered)


@functools.lru_cache(maxsize=8)
def _unit_after(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(
        r"\s+(?P<unit>" + "|".join(sorted(words, key=len, reverse=True)) + r")\b", re.IGNORECASE
    )


def _c(
    op: Op, *phrases: str, position: Position = "prefix", temporal: bool = False, core: bool = False
) -> Comparator:
    return Comparator(phrases=phrases, op=op, position=position, temporal=temporal, core=core)


# The comparators as written; `_negated` adds their "no ... than" forms.
_STATED = (
    _c(">=", "at least", core=True),
    _c(">=", "no less than", "not less than", "no fewer than", "a minimum of", "minimum of"),
    _c(">=", "at or above", "at or over", "equal to or greater than", "equal to or more than"),
    _c(">=", "greater than or equal to", "more than or equal to", "equal to or above"),
    _c(">=", "reaching", "reaches", "reached", "reach"),  # "reach 1.5 times their median"
    _c(">=", ">=", "≥", core=True),
    _c("<=", "at most", core=True),
    _c("<=", "no more than", "not more than", "up to", "a maximum of", "maximum of"),
    _c("<=", "up to and including", "at or below", "at or under", "equal to or less than"),
    _c("<=", "less than or equal to", "fewer than or equal to", "equal to or below"),
    _c("<=", "<=", "≤", core=True),
    _c(">", "more than", "greater than", "above", core=True),
    _c(">", "higher than", "larger than", "longer than", "heavier than", "older than", "over"),
    _c(">", "exceeding", "exceeds", "exceed", "exceeded", "warmer than", "hotter than"),
    _c(">", "tops", "topped", "topping"),  # "his income tops 45 thousand" (not "top", a ranking)
    _c(">", "stronger than", "faster than", "bigger than", "wider than", "deeper than", "taller than"),
    _c(">", "costlier than", "pricier than", "dearer than", "wetter than", "richer than", "louder than"),
    _c(">", "in excess of", "beyond", "upward of", "upwards of", "surpassing", "surpasses", "surpass"),
    _c(">", "past"),  # "ran past 90 minutes", "bent past 40 degrees"
    _c(">", ">", core=True),
    _c(">", "after", "later than", temporal=True),
    _c(">=", "since", "starting in", "starting from", "beginning in", temporal=True),
    _c("<=", "until", "till", "through", "up until", temporal=True),
    _c("<", "less than", "fewer than", "below", core=True),
    _c("<", "lower than", "smaller than", "shorter than", "lighter than", "younger than", "under"),
    _c("<", "colder than", "cooler than", "short of"),
    _c("<=", "within"),  # "out within 14 days", "taken within 20 km of the fault"
    _c(
        "<",
        "weaker than",
        "slower than",
        "cheaper than",
        "narrower than",
        "shallower than",
        "thinner than",
    ),
    _c("<", "drier than", "calmer than", "quieter than", "poorer than"),
    _c("<", "<", core=True),
    _c("<", "before", "earlier than", temporal=True),
    _c(">=", "or more", "or higher", "or greater", "or above", "or over", position="postfix"),
    _c(
        ">=",
        "and more",
        "and higher",
        "and above",
        "and over",
        "or upwards",
        "and upwards",
        "and up",
        "or up",
        position="postfix",
    ),
    _c(
        ">=",
        "or older",
        "and older",
        "or longer",
        "or taller",
        "or heavier",
        "or larger",
        "or faster",
        "or bigger",
        "or wider",
        "or deeper",
        "or stronger",
        "or warmer",
        position="postfix",
    ),
    _c("<=", "or younger", "and younger", "or shorter", "or lighter", "or smaller", position="postfix"),
    _c(
        "<=",
        "or slower",
        "or cheaper",
        "or narrower",
        "or shallower",
        "or weaker",
        "or colder",
        position="postfix",
    ),
    _c(">=", "or later", "and later", "or after", position="postfix", temporal=True),
    _c("<=", "or earlier", "and earlier", "or before", position="postfix", temporal=True),
    _c("<=", "or less", "or fewer", "or lower", "or below", "or under", position="postfix"),
    _c("<=", "and less", "and fewer", "and lower", "and below", "and under", position="postfix"),
)


def _negated(stated: tuple[Comparator, ...]) -> tuple[Comparator, ...]:
    """A strict comparative said with "no" or "not" is the other side, bound included: "no later than
    month 6" is `<= 6`, "not younger than 40" is `>= 40`. Forms already written are kept as they are."""
    written = {p for c in stated for p in c.phrases}
    flip: dict[str, Op] = {">": "<=", "<": ">="}
    out = []
    for c in stated:
        if c.position != "prefix" or c.op not in flip:
            continue
        said = [f"{neg} {p}" for p in c.phrases if p.endswith(" than") for neg in ("no", "not")]
        said = [p for p in said if p not in written]
        if said:
            out.append(_c(flip[c.op], *said, temporal=c.temporal))
    return tuple(out)


LEXICON = Lexicon(
    comparators=_STATED + _negated(_STATED),
    statistics={
        "mean": "mean",
        "average": "mean",
        "avg": "mean",
        "median": "median",
        "middle value": "median",
        "total": "sum",
        "combined": "sum",
        "sum of": "sum",
        "sum": "sum",
    },
    comparatives=("greater", "smaller", "higher", "lower", "larger", "exceed"),
    # superlatives whose direction holds whatever the quantity ("oldest", "latest": an age is ranked
    # largest first, a date smallest first, so they are in neither; nor "fastest" and "slowest": the
    # slowest reading is the largest reaction time but the smallest speed; "fastest-growing" is)
    descending=(
        "fastest-growing",
        "fastest-rising",
        "largest",
        "highest",
        "most",
        "biggest",
        "greatest",
        "top",
        "heaviest",
        "longest",
        "tallest",
        "widest",
        "deepest",
        "richest",
        "strongest",
        "wettest",
        "hottest",
        "farthest",
        "furthest",
    ),
    ascending=(
        "slowest-growing",
        "slowest-rising",
        "smallest",
        "lowest",
        "fewest",
        "least",
        "lightest",
        "shortest",
        "narrowest",
        "shallowest",
        "poorest",
        "weakest",
        "cheapest",
        "driest",
        "coldest",
        "nearest",
        "closest",
    ),
    exclusion=(
        r"exclud\w*",
        "except",
        "other than",
        "not",
        "without",
        r"drop\w*",
        r"remov\w*",
        r"ignor\w*",
        r"leav\w* out",
        r"discard\w*",
        "besides",
        "apart from",
        "unless",
        "outside",
    ),
    exclusion_frames=(
        (r"leav\w*", "aside"),
        (r"leav\w*", "out"),
        (r"set\w*", "aside"),
        (r"put\w*", "aside"),
        (r"keep\w*", "out"),
    ),
    scope_markers=("only", "among", "within", "whose", "where", "limited to", "restricted to"),
    units=(
        "mm",
        "cm",
        "m",
        "km",
        "g",
        "kg",
        "lb",
        "lbs",
        "min",
        "mins",
        "s",
        "sec",
        "h",
        "hr",
        "pct",
        "usd",
        "mph",
        "mile",
        "miles",
        "kilometres",
        "kilometers",
        "metres",
        "meters",
        "minute",
        "minutes",
        "hour",
        "hours",
        "second",
        "seconds",
        "percent",
        "point",
        "points",
        "degree",
        "degrees",
        "dollar",
        "dollars",
        "inch",
        "inches",
        "pound",
        "pounds",
        "gram",
        "grams",
        "thousand",
        "thousands",
        "million",
        "millions",
        "billion",
        "billions",
        "times",
        "bushels",
        "°c",
        "°f",
    ),
    scales={
        "cent": 0.01,
        "cents": 0.01,
        "percent": 0.01,
        "%": 0.01,
        "thousand": 1e3,
        "thousands": 1e3,
        "k": 1e3,
        "million": 1e6,
        "millions": 1e6,
        "mn": 1e6,
        "billion": 1e9,
        "billions": 1e9,
        "bn": 1e9,
        "decade": 10.0,  # "two decades or more": 20 years
        "decades": 10.0,
        "dozen": 12.0,
        "dozens": 12.0,
    },
    count_units=("decade", "decades", "dozen", "dozens"),
    unit_names={
        "°c": ("celsius", "centigrade"),
        "°f": ("fahrenheit",),
        **dict.fromkeys(
            ("mm", "millimetres", "millimeters"), ("millimetres", "millimeters", "millimetre", "millimeter")
        ),
        **dict.fromkeys(
            ("cm", "centimetres", "centimeters"), ("centimetres", "centimeters", "centimetre", "centimeter")
        ),
        **dict.fromkeys(
            ("km", "kilometres", "kilometers"), ("kilometres", "kilometers", "kilometre", "kilometer")
        ),
        **dict.fromkeys(("mg", "milligrams"), ("milligrams", "milligram")),
        **dict.fromkeys(("kg", "kilograms"), ("kilograms", "kilogram", "kilos")),
        **dict.fromkeys(("g", "grams"), ("grams", "gram")),
        **dict.fromkeys(
            ("ml", "millilitres", "milliliters"), ("millilitres", "milliliters", "millilitre", "milliliter")
        ),
    },
    arithmetic=("divided by", "multiplied by", "times", "minus", "plus", "over", "relative to"),
    share_words=("share", "proportion", "percentage", "fraction"),
    group_markers=("per", "for each", "for every", "each", "by"),
    join_verbs=(r"join\w*", r"merg\w*", r"match\w*", r"link\w*", r"attach\w*"),
    presence=("recorded", "known", "non-missing", "non-null", "measured", "measurement"),
    year_spans=("over", "across", "during", "throughout"),
    restoration=(r"restor\w*", r"re-?includ\w*", r"re-?add\w*", r"bring\w*", r"back"),
    earlier_version=(
        r"original(?:ly)?",
        r"old(?:er)?",
        r"previous(?:ly)?",
        "earlier",
        "withdrawn",
        "withdrew",
        r"initial(?:ly)?",
        "prior",
        "dropped",
        "abandoned",
        "discarded",
        "rejected",
        "scrapped",
        r"former(?:ly)?",
        "superseded",
        "retired",
        "replaced",
        r"gave\s+up",
        r"given\s+up",
        r"used\s+to",
        r"would\s+have",
        r"first\s+(?:rule|definition|version)",
        r"before\s+the\s+(?:change|update|revision|switch)",
    ),
    undone_version=(
        r"set\s+aside",
        r"put\s+aside",
        r"let\s+go",
        r"(?:went|gone)\s+back\s+on",
        "reverted",
        "undid",
    ),
    leave_out_verbs=("set", "leave", "put", "keep", "drop", "exclude", "remove", "ignore", "discard", "omit"),
    value_words={
        "women": "female",
        "woman": "female",
        "females": "female",
        "girls": "female",
        "men": "male",
        "man": "male",
        "males": "male",
        "boys": "male",
    },
    category_nouns={
        "sex": ("female", "male", "f", "m"),
        "gender": ("female", "male", "f", "m"),
    },
    marker_nouns={
        "arm": ("placebo", "control", "sham"),
        "arms": ("placebo", "control", "sham"),
    },
    measure_nouns=("score", "scores", "value", "values", "reading", "readings", "figure", "figures"),
    rule_names=(
        "rule",
        "rules",
        "line",
        "lines",
        "definition",
        "definitions",
        "cutoff",
        "cutoffs",
        "cut-off",
        "cut-offs",
        "cut",
        "cuts",
        "yardstick",
        "yardsticks",
        "criterion",
        "criteria",
        "threshold",
        "thresholds",
        "bar",
        "bars",
        "version",
        "versions",
    ),
    tying_words=("living", "located", "based", "situated", "headed", "led", "run"),
    abbreviations={
        "yr": "year",
        "yrs": "year",
        "qtr": "quarter",
        "mo": "month",
        "mon": "month",
        "mth": "month",
        "wk": "week",
        "idx": "index",
        "amt": "amount",
        "cnt": "count",
        "dept": "department",
        "temp": "temperature",
    },
    function_words=frozenset(
        [
            # a brief aside's framing ("for a moment", "quick aside on ..."): how long the focus lasts,
            # no condition on the rows
            "moment",
            "quick",
            "brief",
            "briefly",
            "stayed",  # "stayed at or below 80": a copula, like "was"
            "stays",
            "stay",
            "remained",
            "remains",
            "remain",
            "became",
            "becomes",
            "become",
            "strictly",  # "strictly above 80": the comparator says it already
            "a",
            "an",
            "the",
            "of",
            "in",
            "on",
            "at",
            "to",
            "for",
            "by",
            "with",
            "from",
            "and",
            "or",
            "but",
            "nor",
            "as",
            "than",
            "that",
            "this",
            "these",
            "those",
            "it",
            "its",
            "them",
            "they",
            "their",
            "there",
            "here",
            "then",
            "so",
            "if",
            "when",
            "whose",
            "which",
            "who",
            "whom",
            "what",
            "where",
            "how",
            "many",
            "much",
            "is",
            "are",
            "was",
            "were",
            "be",
            "been",
            "being",
            # light verbs of holding a share or a seat ("where Gore took less than 40 % of the vote",
            # "senators who sit for a state"): the number and the column say the condition
            "took",
            "take",
            "takes",
            "taken",
            "sit",
            "sits",
            "sat",
            # a light verb of having ("how many cabinets faced a parliament with a polarization of 30 or
            # more"): the number and the column say the condition ("got" is not one: "how many of them
            # got fewer than 9 words right" then binds a bound the code tests inside a count)
            "face",
            "faces",
            "faced",
            "facing",
            # light verbs of duration ("a strike that went on beyond 50 days", "lasted")
            "went",
            "lasted",
            "lasting",
            "ran",
            "do",
            "does",
            "did",
            "have",
            "has",
            "had",
            "having",
            "can",
            "could",
            "should",
            "would",
            "will",
            "may",
            "must",
            "might",
            "also",
            "again",
            "still",
            "now",
            "yet",
            "already",
            "just",
            "ever",
            "never",
            "very",
            "same",
            "other",
            "others",
            "another",
            "both",
            "either",
            "neither",
            "all",
            "any",
            "some",
            "each",
            "every",
            "no",
            "none",
            "such",
            "own",
            "one",
            "ones",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "first",
            "second",
            "third",
            "last",
            "next",
            "previous",
            "earlier",
            "later",
            "give",
            "gives",
            "report",
            "reports",
            "compute",
            "computes",
            "calculate",
            "count",
            "counts",
            "list",
            "lists",
            "show",
            "shows",
            "find",
            "finds",
            "keep",
            "keeps",
            "kept",
            "make",
            "makes",
            "made",
            "take",
            "use",
            "uses",
            "used",
            "look",
            "looks",
            "tell",
            "put",
            "create",
            "load",
            "store",
            "save",
            "build",
            "rebuild",
            "redo",
            "recompute",
            "recount",
            "redefine",
            "compare",
            "study",
            "studies",
            "examine",
            "analyse",
            "analyze",
            "our",
            "we",
            "return",
            "returns",
            "get",
            "gives",
            "give",
            "answer",
            "state",
            "table",
            "tables",
            "frame",
            "frames",
            "column",
            "columns",
            "row",
            "rows",
            "value",
            "values",
            "number",
            "numbers",
            "amount",
            "total",
            "totals",
            "result",
            "results",
            "figure",
            "figures",
            "overall",
            "whole",
            "entire",
            "together",
            "alongside",
            "along",
            "into",
            "onto",
            "out",
            "up",
            "down",
            "off",
            "about",
            "across",
            "per",
            "via",
            "under",
            "over",
            "between",
            "among",
            "within",
            "without",
            "rounded",
            "round",
            "decimal",
            "decimals",
            "places",
            "place",
            "digit",
            "digits",
            "percent",
            "percentage",
            "share",
            "fraction",
            "proportion",
            "rate",
            "ratio",
            "mean",
            "average",
            "median",
            "sum",
            "min",
            "max",
            "minimum",
            "maximum",
            "highest",
            "lowest",
            "largest",
            "smallest",
            "most",
            "least",
            "top",
            "bottom",
            "new",
            "current",
            "currently",
            "original",
            "now",
            "previously",
            "definition",
            "rule",
            "rules",
            "flag",
            "flagged",
            "turn",
            "task",
            "step",
            "answer",
            "question",
            "call",
            "called",
            "define",
            "defined",
            "means",
            "mean",
            "counts",
            "treat",
            "treats",
            "treated",
            "given",  # "the answers given by respondents with ...": a passive verb, its agent after "by"
            # "the days that follow a down day", "that came after an up day": order in time, no condition
            "follow",
            "follows",
            "followed",
            "come",
            "comes",
            "came",
            "somewhere",  # "somewhere from 20 to 29 home runs": a hedge before a range
            "anywhere",
            "consider",
            "considered",
            "label",
            "labelled",
            "labeled",
            "true",
            "false",
            "yes",
            "no",
            "year",
            "years",
            "month",
            "months",
            "day",
            "days",
            "week",
            "weeks",
            "date",
            "dates",
            "daily",
            "weekly",
            "monthly",
            "yearly",
            "annual",
            "quarter",
            "period",
            "time",
            "times",
            "gain",
            "gains",
            "gained",
            "rise",
            "rises",
            "rose",
            "fall",
            "falls",
            "fell",
            "increase",
            "increases",
            "decrease",
            "decreases",
            "grow",
            "grows",
            "grew",
            "change",
            "changes",
            "changed",
            "keeping",
            "matching",
            "matched",
            "match",
            "join",
            "joined",
            "combined",
            "combine",
            "group",
            "groups",
            "grouped",
            "break",
            "broken",
            "down",
            "side",
        ]
    ),
)
