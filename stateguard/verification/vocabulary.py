"""The data's vocabulary (tables, columns, category values) and matching task words to columns.

    probe = vocabulary_probe(["penguins", "df"], connection="con")   # run with the run_probe tool
    vocab = Vocabulary.from_probe(stdout)                             # columns, kinds, small value sets
    resolve_column(["bill", "length"], vocab.columns())               # ['bill_length_mm']

Category values let the extractor see that "the Gentoo penguins" names a value of `species`;
column matching lets "departure delay" find `dep_delay` and "life expectancy" find `lifeExp`
(each column word must prefix a task word, units like `mm` or `pct` may stay unmatched).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.lexicon import LEXICON

MAX_VALUES = 60
UNITS = {
    "mm",
    "cm",
    "m",
    "km",
    "g",
    "kg",
    "lb",
    "min",
    "mins",
    "s",
    "sec",
    "h",
    "hr",
    "pct",
    "usd",
    "mph",
    "n",
    "num",
}
# words that name nothing in a clause ("is again anything over $1,000")
FILLERS = {"again", "anything", "anyone", "anybody"}
STOP = FILLERS | {
    "the",
    "a",
    "an",
    "of",
    "and",
    "or",
    "with",
    "for",
    "in",
    "on",
    "at",
    "to",
    "by",
    "per",
    "each",
    "its",
    "their",
    "is",
    "are",
    "be",
    "that",
    "which",
    "those",
    "these",
    "this",
    "recorded",
    "both",
    "measurement",
    "measurements",
    "value",
    "values",
    "known",
    "non",
    "missing",
    "have",
    "has",
    "whose",
    "all",
    "rows",
    "records",
}


class ColumnInfo(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str = Field(description="num, text, date, or other")
    values: list[str] = Field(
        default_factory=list, description=f"Distinct text values (only when at most {MAX_VALUES})."
    )
    low: float | None = None
    high: float | None = None


# one entry of a codebook: a code, a joining word or none, and its label up to the entry's end
# ("1 placebo", "0 for women", "2 = less than primary school")
_CODE_ENTRY = re.compile(
    r"(?:^|[,;:]|\bor\b|\band\b)\s*(?P<code>-?\d+)\s*(?:(?:=|for|is|means)\s+)?"
    r"(?P<label>[A-Za-z][A-Za-z' -]*?)\s*(?=[,;]|\bor\b|\band\b|$)"
)
# labels that are the sentence's own words, or the start of a clause rather than a value's name
_NO_LABEL = {"none", "no", "yes", "all", "any", "other", "others", "missing", "unknown", "else"}
_CLAUSE_START = {"if", "when", "where", "unless", "meaning", "otherwise", "the", "a", "an"}


# a text code in quotes and its label: '"G" for the Guard corps', '"self" when the respondent is'
_QUOTED_ENTRY = re.compile(
    r"[\"“](?P<code>[^\"”]{1,12})[\"”]\s+(?:for|is|=|means)\s+(?:the\s+|a\s+|an\s+)?"
    r"(?P<label>[A-Za-z][A-Za-z' -]*?)\s*(?=[,;.)]|\bor\b|\band\b|$)"
)


def quoted_codebook(text: str, values: Iterable[str]) -> dict[str, str]:
    """Labels of a text column's values said in quotes ('corps ("G" for the Guard corps, ...)'): each
    label, lower-cased, and the value as the data writes it; only values the column holds, labels of
    four words at most that start no clause; empty when two entries share a label or a value."""
    held = set(values)
    out: dict[str, str] = {}
    for m in _QUOTED_ENTRY.finditer(text):
        label = " ".join(m.group("label").lower().split())
        words = label.split()
        if m.group("code") not in held or not words or len(words) > 4 or words[0] in _CLAUSE_START:
            continue
        if label in out or m.group("code") in out.values():
            return {}
        out[label] = m.group("code")
    return out


def codebook(text: str) -> dict[str, str]:
    """A codebook in a column's description ("the arm: 1 placebo, 2 thiotepa"; "1 for men, 0 for
    women"): each label, lower-cased, and its code. Two entries at least, labels of four words at most
    that start no clause and are not the sentence's own words ("0 none"); empty otherwise, and empty
    when two entries share a label or a code (a range "1 to 5" is no codebook)."""
    out: dict[str, str] = {}
    for m in _CODE_ENTRY.finditer(text):
        label = " ".join(m.group("label").lower().split())
        words = label.split()
        if not words or len(words) > 4 or words[0] in _CLAUSE_START or label in _NO_LABEL:
            continue
        if label in out or m.group("code") in out.values():
            return {}
        out[label] = m.group("code")
    return out if len(out) >= 2 else {}


_SHORT = 120  # a column's description of this many characters at most is read whole

# the words that make a description an identifier: "the firm's id", "the driver's study number" name the
# firm and the driver, whose rows they number
_ID_HEADS = frozenset({"id", "ids", "number", "code", "index", "name", "label", "identifier"})


def owners_of(phrase: str) -> list[str]:
    """The possessive owners a column's description names as the owner of an attribute: "the map's
    year" is a year a map has, and "map" does not name the column as a group; "the firm's id" numbers
    the firms, so "firm" does (no owner is returned)."""
    out: list[str] = []
    for m in re.finditer(r"([A-Za-z]+)'s\b", phrase):
        after = re.findall(r"[A-Za-z]+", phrase[m.end() :].lower())
        if not _ID_HEADS & set(after):
            out.append(m.group(1).lower())
    return out


class Vocabulary(BaseModel):
    model_config = ConfigDict(frozen=True)
    tables: dict[str, dict[str, ColumnInfo]] = Field(default_factory=dict)
    described: frozenset[str] = Field(
        default=frozenset(),
        description="Words the task's own text uses to describe a real column ('invest (gross "
        "investment)'): they bind like the column's own tokens.",
    )
    column_words: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="The same words by the column they describe ('sp (colour form, ...)' -> sp: colour, "
        "form): a phrase they cover names that column.",
    )
    owners: dict[str, tuple[str, ...]] = Field(
        default_factory=dict,
        description="Of a column's words, the possessive owners of an attribute ('year (the map's "
        "year)' -> year: map): words of the task, but a group phrase saying one of them names the "
        "owner, not the column.",
    )
    codes: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="A numeric column's codebook as the task's text gives it ('rx (the arm: 1 placebo, "
        "2 thiotepa)' -> rx: placebo -> 1, thiotepa -> 2): the label names the coded value.",
    )

    @classmethod
    def from_probe(cls, stdout: str) -> Vocabulary:
        for line in reversed(stdout.strip().splitlines()):
            if line.startswith("{"):
                try:
                    return cls.model_validate({"tables": json.loads(line)})
                except ValueError:
                    break
        return cls()

    def merged(self, other: Vocabulary) -> Vocabulary:
        return Vocabulary(
            tables={**self.tables, **other.tables},
            described=self.described | other.described,
            column_words={**self.column_words, **other.column_words},
            owners={**self.owners, **other.owners},
            codes={**self.codes, **other.codes},
        )

    def group_words(self) -> dict[str, tuple[str, ...]]:
        """`column_words` without the owners of attributes: the words a group phrase may name a
        column by ("their own map" is not `year (the map's year)`)."""
        out = {
            c: tuple(w for w in ws if w not in self.owners.get(c, ())) for c, ws in self.column_words.items()
        }
        return {c: ws for c, ws in out.items() if ws}

    def with_descriptions(self, text: str) -> Vocabulary:
        """The vocabulary with the words `text` (the task's context) uses to describe its columns:
        "invest (gross investment)" or "zymotic disease (`disease`)" -- a known column beside a
        parenthesis, the description's first phrase (up to a comma or semicolon, 10 words at most)."""
        found: set[str] = set()
        by_column: dict[str, tuple[str, ...]] = {}
        books: dict[str, dict[str, str]] = {}
        owned: dict[str, tuple[str, ...]] = {}
        for column in self.columns():
            # `hos_cat` in code for R's `hos.cat` in the text (a dot a frame's column cannot keep)
            name = re.escape(column).replace("_", "[._]")
            # a frame's lower-cased column described by its R name ("Expt (the experiment, 1 to 5)" for
            # `expt`): the text's other spelling, where the column's own is described nowhere
            if not re.search(rf"(?<![\w`]){name}`?\s*\(", text):
                spelled = {
                    m.group(0)
                    for m in re.finditer(rf"(?<![\w`])(?i:{name})(?=`?\s*\()", text)
                    if m.group(0) != m.group(0).lower()
                }
                if len(spelled) == 1:
                    name = re.escape(spelled.pop())
            own: list[str] = []
            for m in re.finditer(rf"(?<![\w`]){name}`?\s*\(([^()]{{1,300}})\)", text):
                # "south76 and smsa76 (yes/no: ...)" describes both; in a list ("team, lg (league
                # code), g (games)") the parenthesis is the last name's own
                # "travel1 to travel3 (one indicator per band)" describes the whole family, no one of it
                # (a dotted R name before it, "state.name and gorevote (...)", is not the column `name`)
                before = re.search(r"(?<![.\w])`?(\w+)`?\s*\b(?:and|to)\s*`?$", text[: m.start()])
                shared = before is not None and before.group(1) in self.columns()
                # the first phrase whole (10 words at most): "Year (the calendar year in which the season
                # started, ...)" speaks of the season too, as `Round (matchday of the season)` does
                first = re.split(r"[,;]", m.group(1))[0]
                # a long parenthesis is read by its first phrase only when that names the column
                # ("educ (education level, 1 no formal education, ...)"), not one of its values
                # ("censor4 (1 when the spell ended in a full-time job, ..., or was still running ...)")
                long_code = len(m.group(1)) > _SHORT and re.match(r"\s*-?\d", first) is not None
                said = [] if long_code else re.findall(r"[A-Za-z]+", first)[:10]
                # a codebook in the parenthesis ("gender (1 male, 2 female)"): every code's words, the
                # values the column stands for
                codes = re.findall(
                    r"(?:^|[,;:]|\bor\b|\band\b)\s*-?\d+\s+([A-Za-z]+(?:\s+[A-Za-z]+){0,2})", m.group(1)
                )
                if len(codes) >= 2:
                    said += [w for c in codes for w in c.split() if w not in said]
                found.update(said)
                if not shared:  # "south76 and smsa76 (yes/no: ...)" describes both: no one column's
                    own += said
                    if owners := owners_of(first):
                        owned[column] = tuple(dict.fromkeys([*owned.get(column, ()), *owners]))
                    book = codebook(m.group(1))
                    if not (book and self._codes_fit(column, book)):
                        book = quoted_codebook(m.group(1), self._text_values(column))
                    if book:
                        books[column] = book
            for m in re.finditer(rf"([A-Za-z][A-Za-z' -]{{0,60}}?)\s*\(\s*`?{name}`?\s*\)", text):
                said = re.findall(r"[A-Za-z]+", m.group(1))[-3:]
                found.update(said)
                own += said
            # "Columns: ID (patient code), V1 clump thickness, V2 uniformity of cell size, ...": in a
            # list of columns, the words right after a name up to the next comma describe it
            for listing in re.finditer(r"\bColumns:\s*(?P<list>[^.]*)", text):
                bare = re.sub(r"\([^()]*\)", "(", listing.group("list"))  # a parenthesis is read above
                for m in re.finditer(
                    rf"(?:^|,\s*|\band\s+)`?{name}`?\s+(?!(?:and|or|the)\b)"
                    rf"(?P<said>[A-Za-z][A-Za-z' -]{{0,60}}?)\s*(?=,|\(|$)",
                    bare,
                ):
                    said = re.findall(r"[A-Za-z]+", m.group("said"))[:6]
                    known = {c.lower() for c in self.columns()}
                    if any(w.lower() in known for w in said):
                        continue  # "Dems and OneNation (...)": more names of the list, not words for one
                    found.update(said)
                    own += said
            kept = tuple(dict.fromkeys(w.lower() for w in own if w.lower() not in STOP and len(w) > 2))
            if kept:
                by_column[column] = kept
        words = frozenset(w.lower() for w in found if w.lower() not in STOP and len(w) > 2)
        if (
            words <= self.described
            and all(self.column_words.get(c) == w for c, w in by_column.items())
            and all(self.codes.get(c) == b for c, b in books.items())
            and all(self.owners.get(c) == o for c, o in owned.items())
        ):
            return self
        return Vocabulary(
            tables=self.tables,
            described=self.described | words,
            column_words={**self.column_words, **by_column},
            owners={**self.owners, **owned},
            codes={**self.codes, **books},
        )

    def infos(self, column: str) -> list[ColumnInfo]:
        """What every table holding the column knows of it."""
        return [t[column] for t in self.tables.values() if column in t]

    def _text_values(self, column: str) -> list[str]:
        """The values of a text column in every table that holds it (empty if one is not text)."""
        infos = self.infos(column)
        if not infos or any(i.kind != "text" for i in infos):
            return []
        return [v for i in infos for v in i.values]

    def _codes_fit(self, column: str, book: dict[str, str]) -> bool:
        """Is the column numeric in every table that holds it, with two of the book's codes at least in
        its range? "period (59 patients, 4 periods each)" is prose about the column, no codebook of it."""
        infos = self.infos(column)
        if not infos or any(i.kind != "num" for i in infos):
            return False
        inside = [
            c
            for c in book.values()
            if all(i.low is None or i.high is None or i.low <= float(c) <= i.high for i in infos)
        ]
        return len(inside) >= 2

    def columns(self, tables: Iterable[str] | None = None) -> list[str]:
        names = self.tables if tables is None else [t for t in tables if t in self.tables]
        return list(dict.fromkeys(c for t in names for c in self.tables[t]))

    def column_values(self, tables: Iterable[str] | None = None) -> dict[str, tuple[str, ...]]:
        """Each text column's distinct values (the first table holding the column), in the given tables."""
        names = self.tables if tables is None else [t for t in tables if t in self.tables]
        out: dict[str, tuple[str, ...]] = {}
        for t in names:
            for c, info in self.tables[t].items():
                if c not in out and info.values:
                    out[c] = tuple(info.values)
        return out

    def value_columns(self, value: str, tables: Iterable[str] | None = None) -> list[str]:
        """Text columns holding `value` (case-insensitive), in the given tables."""
        low = value.lower()
        names = self.tables if tables is None else [t for t in tables if t in self.tables]
        return list(
            dict.fromkeys(
                c
                for t in names
                for c, info in self.tables[t].items()
                if any(v.lower() == low for v in info.values)
            )
        )

    def all_values(self, tables: Iterable[str] | None = None) -> dict[str, list[str]]:
        """value (as written in the data) -> columns holding it."""
        out: dict[str, list[str]] = {}
        names = self.tables if tables is None else [t for t in tables if t in self.tables]
        for t in names:
            for col, info in self.tables[t].items():
                for v in info.values:
                    if col not in out.setdefault(v, []):
                        out[v].append(col)
        return out


# Words a subject may carry that name no column: presence words and the statistics themselves.
_IGNORABLE = {*LEXICON.presence, *LEXICON.statistics, "number", "count"}


def column_tokens(name: str) -> list[str]:
    """`lifeExp` -> [life, exp]; `flipper_length_mm` -> [flipper, length, mm]; `posit86` -> [posit, 86]."""
    spaced = (
        re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Za-z])(?=\d)", " ", name).replace("_", " ").replace("-", " ")
    )
    return [t.lower() for t in spaced.split() if t]


# `month_no` for "month number", only where the words spell a whole name out: as a general short form
# "no" would bind "the number of visits" to a `visit_no`
_NUMBER_SHORT = {"no": "number", "num": "number", "nr": "number"}


def spelled_by(said: list[str], columns: Iterable[str]) -> list[str]:
    """Columns of two or more name tokens that the words said spell out one by one, in order: each
    word is its token, begins with it (three letters or more) or is the word it stands for, so "latitude band" names `lat_band`
    and "longitude band" `lon_band`. Numbered names and other counts of words name nothing."""
    low = [w.lower() for w in said]
    out = []
    for c in dict.fromkeys(columns):
        tokens = column_tokens(c)
        if len(tokens) < 2 or len(tokens) != len(low) or any(t.isdigit() for t in tokens):
            continue
        if all(
            w == t
            or (len(t) >= 3 and w.startswith(t))
            or (LEXICON.abbreviations.get(t) or _NUMBER_SHORT.get(t)) == w
            for w, t in zip(low, tokens, strict=True)
        ):
            out.append(c)
    return out


def words(text: str) -> list[str]:
    out = []
    for w in re.findall(r"[A-Za-z][A-Za-z-]*", text.lower()):
        for part in w.split("-"):
            if part and part not in STOP:
                out.append(
                    part[:-1] if len(part) > 3 and part.endswith("s") and not part.endswith("ss") else part
                )
    return out


def matches_token(column_token: str, word: str) -> bool:
    """Does a (stemmed) task word name this token of a column name (prefix either way)?"""
    return _matches(column_token, [word])


# words that make a field name the group holding an extreme value, not the value itself
_RANKED = {
    "top",
    "largest",
    "larger",
    "greater",
    "greatest",
    "higher",
    "highest",
    "biggest",
    "bigger",
    "most",
    "lowest",
    "lower",
    "smallest",
    "smaller",
    "least",
    "fewest",
    "max",
    "min",
    "argmax",
    "argmin",
}


def names_share(field: str, rates: bool = False) -> bool:
    """Is an answer field named as a share (`pct_low_light`, `share_frugal`, `prop_female`)? With
    `rates`, a rate or a ratio counts too (`rate_under`)."""
    words = r"share|pct|percent|frac|prop" + (r"|rate|ratio" if rates else "")
    parts = [p.lower() for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", field) if p]
    if parts and not re.match(rf"(?:{words})", parts[0]) and any(p in _RANKED for p in parts):
        return False  # `year_top_deadly_share`, `sex_greater_high_share`: the group with the extreme share
    # a word of the name that is one of them, or starts with one as a whole word does (`pct_low`,
    # `fraction`, `proportion_women`); not a column's short form it begins (`n_pctymle_07`)
    return any(
        re.fullmatch(rf"(?:{words})(?:s|age|ages|ion|ions|tion|tions|ortion|ortions|ent|entage)?", part)
        for part in parts
    )


def token_run(named: list[str], tokens: list[str]) -> list[int]:
    """Where `tokens` stand as one run inside `named` (`column_tokens` of a name): [1] for [frugal] in
    [n, frugal, cars]; [] when they do not."""
    n = len(tokens)
    return [i for i in range(len(named) - n + 1) if n and named[i : i + n] == tokens]


def flag_words(column: str) -> str:
    """A pattern for the words a text names a flag column by: its tokens in order, each starting a word
    (spaces or hyphens between them), a word going on past a token of four or more letters by at most five
    letters ("short survivors" for `short_surv`, "large-handed" for `large_hand`) and a shorter token only
    by a plural ending ("fits", not "fitness"); the last word may go on with a hyphen ("under-report" for
    `under`). Whole words only; "" for a name with no tokens."""
    tokens = column_tokens(column)
    if not tokens:
        return ""
    parts = [
        re.escape(t) + ("" if nxt.isdigit() else r"[a-z]{0,5}" if len(t) >= 4 else r"(?:e?s)?")
        for t, nxt in zip(tokens, [*tokens[1:], ""], strict=True)
    ]
    # a number the name runs on into is said with it or apart ("e4 carriers" for `e4`)
    seps = [r"[\s-]*" if t.isdigit() else r"[\s-]+" for t in tokens[1:]]
    return (
        r"\b"
        + parts[0]
        + "".join(sep + part for sep, part in zip(seps, parts[1:], strict=True))
        + r"(?:-[a-z]+)?\b"
    )


def names_flag(said: str, column: str) -> bool:
    """Do the said words, all of them, name the flag column (`flag_words`)?"""
    pattern = flag_words(column)
    return bool(pattern) and re.fullmatch(pattern, said.strip(), re.IGNORECASE) is not None


def initials_of(token: str, raw: list[str]) -> bool:
    """`pm` for "prime minister": a short column name (2-4 letters) spelled by the first letters of
    as many consecutive words of the phrase, each of at least three letters."""
    n = len(token)
    if not (2 <= n <= 4 and token.isalpha()):
        return False
    return any(
        all(len(w) >= 3 for w in raw[i : i + n]) and "".join(w[0] for w in raw[i : i + n]) == token
        for i in range(len(raw) - n + 1)
    )


def _matches(token: str, phrase: list[str], raw: list[str] | None = None, loose: bool = True) -> bool:
    raw = raw or phrase  # "GDP per capita" -> "percapita" also counts for `gdpPercap`
    joined = ["".join(raw[i : i + 2]) for i in range(len(raw) - 1)]
    full = LEXICON.abbreviations.get(token)
    if full is not None and any(w == full or (len(w) >= 4 and full.startswith(w)) for w in phrase):
        return True  # `yr` for "year", `qtr` for "quarter"
    if initials_of(token, raw):
        return True  # `pm` for "prime minister"
    if loose and _clipped_pair(token, raw):
        return True  # `faminc` for "family income"
    if (
        loose
        and len(token) >= 3
        and any(
            len(w) > len(token) and w[0] == token[0] and re.sub(r"(?<!^)[aeiou]", "", w) == token for w in raw
        )
    ):
        return True  # `hlth` for "health": the word without its vowels
    single = words(token)  # a plural column word (`warm_days`) matches as the text's words are stemmed
    respelled = [american(w) for w in phrase]
    for w in [*phrase, *joined, *(r for r, w in zip(respelled, phrase, strict=True) if r != w)]:
        if (
            w == token
            or (single and w == single[0])
            or (len(token) >= 3 and w.startswith(token))
            or (len(w) >= 4 and token.startswith(w))
        ):
            return True
    return False


def american(word: str) -> str:
    """A British spelling as the American one a column name may use ("centre" -> center, "colour" ->
    color, "labour" -> labor); other words as they are."""
    if len(word) >= 5 and word.endswith(("tre", "bre")):
        return word[:-2] + "er"
    if len(word) >= 6 and word.endswith("our"):
        return word[:-3] + "or"
    return word


def _clipped_pair(token: str, raw: list[str]) -> bool:
    """The token is the starts of two words in a row, each of three letters or more, run together
    (`faminc` for "family income", `educyr` is not: `yr` is two letters)."""
    if len(token) < 6 or not token.isalpha():
        return False
    for first, second in zip(raw, raw[1:], strict=False):
        for k in range(3, min(len(first), len(token) - 3) + 1):
            rest = token[k:]
            if token[:k] == first[:k] and len(rest) >= 3 and second.startswith(rest):
                return True
    return False


def resolve_column(subject: Iterable[str], columns: Iterable[str], partial: bool = False) -> list[str]:
    """Columns every non-unit word of which appears (as a prefix) among the subject words; the
    best-covered ones when several qualify. With `partial`, a single column sharing a word of at
    least four letters with the subject also counts ("recorded mass" -> body_mass_g). Empty when
    nothing matches."""
    phrase = words(" ".join(subject))
    raw = re.findall(r"[a-z]+", " ".join(subject).lower())
    if not phrase:
        return []
    full: list[tuple[int, str]] = []
    some: list[str] = []
    for col in columns:
        tokens = [t for t in column_tokens(col) if t not in UNITS and not t.isdigit()]
        if not tokens:
            continue
        hit = [t for t in tokens if _matches(t, phrase, raw)]
        if len(hit) == len(tokens):
            full.append((len(hit), col))
        elif any(len(t) >= 4 for t in hit):
            some.append(col)
    if full:
        most = max(s for s, _ in full)
        best = [c for s, c in full if s == most]
        # a column named by its words beats one named only by a short form (`region` over `rgn`)
        strict = [
            c
            for c in best
            if all(
                _matches(t, phrase, raw, loose=False)
                for t in column_tokens(c)
                if t not in UNITS and not t.isdigit()
            )
        ]
        chosen = strict or best
        # "income bracket" with `income` and its indicators `income1` to `income4`: a numbered column
        # whose unnumbered name is also chosen is read only when the subject says its number
        said = set(re.findall(r"\d+", " ".join(subject)))
        plain = {_unnumbered(c) for c in chosen if len(_unnumbered(c)) == len(column_tokens(c))}
        chosen = [
            c
            for c in chosen
            if _unnumbered(c) not in plain
            or len(_unnumbered(c)) == len(column_tokens(c))
            or {t for t in column_tokens(c) if t.isdigit()} <= said
        ]
        # "MBSA2" among `MBSA2` to `MBSA9`: the numbered columns whose number is said, where one is
        numbered = [c for c in chosen if (n := {t for t in column_tokens(c) if t.isdigit()}) and n <= said]
        if said and numbered:
            chosen = numbered
        # a column whose name is the subject's own words beats one a word said only begins (`price` over
        # `pricey` for "the average price"); not a group noun's (`status` is no better than `ulcer` for
        # "ulceration status": the noun says what kind of column, not which)
        whole = [c for c in chosen if strictly_named(c, subject) and not set(column_tokens(c)) <= GROUP_NOUNS]
        return whole if whole and len(chosen) > 1 else chosen
    if not (partial and len(some) == 1):
        return []
    # A column that covers only part of the subject binds only when the subject says nothing the
    # column does not: every content word of the subject names a token of the column ("recorded
    # mass" -> body_mass_g). "the age gap" is not `age`: a word left unbound makes the parse partial.
    tokens = [t for t in column_tokens(some[0]) if not t.isdigit()]
    unbound = [w for w in phrase if w not in _IGNORABLE and not _matches(w, tokens)]
    return [] if unbound else some


def _unnumbered(column: str) -> tuple[str, ...]:
    """The column's name tokens without its numbers (`travel3` -> (travel,))."""
    return tuple(t for t in column_tokens(column) if not t.isdigit())


def strictly_named(column: str, subject: Iterable[str]) -> bool:
    """Every word of the column's name is a word of the subject, whole (not `packpc` for "pack price",
    a name that only starts with a word said)."""
    phrase = set(words(" ".join(subject)))
    tokens = [t for t in column_tokens(column) if t not in UNITS and not t.isdigit()]
    return bool(tokens) and all(
        t in phrase or set(words(t)) <= phrase or LEXICON.abbreviations.get(t) in phrase for t in tokens
    )


def described_columns(
    subject: Iterable[str],
    columns: Iterable[str],
    column_words: dict[str, tuple[str, ...]],
    in_row: bool = False,
) -> list[str]:
    """Columns whose description in the task's text covers every content word of the subject ("pack
    price" for `avgprs (average price per pack, cents)`); `in_row`: says them in a row, in order
    ("colour form" for `sp (colour form, ...)`, not "sampling year" for `age (years at sampling)`)."""
    said = [
        w.rstrip("s")
        for w in re.findall(r"[a-z]+", " ".join(subject).lower())
        if w not in STOP and len(w) > 2
    ]
    if not said:
        return []
    out = []
    for c in columns:
        told = [d.rstrip("s") for d in column_words.get(c, ())]
        if in_row:
            if any(told[i : i + len(said)] == said for i in range(len(told) - len(said) + 1)):
                out.append(c)
        elif set(said) <= set(told):
            out.append(c)
    return out


def rival_reading(
    said: Iterable[str], column: str, columns: Iterable[str], column_words: dict[str, tuple[str, ...]]
) -> bool:
    """Does a key phrase of several words bind `column` while another column explains part of it? A
    content word the column accounts for by neither its name nor the task's words for it, said in
    another column's description, is a second reading: "recurrence number" names `number (how many
    tumours at entry)` by a word of its name, and "recurrence" is said only of `enum (which recurrence
    the record is about)`. Two readings are none."""
    words = [
        w.rstrip("s")
        for w in re.findall(r"[a-z]+", " ".join(said).lower())
        if w not in STOP and w not in GROUP_NOUNS and len(w) > 2
    ]
    if len(words) < 2:
        return False
    own = {t.lower().rstrip("s") for t in column_tokens(column)} | {
        d.rstrip("s") for d in column_words.get(column, ())
    }
    left = {w for w in words if w not in own}
    return any(
        left & {d.rstrip("s") for d in column_words.get(c, ())} for c in dict.fromkeys(columns) if c != column
    )


# words of time: a description counts in them as often as it names a time
TIME_WORDS = frozenset(
    {"year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours", "decade", "decades"}
)


def word_root(word: str) -> str:
    """A word without its inflection or derivation ending, for matching a phrase against a column's
    description: "injection" and "injecting" -> inject, "sampling" and "sample" -> sampl, "highways"
    -> highway; a root keeps four letters at least ("access", "index" stay whole)."""
    low = word.lower()
    for suffix in (
        "ations",
        "ation",
        "ions",
        "ion",
        "ings",
        "ing",
        "ies",
        "ied",
        "ed",
        "es",
        "s",
        "al",
        "ly",
        "e",
    ):
        if low.endswith(suffix) and len(low) - len(suffix) >= 4 and not low.endswith("ss"):
            low = low[: -len(suffix)]
            break
    return low


def described_roots(
    subject: Iterable[str], columns: Iterable[str], column_words: dict[str, tuple[str, ...]]
) -> list[str]:
    """Columns whose description in the task's text holds every content word of the subject, each
    matched by its root and in any order ("injection history" for `IV (history of injecting drugs)`,
    "highway-access index" for `rad (index of access to radial highways)`)."""
    said = {
        word_root(w) for w in re.findall(r"[a-z]+", " ".join(subject).lower()) if w not in STOP and len(w) > 2
    }
    if not said:
        return []
    # a description's time word is as often the unit it counts in ("age (years at sampling)"): it
    # names nothing the subject may lean on ("sampling year" is not `age`)
    return [
        c for c in columns if said <= {word_root(d) for d in column_words.get(c, ()) if d not in TIME_WORDS}
    ]


# words of the group phrase that name no column ("group", "class" after the column's own word)
GROUP_NOUNS = {
    "group",
    "groups",
    "class",
    "classes",
    "category",
    "categories",
    "kind",
    "type",
    "band",
    "code",
    "codes",
    "level",
    "levels",
    "bracket",
    "brackets",
    "tier",
    "status",
}


def described_group(
    words: list[str],
    columns: list[str],
    described: dict[str, tuple[str, ...]],
    values: dict[str, tuple[str, ...]],
    owner: list[str] | None = None,
    ids: list[str] | None = None,
) -> str | None:
    """The one column a group phrase that names no column by its name describes: by the task's words
    for the column, or (a category noun) by what the column holds. `owner`: whose group the phrase
    says ("whose fathers held the same class of job"); where two columns' descriptions hold the
    phrase, the one whose description also holds the owner is meant. `ids`: numbered groups, which a
    group noun alone never names."""
    for n in range(len(words), 0, -1):
        # the task's description, two words of it at least: one word ("year") matches descriptions by
        # chance ("age (years at sampling)")
        said = [w for w in words[:n] if w.lower() not in GROUP_NOUNS]
        named = (
            described_columns(said, columns, described, in_row=True)
            if len(said) >= 2
            # one word only as the first word of a column's description, exactly ("the same league"
            # for `lg (league code)`; "the same year" is not `age (years at sampling)`)
            else [c for c in columns if described.get(c, ())[:1] == (said[0].lower(),)]
            if len(said) == 1
            # a group noun alone as the one word a column's description starts with ("the same status"
            # for `y (the status: 0 for a control, 2 for a patient)`)
            else [
                c for c in columns if described.get(c, ())[:1] == (words[0].lower(),) and c not in (ids or [])
            ]
            if n == len(words) == 1
            else []
        )
        whole = n == len(words)  # the readings below take the whole phrase only
        if not named and said and whole and not (len(said) == 1 and said[0].lower() in TIME_WORDS):
            # the words in any order and form, one column's description only ("injection history" for
            # `IV (history of injecting drugs)`, "series" for `org (poll series)`); two descriptions
            # holding them are two readings; a time word alone is not read (`age (years at sampling)`
            # counts in years)
            named = described_roots(said, columns, described)
        if not named and len(said) == 1 and whole:
            named = _category_column(said[0], columns, described, values)
        if len(named) > 1 and owner:
            named = [c for c in named if c in described_roots([*said, *owner], named, described)]
        if len(named) == 1:
            return named[0]
    return None


def named_and_described(
    said: Iterable[str], columns: Iterable[str], column_words: dict[str, tuple[str, ...]]
) -> list[str]:
    """Columns that account for every content word of a phrase by their name's words and the task's
    words for them together, at least one of each ("age band" for `age_group (five bands: ...)`: "age"
    from the name, "band" from the description; not `age (age class)`, which has no band)."""
    phrase = [w for w in re.findall(r"[a-z]+", " ".join(said).lower()) if w not in STOP and len(w) > 2]
    out = []
    for c in columns:
        tokens = [t for t in column_tokens(c) if not t.isdigit()]
        roots = {word_root(d) for d in column_words.get(c, ())}
        by_name = [w for w in phrase if any(t == w or t == word_root(w) for t in tokens)]
        by_words = [w for w in phrase if w not in by_name and word_root(w) in roots]
        if phrase and by_name and by_words and len(by_name) + len(by_words) == len(phrase):
            out.append(c)
    return out


# a trial's arms are a few: a column of more values holding "placebo" is no arm
_FEW = 6


def _category_column(
    noun: str,
    columns: list[str],
    described: dict[str, tuple[str, ...]],
    values: dict[str, tuple[str, ...]],
) -> list[str]:
    """Columns a category noun names by what they hold: "the same sex" is the one column whose values,
    or whose description in the task's text, are only sexes (`fem`: Men, Women); "the same arm" the
    one that holds a placebo (or control) beside a few other values."""
    markers = LEXICON.marker_nouns.get(noun.lower())
    if markers is not None:
        return [
            c
            for c in columns
            for held in [values.get(c) or described.get(c, ())]
            if 2 <= len(held) <= _FEW and any(w.lower() in markers for w in held)
        ]
    kinds = LEXICON.category_nouns.get(noun.lower())
    if kinds is None:
        return []

    def only_kinds(said: tuple[str, ...]) -> bool:
        held = {LEXICON.value_words.get(w.lower(), w.lower()) for w in said}
        return len(held) >= 2 and held <= set(kinds)

    # a code column named for one of the kinds (`male`, 1 for a boy) holds the category too
    named = {k for k in kinds if len(k) >= 3}
    return [
        c
        for c in columns
        if only_kinds(values.get(c, ()))
        or only_kinds(described.get(c, ()))
        or (not values.get(c) and LEXICON.value_words.get(c.lower(), c.lower()) in named)
    ]


def vocabulary_probe(names: list[str], connection: str | None) -> str:
    """A probe program printing one JSON line: {table: {column: {kind, values, low, high}}} for the
    named DataFrames in the workspace and, through `connection`, the named SQL tables."""
    return f"""import json as _j
_out = {{}}
_names = {names!r}
def _desc(_df):
    _cols = {{}}
    for _c in _df.columns[:80]:
        _s = _df[_c]
        _info = {{"kind": "other"}}
        try:
            if _s.dtype.kind == "M":
                _info = {{"kind": "date"}}
            elif _s.dtype.kind in "iuf":
                _info = {{"kind": "num", "low": float(_s.min()) if _s.notna().any() else None,
                          "high": float(_s.max()) if _s.notna().any() else None}}
            elif _s.dtype.kind in "OSUb" or str(_s.dtype) in ("category", "string"):
                _u = _s.dropna().astype(str).unique()
                _info = {{"kind": "text", "values": sorted(_u.tolist())[:{MAX_VALUES}] if len(_u) <= {MAX_VALUES} else []}}
        except Exception:
            pass
        _cols[str(_c)] = _info
    return _cols
for _n in _names:
    _v = globals().get(_n)
    try:
        if hasattr(_v, "columns") and hasattr(_v, "dtypes"):
            _out[_n.lower()] = _desc(_v)
        elif hasattr(_v, "to_frame") and hasattr(_v, "index") and getattr(_v.index, "name", None):
            _out[_n.lower()] = _desc(_v.reset_index())  # a grouped Series: its key column and its values
        elif {connection!r} and {connection!r} in globals():
            _con = globals()[{connection!r}]
            _kinds = _con.execute("SELECT column_name, data_type FROM information_schema.columns WHERE lower(table_name) = ?", [_n.lower()]).fetchall()
            _cols = {{}}
            for _c, _t in _kinds:
                _q = '"' + _c.replace('"', '""') + '"'
                if any(_k in _t.upper() for _k in ("INT", "DOUBLE", "FLOAT", "DECIMAL", "REAL", "NUMERIC")):
                    _lo, _hi = _con.execute(f"SELECT MIN({{_q}}), MAX({{_q}}) FROM {{_n}}").fetchone()
                    _cols[_c] = {{"kind": "num", "low": None if _lo is None else float(_lo), "high": None if _hi is None else float(_hi)}}
                elif "CHAR" in _t.upper() or _t.upper() in ("TEXT", "STRING"):
                    _vals = [r[0] for r in _con.execute(f"SELECT DISTINCT {{_q}} FROM {{_n}} WHERE {{_q}} IS NOT NULL LIMIT {MAX_VALUES + 1}").fetchall()]
                    _cols[_c] = {{"kind": "text", "values": sorted(map(str, _vals)) if len(_vals) <= {MAX_VALUES} else []}}
                elif _t.upper() == "BOOLEAN":
                    _cols[_c] = {{"kind": "text", "values": ["False", "True"]}}  # as a pandas bool column lists
                elif "DATE" in _t.upper() or "TIMESTAMP" in _t.upper():
                    _cols[_c] = {{"kind": "date"}}
                else:
                    _cols[_c] = {{"kind": "other"}}
            if _cols:
                _out[_n.lower()] = _cols
    except Exception:
        pass
print(_j.dumps(_out))
"""
