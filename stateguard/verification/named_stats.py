"""A statistic the code's own name for a value states, computed as another one.

`AVG(age) AS median_age`, `"median_visits": rand["mdvis"].mean()`, `median_situps=("situps",
"mean")`: the name the code gives the value says median, the call computes the mean. When the
question asks for that statistic ("the typical (median) age", "the median number of visits") and
the words around it name no column the ordinary reading could bind, the name is the fact that ties
the question's statistic to the code's value. A finding needs the aggregate re-run as named to
give other values AND the turn's answer to change (`ProbeItem.needs_changed`).

Mean, median and sum (total), the statistics a name states without doubt ("med" only with exactly
the aggregated column's name: `med_income` for a statistic of `income`); a minimum or maximum
only where the code computes one of those three (`max_drop = MIN(change)` is a fall's largest size,
so one extreme is never read against the other from the name alone), or where a summary rebuilt under
its name took, under that output name, the named extreme when it was first built (`max_tbl = MAX(tbl)`
then, `MIN(tbl) AS max_tbl` now); one statistic word per name; a value the ordinary aggregation
reading already bound is left to it.
"""

from __future__ import annotations

import re

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import Aggregate, CodeSemantics, Selection
from stateguard.verification.bind import RequirementBinder
from stateguard.verification.binder import Plan
from stateguard.verification.code_text import unwrapped
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import Vocabulary, column_tokens

_SWAPPABLE = ("mean", "median", "sum")
_CENTRAL = ("mean", "median")  # the one statistic of `only_statistic`: a typical value, asked one way
# the lexicon's one-word names of those statistics ("avg", "average", "mean", "median")
_NAMED = {w: f for w, f in LEXICON.statistics.items() if f in _SWAPPABLE and " " not in w}
# An extreme a name states (`min_cl`, `max_pctmin`): read only against a mean, median or sum the code
# computes, never against the other extreme (`max_drop = MIN(change)` is a fall's largest size)
_EXTREMES = {
    **dict.fromkeys(("min", "minimum", "lowest", "smallest"), "min"),
    **dict.fromkeys(("max", "maximum", "highest", "largest", "biggest", "greatest"), "max"),
}


# a mean or median named beside "total" (`avg_total`, `med_total`): the total is the quantity. "med"
# stays out of the shared abbreviations (`LEXICON.abbreviations`): in other names it shortens "medical".
_BESIDE_TOTAL = {w for w, f in _NAMED.items() if f in ("mean", "median")} | {"med"}


def stated_by(name: str, column: str | None = None) -> set[str]:
    """The statistics a name's words state; "total" is no statistic beside another's short form
    (`med_total` is the median of a total). `column`: the column the named value aggregates; "med"
    and that column's own name, nothing else (`med_income` for a statistic of `income`), is its
    median."""
    tokens = whole = column_tokens(name)
    if "total" in tokens and _BESIDE_TOTAL & set(tokens):
        tokens = [t for t in tokens if t != "total"]
    out = {{**_NAMED, **_EXTREMES}[t] for t in tokens if t in _NAMED or t in _EXTREMES}
    if column and not out and whole[:1] == ["med"] and whole[1:] == column_tokens(column):
        out = {"median"}
    return out


def _names_of(sel: Selection, agg: Aggregate, sem: CodeSemantics) -> list[str]:
    """The names the code gives the aggregate's value: its alias, the answer fields it is written
    into (two fields may hold the same call), or the field that reads the variable holding it."""
    if agg.alias:
        return [agg.alias]
    return [
        field
        for field, text in sem.fields.items()
        if unwrapped(text, rounding=True) == agg.text
        or (sel.target and text.strip() == sel.target and len(sel.aggregates) == 1)
        # `_row = con.execute("SELECT COUNT(*), AVG(vol), MEDIAN(vol) ...").fetchone()`, `"median_vol": _row[2]`
        or (
            sel.target is not None
            and agg.position is not None
            and re.fullmatch(rf"{re.escape(sel.target)}\s*\[\s*{agg.position}\s*\]", text.strip()) is not None
        )
    ]


def named_statistics(
    question: str, sem: CodeSemantics, earlier: dict[str, str] | None = None
) -> list[tuple[Requirement, Selection, Aggregate]]:
    """`earlier`: a rebuilt summary's outputs by name, with the statistic each took when it was first
    built (`regrouped.GroupingHistory.earlier_statistics`); a name that states the statistic it took
    then stands for the question asking it."""
    before = earlier or {}
    asked = LEXICON.statistics_in(question, asked=True) | {
        f for w, f in _EXTREMES.items() if re.search(rf"\b{re.escape(w)}\b", question, re.IGNORECASE)
    }
    out: list[tuple[Requirement, Selection, Aggregate]] = []
    for sel in sem.selections:
        for agg in sel.aggregates:
            # an extreme the code computes is read only against the same name's earlier build: a
            # rebuilt `max_time` that took MAX(time) and now takes MIN(time)
            extreme = agg.function in ("min", "max")
            if (
                not agg.standalone
                or agg.window
                or not agg.column
                or not (agg.function in _SWAPPABLE or extreme)
            ):
                continue
            named = [
                (name, stated.pop())
                for name in _names_of(sel, agg, sem)
                if len(stated := stated_by(name, agg.column)) == 1
            ]
            taken = {r.fields[0] for r, _, _ in out}
            named = [
                (n, f)
                for n, f in named
                if f != agg.function
                and (before.get(n.lower()) == f or (f in asked and not extreme))
                and n not in taken
            ]
            if not named:
                continue
            name, function = named[0]
            req = Requirement(
                kind=Kind.AGGREGATION,
                text=f"`{name}`",
                function=function,
                subject=[agg.column],
                columns=[agg.column],
                fields=[name],
            )
            out.append((req, sel, agg))
    return out


def bind_named(
    b: RequirementBinder, question: str, plan: Plan, earlier: dict[str, str] | None = None
) -> None:
    """Probe items (a changed answer required) for values named one statistic and computed as another."""
    bound = {
        (r.function, c.lower())
        for r in plan.requirements
        if r.kind is Kind.AGGREGATION and r not in plan.unverified
        for c in b.resolve(r)
    }
    for req, sel, agg in named_statistics(question, b.sem, earlier):
        if (req.function, (agg.column or "").lower()) in bound:
            continue
        _rerun_as_asked(
            b, plan, req, sel, agg, f"the code names it {req.text} but computes {agg.function} ({agg.text})"
        )


def _rerun_as_asked(
    b: RequirementBinder, plan: Plan, req: Requirement, sel: Selection, agg: Aggregate, why: str
) -> None:
    """The requirement, a note saying why it was read, and the aggregate re-run with the statistic asked
    (a finding only on a changed answer)."""
    plan.requirements.append(req)
    plan.notes.append(f"{req.describe()}: {why}")
    b.swapped(req, sel, agg, plan, needs_changed=True)


# an item of a listing: after a colon, a comma or "and", up to the next comma, "and" or the end
_ITEM = re.compile(r"(?:[:,;]|\band\b)\s*(?P<item>[^,;:.?!()]+?)\s*(?=,|;|\band\b|[.?!]|$)", re.IGNORECASE)


def bare_totals(question: str, sem: CodeSemantics) -> list[tuple[Requirement, Selection, Aggregate]]:
    """A mean or median the code names by a plural noun (`avg(number) AS depredations`) that the
    question lists bare, with no statistic said in its item ("farms, hard-hit farms, depredations and
    the largest number ..."): a plural said bare asks how many there are, a total, never a typical
    value. The name must be the item's first word, whole, and a plural; the question must ask no mean
    or median anywhere."""
    if LEXICON.statistics_in(question, asked=True) & set(_CENTRAL):
        return []
    items = [m.group("item") for m in _ITEM.finditer(question)]
    out: list[tuple[Requirement, Selection, Aggregate]] = []
    for sel in sem.selections:
        for agg in sel.aggregates:
            name = agg.alias or ""
            if (
                agg.function not in _CENTRAL
                or not agg.standalone
                or agg.window
                or not agg.column
                or not re.fullmatch(r"[a-z]{4,}s", name)
                or stated_by(name, agg.column)
            ):
                continue
            said = [
                i
                for i in items
                if re.fullmatch(rf"(?:the\s+)?{name}(?:\s+[a-z]+)?", i.strip(), re.IGNORECASE)
            ]
            if len(said) != 1 or LEXICON.statistics_in(said[0]):
                continue
            req = Requirement(
                kind=Kind.AGGREGATION,
                text=said[0].strip(),
                function="sum",
                subject=[agg.column],
                columns=[agg.column],
                fields=[name],
            )
            out.append((req, sel, agg))
    return out


_SHARE = re.compile(rf"\b(?:{'|'.join(LEXICON.share_words)})s?\b", re.IGNORECASE)


def indicator_medians(
    question: str, sem: CodeSemantics, vocab: Vocabulary
) -> list[tuple[Requirement, Selection, Aggregate]]:
    """A median of a 0/1 indicator where the question asks a share ("the share of visits with wheeze")
    and says no median anywhere: a median of zeros and ones is 0 or 1, never a share; the share is
    the indicator's mean."""
    if not _SHARE.search(question) or "median" in LEXICON.statistics_in(question):
        return []
    indicators = {
        c
        for cols in vocab.tables.values()
        for c, i in cols.items()
        if i.kind == "num" and i.low == 0 and i.high == 1
    }
    return [
        (
            Requirement(
                kind=Kind.AGGREGATION,
                text="a share of an indicator",
                function="mean",
                subject=[agg.column],
                columns=[agg.column],
            ),
            sel,
            agg,
        )
        for sel in sem.selections
        for agg in sel.aggregates
        if agg.function == "median" and agg.column in indicators and agg.standalone and not agg.window
    ]


def bind_bare(b: RequirementBinder, question: str, plan: Plan) -> None:
    """Probe items (a changed answer required) for totals the question lists bare and the code averages,
    and for shares the code takes as the median of an indicator."""
    for req, sel, agg in bare_totals(question, b.sem):
        _rerun_as_asked(
            b, plan, req, sel, agg, f"the question lists {req.text} bare; the code computes {agg.function}"
        )
    for req, sel, agg in indicator_medians(question, b.sem, b.vocab):
        _rerun_as_asked(
            b, plan, req, sel, agg, f"the question asks a share; the code takes the median ({agg.text})"
        )


def _names_central(text: str) -> bool:
    return bool(LEXICON.statistics_in(text) & set(_CENTRAL))


def only_statistic(
    question: str, sem: CodeSemantics, rule: bool = False
) -> list[tuple[Requirement, Selection, Aggregate]]:
    """The question asks one of mean and median, never the other ("the median MIC of each drug",
    "the worst delays on average"), and the code computes exactly one such aggregate, of the other
    kind (`bact.groupby(...)[drugs].mean()`): the words name no column the ordinary reading could
    bind, so the code's one value of that family is the one asked. Two such aggregates, or a
    question that names both statistics, abstain. `rule`: the text states a rule of the turn ("long
    when it lasts more than 1.5 times the median duration of its wave"), whose statistic is computed
    per row (a window, a pandas transform, a flag), so those aggregates count too."""
    asked = LEXICON.statistics_in(question, asked=True)
    if len(asked & set(_CENTRAL)) != 1:
        return []
    function = (asked & set(_CENTRAL)).pop()
    found = [
        (sel, agg)
        for sel in sem.selections
        for agg in sel.aggregates
        # a rule's statistic is taken per row or per group (a window, a flag, a grouped statistic), not
        # over all rows at once (`avg(CASE WHEN dear ...)`, a share reported beside a rule dropped)
        if agg.function in _CENTRAL
        and ((agg.window or sel.flag or sel.group_keys) if rule else not (agg.window or sel.flag))
    ]
    if len(found) != 1 or found[0][1].function == function or not found[0][1].standalone:
        return []
    sel, agg = found[0]
    req = Requirement(
        kind=Kind.AGGREGATION,
        text=f"the {function} the question asks",
        function=function,
        subject=[agg.column or agg.receiver or agg.text],
        columns=[agg.column] if agg.column else [],
    )
    return [(req, sel, agg)]


def bind_only(b: RequirementBinder, question: str, plan: Plan, rule: str = "") -> None:
    """Probe items (a changed answer required) for the one mean-or-median the code computes, when
    the question asks the other one and the ordinary reading bound no aggregation; or, when the
    question names neither, the one the turn's own rule (`rule`, its context) names."""
    if any(r.kind is Kind.AGGREGATION and r not in plan.unverified for r in plan.requirements):
        return  # an aggregation the words bound is checked as such
    found = only_statistic(question, b.sem)
    if not found and rule:  # a turn that states a rule: its per-row statistic counts too
        found = only_statistic(question if _names_central(question) else rule, b.sem, rule=True)
    for req, sel, agg in found:
        plan.requirements.append(req)
        plan.notes.append(f"{req.describe()}: the code's one mean-or-median is a {agg.function} ({agg.text})")
        b.swapped(req, sel, agg, plan, needs_changed=True)
