"""Stated bounds whose words name no column, bound through the turn's code.

"Call a marriage unhappy when the woman rates it 2 or lower, and add that as a boolean column
`unhappy`", "how many of those place themselves not above 4 on the liberal-conservative scale":
the words around the bound ("the woman rates it", "place themselves") name no column, so the
whole-clause reading abstains (`extract.parses_whole`), or binds nothing. The code can settle what
the bound is about, by two facts:

  * the flag the sentence defines: the turn assigns it (`fair["unhappy"] = fair["rate_marriage"]
    <= 1`, `rate_marriage <= 1 AS unhappy` in a select list) from one comparison of a column with a
    number. The flag is named by a backticked name of the question or by every word of its name in
    the definition's frame ("calls a marriage unhappy when"); the sentence holds exactly this one
    bound, first in its condition, and the condition does not go on ("... 2 or lower and married
    before 30"); a frame pointing at another version ("the withdrawn rule calls") abstains.
  * the stated number: it is the number of no other bound of the question, and exactly one
    comparison of the turn's code tests a column against it (a mask, a WHERE, a flag, or a test
    inside a conditional count); two or none abstain.

The bound is then that comparison's, stated. One written another way (the other direction, or a
strict bound for an inclusive one, or another number for a flag) is re-run as stated, and a
finding needs both the other rows and a CHANGED answer when the turn's code is written as stated
(`ProbeItem.needs_changed`): the binding is through the code, so only a changed answer counts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from stateguard.artifacts.lexicon import LEXICON
from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.verification import bind_cutoff, probes
from stateguard.verification.binder import Binder, Plan, close, side_status
from stateguard.verification.extract import (
    RULE_VERSION,
    clauses,
    comparisons,
    definition_frame,
    excluded_after,
    parses_whole,
)
from stateguard.verification.requirements import ORDER_OPS, Kind, Requirement
from stateguard.verification.vocabulary import Vocabulary, column_tokens

# An exclusion word in the bound's sentence: whether it negates the bound or names other rows is open.
_EXCLUDED_BEFORE = re.compile(
    rf"\b(?:{'|'.join(w for w in LEXICON.exclusion if w not in ('not', 'outside'))})\b", re.IGNORECASE
)
_SENTENCE = re.compile(r"(?:[^.?!]|(?<=\d)\.(?=\d))+(?:[.?!]|$)")  # "1.5" stays inside
_MORE = re.compile(r"\b(?:and|or|but|unless|except|while|provided)\b", re.IGNORECASE)
# `column op number` in SQL text (a WHERE, a select-list flag, a CASE WHEN or FILTER test)
_SQL_TEST = re.compile(
    r"(?<![\w.'\"])((?:\w+\.)?\"?[A-Za-z_]\w*\"?)\s*(>=|<=|>|<)\s*(-?\d+(?:\.\d+)?)(?![\w.])"
)


@dataclass(frozen=True)
class Site:
    """One comparison of a column with a number in the code: where it is, and how to write it as
    stated (pandas: the condition's text; SQL: its span in the selection's query)."""

    sel: Selection
    column: str
    op: str
    value: float
    lhs: str
    text: str
    span: tuple[int, int] | None
    query: bool = False  # a pandas `query("days <= 7")` string: its names are the frame's columns

    def key(self) -> tuple[int, str]:
        return (id(self.sel), self.text if self.span is None else f"{self.span}")


def code_tests(sem: CodeSemantics) -> list[Site]:
    """Every comparison of a column with a number in the turn's code."""
    out: list[Site] = []
    for sel in sem.selections:
        if sel.language == "pandas":
            for c in sel.conditions:
                if (
                    c.op in ORDER_OPS
                    and isinstance(c.value, float)
                    and c.lhs
                    and c.column
                    and c.clause != "on"
                ):
                    out.append(Site(sel, c.column, c.op, c.value, c.lhs, c.text, None, c.clause == "query"))
            continue
        for m in _SQL_TEST.finditer(sel.sql):
            column = m.group(1).split(".")[-1].strip('"')
            if re.fullmatch(r"\d+", column) or column.upper() in ("AND", "OR", "NOT", "WHEN", "THEN", "ELSE"):
                continue
            out.append(Site(sel, column, m.group(2), float(m.group(3)), m.group(1), m.group(0), m.span()))
    return out


def _flags(sem: CodeSemantics) -> dict[str, list[Site]]:
    """flag name -> the comparisons it is computed from (pandas `frame[flag] = <mask>`, SQL `... AS flag`)."""
    out: dict[str, list[Site]] = {}
    sites = code_tests(sem)
    for sel in sem.selections:
        if sel.language == "pandas" and sel.flag:
            out[sel.flag[1]] = [s for s in sites if s.sel is sel] if sel.flag[2] else []
        for alias, conds in sel.flags.items():
            texts = [c.text for c in conds]
            mine = [s for s in sites if s.sel is sel and any(s.text.replace('"', "") == t for t in texts)]
            out[alias] = mine if len(mine) == len(conds) else []
    return out


def _names(flag: str, frame: str, question: str) -> bool:
    if re.search(rf"`{re.escape(flag)}`", question):
        return True
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", frame)}
    tokens = [t for t in column_tokens(flag) if not t.isdigit()]
    return bool(tokens) and all(t in words for t in tokens)


def loose_bounds(
    question: str, vocab: Vocabulary, tables: list[str] | None, plan: Plan, extracted: bool = True
) -> list[Requirement]:
    """The question's one-sided bounds the ordinary reading did not bind: dropped because their clause
    does not parse whole, or left unverified by the binding. `extracted`: the text went through the
    ordinary reading (a question); a turn's rule in its context did not (only its clauses with words
    of a standing rule do), so there a bound that parses whole is loose as well."""
    unverified = {r.text for r in plan.unverified if r.kind is Kind.COMPARISON}
    bound = {r.text for r in plan.requirements} - unverified
    out = []
    for clause in clauses(question):
        for req in comparisons(clause):
            if req.op not in ORDER_OPS or req.value is None or req.upper is not None or req.function:
                continue
            if req.text in bound or (
                extracted and req.text not in unverified and parses_whole(question, req, vocab, tables)
            ):
                continue
            sentence = next(
                (m.group(0) for m in _SENTENCE.finditer(question) if req.text in m.group(0)), clause
            )
            # the sentence's part up to a semicolon: "...; a patient without that score is not frail"
            # is another clause, whose exclusion word says nothing of this bound's rows
            part = next((p for p in sentence.split(";") if req.text in p), sentence)
            if _EXCLUDED_BEFORE.search(RULE_VERSION.sub(" ", part)) or excluded_after(question, req.text):
                # "Drop the Boeings and look at those that seat more than 100", "Holders under 25 ...;
                # exclude them from here on": whether the bound keeps or drops its rows is open
                continue
            out.append(req)
    return out


def _by_flag(question: str, req: Requirement, flags: dict[str, list[Site]]) -> Site | None:
    """The comparison of the flag that the sentence stating `req` defines, if it is one."""
    for m in _SENTENCE.finditer(question):
        # "The new yardstick: a committee is busy when ...": a short lead-in before a colon frames nothing
        sentence = re.sub(r"^\s*[\w' -]{1,40}:\s+", "", m.group(0))
        at = sentence.find(req.text)
        if at < 0:
            continue
        frame = definition_frame(sentence)
        if frame is None or at < frame.end():
            return None
        if len(comparisons(sentence)) != 1 or _MORE.search(sentence[frame.end() : at]):
            return None
        if _MORE.search(re.split(r"[,;]", sentence[at + len(req.text) :], maxsplit=1)[0]):
            return None  # "... 2 or lower and married before 30": the condition goes on
        named = [sites for flag, sites in flags.items() if _names(flag, sentence[: frame.end()], question)]
        return named[0][0] if len(named) == 1 and len(named[0]) == 1 else None
    return None


def _by_number(req: Requirement, sites: list[Site]) -> Site | None:
    assert req.value is not None
    found = {
        s.key(): s
        for s in sites
        if not (bind_cutoff._year_like(s.value) and not bind_cutoff._year_like(req.value))
        and close(s.value, req.value * bind_cutoff.scale_for(req, s.value))
    }
    return next(iter(found.values())) if len(found) == 1 else None


# How far a changed number may lie from the stated one (either way) to be read as its replacement.
_NEAR = 1.5


def _tests_number(value: float, req: Requirement, site: Site) -> bool:
    return close(site.value, value * bind_cutoff.scale_for(req, site.value))


def _by_pairing(req: Requirement, sites: list[Site], stated: list[float]) -> Site | None:
    """The code tests no column against the stated number, and exactly one of its comparisons on
    the same side tests a number the question never states: that comparison, if its number is near
    the stated one ("a minimum of 14 percent" written `poverty >= 15`). A comparison against an
    unstated number on the other side, or two of them, or a number far off, binds nothing."""
    assert req.value is not None
    if any(_tests_number(req.value, req, s) for s in sites):
        return None
    free = {
        s.key(): s
        for s in sites
        if s.op == req.op
        and not any(_tests_number(v, req, s) for v in stated)
        and bind_cutoff._year_like(s.value) == bind_cutoff._year_like(req.value)
    }
    if len(free) != 1:
        return None
    site = next(iter(free.values()))
    target = req.value * bind_cutoff.scale_for(req, site.value)
    if target == 0 or site.value == 0 or (site.value > 0) != (target > 0):
        return None
    if site.value.is_integer() and target.is_integer() and abs(site.value - target) == 1:
        return site  # off by one on a whole-number bound ("at least twice" written `>= 1`)
    return site if 1 / _NEAR <= site.value / target <= _NEAR else None


_ANY_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")


def named_once(text: str, req: Requirement) -> bool:
    """The bound's number occurs once in the text, wherever: "fewer than 15 stations ... at least 15
    stations recorded" names two bounds on 15 (the second read or not), so the code's one test
    against 15 is no more the first's than the second's."""
    plain = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    said = sum(close(float(n), req.value or 0.0) for n in _ANY_NUMBER.findall(plain))
    if not re.search(r"\d", req.text):  # a number in words ("at least twice"): that phrase, once
        said += text.count(req.text)
    return said == 1


def bind_loose(b: Binder, question: str, loose: list[Requirement], plan: Plan, pairing: bool = True) -> None:
    """Probe items (a changed answer required) for loose bounds the code writes otherwise.
    `pairing`: also bind a bound by pairing (`_by_pairing`); off for a context's text, which may
    tell of other rules' numbers ("a small county needs more than 47")."""
    sites, flags = code_tests(b.sem), _flags(b.sem)
    stated = [r.value for c in clauses(question) for r in comparisons(c) if r.value is not None]
    found: list[tuple[Requirement, Site | None, str]] = []
    for req in loose:
        site, how = _by_flag(question, req, flags), "flag"
        if (
            site is None
            and sum(close(v, req.value or 0.0) for v in stated) == 1
            and named_once(question, req)
        ):
            # the number names one bound of the question ("below 80" beside "80 or higher" names none)
            site, how = _by_number(req, sites), "number"
        found.append((req, site, how))
    unbound = [req for req, site, _ in found if site is None]
    if (
        pairing
        and len(unbound) == 1
        and sum(close(v, unbound[0].value or 0.0) for v in stated) == 1
        and named_once(question, unbound[0])
    ):
        # one stated bound the code never tests by its number, beside one test of an unstated one
        pairs = [
            (r, _by_pairing(r, sites, stated), "pairing") if r is unbound[0] else (r, s, h)
            for r, s, h in found
        ]
        found = pairs
    for req, site, how in found:
        if site is None:
            continue
        assert req.value is not None
        req_b = req.model_copy(update={"subject": [site.column]})
        plan.unverified = [r for r in plan.unverified if r.text != req.text]
        plan.requirements = [r for r in plan.requirements if r.text != req.text] + [req_b]
        scale = bind_cutoff.scale_for(req, site.value)
        what = {
            "flag": f"the flag's comparison `{site.text}`",
            "number": f"`{site.text}`, the code's one test against {req.value:g}",
            "pairing": f"`{site.text}`, the code's one test on that side against a number the question never states",
        }[how]
        if site.op == req.op and math.isclose(site.value, req.value * scale):
            plan.notes.append(f"{req_b.describe()}: {what}, as stated")
            continue
        plan.notes.append(f"{req_b.describe()}: bound through the code to {what}")
        status = side_status(req.op or "=", site.op)
        if site.sel.language == "pandas":
            edit = probes.SpanEdit(
                kind="text", before=site.text, after=probes.pandas_predicate(req, site.lhs, scale)
            )
            lhs = bind_cutoff.live_lhs(site.lhs, site.query, site.sel.frame)
            code = bind_cutoff.written_probe(lhs, site.op, site.value, req, scale)
        else:
            if not b.con or site.span is None:
                continue
            a, z = site.span
            fixed = site.sel.sql[:a] + probes.sql_predicate(req, site.lhs, scale=scale) + site.sel.sql[z:]
            edit = probes.SpanEdit(kind="sql", before=site.sel.sql, after=fixed)
            code = probes.rerun_probe(b.con, site.sel.sql, fixed)
        plan.items.append(
            b.item(req_b, "rerun", code, b.variables(site.sel), status, edit=edit, needs_changed=True)
        )
