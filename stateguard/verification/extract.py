"""Deterministic requirement extraction from a turn's text (the offline default).

    reqs = extract("Keep the Gentoo penguins with a bill length of at least 43 mm. Report `n_birds`.",
                   vocab=vocab)
    # -> scope species in {Gentoo}; comparison bill length >= 43; output n_birds

It reads phrases, not code: comparisons ("at least 13 mph", "between 10 and 20", "excluding
flights shorter than 500 miles" keeps >= 500), a year ("in 1972"), recorded values ("with a
recorded arrival delay"), category values named in the question (when the data's vocabulary is
known), the statistic ("the mean life expectancy", "total the population", a `median_*` field),
shares of a whole, grouping ("per carrier and month"), joins, top-k, rounding and the reported
fields. A definition sentence ("An hour is windy when the wind speed is at least 14 mph") marks
its requirements with the defined term. Anything it cannot place precisely is left out: an
unextracted requirement is never a finding.
"""

from __future__ import annotations

import re
from collections import Counter

from stateguard.answers import required_decimals
from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification.requirements import COMPLEMENT, Kind, Requirement
from stateguard.verification.rules.registry import Reading, row_condition_kinds, rules
from stateguard.verification.vocabulary import (
    FILLERS,
    STOP,
    TIME_WORDS,
    Vocabulary,
    column_tokens,
    flag_words,
    matches_token,
    names_flag,
    names_share,
    spelled_by,
)

# Small counts in words: bounds ("two or more children", "at least three") and top-k rankings
_WORDNUM = {
    w: i
    for i, w in enumerate(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"], 1)
} | {"once": 1, "twice": 2, "thrice": 3}  # "saw a physician at least twice"
# "sixteen or more years", "under forty": whole tens only, not the start of "twenty-five"
_TEEN_WORDS = [
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_WORDNUM |= {w: i for i, w in enumerate(_TEEN_WORDS, 11)} | {
    w: 10 * i
    for i, w in enumerate(["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2)
}
_UNITS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TENS_WORDS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
# "sixty-five", "twenty one": a ten and a unit
_COMPOUND = rf"\b(?:{'|'.join(_TENS_WORDS)})[-\s](?:{'|'.join(_UNITS)})\b"
# "a dollar eighty", "two dollars fifty": an amount of money said in words, dollars then cents
_CENT_WORDS = (
    rf"(?:{'|'.join(_TENS_WORDS)})(?:[-\s](?:{'|'.join(_UNITS)}))?"
    + "|"
    + "|".join(["ten", *_TEEN_WORDS, *_UNITS])
)
_MONEY_WORDS = (
    rf"(?:a|{'|'.join(_UNITS)}|ten)\s+dollars?(?:\s+and)?\s+"
    rf"(?:{_CENT_WORDS})(?:\s+cents?)?\b"
)
_NUM = (  # an amount of money keeps its number: "less than $10,000"
    r"(?:[$€£]\s?)?(?P<num>-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?|"
    + _MONEY_WORDS
    + "|"
    # "three thousand dollars", "two million": a number in words, then its scale
    + rf"(?:{_COMPOUND}|\b(?:{'|'.join(w for w in _WORDNUM if w not in ('once', 'twice', 'thrice'))}))\s+(?:thousand|million)\b"
    + "|"
    + _COMPOUND
    + r"|(?<!-)\b(?:"
    + "|".join(_WORDNUM)
    + r")\b(?![-\s](?:one|two|three|four|five|six|seven|eight|nine)\b))(?P<pct>\s*(?:%|percent\b))?"
)
_PREFIX_OPS = [
    (LEXICON.pattern(LEXICON.comparator_phrases(op=op)), op) for op in (">=", "<=", ">", "<")
]  # (alternation of the lexicon's prefix comparators, the op they state)
_POSTFIX_DIRS = {
    phrase.split()[-1]: op
    for op in (">=", "<=")
    for phrase in LEXICON.comparator_phrases(op=op, position="postfix")
}
_BOUND_WORDS = {"most", "least", "more", "less", "fewer", "above", "below", "over", "under", "than"}
_POSTFIX_TEMPORAL = {
    phrase.split()[-1] for phrase in LEXICON.comparator_phrases(position="postfix", temporal=True)
}
# "at least one child under six": a count of some noun, then a bound on that noun (not on the rows)
_COUNTED_NOUN = re.compile(
    r"\b(?:at\s+least|at\s+most|more\s+than|fewer\s+than|no\s+more\s+than)\s+(?:one|two|three|a|an|\d+)\s+"
    r"[a-z]+\s*$",
    re.IGNORECASE,
)
# "what proportion (between 0 and 1)", "as a share from 0 to 100": the scale the answer is given in
_SCALE_BEFORE = re.compile(
    r"\b(?:proportion|share|fraction|percentage|ratio|probability|rate)\s*[(,]?\s*(?:as\s+a\s+number\s+)?$",
    re.IGNORECASE,
)
_FROM_ON = re.compile(r"\bfrom\s+(?P<num>1[89]\d\d|20\d\d)\s+(?:on|onwards?)\b", re.IGNORECASE)
# "before month 10", "after week 6", "after game number 100": a numbered point of time or of a
# sequence, its number the bound
_TIME_POINT = (
    r"(?:(?P<point>(?:month|week|day|hour|minute|game|round|visit|lap|match|session|wave)(?:\s+(?:number|no\.?))?)"
    r"\s+(?=\d))?"
)
# "below a log R&D of 6.5", "above an income of $50,000": the quantity named between the comparator
# and its number
_NAMED_QUANTITY = r"(?:an?\s+(?P<named>[A-Za-z][\w&]*(?:\s+[A-Za-z][\w&]*){0,2}?)\s+of\s+(?=\$?-?\d))?"
_PREFIX = re.compile(
    r"\b(?P<phrase>"
    + "|".join(f"(?:{p})" for p, _ in _PREFIX_OPS)
    + r")\s+"
    + _TIME_POINT
    + _NAMED_QUANTITY
    + _NUM,
    re.IGNORECASE,
)
_POSTFIX = re.compile(
    _NUM
    # "1000 ppm of chloride or more": a unit, then the quantity it measures (not a span of time: "four
    # years of age or later" is said in other units than the code's months)
    + r"\s*(?P<unit>°[CF]\s+|(?:(?<=\s)[a-z]+(?:/[a-z]+)?,?\s+){1,2}"
    + r"|(?!(?:year|month|week|day|hour|minute)s?\s)[a-z%°]+\s+of\s+[a-z]+\s+)?(?:or|and)\s+(?P<dir>"
    + "|".join(_POSTFIX_DIRS)
    # "65 and over", "2 years or more to be diagnosed", but not "30 and fewer than 50" or "5 and up to 10"
    + r")\b(?!\s+(?:than\b|to\s+(?:[a-z]+\s+){0,2}[$€£]?-?\d))",
    re.IGNORECASE,
)
# "tall from 70 inches up", "from $500 upward", "from 10 days down", "old from 85 years on": the
# number and what lies past it ("on" only where the clause ends: "from 5 on the list" is a place)
_FROM_UP = re.compile(
    r"\bfrom\s+"
    + _NUM
    + r"\s+(?P<unit>(?:[a-z]+(?:/[a-z]+)?\s+){0,2})(?P<dir>up(?:wards?)?|down(?:wards?)?|onwards?|on(?=\s*(?:[.,;:!?)]|$)))"
    + r"\b(?!\s+(?:to|until|till)\b)",
    re.IGNORECASE,
)
_BETWEEN = re.compile(
    r"\bbetween\s+" + _NUM + r"\s+and\s+(?P<num2>-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
# A range written with its ends said to count ("from 3.0 to 3.5 inclusive", "in the range $32,000 to
# $38,000, ends included", "3 through 7"): the same two bounds as "between"; "from 1990 to 2000" alone
# (a span of time, or a change from one value to another) is not read.
_AMOUNT = r"\$?(?:-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)"
_ENDS_IN = r"(?:\s*,?\s*(?:\(?(?:inclusive(?:ly)?|(?:both\s+|the\s+)?(?:ends|limits|bounds)\s+included|(?:with\s+)?both\s+(?:[a-z]+\s+)?(?:included|counted))\)?))"
# a range's end: an amount, or a small count in words ("two to five pregnancies, inclusive")
_END = (
    r"(?:" + _AMOUNT + r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)\b)"
)
_RANGE = re.compile(
    r"\b(?:(?:lies?|lying|falls?|falling)\s+)?(?:(?:with)?in\s+the\s+range\s+(?:of\s+)?(?:from\s+)?"
    r"(?P<a1>" + _END + r")\s*(?:to|through|-|–|and)\s*(?P<b1>" + _END + r")" + _ENDS_IN + r"?"
    r"|(?:from\s+)?(?P<a2>"
    + _END
    + r")\s*(?:(?:up\s+)?to|through|-|–)\s*(?P<b2>"
    + _END
    + r")(?:\s+[a-z]+(?:/[a-z]+)?(?:\s+[a-z]+){0,2})?"  # the ends' unit: "2 to 5 pregnancies, inclusive", "g/dL", "years of schooling"
    + _ENDS_IN
    + r"|from\s+(?P<a3>"
    + _END
    + r")\s+through\s+(?P<b3>"
    + _END
    + r")"
    # "1984 through 1988": "through" keeps its end without "from" or "inclusive"
    + r"|(?P<a4>"
    + _END
    + r")\s+through\s+(?P<b4>"
    + _END
    + r"))"
    r"(?P<pct>\s*(?:%|percent\b))?",
    re.IGNORECASE,
)
_YEAR_IN = re.compile(
    r"\b(?:in|during)\s+(?:the\s+year\s+)?(?P<year>1[89]\d\d|20\d\d)\b"
    r"(?!\s*(?:to|-|–|and|or|,)\s*\d|\s+(?:or|and)\s+(?:later|earlier|after|before)\b)",
    re.IGNORECASE,
)
# "the years 1931, 1932 and 1933"; "fell in 1982 or 1983": a row in any of them
_YEARS = re.compile(
    r"\b(?:years?|in|during)\s+(?P<a>1[89]\d\d|20\d\d)(?P<rest>(?:\s*(?:,|and|or)\s*(?:1[89]\d\d|20\d\d))+)",
    re.IGNORECASE,
)
# "of those", "of exactly those", "of that fast group", "among this set", "of that number"
THOSE = r"(?:(?:exactly|precisely|just|only|all)\s+)?(?:those|these|them|th(?:at|is)\s+(?:[\w-]+\s+)?(?:group|set|subset|lot|number))"
_BACK = re.compile(rf"\b(?:(?:out\s+)?of|among|from)\s+{THOSE}\b", re.IGNORECASE)
_HOW_MANY = re.compile(r"\bhow\s+many\b", re.IGNORECASE)


def refers_back(text: str) -> bool:
    """Does a count's clause refer back to the rows of the one before ("of those", "among them")?"""
    return bool(_BACK.search(text))


def _counted_of_those(before: str) -> bool:
    """Is what follows `before` a count of the rows named before ("how many of those fell in 1982")?
    Its conditions are that count's own, not the turn's scope (`counted_rows` checks them)."""
    return bool(_HOW_MANY.search(before) and refers_back(before))


_EXCLUDING = "|".join(LEXICON.exclusion)
# A bound is negated by an exclusion word earlier in its clause segment ("excluding flights
# shorter than 500 miles") -- a segment ends at a comma, a semicolon or a parenthesis -- or by a
# "not" right before it ("not below 5"), or a "no" ("no higher than 3"); a "not" further back belongs to another phrase. "outside"
# takes a place or a category ("outside Oceania gained at least 25"), never the bound itself.
_NEGATING = re.compile(
    rf"\b(?:{'|'.join(w for w in LEXICON.exclusion if w not in ('not', 'outside'))})\b[^,;:()]*$|\b(?:not|never)\s+(?:\w+\s+)?$|\bno\s+$",
    re.IGNORECASE,
)
# Words that leave out what follows them in the same clause segment ("unless the Times typed it
# 'Not riot-related'"); a bare "not" negates its own phrase only, never a value further on.
# "Leave Biscoe aside", "set Dream and Torgersen aside": the values sit inside the exclusion, in one segment.
_FRAMES = [
    (
        re.compile(rf"\b{verb}\b[^,;:()]*$", re.IGNORECASE),
        re.compile(rf"^[^,;:()]*?\b{part}\b", re.IGNORECASE),
    )
    for verb, part in LEXICON.exclusion_frames
]
_LEAVING_OUT = re.compile(
    rf"\b(?:{'|'.join(w for w in LEXICON.exclusion if w != 'not')})\b[^,;:()]*$", re.IGNORECASE
)
# A category value that completes a counting phrase ("how many deaths were typed Homicide", "the
# number of days labelled rain") names what is counted; it restricts that count, not the turn.
_COUNTED = re.compile(
    rf"\b(?:how\s+many|number\s+of|count\s+of|(?:{'|'.join(LEXICON.share_words)})\s+of)\b[^,;]*?\b(?:were|was|are|is|fall\s+under|fell\s+under|"
    r"labell?ed|typed|classified|marked|coded|tagged|listed\s+as)\b(?:\s+(?:as|under|with))?\s+(?:the\s+)?[\"'“]?$",
    re.IGNORECASE,
)
# "highest first", "lower obs first", "alphabetically first": a ranking's direction before "first"/"last"
# (the lexicon's ranking words and comparatives, and the ways of ordering it leaves out on purpose)
_ORDER_BEFORE = re.compile(
    r"\b(?:"
    + LEXICON.pattern(
        (
            *LEXICON.descending,
            *LEXICON.ascending,
            *LEXICON.comparatives,
            *("earliest", "latest", "oldest", "newest", "earlier", "later", "alphabetically", "numerically"),
        )
    )
    + r")\s+(?:[a-z_]+\s+)?$",
    re.IGNORECASE,
)
# "its number of days and of ", "the count of ": what follows is what a count counts
_NUMBER_OF = re.compile(
    r"\b(?:number|count)s?\s+of\s+(?:(?:the\s+)?[a-z]+\s+(?:and|or)\s+of\s+)?(?:the\s+)?$", re.IGNORECASE
)
_RESTORING = re.compile(rf"\b(?:{'|'.join(LEXICON.restoration)})\b[^,;]*$", re.IGNORECASE)
_RECORDED = re.compile(
    r"\b(?:with|having|that have|that has)\s+(?:a|an)?\s*(?:recorded|known|non-missing)\s+(?P<subj>[a-z-]+(?:\s+[a-z-]+)?)"
    r"|\bwith\s+(?:a|an)\s+(?P<subj2>[a-z-]+(?:\s+[a-z-]+)?)\s+measurement\b"
    r"|\bwith\s+both\s+(?P<both>[a-z-]+)\s+measurements\b"
    r"|\b(?:non-missing|non-null)\s+(?P<subj3>[a-z-]+(?:\s+[a-z-]+)?)",
    re.IGNORECASE,
)
_AGG = re.compile(
    r"\b(?P<fn>"
    + LEXICON.pattern(w for w in LEXICON.statistics if w not in ("sum", "avg"))
    + r")\s+(?:the\s+|of\s+(?:the\s+)?)?(?P<subj>(?:[a-z][\w-]*\s+){0,3}?[a-z][\w-]*)"
    r"(?=\s*(?:\(|,|\.|;|\?|$|\s(?:per|for|of|over|in|across|by|among|within|from|on|at|is|was|and|but|yet|while|without|rounded)\b))",
    re.IGNORECASE,
)
_TYPICAL = re.compile(
    r"\btypical\s+(?P<subj>[a-z][a-z-]*(?:\s+[a-z][a-z-]*)?)\s*\(\s*(?:the\s+|i\.?e\.?,?\s+|that\s+is,?\s+(?:the\s+)?)?"
    r"(?P<fn>median|mean|average)\s*\)",
    re.IGNORECASE,
)
# A statistic named with no quantity ("the middle value", "its median") before "and", "," or the end
_BARE_AFTER = re.compile(
    r"\b(?P<fn>"
    + LEXICON.pattern(w for w in LEXICON.statistics if w not in ("sum", "avg", "sum of", "total"))
    + r")(?=\s*(?:,|\band\b|\?|\.|$))",
    re.IGNORECASE,
)
_EXAMPLE_BEFORE = re.compile(
    r"\b(?:e\.\s?g\.|for\s+example|for\s+instance|such\s+as|like)\s*,?\s*[\"'“]?$", re.IGNORECASE
)
# Words after a bound that leave its rows out ("patients under 30 still left out"): the bound is negated
_LEFT_OUT_AFTER = re.compile(
    r"^\s*(?:[a-z]+\s+){0,2}?(?:(?:is|are|was|were|be|been|still|stay|stays|remain|remains)\s+)*"
    r"(?:left\s+out|set\s+aside|excluded|removed|dropped|taken\s+out)\b",
    re.IGNORECASE,
)
# A bound whose rows are compared with the rest ("of the councils with mortality over 100, and of the
# rest"): it splits the rows into two groups, it does not restrict them
_REST = (
    r"(?:the\s+rest|the\s+others|all\s+others|everyone\s+else|everything\s+else"
    r"|the\s+remaining\s+\w+\b(?!\s+(?:whose|with|that|where|which|who)\b))"
)
_THE_REST = re.compile(rf"\b{_REST}\b", re.IGNORECASE)
# a value set against the rest ("by race (black or not)", "North vs. the rest"): a split of the rows
_AGAINST_THE_REST = re.compile(
    rf"\W{{0,2}}\s*(?:or|vs\.?|versus|against)\s+(?:not|otherwise|others?|{_REST})\b", re.IGNORECASE
)
# "with the car travellers still set aside": the value's rows, then a bare participle that leaves
# them out of the turn (a "was left out" is the data's history, read by `_REMOVED_AFTER`)
_SET_ASIDE_AFTER = re.compile(
    r"(?:\s+(?!was\b|were\b|is\b|are\b|has\b|have\b|had\b|been\b)[a-z-]+){0,2}?\s+(?:still\s+)?"
    r"(?:set|left|kept|put|held)\s+(?:aside|out)\b",
    re.IGNORECASE,
)
_REMOVED_AFTER = re.compile(
    r"\s+(?:was|were|has been|had been|have been)\s+(?:left out|removed|dropped|excluded|taken out)\b",
    re.IGNORECASE,
)
_REFERENCE_BEFORE = re.compile(
    r"\b(?:than|above|below|over|under|exceeds?|exceeding)\s+(?:the|their|its|his|her)?\s*(?:[a-z-]+\s+)?$",
    re.IGNORECASE,
)
_FIELD_AGG = re.compile(r"^(?P<fn>mean|avg|average|median|total|sum)_(?P<rest>.+)$")
_FUNCS = LEXICON.statistics
_SHARE = re.compile(
    r"^(?:what|compute|find|give)\s+(?:the\s+)?(?:share|proportion|percentage|fraction)\b[^()]*\b(?:each|per|every)\b",
    re.IGNORECASE,
)
_RANK = re.compile(
    r"\b(?:largest|highest|top|most|smallest|lowest|fewest|least|biggest|join\w*|side by side)\b(?<!at most)(?<!at least)",
    re.IGNORECASE,
)
_GROUP = re.compile(
    r"\b(?:per|for each|for every|each|by)\s+(?P<keys>[a-z][a-z-]*(?:\s+(?!and\b|or\b)[a-z][a-z-]*)?(?:\s*(?:,|and)\s*[a-z][a-z-]*){0,2})",
    re.IGNORECASE,
)
# "by the mother's age band", "by the patient's sex": the key is the rows' owner's attribute
_GROUP_OWNED = re.compile(
    r"\bby\s+the\s+[a-z]+['’]s\s+(?P<key>[a-z][a-z-]*(?:\s+(?!and\b|or\b|in\b|into\b)[a-z][a-z-]*)?)",
    re.IGNORECASE,
)
# The kind of thing a key is, said after or before its name ("the SOUTH code", "every value of ...")
_KEY_KINDS = frozenset(
    {"code", "codes", "flag", "flags", "column", "field", "variable", "value", "values", "level", "levels"}
)
_GROUP_BY_THE = re.compile(
    r"\b(?:(?:split|group(?:ed)?|broken\s+down|break\s+down|separated)\s+by\s+the|"
    r"(?:for|within)\s+(?:each|every)\s+(?:value|level|code)\s+of\s+(?:the\s+)?)\s*"
    r"(?P<key>[a-z][a-z_-]*(?:\s+(?:code|flag|column|field|variable|value))?)\b",
    re.IGNORECASE,
)
# "each teaching method (the psi value)": the parenthesis names the key's column
_KEY_NAMED_AFTER = re.compile(
    r"\s*\((?:the\s+)?(?P<col>[A-Za-z_][A-Za-z0-9_]*)(?:\s+(?:value|values|code|column|flag|field))?\)"
)
# "the answers given by respondents with ...", "the goals scored by away teams": a passive verb's agent,
# not a grouping of the result
_AGENT_BEFORE = re.compile(
    r"\b(?:given|made|written|answered|reported|filed|submitted|taken|held|owned|played|won|scored|built"
    r"|produced|sent|received|caused|visited|treated|rated|chosen|bought|sold|paid|committed|cast|posted)\s*$",
    re.IGNORECASE,
)
# a comparator right before a name and its number ("before month 10", "at least grade 3")
_PREFIX_BEFORE = re.compile(r"\b(?:" + "|".join(f"(?:{p})" for p, _ in _PREFIX_OPS) + r")\s+$", re.IGNORECASE)
_RANKED_BEFORE = re.compile(
    r"(?:\b(?:top|bottom|first|last)\s+(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\b[^,;:.?()]*"
    r"|\b(?:rank|ranked|ranking|sort|sorted|sorting|order|ordered|ordering)\s*)$",
    re.IGNORECASE,
)
_MOST_OF_THEM = re.compile(
    r"\b(?:which|the)\s+(?P<noun>[a-z][a-z-]*(?:\s+(?!that\b|which\b)[a-z][a-z-]*)?)\s+(?:(?:that|which)\s+)?"
    r"(?:holds|has|have|had|contains|accounts\s+for|takes|took|gets|got|holding|having|with)\s+"
    r"(?:the\s+)?most\s+of\s+(?:them|those|these)\b",
    re.IGNORECASE,
)
_GROUP_HYPHEN = re.compile(
    r"\b(?P<a>[a-z]+)-(?P<b>[a-z]+)\s+(?:groups|pairs|cells|combinations)\b", re.IGNORECASE
)
_NOT_KEYS = {
    # verbs that start the rest of the sentence ("for every stretch, keep in `t` ...")
    "keep",
    "store",
    "give",
    "list",
    "show",
    "report",
    "compute",
    "find",
    "put",
    "save",
    "name",
    "return",
    "add",
    "record",
    "capita",
    "cent",
    "at",
    "least",
    "most",
    "more",
    "less",
    "mile",
    "the",
    "a",
    "an",
    "which",
    "such",
    "that",
    "those",
    "this",
    "turn",
    "definition",
    "step",
    "how",
    "what",
    "where",
    "when",
    "who",
    "is",
    "was",
    "are",
    "were",
    "in",
    "of",
    "over",
    "on",
}
_RANKS = LEXICON.pattern([*LEXICON.descending, *LEXICON.ascending])
_TOPK = re.compile(
    r"\b(?:top|the|which|(?:at most)\)?)\s+\(?(?:at most\)?\s+)?(?P<k>\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+"
    rf"(?P<rest>[^.?;]{{0,80}}?)\b(?P<dir>{_RANKS})(?=\b(?!-))",
    re.IGNORECASE,
)
_ARGMAX = re.compile(
    rf"\bwhich\s+\w+\s+(?:has|have|holds|had)\s+the\s+(?P<dir>{_RANKS})\b"
    # "which patient was followed longest": the verb's superlative ends the clause
    rf"|\bwhich\s+\w+\s+(?:was|were|is|are)\s+[a-z]+ed\s+(?:the\s+)?(?P<dir2>{_RANKS})\b(?=\s*(?:[,;?.(]|$))",
    re.IGNORECASE,
)
_FIRST = re.compile(
    rf"\b(?P<dir>{_RANKS})\s+first\b|\bin\s+(?P<dir2>descending|ascending)\s+order\b",
    re.IGNORECASE,
)
_DESC = set(LEXICON.descending)
_DEFINITION = re.compile(
    r"^(?:from (?:now|here) on,?\s+|henceforth,?\s+)?(?:an?|the)\s+(?P<noun>[a-z][\w\s-]*?)\s+(?:at\s+\w+\s+)?(?:is|counts as|is considered)\s+(?P<term>[a-z][\w-]*(?:\s+(?!only\b|again\b)[a-z][\w-]*)?)\s+(?:only\s+|again\s+)?(?:when|if)\b"
    r"|^call\s+(?:an?\s+)?(?P<noun2>[\w\s-]+?)\s+(?:an?\s+(?P<term2>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)|(?P<term3>[a-z][\w-]*))\s+(?:when|if)\b"
    # "the clinic treats a patient as at risk when ...", "we regard a day as hot if ..."
    r"|^(?:[\w-]+\s+){0,3}?(?:treats?|regards?|considers?|counts?|labels?|flags?|marks?|classif(?:y|ies))\s+"
    r"(?:an?|the|each|every)\s+(?P<noun4>[\w-]+(?:\s+[\w-]+)?)\s+as\s+(?:an?\s+)?(?P<term4>[a-z][\w-]*(?:\s+[a-z][\w-]*)?)\s+(?:when|if)\b",
    re.IGNORECASE,
)
_FIELDS = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def word_number(text: str) -> float | None:
    """A number written in words: "sixteen", "forty", "sixty-five", "twice"; None otherwise."""
    low = text.lower().strip()
    if low in _WORDNUM:
        return float(_WORDNUM[low])
    scaled = re.fullmatch(r"(.+?)\s+(thousand|million)", low)
    if scaled and (base := word_number(scaled.group(1))) is not None:  # "three thousand": 3000
        return base * (1e3 if scaled.group(2) == "thousand" else 1e6)
    money = re.fullmatch(r"(\w+)\s+dollars?(?:\s+and)?\s+(.+?)(?:\s+cents?)?", low)
    if money:  # "a dollar eighty": 1.80
        dollars = 1 if money.group(1) == "a" else _WORDNUM.get(money.group(1))
        cents = word_number(money.group(2))
        return None if dollars is None or cents is None or cents >= 100 else dollars + cents / 100
    parts = re.split(r"[-\s]+", low)
    if len(parts) == 2 and parts[0] in _TENS_WORDS and parts[1] in _UNITS:
        return float(_WORDNUM[parts[0]] + _WORDNUM[parts[1]])
    return None


def _number(text: str) -> float:
    word = word_number(text)
    return word if word is not None else float(text.replace(",", ""))


def clauses(text: str) -> list[str]:
    return [
        c.strip()
        for c in re.split(
            r"(?<!\d)(?<!\be\.g)(?<!\bi\.e)[.?!;](?=\s|$)|(?<=[a-z])(?<!\be\.g)(?<!\bi\.e)\.(?=\s)|(?<=\d)[.?!;](?=\s+[A-Z]|\s*$)",
            text,
        )
        if c.strip()
    ]


_LINKERS = {"is", "are", "was", "were", "be", "of", "by", "at", "with", "has", "have", "had"}
_STOPS = FILLERS | {
    "a",
    "an",
    "the",
    "its",
    "their",
    "his",
    "her",
    "when",
    "whose",
    "and",
    "but",
    "yet",
    "that",
    "which",
    "with",
    "where",
    "from",
    "to",
    "in",
    "on",
    "for",
    "per",
    "over",
    "than",
    "if",
    "among",
    "keep",
    "only",
    "all",
    "each",
}


def _subject_before(clause: str, start: int) -> list[str]:
    """The attribute a comparison is about: the words right before it in its part of the clause, up to
    a determiner ("with a bill length of at least" -> bill length; "the wind speed is at least" -> wind
    speed).
    An entity before "of" ("flights of at least 1600 miles") or a count ("with at least 9 birds",
    "delayed by at least 30 minutes") names no attribute: empty."""
    # the words of the bound's own part of the clause: not across a comma, colon or parenthesis
    # ("... of their sex and education level, yet fewer than 12": nothing is named before the bound)
    before = re.split(r",\s|[;:()]", clause[:start])[-1]
    tokens = re.findall(r"[A-Za-z][A-Za-z0-9-]*|\d[\d,.]*", before)  # `b2`: a name with its number
    linker = tokens.pop().lower() if tokens and tokens[-1].lower() in _LINKERS else ""
    if linker in ("with", "by", "at", "has", "have", "had"):
        return []
    out: list[str] = []
    while (
        tokens
        and tokens[-1].lower() not in _STOPS
        and tokens[-1].lower() not in _LINKERS
        and not tokens[-1][0].isdigit()
        and len(out) < 3
    ):
        out.insert(0, tokens.pop())
    if (
        linker in ("of", "")
        and out
        and re.search(r"[^s]s$", out[-1])
        and not out[-1].lower().endswith(("ss", "us", "is"))
    ):
        return []  # "flights of at least ...", "orders under 20": the rows, not an attribute
    return out


_MEASURES = set(LEXICON.units)


def _subject_after(after: str) -> list[str]:
    """The words right after a bound with nothing named before it ("with at least 5 warm days" ->
    warm days), up to a stop word or punctuation; binding uses them only when they name a column."""
    out: list[str] = []
    first = re.match(r"\s*([A-Za-z]+)", after)
    if first and first.group(1).lower() in _MEASURES:
        return []  # "at least 1600 miles", "500 thousand jobs": a unit or a multiplier, no attribute
    for token in re.findall(r"[A-Za-z][A-Za-z0-9-]*|[^\sA-Za-z]+", after)[:4]:
        low = token.lower()
        if not token[0].isalpha() or low in _STOPS or low in _LINKERS or low in _NOT_KEYS or len(out) == 3:
            break
        if any(ch.isdigit() for ch in token):
            break  # "at least one e4 allele": a name with a number in it, not a word of the subject
        out.append(token)
    return out


_TEMPORAL = re.compile(
    LEXICON.pattern(LEXICON.comparator_phrases(temporal=True) + list(LEXICON.year_spans)), re.IGNORECASE
)


def _counted_in(clause: str, at: int) -> float:
    """The factor of a word that counts in a larger unit right after the number that ends at `at`
    ("two decades": 20 years, "three dozen": 36), else 1. Only those words: a stated bound's scale
    (cents, thousands) is tried both ways by the binder."""
    return LEXICON.unit_factor(clause, at, LEXICON.count_units)


def _is_year(m: re.Match[str]) -> bool:
    """The bound is a calendar year (a plain 4-digit number from 1800 to 2100, no unit or percent)."""
    return not m.group("pct") and re.fullmatch(r"1[89]\d\d|20\d\d|2100", m.group("num")) is not None


# "with more than 3,000 transactions of the second kind": the noun a bound counts, and what it is of
_COUNTED_PHRASE = re.compile(
    r"\s*(?:such\s+)?(?P<noun>[A-Za-z]+)(?P<of>\s+of\s+(?:the\s+|an?\s+)?[A-Za-z-]+(?:\s+[A-Za-z-]+){0,2})?",
    re.IGNORECASE,
)


def _counted_phrase(after: str) -> list[str]:
    """The words of what a bound on a count counts ("transactions of the second kind"), for binding
    to a column the task describes as that number; the "of" part stops at a stop word."""
    m = _COUNTED_PHRASE.match(after)
    if not m:
        return []
    out = [m.group("noun")]
    for word in (m.group("of") or "").split()[1:]:
        if word.lower() in ("the", "a", "an"):
            continue
        if word.lower() in _STOPS or word.lower() in _LINKERS:
            break
        out.append(word)
    return out


def _counts_rows(clause: str, start: int, end: int) -> bool:
    """ "groups with at least 9 birds", "carriers with at least 20 such flights": a bound on a count."""
    before = re.findall(r"[A-Za-z]+", clause[:start])
    after = re.match(r"\s*(?:such\s+)?([A-Za-z]+)", clause[end:])
    return (
        bool(before)
        and before[-1].lower() in ("with", "having", "has", "have")
        and bool(after and re.search(r"[^s]s$", after.group(1)))
    )


_QUOTED = re.compile(r"(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])|\"[^\"\n]*\"|“[^”]*”")


# A unit and a direction after the number, and what it is measured from ("5 points above the median",
# "1 degree (F) over the long-run average"): the bound is on a difference, not on the column.
RELATIVE = re.compile(
    r"\s*(?:[a-z%°]+\s+){0,3}(?:\([^)]*\)\s*)?(?:above|below|over|under|more\s+than|less\s+than)\s+"
    r"(?:the|its|their|his|her|that|this|each|every)\b",
    re.IGNORECASE,
)


def _scale_aside(clause: str, m: re.Match[str]) -> bool:
    """A range from 0 to 1 or to 100, alone in parentheses ("what fraction of the wives is that
    (between 0 and 1)"): the scale the answer is given in, not a bound on rows."""
    inside = clause[: m.start()].rstrip().endswith("(") and clause[m.end() :].lstrip().startswith(")")
    ends = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", m.group(0))]
    return inside and len(ends) == 2 and ends[0] == 0 and ends[1] in (1.0, 100.0)


def _in_quotes(clause: str, at: int) -> bool:
    """Position `at` is inside a quoted string of the clause ('under 40', "50 and over"); an
    apostrophe ("the women's rating") opens none."""
    return any(m.start() < at < m.end() for m in _QUOTED.finditer(clause))


# "at least three quarters of the other participants": the number counts parts of a whole, no bound
FRACTION_AFTER = re.compile(
    r"\s*(?:quarters?|thirds?|fifths?|sixths?|eighths?|tenths?|halves)\b", re.IGNORECASE
)
# The number is a multiple of another quantity ("at least 1.5 times that average", "at least one and
# a half times the median"), no bound
MULTIPLE_AFTER = re.compile(r"\s*(?:and\s+a\s+half\s+)?(?:times\b|x\s+the\b|×|-?fold\b)", re.IGNORECASE)


_EITHER_WAY = re.compile(r"\s*(?:either\s+way|in\s+either\s+direction|each\s+way|up\s+or\s+down)\b", re.I)
_PRONOUN_ONE = re.compile(r"\s+(?:after|before|that|which|who|whose|where|when)\b", re.IGNORECASE)


def pronoun_one(number: str, after: str) -> bool:
    """Is "one" a pronoun here ("a day after a flat day moves less than one after a fall"): the word
    right before a preposition of time or a relative word, standing for a noun said before it."""
    return number.lower() == "one" and _PRONOUN_ONE.match(after) is not None


def comparisons(clause: str, source: str = "question") -> list[Requirement]:
    if _THE_REST.search(clause):
        return []  # the bound's rows are compared with the rest: a split into groups, not a filter
    out: list[Requirement] = []
    taken: list[tuple[int, int]] = []

    def two_bounds(m: re.Match[str], ends: list[str], years: bool = False) -> None:
        low, high = sorted(_number(e.lstrip("$")) for e in ends)
        subject = _subject_before(clause, m.start())
        if years and all(re.fullmatch(r"1[89]\d\d|20\d\d", e) for e in ends):
            subject = ["year"]  # "we study 1984 through 1988": a span of time, whatever noun precedes it
        pct = bool(m.group("pct"))
        out.append(
            Requirement(
                kind=Kind.COMPARISON, text=m.group(0).strip(), source=source, op=">=", value=low,
                upper=high, percent=pct, subject=subject,
            )
        )  # fmt: skip
        taken.append(m.span())

    for m in _BETWEEN.finditer(clause):
        if _SCALE_BEFORE.search(clause[: m.start()]) or _scale_aside(clause, m):
            taken.append(m.span())
            continue  # "what proportion (between 0 and 1)": the answer's scale, not a bound on rows
        two_bounds(m, [m.group("num"), m.group("num2")])
    for m in _RANGE.finditer(clause):
        if _scale_aside(clause, m):
            taken.append(m.span())
            continue
        if not (any(a <= m.start() < b for a, b in taken) or _in_quotes(clause, m.start())):
            ends = [m.group(f"{e}{i}") for i in "1234" for e in "ab" if m.group(f"a{i}")]
            two_bounds(m, ends, years=bool(m.group("a3") or m.group("a4")))
    for m in _FROM_ON.finditer(clause):  # "from 2015 on": the years from then
        out.append(_year_bound(m.group(0), source, ">=", m.group("num")))
        taken.append(m.span())
    # a postfix direction that a number follows ("above 40 and below 90") is the next bound's prefix
    postfixes = [p.span() for p in _POSTFIX.finditer(clause) if not re.match(r"\s*\$?\d", clause[p.end() :])]
    for pattern, is_prefix in ((_PREFIX, True), (_POSTFIX, False), (_FROM_UP, False)):
        for m in pattern.finditer(clause):
            if any(a <= m.start() < b for a, b in taken):
                continue
            if is_prefix and any(m.start("num") <= a < m.end() for a, _ in postfixes):
                # "after 7 days or fewer": one number with a comparator on each side states no one
                # bound; neither is read
                taken += [(a, b) for a, b in postfixes if m.start("num") <= a < m.end()]
                continue
            if is_prefix:
                phrase = m.group("phrase").lower()
                if phrase == "past" and re.search(
                    r"\b(?:the|these|those|last)\s+$", clause[: m.start()], re.I
                ):
                    continue  # "in the past 10 years": a span of time up to now, not a bound
                op = next(o for p, o in _PREFIX_OPS if re.fullmatch(p, phrase, re.IGNORECASE))
            elif pattern is _FROM_UP:
                op = ">=" if m.group("dir").lower().startswith(("up", "on")) else "<="
            else:
                op = _POSTFIX_DIRS[m.group("dir").lower()]
            after = clause[m.end() : m.end() + 30]
            if re.match(r"\s*(?:decimal|d\.p\.|digits)", after, re.IGNORECASE):
                continue
            if pronoun_one(m.group("num"), after):
                continue  # "moves less than one after a fall": "one" stands for a day, no number
            if _EITHER_WAY.match(after):
                continue  # "a return of 3 % or more either way": a bound on the size, no side of the value
            if m.group("pct") and re.match(r"\s*of\b", after, re.IGNORECASE):
                continue  # "at least 10 percent of the firm's market value": a ratio to another quantity
            if MULTIPLE_AFTER.match(after):
                continue  # "at least 1.5 times that average": a multiple of another quantity, no bound
            if FRACTION_AFTER.match(after):
                continue  # "at least three quarters of the others": a fraction of something, no bound on it
            if m.group("num").lower() in ("once", "twice", "thrice") and re.match(
                r"\s*(?:the|that|this|its|their|his|her|as)\b", after, re.IGNORECASE
            ):
                continue  # "at least twice the median": a multiple of another quantity, no bound
            if RELATIVE.match(clause[m.end() : m.end() + 80]):
                continue  # "at least 5 points (0.05) above the median share": a distance from another quantity
            if _in_quotes(clause, m.start()):
                continue  # "an age band ('under 40', '40-49')": a label written out, not a bound
            if _COUNTED_NOUN.search(clause[: m.start()]):
                continue  # "at least one child under six": a bound on what is counted, not on the rows
            # "call a child tall from 70 inches up": the words before name what the rule defines, not
            # the quantity; only the words between the number and "up" can name it
            subject = _subject_before(clause, m.start()) if pattern is not _FROM_UP else []
            if is_prefix and m.group("named"):
                subject = m.group("named").split()  # "below a log R&D of 6.5": the quantity said
            elif is_prefix and m.group("point") and " " in m.group("point"):
                subject = m.group("point").split()  # "after game number 100": the numbered sequence
            if subject and all(w.lower() in _BOUND_WORDS for w in subject):
                subject = []  # "a week at most (7 days or fewer)": the words of another bound, no quantity
            named_after = re.match(
                r"\s*(?:[a-z%°]+\s+)?of\s+(?P<what>[a-z][a-z-]*(?:\s+[a-z][a-z-]*)?)", after, re.IGNORECASE
            )
            if not subject and named_after and not _counts_rows(clause, m.start(), m.end()):
                subject = [
                    w for w in named_after.group("what").split() if w.lower() not in _STOPS
                ]  # "1.0 mm of precipitation"
            count = "count" if _counts_rows(clause, m.start(), m.end()) else None
            unit_words = (m.groupdict().get("unit") or "").replace(",", " ").split()
            if not subject and "of" in unit_words[1:2] and not is_prefix:
                subject = [
                    w for w in unit_words[2:] if w.lower() not in _STOPS
                ]  # "1000 ppm of chloride or more"
            if pattern is _FROM_UP:
                # "old from 85 years on": a span of time measures the bound's quantity, it names none
                unit_words = [w for w in unit_words if w.lower() not in TIME_WORDS]
            if (
                len(unit_words) == 2
                and unit_words[0].lower() in ("a", "an", "per", "each")
                and (unit_words[1].lower() in TIME_WORDS)
            ):
                unit_words = []  # "4 % a year or more": a rate's time unit, no quantity
            if not subject and unit_words and not is_prefix and unit_words[0].lower() not in _MEASURES:
                # "how many have 3,000 residents or more": the words between the number and "or
                # more" name the quantity; binding keeps them only when they name a column
                subject = [w for w in unit_words if w.lower() not in _STOPS][:3]
            noun_after = _subject_after(after) if is_prefix and subject else []  # "short of 450 at-bats"
            if count:
                noun_after = _counted_phrase(after)  # "with more than 3,000 transactions of the second kind"
            if not subject and not named_after and not count:
                subject = _subject_after(after)  # "with at least 5 warm days": the noun after the bound
            if not is_prefix and _is_year(m) and m.group("dir").lower() in _POSTFIX_TEMPORAL:
                subject = ["year"]  # "2015 or later", "1990 and earlier": a bound on time
            if is_prefix and _is_year(m) and _TEMPORAL.fullmatch(m.group("phrase")):
                # "before 2010", "summed over 2015": a bound on time, whatever noun precedes it;
                # "over/across/during 2015" is that year, and "over 2000-2014" a span (no bound).
                if re.match(r"\s*(?:to|-|–|and)\s*\d", after):
                    continue
                subject = ["year"]
                if m.group("phrase").lower() in LEXICON.year_spans:
                    op = "=="
            if _NEGATING.search(clause[: m.start()]) or _LEFT_OUT_AFTER.match(after):
                op = COMPLEMENT[op]
            out.append(
                Requirement(
                    kind=Kind.COMPARISON,
                    text=m.group(0),
                    source=source,
                    op=op,
                    value=_number(m.group("num")) * _counted_in(clause, m.end("num")),
                    percent=bool(m.group("pct")),
                    subject=subject,
                    after=noun_after,
                    function=count,
                )
            )
            taken.append(m.span())
    out += _signs(clause, source, taken)
    out = _range_subjects(clause, out)
    # Two bounds joined by "or" ("BMI at least 30 or blood pressure 110 or more") state a
    # disjunction, which a list of requirements (each must hold) cannot say: neither is kept.
    spans = sorted(taken)
    either = {
        i
        for k in range(len(spans) - 1)
        if re.search(r"\bor\b", clause[spans[k][1] : spans[k + 1][0]], re.IGNORECASE)
        for i in (spans[k][0], spans[k + 1][0])
    }
    if either:
        out = [r for r in out if clause.find(r.text) not in either]
    out = _without_bands(out)
    years_in = [m for m in _YEAR_IN.finditer(clause) if not _counted_of_those(clause[: m.start()])]
    if len(years_in) > 1:  # "in 1931 and in 1932": the years compared, each row in one of them
        out.append(
            Requirement(
                kind=Kind.SCOPE,
                text=" ".join(m.group(0) for m in years_in),
                source=source,
                values=[m.group("year") for m in years_in],
                subject=["year"],
            )
        )
    for m in years_in if len(years_in) == 1 else []:
        out.append(_year_bound(m.group(0), source, "==", m.group("year")))
    for m in _YEARS.finditer(clause):
        if _counted_of_those(clause[: m.start()]):
            continue
        years = [m.group("a"), *re.findall(r"1[89]\d\d|20\d\d", m.group("rest"))]
        out.append(
            Requirement(kind=Kind.SCOPE, text=m.group(0), source=source, values=years, subject=["year"])
        )
    return out


# "whose Band 2 value is negative": a bound at zero said by the value's sign
_SIGN = re.compile(
    r"\b(?:is|are|was|were)\s+(?:strictly\s+)?(?P<sign>negative|positive)\b(?!\s*(?:for|on|to|in|about)\b)",
    re.IGNORECASE,
)
_SIGN_OPS = {"negative": "<", "positive": ">"}


def _signs(clause: str, source: str, taken: list[tuple[int, int]]) -> list[Requirement]:
    """Bounds said by a sign after a linking verb: the words before name the quantity (binding keeps
    the bound only where they name a numeric column, and the whole clause must parse)."""
    out = []
    for m in _SIGN.finditer(clause):
        if any(a <= m.start() < b for a, b in taken) or _NEGATING.search(clause[: m.start()]):
            continue
        subject = _subject_before(clause, m.start())
        if not subject:
            continue
        op = _SIGN_OPS[m.group("sign").lower()]
        out.append(
            Requirement(
                kind=Kind.COMPARISON, text=m.group(0), source=source, op=op, value=0.0, subject=subject
            )
        )
    return out


def is_sign(req: Requirement) -> bool:
    """A bound said by a sign ("is negative"): its word is the bound, read by this reading only."""
    return req.kind is Kind.COMPARISON and _SIGN.fullmatch(req.text) is not None


def _year_bound(text: str, source: str, op: str, year: str) -> Requirement:
    """A bound on the year ("from 2015 on", "in 1931")."""
    return Requirement(
        kind=Kind.COMPARISON, text=text, source=source, op=op, value=float(year), subject=["year"]
    )


def _range_subjects(clause: str, reqs: list[Requirement]) -> list[Requirement]:
    """The second bound of a range written as two ("a rate above 6 and up to and including 8
    percent", "more than 4,000 g but no more than 5,000 g") is on the first one's quantity when
    nothing but "and" or "but" stands between them and it names no quantity of its own."""
    bounds = (">", ">=", "<", "<=")
    out = list(reqs)
    placed = sorted((clause.find(r.text), i) for i, r in enumerate(out) if clause.find(r.text) >= 0)
    for (a, i), (b, j) in zip(placed, placed[1:], strict=False):
        first, second = out[i], out[j]
        between = clause[a + len(first.text) : b]
        joined = re.fullmatch(r"\s*(?:[a-z%°]+\s+)?(?:,\s*)?(?:and|but)\s*", between, re.IGNORECASE)
        if not (joined and first.subject and first.op in bounds and second.op in bounds):
            continue
        if all(w.lower() in _STOPS or w.lower() in _MEASURES for w in second.subject):
            out[j] = second.model_copy(update={"subject": list(first.subject)})
    return out


def _without_bands(reqs: list[Requirement]) -> list[Requirement]:
    """Bounds of one clause on one quantity that no row can meet together ("rural when under 50
    percent urban, ..., urban at 75 or more") name bands or categories, not filters: all of them
    are dropped. Two bounds on different quantities (a pulse below 55 and more than 150 sit-ups)
    stay."""
    below = [r for r in reqs if r.op in ("<", "<=") and r.upper is None and r.value is not None]
    above = [r for r in reqs if r.op in (">", ">=") and r.upper is None and r.value is not None]
    bands: set[int] = set()
    for lo in below:
        for hi in above:
            same = lo.subject == hi.subject or not lo.subject or not hi.subject
            assert lo.value is not None and hi.value is not None
            if same and lo.value <= hi.value and lo.subject != ["year"] and hi.subject != ["year"]:
                bands |= {id(lo), id(hi)}
    return [r for r in reqs if id(r) not in bands]


def not_null(clause: str, source: str = "question") -> list[Requirement]:
    out = []
    for m in _RECORDED.finditer(clause):
        subj = m.group("subj") or m.group("subj2") or m.group("subj3")
        if m.group("both"):
            out.append(
                Requirement(
                    kind=Kind.NOT_NULL, text=m.group(0), source=source, subject=[m.group("both"), "*"]
                )
            )
        elif subj:
            out.append(Requirement(kind=Kind.NOT_NULL, text=m.group(0), source=source, subject=subj.split()))
    return out


# Category values that are also function words of a sentence ("0 if none", "all of them", "any
# other"): bound only when quoted.
_FUNCTION_VALUES = {"none", "all", "any", "other", "others", "each", "both", "total", "nothing", "no", "yes"}


# a word standing in a parenthesised list of names ("(married, label)"), marked by a NUL at its place
_IN_NAME_LIST = re.compile(r"\(\s*(?:\w+\s*,\s*)*\0(?:\s*,\s*\w+)*\s*\)")


# a value that may be said in the plural: a lower-case word, not itself ending in "s", and not a
# participle ("betrayed" has no plural)
_PLURAL_VALUE = re.compile(r"[a-z]{4,}(?<!s)(?<!ed)")


def scopes(
    clause: str,
    vocab: Vocabulary,
    tables: list[str] | None,
    source: str = "question",
    counted: bool = False,
) -> list[Requirement]:
    """Category values of the data named in the clause, grouped by column. `counted`: also the
    values a count names ("how many days were labelled rain"), which scope that count only."""
    found: dict[str, tuple[list[str], bool, str]] = {}
    values = vocab.all_values(tables)
    # a value spelled like a flag column the turn reads ("how many magnitude labels have no strong
    # record" beside the label 'strong' and the flag `strong`): two readings, no scope
    flags = {" ".join(column_tokens(c)).lower() for c in flag_columns(vocab, tables)}
    flag_words = [[t.lower() for t in column_tokens(c)] for c in flag_columns(vocab, tables)]
    held, labels = _codebook_labels(clause, vocab, tables, values)
    column_words = {t.lower() for c in vocab.columns() for t in column_tokens(c)}
    candidates = (
        [(value, cols, value) for value, cols in values.items()]
        + labels
        + _everyday_values(vocab, tables)
        + _numbered_values(clause, vocab, tables)
        + _role_values(clause, vocab, tables)
        + _month_values(clause, vocab, tables)
    )
    for value, cols, stored in candidates:
        coded = stored != value
        if len(value) < 2 or value.isdigit() or len(cols) != 1 or value.lower() in flags:
            continue
        # A value binds only as the data writes it: a code in capitals ("IN", "OR") is not the word
        # "in", and a capitalised category ("Death") is not the common noun ("dates of death", "a
        # death is ..."): a word that could be either is ambiguous, and an ambiguous parse abstains.
        # also the value as the first part of a compound adjective ("woman-headed households") or
        # before its own column's word ("the high-NO2 days" for the value 'high' of `no2_band`)
        parts = {*column_tokens(cols[0]), *re.split(r"[\W_]+", cols[0])}
        own = "|".join(sorted((re.escape(t) for t in parts if len(t) > 1), key=len, reverse=True)) or "(?!)"
        # a lower-case word value said in the plural names its rows ("the betrayers" for 'betrayer'),
        # unless the plural is itself a value or a column's word
        plural = (
            "s?"
            if _PLURAL_VALUE.fullmatch(value)
            and f"{value}s" not in values
            and f"{value}s" not in column_words
            else ""
        )
        for m in re.finditer(
            rf"(?<![\w-]){re.escape(value)}{plural}(?:(?=-[a-z]+ed\b(?!-))|(?=-(?i:{own})\b(?!-))|(?![\w-]))",
            clause,
            re.I if coded else 0,
        ):
            before = clause[max(0, m.start() - 40) : m.start()]
            if LEXICON.statistic(value) and re.search(r"\bon\s+$", before, re.IGNORECASE):
                continue  # "how many days did they miss on average": the statistic's idiom, not the value
            if value.lower() in ("first", "last") and _ORDER_BEFORE.search(before):
                continue  # "(highest first, lower obs first on ties)": an order, not the value 'first'
            if (
                clause[m.end() : m.end() + 1] == "-"
                and not re.match(r"-[a-z]+ed\b", clause[m.end() :])
                and _NUMBER_OF.search(before)
            ):
                continue  # "its number of days and of low-ozone days": the category counted, no scope
            if value.lower() in _FUNCTION_VALUES and not _in_quotes(clause, m.start() + 1):
                continue  # "(0 if none)": the sentence's own word; only a quoted 'none' names the value
            if value.lower() == cols[0].lower() and _IN_NAME_LIST.search(
                clause[: m.start()] + "\0" + clause[m.end() :]
            ):
                continue  # "a DataFrame `status_book` (married, label)": the column's name, not its value
            if re.search(
                r"\b(?:are|is|being|as|than|vs\.?|versus|compare\w*|between)\s+(?:the\s+)?$",
                before,
                re.IGNORECASE,
            ):
                continue
            if _AGAINST_THE_REST.match(clause[m.end() : m.end() + 40]):
                continue  # "by race (black or not)": the value against the rest, a split of the rows
            if _REMOVED_AFTER.match(clause[m.end() : m.end() + 40]):
                continue  # "before Grand Rapids was left out": history of the data, not this turn's scope
            if _EXAMPLE_BEFORE.search(before):
                continue  # "(only the first word of the name, e.g. Adelie)": an example of a value, no scope
            if _KEPT_EMPTY.match(clause[m.end() : m.end() + 60]) or _EMPTY_FOR.search(before):
                continue  # "keep the overseas label with 0 respondents": an entry kept empty, no scope
            if _names_flag_with(value, before, flag_words):
                continue  # "far from Clinton" beside the flag `far_clinton`: the flag's name, no scope
            counted_itself = re.search(r"\bhow\s+many\s+[\"'“]?$", clause[: m.start()]) and re.match(
                r"[\"'”]?\s*(?:$|[,;:?.!]|and\b|or\b)", clause[m.end() :]
            )  # "how many benign, and ...": the value is the counted thing itself
            if not counted and (counted_itself or _COUNTED.search(clause[: m.start()])):
                continue  # "how many days were labelled X": X is what is counted, not the turn's scope
            if _RESTORING.search(clause[: m.start()]) or re.match(
                r"\W*(?:\w+\W+){0,3}?back\b", clause[m.end() :]
            ):
                continue  # "bring X back", "restore X": X returns to the data; the turn is not limited to it
            exclude = bool(
                _SET_ASIDE_AFTER.match(clause[m.end() : m.end() + 60])
                or re.search(rf"(?:\b(?:{_EXCLUDING})\s+(?:the\s+|any\s+)?|\bnon-)$", before, re.IGNORECASE)
                or _LEAVING_OUT.search(clause[: m.start()])
                or any(v.search(clause[: m.start()]) and p.search(clause[m.end() :]) for v, p in _FRAMES)
            )
            col = cols[0]
            vals, excl, text = found.get(col, ([], exclude, ""))
            if stored not in vals:
                found[col] = ([*vals, stored], excl or exclude, (text + " " + m.group(0)).strip())
    out = []
    for value, cols in values.items():
        for col in cols:
            held.setdefault(col, set()).add(value)
    for col, (vals, excl, text) in found.items():
        # the column's values that are also the sentence's own words ("yes", "no") count among the
        # values named here: "a yes or a perhaps" names two, "(no 0, perhaps 1, yes 2)" all three
        named = set(vals) | {
            v
            for v in held.get(col, set())
            if v.lower() in _FUNCTION_VALUES and re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", clause)
        }
        if len(named) > 1 and re.search(r"\b(?:or|vs\.?|versus|compare\w*)\b", clause, re.IGNORECASE):
            continue  # alternatives being compared, not a scope
        if not excl and len(named) > 1 and named >= held.get(col, set()):
            continue  # every value the column holds ("winter = ..., spring = ..."): a grouping, no restriction
        out.append(
            Requirement(kind=Kind.SCOPE, text=text, source=source, values=vals, exclude=excl, columns=[col])
        )
    return out


def _codebook_labels(
    clause: str, vocab: Vocabulary, tables: list[str] | None, values: dict[str, list[str]]
) -> tuple[dict[str, set[str]], list[tuple[str, list[str], str]]]:
    """The codes each codebook column holds, and (label, [column], code) for each label the clause
    says whole, in any case: "the thiotepa records" for `rx (the arm: 1 placebo, 2 thiotepa)`. A label
    inside a longer one said there ("primary school" in "less than primary school") is that one's. A
    label two columns' codebooks share ("1 good, 0 poor" for the status before and at a visit, in
    whichever tables), or one the data also writes as a text value (a `gearbox` column holding "manual"
    beside `am (0 automatic, 1 manual)`), has two readings, and none is taken."""
    held: dict[str, set[str]] = {}
    labels: list[tuple[str, list[str], str]] = []
    columns = set(vocab.columns(tables))
    shared = Counter(label for book in vocab.codes.values() for label in book)
    written = {v.lower() for v in values}
    for col, book in vocab.codes.items():
        if col not in columns:
            continue
        held[col] = set(book.values())
        said = {
            label: [m.span() for m in re.finditer(rf"(?<![\w-]){re.escape(label)}(?![\w-])", clause, re.I)]
            for label in book
        }
        spans = [span for found in said.values() for span in found]
        for label, found in said.items():
            inside = any(a <= x and y <= b and (a, b) != (x, y) for a, b in spans for x, y in found)
            if found and not inside and shared[label] == 1 and label not in written:
                labels.append((label, [col], book[label]))
    return held, labels


# "Department 12 on its own", "(capmob 0)": a column's name, then one whole number of it
_NUMBERED = re.compile(
    r"(?<![\w-])(?P<name>[A-Za-z][A-Za-z_]{2,})(?P<code>\s+code)?\s+(?P<n>-?\d+)"
    r"(?![\w%]|[.,]\d|,\s*-?\d|\s*(?:-|to\b|through\b|or\b|and\b|times\b|per\b|on(?:wards?)?\b(?!\s+(?:its|their)\s+own)|up(?:wards?)?\b))"
)


def _numbered_values(
    clause: str, vocab: Vocabulary, tables: list[str] | None
) -> list[tuple[str, list[str], str]]:
    """A numeric column named by its name (or the word its short name stands for; or, with "code"
    between, a word only its description says) right before a whole number in the column's range:
    that number as a value of it ("Department 12" for `dept`, "capmob 0", "region code 3"). A
    comparator before it makes it a bound, read elsewhere ("before month 10"); a range, a unit or a
    second number after it is no single value."""
    out = []
    numeric = {
        c: i
        for t in (vocab.tables if tables is None else [t for t in tables if t in vocab.tables])
        for c, i in vocab.tables[t].items()
        if i.kind == "num" and i.low is not None and i.high is not None
    }
    for m in _NUMBERED.finditer(clause):
        word = m.group("name").lower()
        named = [
            c
            for c in numeric
            if word in (c.lower(), c.lower() + "s") or LEXICON.abbreviations.get(c.lower()) == word
        ]
        text = m.group(0)
        first = re.search(r"(?<![\w-])([A-Za-z]{3,})\s+$", clause[: m.start()])
        if not named and first and not m.group("code"):
            # "latitude band 40" for `lat_band`: the two words spell the name out
            named = spelled_by([first.group(1), word], numeric)
            text = clause[first.start() : m.end()]
        if not named and m.group("code"):
            # "region code 3" for `geo (a code from 1 to 4 for the firm's home region)`: the one
            # numeric column whose description in the task's text says the word ("day 201", "month
            # 30" without "code" are points of a measure, read as bounds where a comparator says so)
            named = [c for c in numeric if word in (vocab.column_words.get(c) or ())]
        if len(named) != 1 or _PREFIX_BEFORE.search(clause[: m.start()]) or _in_quotes(clause, m.start()):
            continue  # a bound ("before month 10"), or a label written out ('"visit 1 (week 2)"')
        info, n = numeric[named[0]], float(m.group("n"))
        if (
            info.low is not None
            and info.high is not None
            and float(info.low).is_integer()
            and info.low <= n <= info.high
        ):
            out.append((text, named[:1], m.group("n")))
    return out


_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip


def _month_values(
    clause: str, vocab: Vocabulary, tables: list[str] | None
) -> list[tuple[str, list[str], str]]:
    """A month said by its name where the data numbers months: the one numeric month column (`month`,
    `mo`, values within 1 to 12) takes the month's number. Read only in the plural ("the Julys") or
    after "in" with no range or year after it ("in July", not "in July 1950" or "in June to August");
    a name in a list of months ("'summer' for June to August") is no value."""
    numeric = [
        c
        for t in (vocab.tables if tables is None else [t for t in tables if t in vocab.tables])
        for c, i in vocab.tables[t].items()
        if i.kind == "num"
        and i.low is not None
        and i.high is not None
        and float(i.low).is_integer()
        and 1 <= i.low <= i.high <= 12
        and any(t == "month" or LEXICON.abbreviations.get(t) == "month" for t in column_tokens(c))
    ]
    columns = list(dict.fromkeys(numeric))
    if len(columns) != 1:
        return []
    out = []
    for n, name in enumerate(_MONTHS, start=1):
        plural = name[:-1] + "ies" if name.endswith("y") and name not in ("May", "July") else name + "s"
        if re.search(rf"(?<![\w-]){plural}(?![\w-])", clause):
            out.append((plural, columns, str(n)))
        elif re.search(
            rf"\bin\s+{name}\b(?!\s*(?:to\b|through\b|and\b|or\b|-|–|,\s*[A-Z]|\d|'))", clause
        ) and not re.search(
            rf"\b(?:from|to|through|and|or)\s+{name}\b|{name}\s*(?:to|through|-|–)\s", clause
        ):
            out.append((name, columns, str(n)))
    return out


def _role_values(
    clause: str, vocab: Vocabulary, tables: list[str] | None
) -> list[tuple[str, list[str], str]]:
    """A capitalised value of one column said in lower case where the clause names that column as its
    role ("with a mother as the parent" for `par` holding "Mother", "whose parent is a mother"): the
    value, then read in any case. Without the role word the common noun is no value."""
    out = []
    for value, cols in vocab.all_values(tables).items():
        if len(cols) != 1 or not re.fullmatch(r"[A-Z][a-z]{2,}", value):
            continue
        low = re.escape(value.lower())
        for m in re.finditer(
            rf"(?<![\w-]){low}\s+as\s+(?:the|its|their)\s+(?P<a>[a-z]+)"
            rf"|\bwhose\s+(?P<b>[a-z]+)\s+(?:is|was)\s+an?\s+{low}(?![\w-])",
            clause,
        ):
            role = m.group("a") or m.group("b")
            if _names_role(role, cols[0], vocab):
                out.append((value.lower(), cols, value))
                break
    return out


def _names_role(word: str, column: str, vocab: Vocabulary) -> bool:
    """Does the word name the column: by its name or a name it begins with (`par` for "parent"), or by
    the task's words for it?"""
    name = column.lower()
    return (
        word in (name, name + "s")
        or (len(name) >= 3 and word.startswith(name))
        or word in (vocab.column_words.get(column) or ())
    )


def _everyday_values(vocab: Vocabulary, tables: list[str] | None) -> list[tuple[str, list[str], str]]:
    """Everyday words for a category value (lexicon `value_words`: "women" -> female) and the one value
    of one column they name as the data writes it: `female`, or `F` in a column holding only F and M."""
    out = []
    values = vocab.column_values(tables)
    for word, meant in LEXICON.value_words.items():
        named = []
        for col, held in values.items():
            initials = {v.lower() for v in held} <= {"f", "m"}
            named += [(col, v) for v in held if v.lower() == meant or (initials and v.lower() == meant[0])]
        if len(named) == 1:
            out.append((word, [named[0][0]], named[0][1]))
    return out


def _names_flag_with(value: str, before: str, flag_words: list[list[str]]) -> bool:
    """The value is a word of a flag column's name whose other words stand right before it ("voters
    far from Clinton", "the far-from-Clinton voters" with a flag `far_clinton`)."""
    said = [_stem(w) for w in re.findall(r"[A-Za-z]+", before)[-4:]]
    for words in flag_words:
        rest = [w for w in words if w != value.lower()]
        if len(rest) < len(words) and rest and all(_stem(w) in said for w in rest):
            return True
    return False


# "with 0 babies for "age not recorded"", "0 for the sea label": the zero comes first, then the entry
_EMPTY_FOR = re.compile(
    r"(?:^|\W)(?:0|zero|no|none)\s+(?:[a-z-]+\s+){0,2}?for\s+(?:the\s+|an?\s+)?[\"'“`]?$", re.IGNORECASE
)
# "the overseas label with 0 respondents", "code 9 with no rows", ""low dose" reported as 0 patients",
# ""not scored" must be listed with 0 students": an entry of a list kept with nothing
_KEPT_EMPTY = re.compile(
    r"\W*(?:(?:label|labels|entry|entries|code|codes|row|rows|category|type|line|name)\W+)?"
    r"(?:(?:(?:must|should|has\s+to|needs\s+to|is|are)\s+)?(?:be\s+)?"
    r"(?:there|appears?|show(?:s|ing|n)?|stays?|remains?|turns?|listed|reported|kept|given|included|entered)"
    r"(?:\s+(?:up|in|on))?\W+)?"
    r"(?:with|at|as|showing|having)\s+(?:0|zero|no|none)\b",
    re.IGNORECASE,
)


def flag_columns(vocab: Vocabulary, tables: list[str] | None) -> list[str]:
    """Boolean columns of the tables the code read (a pandas bool column or a SQL BOOLEAN: the
    vocabulary lists their values as False and True)."""
    names = vocab.tables if tables is None else [t for t in tables if t in vocab.tables]
    return list(
        dict.fromkeys(
            c for t in names for c, info in vocab.tables[t].items() if set(info.values) == {"False", "True"}
        )
    )


# "less than 10 % of the body burned", "20 % of the body or more": a bound on a column the task's
# text describes as a percentage of that whole ("Z4 (percentage of the body surface burned)")
_PERCENT_OF = re.compile(
    r"(?:\b(?P<phrase>" + "|".join(f"(?:{p})" for p, _ in _PREFIX_OPS) + r")\s+)?"
    r"(?P<num>\d+(?:\.\d+)?)\s*(?:%|percent\b)\s+of\s+(?P<rest>[a-z][a-z\s-]*)",
    re.IGNORECASE,
)
_PERCENT_WORDS = frozenset({*LEXICON.share_words, "percent", "pct"})


def percent_bounds(clause: str, vocab: Vocabulary | None, source: str = "question") -> list[Requirement]:
    """Bounds stated as a percentage of a whole that one column measures: "N % of the <words>" where
    the task describes exactly one column as a percentage of those words (the comparison reader
    leaves "N % of ..." alone, as a ratio to another quantity). The words after "of" must all be that
    column's own words (stop words aside), and the bound needs its comparator on exactly one side
    ("less than 10 % of the body", "20 % of the body or more"); otherwise it abstains."""
    if vocab is None:
        return []
    measured = {  # each percentage column: the stems of the whole its description names
        col: {_stem(w) for w in words[1:]}
        for col, words in vocab.column_words.items()
        if words and words[0] in _PERCENT_WORDS and len(words) > 1
    }
    out: list[Requirement] = []
    for m in _PERCENT_OF.finditer(clause):
        words = list(re.finditer(r"[A-Za-z-]+", m.group("rest")))
        said: list[str] = []
        end = m.start("rest")
        for w in words:
            low = w.group(0).lower()
            if low in ("or", "and"):
                break
            if low in STOP and not said:
                end = m.start("rest") + w.end()
                continue
            if not any(_stem(low) in stems for stems in measured.values()):
                break
            said.append(low)
            end = m.start("rest") + w.end()
        if not said:
            continue
        holders = [c for c, stems in measured.items() if all(_stem(w) in stems for w in said)]
        if len(holders) != 1:
            continue  # no column, or two, measure that whole: no reading
        post = re.match(r"\s+(?:or|and)\s+(?P<dir>\w+)\b", clause[end:])
        postfix_op = _POSTFIX_DIRS.get(post.group("dir").lower()) if post else None
        if (m.group("phrase") is None) == (postfix_op is None):
            continue  # a comparator on both sides, or on neither: no one bound
        if m.group("phrase") is not None:
            phrase = m.group("phrase").lower()
            op = next(o for p, o in _PREFIX_OPS if re.fullmatch(p, phrase, re.IGNORECASE))
        else:
            assert post is not None and postfix_op is not None
            op, end = postfix_op, end + post.end()
        if _NEGATING.search(clause[: m.start()]):
            op = COMPLEMENT[op]
        out.append(
            Requirement(
                kind=Kind.COMPARISON,
                text=clause[m.start() : end],
                source=source,
                op=op,
                value=float(m.group("num")),
                percent=True,
                subject=[holders[0]],
            )
        )
    return out


def flag_scopes(clause: str, vocab: Vocabulary, tables: list[str] | None) -> list[Requirement]:
    """Rows named by a flag the data holds: "among the efficient cars", "the heavy birds", "members
    that count as fit", "the patients at risk" (a boolean column `efficient`, `heavy`, `fit`,
    `at_risk`): the turn's rows are the flagged ones. Only the attributive uses are read (a flag as
    a predicate, "how many cars are efficient", is the thing counted); a clause that contrasts the
    flagged rows with others, negates, defines the term or points at another version of the rule
    states no scope. Two flags read from one phrase abstain."""
    if _DEFINITION.search(clause.strip()):
        return []
    clause = _IN_FORCE.sub(" ", clause)  # "under the present rule": the flag column as it stands
    if _FLAG_OTHER.search(_BOUND_NEGATION.sub(" ", clause)):
        return []
    found: list[tuple[str, str]] = []
    for col in flag_columns(vocab, tables):
        tokens = column_tokens(col)
        phrase = flag_words(col)
        if not phrase:
            continue
        patterns = (
            rf"\b(?:the|those|these|all|its|their)\s+(?:[a-z]+\s+)?{phrase}\s+[a-z]+",
            rf"\b[a-z]+s\s+(?:that|which|who)\s+(?:are|were|is|was|counts?\s+as)\s+{phrase}",
            # "how many deadly ones had ...": the flagged rows, counted by another property
            rf"\bhow\s+many\s+{phrase}\s+(?:ones|[a-z-]+s)\s+(?:in\s+`?\w+`?\s+)?"
            r"(?:had|have|has|were|was|are|is|did|do|got|received)\b(?!\s+there\b)",
            rf"\bthe\s+[a-z]+s\s+{phrase}" if tokens[0] in ("at", "in", "on", "under", "over") else "",
            # "the students whose mentor is prolific" for `prolific_mentor`: the noun, then the adjective
            rf"\b[a-z]+s\s+whose\s+{re.escape(tokens[1])}s?\s+(?:is|are|was|were|counts?\s+as)\s+{re.escape(tokens[0])}\b"
            if len(tokens) == 2 and tokens[0].isalpha() and tokens[1].isalpha()
            else "",
        )
        for pattern in filter(None, patterns):
            m = re.search(pattern, clause, re.IGNORECASE)
            if m:
                found.append((col, m.group(0)))
                break
    if len(found) != 1:
        return []
    col, text = found[0]
    return [
        Requirement(kind=Kind.SCOPE, text=text, values=["True"], columns=[col], subject=column_tokens(col))
    ]


# Nouns a question calls a flag's rule by ("the dropped per-member yardstick")
_RULE_NOUNS = r"rules?|lines?|definitions?|cut-?offs?|yardsticks?|criteri(?:on|a)|tests?|standards?|thresholds?|bars?|measures?"
_EARLIER = re.compile(rf"\b(?:{'|'.join(LEXICON.earlier_version)}|drop\w*|withdr\w*)\b", re.IGNORECASE)
# A version of a rule named by what became of it ("the position rule we dropped", "the cut that was
# withdrawn", "the withdrawn cut"): a definition, not rows; its exclusion word leaves nothing out
# "the comparison we dropped", "the suggestion we put aside": a rule named by the act that proposed it
_VERSION_NOUNS = f"{_RULE_NOUNS}|cuts?|versions?|comparisons?|suggestions?|proposals?|ideas?|approach(?:es)?"
_EARLIER_WORDS = "|".join(LEXICON.earlier_version)
_UNDONE_WORDS = "|".join(LEXICON.undone_version)
RULE_VERSION = re.compile(
    rf"\b(?:{_VERSION_NOUNS})\s+(?:that\s+|which\s+)?(?:(?:we|you|i|they)\s+(?:have\s+|had\s+)?(?:just\s+)?"
    rf"|(?:was|were|has\s+been|had\s+been)\s+)(?:{_EARLIER_WORDS}|{_UNDONE_WORDS})\b"
    rf"|\b(?:{_EARLIER_WORDS})\s+(?:[\w-]+\s+){{0,2}}(?:{_VERSION_NOUNS})\b",
    re.IGNORECASE,
)


def current_rule_flags(clause: str, vocab: Vocabulary, tables: list[str] | None) -> list[Requirement]:
    """Rows a flag marks under the rule now in force but not under another one ("Which kept years
    are active under the restored fixed rule but were not under the dropped cycle-relative one?"):
    every row behind the answer has the flag (the flag column holds the rule in force). Read only
    when the clause names exactly one flag column, right before "under the <rule>" (not an earlier
    version), and the contrast "but ... not under" follows."""
    found = []
    for col in flag_columns(vocab, tables):
        phrase = flag_words(col)
        if not phrase:
            continue
        m = re.search(
            rf"\b(?:are|is|count\s+as|counts\s+as)\s+{phrase}\s+(?:under|by|with)\s+the\s+"
            rf"(?P<rule>[^,;?]*?)\bbut\s+(?:were|was)\s+not\b",
            clause,
            re.IGNORECASE,
        )
        if m and not _EARLIER.search(m.group("rule")):  # "settled under the rule we dropped": not in force
            found.append((col, m.group(0)))
        m = re.search(
            rf"\b(?:{'|'.join(LEXICON.earlier_version)}|drop\w*|withdr\w*)\b[^,;?]*?\b(?:{_RULE_NOUNS})\s+"
            rf"(?:counts?|counted|calls?|called|flags?|flagged|marks?|marked)\s+(?:as\s+)?{phrase}\s+"
            rf"(?:but|that|which|while|whereas)\s+the\s+[^,;?]*?\b(?:does|do|did)\s+not\b",
            clause,
            re.IGNORECASE,
        )
        if m:  # "which did the withdrawn rule count as long that the 50-day line does not": the flag is off
            found.append((col, "!" + m.group(0)))
        m = re.search(
            rf"\b(?:{_RULE_NOUNS})\s+(?:that\s+|which\s+)?(?:we|you|i|they)\s+(?:have\s+|had\s+)?"
            rf"(?:{'|'.join(LEXICON.earlier_version)}|drop\w*|withdr\w*)\b[^;?]*?\b(?:did|does|do|would)\s+"
            rf"(?:it|they|that\s+rule|that\s+one)\s+(?:count|call|flag|mark|label|consider)\s+(?:as\s+)?"
            rf"{phrase}\s+(?:but|that|which|while|whereas)\s+the\s+(?:[^,;?]|(?<=\d),(?=\d))*?"
            r"\b(?:does|do|did)\s+not\b",
            clause,
            re.IGNORECASE,
        )
        if m:  # "the rule we withdrew: which patients did it count as frail that the 70-point line does not"
            found.append((col, "!" + m.group(0)))
        m = re.search(
            rf"{phrase}\s+(?:only\s+)?(?:under|by|on|with)\s+the\s+(?P<rule>[^,;?]*?)"
            rf"(?:,\s*|\s+but\s+)(?:(?:are|is|were|was)\s+)?not\b(?:\s+{phrase})?\s+(?:under|by|on|with)\s+the\b",
            clause,
            re.IGNORECASE,
        )
        if m and _EARLIER.search(m.group("rule")):
            # "strong under the retired method-relative rule but are not strong on the 3.5 line",
            # "hard-pressed only under the group-median rule we withdrew, not under the 14-percent line"
            found.append((col, "!" + m.group(0)))
    if len(found) != 1:
        return []
    col, text = found[0]
    return [
        Requirement(
            kind=Kind.SCOPE,
            text=text.lstrip("!"),
            values=["True"],
            exclude=text.startswith("!"),
            columns=[col],
            subject=column_tokens(col),
        )
    ]


# A clause that contrasts the flagged rows with the others, negates, or points at another version of
# the rule ("the rest", "non-heavy", "under the withdrawn rule") states no scope of flagged rows.
# Words naming the rule in force, which the flag column holds: "under the present rule", "(current
# definition)", "in the current sense"
_IN_FORCE = re.compile(
    r"\(\s*(?:the\s+)?(?:present|current|new|revised|updated|latest)\s+(?:rule|definition|meaning|sense)\s*\)|"
    r"\b(?:under|by|with|in)\s+the\s+(?:present|current|new|revised|updated|latest)\s+"
    r"(?:rule|definition|meaning|sense)(?:\s+of\s+[a-z-]+)?\b",
    re.IGNORECASE,
)
# A bound's own negation ("an index not exceeding 100") says nothing of a flag
_BOUND_NEGATION = re.compile(
    r"\bnot\s+(?:exceed\w*|more|less|above|below|over|under|greater|higher|lower|beyond|surpass\w*)\b",
    re.IGNORECASE,
)
_FLAG_OTHER = re.compile(
    r"\b(?:other|others|rest|remaining|non|not|never|without|versus|vs|compar\w*|withdraw\w*|dropped|"
    r"old|previous\w*|original|earlier|former|would|could|under|before|neither|nor|both|each)\b",
    re.IGNORECASE,
)


# Two statistics of one quantity joined by "and" ("the mean and the median activity"): the first
# names no quantity of its own, so it is read with the second's.
_STAT_WORDS = r"mean|average|median|total"
_PAIRED_STAT = re.compile(rf"\b(?P<fn>{_STAT_WORDS})\s+and\s+(?:the\s+)?(?={_STAT_WORDS})\w", re.IGNORECASE)


def _uncoordinated(clause: str) -> str:
    """`clause` with the first statistic of each coordinated pair blanked out (same length), so the
    statistic-and-quantity pattern finds the second one with its quantity."""
    return _PAIRED_STAT.sub(lambda m: " " * (len(m.group(0)) - 1) + m.group(0)[-1], clause)


# a superlative right before a statistic ("the deepest mean depth", "its lowest average")
_SUPERLATIVE_BEFORE = re.compile(
    r"\b(" + LEXICON.pattern([*LEXICON.descending, *LEXICON.ascending]) + r"|[a-z]{2,}est)\s+$", re.IGNORECASE
)


# a plural owner right before a statistic ("the fathers' mean height")
_PLURAL_OWNER = re.compile(r"\b(?P<owner>[A-Za-z][\w-]*s)'\s+$")


# "the mean years of experience", "the median number of weekly hours": a measure noun whose quantity
# follows "of"; the statistic is of that quantity
_MEASURED = re.compile(
    r"\s+of\s+(?:the\s+|their\s+|its\s+|his\s+|her\s+)?(?P<rest>(?:[a-z-]+\s+){0,2}?[a-z-]+)"
    r"(?=\s*(?:\(|,|\.|;|\?|$|\s(?:per|for|over|in|across|by|among|within|from|on|at|is|was|and|rounded)\b))",
    re.IGNORECASE,
)
_MEASURE_NOUNS = {"number", "years", "amount", "count", "level", "quantity"}


def aggregations(clause: str, fields: list[str], source: str = "question") -> list[Requirement]:
    out = []
    said = _uncoordinated(clause)
    for m in _AGG.finditer(said):
        fn = _FUNCS[" ".join(m.group("fn").lower().split())]
        subj = [w for w in m.group("subj").split() if w.lower() not in ("the", "of")]
        measured = _MEASURED.match(said, m.end())
        if len(subj) == 1 and subj[0].lower() in _MEASURE_NOUNS and measured:
            subj = measured.group("rest").split()
        owner = _PLURAL_OWNER.search(clause[: m.start()])
        if owner and subj:
            subj = [owner.group("owner"), *subj]  # "the fathers' mean height": the fathers' heights
        if subj and subj[0].lower() in ("of", "growth") and fn == "sum":
            continue
        if not subj or subj[0].lower() in ("and", "or") or _REFERENCE_BEFORE.search(clause[: m.start()]):
            continue  # "heavier than their cohort mean and efficient": a reference value, not the statistic asked
        if len(subj) == 1 and LEXICON.names_rule(subj[0]):
            continue  # "the specimen-and-batch median rule": the statistic names a rule, it asks for none
        found = [(fn, m.group(0))]
        pair = next((p for p in _PAIRED_STAT.finditer(clause) if p.end() == m.start() + 1), None)
        if pair and not _REFERENCE_BEFORE.search(clause[: pair.start()]):
            # "the mean and the median activity": the first statistic is of the same quantity
            found.insert(0, (_FUNCS[pair.group("fn").lower()], pair.group(0)[:-1] + m.group(0)))
        ranked = _SUPERLATIVE_BEFORE.search(clause[: m.start()])
        # "their mean minutes per transaction": a rate; the words after "per" may complete the quantity's
        # name (a column described as "minutes per transaction"), which the binder decides
        rate = re.match(r"\s+per\s+(?P<unit>[A-Za-z][\w-]*)", said[m.end() :])
        for function, text in found:
            out.append(
                Requirement(
                    kind=Kind.AGGREGATION,
                    text=text,
                    source=source,
                    function=function,
                    subject=subj,
                    after=["per", rate.group("unit")] if rate else [],
                    # "the deepest mean depth", "the highest average score": an extreme of it is asked
                    descending=None if ranked is None else ranked.group(1).lower() not in LEXICON.ascending,
                )
            )
    for m in _TYPICAL.finditer(clause):  # "the typical index (the median)"
        out.append(
            Requirement(
                kind=Kind.AGGREGATION,
                text=m.group(0),
                source=source,
                function=_FUNCS[m.group("fn").lower()],
                subject=m.group("subj").split(),
            )
        )
    for m in _BARE_AFTER.finditer(clause):
        # "the average flow, the middle value and the standard deviation": a statistic with no
        # quantity of its own, listed right after one with a quantity, is of that quantity
        spans = [
            (clause.find(r.text), clause.find(r.text) + len(r.text), r)
            for r in out
            if clause.find(r.text) >= 0
        ]
        if any(a <= m.start() < b for a, b, _ in spans):
            continue  # already read with a quantity ("the mean and the median rating")
        before = [(b, r) for _, b, r in spans if b <= m.start() and r.kind is Kind.AGGREGATION]
        prev = max(before, key=lambda p: p[0])[1] if before else None
        if prev is None or not prev.subject:
            continue
        gap = clause[clause.find(prev.text) + len(prev.text) : m.start()]
        if re.fullmatch(r"\s*,?\s*(?:and\s+)?(?:the\s+|its\s+|their\s+)?", gap, re.IGNORECASE):
            fn = _FUNCS[" ".join(m.group("fn").lower().split())]
            if fn != prev.function:
                out.append(
                    Requirement(
                        kind=Kind.AGGREGATION,
                        text=m.group(0),
                        source=source,
                        function=fn,
                        subject=prev.subject,
                    )
                )
    for field in fields:
        fm = _FIELD_AGG.match(field)
        if fm:
            out.append(
                Requirement(
                    kind=Kind.AGGREGATION,
                    text=f"`{field}`",
                    source=source,
                    function=_FUNCS[fm.group("fn")],
                    subject=fm.group("rest").split("_"),
                    fields=[field],
                )
            )
    return out


def extract(
    question: str,
    *,
    context: str = "",
    vocab: Vocabulary | None = None,
    tables: list[str] | None = None,
) -> list[Requirement]:
    """Requirements of one turn (question, plus the standing rounding instruction of the context):
    each registered semantic rule reads every clause, then the whole question (`rules/`)."""
    registered = rules()
    reading = Reading(
        question=question, context=context, vocab=vocab, tables=tables, fields=answer_fields(question)
    )
    out: list[Requirement] = []
    for clause in clauses(question):
        read: list[Requirement] = []
        for rule in registered:
            if rule.read_clause is not None:
                read += rule.read_clause(clause, reading)
        out += _one_use(read)
    out = [r for r in out if not (r.kind is Kind.COMPARISON and excluded_after(question, r.text))]
    if vocab is not None:
        whole = row_condition_kinds()
        out = [r for r in out if r.kind not in whole or parses_whole(question, r, vocab, tables)]
    for rule in registered:
        if rule.read_question is not None:
            out += rule.read_question(reading)
    return dedupe(out)


# "Orders under 50 are samples; exclude them from here on": the bound names the rows left out
_EXCLUDE_THEM = re.compile(
    r"\b(?:exclud\w*|leav\w*|set\w*|drop\w*|remov\w*|discard\w*|ignor\w*|omit\w*)\s+(?:them|those|these|it)\b",
    re.IGNORECASE,
)


def excluded_after(question: str, text: str) -> bool:
    """The sentence stating the bound `text`, or the one right after it, goes on to leave its rows
    out ("...; exclude them", "Patients followed for less than 30 days tell us little. For
    everything after this, drop them"): which rows the turn keeps is then said by that
    instruction, not by the bound; it abstains."""
    at = question.find(text)
    if at < 0:
        return False
    ends = list(re.finditer(r"(?<!\d)[.?!](?=\s|$)", question[at + len(text) :]))
    stop = ends[1].start() if len(ends) > 1 else len(question)
    rest = question[at + len(text) : at + len(text) + stop]
    return bool(_EXCLUDE_THEM.search(rest))


def answer_fields(question: str) -> list[str]:
    """The answer fields a question names in backticks (a `{...}` template's keys aside)."""
    return [f for f in _FIELDS.findall(re.sub(r"\{[^}]*\}", "", question))]


def _one_use(read: list[Requirement]) -> list[Requirement]:
    """A clause's requirements without a category scope whose values are words of a statistic the
    same clause asks ("their average kerb weight" beside the rating 'average', "their mean
    Conservative share" beside the party 'Conservative'): one word read twice is two readings, and the
    statistic's is the one the clause's shape gives."""
    stated = [r.text.lower() for r in read if r.kind is Kind.AGGREGATION]
    return [
        r
        for r in read
        if not (
            r.kind is Kind.SCOPE
            and r.values
            and r.values != ["True"]
            and all(
                any(re.search(rf"(?<!\w){re.escape(str(v).lower())}(?!\w)", t) for t in stated)
                for v in r.values
            )
        )
    ]


def shares(clause: str, fields: list[str]) -> list[Requirement]:
    """ "What share of ... does each carrier have": the parts add up to the whole (not a ranking of shares)."""
    share = _SHARE.search(re.sub(r"\([^()]*\)", "", clause))
    if not share or _RANK.search(clause):
        return []
    share_fields = [f for f in fields if names_share(f)]
    return [
        Requirement(
            kind=Kind.SHARE,
            text=share.group(0),
            fields=share_fields[:1],
            percent=bool(re.search(r"percent|pct|%", clause + " ".join(share_fields))),
        )
    ]


def rounding(question: str, context: str) -> list[Requirement]:
    """The decimal places the question asks for, else the standing instruction's."""
    places = required_decimals(question)
    if places is None:
        places = required_decimals(context)
    if places is None:
        return []
    return [
        Requirement(
            kind=Kind.ROUNDING,
            text=f"{places} decimal places",
            decimals=places,
            source="question" if required_decimals(question) is not None else "context",
        )
    ]


def outputs(fields: list[str]) -> list[Requirement]:
    return (
        [Requirement(kind=Kind.OUTPUT, text="Report " + ", ".join(fields), fields=fields)] if fields else []
    )


# Requirements read from a phrase of the question are kept only when the clause segment holding
# them parses whole (every word is a lexicon word, a column, a value, a table or a number): "the
# clinic treats a patient as at risk when the BMI is at least 30" leaves "clinic", "treats",
# "patient", "risk" unbound, so its bound is not made a requirement of every row (it abstains).
# Which kinds: the rules marked `row_condition` (scope, comparison, not_null: what a misread
# turns into a filter).
# A period ends a segment unless it is a decimal point; after a number it ends one only before a
# new sentence ("at least 70. Flag that ..."), so "2.5" and "approx. 3" stay whole.
_SEGMENT_END = re.compile(r"[,;:()?!]|(?<!\d)\.(?=\s|$)|(?<=\d)\.(?=\s+[A-Z]|\s*$)|\bbut\b")
# Words of a comparator phrase that mean something else on their own ("Including the garden orders",
# "a short trip"): they parse only inside the phrase ("up to and including 8", "short of 45").
_PHRASE_ONLY = frozenset({"including", "excess", "equal", "short", "upward", "upwards"})
_COMPARATOR_PHRASES = re.compile(
    rf"\b(?:{LEXICON.pattern(p for c in LEXICON.comparators for p in c.phrases if ' ' in p)})\b",
    re.IGNORECASE,
)
_LEXICON_WORDS = (
    frozenset(
        w
        for group in (
            [p for c in LEXICON.comparators for p in c.phrases],
            LEXICON.statistics,
            LEXICON.descending,
            LEXICON.ascending,
            LEXICON.comparatives,
            LEXICON.units,
            LEXICON.arithmetic,
            LEXICON.share_words,
            LEXICON.group_markers,
            LEXICON.presence,
            LEXICON.year_spans,
            LEXICON.scope_markers,
        )
        for phrase in group
        for w in phrase.lower().split()
        if w not in _PHRASE_ONLY
    )
    | LEXICON.function_words
)
_STEMS = re.compile(
    rf"(?:{'|'.join([*LEXICON.exclusion, *LEXICON.restoration, *LEXICON.join_verbs, *(v for v, _ in LEXICON.exclusion_frames), *(p for _, p in LEXICON.exclusion_frames)])})",
    re.IGNORECASE,
)


def _segment(text: str, part: str) -> str:
    """The comma/colon/parenthesis-delimited segment of `text` that holds `part` (all of `text`
    when `part` is not found verbatim). An occurrence in quotes is a label written out ("'up', 'down' or
    'flat'"): the first one outside quotes is meant, where there is one."""
    at = text.find(part)
    if at < 0:
        return text
    bare = [m.start() for m in re.finditer(re.escape(part), text) if not _in_quotes(text, m.start())]
    if bare:
        at = bare[0]
    starts = [m.end() for m in _SEGMENT_END.finditer(text, 0, at)]
    start = starts[-1] if starts else 0
    end_match = _SEGMENT_END.search(text, at + len(part))
    return text[start : end_match.start() if end_match else len(text)]


def parses_whole(text: str, req: Requirement, vocab: Vocabulary, tables: list[str] | None) -> bool:
    """The condition part of the segment of `text` that states `req` binds word for word (lexicon,
    columns, values, tables, numbers): only then is a row condition read from it."""
    segment = _IN_FORCE.sub(" ", _segment(text, req.text))  # "under the present rule": the rule in force
    if is_sign(req):
        segment = segment.replace(req.text, " ")  # the sign word is the bound's own word
    return not unbound_words(condition_part(segment, req.text), vocab, tables)


def unbound_words(segment: str, vocab: Vocabulary, tables: list[str] | None = None) -> list[str]:
    """Words of `segment` that bind to nothing: not a lexicon or function word, not a token of a
    column, a word of a category value or a table name, not a number. Empty: the segment parses whole."""
    columns = vocab.columns()  # every table the run has seen: a word may name a column read earlier
    col_tokens = list(dict.fromkeys(t for c in columns for t in column_tokens(c)))
    values = vocab.all_values(tables)
    value_words = {w.lower() for v in values for w in re.findall(r"[A-Za-z]+", v)}
    # a codebook's labels name values of the data too ("the emergency admissions")
    value_words |= {
        w for book in vocab.codes.values() for label in book for w in re.findall(r"[a-z]+", label)
    }
    # so do the everyday words the scope reader takes for a value the data holds ("the girls": female)
    value_words |= {word.lower() for word, _, _ in _everyday_values(vocab, tables)}
    # a lower-case word value in the plural, as the scope reader takes it ("the betrayers"; not "the
    # Boeings" for 'BOEING', which the reader does not take)
    plural_values = {v for v in values if _PLURAL_VALUE.fullmatch(v)}
    described = {_stem(d) for d in vocab.described}
    names = {t for name in [*(tables or []), *vocab.tables] for t in column_tokens(name)}
    col_stems = {_stem(t) for t in col_tokens}
    name_stems = {_stem(n) for n in names}
    flag_words = {t for c in flag_columns(vocab, None) for t in column_tokens(c)}
    out: list[str] = []
    after_value = False  # "male birds", "benign cases": a plural noun right after a value names the rows
    after_column = False  # the word before names a column
    text = re.sub(r"`[^`]*`", " ", segment)  # a name in backticks is the turn's own field or table
    text = _COMPARATOR_PHRASES.sub(lambda m: " " * len(m.group(0)), text)
    text = text.replace("-", " ").replace("/", " / ")
    unit_left = 0  # words still to be read as the unit of the number just before them
    prev_end, prev_low = 0, ""
    for m in re.finditer(r"[A-Za-z][A-Za-z']*", text):
        token = m.group(0)
        low = token.lower().removesuffix("'s")
        stem = _stem(low)
        gap = text[prev_end : m.start()]
        if _NUMBER_BEFORE.search(gap):
            unit_left = 2  # "25 °C", "4,500 g", "100 mg/dl", "150 sit-ups": the number's unit
        elif not (gap.strip() in ("", "/") and unit_left):
            unit_left = 0
        unit = unit_left > 0 or prev_low == "per"  # "per capita", "per person": a rate's denominator
        if low not in LEXICON.scales:
            unit_left = max(unit_left - 1, 0)
        prev_end, prev_low = m.end(), low
        if (
            unit
            or low in _LEXICON_WORDS
            or stem in _LEXICON_STEMS
            or low in STOP
            or low in value_words
            or low.removesuffix("s") in plural_values  # "the betrayers", as `scopes` reads them
            or low in vocab.described  # the task's own words for a column ("gross investment")
            or stem in described  # ... in another number ("admissions" for "admission type")
            or low in names
            or stem in names
            or stem in name_stems  # "car" for the table `cars`, "airport" for `airports`
            or _STEMS.fullmatch(low)
            or stem in col_stems
            or any(matches_token(t, stem) for t in col_tokens)
            or (after_value and low.endswith("s"))
            # "a grassy score over 2": a noun for a column's values, right after the column's word
            or (low in LEXICON.measure_nouns and after_column)
        ):
            after_value = low in value_words or low in flag_words  # "the fit members", "heavy birds"
            after_column = any(matches_token(t, stem) for t in col_tokens)
            continue
        after_value = after_column = False
        out.append(token)
    return out


# The number right before a word (a unit follows it): "8,000 miles", "25 °C", "0.5% above".
_NUMBER_BEFORE = re.compile(r"(?<![A-Za-z])-?\d[\d,]*(?:\.\d+)?\s*%?\s*°?\s*$")


def condition_part(segment: str, part: str) -> str:
    """The part of a definition sentence that states the condition: in "The clinic calls a mass large
    when its mean radius is 15 or more" the frame before "when" (who calls, which rows, the term) is
    accounted for by its form, and only the condition must parse whole. Any other segment is returned
    as it is; so is one whose frame negates or names another version of the rule."""
    m = definition_frame(segment)
    if m is None or segment.find(part) < m.end():
        # "how many tastings had a grassy score over 2": the plural noun a count asks for names the
        # rows counted, accounted for by the form like a definition's frame
        head = _COUNT_HEAD.search(segment)
        if head is not None and segment.find(part) >= head.end():
            return segment[: head.start()] + " " + segment[head.end() :]
        return segment
    return segment[m.end() :]


def definition_frame(sentence: str) -> re.Match[str] | None:
    """The frame of a plain definition sentence (who defines, which rows, the term), or None: none
    there, or one that negates or names another version of the rule. The term defined is no word of
    another version ("counts a subject as old from 85 on")."""
    m = _DEFINITION_FRAME.search(sentence) or _DEFINITION_AS.search(sentence)
    if m is None:
        return None
    frame = sentence[: m.start("term")] + sentence[m.end("term") : m.end()]
    return None if _FRAME_OTHER.search(frame) else m


_COUNT_HEAD = re.compile(r"\bhow\s+many\s+[a-z]{3,}s\b", re.IGNORECASE)


# A frame that negates or points at another version of a rule ("the withdrawn rule calls ...",
# "would have counted ... if") is no plain definition: the whole segment must parse.
_FRAME_OTHER = re.compile(
    r"\b(?:not|never|no|would|could|withdraw\w*|dropped|old|previous\w*|original|earlier|former|before)\b",
    re.IGNORECASE,
)
_DEFINING_VERBS = r"(?:calls?|counts?|treats?|regards?|considers?|labels?|flags?|marks?|rates?|logs?|records?|classif(?:y|ies))"
_DEFINITION_FRAME = re.compile(
    r"^\s*(?:(?:from (?:now|here) on|henceforth),?\s+)?(?:[\w'-]+\s+){0,4}?"
    rf"(?:{_DEFINING_VERBS}|is|are)\s+"
    r"(?:[\w'-]+\s+){1,8}?(?:when|whenever|if)\b(?P<term>)"
    # "heavy spending is again anything over $1,000": the term, then what it covers
    r"|^\s*(?:[\w'-]+\s+){1,4}?(?:is|are|means?)\s+(?:again\s+|now\s+|still\s+)?(?:anything|everything|anyone)\b",
    re.IGNORECASE,
)
# "For the age analysis the study protocol counts a subject as old from 85 years on": who defines,
# which rows and the term (one word, right after "as"); the condition follows it
_DEFINITION_AS = re.compile(
    r"^\s*(?:for\s+(?:[\w'-]+\s+){1,4}?)?(?:[\w'-]+\s+){0,4}?"
    + _DEFINING_VERBS
    + r"\s+(?:[\w'-]+\s+){1,4}?as\s+(?P<term>[\w'-]+)\s",
    re.IGNORECASE,
)


def stem(word: str) -> str:
    """The crude stem the extractor matches words by (for binders that match the same way)."""
    return _stem(word)


def _stem(word: str) -> str:
    """A crude stem, enough to see "rated" in `rating` and "keeping" in "keep"."""
    low = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "al", "ly"):
        if low.endswith(suffix) and len(low) - len(suffix) >= 3 and not low.endswith("ss"):
            low = low[: -len(suffix)]
            break
    return low[:-1] if len(low) > 3 and low[-1] == low[-2] else low  # "kept"/"keep", "gett" -> "get"


def context_requirements(
    context: str, vocab: Vocabulary | None = None, tables: list[str] | None = None
) -> list[Requirement]:
    """Row conditions a turn's own context states as the rule from now on ("from now on a day counts
    as wet only when it had at least 1.0 mm of precipitation", "leave ... out of the scope", "go back
    to the original definition: ..."): bounds, recorded values, and exclusions of named values. A
    context clause that only describes the data states no requirement."""
    out: list[Requirement] = []
    for clause in clauses(context):
        if not re.search(
            r"\bfrom (?:now|here) on\b|\bhenceforth\b|\bdefinition\b|\bmeans\b|\bcounts? as\b",
            clause,
            re.IGNORECASE,
        ):
            continue
        term = _MEANS.search(clause)
        if (
            term is not None
            and vocab is not None
            and any(names_flag(term.group("term"), c) for c in flag_columns(vocab, None))
        ):
            continue  # "low-income again means a bracket of 8 or lower": the flag's rule, not the rows'
        out += [
            r.model_copy(update={"source": "context"})
            for r in comparisons(clause) + not_null(clause)
            if not _is_year_bound(r)
            # with the data's vocabulary, a rule is kept only when its clause parses whole, as in a question
            and (vocab is None or parses_whole(clause, r, vocab, tables))
        ]
    return out


# "so the desk goes back to the fixed one: low-income again means ...": the term before "means"
_MEANS = re.compile(
    r"(?:^|[:;]\s*)(?P<term>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,2}?)\s+(?:again\s+|now\s+|still\s+)?means\b"
)


def _is_year_bound(req: Requirement) -> bool:
    return req.subject == ["year"]


_ARITHMETIC_BEFORE = re.compile(
    rf"\b(?:{LEXICON.pattern(p for p in LEXICON.arithmetic if p.endswith(' by'))})$", re.IGNORECASE
)


_JOINING = re.compile(rf"\b(?:{'|'.join(LEXICON.join_verbs)})\b[^,;]*$", re.IGNORECASE)


def groupings(clause: str) -> list[Requirement]:
    out = []
    for m in _GROUP.finditer(clause):
        if _ARITHMETIC_BEFORE.search(clause[: m.start() + len(m.group(0).split()[0])]):
            continue  # "flavanoids divided by total phenols": an operator between quantities, not a grouping
        if m.group(0).lower().startswith("by") and _JOINING.search(clause[: m.start()]):
            continue  # "join it to `monthly` by date": the join's key, not a grouping of the result
        if m.group(0).lower().startswith("by") and _RANKED_BEFORE.search(clause[: m.start()]):
            continue  # "the bottom four quarters by long-term rate", "sorted by size": an order, not a grouping
        if m.group(0).lower().startswith("by") and _AGENT_BEFORE.search(clause[: m.start()]):
            continue  # "answers given by respondents with ...": who gave them, not a grouping
        keys = []
        for part in re.split(r"\s*(?:,|\band\b)\s*", m.group("keys")):
            words = [w for w in part.lower().split() if w]
            while words and words[-1] in _NOT_KEYS:  # "each source over the period": source
                words.pop()
            if words and words[0] not in _NOT_KEYS and not words[0].isdigit():
                keys.append(" ".join(words))
            elif not words or words[0] in _NOT_KEYS:
                break  # "for each year, how many ...": the question goes on
        if re.match(r"['’]s\b", clause[m.end() :]):
            continue  # "each country's total GDP": an attribute of every row, not a grouping of the result
        if re.search(r"\b(?:its|their|his|her)\b", m.group("keys"), re.IGNORECASE) or re.match(
            r"\s*(?:its|their|his|her)\b", clause[m.end() :], re.IGNORECASE
        ):
            continue  # "give each household its class": a value for every row, not a grouping
        named = _KEY_NAMED_AFTER.match(clause[m.end() :])
        if named and len(keys) == 1:  # "within each teaching method (the psi value)": the column named
            keys = [named.group("col").lower()]
        if keys and keys[0] in _KEY_KINDS and len(keys) == 1:
            continue  # "for every value of the prestige flag": read below
        if keys and not re.match(r"\s*(?:(?:at|more|less|over|under)\s+\d|\d)", clause[m.end() :]):
            out.append(Requirement(kind=Kind.GROUPING, text=m.group(0), keys=keys))
    for m in _GROUP_BY_THE.finditer(
        clause
    ):  # "split by the SOUTH code", "for every value of the prestige flag"
        words = [w for w in m.group("key").lower().split() if w not in _KEY_KINDS]
        if words and words[0] not in _NOT_KEYS:
            out.append(Requirement(kind=Kind.GROUPING, text=m.group(0), keys=[" ".join(words)]))
    for m in _GROUP_OWNED.finditer(clause):  # "summarise by the mother's age band"
        words = [w for w in m.group("key").lower().split() if w not in _NOT_KEYS]
        if (
            words
            and not _RANKED_BEFORE.search(clause[: m.start()])
            and not _JOINING.search(clause[: m.start()])
        ):
            out.append(Requirement(kind=Kind.GROUPING, text=m.group(0), keys=[" ".join(words)]))
    for m in _MOST_OF_THEM.finditer(clause):  # "which decade holds the most of them": counted per decade
        words = [w for w in m.group("noun").lower().split() if w not in _NOT_KEYS]
        if words:
            out.append(Requirement(kind=Kind.GROUPING, text=m.group(0), keys=[" ".join(words)]))
    for m in _GROUP_HYPHEN.finditer(clause):
        out.append(
            Requirement(
                kind=Kind.GROUPING, text=m.group(0), keys=[m.group("a").lower(), m.group("b").lower()]
            )
        )
    return out


def unqualified_keys(reqs: list[Requirement], reading: Reading) -> list[Requirement]:
    """Groupings whose one-word key the question never writes right after a column's name: "make
    `mpaa_tab` by rating" where the question says "an MPAA rating" names the `mpaa` rating, not the
    `rating` column, so such a key is two readings and nothing is read."""
    if reading.vocab is None:
        return reqs
    columns = {c.lower() for c in reading.vocab.columns(reading.tables)}
    out = []
    for req in reqs:
        if len(req.keys) == 1 and " " not in req.keys[0]:
            before = re.findall(
                rf"\b([\w-]+)\s+{re.escape(req.keys[0])}s?\b", reading.question, re.IGNORECASE
            )
            if any(w.lower() in columns and w.lower() != req.keys[0] for w in before):
                continue
        out.append(req)
    return out


# "the five most closed economies": "most" / "least" grades the adjective after it, whose side of the
# ranked quantity the words do not say (closed economies have the smallest trade share)
_GRADED = re.compile(r"\s+(?!(?:of|in|on|by|at|for|to|and|or|the|a|an)\b)[a-z][\w-]*", re.IGNORECASE)
# "(smallest share first)", "largest first": the order said outright, a noun or two between
_SAID_FIRST = re.compile(
    rf"\b(?P<dir>{_RANKS})\s+(?:[a-z][\w-]*\s+){{0,2}}?first\b|\bin\s+(?P<dir2>descending|ascending)\s+order\b",
    re.IGNORECASE,
)


def rankings(clause: str) -> list[Requirement]:
    m = _TOPK.search(clause)
    if m:
        k = m.group("k").lower()
        descending = m.group("dir").lower() in _DESC
        said = next((f for f in _SAID_FIRST.finditer(clause) if f.start() >= m.end()), None)
        if said is not None:
            # the order the clause says outright ("(smallest share first)") beats a graded adjective's;
            # two other directions that disagree are no reading
            first = (said.group("dir") or said.group("dir2")).lower()
            stated = first in _DESC or first == "descending"
            graded = m.group("dir").lower() in ("most", "least") and _GRADED.match(clause, m.end())
            if stated != descending and not graded:
                return []
            descending = stated
        return [
            Requirement(
                kind=Kind.ORDER,
                text=m.group(0),
                k=_WORDNUM.get(k) or int(k),
                descending=descending,
                subject=m.group("rest").split()[-3:],
            )
        ]
    m = _ARGMAX.search(clause)
    if m:
        word = (m.group("dir") or m.group("dir2")).lower()
        return [Requirement(kind=Kind.ORDER, text=m.group(0), k=1, descending=word in _DESC)]
    m = _FIRST.search(clause)
    if m:
        word = (m.group("dir") or m.group("dir2")).lower()
        return [
            Requirement(kind=Kind.ORDER, text=m.group(0), descending=word in _DESC or word == "descending")
        ]
    return []


# "every band", "all eleven labels", "each of the grades": the entries a kept-whole side lists
_EVERY = re.compile(
    r"\b(?:every|all(?:\s+(?:the|of\s+the))?|each\s+of\s+the)\s+(?:(?:one|two|three|four|five|six|seven|eight|"
    r"nine|ten|eleven|twelve|\d+)\s+)?(?P<noun>[a-z][a-z_]*)\b"
)
# ...that are to stay in the result, said right before ("keeping every band", "lists every band")
# or right after the entries ("every label is listed", "every company on the list is kept")
_KEEP_BEFORE = re.compile(r"\b(?:keep\w*|list\w*|includ\w*|retain\w*|show\w*|with)\s+$")
_KEEP_AFTER = re.compile(
    r"^\s+(?:[a-z]+\s+){0,3}?(?:is\s+|are\s+|be\s+)?(?:listed|kept|shown|included|stays|remains)\b"
    # "every label is kept", not "all crowded kept districts" (a kept set's rows named by a flag)
    r"(?!\s+(?!(?:and|or|even|too|as|in|on|at|with|though|when|if|but|also|there|here)\b)[a-z])"
)


def _kept_place(clause: str, low: str, noun: str) -> list[str]:
    """Where the clause says the kept entries are listed: the backticked table it put the list in
    ("Put the list in `countries` ..., keeping every maker on the list" -> [countries]), else the
    words of the place it names ("every tier of the marketing sheet" -> [marketing, sheet]; the
    binder keeps a place word only when it names a join side). Empty when it names no place."""
    m = next(
        (
            hit
            for at in re.finditer(rf"\b{re.escape(noun)}\b", low)
            if (hit := _PLACE_AFTER.match(low[at.start() :]))
        ),
        None,
    )
    if m is None:
        return []
    words = [w for w in (m.group("adj"), m.group("place")) if w and w not in _STOPS and w not in _VERBISH]
    for word in words:
        # "the list in `countries`", "the sheet as a table `tiers`": the place put in a named frame
        # ("the list contain no year of `post_korea`" names the other side)
        named = re.findall(
            rf"\bthe\s+{re.escape(word)}\b(?:\s+(?:is|was|in|as|into|called|named|a|an|the|new|data|frame|table))"
            r"{1,4}\s+`(\w+)`",
            clause,
            re.IGNORECASE,
        )
        if len(set(named)) == 1:
            return [named[0]]
    return words


_QUANTIFIERS = frozenset({"every", "each", "all", "any", "both", "either", "its", "their", "which", "what"})
_VERBISH = frozenset(
    {"is", "are", "be", "was", "were", "kept", "listed", "shown", "included", "even"}
    | {
        "have",
        "has",
        "had",
        "hold",
        "holds",
        "held",
        "get",
        "gets",
        "got",
        "contain",
        "contains",
        "see",
        "sees",
    }
    | {"saw", "show", "shows", "showed"}
)


# "every tier of the marketing sheet", "every plan in the codebook", "every cycle on the list": the
# entries of a named place, each to be in the result
_PLACE_AFTER = re.compile(
    r"^[a-z_]+\s+(?:on|in|of|from)\s+the\s+(?:(?P<adj>[a-z]+)\s+)?(?P<place>[a-z]+)\b(?!\s+(?:of|to)\b)"
)


def _kept_entries(low: str) -> str | None:
    """The noun naming the entries a clause keeps whole ("listing every grade even when no district
    falls in it" -> grade): quantified by every/all and with a keep verb right beside it. None when
    no noun, or more than one, is kept that way."""
    nouns = {
        m.group("noun")
        for m in _EVERY.finditer(low)
        if _KEEP_BEFORE.search(low[: m.start()])
        or _KEEP_AFTER.match(low[m.end() :])
        or (m.group(0).startswith("every") and _PLACE_AFTER.match(low[m.start("noun") :]))
    }
    if not nouns and _ZERO_FOR_NONE.search(low):
        # "in each service tier of the office's list, 0 for a tier with none", "for each chancellor on
        # the list ..., listing one with no quarter with 0": each entry of a place, zeros written out
        nouns = {m.group("noun") for m in _EACH_OF_PLACE.finditer(low)}
        nouns |= {m.group("noun") for m in _ONE_BY_ONE.finditer(low)}  # "era by era"
        if not nouns:  # "For every region, ... (0 for a region with none)": the entries it counts over
            each = {m.group("noun") for m in _FOR_EACH.finditer(low)}
            named = {m.group("noun") for m in _ZERO_NOUN.finditer(low)}
            nouns = each if len(each) == 1 and (not named or named == each) else set()
    if not nouns:
        # "how many bands on the list hold no long strike": counting the entries with none needs each one
        nouns = {m.group("noun") for m in _NONE_OF_PLACE.finditer(low)}
    nouns -= _STOPS | {"rows", "row", "data", "cases", "records", "values"}
    if not nouns and _JOINING_ANY.search(low):
        # "attach ... to it, keeping firms the file lacks", "keeping a member even when the table does
        # not cover it": a keep verb in a clause that joins, and words saying the other side may lack some
        nouns = (
            {m.group("noun") for m in _KEEP_NOUN.finditer(low) if _OTHER_LACKS.search(low[m.end() :])}
            - _STOPS
            - {"rows", "row", "data", "cases", "records", "values", "only", "it", "them", "those"}
        )
    return nouns.pop() if len(nouns) == 1 else None


_EACH_OF_PLACE = re.compile(
    r"\b(?:each|every)\s+(?:[a-z]+\s+)?(?P<noun>[a-z][a-z_]*)\s+(?:on|in|of|from)\s+(?:the|this|that|our|their)\b"
)
_NONE_OF_PLACE = re.compile(
    r"\bhow\s+many\s+(?:[a-z]+\s+)?(?P<noun>[a-z][a-z_]*)\s+(?:(?:on|in|of|from)\s+(?:the|this|that|our|their)\s+"
    r"[a-z\s]{0,30}?)?\b(?:ha(?:ve|s|d)|holds?|held|gets?|got|contains?|see|sees|saw|shows?|showed|are\s+left\s+with|"
    r"were\s+left\s+with)\s+(?:no|none\s+of)\b"
)
# "for each region", "so that every phase reports ...": the entries a count is written out over
_FOR_EACH = re.compile(r"\b(?:for\s+|so\s+that\s+)(?:each|every)\s+(?P<noun>[a-z][a-z_]*)\b")
_ZERO_NOUN = re.compile(
    r"\b(?:for|where|when|if)\s+(?:a|an|any|each|every)\s+(?P<noun>[a-z][a-z_]*)\s+(?:with|without|that|which)\b"
)
_ONE_BY_ONE = re.compile(r"\b(?P<noun>[a-z]{3,})\s+by\s+(?P=noun)\b")
# The count or total of an entry nobody matches is written out as zero
_ZERO_FOR_NONE = re.compile(
    r"\b(?:0|zero)\s+(?:\w+\s+){0,2}?(?:for|where|when|if)\b[^;.]{0,40}\b(?:none|no|nobody|nothing|without|not)\b"
    r"|\b(?:with|as|at|counts?|counting)\s+(?:a\s+)?(?:0|zero)\b(?=\s*(?:[,.;:)?]|$|and\b))"
    r"|\b(?:showing|listing|giving|with|counting)\s+(?:a\s+)?(?:0|zero)\s+\w+\s+for\b"
    r"|\b(?:with|without)\s+(?:no|any)\s+\w+\s+(?:shows?|gets?|has|counts?|reads?)\s+(?:a\s+)?(?:0|zero)\b"
)
_JOINING_ANY = re.compile(rf"\b(?:{'|'.join(LEXICON.join_verbs)}|combin\w*)", re.IGNORECASE)
# A keep verb and the noun of what it keeps, and words saying the other side may lack some of them.
_KEEP_NOUN = re.compile(
    r"\b(?:keep(?:ing|s)?|retain(?:ing|s)?)\s+(?:(?:a|an|the|any|each)\s+)?(?P<noun>[a-z][a-z_]*)\b"
)
_ABSENCE = (
    r"\b(?:lacks?|lacking|missing|absent|even\s+(?:when|if|though)|without|with\s+no|"
    r"does\s+not\s+(?:cover|have|include|list)|do\s+not\s+(?:cover|have|include|list)|no\s+(?:data|figures|match\w*))\b"
)
# ...where the other side lacks them ("the file lacks", "even when the table does not cover it"); "the
# years without a crisis" describes the kept rows themselves, not the other side, and is left out
_OTHER_LACKS = re.compile(
    r"^[^;.]*?\b(?:lacks?|lacking|missing|absent|even\s+(?:when|if|though)|"
    r"does\s+not\s+(?:cover|have|include|list)|do\s+not\s+(?:cover|have|include|list)|no\s+(?:data|figures))\b"
)


_ALIAS = re.compile(
    r"\b(?:put|keep|store|save|hold|load|place|type|write|record|collect|gather|copy)\w*\s+"
    r"(?:the|this|that|these|those|their|its|our|a|an)\s+(?P<noun>[a-z]+(?:[\s-]+[a-z]+){0,2}?)\s+"
    r"(?:in|into|as)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:(?:data\s*)?frame|table|list|variable)?\s*"
    r"(?:called\s+|named\s+)?`(?P<name>[A-Za-z_]\w*)`",
    re.IGNORECASE,
)


# "Make a frame `pms` (pm, from_yr) from that list": the noun the named frame is made from
_MADE_FROM = re.compile(
    r"\b(?:make|build|create|set\s+up|turn)\w*\s+(?:a|an|the)?\s*(?:new\s+)?(?:(?:data\s*)?frame|table|list)\s+"
    r"`(?P<name>[A-Za-z_]\w*)`[^.;`]{0,80}?\b(?:from|out\s+of|of)\s+(?:that|the|this|those|these)\s+(?P<noun>[a-z]+)\b",
    re.IGNORECASE,
)


def aliases(text: str) -> dict[str, str]:
    """Nouns a question puts in a named frame or table: "Put the key in a frame `jobs`" -> {"key":
    "jobs"}, "store the chancellor list as `chancellors`" -> {"list": ..., "chancellor list": ...}.
    The last word of the noun and the whole noun both name it."""
    out: dict[str, str] = {}
    for m in _ALIAS.finditer(text):
        words = [w for w in re.split(r"[\s-]+", m.group("noun").lower()) if w]
        if not words or words[-1] in _STOPS or words[-1] in ("rows", "result", "results", "answer"):
            continue
        out[words[-1]] = m.group("name").lower()
        out[" ".join(words)] = m.group("name").lower()
    for m in _MADE_FROM.finditer(text):
        if m.group("noun").lower() not in _STOPS:
            out.setdefault(m.group("noun").lower(), m.group("name").lower())
    return out


def says_absent(text: str) -> bool:
    """The text says some entries may be missing from the other side ("even when no customer has
    it", "the file lacks", "does not cover")."""
    return re.search(_ABSENCE, text, re.IGNORECASE) is not None


def joins(clause: str) -> list[Requirement]:
    low = clause.lower()
    kept = _kept_entries(low)
    how = None
    if re.search(
        r"unmatched|\b(?:keep\w*|includ\w*|retain\w*|even)\b[^;]*\b(?:without|with no|lacking)\b"
        r"|\b(?:keep\w*|includ\w*|retain\w*)\s+(?:all|every|each)\b"
        r"|\bso that every \w+ is labell?ed|\bevery \w+ (?:stays|remains|is kept)",
        low,
    ):
        how = "left"
    elif re.search(
        r"present in both|in both\b|only (?:the )?match\w*|matched rows only|\bdrop\w*\b[^;]*\bwithout (?:a )?match"
        r"|\bkeep(?:ing|s)? only\b|\bwhere both\b",
        low,
    ):
        how = "inner"
    keys = [k for k in re.findall(r"\bon\s+(?:the\s+)?([a-z_][\w]*)", low) if k not in _QUANTIFIERS]
    if kept and how != "inner":
        # the noun must later name one side of a join the code makes (bind_shape.join); without
        # a join in the code the requirement stays unverified, whatever the verb
        subject = [kept, *_kept_place(clause, low, kept)]
        keys = [k for k in keys if k not in subject]  # "every cycle on the list": the list is no key
        return [Requirement(kind=Kind.JOIN, text=clause[:120], how="left", keys=keys[:2], subject=subject)]
    if how is None or not re.search(rf"\b(?:{'|'.join(LEXICON.join_verbs)}|combin\w*)", low):
        return []
    return [Requirement(kind=Kind.JOIN, text=clause[:120], how=how, keys=keys[:2])]


def definition_term(question: str) -> str | None:
    """The word a definition sentence defines ('windy', 'fast grower'), or None."""
    found = _defining(question)
    return found[0] if found else None


def definition_clause(question: str) -> str | None:
    """The sentence of `question` that defines a term ("Call a respondent low-wage when ..."), or None."""
    found = _defining(question)
    return found[1] if found else None


def _defining(question: str) -> tuple[str, str] | None:
    for clause in clauses(question):
        m = _DEFINITION.search(re.sub(r"^.*?:\s*", "", clause.strip()) if ":" in clause else clause.strip())
        if m:
            term = m.group("term") or m.group("term2") or m.group("term3") or m.group("term4") or ""
            return (term.lower(), clause) if term else None
    return None


def dedupe(reqs: list[Requirement]) -> list[Requirement]:
    seen: set[str] = set()
    out = []
    for r in reqs:
        key = r.model_dump_json(exclude={"text", "source"})
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


_LEXICON_STEMS = frozenset(_stem(w) for w in _LEXICON_WORDS)
