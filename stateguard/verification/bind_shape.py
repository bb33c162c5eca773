"""Binding for the requirements on a result's shape: grouping keys, joins, ranking and top-k.

Called from `bind.bind`. Each function finds the code's counterpart of one requirement (GROUP
BY / groupby keys, JOIN / merge, ORDER BY + LIMIT / sort + head / nlargest) and, when the code
does something else, builds the probe that shows whether it matters on the live data:

    grouping  result rows vs. distinct combinations of the stated keys among the kept rows
    join      row count with the code's join vs. with the stated one (matched only / keep unmatched)
    order     the query re-run with the stated direction and row count (SQL), or the result's
              own order and length (pandas)

A key the data holds only as part of its one date column (`for each year` over a `month` date)
is checked on that part (SQL). Matching code is noted and left alone; a requirement with no
counterpart goes to `unverified`.
"""

from __future__ import annotations

import re
import textwrap

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import Join, Selection
from stateguard.verification import extract, probes, sql_edit, vocabulary
from stateguard.verification.binder import Binder, Plan
from stateguard.verification.requirements import Kind, Requirement


def key_name(expr: str) -> str:
    """`f.carrier` -> carrier; `'region'` -> region; `df["k"]` -> k."""
    expr = expr.strip().strip("'\"")
    m = re.search(r"\[['\"]([^'\"]+)['\"]\]$", expr)
    return (m.group(1) if m else expr.split(".")[-1]).strip('"').lower()


def _groupby_arg(sel: Selection, frame: str) -> str | None:
    """The text of the argument the code passes to `frame.groupby(...)` (as the inspection writes it)."""
    for agg in sel.aggregates:
        m = re.match(rf"^\s*{re.escape(frame)}\.groupby\(", agg.receiver)
        if not m:
            continue
        depth, i = 1, m.end()
        while i < len(agg.receiver) and depth:
            depth += {"(": 1, ")": -1}.get(agg.receiver[i], 0)
            i += 1
        arg = agg.receiver[m.end() : i - 1]
        return arg.split(", as_index=")[0].split(", dropna=")[0].split(", sort=")[0]
    return None


def _partition_item(
    b: Binder, req: Requirement, sel: Selection, frame: str, keys: list[str], by_name: bool = False
) -> probes.ProbeItem | None:
    """The code groups a frame by a computed key ("groupby(pd.qcut(homes['food'], 4))") where the
    stated key is a column of that frame (`quartile`): the two keys split the rows the same way only
    when each group of one is exactly one group of the other; the stated key is put in the code's
    place for the answer check (a finding only when the answer changes). With `by_name`, also a key
    the code names as another column (`groupby("improved")` for "per method": as many groups as
    the stated key, so the row count cannot tell them apart)."""
    columns = b.vocab.tables.get(frame.lower(), {})
    if not frame.isidentifier() or not keys or not all(k in columns for k in keys):
        return None
    arg = _groupby_arg(sel, frame)
    if arg is None:
        return None
    named = re.fullmatch(r"\s*\[?\s*(?:'[^']*'|\"[^\"]*\")(?:\s*,\s*(?:'[^']*'|\"[^\"]*\"))*\s*\]?\s*", arg)
    if named and not by_name:
        return None  # the code groups by columns by name: the row-count check covers that
    stated = repr(keys[0]) if len(keys) == 1 else repr(keys)
    site = _partition_probe(frame, arg, stated)
    edit = probes.SpanEdit(kind="text", before=arg, after=stated)
    return b.item(req, "group_partition", site, b.variables(sel), "grouping", edit=edit, needs_changed=True)


def _extra_key_item(
    b: Binder, req: Requirement, sel: Selection, keys: list[str], grouped: list[Selection]
) -> probes.ProbeItem | None:
    """pandas groups by the stated keys and more (`groupby(["pm", "yr"])` for "under each prime
    minister"): the extra key matters only when it splits the stated groups, i.e. when the grouped
    rows hold fewer combinations of the stated keys than the result has rows. A result grouped
    again later (`per_year.groupby("pm").max()`) is a two-step aggregation and left alone."""
    if sel.language != "pandas" or not sel.target or not sel.target.isidentifier():
        return None
    if len(sel.group_keys) <= len(keys) or any(sel.target in s.sources for s in grouped if s is not sel):
        return None
    m = next((re.match(r"^(.+?)\.groupby\(", a.receiver) for a in sel.aggregates), None)
    rows = m.group(1).strip() if m else ""
    base = re.match(r"[A-Za-z_]\w*", rows)
    if base is None or not all(k in b.vocab.tables.get(base.group(0).lower(), {}) for k in keys):
        return None
    site = textwrap.dedent(f"""\
        _v = hasattr({sel.target}, 'shape')
        _rows_n = len({sel.target}) if _v else 0
        _keys_n = len(({rows})[{keys!r}].drop_duplicates())
        _v = _v and _rows_n > _keys_n
        _o = {{'result_rows': int(_rows_n), 'stated_key_combinations': int(_keys_n)}}""")
    return b.item(req, "group_keys", site, b.variables(sel), "grouping")


def _partition_probe(frame: str, code_key: str, stated_key: str) -> str:
    """Probe: `frame` grouped by the code's key and by the stated one splits the rows the same way
    only when the pairs of group numbers are as many as the groups on each side. Splitting the same
    way under labels drawn from the same values, paired otherwise (groups numbered by rank where the
    stated numbers run in file order), is the wrong grouping too: each group reports another's label."""
    return textwrap.dedent(f"""\
        _g = {frame}.groupby({code_key}, dropna=False)
        _a = _g.ngroup()
        _b = {frame}.groupby({stated_key}, dropna=False).ngroup()
        _p = len(set(zip(_a.tolist(), _b.tolist())))
        _v = bool(_p != _a.nunique() or _p != _b.nunique())
        _swapped = 0
        if not _v and isinstance({stated_key}, str):
            _pairs = {{k: {frame}[{stated_key}].iloc[i[0]] for k, i in _g.indices.items() if len(i)}}
            if set(_pairs) == set(_pairs.values()):
                _swapped = sum(1 for k, s in _pairs.items() if k != s)
        _v = bool(_v or _swapped)
        _o = {{'code_groups': int(_a.nunique()), 'stated_groups': int(_b.nunique()), 'pairs': int(_p),
              'relabelled_groups': int(_swapped)}}""")


def _value_counts_item(
    b: Binder, req: Requirement, sel: Selection, keys: list[str]
) -> probes.ProbeItem | None:
    """`fixed_only["age"].value_counts().idxmax()` where the question counts per a column of that
    frame (`bracket`): the two columns split the rows differently, and the answer with the stated
    column counted changes (needs_changed)."""
    if sel.language != "pandas" or sel.aggregates or len(keys) != 1 or len(sel.group_keys) != 1:
        return None  # a groupby with aggregates is checked by its row count
    code_key, key = sel.group_keys[0], keys[0]
    frames = [
        f
        for f in sel.sources
        if f.isidentifier() and {code_key, key} <= set(b.vocab.tables.get(f.lower(), {}))
    ]
    if len(frames) != 1 or code_key == key:
        return None
    frame = frames[0]
    before = f"{frame}[{code_key!r}].value_counts()"
    site = _partition_probe(frame, repr(code_key), repr(key))
    edit = probes.SpanEdit(kind="text", before=before, after=f"{frame}[{key!r}].value_counts()")
    return b.item(req, "group_partition", site, b.variables(sel), "grouping", edit=edit, needs_changed=True)


def _frame_of(receiver: str) -> str | None:
    """`big.groupby(['a'])['x']` -> big (a plain name only)."""
    m = re.match(r"^\s*([A-Za-z_]\w*)\.groupby\(", receiver)
    return m.group(1) if m else None


def grouping(b: Binder, req: Requirement, plan: Plan) -> None:
    pool = b.read_columns()
    keys = [c for k in req.keys for c in _resolve_key(k, pool, b.vocab.column_words)]
    # a key named only through a short form (`yr` for "year") gives way to the year of a date column
    short = bool(keys) and all(k.lower() in LEXICON.abbreviations for k in keys)
    part = _date_part(b, req, pool) if not keys or short else None
    if part is not None:
        _date_part_grouping(b, req, part, plan)
        return
    if not keys and len(req.keys) == 1:
        # "per hospital group" for `hos_cat (the hospital group: ...)`: the one column the task's words
        # for it describe, read as a rule's group is read
        found = _described_key(req.keys[0].split(), pool, b.vocab)
        others = {c.lower() for c in pool} - {found.lower()} if found else set()
        if any(w.lower() in others for w in req.keys[0].split()):
            # "how many home runs did each player hit" beside `player` and `homeruns (home runs the
            # player hit)`: a word that is another column's very name is a second reading; none is read
            found = None
        keys = [found] if found else []
        if found:
            plan.notes.append(f"{req.describe()}: the task's words for `{found}` say it")
    if not keys:  # "per capita", "per kept order": words, not columns of the data; nothing to check
        plan.notes.append(f"{req.describe()}: no column of the data is named")
        return
    if req.text.lower().startswith("per ") and _measures(b, keys, pool):
        # "the average price per carat": per a measure of fractional values is a rate, not groups
        plan.notes.append(f"{req.describe()}: {', '.join(keys)} holds fractional values; a rate, not checked")
        plan.unverified.append(req)
        return
    req = req.model_copy(update={"columns": keys})
    grouped = [s for s in b.sem.selections if s.group_keys]
    if not grouped:
        plan.unverified.append(req)
        return
    agreeing = [sel for sel in grouped if {k.lower() for k in keys} <= {key_name(g) for g in sel.group_keys}]
    if agreeing:
        # a grouping by the stated keys alone is the one asked for; one by more keys beside it is a
        # step on the way (a statistic per kids and year joined back, then the rows counted per year)
        exact = [
            sel for sel in agreeing if {k.lower() for k in keys} == {key_name(g) for g in sel.group_keys}
        ]
        sel = (exact or agreeing)[0]
        plan.notes.append(f"{req.describe()}: the code groups by it")
        _join_on_fewer_keys(b, req, keys, plan)
        extra = None if exact else _extra_key_item(b, req, sel, keys, grouped)
        if extra is not None:
            plan.items.append(extra)
        frame = _grouped_frame(b, sel, keys)
        # a computed key named after the stated column (`strikes["wave"].map(...)`): its groups
        partition = _partition_item(b, req, sel, frame, keys) if frame else None
        if partition is not None:
            plan.items.append(partition)
        table = sel.target or ""
        if b.stored(sel) and all(k in b.vocab.tables.get(table.lower(), {}) for k in keys):
            plan.items.append(
                b.item(
                    req,
                    "unique_keys",
                    _unique_keys(b.con or "", table, keys),
                    b.variables(sel),
                    "agrees",
                    constraint=True,
                )
            )
        return
    recoded = _recoded(b, keys, grouped)
    sel = recoded[0] if recoded else grouped[-1]
    plan.notes.append(f"{req.describe()}: the code groups by {', '.join(sel.group_keys)}")
    if sel.language == "sql" and sel.sql:
        bands = [sql_edit.alias_columns(sel.sql, key_name(g)) for g in sel.group_keys]
        if any(cols and cols <= {k.lower() for k in keys} for cols in bands):
            # "by age: young under 30, ..." grouped by `CASE WHEN age < 30 ... END AS age_group`: the
            # code groups by bands of the stated column, which is that grouping
            plan.notes.append(
                f"{req.describe()}: the code's key is computed from {', '.join(keys)} alone; not checked"
            )
            plan.unverified.append(req)
            return
    rival = _rival_grouping(b, req, sel)
    if rival is not None:
        # "Summarise by calendar month ... the most shares per day on average": the code follows the
        # other stated grouping, so this one may be a rate ("per day"): two readings, no finding
        plan.notes.append(f"{req.describe()}: the code's grouping is the stated '{rival.text}'; not checked")
        plan.unverified.append(req)
        return
    site = None
    if sel.language == "sql" and b.con and sel.sql:
        # a key named after a stated one (`age_years` for "age"): counted by the code's key, and read only
        # where a table holding both shows them one to one
        said = [recoded[1].get(k, k) for k in keys] if recoded else keys
        distinct = sql_edit.distinct_keys_sql(sel.sql, said)
        pairs = sql_edit.distinct_keys_sql(sel.sql, [*said, *sel.group_keys])
        if distinct:
            site = _sql_groups_site(b.con, sel.sql, distinct, pairs)
            if recoded:
                site += "\n" + _one_to_one(b.con, recoded[2])
    else:
        frame = _grouped_frame(b, sel, keys)
        partition = _partition_item(b, req, sel, frame, keys) if frame else None
        partition = partition or _value_counts_item(b, req, sel, keys)
        if partition is not None:
            plan.items.append(partition)
            return
        # another column by name: the row count below, and how it splits the rows (as many groups)
        other = _partition_item(b, req, sel, frame, keys, by_name=True) if frame else None
        if other is not None:
            plan.items.append(other)
        if frame and sel.target and sel.target.isidentifier():
            site = textwrap.dedent(f"""\
                _n = len({sel.target})
                _k = len({frame}[{keys!r}].drop_duplicates())
                _v = hasattr({sel.target}, 'shape') and _n != _k  # a dict of answer fields has no groups
                _o = {{'result_rows': int(_n), 'stated_key_combinations': int(_k)}}""")
    if site:
        plan.items.append(b.item(req, "group_keys", site, b.variables(sel), "grouping"))
    else:
        plan.unverified.append(req)


def _measures(b: Binder, keys: list[str], pool: list[str]) -> bool:
    """Are all the keys numeric columns whose range ends in a fraction (a weight, a price per unit)?"""
    infos = [i for t in b.vocab.tables.values() for k in keys for c, i in t.items() if c == k and c in pool]
    return bool(infos) and all(
        i.kind == "num"
        and i.low is not None
        and i.high is not None
        and not (float(i.low).is_integer() and float(i.high).is_integer())
        for i in infos
    )


def _described_key(said: list[str], pool: list[str], vocab: vocabulary.Vocabulary) -> str | None:
    """The one column whose description in the task's text says a grouping phrase that names no column,
    every word of it, in a row ("hospital group" is `hos_cat (the hospital group: ...)`, not `center
    (the hospital)`). Two content words at least, and nothing else: one word ("per head", "by grade")
    matches descriptions by chance, and a phrase cut short ("head and the") is no key."""
    if len(said) < 2 or any(w.lower() in vocabulary.STOP or not w.isalpha() for w in said):
        return None
    named = vocabulary.described_columns(said, pool, vocab.column_words, in_row=True)
    return named[0] if len(named) == 1 else None


def _grouped_frame(b: Binder, sel: Selection, keys: list[str]) -> str | None:
    """The frame a pandas selection groups (`big.groupby(...)`), else its source holding the keys."""
    return next((_frame_of(a.receiver) for a in sel.aggregates if _frame_of(a.receiver)), None) or next(
        (src for src in sel.sources if all(k in b.vocab.tables.get(src.lower(), {}) for k in keys)), None
    )


def _rival_grouping(b: Binder, req: Requirement, sel: Selection) -> Requirement | None:
    """Another grouping the turn states, by a unit of time, whose unit the code groups by, while
    `req` names another unit of time: "by month ... shares per day" reads per day as a rate."""
    code = {key_name(g) for g in sel.group_keys} | {
        w for g in sel.group_keys for w in re.findall(r"[a-z]+", g.lower()) if len(w) >= 3
    }
    mine = {w for k in req.keys for w in k.lower().split()}
    if not mine & set(_PARTS):
        return None
    for other in b.requirements:
        if other is req or other.kind is not Kind.GROUPING:
            continue
        units = {w for k in other.keys for w in k.lower().split()} & set(_PARTS)
        if units & code and not units & mine:
            return other
    return None


_PARTS = {
    "year": "year",
    "month": "month",
    "day": "day",
    "hour": "hour",
    "quarter": "quarter",
    "weekday": "dayofweek",
}


def _date_part(b: Binder, req: Requirement, pool: list[str]) -> tuple[str, str] | None:
    """`for each year` over data with one date column and no `year` column: (part, date column)."""
    if len(req.keys) != 1 or req.keys[0].lower() not in _PARTS:
        return None
    sources = [s for sel in b.sem.selections for s in [*sel.sources, sel.frame] if s]
    dates = [c for c in pool if b._kind(c, sources) == "date"]
    return (_PARTS[req.keys[0].lower()], dates[0]) if len(dates) == 1 else None


def _date_part_grouping(b: Binder, req: Requirement, part: tuple[str, str], plan: Plan) -> None:
    """One result row per year (month, ...) of the date column: the grouped query's result rows
    against the distinct values of that part among its kept rows."""
    fn, column = part
    grouped = [s for s in b.sem.selections if s.group_keys and s.language == "sql" and s.sql]
    distinct = sql_edit.distinct_keys_sql(grouped[-1].sql, [f"{fn}({column})"]) if grouped and b.con else None
    if not distinct:
        plan.unverified.append(req)
        return
    sel = grouped[-1]
    plan.notes.append(
        f"{req.describe()}: the code groups by {', '.join(sel.group_keys)} ({fn} of {column} stated)"
    )
    pairs = sql_edit.distinct_keys_sql(sel.sql, [f"{fn}({column})", *sel.group_keys])
    site = _sql_groups_site(b.con or "", sel.sql, distinct, pairs)
    plan.items.append(b.item(req, "group_keys", site, b.variables(sel), "grouping"))


def _recoded(
    b: Binder, keys: list[str], grouped: list[Selection]
) -> tuple[Selection, dict[str, str], list[tuple[str, str, str]]] | None:
    """The SQL grouping whose keys hold each stated key by its own name or by a name that starts with
    it (`w.age_years` for "age"), at least one of them renamed so, with a table the run holds that has
    each renamed pair side by side: that selection, stated key -> the code's key, and (table, stated,
    code's) for each renamed pair."""
    for sel in (s for s in grouped if s.language == "sql"):
        named = {
            k: [
                g
                for g in sel.group_keys
                if key_name(g) == k.lower() or key_name(g).startswith(k.lower() + "_")
            ]
            for k in keys
        }
        if any(len(gs) != 1 for gs in named.values()):
            continue
        mapping = {k: gs[0] for k, gs in named.items()}
        renamed = [(k, key_name(g)) for k, g in mapping.items() if key_name(g) != k.lower()]
        tables = [
            next((t for t, cols in b.vocab.tables.items() if k in cols and g in cols), None)
            for k, g in renamed
        ]
        if renamed and all(tables):
            return sel, mapping, [(t, k, g) for t, (k, g) in zip(tables, renamed, strict=True) if t]
    return None


def _one_to_one(con: str, pairs: list[tuple[str, str, str]]) -> str:
    """Probe lines: the finding stands only where every renamed key pair is one to one in its table."""
    lines = ["_same = True"]
    for table, k, g in pairs:
        query = (
            f'SELECT count(DISTINCT "{k}") = count(*) AND count(DISTINCT "{g}") = count(*) '
            f'FROM (SELECT DISTINCT "{k}", "{g}" FROM "{table}")'
        )
        lines.append(f"_same = _same and bool({con}.execute({query!r}).fetchone()[0])")
    lines.append("_v = bool(_v and _same)")
    return "\n".join(lines)


def _sql_groups_site(con: str, sql: str, distinct: str, pairs: str | None = None) -> str:
    """Probe: the groups the query makes (before any LIMIT keeps the top few) against the distinct
    combinations of the stated keys among its kept rows; with `pairs` (the distinct combinations of
    the stated and the code's keys together), also as many groups that split the rows otherwise
    (`GROUP BY qtr` where the kept rows hold four decades)."""
    count_pairs = f"{con}.execute({pairs!r}).fetchone()[0]" if pairs else "_k"
    kept = probes.kept_rows_sql(sql, "TRUE")
    count_kept = f"{con}.execute({kept!r}).fetchone()[0]" if kept else "-1"
    return textwrap.dedent(f"""\
        _n = {con}.execute({f"SELECT COUNT(*) FROM ({sql_edit.without_limit(sql)})"!r}).fetchone()[0]
        _k = {con}.execute({distinct!r}).fetchone()[0]
        try:  # a key the select list names (an alias) is no column of the kept rows: no pairs then
            _p = {count_pairs}
        except Exception:
            _p = _k
        # a stated key with a value of its own on every kept row (an id: "the average walks per line")
        # makes no groups: the statistic is per row, not per group
        _r = {count_kept}
        _v = (_n != _k or _p != _k) and _k != _r
        _o = {{'result_rows': int(_n), 'stated_key_combinations': int(_k), 'key_pairs': int(_p),
              'kept_rows': int(_r)}}""")


def _unique_keys(con: str, table: str, keys: list[str]) -> str:
    """The stored result has one row per combination of the stated keys."""
    cols = ", ".join(keys)
    query = f"SELECT COUNT(*), COUNT(*) - (SELECT COUNT(*) FROM (SELECT DISTINCT {cols} FROM {table})) FROM {table}"
    return (
        f"_n, _dup = {con}.execute({query!r}).fetchone()\n"
        f"_v = bool(_dup)\n_o = {{'rows': int(_n), 'repeated_key_rows': int(_dup)}}"
    )


def _singular(words: list[str]) -> list[str]:
    return [w.rstrip("s") if len(w) > 3 else w for w in words]


def _resolve_key(
    word: str, pool: list[str], described: dict[str, tuple[str, ...]] | None = None
) -> list[str]:
    """A key phrase's column: the phrase itself ("model year" -> model_year), else one of its words
    ("weather label" -> weather, "calendar month" -> month), unless (`described`) another column's
    description in the task's text explains the rest of the phrase (`vocabulary.rival_reading`)."""
    joined = "_".join(word.lower().split())
    spelled = [c for c in pool if vocabulary.initials_of(c.lower(), word.lower().split())]
    if len(word.split()) > 1 and spelled and not any(c.lower() == joined for c in pool):
        return spelled[:1]  # "prime minister" -> pm
    said = _singular(word.lower().split())
    for cand in [joined, *word.lower().split()[::-1]]:
        low = _singular([cand])[0]
        exact = [
            c for c in pool if c.lower() in (cand, low) or LEXICON.abbreviations.get(c.lower()) in (cand, low)
        ]
        if exact:
            if cand != joined and described and vocabulary.rival_reading([word], exact[0], pool, described):
                return []
            return exact[:1]
        if cand == joined:
            # every word of the phrase is a word of the column's name, in order ("pad type" -> PadType),
            # or the words run together are its name ("town size" -> townsize)
            spelt = [
                c
                for c in dict.fromkeys(pool)
                if _singular(vocabulary.column_tokens(c)) == said
                or (len(said) > 1 and c.lower().replace("_", "") == "".join(word.lower().split()))
            ]
            if not spelt:
                spelt = vocabulary.spelled_by(word.split(), pool)  # "latitude band" -> lat_band
            if len(spelt) == 1:
                return spelt
    if len(said) == 1:
        # one word that is a word of exactly one column's name ("by band" -> age_band); not the unit
        # of a rate column ("miles per gallon" says `Miles_per_Gallon`, no key "gallon")
        holders = [
            c
            for c in dict.fromkeys(pool)
            if said[0] in (tokens := _singular(vocabulary.column_tokens(c)))
            and tokens[max(tokens.index(said[0]) - 1, 0)] != "per"
        ]
        if len(holders) == 1 and len(vocabulary.column_tokens(holders[0])) > 1:
            return holders
        # the column's whole name begins the word, and no other's does ("by treatment" -> treat)
        begun = [
            c
            for c in dict.fromkeys(pool)
            if len(c) >= 4 and said[0].isalpha() and said[0].startswith(c.lower())
        ]
        if len(begun) == 1 and not (
            described and vocabulary.rival_reading([word], begun[0], pool, described)
        ):
            return begun
    return []


def join(b: Binder, req: Requirement, plan: Plan) -> None:
    joined = [(s, j) for s in b.sem.selections for j in s.joins]
    if not joined or req.how is None:
        plan.unverified.append(req)
        return
    if req.how == "left" and req.subject:
        bound = _kept_side(b, req.subject, joined, extract.says_absent(req.text))
        if bound is not None:
            keep_side(b, req, *bound, plan)
            return
        if not re.search(rf"\b(?:{'|'.join(LEXICON.join_verbs)}|combin\w*)", req.text.lower()):
            plan.unverified.append(req)  # only the kept entries were stated, and they name no side
            return
    wanted = {"inner": ("inner",), "left": ("left", "outer", "right"), "outer": ("outer",)}[req.how]
    agreeing = [(s, j) for s, j in joined if j.how in wanted]
    if agreeing:
        sel = agreeing[0][0]
        plan.notes.append(f"{req.describe()}: the code joins that way")
        if b.stored(sel) and sel.sql:
            plan.items.append(
                b.item(
                    req,
                    "table_query",
                    probes.table_matches_probe(b.con or "", sel.target or "", sel.sql),
                    b.variables(sel),
                    "agrees",
                    constraint=True,
                )
            )
        return
    sel, j = joined[-1]
    plan.notes.append(f"{req.describe()}: the code's join is {j.how} ({j.text[:80]})")
    site = None
    if sel.language == "sql" and b.con and sel.sql:
        b.add_rerun(req, sel, sql_edit.set_join(sel.sql, req.how), "join", plan)
        return
    elif j.left.isidentifier() and j.right.isidentifier():
        on = f", on={j.keys!r}" if j.keys else ""
        site = textwrap.dedent(f"""\
            import pandas as _pd
            _a = len(_pd.merge({j.left}, {j.right}, how={j.how!r}{on}))
            _b = len(_pd.merge({j.left}, {j.right}, how={req.how!r}{on}))
            _v = _a != _b
            _o = {{'rows_as_written': _a, 'rows_as_stated': _b}}""")
    edit = None
    if site is None and sel.language == "pandas" and (stated := _merge_as_stated(j.text, req.how)):
        # `colonies.merge(summary[cols].reset_index(), on="island")`: the call itself, both ways
        site = _rows_both_ways(j.text, stated)
        edit = probes.SpanEdit(kind="text", before=j.text, after=stated)
    if site:
        plan.items.append(b.item(req, "join_rows", site, b.variables(sel), "join", edit=edit))
    else:
        plan.unverified.append(req)


def side_name(expr: str) -> str:
    """The table or frame one side of a join reads: `airlines AS a` -> airlines, a subquery ->
    the table of its FROM, `customers[cols]` -> customers."""
    text = expr.strip()
    pattern = r"\(.*?\bFROM\s+([A-Za-z_]\w*)" if text.startswith("(") else r"([A-Za-z_]\w*)"
    m = re.match(pattern, text, re.IGNORECASE | re.DOTALL)
    return m.group(1) if m else ""


def _kept_side(
    b: Binder, subject: list[str], joined: list[tuple[Selection, Join]], absent: bool = False
) -> tuple[Selection, Join, str] | None:
    """The one join side the question's kept entries name: the table the clause put their list in
    ("every maker on the list", the list put in `countries`), else the only side that the noun
    names, by the side's name ("every band" -> `bands`, `age_bands`) or by a column of it ("every
    label" -> the side with a `label` column). A noun that names one side and a column of the other
    (`maker_summary` and `countries.maker`) is the key both share, not a side: then the side the
    code built from values written out in it (the hand-typed list, `CodeSemantics.listed`) is the
    one, when the span makes one join and one of its sides is such a list. A noun that names no
    side ("every plan") is that list's only when the clause says the data may lack some of them
    (`absent`: "even when no customer has it"): "keeping every day" in a join of the daily rows to a
    typed table of positions keeps the days. None otherwise."""
    noun = subject[0]
    sides = [
        (sel, j, side, name)
        for sel, j in joined
        for side, expr in (("left", j.left), ("right", j.right))
        if (name := side_name(expr))
    ]

    def by_name(name: str, word: str) -> bool:
        words = [name.lower(), *re.split(r"[_\d]+", name.lower())]
        return any(len(w) >= 3 and _same_noun(w, word) for w in words)

    if len(subject) > 1:
        placed = [
            (sel, j, side)
            for sel, j, side, name in sides
            if any(
                name.lower() in (w.lower(), b.aliases.get(w.lower())) or by_name(name, w) for w in subject[1:]
            )
        ]
        if len(placed) == 1:
            return placed[0]
        if len({name for sel, j, side, name in sides if (sel, j, side) in placed}) == 1 and placed:
            # the place's table on a side of several joins ("sites" counted per island, then joined
            # again for a mean): the entries are kept when one join keeps them, else the first join
            return next((p for p in placed if p[1].how in (p[2], "outer")), placed[0])

    # a noun naming a join key of the span (`right_on="division"` for "keeping every division") names
    # what the joined sides share, not one side
    keys = {k.lower() for _, j in joined for k in j.keys}

    def by_column(name: str) -> bool:
        cols = [c for c in b.vocab.tables.get(name.lower(), {}) if _same_noun(c.lower(), noun)]
        return any(c.lower() not in keys for c in cols)

    named = [(sel, j, side) for sel, j, side, name in sides if by_name(name, noun)]
    hits = [(sel, j, side) for sel, j, side, name in sides if by_name(name, noun) or by_column(name)]
    if len(hits) == 1:
        return hits[0]
    # The noun is the key both sides share ("keeping firms the file lacks"): the entries to keep are
    # those of the one join whose one side the code built from values written out (the list).
    listed = {n.lower() for n in b.sem.listed}
    typed = [(sel, j, side) for sel, j, side, name in sides if name.lower() in listed]
    if len(joined) == 1 and len(typed) == 1 and (typed[0] in hits or (not hits and absent)):
        return typed[0]
    if len(named) == 1 and len(joined) == 1 and not typed:
        # "every tier", the list typed in by an earlier turn: the side called `tiers`, not the one
        # that only has a `tier` column
        return named[0]
    return None


def _same_noun(a: str, b: str) -> bool:
    """One noun in either number: mode/modes, company/companies, class/classes, band/bands."""
    a, b = a.lower(), b.lower()
    if a == b or extract.stem(a) == extract.stem(b):
        return True
    for one, many in ((a, b), (b, a)):
        if many in (one + "s", one + "es") or (one.endswith("y") and many == one[:-1] + "ies"):
            return True
    return False


_ANTI_OR_SEMI = re.compile(r"\s*(?:ANTI|SEMI)\s+JOIN\b", re.IGNORECASE)


def keep_side(b: Binder, req: Requirement, sel: Selection, j: Join, side: str, plan: Plan) -> None:
    """The stated entries' side of the join must keep every row: the code's join re-run keeping
    that side, and (by the answer gate) a different reported answer, are the evidence."""
    noun = req.subject[0]
    if _ANTI_OR_SEMI.match(j.text):
        # "how many codes have no big firm": an anti (or semi) join picks entries by whether they match;
        # it asks about the unmatched ones, and drops none of them by accident
        plan.notes.append(
            f"{req.describe()}: the code's join picks the entries by their match ({j.text[:80]})"
        )
        return
    unfiltered = sql_edit.unfilter_kept_side(sel.sql, side) if sel.language == "sql" and sel.sql else None
    if j.how in (side, "outer") and unfiltered is None:
        plan.notes.append(
            f"{req.describe()}: the code's {j.how} join keeps every {noun} ({side_name(getattr(j, side))})"
        )
        return
    if unfiltered is not None:
        plan.notes.append(
            f"{req.describe()}: the code's {j.how} join keeps every {noun} ({side_name(getattr(j, side))}), but its "
            "WHERE tests the other side's columns and so drops the unmatched ones again"
        )
    else:
        plan.notes.append(
            f"{req.describe()}: every {noun} is on the {side} side ({side_name(getattr(j, side))}), the code's "
            f"join is {j.how} ({j.text[:80]})"
        )
    # keeping every entry of one side adds its unmatched entries; it does not ask to drop the other
    # side's: a join that keeps the other side becomes an outer one (a codebook's left join keeps
    # every data entry it matches, and its own empty codes besides)
    how = "outer" if j.how in ("left", "right") and j.how != side else side
    if sel.language == "sql":
        fixed = unfiltered or (sql_edit.keep_join_side(sel.sql, how) if sel.sql else None)
        if not fixed or not b.con:
            plan.unverified.append(req)
            return
        if b.stored(sel):
            code = probes.table_matches_probe(b.con, sel.target or "", fixed)
        else:
            code = probes.rerun_probe(b.con, sel.sql, fixed)
        edit = probes.SpanEdit(kind="sql", before=sel.sql, after=fixed)
    else:
        stated = _merge_as_stated(j.text, how)
        if stated is None:
            plan.unverified.append(req)
            return
        code = _rows_both_ways(j.text, stated)
        edit = probes.SpanEdit(kind="text", before=j.text, after=stated)
    plan.items.append(b.item(req, "kept_side", code, b.variables(sel), "join", edit=edit, needs_changed=True))


def _rows_both_ways(written: str, stated: str) -> str:
    """A probe: the rows of a merge call as written and as stated differ."""
    return textwrap.dedent(f"""\
        _a = len({written})
        _b = len({stated})
        _v = _a != _b
        _o = {{'rows_as_written': _a, 'rows_as_stated': _b}}""")


def _merge_as_stated(call: str, how: str) -> str | None:
    """A pandas `merge` or `join` call's text with the stated `how` (replaced, or added before its
    closing parenthesis); None when the text is no single such call."""
    text = call.strip()
    if not re.search(r"(?:^|\.)(?:merge|join)\(", text) or not text.endswith(")") or "\n" in text:
        return None
    if re.search(r"\bhow\s*=", text):
        return re.sub(r"\bhow\s*=\s*(['\"])\w+\1", f"how={how!r}", text, count=1)
    return f"{text[:-1]}, how={how!r})"


# the window's first ORDER BY key and its direction; later keys are tie-breaks (`ORDER BY income DESC, hh`)
_WINDOW_ORDER = re.compile(
    r"OVER\s*\((?:PARTITION BY [^)]*?)?ORDER BY\s+([^),]+?)(\s+DESC)?\s*(?:NULLS \w+\s*)?(?:,[^()]*)?\)",
    re.IGNORECASE,
)
_WINDOW_ALIAS = re.compile(r"\bOVER\s*\((?:[^()]|\([^()]*\))*\)\s+AS\s+([A-Za-z_]\w*)", re.IGNORECASE)
_POSITION = re.compile(r"rank|position|row_?num|ordinal|\bpos\b|^\d+$", re.IGNORECASE)


def _turn_window(sql: str, descending: bool) -> str | None:
    """The SQL with its one window's first ORDER BY key put the stated way round."""
    m = _WINDOW_ORDER.search(sql)
    if m is None or len(_WINDOW_ORDER.findall(sql)) != 1:
        return None
    key_end = m.end(2) if m.group(2) else m.end(1)
    return sql[: m.end(1)] + (" DESC" if descending else "") + sql[key_end:]


def order(b: Binder, req: Requirement, plan: Plan) -> None:
    ranked = [s for s in b.sem.selections if s.order or s.limit]
    if not ranked or req.descending is None:
        plan.unverified.append(req)
        return
    windows = [bool(m.group(2)) for s in b.sem.selections for m in _WINDOW_ORDER.finditer(s.sql)]
    # a rank column: named like one, or the alias of a window (`ROW_NUMBER() OVER (...) AS rk`)
    ranks = {m.lower() for s in b.sem.selections for m in _WINDOW_ALIAS.findall(s.sql)}
    positional = any(
        s.order and (_POSITION.search(s.order[0][0]) or s.order[0][0].lower() in ranks) for s in ranked
    )
    # A rank computed in a window (RANK() OVER (ORDER BY x DESC)) then read in ascending rank order
    # is "highest first": the direction lives in the window, not in the final ORDER BY.
    if (windows and req.descending in windows) or (positional and not windows):
        plan.notes.append(f"{req.describe()}: the code ranks through a rank column")
        return
    texts = {m.group(0) for s in b.sem.selections for m in _WINDOW_ORDER.finditer(s.sql)}
    if positional and len(texts) == 1 and b.con:
        # the rank column's one window runs the other way (a subquery is listed with the statement
        # around it): the statement that runs it is re-run with the window the stated way round
        sel = max((s for s in b.sem.selections if _WINDOW_ORDER.search(s.sql)), key=lambda s: len(s.sql))
        turned = _turn_window(sel.sql, req.descending)
        if turned is not None:
            plan.notes.append(f"{req.describe()}: the code ranks through a rank column ordered the other way")
            rerun = probes.rerun_probe(b.con, sel.sql, turned)
            span = probes.SpanEdit(kind="sql", before=sel.sql, after=turned)
            plan.items.append(b.item(req, "ranking", rerun, b.variables(sel), "reversed", edit=span))
            return
    # a limit with no order of its own (`by_iq["man"].head(5)`) takes the order of the frame it reads:
    # the statements that order are read first
    ranked = [s for s in ranked if s.order] or ranked
    for sel in ranked:
        direction_ok = not sel.order or sel.order[0][1] == req.descending
        count_ok = req.k is None or sel.limit in (None, req.k) or (req.k == 1 and sel.limit is not None)
        if direction_ok and count_ok:
            plan.notes.append(f"{req.describe()}: the code ranks that way")
            _ranked_constraint(b, req, sel, plan)
            return
    sel = ranked[-1]
    plan.notes.append(f"{req.describe()}: the code orders by {sel.order} with limit {sel.limit}")
    # the code's first key runs the other way from the question: the hint says the direction
    status = "reversed" if sel.order and sel.order[0][1] != req.descending else "order"
    site, edit = None, None
    if sel.language == "sql" and b.con and sel.sql:
        fixed = sql_edit.set_order(
            sel.sql,
            descending=req.descending if sel.order else None,
            limit=req.k if sel.limit is not None and req.k and req.k > 1 else None,
        )
        site = probes.rerun_probe(b.con, sel.sql, fixed) if fixed and fixed != sel.sql else None
        edit = probes.SpanEdit(kind="sql", before=sel.sql, after=fixed) if site and fixed else None
    elif sel.target and sel.target.isidentifier() and sel.target not in b.sem.reports:
        site = _pandas_order_site(sel, req)
    if site is None and sel.language == "pandas" and sel.order and sel.limit and req.descending is not None:
        # `cohort.nlargest(5, "gpa")` written straight into the answer: no ranked frame to read, so
        # the call is put the stated way round and the answer must change
        key, descending = sel.order[0]
        if descending != req.descending:
            flip = {True: "nlargest", False: "nsmallest"}
            before = f".{flip[descending]}({sel.limit}, {key!r})"
            edit = probes.SpanEdit(
                kind="text", before=before, after=f".{flip[req.descending]}({sel.limit}, {key!r})"
            )
            site = "_v = True\n_o = {'code_ranks': %r}" % (
                "largest first" if descending else "smallest first"
            )
            plan.items.append(
                b.item(req, "ranking", site, b.variables(sel), "reversed", edit=edit, needs_changed=True)
            )
            return
    if site:
        # the pandas site reads the ranked artifact itself: a constraint that a correct retry meets
        artifact = sel.language != "sql" and (sel.target or "").lower() not in b.rewritten
        plan.items.append(
            b.item(req, "ranking", site, b.variables(sel), status, constraint=artifact, edit=edit)
        )
    else:
        plan.unverified.append(req)


def _ranked_constraint(b: Binder, req: Requirement, sel: Selection, plan: Plan) -> None:
    """A ranking that matches the question: a stored ranking must equal its query as stated; a
    ranking query over a table the span stored needs values of the ranking column there; a pandas
    ranking left in a variable must keep running in the stated direction."""
    target = sel.target or ""
    if sel.language != "sql" and target.isidentifier() and target.lower() not in b.rewritten and sel.order:
        site = _pandas_order_site(sel, req, strict=True)
        plan.items.append(b.item(req, "ranking", site, b.variables(sel), "agrees", constraint=True))
        return
    if sel.language != "sql" or not b.con or not sel.sql:
        return
    if b.stored(sel):
        plan.items.append(
            b.item(
                req,
                "table_query",
                probes.table_matches_probe(b.con, sel.target or "", sel.sql),
                b.variables(sel),
                "agrees",
                constraint=True,
            )
        )
        return
    column = key_name(sel.order[0][0]) if sel.order else ""
    source = next(
        (
            t
            for t in sel.sources
            if t in b.sem.tables() and t not in b.rewritten and column in b.vocab.tables.get(t, {})
        ),
        None,
    )
    if source:
        plan.items.append(
            b.item(
                req,
                "defined",
                probes.defined_probe(b.con, source, column),
                [v for v in [b.table_frames.get(source), source] if v][:1],
                "empty",
                constraint=True,
            )
        )


def _pandas_order_site(sel: Selection, req: Requirement, strict: bool = False) -> str:
    """The ranked result itself: its values must run in the stated direction (and number k). A
    frame is read at its sort column; without it, at its last column, or (strict: the code ranks
    as stated, so only a sure reading may fail it) not at all. A dict is a record of reported
    fields (a count beside the label that wins), not a ranking: it is never read as one. Strict, a
    Series is read only when it is the sort column itself: `nlargest(3, "activity")["year"]` holds
    the years of the ranked rows, and `.loc[s.idxmax()]` one record, neither of them in order."""
    key = sel.order[0][0] if sel.order else ""
    empty = "_pd.Series([], dtype=float)"
    other = empty if strict else "_t.iloc[:, -1]"
    series = f"(_t if getattr(_t, 'name', None) == {key!r} else {empty})" if strict else "_pd.Series(_t)"
    return textwrap.dedent(f"""\
        import pandas as _pd
        _t = {sel.target}
        _s = (_t[{key!r}] if {key!r} in _t.columns else {other}) if isinstance(_t, _pd.DataFrame) else ({empty} if isinstance(_t, dict) else {series})
        _s = _pd.to_numeric(_s, errors='coerce').dropna()
        _mono = _s.is_monotonic_decreasing if {bool(req.descending)!r} else _s.is_monotonic_increasing
        _v = len(_s) > 1 and not _mono
        _o = {{'rows': int(len(_s)), 'in_stated_order': bool(_mono)}}""")


def _join_on_fewer_keys(b: Binder, req: Requirement, keys: list[str], plan: Plan) -> None:
    """A table built per stated keys (year and month) joined to another on only some of them
    (month): the probe compares the join's rows on the code's keys with those on the stated ones."""
    low = {k.lower() for k in keys}
    for sel in b.sem.selections:
        for j in sel.joins:
            code_keys = {k.lower() for k in j.keys}
            if not (code_keys and code_keys < low and j.left.isidentifier() and j.right.isidentifier()):
                continue
            if not all(k in b.vocab.tables.get(t.lower(), {}) for t in (j.left, j.right) for k in keys):
                continue
            plan.notes.append(
                f"{req.describe()}: the code joins {j.left} and {j.right} on {', '.join(j.keys)} only"
            )
            site = textwrap.dedent(f"""\
                import pandas as _pd
                _a = len(_pd.merge({j.left}, {j.right}, how={j.how!r}, on={j.keys!r}))
                _b = len(_pd.merge({j.left}, {j.right}, how={j.how!r}, on={keys!r}))
                _v = _a != _b
                _o = {{'rows_on_code_keys': _a, 'rows_on_stated_keys': _b}}""")
            join_req = Requirement(
                kind=Kind.JOIN, text=req.text, how="left" if j.how == "left" else "inner", keys=keys
            )
            plan.items.append(b.item(join_req, "join_rows", site, b.variables(sel), "join"))
            return
