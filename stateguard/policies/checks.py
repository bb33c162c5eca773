"""Deterministic validity checks used by the `rules` manager (paper A.7's five checks, mechanized).

Each check is a pure function over evidence and returns `Finding`s: which check fired, the
variables or answer fields it localizes, a worker-safe reason (words only: no code, no values),
and the detailed evidence for the trace. An empty list means the check found no violation.

    execution     a block raised and was never re-run successfully
    staleness     a value computed from an input that was later redefined (workspace dataflow),
                  or a committed version that an Invalidate made stale (state store)
    constraints   an executable constraint of the state failed (evaluated by the harness)
    precision     reported numbers not rounded as the task requires
    grounding     a reported field disagrees with the workspace variable of the same name
    related       a reused committed value no longer matches the workspace
    parameters    a threshold the question states ("at least 4000 g") appears nowhere in the code
                  the worker ran for it, nor in any workspace scalar
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from stateguard.answers import decimals_of, field_name, numbers
from stateguard.dataflow import cell_dataflow
from stateguard.observation import WorkerStep
from stateguard.state import ConstraintResult
from stateguard.store import StateStore


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)
    check: str
    variables: list[str]
    reason: str
    evidence: str


def execution(steps: list[WorkerStep]) -> list[Finding]:
    """A failed block whose intended outputs no later successful block produced."""
    findings = []
    for i, step in enumerate(steps):
        if step.success and step.error is None:
            continue
        intended = set(cell_dataflow(step.action).writes) or set(cell_dataflow(step.action).reads)
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


def staleness(steps: list[WorkerStep], reads: Mapping[str, str], store: StateStore) -> list[Finding]:
    """Reads of stale values: dataflow-stale workspace variables, and invalidated committed versions."""
    findings = []
    seen: set[str] = set()
    for step in steps:
        for name, inputs in sorted((step.meta.get("stale_reads") or {}).items()):
            if name in seen:
                continue
            seen.add(name)
            findings.append(
                Finding(
                    check="staleness",
                    variables=[name],
                    reason=f"{name} was computed from an earlier definition of {', '.join(inputs)}, which has "
                    "since been redefined; it is reused here without being recomputed",
                    evidence=f"step {step.index} read {name}; its inputs {inputs} changed after it was computed",
                )
            )
    for name, version in sorted(reads.items()):
        key = f"{name}@{version}"
        if name not in seen and store.is_invalid(key):
            by = ", ".join(sorted({b for b, _ in store.why_invalid(key)}))
            seen.add(name)
            findings.append(
                Finding(
                    check="staleness",
                    variables=[name],
                    reason=f"{name} comes from an analysis that a later revision invalidated",
                    evidence=f"{key} is invalid (invalidated by {by})",
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


def precision(answer: Any, required: int | None, scalars: Mapping[str, float]) -> list[Finding]:
    """Numbers with more decimals than required, or fewer where the unrounded value shows a cut."""
    if required is None or answer is None:
        return []
    too_many, too_few = [], []
    for path, value in numbers(answer):
        places = decimals_of(value)
        if places > required:
            too_many.append(path)
        elif 0 < places < required:
            # Compare with the same-named workspace scalar when there is one, else with any scalar.
            name = field_name(path)
            candidates = [scalars[name]] if name in scalars else list(scalars.values())
            if any(_rounds_to(raw, places, value) and not _rounds_to(raw, required, value) for raw in candidates):
                too_few.append(path)
    findings = []
    if too_many:
        findings.append(
            Finding(check="precision", variables=sorted({field_name(p) for p in too_many}),
                    reason=f"reported values are not rounded to the {required} decimal places the task asks for",
                    evidence=f"fields with too many decimals: {too_many[:5]}")  # fmt: skip
        )
    if too_few:
        findings.append(
            Finding(check="precision", variables=sorted({field_name(p) for p in too_few}),
                    reason=f"reported values are rounded more coarsely than the {required} decimal places the task asks for",
                    evidence=f"fields rounded too coarsely against workspace values: {too_few[:5]}")  # fmt: skip
        )
    return findings


def grounding(answer: Any, scalars: Mapping[str, float]) -> list[Finding]:
    """A reported field named like a workspace scalar must equal it at the reported precision."""
    bad = []
    for path, value in numbers(answer):
        name = field_name(path)
        if name in scalars and not _rounds_to(scalars[name], decimals_of(value), value):
            bad.append((name, path))
    if not bad:
        return []
    return [
        Finding(
            check="grounding",
            variables=sorted({n for n, _ in bad}),
            reason="reported values do not match the variables of the same name in the workspace",
            evidence=f"mismatching fields: {[p for _, p in bad][:5]}",
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
        if isinstance(value, int | float) and not isinstance(value, bool) and not math.isclose(value, scalars[name], rel_tol=1e-9, abs_tol=1e-12):
            findings.append(
                Finding(check="related", variables=[name],
                        reason=f"{name} no longer holds the value recorded by the related earlier analysis, "
                        "and the change was never recorded",
                        evidence=f"{name}@{version} was {value!r}; workspace now holds {scalars[name]!r}")  # fmt: skip
            )
    return findings


# A threshold stated in words: "at least 4,000", "more than 2.5", "below 30%", ">= 12".
_STATED = re.compile(
    r"(?:at least|at most|more than|less than|fewer than|greater than|above|below|over|under|>=|<=|>|<)"
    r"\s+(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?P<pct>\s*%)?",
    re.IGNORECASE,
)
_CODE_NUMBER = re.compile(r"(?<![\w.])\d+(?:_\d+)*(?:\.\d+)?(?:[eE][+-]?\d+)?")


def stated_thresholds(question: str) -> list[tuple[float, bool]]:
    """(number, is a percentage) for each cut-off the question states, in order, once each."""
    out: list[tuple[float, bool]] = []
    for m in _STATED.finditer(question):
        item = (float(m.group("num").replace(",", "")), bool(m.group("pct")))
        if item not in out:
            out.append(item)
    return out


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
            if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
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


def parameters(
    question: str, steps: list[WorkerStep], scalars: Mapping[str, float], history: Iterable[WorkerStep] = ()
) -> list[Finding]:
    """Stated thresholds that no successful cell uses (as x, or x/100 for a percentage) -- neither
    the turn's own cells nor earlier ones in `history` (a question may restate an upstream cut-off
    that an earlier cell applied) -- and that no workspace scalar holds; the finding localizes
    what the turn's cells wrote."""
    wanted = stated_thresholds(question)
    ran = [s for s in steps if s.success and s.error is None]
    if not wanted or not ran:
        return []
    earlier = [s for s in history if s.success and s.error is None]
    have = set().union(*(_code_numbers(s.action) for s in [*ran, *earlier])) | {float(v) for v in scalars.values()}
    missing = [x for x, pct in wanted if not any(math.isclose(x, h, rel_tol=1e-9) or (pct and math.isclose(x / 100, h, rel_tol=1e-9))
                                                 for h in have)]  # fmt: skip
    if not missing:
        return []

    def writes(cells: Iterable[WorkerStep]) -> set[str]:
        return set().union(*(set(s.meta.get("writes", [])) or set(cell_dataflow(s.action).writes) for s in cells))

    mine = {w for w in writes(ran) if not w.startswith("_")}
    # Localize to what this turn produced first; names every turn rewrites (`result`) say nothing.
    own = sorted(mine - writes(earlier)) or sorted(mine) or ["result"]
    return [
        Finding(
            check="parameters",
            variables=own,
            reason="a cut-off the question states is not the one this turn's computation uses",
            evidence=f"stated thresholds {missing} appear in no cell run so far (this turn: steps "
            f"{[s.index for s in ran]})",
        )
    ]


def _rounds_to(raw: float, places: int, value: float) -> bool:
    try:
        return math.isclose(round(float(raw), places), value, rel_tol=1e-12, abs_tol=1e-12)
    except (OverflowError, ValueError, TypeError):
        return False
