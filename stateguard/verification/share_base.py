"""The base of a share the question asks of a subgroup, against the rows the answer was taken over.

    "what percentage of the women are well paid"  -> `well_paid` among the rows whose `sex` is Female
    "what share of the 2008 cars (as a percentage) is frugal" -> `frugal` among the rows of year 2008

The words are read only where they say it whole: a share word, "of", the subgroup and a copula, then
exactly the words of one flag column (a boolean the code left), and nothing else up to the clause's
end, "and" or a comma. The subgroup is one word that names a value of exactly one column (a category
as the data writes it, a word the lexicon gives for one, or a number one numeric column holds) and
at most one plain noun ("cars", "people"); a word more, or a value two columns hold, abstains.

The check is on live values: for each frame or table the turn read that holds the flag (and the
subgroup's column), the share within the subgroup, the share over all rows and the share of all
rows that are both in the subgroup and flagged. A finding needs the reported value (one answer
field named as a share of that flag) to match none of the subgroup's shares and to match one of
the two whole-table ones, beyond its rounding: the share was taken over everyone, not over the
subgroup the question names.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification.extract import flag_columns
from stateguard.verification.named_stats import stated_by
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import (
    STOP,
    ColumnInfo,
    Vocabulary,
    column_tokens,
    names_flag,
    names_share,
    word_root,
)

_PERCENT = r"(?:percent|per\s+cent|percentages?)"
# ", in per cent," / ", as a percentage,": the share's scale, said as an aside
_ASIDE = rf"(?:,\s*(?:in|as)\s+(?:a\s+)?{_PERCENT}\s*,\s*)"
_SHARE_WORD = r"\b(?:share|percentage|proportion|fraction|percent|per\s+cent)"
_SHARE = re.compile(
    rf"{_SHARE_WORD}\s*(?:\([^()]*\)\s*|{_ASIDE})?"
    r"\s*of\s+(?:all\s+)?(?:the\s+)?"
    r"(?P<group>[^,;:?.()]{1,40}?(?:\s*\([^()]*\)\s*[^,;:?.()]{0,20}?)?)\s*(?:\([^()]*\)\s*)?"
    rf"{_ASIDE}?"
    r"\b(?:are|is|was|were|counts?\s+as)\s+(?P<flag>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)"
    r"(?=\s*(?:[,;.?!]|\band\b|$))",
    re.IGNORECASE,
)
# "what percentage of the women under-report": the flag said as the subgroup's verb, ending the clause
_SHARE_VERB = re.compile(
    rf"{_SHARE_WORD}\s*{_ASIDE}?\s*of\s+(?:all\s+)?(?:the\s+)?"
    r"(?P<words>[a-z0-9][\w-]*(?:\s+[a-z][\w-]*){1,4})(?=\s*(?:[,;.?!]|\band\b|$))",
    re.IGNORECASE,
)


# a verb that says a row meets the flag without naming it ("qualify", "carries the tag")
_MEMBER_VERB = re.compile(r"qualif(?:y|ies)|carr(?:y|ies)|meets?|pass(?:es)?|fits?|counts?", re.IGNORECASE)
# the flag said back as what the rows did or were ("ended that way", "did so", "were like that"), or
# as one of it they have ("show one", "have one": an ALT signal)
_SAID_BACK = re.compile(
    r"[a-z]+\s+(?:up\s+)?(?:that\s+way|so|like\s+(?:that|this))|(?:shows?|showed|ha(?:ve|s|d))\s+one",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SubgroupShare:
    flag: str  # the flag column whose share is asked
    column: (
        str | None
    )  # the subgroup's column; None: a number, bound at the probe to the one column holding it
    value: str | float  # the subgroup's value as the data writes it (text), or the number
    text: str


def _value_of(word: str, vocab: Vocabulary, tables: list[str]) -> tuple[str, str] | None:
    """(column, value) for a word naming a category value of exactly one column of `tables`."""
    mapped = LEXICON.value_words.get(word.lower())
    # "women" as the data writes it: "female", or its first letter where the data codes it so ("F")
    wanted = {word.lower()} | ({mapped, mapped[0]} if mapped else set())
    hits = {
        (col, value)
        for value, cols in vocab.all_values(tables).items()
        if value.lower() in wanted and value not in ("True", "False")
        for col in cols
    }
    return next(iter(hits)) if len(hits) == 1 else None


def _flag_named(said: str, flags: list[str]) -> list[str]:
    """Flag columns the said words name, all of them (`vocabulary.names_flag`: "short survivors" for
    `short_surv`), or all but a last plural noun ("severe cases" for `severe`)."""
    named = [c for c in flags if names_flag(said, c)]
    words = said.split()
    if named or len(words) < 2 or not re.fullmatch(r"[a-z]+s", words[-1]):
        return named
    return [c for c in flags if names_flag(" ".join(words[:-1]), c)]


def _flag_of_fields(fields: list[str], flags: list[str]) -> list[str]:
    """The flag columns the answer's share fields name (`pct_south_big` for `big_earner`): the flag a
    share is of when the question says it as a verb of its own ("qualify", "carries the tag")."""
    return sorted(
        {
            c
            for f in fields
            if names_share(f, rates=True)
            for c in flags
            if set(column_tokens(c)) & set(column_tokens(f))
        }
    )


def subgroup_shares(
    question: str, vocab: Vocabulary, tables: list[str], fields: list[str] | None = None
) -> list[SubgroupShare]:
    """Shares the question asks of a subgroup: one per phrase that parses whole (see the module). A
    flag the words do not name is the one flag the answer's share fields name, if there is one."""
    flags = flag_columns(vocab, tables)
    by_field = _flag_of_fields(fields or [], flags)
    out: list[SubgroupShare] = []
    for m in _SHARE.finditer(question):
        named = _flag_named(m.group("flag"), flags) or by_field
        if len(named) != 1:
            continue
        flag = named[0]
        holding = [t for t in tables if flag in vocab.tables.get(t, {})]
        found = _group(m.group("group"), vocab, holding)
        if found is None or found[0] == flag:
            continue
        out.append(SubgroupShare(flag, found[0], found[1], m.group(0)))
    for m in _SHARE_VERB.finditer(question):
        if _SHARE.search(m.group(0)):
            continue
        words = m.group("words").split()
        readings: dict[tuple[str, str | None, str | float], SubgroupShare] = {}
        for i in range(1, len(words)):  # every split into the subgroup's words and the flag's
            named = _flag_named(" ".join(words[i:]), flags)
            said_back = _SAID_BACK.fullmatch(" ".join(words[i:]))
            if not named and (_MEMBER_VERB.fullmatch(words[i]) or said_back):
                # "... qualify", "... ended that way": the flag the answer's share field names
                named = by_field
            holding = [t for t in tables if named and named[0] in vocab.tables.get(t, {})]
            found = _group(" ".join(words[:i]), vocab, holding) if len(named) == 1 else None
            if found is not None and found[0] != named[0]:
                readings[(named[0], *found)] = SubgroupShare(named[0], found[0], found[1], m.group(0))
        if len(readings) == 1:  # one reading only binds both (splits that agree are one)
            out.extend(readings.values())
    return out


def _group(text: str, vocab: Vocabulary, holding: list[str]) -> tuple[str | None, str | float] | None:
    """(column, value) of the subgroup's words, or None unless they parse whole: a glossed value ("the
    K-8 districts (span KK-08)", "New South Wales (NSW) patients": the value in parentheses, any words
    before it, at most one noun after it), or one value word and at most one plain noun."""
    paren = re.search(r"\(([^()]*)\)", text)
    inside = [w for w in paren.group(1).split() if w.lower() not in STOP] if paren else []
    values = [v for w in inside if (v := _value_of(w, vocab, holding)) is not None]
    if paren is not None and not values:  # "(as a percentage)": an aside, not the subgroup's value
        text, paren = text[: paren.start()] + " " + text[paren.end() :], None
    if paren is not None:
        columns = {c for t in holding for c in vocab.tables.get(t, {})}
        rest = [w for w in inside if _value_of(w, vocab, holding) is None and w not in columns]
        after = [w for w in text[paren.end() :].split() if w.lower() not in STOP]
        if len(values) != 1 or rest or len(after) > 1 or len(text[: paren.start()].split()) > 6:
            return None
        if after and _names_data(after[0], vocab, holding):
            return None
        return values[0]
    words = [w for w in _initials(text.split(), vocab, holding) if w.lower() not in STOP]
    if any(w.lower() in {t.lower() for t in holding} for w in words[:-1]):
        # "the recent births" with a frame `recent`: that frame's rows, no subgroup of them (the name
        # as the noun, "the contiguous pairs" of a table `pairs`, is the rows' plain noun)
        return None
    tying = [w for w in words if w.lower() in LEXICON.tying_words]
    words = [_untied(w) for w in words if w not in tying]
    if not words or len(words) > 2:
        return None
    if any(
        (m := re.fullmatch(r"(?:non|not)-(\w+)", w, re.IGNORECASE)) and _value_of(m.group(1), vocab, holding)
        for w in words
    ):
        return None  # "the non-white respondents": a value negated, which no (column, value) subgroup states

    bound: list[tuple[str | None, str | float]] = []
    nouns = []
    for w in words:
        if re.fullmatch(r"\d+(?:\.\d+)?", w):
            bound.append((None, float(w)))
        elif (value := _value_of(w, vocab, holding)) is not None:
            bound.append(value)
        elif (value := _named_with_column(w, vocab, holding)) is not None:
            bound.append(value)  # "the thick-solder runs": `Solder` = Thick
        elif (indicator := _indicator(w, vocab, holding)) is not None:
            bound.append(indicator)  # "the metro counties": `metro` = 1; "the southern rows": `south` true
        else:
            nouns.append(w)
    if len(bound) != 1 or len(nouns) > 1:
        return None
    if nouns and _names_data(nouns[0], vocab, holding):
        return None  # "the 2008 road cars": a second word of the data, a subgroup of two things
    return bound[0]


def _untied(word: str) -> str:
    """A compound of a value and a tying word ("woman-headed") is the value's word."""
    parts = word.split("-")
    if len(parts) == 2 and parts[1].lower() in LEXICON.tying_words:
        return parts[0]
    return word


def _initials(words: list[str], vocab: Vocabulary, tables: list[str]) -> list[str]:
    """Capitalised words whose initials are a value of the data, as that one word ("the American
    League lines" with `lg` AL): the value as the data writes it."""
    for size in (3, 2):
        for i in range(len(words) - size + 1):
            run = words[i : i + size]
            if not all(re.fullmatch(r"[A-Z][a-z]+", w) for w in run):
                continue
            short = "".join(w[0] for w in run)
            if _value_of(short, vocab, tables) is not None:
                return [*words[:i], short, *words[i + size :]]
    return words


def _named_with_column(word: str, vocab: Vocabulary, tables: list[str]) -> tuple[str, str] | None:
    """A compound of a value and its own column's name, either way round ("thick-solder" where
    `Solder` holds Thick, "dose-D" where `dose` holds D): (column, value)."""
    parts = word.split("-")
    if len(parts) != 2:
        return None
    for value, column in (parts, parts[::-1]):
        found = _value_of(value, vocab, tables)
        if found is not None and [t.lower() for t in column_tokens(found[0])] == [column.lower()]:
            return found
    return None


def _indicator(word: str, vocab: Vocabulary, tables: list[str]) -> tuple[str, str] | None:
    """The one 0/1 or true/false column the word names as a whole (`metro` for "metro", `south` for
    "southern"), or else the one such column the task's text describes with the word ("contiguous"
    for `contig (1 if the two are contiguous, 0 if not)`): its rows with 1 (true) are the subgroup
    the word names, as (column, the value as the data writes it)."""
    low = word.lower()
    marked: dict[str, str] = {}
    for t in tables:
        for col, info in vocab.tables.get(t, {}).items():
            if info.kind == "num" and info.low == 0 and info.high == 1:
                marked[col] = "1"
            elif info.kind == "text" and set(info.values) == {"False", "True"}:
                marked[col] = "True"
    found = {col for col in marked if col.lower() in (low, low.removesuffix("ern"))}
    if not found:
        root = word_root(low)
        found = {col for col in marked if root in {word_root(w) for w in vocab.column_words.get(col, ())}}
    if len(found) != 1:
        return None
    col = found.pop()
    return col, marked[col]


def _names_data(word: str, vocab: Vocabulary, tables: list[str]) -> bool:
    """The word is a column's word or a value of the data (not a plain noun like "cars", nor the name
    of the table itself: "the North orders" of a frame `orders`)."""
    low = word.lower().rstrip("s")
    if any(t.rstrip("s") == low for t in tables):
        return False
    for t in tables:
        for col, info in vocab.tables.get(t, {}).items():
            tokens = column_tokens(col)
            if tokens[-1:] == ["id"] or _numbering(info):
                # `order_id`, `case_id`, `patient` numbered 1 to 606: the rows' own identifier, whose
                # noun names the rows
                continue
            if low in tokens or low + "s" in tokens:
                return True
    return any(v.lower().rstrip("s") == low for v in vocab.all_values(tables))


def _numbering(info: ColumnInfo) -> bool:
    """A whole-number column that counts up from 0 or 1 into the hundreds: a numbering of the rows."""
    low, high = info.low, info.high
    return (
        info.kind == "num"
        and low is not None
        and high is not None
        and low in (0, 1)
        and high >= 100
        and float(high).is_integer()
    )


def share_field(fields: list[str], share: SubgroupShare) -> str | None:
    """The one answer field named as a share of the flag (a share word and a word of the flag)."""
    tokens = {word_root(t) for t in column_tokens(share.flag)}  # `pct_south_strongholds` for `stronghold`
    named = [
        f
        for f in fields
        if names_share(f, rates=True)
        and tokens & {word_root(t) for t in column_tokens(f)}
        and not stated_by(f)  # `median_share_strongholds`: a statistic of a quantity called a share
    ]
    return named[0] if len(named) == 1 else None


def requirement(share: SubgroupShare) -> Requirement:
    return Requirement(
        kind=Kind.SCOPE,
        text=share.text,
        values=[f"{share.value:g}" if isinstance(share.value, float) else share.value],
        columns=[share.column] if share.column else [],
        subject=[] if share.column else ["the", "subgroup's", "rows"],
    )


def probe(share: SubgroupShare, frames: list[str], connection: str | None, report: str, field: str) -> str:
    """A probe program: `_v` when the reported share matches a whole-table share, or the share of the
    rows outside the subgroup (`WHERE opec <> 'yes'`), and not the subgroup's."""
    return textwrap.dedent(f"""\
        import numbers as _nb
        _flag, _col, _val, _field = {share.flag!r}, {share.column!r}, {share.value!r}, {field!r}
        def _cols_of(_f):
            if _col is not None:
                return [_col] if _col in _f.columns else []
            return [_c for _c in _f.columns if _c != _flag and _f[_c].dtype.kind in 'iuf' and bool((_f[_c] == _val).any())]
        def _frame_shares(_f):
            _cs = _cols_of(_f)
            if _flag not in _f.columns or len(_cs) != 1 or not len(_f):
                return None
            _in = (_f[_cs[0]].astype(str) == _val) if _col is not None else (_f[_cs[0]] == _val)
            _fl = _f[_flag].fillna(False).astype(bool)
            if not _in.any():
                return None
            _out = float(_fl[~_in].mean()) if (~_in).any() else float('nan')
            return (float(_fl[_in].mean()), float(_fl.mean()), float((_fl & _in).mean()), _out)
        def _table_shares(_con, _t):
            import pandas as _pd
            _cur = _con.execute('SELECT * FROM ' + _t)
            return _frame_shares(_pd.DataFrame(_cur.fetchall(), columns=[_d[0] for _d in _cur.description]))
        _shares = {{}}
        for _n in {frames!r}:
            _x = globals().get(_n)
            try:
                if hasattr(_x, 'columns') and hasattr(_x, 'dtypes'):
                    _s = _frame_shares(_x)
                elif {connection!r} and {connection!r} in globals() and _x is None:
                    _s = _table_shares(globals()[{connection!r}], _n)
                else:
                    _s = None
            except Exception:
                _s = None
            if _s is not None:
                _shares[_n] = _s
        _r = {report}.get(_field) if isinstance({report}, dict) else None
        def _match(_x):
            if not isinstance(_r, _nb.Real) or isinstance(_r, bool) or _x != _x:
                return False
            _t = repr(float(_r))
            _d = len(_t.split('.')[1]) if '.' in _t and 'e' not in _t else 6
            _tol = 0.5 * 10 ** -_d + 1e-9
            return any(abs(_r - _x * _k) <= _tol for _k in (1.0, 100.0))
        _within = any(_match(_s[0]) for _s in _shares.values())
        _whole = any(_match(_s[1]) or _match(_s[2]) or _match(_s[3]) for _s in _shares.values())
        _v = bool(_shares) and not _within and _whole
        _o = {{'subgroup_share': {{_n: round(_s[0], 6) for _n, _s in _shares.items()}}, 'matches_a_whole_table_share': _whole}}""")


# "what share of their babies (percent) were ...", "the percentage of the cars that ...": a part of a whole
_SHARE_OF = re.compile(rf"{_SHARE_WORD}\s+(?:\([^()]*\)\s+)?of\b", re.IGNORECASE)


def asks_share_of(question: str) -> bool:
    """Does the question ask for a share of something ("what percentage of the dramas", "the share of")?"""
    return bool(_SHARE_OF.search(question))


def share_of_whole_fields(question: str, fields: list[str]) -> list[str]:
    """The answer fields named as shares (`pct_low_light`, `share_frugal`) when the question asks for a
    share of a whole and names no change ("percentage change", "percent growth" are no parts): a
    part of a whole lies between 0 and 100 percent, whatever the scale."""
    if not asks_share_of(question) or re.search(
        r"\b(?:change|growth|increase|decrease|rise|fall|drop|gain|loss|difference|points?)\b", question, re.I
    ):
        return []
    return [f for f in fields if names_share(f)]


# "which fraction of the adults (0 to 1)", "what proportion (between 0 and 1)": the scale it is asked in
_UNIT_SCALE = re.compile(
    r"\(\s*(?:between\s+|from\s+)?0(?:\.0)?\s*(?:to|and|-|–)\s*1(?:\.0)?\s*\)"
    r"|\bas\s+a\s+number\s+(?:between|from)\s+0\s+(?:and|to)\s+1\b",
    re.IGNORECASE,
)


def stated_upper(question: str) -> float:
    """The largest value a share may take as the question asks for it: 1 where it states the scale 0
    to 1 and names no percentage anywhere, else 100 (a part of a whole, whatever the scale)."""
    if _UNIT_SCALE.search(question) and not re.search(r"percent|%|\bpct\b", question, re.IGNORECASE):
        return 1.0
    return 100.0


def range_probe(report: str, fields: list[str], upper: float = 100.0) -> str:
    """`_v` when a share field holds a number above `upper` or below 0 (a sum or a count reported as
    a share)."""
    return textwrap.dedent(f"""\
        import decimal as _dc
        import numbers as _nb
        _r = {report} if isinstance({report}, dict) else {{}}
        _vals = []
        for _k in {fields!r}:
            _x = _r.get(_k)
            for _y in (_x.values() if isinstance(_x, dict) else [_x]):
                if isinstance(_y, (_nb.Real, _dc.Decimal)) and not isinstance(_y, bool) and _y == _y:
                    _vals.append(float(_y))
        _out = [_y for _y in _vals if _y > {upper!r} + 1e-9 or _y < -1e-9]
        _v = bool(_out)
        _o = {{'shares_outside_0_{upper:g}': _out[:5]}}""")
