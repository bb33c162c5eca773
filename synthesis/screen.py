"""Screen a built task's counterfactuals before any rollout: genuine or benign, and stated or not.

    candidates = screen(task_dir, random.Random(0))
    [c for c in candidates if c.effect == "benign" and c.stated]     # hard negatives to demonstrate

Every stage of the task is materialized once in DuckDB (the reference programs run in a fresh
namespace), and each single-site intervention θ' of a stage's SQL (`synthesis.interventions`) is
re-executed against the same upstream tables. Its row-multiset fingerprint (Eq. 23) against the
stage's own decides the effect: *benign* when equal (θ' changes nothing this data shows, so
nothing downstream changes either), *genuine* otherwise. Besides the generic candidates this adds
benign threshold moves: a cut-off moved inside the gap between two neighbouring data values, the
kind of harmless change a manager must learn to leave alone.

`stated` says whether the task text states the part θ' changes (the cut-off's number, the
direction, the statistic, the category, the filtered attribute). Only then is recomputing the
stage "as the task states it" a step a manager without the teacher's knowledge could take, so
only stated candidates are planned for demonstrations that rest on that probe.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import sqlglot
from pydantic import BaseModel
from sqlglot import exp

from stateguard.artifacts.graph import load_graph
from stateguard.artifacts.mistakes import StatedFacts, by_intervention
from stateguard.artifacts.task_folder import TaskFolder
from stateguard.task import load_task, prelude
from synthesis.fingerprint import fingerprint
from synthesis.interventions import (
    InterventionNotApplicable,
    InterventionRecord,
    _is_numeric_parameter,
    _numeric_value,
    _sites,
    candidate_interventions,
    set_numeric_parameter,
)
from synthesis.sql_deps import parse_statements

__all__ = ["Candidate", "is_stated", "screen", "stated_select"]

Effect = Literal["genuine", "benign"]


class Candidate(BaseModel):
    turn: int
    stage: str
    faulty_code: str  # the turn's whole program with θ' in place of θ
    record: InterventionRecord
    effect: Effect
    stated: bool


def stated_select(stage_sql: str) -> str:
    """The SELECT a `CREATE OR REPLACE TABLE x AS SELECT ...` stage materializes (the query as stated)."""
    tree = sqlglot.parse_one(stage_sql, dialect="duckdb")
    query = tree.expression if isinstance(tree, exp.Create) else tree
    if query is None:
        raise ValueError(f"stage SQL has no query: {stage_sql[:80]!r}")
    return str(query.sql(dialect="duckdb"))


# ------------------------------------------------------------------------------- stated?
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?")
_WORDS = {
    w: Decimal(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}


def _numbers(text: str) -> set[Decimal]:
    out = {n for w, n in _WORDS.items() if re.search(rf"\b{w}\b", text, re.IGNORECASE)}
    for raw in _NUMBER.findall(text):
        with contextlib.suppress(ArithmeticError):
            out.add(Decimal(raw.replace(",", "")).normalize())
    return out


def _literals(sql: str) -> tuple[set[Decimal], set[str], list[str]]:
    """(numbers, strings, columns) mentioned in a SQL fragment."""
    try:
        node = sqlglot.parse_one(sql, dialect="duckdb")
    except sqlglot.errors.ParseError:
        return set(), set(), []
    nums, strings = set(), set()
    for lit in node.find_all(exp.Literal):
        if lit.is_string:
            strings.add(str(lit.this))
        else:
            with contextlib.suppress(ArithmeticError):
                nums.add(Decimal(str(lit.this)).normalize())
    return nums, strings, [c.name for c in node.find_all(exp.Column)]


def is_stated(record: InterventionRecord, text: str) -> bool:
    """Does `text` (the task text the stage answers) state the part of the SQL that θ' changes?
    The test is the intervention kind's row of the mistakes table."""
    numbers, strings, columns = _literals(record.before)
    facts = StatedFacts(
        text=text,
        operation=record.operation,
        before=record.before,
        numbers=frozenset(numbers),
        strings=frozenset(strings),
        columns=tuple(columns),
        stated_numbers=frozenset(_numbers(text)),
    )
    stated = by_intervention(record.kind).stated
    return stated is not None and stated(facts)


# ------------------------------------------------------------------------------- benign moves
def _gap_value(values: list[float], old: Decimal, op: type[exp.Expr], integer: bool) -> Decimal | None:
    """A different cut-off that keeps exactly the same values on this data, or None."""
    t = float(old)
    if op in (exp.GTE, exp.LT):  # kept: v >= t (or v < t): any t' in (max{v < t}, min{v >= t}]
        lo, hi = (
            max((v for v in values if v < t), default=None),
            min((v for v in values if v >= t), default=None),
        )
        inside = lambda x: (lo is None or x > lo) and (hi is None or x <= hi)  # noqa: E731
    elif op in (exp.GT, exp.LTE):  # kept: v > t (or v <= t): any t' in [max{v <= t}, min{v > t})
        lo, hi = (
            max((v for v in values if v <= t), default=None),
            min((v for v in values if v > t), default=None),
        )
        inside = lambda x: (lo is None or x >= lo) and (hi is None or x < hi)  # noqa: E731
    else:
        return None
    if lo is None or hi is None or hi - lo <= 0:
        return None
    mid = (lo + hi) / 2
    steps = [100, 50, 10, 5, 1] if integer else [10, 5, 1, 0.5, 0.1, 0.05]
    for step in steps:
        for x in (round(mid / step) * step, (round(mid / step) + 1) * step, (round(mid / step) - 1) * step):
            cand = Decimal(str(int(round(x)) if integer else round(x, 2))).normalize()
            if cand != old.normalize() and inside(float(cand)):
                return cand
    return None


def benign_moves(sql: str, con: Any, stage: str) -> list[tuple[str, InterventionRecord]]:
    """Threshold moves of WHERE conditions `column OP number` that keep the same rows on this data."""
    out: list[tuple[str, InterventionRecord]] = []
    statements = parse_statements(sql, "duckdb")
    for k, (_, node) in enumerate(_sites(statements, _is_numeric_parameter)):
        cmp = node.parent
        if not isinstance(cmp, exp.GTE | exp.GT | exp.LTE | exp.LT) or not isinstance(cmp.this, exp.Column):
            continue
        if cmp.find_ancestor(exp.Where) is None:
            continue
        select = cmp.find_ancestor(exp.Select)
        source = select.args.get("from_") if select is not None else None
        if source is None or select is None or select.args.get("joins"):
            continue
        column = cmp.this.sql(dialect="duckdb")
        try:
            rows = con.execute(
                f"SELECT DISTINCT {column} FROM {source.this.sql(dialect='duckdb')} "
                f"WHERE {column} IS NOT NULL"
            ).fetchall()
        except Exception:  # noqa: BLE001 - a column we cannot read gives no move
            continue
        old = _numeric_value(node)
        assert old is not None
        new = _gap_value(
            sorted(float(r[0]) for r in rows), old, type(cmp), re.fullmatch(r"-?\d+", str(old)) is not None
        )
        if new is None:
            continue
        with contextlib.suppress(InterventionNotApplicable):
            out.append(set_numeric_parameter(sql, new, occurrence=k, stage=stage))
    return out


# ------------------------------------------------------------------------------- screening
def _materialize(task_dir: Path) -> dict[str, Any]:
    """Run every turn's reference program in one fresh namespace (all stage tables exist after)."""
    folder = TaskFolder(task_dir)
    task = load_task(folder.hidden, task_id=task_dir.name, base_path=str(folder.agent.resolve()))
    namespace: dict[str, Any] = {}
    exec(prelude(task), namespace)
    with contextlib.redirect_stdout(io.StringIO()):
        for turn in task.turns:
            exec(compile(turn.code, f"<turn {turn.turn_id}>", "exec"), namespace)
    return namespace


def _fingerprint(con: Any, sql: str) -> str | None:
    try:
        return fingerprint(con.sql(sql).arrow())
    except Exception:  # noqa: BLE001 - θ' that does not run is no candidate
        return None


def screen(task_dir: str | Path, rng: random.Random) -> list[Candidate]:
    """Every applicable single-site counterfactual of every stage, with its effect and whether it is stated."""
    root = Path(task_dir)
    folder = TaskFolder(root)
    turns = load_task(folder.hidden, task_id=root.name).turns
    graph = load_graph(folder)
    codes = {t.turn_id: t.code for t in turns}
    intro = turns[0].context if turns else ""
    texts = {t.turn_id: f"{intro}\n{t.context}\n{t.question}" for t in turns}
    namespace = _materialize(root)
    con = namespace["con"]
    out: list[Candidate] = []
    try:
        for stage in graph.stages:
            turn, name, sql = stage.turn_id, stage.name, stage.sql
            if codes[turn].count(sql) != 1:
                continue
            reference = _fingerprint(con, f"SELECT * FROM {name}")
            options = candidate_interventions(sql, rng, stage=name) + benign_moves(sql, con, name)
            text = stage.question or texts[turn]
            seen: set[str] = set()
            for new_sql, record in options:
                if new_sql in seen:
                    continue
                seen.add(new_sql)
                got = _fingerprint(con, stated_select(new_sql))
                if got is None or reference is None:
                    continue
                out.append(
                    Candidate(
                        turn=turn,
                        stage=name,
                        faulty_code=codes[turn].replace(sql, new_sql),
                        record=record,
                        effect="benign" if got == reference else "genuine",
                        stated=is_stated(record, text),
                    )
                )
    finally:
        con.close()
    return out
