"""Semantic verification as a sequence of real tool calls, for the deterministic manager tier.

    verifier = SemanticVerifier()
    constraints = yield from verifier.open_constraints(ctx, turn, steps)   # before OPEN_STATE
    constraints = yield from verifier.update_constraints(ctx, turn, steps) # UPDATE_STATE: turn-aligned, or a retry
    findings = yield from verifier.verify(obs, ctx, turn, steps)           # at verification

Both are generator fragments a policy runs with `yield from`: every piece of evidence is a tool
action applied by the harness and recorded in the trace —
  inspect_python  the span's code -> its row conditions, aggregates, keys, joins (`inspect.py`);
  run_probe       the data's vocabulary (columns, category values) of the tables the code reads
                  and writes, then one batch of requirement probes (`probes.py`);
  load_state      the committed state whose definition of a term the turn relies on;
  compile_python  every requirement probe before it runs (and every check before it becomes a
                  constraint): one that does not compile is not run and its requirement is
                  reported unverified, never a finding (`syntax.py`).
Requirements come from the turn's question (and the task's standing instructions, and the
current definitions of terms an earlier turn defined). Checks on artifacts the turn leaves (a
table, a frame, the reported dict) become the state's executable constraints when the code is
known: at OPEN in the segment flow, at UPDATE in the turn-aligned flow (the state opened before
the work, with the requirements in words; `update_constraints` gives them code once the turn's
steps are known, and makes them again from a retry's code in either flow). The harness evaluates
them at UPDATE. Everything else is probed at
verification. A requirement violated by a concrete probe result is a finding; one that could not
be tied to code or data is listed as unverified (for the LLM tier), never a finding.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Generator
from functools import partial
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from stateguard.answers import last_json
from stateguard.inspection.code_model import CodeSemantics, Selection
from stateguard.observation import ManagerObservation, WorkerStep
from stateguard.verification import (
    bind_cutoff,
    bind_loose,
    bind_shape,
    carried,
    counted_rows,
    dead_subsets,
    emptied,
    flag_bounds,
    flag_counts,
    listed_joins,
    named_stats,
    outside,
    probes,
    ranking_sides,
    regrouped,
    renames,
    repeated_keys,
    rule_groups,
    rule_multiples,
    rule_offsets,
    rule_statistics,
    rule_windows,
    share_base,
    split_groups,
    sql_edit,
    standing,
    stated_sides,
    superseded,
    unstated_cutoff,
)
from stateguard.verification.bind import RequirementBinder, bind
from stateguard.verification.binder import Plan, reason
from stateguard.verification.code_text import unwrapped
from stateguard.verification.definitions import Definitions
from stateguard.verification.extract import (
    aliases,
    clauses,
    context_requirements,
    current_rule_flags,
    dedupe,
    extract,
    flag_columns,
    flag_scopes,
)
from stateguard.verification.finding import Finding
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.syntax import culprit, syntax_program
from stateguard.verification.vocabulary import Vocabulary, column_tokens, token_run, vocabulary_probe

Fragment = Generator[tuple[str, dict[str, Any]], Any, Any]
# The requirements that read rows from the question's words (a scope, a bound, a value that must be
# present): the empty gate holds only these to rows that exist. A check bound through the code (a
# superseded rule, a regrouped summary) may rightly empty an answer ("0 if none" under today's rule).
_ROW_READINGS = (Kind.SCOPE, Kind.COMPARISON, Kind.NOT_NULL)
Extractor = Callable[..., list[Requirement]]
_TAG = "requirement: "


class SemanticConfig(BaseModel):
    """`stateguard.verification` switches (Hydra: `semantic.*` in configs/eval.yaml)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(
        default=False,
        description="Off by default: not yet measured clean on the held-out hand-written tasks (README).",
    )
    constraints: bool = Field(
        default=True,
        description="Attach artifact checks as executable constraints once the code is known "
        "(OPEN in the segment flow, UPDATE in the turn-aligned flow and after a retry).",
    )
    probes: bool = Field(default=True, description="Probe code-bound checks at verification.")
    definitions: bool = Field(
        default=True, description="Apply the current definition of terms earlier turns defined."
    )
    load_states: int = Field(
        default=2, ge=0, description="Defining states read with load_state per verification."
    )
    carried_scopes: bool = Field(
        default=True,
        description="A count 'of those' after a count of one category: that category on the rows of every "
        "statement a reported field is computed from (`carried.py`).",
    )
    counted_rows: bool = Field(
        default=True,
        description="A count 'of those' after a count: the rows behind the second reported count, taken from "
        "the code and the live workspace, must all be among the first one's (`counted_rows.py`).",
    )
    superseded: bool = Field(
        default=True,
        description="Find a flag the run redefined written out again in a replaced form (`superseded.py`); "
        "a finding needs rows where the two differ and a different answer when the turn reads the flag.",
    )
    loose_bounds: bool = Field(
        default=True,
        description="A stated bound whose words name no column, bound through the code: to the flag its "
        "sentence defines, or to the code's one test against its number (`bind_loose.py`); a finding "
        "needs a changed answer.",
    )
    flag_bounds: bool = Field(
        default=True,
        description="A stated bound whose words name no column, bound through the one column an earlier flag "
        "is cut at its number (`flag_bounds.py`); every statement behind the answer that reads the column "
        "and does not test it must break it for a finding.",
    )
    standing_scopes: bool = Field(
        default=True,
        description="A scope an earlier turn kept in a frame or table of its own for the rest of the analysis, "
        "read around by a later turn's code (`standing.py`); a finding needs a changed answer.",
    )
    regrouped: bool = Field(
        default=True,
        description="A summary an earlier turn grouped by some keys, rebuilt under the same name grouped by "
        "others, by a turn that refers back to it and names none of the new keys (`regrouped.py`); a "
        "finding needs a changed answer.",
    )
    named_statistics: bool = Field(
        default=True,
        description="A value the code names one statistic (`AVG(age) AS median_age`) computed as another, "
        "when the question asks for the named one (`named_stats.py`); a finding needs a changed answer.",
    )
    listed_joins: bool = Field(
        default=True,
        description="A typed-in list joined so that an entry without a match is lost, where the code counts "
        "or fills entries with nothing (`listed_joins.py`): the join keeping the list must give other rows "
        "and the answer gate a changed answer.",
    )
    rule_windows: bool = Field(
        default=True,
        description="The group a rule's per-row statistic (or its group statistic joined back) is taken over, "
        "as the turn's own context or question states it (`rule_windows.py`): other keys re-run as stated "
        "must give other values and a changed answer.",
    )
    rule_groups: bool = Field(
        default=True,
        description="A rule a later turn recalls as a version not in force, computed over other keys than "
        "the one its earlier turn's words and code agreed on (`rule_groups.py`): re-run over that key, the "
        "answer must change.",
    )
    rule_readings: bool = Field(
        default=True,
        description="A rule's group phrase that two or three columns answer to ('with the same South status': "
        "`south66` or `south76`), where the code's one group statistic takes none of them (`rule_windows."
        "readings`): re-run over each reading, every one must report another answer.",
    )
    rule_multiples: bool = Field(
        default=True,
        description="The multiple of a statistic a relative rule states ('at least twice the median ozone of "
        "its month'), against the code's one comparison with a number times something (`rule_multiples.py`): "
        "the turn re-run with the stated multiple and side must report another answer.",
    )
    rule_offsets: bool = Field(
        default=True,
        description="The distance from a statistic a relative rule states ('at least one standard deviation "
        "above the mean score of the pupil's own class', 'two years younger than the median age'), against the "
        "code's one comparison with something plus or minus a number (`rule_offsets.py`): the turn re-run "
        "with the stated distance must report another answer.",
    )
    rule_statistics: bool = Field(
        default=True,
        description="The statistic a relative rule states ('1.5 times the median price of its field'), against "
        "the code's one group statistic of the compared column (`rule_statistics.py`): the turn re-run with "
        "the stated statistic must report another answer.",
    )
    repeated_keys: bool = Field(
        default=True,
        description="A reported mapping built from a column or row field whose live values repeat on rows "
        "that differ (`repeated_keys.py`): the mapping keeps one row per key and drops the others.",
    )
    ranking_sides: bool = Field(
        default=True,
        description="The question's one ranking against the code's one pandas `sort_values(...).head(...)` whose "
        "first key runs the other way (`ranking_sides.py`): re-run turned, it must report another answer.",
    )
    stated_sides: bool = Field(
        default=True,
        description="A number the turn states on one side (and no word of it drops or contrasts rows) that "
        "the code's one test of it keeps on the other (`stated_sides.py`): the turn re-run with that test "
        "turned must report another answer.",
    )
    dead_subsets: bool = Field(
        default=True,
        description="A subset of rows or a row mask the turn builds and never reads (a name its words do "
        "not keep for later turns), while later statements read the whole frame (`dead_subsets.py`): the "
        "turn re-run with those reads taking the subset must report another answer.",
    )
    unstated_cutoffs: bool = Field(
        default=True,
        description="A number the turn states after a comparator that its code never holds, against the code's "
        "one comparison with a number no text of the task names (`unstated_cutoff.py`): the turn re-run with "
        "the stated number there must report another answer.",
    )
    flag_fields: bool = Field(
        default=True,
        description="A scope of flagged rows whose flag the code reads elsewhere, against a reported value "
        "named for the flag that never reads it: its frames must hold only flagged rows.",
    )
    flag_counts: bool = Field(
        default=True,
        description="A count of flagged rows the question asks for, computed as a count of the flag's values "
        "(`flag_counts.py`): the turn re-run with the count as a sum must report another answer.",
    )
    share_bases: bool = Field(
        default=True,
        description="A share the question asks of a subgroup ('what percentage of the women are well paid'), "
        "against the live rows (`share_base.py`): a finding needs the reported share to match the share over "
        "all rows and none within the subgroup.",
    )
    outside_ranges: bool = Field(
        default=True,
        description="A range the question asks the outside of, tested as the range itself (`outside.py`): "
        "the turn re-run with the test negated must report another answer.",
    )
    split_groups: bool = Field(
        default=True,
        description="A query behind a reported value grouped by a key it does not report, where that key "
        "splits the reported groups (`split_groups.py`): the query without it must give other rows and "
        "the answer gate a changed answer.",
    )
    subset_counts: bool = Field(
        default=True,
        description="A count 'of those' reported larger than the count it is taken from: a finding from "
        "the reported values alone (`carried.subset_count_fields`).",
    )
    answer_gate: bool = Field(
        default=True,
        description="Before a finding whose corrected code can be written (a SELECT or a condition "
        "rewritten as stated), re-run the turn's cells that way in a probe: the same reported answer "
        "drops the finding.",
    )
    empty_gate: bool = Field(
        default=True,
        description="With the answer gate: a scope, bound or presence read from the question's words whose "
        "code, re-run as stated, changes only values that become empty (0, missing, an empty table) reads "
        "the clause as rows that do not exist; no finding (`emptied.py`). Checks bound through the code "
        "(a superseded rule) are not held to it.",
    )
    extractor: Literal["rules", "llm"] = Field(
        default="rules",
        description="rules: deterministic extraction (offline); llm: a model on the manager endpoint "
        "(STATEGUARD_MANAGER_*), validated against the requirement schema and merged with the rules' extraction.",
    )


class Verification(BaseModel):
    """What the deterministic tier established for one state (kept for the trace and the LLM tier)."""

    requirements: list[Requirement] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    outcomes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    unverified: list[Requirement] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    gated: list[str] = Field(
        default_factory=list,
        description="Broken requirements that made no finding, and why (the answer gate: the same or an "
        "emptied answer, no re-run where one is needed; only a typed-in list's entries meet it). The "
        "rules manager writes them to the trace as manager notes.",
    )

    def summary(self) -> dict[str, Any]:
        return {
            "requirements": [r.describe() for r in self.requirements],
            "code": self.notes,
            "probe_results": self.outcomes,
            "unverified": [r.describe() for r in self.unverified],
        }


def constraint_text(req: Requirement) -> str:
    return f"{_TAG}{req.describe()} (task: {req.text})"[:300]


class SemanticVerifier:
    def __init__(self, config: SemanticConfig | None = None, extractor: Extractor | None = None):
        self.config = config or SemanticConfig()
        self.extractor = extractor or extract
        self.vocab = Vocabulary()
        self.definitions = Definitions()
        self.flags = superseded.FlagHistory()
        self.scopes = standing.StandingScopes()
        self.listed: set[str] = set()  # the typed-in lists of committed turns (`CodeSemantics.listed`)
        self.groupings = regrouped.GroupingHistory()
        self.rule_groups = rule_groups.RuleGroupHistory()
        self._rule_seen: rule_groups.RuleGroup | None = (
            None  # the planned turn's rule, words and code agreeing
        )
        self._span: tuple[Any, str, CodeSemantics] | None = None  # the code last planned on, per turn
        self.owned: dict[str, probes.ProbeItem] = {}
        self.aliases: dict[str, str] = {}  # nouns the questions so far put in a named frame or table
        self.renamed: dict[str, str] = {}  # columns the code so far renamed: present name -> former name
        self.named: dict[str, str] = {}  # what the questions so far said columns they named hold
        self.last = Verification()
        self._cached: tuple[tuple[Any, ...], Plan] | None = None  # the plan made at OPEN for the same steps
        self._refused = False  # a tool call of the plan being made got no result
        self._con: str | None = None  # the SQL connection's variable in the code under review

    def owns(self, text: str) -> bool:
        return text.startswith(_TAG)

    # -- fragments ----------------------------------------------------------------------
    def open_constraints(self, ctx: Any, turn: Any, steps: list[WorkerStep]) -> Fragment:
        """Constraints for OPEN_STATE: executable artifact checks when the code is known, the
        requirements in words otherwise."""
        self.owned = {}
        plan = yield from self._plan(ctx, turn, steps)
        out: list[dict[str, Any]] = []
        coded = set()
        wanted = [i for i in plan.items if self.config.constraints and i.constraint]
        runnable, _ = yield from self._compiled(wanted)
        for item in runnable:
            text = constraint_text(item.requirement)
            if text not in self.owned:
                self.owned[text] = item
                out.append({"text": text, "code": probes.constraint_code(item)})
                coded.add(id(item.requirement))
        for req in plan.requirements:
            if id(req) not in coded and req.kind is not Kind.ROUNDING:
                text = constraint_text(req)
                if all(c["text"] != text for c in out):
                    out.append({"text": text})
        return out

    def update_constraints(self, ctx: Any, turn: Any, steps: list[WorkerStep]) -> Fragment:
        """Constraints for UPDATE_STATE once the work under review is known: in the turn-aligned
        flow (the state opened before the work, with its requirements in words) and after a retry in
        either flow. The checks the code and artifacts now allow come with code (a requirement of
        the same text gets it in place); a check attached earlier (before a repair) that the retry
        no longer yields goes back to words, so a check of the faulty code never outlives it."""
        before = list(self.owned)
        opened = yield from self.open_constraints(ctx, turn, steps)
        coded: list[dict[str, Any]] = [c for c in opened if c.get("code")]
        return coded + [{"text": text} for text in before if text not in self.owned]

    def verify(self, obs: ManagerObservation, ctx: Any, turn: Any, steps: list[WorkerStep]) -> Fragment:
        """Findings for the state under verification (every piece of evidence a tool call)."""
        plan = yield from self._plan(ctx, turn, steps)
        results = {r.get("text"): r for r in (obs.current_draft or {}).get("constraint_results", [])}
        outcomes: dict[str, probes.ProbeOutcome] = {}
        rest = []
        for item in plan.items:
            text = constraint_text(item.requirement)
            done = results.get(text)
            if item.constraint and text in self.owned and done is not None and done.get("passed") is not None:
                outcomes[item.id] = probes.constraint_outcome(bool(done["passed"]), done.get("error"))
            else:
                rest.append(item)
        broken: dict[str, str] = {}
        if rest and self.config.probes:
            rest, broken = yield from self._compiled(rest)
        if rest and self.config.probes:
            result = yield ("run_probe", {"code": probes.batch(rest)})
            tool = getattr(result, "tool_result", None)
            if tool is not None:
                outcomes.update(probes.parse_batch(str(tool.data.get("stdout", ""))))
        findings = []
        gated: list[str] = []
        for item in plan.items:
            if item.id not in outcomes or not outcomes[item.id].violated:
                continue
            if (
                self.config.empty_gate
                and item.list_entries
                and emptied.entries_only(outcomes[item.id].observed, len(item.requirement.values))
            ):
                gated.append(
                    f"{item.requirement.describe()}: only the typed-in list's own entries meet it, no row "
                    "of the data; no finding"
                )
                continue
            answer = yield from self._answer_as_stated(item, ctx, steps)
            if answer == "same":
                gated.append(
                    f"{item.requirement.describe()}: its {item.check} probe fails, but the turn's code "
                    "written as stated reports the same answer; no finding"
                )
            elif answer == "empty":
                gated.append(
                    f"{item.requirement.describe()}: its {item.check} probe fails, but the turn's code "
                    "written as stated empties every value it changes (no rows meet that reading); no finding"
                )
            elif answer == "unknown" and (
                item.requirement.kind in (superseded.KIND, standing.KIND)
                or item.needs_changed
                or item.check == "regrouped"
            ):
                gated.append(
                    f"{item.requirement.describe()}: its {item.check} probe fails, but the turn could not "
                    "be re-run as stated; no finding without a changed answer"
                )
            else:
                findings.append(self._finding(item, outcomes[item.id]))
        if not any(f.evidence.startswith("output") for f in findings):
            findings += _empty_report(plan.requirements, steps)
        if self.config.subset_counts and turn is not None and not findings:
            findings += _subset_report(turn.question, steps)
        failed = [i for i in plan.items if i.id in broken]
        self.last = Verification(
            requirements=plan.requirements,
            notes=plan.notes
            + gated
            + [
                f"{i.requirement.describe()}: its {i.check} probe does not compile ({broken[i.id]}); not run"
                for i in failed
            ],
            unverified=plan.unverified
            + [i.requirement for i in failed if i.requirement not in plan.unverified],
            outcomes={k: v.model_dump(exclude_none=True) for k, v in outcomes.items()},
            findings=findings,
            gated=gated,
        )
        return findings

    # -- internals ----------------------------------------------------------------------
    def _answer_as_stated(self, item: probes.ProbeItem, ctx: Any, steps: list[WorkerStep]) -> Fragment:
        """'same' when the turn's cells, re-run in a probe with the item's edit applied, print the
        same JSON answer the turn reported (the requirement, though broken, does not change the
        answer); 'changed' when they print another; 'unknown' when that cannot be told (no edit, no
        printed answer, the edit found nowhere, the probe failed, or SQL that a probe here would
        write through); 'empty' when every value it changes becomes empty and the requirement
        reads rows from the question's words (`emptied.py`). An item with other readings (`also`) is
        'changed' only when each reading changes the answer; the first other verdict is its verdict."""
        for edit in [item.edit, *item.also]:
            answer = yield from self._answer_with(edit, item, ctx, steps)
            if answer != "changed":
                return answer
        return "changed"

    def _answer_with(
        self, edit: probes.SpanEdit | None, item: probes.ProbeItem, ctx: Any, steps: list[WorkerStep]
    ) -> Fragment:
        ran = [s for s in steps if s.success and s.error is None and s.action.strip()]
        reported = next(
            (a for s in reversed(ran) if s.output and (a := last_json(s.output)) is not None), None
        )
        if not self.config.answer_gate or edit is None or reported is None:
            return "unknown"
        if edit.kind == "sql" and (
            self._con is None or getattr(ctx.workspace, "probes_share_resources", False)
        ):
            return "unknown"
        if (
            edit.kind == "text"
            and re.search(r"\b(?:CREATE|INSERT|UPDATE|DELETE|DROP|ALTER)\b", "\n".join(s.action for s in ran))
            and getattr(ctx.workspace, "probes_share_resources", False)
        ):
            return "unknown"  # any re-run of cells that write SQL would write through to the shared database
        result = yield ("run_probe", {"code": probes.answer_probe([s.action for s in ran], edit, self._con)})
        tool = getattr(result, "tool_result", None)
        if tool is None or not tool.ok:
            return "unknown"
        applied, printed = probes.parse_answer(str(tool.data.get("stdout", "")))
        after = last_json(printed) if applied else None
        if after is None:
            return "unknown"
        if after == reported:
            return "same"
        if (
            self.config.empty_gate
            and item.requirement.kind in _ROW_READINGS
            and emptied.emptied(reported, after)
        ):
            return "empty"
        return "changed"

    def _compiled(
        self, items: list[probes.ProbeItem]
    ) -> Generator[tuple[str, dict[str, Any]], Any, tuple[list[probes.ProbeItem], dict[str, str]]]:
        """The items whose probe compiles (`compile_python`, one call while all compile), and the
        syntax error of each one that does not: those are neither run nor attached."""
        pending, broken = list(items), {}
        while pending:
            program, spans = syntax_program(pending)
            result = yield ("compile_python", {"code": program})
            tool = getattr(result, "tool_result", None)
            if tool is None or not tool.ok:
                break  # no evidence either way: the batch isolates each snippet anyway
            data = tool.data
            if data.get("valid"):
                break
            message = f"{data.get('message')} at line {data.get('line')}"
            bad = culprit(spans, data.get("line"))
            drop = [i for i in pending if bad is None or i.id == bad]  # not attributable: none is run
            broken.update({i.id: message for i in drop})
            pending = [i for i in pending if i not in drop]
        return pending, broken

    def _plan(self, ctx: Any, turn: Any, steps: list[WorkerStep]) -> Fragment:
        key = (getattr(turn, "turn_id", None), tuple(s.index for s in steps))
        if steps and self._cached is not None and self._cached[0] == key:
            return self._cached[1]  # verification right after OPEN: the evidence is already in the trace
        self._refused = False
        plan = yield from self._fresh_plan(ctx, turn, steps)
        # a plan made while a tool call was refused (the activation's tool budget) is not reused
        self._cached = (key, plan) if steps and not self._refused else None
        return plan

    def _fresh_plan(self, ctx: Any, turn: Any, steps: list[WorkerStep]) -> Fragment:
        question = turn.question if turn is not None else ""
        context = ctx.task.turns[0].context if ctx.task.turns else ""
        ran = [s for s in steps if s.success and s.error is None and s.action.strip()]
        sem = CodeSemantics()
        if ran:
            result = yield ("inspect_python", {"code": "\n\n".join(s.action for s in ran)})
            tool = getattr(result, "tool_result", None)
            self._refused |= tool is None
            if tool is not None and tool.ok and tool.data.get("valid"):
                sem = CodeSemantics.model_validate(tool.data.get("semantics") or {})
        self._con = sem.connection
        self.renamed.update(renames.renames_in("\n\n".join(s.action for s in ran), sem))
        written = {w.lower() for s in ran for w in s.meta.get("writes", [])}
        coded = _names(sem)
        # frames read whole under another name (`chosen = orders`) are read all the same
        plain = [n for n in _plain_reads(ran) if n not in coded]
        names = coded + plain
        need = [n for n in names if n.lower() not in self.vocab.tables or n.lower() in written]
        if need and ctx.workspace is not None:
            result = yield ("run_probe", {"code": vocabulary_probe(need, sem.connection)})
            tool = getattr(result, "tool_result", None)
            self._refused |= tool is None
            if tool is not None:
                self.vocab = self.vocab.merged(Vocabulary.from_probe(str(tool.data.get("stdout", ""))))
                # the context's words for columns: read again only when new columns are known (a
                # renamed column's former name read as its present one)
                if context:
                    live = set(self.vocab.columns())
                    self.vocab = self.vocab.with_descriptions(renames.spelled(context, self.renamed, live))
        tables = [n.lower() for n in coded] + [n.lower() for n in plain if n.lower() in self.vocab.tables]
        # the question's words for a renamed column ("Band 2" for `b2`): read as its present name where
        # no table the turn reads still has the former one
        question = renames.spelled(question, self.renamed, set(self.vocab.columns(tables)))
        # what a question says a column it names holds ("dur for the eruption time"), kept for the run and
        # read where the context describes the column nowhere
        for column, words in renames.said_for(question, set(self.vocab.columns())).items():
            self.named.setdefault(column, words)
        glosses = "; ".join(f"{c} ({w})" for c, w in self.named.items() if c not in self.vocab.column_words)
        if glosses:
            self.vocab = self.vocab.with_descriptions(glosses)
        code = "\n".join(s.action for s in ran)
        reqs = self.extractor(question, context=context, vocab=self.vocab if ran else None, tables=tables)
        reqs = dedupe(reqs + context_requirements(_own_context(turn), self.vocab if ran else None, tables))
        read_flags = [r for r in reqs if _flag_read_by_code(r, code)]
        reqs = [r for r in reqs if r not in read_flags]
        if (
            ran
        ):  # a flag scope of one value among several ("..., and the total displacement of all frugal cars")
            parts = [p for c in clauses(question) for p in re.split(r"[,;:]|\band\b", c)]
            read_flags += [
                r
                for p in parts
                for r in flag_scopes(p, self.vocab, tables)
                if _flag_read_by_code(r, code) and r.columns not in [f.columns for f in read_flags]
            ]
        if ran and sem.reports and not any(r.kind is Kind.OUTPUT for r in reqs):
            # The question names no fields: what the turn reports must still have defined values.
            fields = [k for k in list(sem.reports.values())[-1] if k != "answer_type"]
            if fields:
                reqs.append(Requirement(kind=Kind.OUTPUT, text="the reported answer", fields=fields))
        if self.config.definitions and turn is not None:
            reqs = yield from self.definitions.apply(turn, reqs, ctx, self.config.load_states)
        end = max((s.index for s in steps), default=-1)
        later = frozenset(w for i, s in ctx.steps.items() if i > end for w in s.meta.get("writes", []))
        if not ran:
            return Plan(requirements=reqs, unverified=list(reqs))
        self.aliases.update(aliases(question))
        numbers = unstated_cutoff.numbers_of(code)
        reqs = [bind_cutoff.in_code_scale(r, numbers) for r in reqs]
        plan = bind(
            reqs,
            sem,
            self.vocab,
            later,
            then=partial(self._through_code, question, tables, _own_context(turn)),
            aliases=self.aliases,
            listed=self.listed,
            said=f"{question}\n{_own_context(turn)}",
            code=code,
        )
        self._span = (getattr(turn, "turn_id", None), code, sem)
        self._rule_seen = None
        if self.config.superseded:
            self._restated(question, code, sem, plan)
        if self.config.regrouped:
            self._regrouped(question, code, sem, plan)
        if self.config.standing_scopes:
            self._standing(question, [s.action for s in ran], sem, plan)
            self._standing_conditions(f"{question}\n{_own_context(turn)}", code, sem, plan)
        if self.config.carried_scopes:
            self._carried(question, code, sem, tables, later, plan)
        if self.config.counted_rows:
            self._counted_rows(question, code, sem, plan)
        if self.config.flag_bounds:
            self._flag_bounds(question, code, sem, tables, later, plan)
        if self.config.split_groups:
            self._split_groups(code, sem, later, plan)
        if self.config.listed_joins:
            self._listed_joins(code, sem, later, plan)
        if self.config.outside_ranges:
            self._outside(question, code, plan)
        if self.config.rule_windows:
            self._rule_windows(f"{_own_context(turn)}\n{question}", code, sem, later, plan, tables)
        if self.config.rule_multiples:
            self._rule_comparison(
                rule_multiples, "rule_multiple", f"{_own_context(turn)}\n{question}", code, plan
            )
        if self.config.rule_offsets:
            self._rule_comparison(
                rule_offsets, "rule_offset", f"{_own_context(turn)}\n{question}", code, plan
            )
        if self.config.rule_statistics:
            self._rule_statistics(f"{_own_context(turn)}\n{question}", code, plan)
        if self.config.repeated_keys:
            self._repeated_keys(code, sem, plan)
        if self.config.ranking_sides:
            self._ranking_side(question, code, plan)
        if self.config.stated_sides and turn is not None:
            self._stated_side(turn, code, plan)
        if self.config.unstated_cutoffs and turn is not None:
            self._unstated_cutoff(ctx, turn, code, plan)
        if self.config.dead_subsets:
            self._dead_subset(code, f"{question}\n{_own_context(turn)}", plan)
        if self.config.share_bases:
            self._share_bases(question, names, tables, sem, plan)
        if self.config.flag_counts:
            self._flag_counts(question, code, sem, tables, plan)
        current = [
            bind_cutoff.in_code_scale(r, numbers)
            for c in clauses(question)
            for r in current_rule_flags(c, self.vocab, tables)
        ]
        binder = RequirementBinder(sem, self.vocab, later)
        self._flag_frames(sem, plan, current, binder)
        if self.config.flag_fields:
            self._flag_fields(sem, plan, read_flags, binder)
        return plan

    def _flag_frames(
        self, sem: CodeSemantics, plan: Plan, current: list[Requirement], binder: RequirementBinder
    ) -> None:
        """A scope of flagged rows ("among the strong wines") that the code never tests, because it
        never reads the flag: the frames its reported values are computed from must then hold only
        flagged rows (code that restates the rule keeps only those). A probe item when every such
        frame holding the flag column also holds unflagged rows (`strong_wines = wine`). A SQL
        statement behind a reported value is checked on its own kept rows (`... FROM kept` where
        `kept` has the flag column)."""
        self._flag_queries(sem, plan, binder, current)
        frames = _frames_in("\n".join(t for f, t in sem.fields.items() if f != "answer_type"))
        if not frames:
            return
        for req in _flag_requirements(plan, current):
            if req not in plan.requirements:
                plan.requirements.append(req)
            plan.notes.append(
                f"{req.describe()}: every frame behind the answer is checked for rows "
                f"{'with' if req.exclude else 'without'} {req.columns[0]}"
            )
            _add_item(plan, req, "flag_frames", _flag_frames_probe(req, frames), frames, "missing")

    def _flag_fields(
        self, sem: CodeSemantics, plan: Plan, read: list[Requirement], binder: RequirementBinder
    ) -> None:
        """A scope of flagged rows whose flag the turn's code reads for some values but not in a reported
        value named for the flagged rows (`total_displ_frugal = road["displ"].sum()` where the question asks
        for "the total engine displacement of all frugal road cars"): that value's frames must hold only
        flagged rows. The field's name is the agent's own label for what it computed. A value a SQL
        query computed (`"n_opec_thrifty": n_opec`, `n_opec = con.execute("SELECT count(*) FROM recent
        WHERE opec = 'yes'")...`) from a table that holds the flag is re-run with the flag tested, and
        the answer gate must see the answer change."""
        for req in read:
            column = req.columns[0]
            tokens = column_tokens(column)
            for field, text in sem.fields.items():
                named = column_tokens(field)
                at = token_run(named, tokens)
                if field == "answer_type" or not at or any(named[i - 1] in _NEGATING for i in at if i):
                    continue  # not named for the flagged rows ("n_non_frugal" names the others)
                if re.search(rf"(?<![\w]){re.escape(column)}(?![\w])", text):
                    continue  # the value's own code reads the flag
                query = _query_behind(text, sem)
                if query is not None:
                    if re.search(
                        rf"\b{re.escape(column)}\b", query.sql, re.IGNORECASE
                    ) or column not in binder.columns_of(query):
                        continue  # the query reads the flag (tests it, counts it) or cannot
                    test = f"NOT {column}" if req.exclude else column
                    fixed = sql_edit.add_condition(query.sql, test)
                    if fixed is None:
                        continue
                    if req not in plan.requirements:
                        plan.requirements.append(req)
                    plan.notes.append(
                        f"{req.describe()}: the query behind the reported {field} never tests {column}"
                    )
                    binder.add_rerun(req, query, fixed, "missing", plan, needs_changed=True)
                    continue
                frames = _frames_in(text)
                if not frames:
                    continue
                if req not in plan.requirements:
                    plan.requirements.append(req)
                plan.notes.append(f"{req.describe()}: the reported {field} never reads {column}")
                _add_item(plan, req, "flag_frames", _flag_frames_probe(req, frames), frames, "missing")

    def _flag_queries(
        self, sem: CodeSemantics, plan: Plan, binder: RequirementBinder, current: list[Requirement]
    ) -> None:
        """SQL statements behind a reported value that read a table holding the flag of an untested
        flag scope, or of the rule in force against a withdrawn one, and do not test it themselves:
        each one's kept rows must all be flagged (or, for the withdrawn rule's rows, none)."""
        for req in _flag_requirements(plan, current):
            column = req.columns[0]
            sites = [
                (sel, site)
                for sel in sem.selections
                if sel.language == "sql"
                and carried.feeds_answer(sel, sem)
                and column in binder.columns_of(sel)
                and not _tests(sel, column)
                and (site := binder.row_site(sel, req, column)) is not None
            ]
            if not sites:
                continue
            plan.requirements.append(req)
            plan.notes.append(
                f"{req.describe()}: {len(sites)} query(ies) behind the answer never test {column}"
            )
            for sel, (code, _) in sites:
                _add_item(plan, req, "kept_rows", code, binder.variables(sel), "missing")

    def _through_code(
        self, question: str, tables: list[str], rule: str, binder: RequirementBinder, plan: Plan
    ) -> None:
        """Bounds and statistics bound through the code where the words name no column."""
        if self.config.loose_bounds:
            # the question's bounds, then those of the rule the turn's own context states
            for text, pairing in ((question, True), (rule, False)):
                if text:
                    loose = bind_loose.loose_bounds(text, self.vocab, tables, plan, extracted=pairing)
                    bind_loose.bind_loose(binder, text, loose, plan, pairing)
        if self.config.named_statistics:
            earlier = self.groupings.earlier_statistics(question, binder.sem) if self.config.regrouped else {}
            named_stats.bind_named(binder, question, plan, earlier)
            named_stats.bind_only(binder, question, plan, rule)
            named_stats.bind_bare(binder, question, plan)

    def _carried(
        self,
        question: str,
        code: str,
        sem: CodeSemantics,
        tables: list[str],
        later: frozenset[str],
        plan: Plan,
    ) -> None:
        """Probe items for a scope of every reported value (`carried.py`: a count "of those", an
        instruction that leaves values out): on the rows of every statement a reported field is
        computed from, except those that test the column themselves (the ordinary scope check)."""
        binder = RequirementBinder(sem, self.vocab, later)
        wide = carried.carried_scopes(question, self.vocab, tables)
        wide += carried.instruction_scopes(question, self.vocab, tables)
        wide += carried.preamble_scopes(question, self.vocab, tables)
        for bound in carried.carried_bounds(question):
            if column := carried.bound_column(bound, sem):  # the code's one column tested that way
                wide.append(bound.model_copy(update={"columns": [column], "function": None}))
        for req in wide:
            column = req.columns[0]
            sites = []
            for sel in sem.selections:
                if sel.flag or column not in binder.columns_of(sel):
                    continue
                feeds = carried.feeds_answer(sel, sem) or carried.counted_by_name(sel, sem)
                if sel.language == "sql" and sel.sql and binder.con and (feeds or sel.target is None):
                    # a value of the statement taken by a subquery of its select list that never tests the
                    # column; a statement unpacked into several names (`n, k = con.execute(...).fetchone()`)
                    # binds none
                    predicate = probes.sql_predicate(req, column)
                    for inner in carried.untested_subqueries(sel.sql, column):
                        if snippet := probes.kept_rows_probe(binder.con, inner, predicate):
                            sites.append((sel, (snippet, False)))
                if _tests(sel, column) or _tests_by_mask(sel, column, sem, code) or not feeds:
                    continue
                frame = carried.counted_frame(sel)
                if frame and column in self.vocab.tables.get(frame.lower(), {}):
                    predicate = probes.pandas_predicate(req, f"_f[{column!r}]")
                    sites.append((sel, (probes.frame_rows_probe(frame, predicate), False)))
                    continue
                site = binder.row_site(sel, req, column)
                if site:
                    sites.append((sel, site))
            if not sites:
                continue
            plan.requirements.append(req)
            plan.notes.append(
                f"{req.describe()}: holds for every reported value; {len(sites)} statement(s) behind one "
                f"do not test {column} themselves"
            )
            for sel, (snippet, _) in sites:  # each statement on its own: any one with other rows breaks it
                # probed at verification, never attached: a scope item of the same words may be already
                _add_item(plan, req, "kept_rows", snippet, binder.variables(sel), "missing")

    def _counted_rows(self, question: str, code: str, sem: CodeSemantics, plan: Plan) -> None:
        """Items on the rows the code counts (`counted_rows.py`): for a question of a count and a count "of
        those" whose answer is those two counts, the second's rows must be among the first's; for a share the
        question asks ("what percentage of the dramas"), its numerator's rows must be among its denominator's."""
        if not sem.reports:
            return
        report, keys = list(sem.reports.items())[-1]
        fields = [k for k in keys if k != "answer_type"]
        checks: list[tuple[Requirement, str | None]] = []
        if len(fields) == 2 and counted_rows.count_of_those(question):
            first, second = fields
            rows1 = counted_rows.field_rows(sem.fields.get(first, ""), sem, code)
            rows2 = counted_rows.field_rows(sem.fields.get(second, ""), sem, code)
            if rows1 is not None and rows2 is not None:
                snippet = counted_rows.probe(report, first, second, rows1, rows2, sem.connection)
                checks.append((counted_rows.requirement(first, second), snippet))
        if share_base.asks_share_of(question):
            for field in fields:
                pair = counted_rows.share_rows(sem.fields.get(field, ""), sem, code)
                if pair is not None:
                    snippet = counted_rows.share_probe(report, field, *pair, sem.connection)
                    checks.append((counted_rows.requirement(field), snippet))
        for req, snippet in checks:
            if snippet is None:
                continue
            plan.requirements.append(req)
            plan.notes.append(f"{req.describe()}: both row sets are taken from the code and compared")
            _add_item(plan, req, counted_rows.PROBE, snippet, [report], "missing")

    def _flag_bounds(
        self,
        question: str,
        code: str,
        sem: CodeSemantics,
        tables: list[str],
        later: frozenset[str],
        plan: Plan,
    ) -> None:
        """Probe items for a loose bound on the column an earlier flag is cut at its number
        (`flag_bounds.py`): the kept rows of every statement that reads the column and does not test
        it against the number; violated only when every one of them breaks the bound."""
        binder = RequirementBinder(sem, self.vocab, later)
        real = {c.lower(): c for c in self.vocab.columns()}
        for req in bind_loose.loose_bounds(question, self.vocab, tables, plan):
            found = flag_bounds.bound_column(self.flags, question, req, code, sem)
            column = real.get(found[0]) if found else None
            if found is None or column is None:
                continue
            scale = found[1]
            bound = req.model_copy(update={"subject": [column], "columns": [column]})
            sites = [
                (sel, site)
                for sel in sem.selections
                if not sel.flag
                and column in binder.columns_of(sel)
                and (site := binder.row_site(sel, bound, column, scale=scale, missing_ok=True)) is not None
            ]
            if not sites:
                continue
            plan.unverified = [r for r in plan.unverified if r.text != req.text]
            plan.requirements = [r for r in plan.requirements if r.text != req.text] + [bound]
            plan.notes.append(
                f"{bound.describe()}: bound through an earlier flag cut at {req.value:g}; "
                f"{len(sites)} statement(s) read {column}"
            )
            names = [v for sel, _ in sites for v in binder.variables(sel)]
            code_all = probes.all_sites([snippet for _, (snippet, _) in sites])
            _add_item(plan, bound, "kept_rows", code_all, list(dict.fromkeys(names)), "missing")

    def _outside(self, question: str, code: str, plan: Plan) -> None:
        """Items for a range the question asks the outside of that the code tests as the range
        itself (`outside.py`); the answer gate must then see the answer change."""
        for found in outside.flipped(question, code):
            note, edit = f"the code tests `{found.before}`, the range itself", (found.before, found.after)
            _add_text_rerun(
                plan, outside.requirement(found), note, code, edit, "outside", outside.PROBE, "differs"
            )

    def _share_bases(
        self, question: str, names: list[str], tables: list[str], sem: CodeSemantics, plan: Plan
    ) -> None:
        """An item per share the question asks of a subgroup (`share_base.py`), on the frames and tables
        the turn read that hold its flag; the reported share must not be the whole table's."""
        if not sem.reports:
            return
        report, keys = list(sem.reports.items())[-1]
        for share in share_base.subgroup_shares(question, self.vocab, tables, keys):
            field = share_base.share_field(keys, share)
            frames = [n for n in names if share.flag in self.vocab.tables.get(n.lower(), {})]
            if field is None or not frames:
                continue
            req = share_base.requirement(share)
            plan.requirements.append(req)
            plan.notes.append(
                f"{req.describe()}: the reported {field} is checked against the subgroup's share"
            )
            code = share_base.probe(share, frames, sem.connection, report, field)
            _add_item(plan, req, "share_base", code, [report], "missing")
        shares = share_base.share_of_whole_fields(question, keys)
        if shares:
            req = Requirement(
                kind=Kind.AGGREGATION, text="a share of a whole", function="mean", subject=shares
            )
            plan.requirements.append(req)
            upper = share_base.stated_upper(question)
            plan.notes.append(f"{req.describe()}: {', '.join(shares)} must lie between 0 and {upper:g}")
            probe = share_base.range_probe(report, shares, upper)
            _add_item(plan, req, "share_range", probe, [report], "aggregation")

    def _flag_counts(
        self, question: str, code: str, sem: CodeSemantics, tables: list[str], plan: Plan
    ) -> None:
        """Items for a count of flagged rows written as a count of the flag's values (`flag_counts.py`);
        the answer gate must then see the answer change."""
        for found in flag_counts.counted(question, code, sem, flag_columns(self.vocab, tables)):
            note, edit = f"{found.field} is `{found.before}`", (found.before, found.after)
            req = flag_counts.requirement(found)
            _add_text_rerun(plan, req, note, code, edit, "flag_count", flag_counts.PROBE, "aggregation")

    def _rule_comparison(self, module: ModuleType, check: str, rule: str, code: str, plan: Plan) -> None:
        """An item for the code's one comparison that a relative rule's words state another way: another
        multiple or side of its statistic (`rule_multiples.py`), or another distance from it
        (`rule_offsets.py`); the answer gate must then see the answer change."""
        found = module.changed(rule, code)
        if found is None:
            return
        req = module.requirement(found)
        note, edit = f"the code tests `{found.site.text}`", (found.site.text, found.after)
        _add_text_rerun(plan, req, note, code, edit, check, module.PROBE, found.status)

    def _rule_statistics(self, rule: str, code: str, plan: Plan) -> None:
        """An item for the code's one group statistic behind its rule when it is taken with another
        statistic than the rule states (`rule_statistics.py`); the answer gate must see the answer change."""
        found = rule_statistics.changed(rule, code)
        if found is None:
            return
        req = rule_statistics.requirement(found)
        note = f"the code's rule `{found.compared}` is built on `{found.site.text.strip()}`"
        edit = (found.site.text, found.site.after)
        # the stated quantile taken at another fraction (0.8 for the 90th percentile) is another cut-off
        # of the same statistic; another statistic is another aggregation
        status = (
            "threshold"
            if found.site.function == "quantile" and found.stated.function == "quantile"
            else "aggregation"
        )
        _add_text_rerun(plan, req, note, code, edit, "rule_statistic", rule_statistics.PROBE, status)

    def _repeated_keys(self, code: str, sem: CodeSemantics, plan: Plan) -> None:
        """A probe item for each mapping a reported value builds from keyed rows (`repeated_keys.py`):
        in the value's own code, or in the statement assigning a name it reads."""
        found: dict[tuple[str, str], repeated_keys.Site] = {}
        for field, text in sem.fields.items():
            if field == "answer_type":
                continue
            texts = [text] + [
                line
                for name in _frames_in(text)
                for line in code.splitlines()
                if re.match(rf"\s*{re.escape(name)}\s*=(?!=)", line)
            ]
            for site in (s for t in texts for s in repeated_keys.sites(t)):
                found.setdefault((site.frame, site.key), site)
        for site in found.values():
            req = repeated_keys.requirement(site)
            plan.requirements.append(req)
            plan.notes.append(f"{req.describe()}: the answer's mapping `{site.text.strip()[:60]}`")
            names = [site.frame] if not site.frame.startswith("_") else ["result"]
            _add_item(plan, req, "repeated_keys", repeated_keys.probe(site), names, "grouping")

    def _ranking_side(self, question: str, code: str, plan: Plan) -> None:
        """A re-run item for the one pandas ranking cut by `head` whose first key runs against the
        question's one ranking (`ranking_sides.py`), or its one superlative of age where that key is an
        age; the answer gate must see the answer change."""
        ranks = [r for r in plan.requirements if r.kind is Kind.ORDER and r.descending is not None]
        aged = ranking_sides.aged(question, code) if not ranks else None
        if aged is not None:
            ranks = [aged]
        found = (
            ranking_sides.turned(code, bool(ranks[0].descending), through_name=aged is not None)
            if len(ranks) == 1
            else None
        )
        if found is None:
            return
        req = ranking_sides.requirement(ranks[0])
        note = f"the code's one ranking is `{found[0]}`"
        _add_text_rerun(plan, req, note, code, found, "ranking_side", ranking_sides.PROBE, "reversed")

    def _stated_side(self, turn: Any, code: str, plan: Plan) -> None:
        """A re-run item for the code's one test of a stated number on the other side than stated
        (`stated_sides.py`); the answer gate must see the answer change."""
        found = stated_sides.flipped(f"{_own_context(turn)}\n{turn.question}", code)
        if found is None:
            return
        req = stated_sides.requirement(found)
        note = f"the code's one test of it is `{found.before}`"
        edit = (found.before, found.after)
        _add_text_rerun(plan, req, note, code, edit, "stated_side", stated_sides.PROBE, found.status)

    def _unstated_cutoff(self, ctx: Any, turn: Any, code: str, plan: Plan) -> None:
        """A re-run item for the code's one comparison against a number no text names, when the turn
        states one number its code never holds (`unstated_cutoff.py`); the answer gate must see the
        answer change."""
        now = getattr(turn, "turn_id", None)
        turns = [t for t in ctx.task.turns if now is None or getattr(t, "turn_id", now) <= now]
        texts = [f"{getattr(t, 'question', '')}\n{_own_context(t)}" for t in [*turns, turn]]
        described = str(getattr(ctx.task.turns[0], "context", "") or "") if ctx.task.turns else ""
        found = unstated_cutoff.changed(f"{_own_context(turn)}\n{turn.question}", texts, code, described)
        if found is None:
            return
        req = unstated_cutoff.requirement(found)
        note = f"the code tests `{found.before}`, a number no text names"
        edit = (found.before, found.after)
        _add_text_rerun(plan, req, note, code, edit, "unstated_cutoff", unstated_cutoff.PROBE, "threshold")

    def _dead_subset(self, code: str, said: str, plan: Plan) -> None:
        """A re-run item for the one subset of rows or row mask the turn builds and never reads while
        later statements read its frame whole (`dead_subsets.py`); the answer gate must see the answer
        change."""
        found = dead_subsets.unused(code, said)
        if found is None:
            return
        req = dead_subsets.requirement(found)
        note = f"`{found.name}` (rows of `{found.frame}`) is built and never read; later lines read `{found.frame}`"
        edit = (found.before, found.after)
        _add_text_rerun(plan, req, note, code, edit, "dead_subset", dead_subsets.PROBE, "scope")

    def _rule_windows(
        self,
        rule: str,
        code: str,
        sem: CodeSemantics,
        later: frozenset[str],
        plan: Plan,
        tables: list[str] | None = None,
    ) -> None:
        """A re-run item for the turn's one per-row statistic taken over other keys than its own
        rule states (`rule_windows.py`), or for its one group statistic joined back onto the rows
        over other keys; the answer gate must then see the answer change."""
        # of the tables the turn reads; where the code's one group statistic is found, only of those
        # holding all its keys: the stated group is of the rows the statistic is taken over, not of a
        # typed-in sheet read beside them ("their sex and candidate" beside a sheet's `candidate`)
        code_keys = rule_windows.rule_keys(code, sem)
        if code_keys:
            holding = [
                name
                for name in (tables if tables is not None else list(self.vocab.tables))
                if set(code_keys) <= {c.lower() for c in self.vocab.tables.get(name, {})}
            ]
            tables = holding or tables
        columns = rule_windows.groupable(self.vocab, tables)
        years = rule_windows.groupable(self.vocab, tables, years=True)
        ids = rule_windows.groupable(self.vocab, tables, ids=True)
        measures = [c for c in self.vocab.columns(tables) if c not in columns + years + ids]
        stated = (
            rule_windows.stated_group(
                rule,
                columns,
                self.vocab.group_words(),
                measures,
                self.vocab.column_values(tables),
                years,
                ids,
            )
            if rule.strip()
            else None
        )
        if self._span is not None and isinstance(self._span[0], int):
            self._rule_seen = (
                self.rule_groups.agreeing(self._span[0], code, sem, stated)
                if stated is not None
                else self.rule_groups.taken(self._span[0], rule, code, sem)
            )
        if stated is None and self.config.rule_groups:  # a rule an earlier turn computed, recalled
            stated = self.rule_groups.recalled(rule, code, sem)
        others: list[rule_windows.Stated] = []
        if stated is None and self.config.rule_readings and (keys := rule_windows.rule_keys(code, sem)):
            # one phrase two columns answer to, and the code's key is neither: each reading is re-run
            options = rule_windows.readings(rule, columns, self.vocab.group_words(), measures, years)
            if options and not any(o.matches(keys) for o in options):
                stated, others = options[0], options[1:]
        if stated is None:
            return
        before = len(plan.items)
        req = rule_windows.requirement(stated, others)
        self._group_rerun(req, stated, code, sem, later, plan)
        if others:
            added = plan.items[before:]
            edits = [rule_windows.reading_edit(code, sem, o) for o in others]
            if len(added) != 1 or any(e is None for e in edits):
                del plan.items[before:]  # a reading that cannot be re-run: no finding
                plan.unverified.append(req)
                return
            plan.items[before] = added[0].model_copy(update={"also": edits})

    def _group_rerun(
        self,
        req: Requirement,
        stated: rule_windows.Stated,
        code: str,
        sem: CodeSemantics,
        later: frozenset[str],
        plan: Plan,
    ) -> None:
        """The re-run item of the turn's one group statistic over the stated keys."""
        binder = RequirementBinder(sem, self.vocab, later)
        site = rule_windows.code_site(sem, stated, code)
        if site is None:
            joined = rule_windows.joined_site(code, sem, stated)
            if joined is None:
                return
            note = f"the code groups the statistic it joins back by {', '.join(joined.keys)}"
            if joined.sel is None:  # pandas: the lines from the grouping to the look-up, re-run as stated
                edit = (joined.before, joined.after)
                _add_text_rerun(
                    plan,
                    req,
                    note,
                    code,
                    edit,
                    "rule_window",
                    rule_windows.PROBE,
                    "grouping",
                    names=joined.names,
                )
                return
            site_sel, fixed = joined.sel, joined.after
        else:
            note = f"the code takes it over {', '.join(site.keys) or 'every row'}"
            site_sel, fixed = site.sel, site.fixed
        plan.requirements.append(req)
        plan.notes.append(f"{req.describe()}: {note}")
        if site_sel.language == "sql":
            binder.add_rerun(req, site_sel, fixed, "grouping", plan, needs_changed=True)
            return
        assert site is not None  # a pandas site here is a transform: its receiver is compared first
        edit_span = probes.SpanEdit(kind="text", before=site.before, after=site.fixed)
        probe = rule_windows.pandas_probe(site.before + site.probe_suffix, site.fixed + site.probe_suffix)
        plan.items.append(
            binder.item(
                req,
                "rerun",
                probe,
                binder.variables(site.sel),
                "grouping",
                edit=edit_span,
                needs_changed=True,
            )
        )

    def _listed_joins(self, code: str, sem: CodeSemantics, later: frozenset[str], plan: Plan) -> None:
        """Items for a join that drops the unmatched entries of a typed-in list the code counts
        entries with nothing of (`listed_joins.py`); the answer gate must then see the answer change."""
        if any(item.check == "kept_side" for item in plan.items):
            return  # the question's words bound the kept entries already
        listed = listed_joins.with_copies(self.listed, sem)
        binder = RequirementBinder(sem, self.vocab, later)
        joins = [
            (sel, j, side)
            for sel in sem.selections
            for j in sel.joins
            if (side := listed_joins.listed_side(j, listed))
        ]
        if any(listed_joins.keeps(sel, j, side) for sel, j, side in joins):
            return  # a join keeps the list's every entry: a narrower join before it is a step toward it
        for sel, j, side in joins:
            name = bind_shape.side_name(getattr(j, side))
            if listed_joins.expects_unmatched(code, sel, set(self.vocab.tables.get(name.lower(), {})), name):
                req = listed_joins.requirement(name)
                plan.requirements.append(req)
                bind_shape.keep_side(binder, req, sel, j, side, plan)

    def _split_groups(self, code: str, sem: CodeSemantics, later: frozenset[str], plan: Plan) -> None:
        """Re-run items for queries behind a reported value grouped by a key they do not report
        (`split_groups.py`); the answer gate must then see the answer change."""
        binder = RequirementBinder(sem, self.vocab, later)
        for sel in sem.selections:
            if sel.language != "sql" or not sel.sql or not standing.behind_answer(sel, sem, code):
                continue
            target = (sel.target or "").lower()
            if target and any(
                target in (s.lower() for s in o.sources) for o in sem.selections if o is not sel
            ):
                continue  # grouped again by a later statement: a two-step aggregation
            keys = split_groups.hidden_keys(sel.sql)
            fixed = split_groups.without_keys(sel.sql, keys[1]) if keys else None
            if keys is None or fixed is None:
                mode = split_groups.mode_keys(sel.sql)  # a most-common-value subquery
                if mode is None:
                    continue
                keys, fixed = (mode[0], mode[1]), mode[2]
            req = split_groups.requirement(*keys)
            plan.requirements.append(req)
            plan.notes.append(f"{req.describe()}: the query groups by {', '.join(keys[1])} as well")
            binder.add_rerun(req, sel, fixed, "grouping", plan, needs_changed=True)

    def _restated(self, question: str, code: str, sem: CodeSemantics, plan: Plan) -> None:
        """Probe items for flags the run redefined that this turn's code writes out in a replaced
        form, or puts back wrong at a rollback (`superseded.py`); the answer gate must then see the
        answer change."""
        restated = [(f, "restated") for f in self.flags.restated(question, code, sem, self.vocab.described)]
        restored = [
            (f, "_".join(filter(None, ("restored", f.change()))))
            for f in self.flags.restored(question, code, sem)
        ]
        for found, status in restated + restored:
            probe = found.probe(sem.connection)
            if probe is None:
                continue
            req = found.requirement()
            plan.requirements.append(req)
            if status == "restated":
                said = f"writes out `{found.before}`, the rule of turn {found.old.turn}; the flag was defined again at turn {found.current.turn}"
                variables = _assigned_by(code, found.before)
            else:  # a rollback that put back none of the flag's rules
                said = f"puts back `{found.before}`; the rule of turn {found.old.turn} was `{found.old.text}`"
                variables = [found.current.holder]
            plan.notes.append(f"{req.describe()}: the code {said}")
            edit = probes.SpanEdit(kind="text", before=found.before, after=found.after)
            check = "replaced_rule" if status == "restated" else "restored_rule"
            _add_item(plan, req, check, probe, variables, status, edit)

    def _standing(self, question: str, cells: list[str], sem: CodeSemantics, plan: Plan) -> None:
        """Probe items for scopes an earlier turn set for the rest of the analysis that this turn's
        code reads around (`standing.py`); the answer gate must then see the answer change."""
        for scope in self.scopes.bypassed(question, "\n".join(cells)):
            probe, edit = standing.probe(scope, sem.connection), standing.edit_text(scope, cells)
            if probe is None or edit is None:
                continue
            req = standing.requirement(scope)
            plan.requirements.append(req)
            plan.notes.append(
                f"{req.describe()}: the code reads {scope.parent}, not {scope.child} (the scope of turn {scope.turn})"
            )
            written = _assigned_by("\n".join(cells), edit[0]) or ["result"]
            item_edit = probes.SpanEdit(kind="text", before=edit[0], after=edit[1])
            _add_item(plan, req, "standing_scope", probe, written, "bypassed", item_edit)

    def _regrouped(self, question: str, code: str, sem: CodeSemantics, plan: Plan) -> None:
        """Probe items for a summary rebuilt under its name with other group keys (`regrouped.py`);
        the answer gate must then see the answer change."""
        for found in self.groupings.regrouped(question, code, sem):
            req = found.requirement()
            plan.requirements.append(req)
            plan.notes.append(
                f"{req.describe()}: turn {found.old.turn} grouped {found.old.name} by {', '.join(found.old.keys)}, "
                f"this turn by {', '.join(found.keys)}"
            )
            if found.sql and sem.connection:
                probe = probes.rerun_probe(sem.connection, found.before, found.after)
                edit = probes.SpanEdit(kind="sql", before=found.before, after=found.after)
            else:
                probe = f"_v = True\n_o = {{'grouped_before': {list(found.old.keys)!r}, 'grouped_now': {list(found.keys)!r}}}"
                edit = probes.SpanEdit(kind="text", before=found.before, after=found.after)
            _add_item(plan, req, "regrouped", probe, [found.old.name], "regrouped", edit)

    def _standing_conditions(self, said: str, code: str, sem: CodeSemantics, plan: Plan) -> None:
        """Probe items for scopes set for the rest of the analysis by a condition on a table's rows
        (an earlier turn's, or this turn's own instruction) that a statement behind a reported value
        leaves out (`standing.read_without`); the answer gate must then see the answer change."""
        own = standing.StandingScopes(self.scopes.lineage)
        own.record(None, said, code, sem)
        # this turn's own scopes, then earlier turns' scopes whose child this turn makes again
        pairs = {(s.parent, s.child) for s in own.scopes}
        remade = [
            (s, standing.remade_read_around(said, code, s))
            for s in self.scopes.scopes
            if (s.parent, s.child) not in pairs
        ]
        for scope, edit in [(s, standing.own_edit(s, [code])) for s in own.scopes] + remade:
            probe = standing.probe(scope, sem.connection)
            if scope.child and probe and edit is not None:
                req = standing.requirement(scope)
                plan.requirements.append(req)
                plan.notes.append(
                    f"{req.describe()}: after making {scope.child}, the code reads {scope.parent} again"
                )
                written = _assigned_by(code, edit[0]) or ["result"]
                item_edit = probes.SpanEdit(kind="text", before=edit[0], after=edit[1])
                _add_item(plan, req, "standing_scope", probe, written, "bypassed", item_edit)
        if sem.connection is None:
            return
        scopes = self.scopes.conditions()  # earlier turns', then this turn's own (recorded above)
        scopes += [s for s in own.conditions() if s.condition not in {o.condition for o in scopes}]
        for scope in scopes:
            for sel, stated in standing.read_without(scope, said, code, sem):
                req = standing.requirement(scope)
                plan.requirements.append(req)
                plan.notes.append(
                    f"{req.describe()}: the code reads {scope.parent} without it ({sel.sql[:80]})"
                )
                variables = [t for t in [sel.target] if t and t.isidentifier() and not t.startswith("_")]
                _add_item(
                    plan,
                    req,
                    "standing_scope",
                    probes.rerun_probe(sem.connection, sel.sql, stated),
                    variables,
                    "bypassed",
                    probes.SpanEdit(kind="sql", before=sel.sql, after=stated),
                )

    def remember(
        self, turn: Any, state_id: str | None, requirements: list[Requirement] | None = None
    ) -> None:
        """Record the definitions a committed turn stated (called once its state is known)."""
        if turn is not None and state_id:
            self.definitions.record(
                turn, state_id, requirements if requirements is not None else self.last.requirements
            )
            if self._span is not None and self._span[0] == getattr(turn, "turn_id", None):
                said = f"{getattr(turn, 'question', '')}\n{_own_context(turn)}"
                self.flags.record(self._span[0], self._span[1], self._span[2], said)
                self.scopes.record(self._span[0], said, self._span[1], self._span[2])
                self.listed = listed_joins.with_copies(self.listed, self._span[2])
                self.groupings.record(self._span[0], self._span[2])
                if self.config.rule_groups:
                    self.rule_groups.record(self._rule_seen)
                self._span = None

    def _finding(self, item: probes.ProbeItem, outcome: probes.ProbeOutcome) -> Finding:
        req = item.requirement
        where = f" (definition of '{req.term}')" if req.term else ""
        reason = item.reason
        again = self.flags.redefined_at(req.columns[0]) if req.flag_scope and len(req.columns) == 1 else None
        if again is not None:
            # the flag the rows miss was defined again: the hint says which definition is in force
            reason += f"; {req.columns[0]} was redefined at turn {again}, and its current definition applies"
        return Finding(
            check="semantic",
            variables=item.variables or ["result"],
            reason=reason,
            evidence=f"{req.kind} requirement '{req.describe()}'{where}: code {item.status}; "
            f"{item.check} probe observed {outcome.observed}",
        )


def _empty_report(requirements: list[Requirement], steps: list[WorkerStep]) -> list[Finding]:
    """Requested fields the span printed without a value (the printed answer is final even when
    the workspace has moved on): a filter or condition left nothing to compute them from."""
    wanted = [f for r in requirements if r.kind is Kind.OUTPUT for f in r.fields]
    for step in reversed(steps):
        answer = last_json(step.output) if step.success and step.output else None
        if isinstance(answer, dict):
            empty = [f for f in wanted if f in answer and _is_empty(answer[f])]
            if not empty:
                return []
            made = [w for w in _written(steps) if w != "result"]
            return [
                Finding(
                    check="semantic",
                    variables=list(dict.fromkeys(made + empty)),
                    reason="the reported values are empty: a filter or condition kept no usable rows for them",
                    evidence=f"output requirement: step {step.index} printed {empty} without a value",
                )
            ]
    return []


def _subset_report(question: str, steps: list[WorkerStep]) -> list[Finding]:
    """A count "of those" that the printed answer reports larger than the count it is taken from."""
    for step in reversed(steps):
        answer = last_json(step.output) if step.success and step.output else None
        if answer is None:
            continue
        pair = carried.subset_count_fields(question, answer)
        if pair is None:
            return []
        made = _written(steps)
        first, second = pair
        return [
            Finding(
                check="semantic",
                variables=list(dict.fromkeys(made or ["result"])),
                reason=f"'{second}' counts rows taken from those of '{first}' but is larger: its rows were "
                f"not restricted to the first count's",
                evidence=f"subset requirement: step {step.index} printed {second}={answer[second]} > "
                f"{first}={answer[first]}",
            )
        ]
    return []


def _written(steps: list[WorkerStep]) -> list[str]:
    """The analysis names the steps wrote: not scratch (`_x`), the connection, or an imported module."""
    code = "\n".join(s.action for s in steps)
    return [
        w
        for s in steps
        for w in s.meta.get("writes", [])
        if not w.startswith("_") and w != "con" and not _imported(w, code)
    ]


def _imported(name: str, code: str) -> bool:
    """The name is bound by an import statement of the code (a module, not an analysis result)."""
    word = rf"(?<![\w.]){re.escape(name)}(?![\w.])"
    return bool(re.search(rf"^\s*(?:from\s+\S+\s+)?import\b[^\n]*{word}", code, re.MULTILINE))


def _is_empty(value: Any) -> bool:
    if value is None or (isinstance(value, float) and value != value):
        return True
    if isinstance(value, dict):
        return bool(value) and all(_is_empty(v) for v in value.values())
    return False


_PAST_RULE = re.compile(
    r"\(\s*(?:until now|up to now|so far|previously|formerly|before this turn)\b[^)]*\)", re.IGNORECASE
)


def _flag_requirements(plan: Plan, current: list[Requirement]) -> list[Requirement]:
    """Flag scopes the code never tests (left unverified by the binding), then the rule-in-force
    scopes (`current_rule_flags`) on another flag column."""
    unread = [r for r in plan.unverified if r.flag_scope and len(r.columns) == 1]
    return unread + [r for r in current if all(r.columns != u.columns for u in unread)]


def _tests_by_mask(sel: Selection, column: str, sem: CodeSemantics, code: str) -> bool:
    """The statement reads a mask the cell named (`veteran = wg["exper"] > 10`, then `(veteran &
    wg["sex"].eq("female")).sum()`, or `women_older = hh.loc[older, "sex"].eq("female")`) whose own
    condition is on `column`. For a count written into a reported field, or a mask a field counts by
    name, every such field's expression (or the mask's own line) must read one."""
    masks = [
        m.target
        for m in sem.selections
        if m is not sel and m.language == "pandas" and not m.frame and m.target and _tests(m, column)
    ]

    def reads_mask(text: str) -> bool:
        return any(re.search(rf"(?<![\w.]){re.escape(m)}(?!\w)", text) for m in masks)

    if sel.language == "pandas" and not sel.frame:
        target = sel.target or ""
        named = re.compile(rf"(?<![\w.]){re.escape(target)}(?!\w)") if target.isidentifier() else None
        if named and any(named.search(t) for f, t in sem.fields.items() if f != "answer_type"):
            line = re.search(rf"^[ \t]*{re.escape(target)}\s*=(?!=)(.*)$", code, re.M)
            if line and reads_mask(line.group(1)):
                return True  # a mask a field counts by name, built on the column's mask
        texts = [
            t
            for f, t in sem.fields.items()
            if f != "answer_type"
            and ((sel.conditions and any(c.text in t for c in sel.conditions)) or (named and named.search(t)))
        ]
        if texts:
            return all(reads_mask(t) for t in texts)
    return any(m in sel.sources for m in masks)


def _query_behind(text: str, sem: CodeSemantics) -> Selection | None:
    """The one SQL query whose result a reported value is (`n_opec`, `row[1]`), when the value is a
    name (perhaps indexed) that exactly one SQL statement assigns."""
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:\[\s*\d+\s*\])?", unwrapped(text, rounding=True))
    if m is None:
        return None
    found = [s for s in sem.selections if s.language == "sql" and s.sql and s.target == m.group(1)]
    return found[0] if len(found) == 1 else None


def _tests(sel: Selection, column: str) -> bool:
    """The statement has a row condition on `column` (the ordinary scope check covers it)."""
    return any((c.column or "").lower() == column.lower() or column in c.columns for c in sel.conditions)


_NEGATING = {"non", "not", "no", "un", "without", "other", "others", "rest"}


def _frames_in(text: str) -> list[str]:
    """Names a reported value's code reads (not calls, attributes or quoted words)."""
    return list(
        dict.fromkeys(
            n
            for n in re.findall(r"(?<![\w.'\"])([A-Za-z_]\w*)\b(?!\s*\()", text)
            if n not in ("result", "json", "np", "pd", "math", "True", "False", "None")
        )
    )


def _flag_frames_probe(req: Requirement, frames: list[str]) -> str:
    """`_v` when every frame among `frames` holding the flag column has rows off the flag (or, for an
    excluded flag, rows on it)."""
    column, flagged = req.columns[0], not req.exclude
    return textwrap.dedent(f"""\
        _found = [(_n, globals().get(_n)) for _n in {frames!r}]
        _found = [(_n, _f) for _n, _f in _found if hasattr(_f, 'columns') and {column!r} in getattr(_f, 'columns', [])]
        _off = {{_n: int((_f[{column!r}].fillna(False).astype(bool) != {flagged!r}).sum()) for _n, _f in _found}}
        _v = bool(_off) and all(_k > 0 for _k in _off.values())
        _o = {{'rows_off_the_flag': _off}}""")


def _flag_read_by_code(req: Requirement, code: str) -> bool:
    """A scope of flagged rows whose flag column the turn's code reads itself: how it used it (a
    mask, a group key, a sum) is not modelled, so nothing is asserted. Code that never reads the
    flag can only keep the flagged rows by restating the rule, which the probe checks row by row."""
    return req.flag_scope and any(re.search(rf"(?<![\w]){re.escape(c)}(?![\w])", code) for c in req.columns)


def _add_item(
    plan: Plan,
    req: Requirement,
    check: str,
    code: str,
    variables: list[str],
    status: str,
    edit: probes.SpanEdit | None = None,
    needs_changed: bool = False,
) -> None:
    """A probe item the verifier makes itself (after `bind` numbered the binding's items)."""
    plan.items.append(
        probes.ProbeItem(
            id=f"R{len(plan.items) + 1}",
            requirement=req,
            check=check,
            code=code,
            variables=variables or ["result"],
            reason=reason(req, status),
            status=status,
            edit=edit,
            needs_changed=needs_changed,
        )
    )


def _add_text_rerun(
    plan: Plan,
    req: Requirement,
    note: str,
    code: str,
    edit: tuple[str, str],
    check: str,
    probe: str,
    status: str,
    names: list[str] | None = None,
) -> None:
    """The requirement, its note and a probe item whose finding needs the turn, re-run with one piece
    of its text replaced (`edit`: before, after), to report another answer; localized to `names`, or
    to the names the statements holding that text assign."""
    plan.requirements.append(req)
    plan.notes.append(f"{req.describe()}: {note}")
    names = names or _assigned_by(code, edit[0]) or ["result"]
    span = probes.SpanEdit(kind="text", before=edit[0], after=edit[1])
    _add_item(plan, req, check, probe, names, status, span, needs_changed=True)


def _assigned_by(code: str, text: str) -> list[str]:
    """Names the statements holding `text` assign (`efficient_cars = cars[...]`): where a finding on
    that text localizes."""
    out = []
    for line in code.splitlines():
        if text.split("\n")[0] in line:
            m = re.match(r"\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*=(?!=)", line)
            if m and not m.group(1).startswith("_"):
                out.append(m.group(1))
    return list(dict.fromkeys(out))


def _own_context(turn: Any) -> str:
    """The turn's own context (turn 1's holds the task-wide description, which states no rule),
    without the rule it replaces: "(until now, a bird counts as heavy when ...)" is history."""
    text = str(getattr(turn, "context", "") or "") if getattr(turn, "turn_id", 1) > 1 else ""
    return _PAST_RULE.sub("", text)


def _plain_reads(steps: list[WorkerStep]) -> list[str]:
    """Names the cells read that a plain assignment binds to another name (`chosen = orders`): the
    frame read whole, which the code model (selections, frames) does not list."""
    out: list[str] = []
    for step in steps:
        for m in re.finditer(
            r"^\s*[A-Za-z_]\w*\s*=\s*([A-Za-z_]\w*)(?:\.copy\(\))?\s*$", step.action, re.MULTILINE
        ):
            if m.group(1) not in out and m.group(1) not in ("None", "True", "False"):
                out.append(m.group(1))
    return out


def _names(sem: CodeSemantics) -> list[str]:
    """Tables and frames the code reads or leaves (the vocabulary probe's subjects)."""
    out: list[str] = []
    for sel in sem.selections:
        for name in [*sel.sources, sel.target or "", sel.frame]:
            if name and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in out:
                out.append(name)
    for var, table in sem.frames.items():
        for name in (var, table):
            if name not in out:
                out.append(name)
    return out


class _Reply(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    accepted: bool = True
    tool_result: Any = None


def run_fragment(fragment: Fragment, *, store: Any, steps: dict[int, WorkerStep], workspace: Any) -> Any:
    """Drive a verifier fragment without a harness: each tool action runs directly (scripts, tests)."""
    from stateguard.actions import validate_action  # the harness's own validation and dispatch
    from stateguard.tools import run_tool

    try:
        proposal = next(fragment)
        while True:
            name, arguments = proposal
            result = run_tool(validate_action(name, arguments), store=store, steps=steps, workspace=workspace)
            proposal = fragment.send(_Reply(tool_result=result))
    except StopIteration as stop:
        return stop.value
