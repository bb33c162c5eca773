"""The binder's shared part: the plan it fills, and the code sites and probe items every binding uses.

`bind.py` maps each kind of requirement to its binding; the shape (`bind_shape`), cut-off
(`bind_cutoff`) and data-source (`current`) bindings are functions of a `Binder`. All of them
read the code's semantics and the data's vocabulary through this class and add `ProbeItem`s to a
`Plan`, so none of them imports `bind.py`.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.verification import probes
from stateguard.verification.requirements import UNIT_SCALES, Kind, Requirement, registered_kind
from stateguard.verification.vocabulary import Vocabulary

__all__ = ["Binder", "Plan", "close", "reason"]


class Plan(BaseModel):
    requirements: list[Requirement] = Field(default_factory=list)
    items: list[probes.ProbeItem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    unverified: list[Requirement] = Field(default_factory=list)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


class Binder:
    """The code and data a binding reads, and the items it adds."""

    def __init__(self, sem: CodeSemantics, vocab: Vocabulary, rewritten: frozenset[str] = frozenset()):
        self.sem, self.vocab = sem, vocab
        # Names the workspace rebound after the span (a segment reviewed late): their current
        # content is not this span's artifact, so checks fall back to the span's own code.
        self.rewritten = {n.lower() for n in rewritten}
        self.con = sem.connection
        self.table_frames = {t: v for v, t in sem.frames.items()}
        self.requirements: list[Requirement] = []
        self.said = ""  # the turn's own words, where a binding reads them
        self.code = ""  # the turn's code, where a binding reads its text
        self._field_texts: set[str] | None = None  # answer fields' values as parsed code, once
        # Nouns the task's questions put in a named frame or table ("put the key in a frame `jobs`"):
        # noun -> name, so "every entry of the key" names the side `jobs`.
        self.aliases: dict[str, str] = {}
        # The lists the code (this turn's or a committed turn's) typed in, and their row-for-row copies
        # (`listed_joins.with_copies`): a value only they hold is an entry, not rows of the data.
        self.listed: set[str] = set()

    def bounds_except(self, req: Requirement) -> list[float]:
        """The bounds the other comparison requirements of the turn state."""
        return [
            v
            for r in self.requirements
            if r is not req and r.kind is Kind.COMPARISON
            for v in (r.value, r.upper)
            if v is not None
        ]

    def within(self, column: str, value: float, percent: bool = False, scaled: bool = True) -> bool:
        """Can the stated number be a cut-off on `column`: does it, in one of its forms (as said, in
        thousands or millions, a percentage's fraction), fall inside the values the column holds? "from
        12 up to 14 g/dL" is no cut-off on an age of 24 to 96. An unknown range: True. Without
        `scaled`, only the number as said (or a percentage's fraction) counts."""
        ranges = [
            (info.low, info.high)
            for table in self.vocab.tables.values()
            if (info := table.get(column)) is not None and info.low is not None and info.high is not None
        ]
        if not ranges:
            return True
        forms = [
            value,
            *(value * s for s in UNIT_SCALES if scaled),
            *(value / s for s in UNIT_SCALES if scaled),
        ]
        forms += [value / 100] if percent else []
        return any(low <= f <= high for low, high in ranges for f in forms)

    def columns_of(self, sel: Selection) -> list[str]:
        names = sel.sources if sel.language == "sql" else [sel.frame, *(sel.sources)]
        return self.vocab.columns(n.lower() for n in names if n)

    def read_columns(self, numeric: bool = False) -> list[str]:
        """The columns of every table or frame the code's statements read (`numeric`: numbers only)."""
        pool = self.vocab.columns(
            {s.lower() for sel in self.sem.selections for s in [*sel.sources, sel.frame] if s}
        )
        if not numeric:
            return pool
        kinds = {c: i.kind for t in self.vocab.tables.values() for c, i in t.items()}
        return [c for c in pool if kinds.get(c) == "num"]

    def variables(self, sel: Selection) -> list[str]:
        """The workspace variable a finding on this selection localizes to (never a `_scratch` name)."""
        if sel.language == "sql":
            target = (sel.target or "").lower()
            names = [v for v in [self.table_frames.get(target), sel.target] if v][:1]
        elif sel.flag:
            names = [sel.flag[0]]
        else:
            names = [sel.target] if sel.target and sel.target.isidentifier() else []
        return [n for n in names if not n.startswith("_")]

    def _kind(self, column: str, tables: list[str]) -> str | None:
        for t in tables:
            info = self.vocab.tables.get(t.lower(), {}).get(column)
            if info is not None:
                return info.kind
        return None

    def artifact(self, sel: Selection) -> tuple[str, str] | None:
        """What the selection leaves in the workspace: ("table", name) or ("frame", variable)."""
        if not sel.target or sel.target.lower() in self.rewritten:
            return None
        name = sel.target
        if sel.language == "sql" and name.lower() in self.sem.tables() and name.lower() in self.vocab.tables:
            return ("table", name)
        if name.isidentifier() and name.lower() in self.vocab.tables:
            return ("frame", name)
        return None

    def stored(self, sel: Selection) -> bool:
        """The selection created a SQL table that is still this span's (not rebuilt later)."""
        art = self.artifact(sel)
        return bool(self.con) and art is not None and art[0] == "table"

    def add_rerun(
        self,
        req: Requirement,
        sel: Selection,
        fixed: str | None,
        status: str,
        plan: Plan,
        needs_changed: bool = False,
    ) -> None:
        """Evidence that the query as the task states it gives other rows: against the stored table
        when there is one (an executable constraint that still holds after a correct retry), else
        by running both versions of the query."""
        if not fixed or not self.con:
            plan.unverified.append(req)
            return
        if self.stored(sel):
            code, artifact = probes.table_matches_probe(self.con, sel.target or "", fixed), True
        else:
            code, artifact = probes.rerun_probe(self.con, sel.sql, fixed), False
        edit = probes.SpanEdit(kind="sql", before=sel.sql, after=fixed)
        plan.items.append(
            self.item(
                req,
                "rerun",
                code,
                self.variables(sel),
                status,
                constraint=artifact,
                edit=edit,
                needs_changed=needs_changed,
            )
        )

    def item(
        self,
        req: Requirement,
        check: str,
        code: str,
        variables: list[str],
        status: str,
        constraint: bool = False,
        edit: probes.SpanEdit | None = None,
        needs_changed: bool = False,
    ) -> probes.ProbeItem:
        return probes.ProbeItem(
            id="R",
            requirement=req,
            check=check,
            code=code,
            variables=variables,
            reason=reason(req, status),
            status=status,
            constraint=constraint,
            edit=edit,
            needs_changed=needs_changed,
        )


def side_status(stated: str | None, code: str | None) -> str:
    """The status of a comparison the code makes otherwise than stated: "threshold" when only the
    cut-off value itself is kept the other way (`> 24` for "at least 24": the same direction, the
    bound strict instead of inclusive or the reverse), "differs" when the direction is reversed."""
    if stated and code and stated[0] == code[0]:
        return "threshold"
    return "differs"


def reason(req: Requirement, status: str) -> str:
    """Worker-facing words naming the kind of problem (the hint guard allows task-text numbers; no
    code, no computed values)."""
    spec = registered_kind(req.kind)
    if spec is not None and spec.reason is not None:
        return spec.reason(req, status)  # a registered rule's own words
    what = " and ".join(req.columns) if req.columns else " ".join(req.subject) or "the kept rows"
    said = f"the question asks for: {req.text}"
    if req.term:
        said = f"the current definition of '{req.term}' applies, {said}"
    if status == "threshold":
        return f"the cut-off (threshold) applied to {what} is not the one the question states ({said})"
    if req.kind is Kind.COMPARISON:
        if status == "differs":
            return f"the comparison on {what} keeps the wrong side of the stated bound: its direction is reversed ({said})"
        return (
            f"the filter condition on {what} stated in the question is not applied to the kept rows ({said})"
        )
    if req.flag_scope:
        return f"rows outside the requested scope remain: the filter on the flag {what} is not applied, rows where it is false are used ({said})"
    if req.kind is Kind.SCOPE:
        return f"rows outside the requested scope remain: the filter on {what} does not match the question ({said})"
    if req.kind is Kind.NOT_NULL:
        return f"the filter for recorded values is missing: rows with a missing {what} remain ({said})"
    if req.kind is Kind.AGGREGATION:
        stat = req.text if req.function == "quantile" else req.function
        return (
            f"the aggregation computes a different statistic than the {stat} the question asks for ({said})"
        )
    if req.kind is Kind.SHARE:
        return "the aggregation behind the shares is wrong: they do not add up to the total although the question asks for each part's share"
    if req.kind is Kind.GROUPING:
        return f"the result is grouped by other keys than the question asks (grouping per {what}; {said})"
    if req.kind is Kind.JOIN:
        kept = "only matched rows" if req.how == "inner" else "unmatched rows as well"
        return f"the join keeps a different set of rows than the question asks ({kept}; {said})"
    if req.kind is Kind.ORDER:
        if status == "reversed":
            return f"the ranking runs the other way: its direction is reversed ({said})"
        return f"the ranking order or the number of rows kept differs from the question ({said})"
    if req.kind is Kind.SOURCE:
        return f"the turn reads an earlier version of the data instead of the current {what} the question names ({said})"
    if req.kind is Kind.OUTPUT or status == "empty":
        return "the reported values are empty: a filter or condition kept no usable rows for them"
    return f"the result does not follow the question's {req.kind} requirement ({said})"
