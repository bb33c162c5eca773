"""Map each requirement to the code that should realize it, and build the probe that tests it.

    plan = bind(requirements, semantics, vocab)
    plan.items        # one ProbeItem per requirement the code and data let us test
    plan.notes        # per requirement, what the code does (evidence for the trace and the LLM tier)
    plan.unverified   # requirements nothing could be tied to (the LLM tier's share)

Row requirements (scope, comparison, not_null) are tested on the rows the code keeps: the SQL
query's FROM/JOIN/WHERE, or the pandas frame and mask. When the code keeps the right side of a
stated condition the item still exists (it becomes a passing constraint); when the code keeps
the other side, or never applies the condition, the item shows how many kept rows break it.
Statistic, grouping, join and ranking requirements are tested by re-running the query with that
one part as the task states it (SQL), or recomputing it (pandas): a different result is the
evidence. The exact `_v` semantics live in `probes.py`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import Aggregate, CodeSemantics, Condition, Selection
from stateguard.verification import (
    bind_cutoff,
    listed_joins,
    probes,
    rule_multiples,
    rule_offsets,
    sql_edit,
    unstated_cutoff,
)
from stateguard.verification.bind_loose import code_tests
from stateguard.verification.binder import Binder, Plan, close, side_status
from stateguard.verification.requirements import ORDER_OPS, Kind, Requirement, coded
from stateguard.verification.rules.registry import RULES
from stateguard.verification.vocabulary import (
    STOP,
    TIME_WORDS,
    UNITS,
    Vocabulary,
    column_tokens,
    described_columns,
    described_roots,
    matches_token,
    resolve_column,
    strictly_named,
    word_root,
)

_SWAPPABLE = {"mean", "median", "sum"}
_COUNTING = {*LEXICON.statistics, "count", "counts", "counted", "number", "total"}
# an extreme computed where a centre is stated (`max(rate)` for "the average rate") is re-run as stated too
_EXTREMES, _CENTRES = {"max", "min"}, {"mean", "median"}


def _extreme_for_centre(req: Requirement, agg: Aggregate) -> bool:
    """The code takes an extreme (`MAX(rate)`) where the words state a mean or median of the column
    ("the average rate"): not where they rank it ("the deepest mean depth", `req.descending`) or where
    the statistic's word is part of the column's name (`meandepth`)."""
    said = {w for w, f in LEXICON.statistics.items() if f == req.function and " " not in w}
    return (
        agg.function in _EXTREMES
        and req.function in _CENTRES
        and req.descending is None
        and not any(t.startswith(w) or t.endswith(w) for t in column_tokens(agg.column or "") for w in said)
    )


def _scale(req: Requirement, cond: Condition) -> float | None:
    """The factor between the stated bound and the code's literal (1, or 1/100 for a percentage)."""
    if not isinstance(cond.value, float) or req.value is None:
        return None
    for scale in (1.0, 0.01) if req.percent else (1.0,):
        if close(cond.value, req.value * scale) or (
            req.upper is not None and close(cond.value, req.upper * scale)
        ):
            return scale
    return None


def _same_side(req: Requirement, cond: Condition) -> bool:
    if req.upper is not None and isinstance(cond.value, float) and req.value is not None:
        lower_bound = close(cond.value, req.value) or close(cond.value, req.value / 100)
        return cond.op in ((">=", ">") if lower_bound else ("<=", "<"))
    if req.op == "==":
        return cond.op in ("==", "in")
    return cond.op == req.op


def _other_end(
    req: Requirement, consistent: list[tuple[Selection, Condition, float]]
) -> tuple[Selection, Condition, float] | None:
    """A range whose code applies one end as stated and the other end at another number: that other
    condition (same selection, same compared expression, the uncovered side). None when both ends
    are as stated, or when no such condition exists."""
    if req.kind is not Kind.COMPARISON or req.upper is None or not consistent:
        return None
    lower = any(c.op in (">=", ">") for _, c, _ in consistent)
    upper = any(c.op in ("<=", "<") for _, c, _ in consistent)
    if lower == upper:
        return None
    sel, cond, scale = consistent[0]
    wanted = ("<=", "<") if lower else (">=", ">")
    others = [
        c
        for c in sel.conditions
        if c.lhs
        and c.lhs == cond.lhs
        and c.op in wanted
        and isinstance(c.value, float)
        and not any(close(c.value, v * scale) for v in (req.value or 0.0, req.upper))
    ]
    return (sel, others[0], scale) if len(others) == 1 else None


class RequirementBinder(Binder):
    """Binds row, statistic, share and output requirements; the shape, cut-off and source bindings
    are the functions of `bind_shape`, `bind_cutoff` and `current`. Which binding a kind gets is
    its semantic rule's (`rules/builtin.py`); `bind()` hands every rule this binder."""

    # -- sites -------------------------------------------------------------------------
    def row_site(
        self,
        sel: Selection,
        req: Requirement,
        column: str,
        lhs: str = "",
        scale: float = 1.0,
        missing_ok: bool = False,
    ) -> tuple[str, bool] | None:
        """Snippet: rows that break the stated condition on `column`, and whether it checks an
        artifact (the table or frame the selection left, which stays valid after a retry) rather
        than re-running the selection's own code. `missing_ok`: a row without a value meets the condition
        (the complement of a flag, which a missing value never sets)."""
        art = self.artifact(sel)
        if art is not None and column in self.vocab.tables[art[1].lower()]:
            kind = self.vocab.tables[art[1].lower()][column].kind
            if art[0] == "table" and self.con:
                pred = probes.sql_predicate(
                    req, _ident(column), numeric=kind == "num", scale=scale, missing_ok=missing_ok
                )
                return probes.table_rows_probe(self.con, art[1], pred), True
            if art[0] == "frame":
                return probes.frame_rows_probe(
                    art[1],
                    probes.pandas_predicate(req, f"_f[{column!r}]", scale=scale, missing_ok=missing_ok),
                ), True
        if sel.language == "sql":
            if not (self.con and sel.sql):
                return None
            pred = probes.sql_predicate(
                req,
                lhs or column,
                numeric=self._kind(column, sel.sources) in (None, "num"),
                scale=scale,
                missing_ok=missing_ok,
            )
            code = probes.kept_rows_probe(self.con, sel.sql, pred)
            return (code, False) if code else None
        if (
            sel.flag
            and sel.mentions(column)
            and sel.flag[0].lower() not in self.rewritten
            and column in self.vocab.tables.get(sel.flag[0].lower(), {})
        ):
            pred = probes.pandas_predicate(req, f"_f[{column!r}]", scale=scale, missing_ok=missing_ok)
            return probes.flag_probe(sel.flag[0], sel.flag[1], pred, sel.flag[2]), True
        if sel.frame and sel.mask:
            frame = f"({sel.frame})[({sel.mask})]"
            return probes.frame_rows_probe(
                frame, probes.pandas_predicate(req, f"_f[{column!r}]", scale=scale, missing_ok=missing_ok)
            ), False
        if sel.is_mask:
            return None  # a boolean mask of its own (`private = dr["insurance"] == "levyplus"`): no rows
        if sel.language == "pandas" and not sel.frame and not self.looks_up(req):
            # a statistic or count taken over a whole frame the span reads (`len(west)`,
            # `west['x'].mean()` after `west = scope_r`): its rows are the ones the result covers
            whole = [
                s
                for s in sel.sources
                if s.isidentifier()
                and s.lower() not in self.rewritten
                and column in self.vocab.tables.get(s.lower(), {})
            ]
            if whole:
                return probes.frame_rows_probe(
                    whole[0],
                    probes.pandas_predicate(req, f"_f[{column!r}]", scale=scale, missing_ok=missing_ok),
                ), False
        return None

    def _said_numbers(self, req: Requirement) -> list[float]:
        """The numbers the turn's own words name, the requirement's own aside ("the cells above 50
        thousand kroner ... holding 10 to 30 respondents"): a code cut-off on one of them stands for
        those words, not for a bound whose subject names no column."""
        own = {v for v in (req.value, req.upper) if v is not None}
        return [v for v in unstated_cutoff.mentioned([self.said]) if not any(close(v, o) for o in own)]

    def _aggregate_test(self, req: Requirement, plan: Plan) -> bool:
        """A bound whose words name no column, bound by its number to the one conditional count
        that tests a column against it (`SUM(CASE WHEN hs_grad > 85 ...)` for "fewer than 85
        percent high-school graduates"): re-run as stated when the comparison differs."""
        if not self.con:
            return False
        found = []
        for sel in self.sem.selections:
            fixed = aggregate_test_as_stated(sel.sql or "", None, req) if sel.language == "sql" else None
            tested = [c for c in self.columns_of(sel) if _counted_in_aggregate(sel, c, req)]
            if fixed is not None and tested:
                found.append((sel, fixed, tested))
        if len(found) != 1:
            return False
        sel, fixed, tested = found[0]
        plan.notes.append(
            f"{req.describe()}: the code's conditional count tests {tested[0]} against it otherwise"
        )
        self._conditional_count_rerun(req, sel, fixed, plan)
        return True

    def _conditional_count_rerun(self, req: Requirement, sel: Selection, fixed: str, plan: Plan) -> None:
        """The query re-run with its conditional count as stated; a finding needs a changed answer."""
        plan.items.append(
            self.item(
                req,
                "rerun",
                probes.rerun_probe(self.con or "", sel.sql, fixed),
                self.variables(sel),
                "differs",
                edit=probes.SpanEdit(kind="sql", before=sel.sql, after=fixed),
                needs_changed=True,
            )
        )

    def _meets_no_row(self, columns: list[str], op: str | None, value: float | None) -> bool:
        """Does no observed value of any named numeric column meet `op value` (all ranges known)?
        "in 1986" bound to `years` (1 to 24) or "4,000 women or more" bound to the month number
        (1 to 12): the words name another quantity, not this column."""
        infos = [i for c in columns for i in self.vocab.infos(c)]
        if value is None or not infos or any(i.low is None or i.high is None for i in infos):
            return False
        beyond = {
            "==": lambda i: not i.low <= value <= i.high,
            ">": lambda i: value >= i.high,
            ">=": lambda i: value > i.high,
            "<": lambda i: value <= i.low,
            "<=": lambda i: value < i.low,
        }.get(op or "")
        return beyond is not None and all(beyond(i) for i in infos)

    def looks_up(self, req: Requirement) -> bool:
        """A stated value the code writes as a literal (`by_year.loc[2001]`): the code picks those
        rows by lookup, so reading the frame whole is no missing filter."""
        stated = [v for v in (req.value, req.upper) if v is not None]
        stated += [float(v) for v in req.values if re.fullmatch(r"-?\d+(?:\.\d+)?", str(v))]
        return any(close(v, lit) for v in stated for lit in self.sem.literals)

    # -- requirements --------------------------------------------------------------------
    def counted_column(self, req: Requirement) -> str | None:
        """ "with more than 3,000 transactions of the second kind" beside `t2 (the number of
        transactions of the second kind)`: a bound on a count whose counted words the task's own text
        gives, right after "number of", as one numeric column's meaning is a bound on that column.
        None where no column or several are so described, or the code cuts on a group's size."""
        if not (req.kind is Kind.COMPARISON and req.function == "count" and req.after):
            return None
        if any(
            c.clause == "having" and c.lhs.upper().startswith("COUNT")
            for sel in self.sem.selections
            for c in sel.conditions
        ):
            return None
        said = [w.lower().rstrip("s") for w in req.after if w.lower() not in STOP and len(w) > 2]
        found = [
            c
            for c in self.read_columns(numeric=True)
            if (told := [d.rstrip("s") for d in self.vocab.column_words.get(c, ())])[:1]
            in (["number"], ["count"])
            and told[1 : 1 + len(said)] == said
        ]
        return found[0] if len(found) == 1 and said else None

    def rows(self, req: Requirement, plan: Plan) -> None:
        """scope / comparison / not_null."""
        if count_of := self.counted_column(req):
            req = req.model_copy(update={"function": None, "columns": [count_of], "subject": list(req.after)})
        matched: list[tuple[Selection, Condition, float]] = []
        if req.kind is Kind.COMPARISON:
            for sel in self.sem.selections:
                for cond in sel.conditions:
                    if (
                        req.op == "=="
                        and cond.op in ("in", "not_in")
                        and req.value is not None
                        and any(isinstance(v, float) and close(v, req.value) for v in cond.values)
                    ):
                        matched.append((sel, cond, 1.0))
                    elif (scale := _scale(req, cond)) is not None:
                        matched.append((sel, cond, scale))
        columns = self.resolve(req)
        if req.kind is Kind.COMPARISON and columns and req.op in ORDER_OPS:
            # "was run_mean at least 1" beside `tracked['sec'] == 1`: the same number tested for equality
            # on a column the subject does not name is another test, not this bound written otherwise
            named = {c.lower() for c in columns}
            matched = [
                (s, c, k)
                for s, c, k in matched
                if not (c.op in ("==", "!=", "in", "not_in") and c.column and c.column.lower() not in named)
            ]
            cuts_named = any(
                c.column and c.column.lower() in named and c.op in ORDER_OPS and isinstance(c.value, float)
                for sel in self.sem.selections
                for c in sel.conditions
            )
            if cuts_named:
                # "a basibregmatic height of 135 mm or more ... a maximum breadth of at least 135 mm":
                # the same number tested on another column is that column's bound, not this one's; the
                # code's own cut-off on the named column is the one to check (a column tested only
                # otherwise, `budget.notna()`, may be a wrong reading of the words: the match stands)
                matched = [
                    (s, c, k) for s, c, k in matched if not (c.column and c.column.lower() not in named)
                ]
        if (
            req.kind is Kind.SCOPE
            and not (req.flag_scope or req.exclude)
            and columns
            and all(self._typed_in_only(req, c) for c in columns)
        ):
            # "Central is reported too, with no order from it": a value only the code's typed-in list
            # holds, which every data table with the column lacks, scopes no rows
            plan.notes.append(f"{req.describe()}: only a list the code typed in holds {req.values}; no scope")
            plan.unverified.append(req)
            return
        if (
            req.kind is Kind.SCOPE
            and not (req.flag_scope or req.exclude)
            and columns
            and coded(req.values)
            and any(
                a.function in ("sum", "mean") and (a.column or "").lower() == columns[0].lower()
                for sel in self.sem.selections
                for a in sel.aggregates
            )
        ):
            # "how many Dole voters" for `vote (1 for Dole, 0 for Clinton)` and `SUM(vote)`: the code
            # counts (or takes the share of) the coded rows by summing the 0/1 column, no rows are kept
            plan.notes.append(f"{req.describe()}: the code sums or averages {columns[0]} itself; no scope")
            plan.unverified.append(req)
            return
        if req.kind is Kind.SCOPE and not (req.flag_scope or req.exclude) and self._counts_values_of(columns):
            # "how many distinct states (DC counts as one)": the turn counts the column's distinct values,
            # and a value named beside that count is one of them; scoped to it, the count could only be
            # the number of values named
            plan.notes.append(
                f"{req.describe()}: the turn counts the distinct values of {columns[0]}; no scope"
            )
            plan.unverified.append(req)
            return
        if req.kind is not Kind.COMPARISON:
            for sel in self.sem.selections:
                for cond in sel.conditions:
                    if cond.column and cond.column.lower() in (c.lower() for c in columns):
                        matched.append((sel, cond, 1.0))
        if req.kind is Kind.SCOPE:
            # A category test the code averages (`(large['diagnosis'] == 'malignant').mean()`) is the
            # share being measured: it neither applies nor drops a scope stated for another quantity.
            matched = [(s, c, k) for s, c, k in matched if not _measured_share(s, c)]
            counted = [(s, c) for s, c, _ in matched if _measured_share(s, c, "sum") and self.agrees(req, c)]
            if counted:  # "how many of those were sampled on Dream": `(x['island'] == 'Dream').sum()`
                plan.notes.append(f"{req.describe()}: the code counts the rows with `{counted[0][1].text}`")
                return
        consistent = [(s, c, k) for s, c, k in matched if self.agrees(req, c)]
        moved = (other := _other_end(req, consistent)) is not None
        if other is not None:
            # "between 2 and 3" written `.between(2, 3.5)`: one end as stated, the other moved
            matched, consistent = [other], []
        if consistent:
            sel, cond, scale = consistent[0]
            column = cond.column or ""
            site: tuple[str, bool] | None = (
                self.row_site(sel, req, column, cond.lhs, scale) if column else None
            )
            plan.notes.append(f"{req.describe()}: the code applies `{cond.text}`")
            if site:
                plan.items.append(
                    self.item(req, "kept_rows", site[0], self.variables(sel), "agrees", constraint=site[1])
                )
            return
        if matched:
            sel, cond, scale = matched[0]
            plan.notes.append(f"{req.describe()}: the code keeps `{cond.text}` instead ({cond.op})")
            site = None
            edit = stated_edit(sel, cond, req, scale)
            if cond.column:
                site = self.row_site(sel, req, cond.column, cond.lhs, scale)
            elif self.con and sel.sql and edit is not None:  # the stated query, run beside the code's
                site = (probes.rerun_probe(self.con, sel.sql, edit.after), False)
            elif sel.language == "pandas" and cond.lhs and req.kind is Kind.COMPARISON:
                # a bare Series compared (`share[share < 20]`): no column to test rows on
                site = (bind_cutoff.lhs_probe(cond, req, scale, sel.frame), False)
            masked = False
            if site is None and sel.language == "pandas" and cond.column and cond.lhs and edit is not None:
                # a mask of its own (`young = fair["age"] > 30`), no frame's rows to read: the two
                # tests on the live values, and the answer must change with the stated one
                site, masked = (bind_cutoff.lhs_probe(cond, req, scale, sel.frame), False), True
            if site:
                plan.items.append(
                    self.item(
                        req,
                        "kept_rows" if cond.column and not masked else "rerun",
                        site[0],
                        self.variables(sel),
                        "threshold" if moved else side_status(req.op, cond.op),
                        constraint=site[1],
                        edit=edit,
                        needs_changed=masked,
                    )
                )
            if moved and not masked and edit is not None and sel.language == "pandas" and cond.lhs:
                # one end moved inward ("1984 through 1988" kept as 1985-1988): every kept row meets
                # the stated range, so the rows it leaves out decide; the answer must change as stated
                probe = bind_cutoff.lhs_probe(cond, req, scale, sel.frame)
                plan.items.append(
                    self.item(
                        req, "rerun", probe, self.variables(sel), "threshold", edit=edit, needs_changed=True
                    )
                )
            return
        if req.kind is Kind.COMPARISON and req.function == "count" and self.con:
            for sel in self.sem.selections:
                having = next(
                    (c for c in sel.conditions if c.clause == "having" and c.lhs.upper().startswith("COUNT")),
                    None,
                )
                fixed = (
                    sql_edit.replace_condition(sel.sql, having.text, probes.sql_predicate(req, having.lhs))
                    if having
                    else None
                )
                if having and fixed:
                    plan.notes.append(f"{req.describe()}: the code's group-size cut-off is `{having.text}`")
                    self.add_rerun(req, sel, fixed, "threshold", plan)
                    return
        if (
            req.kind is Kind.COMPARISON
            and not req.term
            and not columns
            and (
                (
                    not _tests_as_stated(self.sem, req)
                    and bind_cutoff.cutoff(self, req, plan, self.bounds_except(req) + self._said_numbers(req))
                )
                or bind_cutoff.year_of_date(self, req, plan)
            )
        ):
            return
        if not columns:
            if req.kind is Kind.COMPARISON and self._aggregate_test(req, plan):
                return
            plan.unverified.append(req)
            return
        sites: list[tuple[Selection, tuple[str, bool]]] = []
        for sel in self.sem.selections:
            have = [c for c in columns if c in self.columns_of(sel)]
            if req.kind is Kind.SCOPE and not req.flag_scope:
                # a statement grouped by the column reports each of its values (a per-label breakdown):
                # one value's scope belongs to another reported value, not to its rows
                keys = {k.lower().split(".")[-1].strip('"') for k in sel.group_keys}
                have = [c for c in have if c.lower() not in keys]
            for column in have:
                threshold = next(
                    (c for c in sel.conditions if c.column == column and isinstance(c.value, float)), None
                )
                if req.kind is Kind.COMPARISON and threshold is not None and self.con and sel.sql:
                    fixed = sql_edit.replace_condition(
                        sel.sql, threshold.text, probes.sql_predicate(req, threshold.lhs)
                    )
                    if fixed:
                        plan.notes.append(
                            f"{req.describe()}: the code's cut-off on {column} is `{threshold.text}`"
                        )
                        self.add_rerun(req, sel, fixed, "threshold", plan)
                        return
                if req.kind is Kind.COMPARISON and threshold is not None and sel.flag:
                    flag_site = self.row_site(sel, req, column)
                    if flag_site:
                        plan.notes.append(
                            f"{req.describe()}: the flag {sel.flag[1]} uses the cut-off `{threshold.text}`"
                        )
                        plan.items.append(
                            self.item(
                                req,
                                "kept_rows",
                                flag_site[0],
                                self.variables(sel),
                                "threshold",
                                constraint=flag_site[1],
                            )
                        )
                        return
                if (
                    req.kind is Kind.COMPARISON
                    and threshold is not None
                    and sel.frame
                    and threshold.text in sel.mask
                ):
                    stated = sel.mask.replace(threshold.text, probes.pandas_predicate(req, threshold.lhs))
                    plan.notes.append(
                        f"{req.describe()}: the code's cut-off on {column} is `{threshold.text}`"
                    )
                    site_code = probes.count_probe(sel.frame, sel.mask, stated)
                    plan.items.append(
                        self.item(
                            req,
                            "rerun",
                            site_code,
                            self.variables(sel),
                            "threshold",
                            edit=stated_edit(sel, threshold, req),
                        )
                    )
                    return
                if (
                    req.kind is Kind.COMPARISON
                    and threshold is not None
                    and sel.language == "pandas"
                    and threshold.lhs
                    and threshold.op in (">", ">=", "<", "<=")
                    and req.upper is None
                    and isinstance(threshold.value, float)
                    and threshold.op[0] == (req.op or "=")[0]
                ):
                    # a comparison counted in place (`(west['lon'] < -110).sum()`): both ways on the values
                    plan.notes.append(
                        f"{req.describe()}: the code's cut-off on {column} is `{threshold.text}`"
                    )
                    scale = bind_cutoff.scale_for(req, threshold.value)
                    code = bind_cutoff.lhs_probe(threshold, req, scale, sel.frame)
                    plan.items.append(
                        self.item(
                            req,
                            "rerun",
                            code,
                            self.variables(sel),
                            "threshold",
                            edit=stated_edit(sel, threshold, req, scale),
                        )
                    )
                    return
                if req.kind is Kind.SCOPE and any(
                    _measured_share(sel, c) for c in sel.conditions if (c.column or "") == column
                ):
                    continue  # the share of that category is what this selection computes
                if req.kind is Kind.COMPARISON and _counted_in_aggregate(sel, column, req):
                    # `SUM(CASE WHEN score > 200 ...)`: the bound qualifies that count only, not the
                    # rows of the turn. Written with the stated number but another comparison, the
                    # count is re-run as stated; otherwise nothing is asserted.
                    plan.notes.append(
                        f"{req.describe()}: the code tests {column} inside an aggregate (a conditional count)"
                    )
                    fixed = aggregate_test_as_stated(sel.sql or "", column, req) if self.con else None
                    if fixed is None:
                        plan.unverified.append(req)
                        return
                    self._conditional_count_rerun(req, sel, fixed, plan)
                    return
                site = self.row_site(sel, req, column)
                if site:
                    sites.append((sel, site))
        if req.kind is Kind.COMPARISON and self.sql_flag(req, columns, plan):
            return
        if not sites or req.term:
            # A defined term the code does not restate is usually read through a flag column an
            # earlier turn built, or both of its sides are compared (wet vs dry): no evidence.
            plan.unverified.append(req)
            return
        if (
            req.kind is Kind.COMPARISON
            and req.value is not None
            and _tested_anywhere(self.sem, columns, req.value, req.op)
        ):
            # `AVG(...) FILTER (WHERE mortality > 100)`, `GROUP BY mortality > 100`: the code tests the
            # column against the stated number where no row filter is read; it is not missing
            plan.notes.append(
                f"{req.describe()}: the code tests {', '.join(columns)} against it in an expression"
            )
            plan.unverified.append(req)
            return
        if req.kind is Kind.SCOPE and not req.exclude and _value_tested_in_sql(self.sem, columns, req.values):
            # `COUNT(*) FILTER (WHERE span = 'KK-08')`: the code counts that value's rows inside an
            # aggregate, where no row filter is read; the scope of that one value is not missing
            plan.notes.append(
                f"{req.describe()}: the code tests {', '.join(columns)} against it in an expression"
            )
            plan.unverified.append(req)
            return
        if (
            req.kind is Kind.COMPARISON
            and (req.op == "==" or req.upper is None)
            and self._meets_no_row(columns, req.op, req.value)
        ):
            # "in 1986" bound to `years` (1 to 24 in the data): the stated value is no value the column
            # holds, so the words name something else (a year in the columns' names)
            said = f"never holds {req.value}" if req.op == "==" else "has no value that meets it"
            plan.notes.append(f"{req.describe()}: {', '.join(columns)} {said}; not read")
            plan.unverified.append(req)
            return
        plan.notes.append(f"{req.describe()}: no condition on {', '.join(columns)} in the code")
        stored = [(sel, site) for sel, site in sites if site[1]]
        sites = stored or sites  # what the turn stored is enough evidence, and survives a retry
        names = [v for sel, _ in sites for v in self.variables(sel)]
        plan.items.append(
            self.item(
                req,
                "kept_rows",
                probes.all_sites([s for _, (s, _) in sites]),
                list(dict.fromkeys(names)),
                "missing",
                constraint=bool(stored),
            )
        )

    def sql_flag(self, req: Requirement, columns: list[str], plan: Plan) -> bool:
        """A stated comparison the code stores as a flag column of a SQL table (`visib < 5 AS
        poor_vis`) rather than as a filter: the flag must mark exactly the rows the statement names
        (every rule AND-ed into it must hold on the rows it marks). A term binds only to a flag its
        name shares a word with; two candidate flags abstain. True when the requirement is settled."""
        wanted = {c.lower() for c in columns}
        found: list[tuple[Selection, str, str, list[Condition], Condition]] = []
        for sel in self.sem.selections:
            art = self.artifact(sel)
            if art is None or art[0] != "table":
                continue
            have = self.vocab.tables.get(art[1].lower(), {})
            for alias, conds in sel.flags.items():
                on = [c for c in conds if (c.column or "").lower() in wanted and c.column in have]
                if on and alias in have and (not req.term or _names_term(alias, req.term)):
                    found.append((sel, art[1], alias, conds, on[0]))
        if not found:
            return False
        if len(found) > 1 or not self.con:
            plan.notes.append(f"{req.describe()}: several flag columns could hold it; not bound")
            plan.unverified.append(req)
            return True
        sel, table, alias, conds, cond = found[0]
        column = cond.column or ""
        kind = self.vocab.tables[table.lower()][column].kind
        pred = probes.sql_predicate(req, _ident(column), numeric=kind == "num")
        same = req.value is not None and isinstance(cond.value, float) and close(cond.value, req.value)
        status = "differs" if not self.agrees(req, cond) else "agrees" if same else "threshold"
        plan.notes.append(f"{req.describe()}: the code stores it as the flag {alias} (`{cond.text}`)")
        code = probes.table_flag_probe(self.con, table, _ident(alias), pred, exact=len(conds) == 1)
        plan.items.append(self.item(req, "flagged_rows", code, self.variables(sel), status, constraint=True))
        return True

    def _holders(self, req: Requirement, column: str) -> tuple[set[str], set[str], bool]:
        """The tables whose `column` lists one of the scope's values, the tables a typed-in list
        makes (the lists, their copies, the tables joined from them, and so on), and whether some
        table that lists `column`'s values holds none of them (a table whose column has too many
        values to list says nothing)."""
        made = set(self.listed)
        grew = True
        while grew:  # the tables joined from a list, and those joined from them
            before = len(made)
            made |= {
                (sel.target or "").lower()
                for sel in self.sem.selections
                if sel.target and any(src.lower() in made for src in sel.sources)
            }
            grew = len(made) > before
        wanted = {str(v).lower() for v in req.values}
        holders, lacking = set(), False
        for table, cols in self.vocab.tables.items():
            info = next((i for c, i in cols.items() if c.lower() == column.lower()), None)
            if info is None or not info.values:
                continue
            if wanted & {v.lower() for v in info.values}:
                holders.add(table.lower())
            else:
                lacking = True
        return holders, made, lacking

    def _typed_in_only(self, req: Requirement, column: str) -> bool:
        """Every table holding the scope's values in `column` is made from a typed-in list, and some
        other table that lists `column`'s values holds none of them."""
        holders, made, lacking = self._holders(req, column)
        return bool(holders) and lacking and holders <= made

    def list_entries(self, req: Requirement) -> bool:
        """A value scope whose values only tables made from a typed-in list hold ("Paderborn" in a
        typed-in club list joined to the matches, whose rows carry no city)."""
        if req.kind is not Kind.SCOPE or req.flag_scope or req.exclude:
            return False
        columns = self.resolve(req)
        if not columns:
            return False
        for column in columns:
            holders, made, _ = self._holders(req, column)
            if not holders or not holders <= made:
                return False
        return True

    def _counts_values_of(self, columns: list[str]) -> bool:
        """Does a statement of the turn count the distinct values of one of `columns`
        (`COUNT(DISTINCT state)`, `["state"].nunique()`)?"""
        low = {c.lower() for c in columns}
        return any(
            a.function == "nunique" and (a.column or "").lower() in low
            for sel in self.sem.selections
            for a in sel.aggregates
        )

    def agrees(self, req: Requirement, cond: Condition) -> bool:
        if req.kind is Kind.COMPARISON:
            return _same_side(req, cond)
        if req.kind is Kind.NOT_NULL:
            return cond.op == "notnull"
        if req.kind is Kind.SCOPE:
            named = {str(v).lower() for v in req.values}
            if cond.op in ("in", "not_in"):
                have = {
                    str(int(v)) if isinstance(v, float) and v.is_integer() else str(v) for v in cond.values
                }
                return {h.lower() for h in have} >= named and (cond.op == "not_in") == req.exclude
            if cond.op in ("==", "!="):
                v = cond.value
                text = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
                return text.lower() in named and (cond.op == "!=") == req.exclude
        return False

    def resolve(self, req: Requirement) -> list[str]:
        if req.columns:
            return req.columns
        pool = self.read_columns()
        subject = [w for w in req.subject if w != "*"]
        if "*" in req.subject:
            return [
                c
                for c in pool
                if any(t == subject[0].lower() for t in re.split(r"_|(?<=[a-z])(?=[A-Z])", c.lower()))
            ]
        if req.kind is Kind.AGGREGATION and req.after[:1] == ["per"]:
            # "their mean minutes per transaction": the one column described by the whole rate, in order
            # (`per_txn (its minutes per transaction)`), else the words before "per" as ever
            rate = described_columns([*subject, *req.after[1:]], pool, self.vocab.column_words, in_row=True)
            if len(rate) == 1:
                return rate
        if req.kind is Kind.COMPARISON:  # a bound is about a number: only numeric columns qualify
            pool = self.read_columns(numeric=True)
            # The noun after the number names the quantity, except: a word of counting or a statistic
            # ("(only countries with a population of at least 800,000 count)": the sentence's verb); a
            # unit or a span of time ("waited less than 180 days", though a column's description may
            # say "days"); and a count's counted words, which bind only through `counted_column`
            # ("birds" in "groups with at least 9 birds" is no column `birds`).
            after = [
                w
                for w in (req.after if req.function != "count" else [])
                if w.lower() not in _COUNTING | TIME_WORDS | UNITS
            ]
            counted = (
                resolve_column(after, pool)
                or described_columns(after, pool, self.vocab.column_words, in_row=True)
                if after
                else []
            )
            if len(counted) == 1:  # "these lines are short of 450 at-bats": the noun the number counts
                return counted
            if not subject and not after and (by_unit := self.unit_column(req, pool)):
                return by_unit
        found = resolve_column(subject, pool, partial=req.kind is Kind.NOT_NULL)
        if found and not any(strictly_named(c, subject) for c in found):
            # named only by a short form (`packpc` for "pack price"): a column the task's own text
            # describes with every word of the subject (`avgprs (average price per pack)`) is meant
            described = described_columns(subject, pool, self.vocab.column_words)
            if len(described) == 1:
                found = described
        if not found and req.kind is Kind.AGGREGATION and subject:
            # no column's name is said: the one column the task's own text describes with every word
            # of the subject, in any order and form ("total spending" for `totexp (total yearly
            # spending, pesetas)`)
            described = described_roots(subject, pool, self.vocab.column_words)
            if len(described) > 1:
                # several descriptions hold the words: the one they open ("total spending" is `totexp
                # (total yearly spending)`, not `wfood (share of total spending that goes on food)`)
                roots = {word_root(w) for w in subject}
                described = [
                    c for c in described if word_root((self.vocab.column_words.get(c) or ("",))[0]) in roots
                ]
            if len(described) == 1:
                found = described
        if not found and req.kind is Kind.COMPARISON and len(subject) > 1 and req.value is not None:
            # "a cell-shape uniformity between 3 and 6" for `V3 (uniformity of cell shape)`: the one
            # column whose description holds every word, whose values hold the bound
            described = described_roots(subject, pool, self.vocab.column_words)
            if len(described) == 1 and self.within(described[0], abs(req.value), req.percent, scaled=False):
                found = described
        if len(found) == 1 and _outworded(subject, found[0], pool, self.vocab.column_words):
            return []  # "log wage" beside `wage` and `lwage (natural log of the wage)`: two readings
        if req.kind is Kind.COMPARISON and len(found) > 1 and req.value is not None:
            # "fewer than seven positive nodes" beside `nodes` and a 0/1 `node4`: a bound outside a
            # column's values names another quantity
            inside = [c for c in found if self.within(c, abs(req.value), req.percent, scaled=False)]
            found = inside or found
        if req.kind is Kind.COMPARISON and len(found) == 1 and not _said_logged(req, found[0], self.vocab):
            # "(a real price above 1)" beside `lrpmg (log of the real price)`: the words name the
            # quantity the column is the log of, and a bound on it is no cut-off on the column
            return []
        return found

    def unit_column(self, req: Requirement, pool: list[str]) -> list[str]:
        """A bound said with no word but its unit ("the readings of 36.8 °C or above"): the one numeric
        column the task's text describes in that unit (`temp (... in degrees Celsius)`) whose values
        hold the number."""
        m = re.search(r"\d\s*(°[CF]|[A-Za-z]+)\b", req.text)
        names = set(LEXICON.unit_names.get(m.group(1).lower(), ())) if m else set()
        if not names or req.value is None:
            return []
        found = [
            c
            for c in pool
            if names & set(self.vocab.column_words.get(c, ()))
            and self.within(c, abs(req.value), req.percent, scaled=False)
        ]
        return found if len(found) == 1 else []

    def aggregation(self, req: Requirement, plan: Plan) -> None:
        assert req.function is not None
        found = []
        named = self.resolve(req)
        for sel in self.sem.selections:
            for agg in sel.aggregates:
                by_field = bool(req.fields) and (
                    agg.alias in req.fields
                    or any(_feeds(self.sem.fields.get(f, ""), sel.target, agg.position) for f in req.fields)
                )
                by_column = (
                    not req.fields
                    and agg.column
                    and (
                        agg.column in named
                        or (
                            not named  # the words name no column of the data: the code's own columns
                            and resolve_column(req.subject, [agg.column or ""], partial=True) == [agg.column]
                        )
                    )
                )
                if by_field or by_column:
                    found.append((sel, agg))
        if not self._in_rule(req) and any(not a.per_row for _, a in found):
            # "what is their mean temperature" beside a rule's rolling or per-group mean of the column: a
            # value per row is no summary the answer reports, so only the code's summaries are candidates
            found = [(s, a) for s, a in found if not a.per_row]
        if not found:
            plan.unverified.append(req)
            return
        right = [(s, a) for s, a in found if a.function == req.function]
        hidden = self._reported_swap(req, found) if right else None
        if hidden is not None:
            # "their mean log size" where the stated mean is only a per-group one the code joins back,
            # and the value reported is a median of the column: re-run the reported one as stated, a
            # finding only if the answer changes
            sel, agg = hidden
            plan.notes.append(f"{req.describe()}: the code reports {agg.function} ({agg.text})")
            self.swapped(req, sel, agg, plan, needs_changed=True)
            return
        if right:
            sel, agg = right[0]
            plan.notes.append(f"{req.describe()}: the code computes it ({agg.text})")
            if self.stored(sel) and sel.sql:  # the stored table is the statistic as stated
                plan.items.append(
                    self.item(
                        req,
                        "table_query",
                        probes.table_matches_probe(self.con or "", sel.target or "", sel.sql),
                        self.variables(sel),
                        "agrees",
                        constraint=True,
                    )
                )
            elif agg.column and self.con and agg.function != "count":
                # An answer query over a table the span stored: that table must hold values to aggregate.
                source = next(
                    (
                        t
                        for t in sel.sources
                        if t in self.sem.tables()
                        and t not in self.rewritten
                        and agg.column in self.vocab.tables.get(t, {})
                    ),
                    None,
                )
                if source:
                    plan.items.append(
                        self.item(
                            req,
                            "defined",
                            probes.defined_probe(self.con, source, agg.column),
                            [v for v in [self.table_frames.get(source), source] if v][:1],
                            "empty",
                            constraint=True,
                        )
                    )
            return
        wrong = [
            (s, a)
            for s, a in found
            if a.standalone
            and req.function in _SWAPPABLE
            and (a.function in _SWAPPABLE or _extreme_for_centre(req, a))
        ]
        if not wrong:
            plan.unverified.append(req)
            return
        sel, agg = wrong[0]
        if agg.column and any(
            _sql_computes(s.sql, req.function, agg.column) for s in self.sem.selections if s.sql
        ):
            # `ORDER BY AVG(temp)` beside `MEDIAN(temp)`: the stated statistic is computed too,
            # where the inspection reads no output (a ranking key); which one the words meant is open
            plan.notes.append(f"{req.describe()}: the code computes {req.function} of {agg.column} as well")
            plan.unverified.append(req)
            return
        asked = [
            other
            for other in self.requirements
            if other is not req
            and other.kind is Kind.AGGREGATION
            and other.function == agg.function
            and not other.fields
            and agg.column in self.resolve(other)
        ]
        if agg.column and asked:
            # more sites of the code's statistic than it is asked for: one of them stands where the stated
            # one should, the site of the stated one's part. A rule's statistic ("1.5 times the median
            # performance of their vendor", two means of `perf` and no median) stands at a site no answer
            # field is; an answer's ("their mean TA2" beside "their cell's median TA2") at the answer
            # field. Otherwise ("average articles per student, and the median article count of the
            # mentors") the code's statistic is the other one the question states, and the stated one is
            # of a quantity the words did not bind.
            sites = [(s, a) for s, a in wrong if (a.function, a.column) == (agg.function, agg.column)]
            in_rule = self._in_rule(req)
            chosen = (
                [(s, a) for s, a in sites if self._is_field(a) != in_rule] if len(sites) > len(asked) else []
            )
            if len(chosen) != 1:
                plan.notes.append(
                    f"{req.describe()}: the code's {agg.function} of {agg.column} is another one asked"
                )
                plan.unverified.append(req)
                return
            sel, agg = chosen[0]
            plan.notes.append(
                f"{req.describe()}: the code computes {agg.function} ({agg.text}) more often than asked"
            )
            self.swapped(req, sel, agg, plan, needs_changed=True)
            return
        plan.notes.append(f"{req.describe()}: the code computes {agg.function} ({agg.text})")
        self.swapped(req, sel, agg, plan)

    def _in_rule(self, req: Requirement) -> bool:
        """Do the requirement's words stand inside a stated rule ("1.5 times the median of ...", "0.1 °C
        above the mean of the six readings before it")?"""
        return any(
            req.text.lower() in m.group(0).lower()
            for m in [*rule_multiples.stated_phrases(self.said), *rule_offsets.stated_phrases(self.said)]
        )

    def _reported_swap(
        self, req: Requirement, found: list[tuple[Selection, Aggregate]]
    ) -> tuple[Selection, Aggregate] | None:
        """A pandas aggregate of the stated column that an answer field is, whole, with another
        swappable statistic than the stated one (or an extreme where a centre is stated), where no
        aggregate with the stated statistic is an answer field and the turn's words nowhere say the
        reported statistic."""
        if req.function not in _SWAPPABLE or any(
            self._is_field(a) for _, a in found if a.function == req.function
        ):
            return None
        reported = [
            (s, a)
            for s, a in found
            if a.receiver
            and a.standalone
            and (a.function in _SWAPPABLE or _extreme_for_centre(req, a))
            and a.function != req.function
            and self._is_field(a)
        ]
        if len({a.column for _, a in reported}) != 1:
            return None
        if reported[0][1].function in LEXICON.statistics_in(self.said):
            return None  # the turn says the reported statistic too ("... and their mean total")
        return reported[0]

    def _is_field(self, agg: Aggregate) -> bool:
        """Is the aggregate an answer field's whole value (`"mean_size": rel["size"].median()`)?"""
        if self._field_texts is None:
            self._field_texts = set()
            for value in self.sem.fields.values():
                try:
                    text = ast.unparse(ast.parse(value, mode="eval"))
                except SyntaxError:
                    continue
                cast = re.fullmatch(r"(?:float|int)\((.*)\)", text)  # `float(x.median())` is x.median()
                self._field_texts.add(cast.group(1) if cast else text)
        return agg.text in self._field_texts

    def swapped(
        self, req: Requirement, sel: Selection, agg: Aggregate, plan: Plan, needs_changed: bool = False
    ) -> None:
        """The aggregate re-run with the stated statistic (the query, or the pandas call)."""
        assert req.function is not None
        if sel.language == "sql" and self.con and sel.sql:
            fixed = sql_edit.swap_aggregate(sel.sql, agg.text, req.function)
            self.add_rerun(req, sel, fixed, "aggregation", plan, needs_changed=needs_changed)
            return
        site = (
            probes.compare_probe(f"({agg.receiver}).{agg.function}()", f"({agg.receiver}).{req.function}()")
            if agg.receiver
            else None
        )
        if site:
            plan.items.append(
                self.item(
                    req,
                    "rerun",
                    site,
                    self.variables(sel),
                    "aggregation",
                    edit=_swapped_text(agg, req.function),
                    needs_changed=needs_changed,
                )
            )

    def share(self, req: Requirement, plan: Plan) -> None:
        for sel in reversed(self.sem.selections):
            col = next(
                (o for o in sel.outputs if o in req.fields or (not req.fields and "share" in o.lower())), None
            )
            if col and sel.language == "sql" and sel.target and self.con and not sel.limit:
                total = f"{self.con}.execute('SELECT SUM({col}) FROM {sel.target}').fetchone()[0]"
                plan.items.append(
                    self.item(
                        req,
                        "share_sum",
                        probes.share_probe(total, req.percent),
                        self.variables(sel),
                        "share",
                        constraint=True,
                    )
                )
                return
        plan.unverified.append(req)

    def output(self, req: Requirement, plan: Plan) -> None:
        for name, keys in self.sem.reports.items():
            if set(req.fields) <= set(keys) and name.lower() not in self.rewritten:
                plan.items.append(
                    self.item(
                        req,
                        "null_output",
                        probes.null_output_probe(name, req.fields),
                        [name],
                        "output",
                        constraint=True,
                    )
                )
                return


_LOG_WORDS = {"log", "logs", "logged", "logarithm", "ln"}


def _said_logged(req: Requirement, column: str, vocab: Vocabulary) -> bool:
    """Unless the task describes the column as a logarithm, or the bound's own words say "log"."""
    described = {w.lower() for w in vocab.column_words.get(column, ())}
    said = {w.lower() for w in [*req.subject, *req.text.split()]}
    return not (described & _LOG_WORDS) or bool(said & _LOG_WORDS)


def _outworded(subject: list[str], column: str, pool: list[str], words: dict[str, tuple[str, ...]]) -> bool:
    """Does the subject say a word the column's name and description leave out ("log" of "log wage" for
    `wage`; "total spending" is all `totexp (total yearly spending)`'s), while
    another column's description says every word of it in a row (`lwage (natural log of the wage)`)?
    Then the name reads the words only in part, and the words have another reading."""
    tokens = [t for t in column_tokens(column) if not t.isdigit()]
    said = [w for w in re.findall(r"[a-z]+", " ".join(subject).lower()) if w not in STOP and len(w) > 2]
    own = {word_root(d) for d in words.get(column, ())}  # the column's own description's words
    left = [w for w in said if not resolve_column([w], [column]) and word_root(w) not in own]
    if len(said) < 2 or not left or not tokens:
        return False
    unnamed = [w for w in left if not any(matches_token(t, w) for t in tokens)]
    if any(c != column and set(unnamed) & set(column_tokens(c)) for c in pool):
        return True  # "a success rate" beside `success` and `nation_rate`: "rate" is another name's word
    return any(c != column for c in described_columns(subject, pool, words, in_row=True))


def _tested_anywhere(sem: CodeSemantics, columns: list[str], value: float, op: str | None = None) -> bool:
    """Some comparison of the code (a filter, a flag, a test inside an aggregate or a group key)
    tests one of `columns` against `value`, or (a whole-number bound `op value`) against the next
    whole number on the same side: "at least one case" written `cases > 0`."""
    wanted = {c.lower() for c in columns}
    step = {">=": (">", -1.0), ">": (">=", 1.0), "<=": ("<", 1.0), "<": ("<=", -1.0)}.get(op or "")
    for t in code_tests(sem):
        if t.column.lower() not in wanted:
            continue
        if close(t.value, value):
            return True
        if step and float(value).is_integer() and t.op == step[0] and close(t.value, value + step[1]):
            return True
    return False


def _tests_as_stated(sem: CodeSemantics, req: Requirement) -> bool:
    """The code tests the stated number that way somewhere (`ratio >= 20 AS crowded` in a select list,
    which is no row condition): another cut-off of the code (`enrolment >= 200`) is another quantity's."""
    if req.value is None or req.op is None:
        return False
    value = req.value
    return any(
        t.op == req.op and close(t.value, value * bind_cutoff.scale_for(req, t.value))
        for t in code_tests(sem)
    )


def _value_tested_in_sql(sem: CodeSemantics, columns: list[str], values: list[str]) -> bool:
    """Some SQL statement of the code tests one of `columns` for equality with every named value (in a
    FILTER, a CASE or a WHERE the code model does not list)."""
    for sel in sem.selections:
        if sel.language != "sql" or not sel.sql:
            continue
        for col in columns:
            c = rf"(?:\w+\.)?\"?{re.escape(col)}\"?"
            if all(
                re.search(rf"\b{c}\s*(?:=|==)\s*{_literal(v)}", sel.sql, re.IGNORECASE)
                or re.search(rf"\b{c}\s+IN\s*\([^)]*{_literal(v)}", sel.sql, re.IGNORECASE)
                for v in values
            ):
                return True
    return False


def _literal(value: str) -> str:
    """A pattern for a value as SQL writes it: quoted, or a codebook's code bare too (`rx = 2`)."""
    if coded([value]):
        return rf"'?{re.escape(value)}(?:\.0+)?'?(?![\d.])"
    return f"'{re.escape(value)}'"


def _measured_share(sel: Selection, cond: Condition, function: str = "mean") -> bool:
    """The condition is only the numerator of a share the code takes (`(df['x'] == 'a').mean()`),
    or with `function="sum"` the rows a count takes (`(df['x'] == 'a').sum()`): no frame is masked
    by it, and that aggregate is taken over it."""
    return (
        not sel.frame
        and not sel.mask
        and not sel.sql
        and not sel.flag
        and any(a.function == function and cond.text and cond.text in a.receiver for a in sel.aggregates)
    )


def _counted_in_aggregate(sel: Selection, column: str, req: Requirement) -> bool:
    """The code compares `column` with the stated bound inside an aggregate (a conditional count or
    sum, `SUM(CASE WHEN score > 200 THEN 1 ELSE 0 END)`, `COUNT(*) FILTER (WHERE ...)`); a stated range
    where the aggregate tests a range of the column with at least one stated end (`_range_test`)."""
    if req.value is None:
        return False
    if req.upper is not None:  # `COUNT(*) FILTER (WHERE platelet BETWEEN 150 AND 400)`
        return _range_test(sel.sql or "", column, req) is not None
    col = re.escape(column)
    for agg in sel.aggregates:
        for m in re.finditer(rf"\b{col}\b['\"\]]*\s*(?:>=|<=|<>|!=|==|=|>|<)\s*(-?\d+(?:\.\d+)?)", agg.text):
            literal = float(m.group(1))
            if any(
                close(literal, v * k)
                for v in (req.value, req.upper)
                if v is not None
                for k in ((1.0, 0.01) if req.percent else (1.0,))
            ):
                return True
    return False


_SQL_FUNCTIONS = {"mean": "AVG|MEAN", "median": "MEDIAN", "sum": "SUM"}


def _sql_computes(sql: str, function: str, column: str) -> bool:
    """`AVG(temp)` / `AVG(m.temp)` anywhere in the query, ORDER BY and HAVING included; a window's
    `AVG(temp) OVER (...)` is a value per row, not the statistic."""
    names = _SQL_FUNCTIONS.get(function)
    pattern = rf"\b(?:{names})\s*\(\s*(?:\w+\.)?\"?{re.escape(column)}\"?\s*\)(?!\s*OVER\b)"
    return bool(names) and re.search(pattern, sql, re.IGNORECASE) is not None


def _swapped_text(agg: Aggregate, function: str) -> probes.SpanEdit | None:
    """The pandas aggregate's own text computing the stated statistic instead, for the answer gate:
    `x.mean()` -> `x.median()`, `name=('col', 'mean')` -> `name=('col', 'median')`."""
    text = agg.text
    for old, new in ((f".{agg.function}()", f".{function}()"), (f"'{agg.function}')", f"'{function}')")):
        if text.endswith(old):
            return probes.SpanEdit(kind="text", before=text, after=text[: -len(old)] + new)
    return None


_NUMBER = r"(-?\d+(?:\.\d+)?)"
# where a conditional count or sum tests its rows: `count_if(`, `FILTER (WHERE`, `CASE WHEN`
_COUNTED_TEST = re.compile(r"\bcount_if\s*\(|\bFILTER\s*\(\s*WHERE\b|\bCASE\s+WHEN\b", re.IGNORECASE)


def _range_test(sql: str, column: str, req: Requirement) -> tuple[int, int, str, float, bool] | None:
    """The one range test of `column` right inside a conditional count or sum (`count_if(V3 >= 3 AND
    V3 < 6)`, `FILTER (WHERE v2 BETWEEN 0.30 AND 0.40)`) with at least one end at a stated end, in the
    stated scale (a percentage's fraction): (start, end, the column as written, scale, whether both ends
    are the stated ones, counted in). None when there is none or more than one."""
    assert req.value is not None and req.upper is not None
    ident = rf"((?:\w+\.)?\"?{re.escape(column)}\"?)"
    forms = [
        re.compile(rf"{ident}\s+(NOT\s+)?BETWEEN\s+{_NUMBER}\s+AND()\s+{_NUMBER}(?![\w.])", re.IGNORECASE),
        re.compile(
            rf"{ident}\s*(>=?)\s*{_NUMBER}\s+AND\s+(?:\w+\.)?\"?{re.escape(column)}\"?\s*(<=?)\s*{_NUMBER}(?![\w.])",
            re.IGNORECASE,
        ),
    ]
    hits = []
    for form in forms:
        for m in form.finditer(sql):
            opened = list(_COUNTED_TEST.finditer(sql[: m.start()]))
            if not opened or re.search(r"[()]", sql[opened[-1].end() : m.start()]):
                continue  # not the first test right inside the aggregate's own parentheses
            low, high = float(m.group(3)), float(m.group(5))
            # `BETWEEN` and `>= ... AND <=` count both ends in; `NOT BETWEEN` is the outside
            inclusive = (m.group(2) or "") in ("", ">=") and m.group(4) in ("", "<=")
            for scale in (1.0, 0.01) if req.percent or max(abs(low), abs(high)) <= 1 < req.upper else (1.0,):
                if close(low, req.value * scale) or close(high, req.upper * scale):
                    exact = inclusive and close(low, req.value * scale) and close(high, req.upper * scale)
                    hits.append((m.start(), m.end(), m.group(1), scale, exact))
                    break
    return hits[0] if len(hits) == 1 else None


def aggregate_test_as_stated(sql: str, column: str | None, req: Requirement) -> str | None:
    """The query with the one test of `column` against the stated number written with the stated
    comparison (`CASE WHEN hs_grad > 85` -> `hs_grad < 85` for "fewer than 85 percent"); None when
    it is already so, when the number occurs in more than one test of the column, under a NOT, or
    when the requirement is no one-sided bound."""
    if req.value is not None and req.upper is not None and column:
        found = _range_test(sql, column, req)
        if found is None:
            return None
        start, end, lhs, scale, exact = found
        return None if exact else sql[:start] + probes.sql_predicate(req, lhs, scale=scale) + sql[end:]
    if req.value is None or req.upper is not None or req.op not in (">", ">=", "<", "<="):
        return None
    name = re.escape(column) if column else r"[A-Za-z_]\w*"
    test = re.compile(
        rf"(?<![\w.])((?:\w+\.)?\"?{name}\"?)\s*(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)(?![\w.])",
        re.IGNORECASE,
    )
    hits = []
    for m in test.finditer(sql):
        literal = float(m.group(3))
        scale = bind_cutoff.scale_for(req, literal)
        if close(literal, req.value * scale):
            hits.append((m, scale))
    if len(hits) != 1:
        return None
    m, scale = hits[0]
    if m.group(2) == req.op or re.search(r"\bNOT\s*\(?\s*$", sql[: m.start()], re.IGNORECASE):
        return None
    return sql[: m.start()] + probes.sql_predicate(req, m.group(1), scale=scale) + sql[m.end() :]


def stated_edit(
    sel: Selection, cond: Condition, req: Requirement, scale: float = 1.0
) -> probes.SpanEdit | None:
    """The code's condition rewritten as the requirement states it: the SELECT with that conjunct
    replaced (SQL), or the condition's text replaced in the cell (pandas). None when it cannot be
    said (no compared expression, or a requirement that is no bound)."""
    if req.kind is not Kind.COMPARISON or not cond.lhs or not cond.text:
        return None
    if sel.language == "sql":
        fixed = sql_edit.replace_condition(
            sel.sql, cond.text, probes.sql_predicate(req, cond.lhs, scale=scale)
        )
        return probes.SpanEdit(kind="sql", before=sel.sql, after=fixed) if fixed else None
    return probes.SpanEdit(kind="text", before=cond.text, after=probes.pandas_predicate(req, cond.lhs, scale))


def _names_term(alias: str, term: str) -> bool:
    """`poor_vis` names the term 'poor-visibility': a word of the flag's name starts a word of the term."""
    parts = [p for p in re.split(r"[_\W]+", alias.lower()) if len(p) >= 3]
    words = [w for w in re.split(r"[\s_-]+", term.lower()) if w]
    return any(w.startswith(p) or p.startswith(w) for p in parts for w in words)


def _ident(column: str) -> str:
    return column if re.fullmatch(r"[a-z_][a-z0-9_]*", column) else '"' + column.replace('"', '""') + '"'


def _feeds(value_text: str, target: str | None, position: int | None) -> bool:
    """An answer field's value is `row[position]` of the query bound to `target`."""
    return (
        bool(target)
        and position is not None
        and re.fullmatch(rf"\s*{re.escape(str(target))}\[{position}\]\s*", value_text) is not None
    )


def bind(
    requirements: list[Requirement],
    sem: CodeSemantics,
    vocab: Vocabulary,
    rewritten: frozenset[str] = frozenset(),
    then: Callable[[RequirementBinder, Plan], None] | None = None,
    aliases: dict[str, str] | None = None,
    listed: set[str] | None = None,
    said: str = "",
    code: str = "",
) -> Plan:
    """The requirements bound to the code; `then` binds more with the same binder once they are
    (what the requirements' own bindings left: `bind_loose`, `named_stats`), before the items are
    numbered; `said`, `code`: the turn's own words and code (a binding that abstains where they
    name something, or the code computes with a stated number)."""
    plan = Plan(requirements=requirements)
    binder = RequirementBinder(sem, vocab, rewritten)
    binder.said, binder.code = said, code
    binder.requirements = requirements
    binder.aliases = dict(aliases or {})
    binder.listed = listed_joins.with_copies(listed or set(), sem)
    for req in requirements:  # each kind's binding is its semantic rule's (`rules/builtin.py`)
        rule = RULES.get(req.kind)
        if rule is not None and rule.bind is not None:
            start = len(plan.items)
            rule.bind(binder, req, plan)
            if binder.list_entries(req):
                plan.items[start:] = [i.model_copy(update={"list_entries": True}) for i in plan.items[start:]]
    if then is not None:
        then(binder, plan)
    plan.items = [item.model_copy(update={"id": f"R{i + 1}"}) for i, item in enumerate(plan.items)]
    return plan
