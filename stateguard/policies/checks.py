"""Deterministic validity checks used by the `rules` manager (paper A.7's five checks, mechanized).

Each check is a pure function over evidence and returns `Finding`s: which check fired, the
workspace variables it localizes (what the worker can act on), a worker-safe reason (the
requirement in words: no code, no values), and the detailed evidence for the trace. An empty
list means the check found no violation. Do no harm: a finding needs concrete evidence that a
value is wrong *now*, never a pattern alone.

    execution     a block raised and was never re-run successfully
    staleness     a value read after an input it was computed from was redefined, AND recomputing
                  it from the current inputs gives a different value (a replay probe, see
                  `policies.replay`), AND the question does not positively ask for the earlier version
                  (`policies.intent`); every stale read gets a decision (`policies.staleness`)
    constraints   an executable constraint of the state failed (evaluated by the harness)
    precision     reported numbers not rounded as the turn requires (its own instruction first,
                  then the task-wide one), compared field by field with the printed variable
    grounding     a reported number disagrees with the same field of the variable it was printed from
    related       a reused committed value no longer matches the workspace
    parameters    the turn's code compares against a literal cut-off while the cut-off the question
                  states ("at least 4000 g") appears in no cell and no workspace scalar

`CONFIRMED` lists the checks whose findings are facts, not judgements (an error that was raised,
a value that recomputes differently): only they may justify destroying work after a retry.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from stateguard.answers import decimals_of, numbers
from stateguard.artifacts.lexicon import LEXICON
from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.state import ConstraintResult
from stateguard.store import StateStore
from stateguard.task import PRELUDE
from stateguard.verification.finding import Finding

CONFIRMED = frozenset({"execution", "staleness", "constraints"})


# Names every workspace starts with (the task prelude: pd, np, BASE_PATH, helpers): a failed
# block that reads them did not make them wrong, so they are never an execution finding's variables.
PRELUDE_NAMES = frozenset(cell_dataflow(PRELUDE.format(base_path=".")).writes)


def execution(steps: list[WorkerStep]) -> list[Finding]:
    """A failed block whose intended outputs no later successful block produced. A step that ran
    no code (a failed model call, a reply the worker refused) is no execution evidence."""
    findings = []
    for i, step in enumerate(steps):
        if step.success and step.error is None:
            continue
        if not step.action.strip() or step.meta.get("executed") is False:
            continue
        flow = cell_dataflow(step.action)
        intended = (set(flow.writes) or set(flow.reads)) - PRELUDE_NAMES
        later = [s for s in steps[i + 1 :] if s.success and s.error is None]
        redone = set().union(*(set(s.meta.get("writes", [])) for s in later)) if later else set()
        if intended and intended <= redone:
            continue
        names = sorted(intended) or ["result"]
        findings.append(
            Finding(
                check="execution",
                variables=names,
                reason="a block of this turn raised an error and was never re-run, so these values were not "
                "produced by a successful execution",
                evidence=f"step {step.index} failed: {step.error}",
            )
        )
    return findings


MAX_EXECUTION_CHECKS = 6  # below the harness's per-activation action limit (8), leaving room


def execution_evidence(steps: list[WorkerStep]) -> list[WorkerStep]:
    """The steps worth a `check_execution` call, in order: those that ran code, a failure repeated
    with the same code and error counted once, at most the last MAX_EXECUTION_CHECKS (a worker
    that loops can leave dozens of steps in one turn; the activation has a bounded action budget)."""
    seen: set[tuple[str, str | None]] = set()
    chosen: list[WorkerStep] = []
    for step in steps:
        if not step.action.strip() or step.meta.get("executed") is False:
            continue
        key = (step.action.strip(), step.error)
        if not step.success and key in seen:
            continue
        seen.add(key)
        chosen.append(step)
    return chosen[-MAX_EXECUTION_CHECKS:]


STUCK_AFTER = 3  # failed code blocks in a row, with no success between, that show a worker looping


def stuck(steps: list[WorkerStep]) -> list[WorkerStep]:
    """The trailing run of failed code blocks when it is at least STUCK_AFTER long (else []):
    evidence enough to review the work so far without waiting for the turn to end. Steps that ran
    no code (failed model calls, refused replies) neither count nor break the run."""
    run: list[WorkerStep] = []
    for step in reversed(steps):
        if not step.action.strip() or step.meta.get("executed") is False:
            continue
        if step.success and step.error is None:
            break
        run.append(step)
    return list(reversed(run)) if len(run) >= STUCK_AFTER else []


def staleness(stale: list[tuple[int, str, list[str]]]) -> list[Finding]:
    """Confirmed stale reads: (step index, variable, the redefined inputs) whose replay on the
    current inputs gave a different value (the caller confirms; see `policies.staleness`)."""
    findings = []
    seen: set[str] = set()
    for index, name, inputs in stale:
        if name in seen:
            continue
        seen.add(name)
        findings.append(
            Finding(
                check="staleness",
                variables=[name],
                reason=f"{name} is stale: it was computed from an earlier definition of {', '.join(inputs)}, which "
                "has since been redefined, and it is reused here without being recomputed",
                evidence=f"step {index} read {name}; its inputs {inputs} changed after it was computed, and "
                "recomputing it from the current inputs gives a different value",
            )
        )
    return findings


def constraints(results: Iterable[ConstraintResult]) -> list[Finding]:
    return [
        Finding(
            check="constraints",
            variables=["result"],
            reason=f"the result violates a stated requirement: {r.text}",
            evidence=f"executable check failed: {r.error}",
        )
        for r in results
        if r.passed is False
    ]


def _at(value: Any, path: str) -> Any:
    """The element of a JSON-like value at a field path of `numbers` ('a.b[2]'); None if absent."""
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if index:
            if not isinstance(value, list) or int(index) >= len(value):
                return None
            value = value[int(index)]
        elif isinstance(value, dict):
            value = value.get(key, value.get(_int_key(key)))
        else:
            return None
    return value


def _int_key(key: str) -> Any:
    return int(key) if key.lstrip("-").isdigit() else key


def _fields(paths: list[str]) -> str:
    names = list(dict.fromkeys(p.split(".")[0].split("[")[0] for p in paths))
    words = [n for n in names if not n.replace(".", "").lstrip("-").isdigit()][:4]
    return ", ".join(words) if words else "the reported values"


def precision(answer: Any, required: int | None, printed: tuple[str, Any] | None) -> list[Finding]:
    """Reported numbers with more decimals than the turn asks for, or fewer where the value they
    were printed from shows the cut (`printed` = (variable name, its unrounded value))."""
    if required is None or answer is None:
        return []
    too_many, too_few = [], []
    for path, value in numbers(answer):
        places = decimals_of(value)
        if places > required:
            too_many.append(path)
        elif places < required and printed is not None:
            raw = _at(printed[1], path)
            # A whole number is a count (an int in the report), unless it is a float printed from a
            # value with a fraction (6.27 reported as 6.0).
            whole_cut = (
                isinstance(_at(answer, path), float)
                and isinstance(raw, float)
                and math.isfinite(raw)
                and raw != int(raw)
            )
            if (
                isinstance(raw, int | float)
                and not isinstance(raw, bool)
                and (places > 0 or whole_cut)
                and _rounds_to(raw, places, value)
                and not _rounds_to(raw, required, value)
            ):
                too_few.append(path)
    # Name the variable the report was printed from (what the worker can act on), never answer keys.
    target = [printed[0]] if printed is not None else ["result"]
    findings = []
    if too_many:
        findings.append(
            Finding(
                check="precision",
                variables=target,
                reason=f"the reported {_fields(too_many)} carry more decimal places than the {required} the "
                "task asks for; round them when reporting",
                evidence=f"fields with too many decimals: {too_many[:5]}",
            )
        )
    if too_few:
        findings.append(
            Finding(
                check="precision",
                variables=target,
                reason=f"the reported {_fields(too_few)} are rounded more coarsely than the {required} decimal "
                "places the task asks for",
                evidence=f"fields rounded too coarsely against {target[0]}: {too_few[:5]}",
            )
        )
    return findings


def grounding(answer: Any, printed: tuple[str, Any] | None) -> list[Finding]:
    """A reported number must equal the same field of the variable it was printed from, at the
    reported precision (a report edited by hand, or printed from a different variable)."""
    if printed is None or answer is None:
        return []
    bad = []
    for path, value in numbers(answer):
        raw = _at(printed[1], path)
        if (
            isinstance(raw, int | float)
            and not isinstance(raw, bool)
            and not _rounds_to(raw, decimals_of(value), value)
        ):
            bad.append(path)
    if not bad:
        return []
    return [
        Finding(
            check="grounding",
            variables=[printed[0]],
            reason=f"the reported {_fields(bad)} do not match the values held in {printed[0]}",
            evidence=f"mismatching fields: {bad[:5]}",
        )
    ]


def related(reads: Mapping[str, str], store: StateStore, scalars: Mapping[str, float]) -> list[Finding]:
    """A reused committed scalar whose workspace value changed without a new committed version."""
    findings = []
    for name, version in sorted(reads.items()):
        if name not in scalars or version not in store:
            continue
        committed = {v.name: v.value for v in store.load(version).used_variables if v.version == version}
        value = committed.get(name)
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and not math.isclose(value, scalars[name], rel_tol=1e-9, abs_tol=1e-12)
        ):
            findings.append(
                Finding(
                    check="related",
                    variables=[name],
                    reason=f"{name} no longer holds the value recorded by the related earlier analysis, "
                    "and the change was never recorded",
                    evidence=f"{name}@{version} was {value!r}; workspace now holds {scalars[name]!r}",
                )
            )
    return findings


# A threshold stated in words: "at least 4,000", "more than 2.5", "below 30%", ">= 12". Not "over"
# or "under" ("pooled over 2000-2014", "over 12 months" are spans, not cut-offs), and not a number
# that opens a range ("above 10 to 20").
_STATED = re.compile(
    rf"(?:{LEXICON.pattern(LEXICON.comparator_phrases(core=True))})"
    r"\s+(?P<num>-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?)(?![\d.,]\d|\d)"
    rf"(?:\s*(?P<unit>%|per\s+cent\b|(?:{'|'.join(sorted((re.escape(w) for w in LEXICON.scales if w.isalpha()), key=len, reverse=True))})\b))?"
    r"(?!\s*(?:-|–|—|to\b|and\b)\s*\d)",
    re.IGNORECASE,
)
_SQL_COMPARE = re.compile(r"(?:<=|>=|<>|!=|<|>)\s*(-?\d+(?:\.\d+)?)")
_CODE_NUMBER = re.compile(r"(?<![\w.])\d+(?:_\d+)*(?:\.\d+)?(?:[eE][+-]?\d+)?")


def stated_thresholds(question: str) -> list[tuple[float, bool]]:
    """(number, is a percentage) for each cut-off the question states, in order, once each."""
    out: list[tuple[float, bool]] = []
    for number, unit in _stated_with_units(question):
        item = (number, unit in ("%", "percent"))
        if item not in out:
            out.append(item)
    return out


def _stated_with_units(question: str) -> list[tuple[float, str]]:
    return [
        (
            float(m.group("num").replace(",", "")),
            re.sub(r"per\s+cent", "percent", (m.group("unit") or "").lower()),
        )
        for m in _STATED.finditer(question)
    ]


def code_forms(number: float, unit: str) -> list[float]:
    """The literals code may write for a stated cut-off: the number itself, and rescaled by its unit
    ("60 cents" as 0.6, "60 million" as 60000000, "0.5%" as 0.005, or as the factor 1.005 / 0.995
    of a relative change: `close > open * 1.005`)."""
    forms = [number]
    scale = LEXICON.scales.get(unit)
    if scale is not None:
        forms.append(number * scale)
    for thousands in (1e3, 1e6):  # "5,000 lb" kept in thousands of pounds (`wt <= 5`)
        if abs(number) >= thousands and float(number / thousands).is_integer():
            forms.append(number / thousands)
    if unit in ("%", "percent"):
        forms += [1 + number / 100, 1 - number / 100]
    return forms


def _code_numbers(code: str) -> set[float]:
    """Numeric literals of a cell, including those inside string constants (SQL text)."""
    found: set[float] = set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        texts = [code]
    else:
        texts = []
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, int | float)
                and not isinstance(node.value, bool)
            ):
                found.add(float(node.value))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    for text in texts:
        for tok in _CODE_NUMBER.findall(text):
            try:
                found.add(float(tok.replace("_", "")))
            except ValueError:
                continue
    return found


def compared_literals(code: str) -> set[float]:
    """Numbers a cell compares against: `x >= 25`, `-100 > lon`, and `> 40` inside SQL text."""
    found: set[float] = set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in node.ops
        ):
            for side in [node.left, *node.comparators]:
                number = _literal(side)
                if number is not None:
                    found.add(number)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= {float(m) for m in _SQL_COMPARE.findall(node.value)}
    return found


def _literal(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return None if inner is None else -inner
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    return None


def parameters(
    question: str, steps: list[WorkerStep], scalars: Mapping[str, float], history: Iterable[WorkerStep] = ()
) -> list[Finding]:
    """Stated thresholds that no successful cell uses (as x, or as its unit rescales it: `code_forms`) -- neither
    the turn's own cells nor earlier ones in `history` (a question may restate an upstream cut-off
    that an earlier cell applied) -- and that no workspace scalar holds, while the turn's own cells
    do compare against some other literal (the concrete evidence: the code applies a different
    cut-off); the finding localizes what the turn's cells wrote."""
    wanted = list(dict.fromkeys(_stated_with_units(question)))
    ran = [s for s in steps if s.success and s.error is None]
    if not wanted or not ran:
        return []
    used = set().union(*(compared_literals(s.action) for s in ran))
    if not used:
        return []  # the turn compares against no literal: nothing shows it applies a wrong cut-off
    earlier = [s for s in history if s.success and s.error is None]
    have = set().union(*(_code_numbers(s.action) | compared_literals(s.action) for s in [*ran, *earlier]))
    have |= {float(v) for v in scalars.values()}
    missing = [
        x
        for x, unit in wanted
        if not any(math.isclose(form, h, rel_tol=1e-9) for form in code_forms(x, unit) for h in have)
    ]
    if not missing:
        return []

    def writes(cells: Iterable[WorkerStep]) -> set[str]:
        return set().union(
            *(set(s.meta.get("writes", [])) or set(cell_dataflow(s.action).writes) for s in cells)
        )

    mine = {w for w in writes(ran) if not w.startswith("_")}
    # Localize to what this turn produced first; names every turn rewrites (`result`) say nothing.
    own = sorted(mine - writes(earlier)) or sorted(mine) or ["result"]
    return [
        Finding(
            check="parameters",
            variables=own,
            reason="a cut-off the question states is not the one this turn's computation uses",
            evidence=f"stated thresholds {missing} appear in no cell run so far, while this turn's cells "
            f"(steps {[s.index for s in ran]}) compare against {sorted(used)[:5]}",
        )
    ]


def _rounds_to(raw: float, places: int, value: float) -> bool:
    try:
        if not (math.isfinite(float(raw)) and math.isfinite(float(value))):  # NaN reported as NaN is faithful
            return math.isnan(float(raw)) and math.isnan(float(value)) or float(raw) == float(value)
        # Faithful when within half a unit of the last place: at a tie (47.495 to 2 places) Python's
        # correct rounding gives 47.49 and numpy's (which `print_result` applies to numpy floats)
        # 47.5, and both are right.
        gap = abs(float(raw) - float(value))
        return gap <= 0.5 * 10.0**-places * (1 + 1e-9) + 1e-12 * max(1.0, abs(float(raw)))
    except (OverflowError, ValueError, TypeError):
        return False
