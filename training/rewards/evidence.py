"""E_k of paper Eq. 29: the runtime evidence available for one analytical state, and value matching.

    ev = state_evidence(rollout, state)          # worker outputs, tool results, constraint checks
    ev.has_number(66.43), ev.keyed_values("revenue"), "margin" in ev.written

Evidence for state S_k is what the runtime recorded, never what the manager wrote:
* the worker steps of its source interval: their printed output and error, and the names each
  successful step wrote (the step's recorded dataflow, or the code's when none was recorded);
* the results of check_execution, load_state and run_probe calls made while S_k was a draft, with
  a probe's own literals taken out (`print(999.0)` proves nothing); compile_python and
  inspect_python describe the manager's code, so they ground nothing;
* the executable constraint checks the harness ran for S_k, with the code of those that passed.

Numbers match at the coarser of the two precisions (66.428571 matches a printed 66.43, 1060.0
matches 1060); JSON objects in outputs and tool results also give keyed values, so a recorded
`above_40 = True` matches `"above_40": true` and not just any `true`.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stateguard.actions import RunProbeArgs
from stateguard.answers import last_json
from stateguard.artifacts.events import (
    ConstraintChecksEvent,
    StateCommittedEvent,
    StateOpenedEvent,
    ToolData,
    ToolEvent,
    WorkerStepData,
    WorkerStepEvent,
)
from stateguard.dataflow import cell_dataflow
from stateguard.trace_payloads import named_args
from training.rewards.timeline import Rollout

# Tools whose results report runtime values; compile_python and inspect_python describe the
# manager's own code (inspect_python even lists its literals), so they ground nothing.
VALUE_TOOLS = frozenset({"check_execution", "load_state", "run_probe"})
_NUMBER = re.compile(r"(?<![\w.@])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w@])")
_GROUPED = re.compile(r"(?<![\w.@])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w@])")


class Number(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: float
    decimals: int


def _places(exponent: int | str) -> int:
    return max(0, -exponent) if isinstance(exponent, int) else 0


def numbers_in(text: str, *, grouped: bool = False) -> list[Number]:
    """Numbers written in a text with the precision shown, not those inside identifiers (above_40)
    or versions (x@S3). `grouped` also reads thousands separators (1,060.5), as prose writes them;
    machine output is read without, so a list printed as [100,200] stays two numbers."""
    out = []
    for match in (_GROUPED if grouped else _NUMBER).finditer(text):
        raw = match.group(0).replace(",", "")
        try:
            parsed = Decimal(raw)
        except InvalidOperation:
            continue
        out.append(Number(value=float(parsed), decimals=_places(parsed.as_tuple().exponent)))
    return out


def number_of(value: float) -> Number:
    """A recorded value with the precision it carries (trailing zeros dropped: 1060.0 -> 0 places)."""
    if not math.isfinite(value):
        return Number(value=value, decimals=0)
    return Number(
        value=float(value), decimals=_places(Decimal(repr(float(value))).normalize().as_tuple().exponent)
    )


def same_number(a: Number, b: Number) -> bool:
    """Equal at the coarser precision of the two (half a unit in its last place)."""
    if not (math.isfinite(a.value) and math.isfinite(b.value)):
        return a.value == b.value
    places = min(a.decimals, b.decimals)
    return abs(a.value - b.value) <= 0.5 * 10.0**-places + 1e-9 * max(1.0, abs(a.value))


def leaves(value: Any, key: str = "value") -> Iterator[tuple[str, Any]]:
    """(field name, scalar) for every scalar inside a JSON-like value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from leaves(v, key)
    else:
        yield key, value


def same_value(a: Any, b: Any) -> bool:
    """Structural equality with float tolerance (two records of one variable version)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class Evidence(BaseModel):
    """E_k: everything the runtime recorded that can support the contents of state S_k."""

    texts: list[str] = Field(default_factory=list, description="Outputs, errors and tool results, as text.")
    numbers: list[Number] = Field(default_factory=list)
    keyed: dict[str, list[Any]] = Field(
        default_factory=dict, description="Field name -> values seen in JSON."
    )
    written: set[str] = Field(default_factory=set, description="Names successful source steps wrote.")
    passed_checks: list[str] = Field(
        default_factory=list, description="Code of executable constraints that passed."
    )

    def add_text(self, text: str) -> None:
        if not text:
            return
        self.texts.append(text)
        self.numbers.extend(numbers_in(text))
        parsed = last_json(text)
        if isinstance(parsed, dict | list):
            self.add_json(parsed)

    def add_json(self, value: Any) -> None:
        for key, leaf in leaves(value):
            self.keyed.setdefault(key, []).append(leaf)
            if isinstance(leaf, str) and leaf.strip().startswith(("{", "[")):
                self.add_text(leaf)  # a tool result that embeds printed JSON (check_execution output)

    def has_number(self, value: float) -> bool:
        target = number_of(value)
        return any(same_number(target, n) for n in self.numbers)

    def has_text(self, value: str) -> bool:
        """The string appears in the evidence (as a whole word when it starts and ends with one)."""
        if not value:
            return False
        pattern = re.escape(value)
        if re.match(r"\w", value[0]):
            pattern = r"(?<!\w)" + pattern
        if re.match(r"\w", value[-1]):
            pattern += r"(?!\w)"
        return any(re.search(pattern, t) for t in self.texts)

    def keyed_values(self, name: str) -> list[Any]:
        return self.keyed.get(name, [])

    def digest(self, limit: int = 40) -> list[str]:
        """The evidence as the judge sees it (first `limit` pieces)."""
        return self.texts[:limit] + [f"passed executable check: {code}" for code in self.passed_checks]


def _literals(code: str) -> tuple[list[Number], set[str]]:
    """Numbers and strings written literally in a probe's code."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return numbers_in(code), set()
    nums, strings = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
            strings.add(node.value)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int | float)
            and not isinstance(node.value, bool)
        ):
            nums.append(number_of(float(node.value)))
    return nums, strings


def add_tool_result(ev: Evidence, tool: ToolData) -> None:
    """Add one tool event's result. A probe's own literals are taken out first: `print(999.0)`
    shows what the manager wrote, not what the data holds."""
    data = tool.result.data
    planted_numbers: list[Number] = []
    planted_strings: set[str] = set()
    if tool.name == "run_probe":
        probe = named_args(tool.name, tool.arguments, RunProbeArgs)
        planted_numbers, planted_strings = _literals(probe.code if probe is not None else "")
    text = json.dumps(data, default=str, sort_keys=True)
    for literal in sorted(planted_strings, key=len, reverse=True):
        text = text.replace(literal, " ")
    ev.texts.append(text)
    ev.numbers.extend(n for n in numbers_in(text) if not any(same_number(n, p) for p in planted_numbers))
    for key, leaf in leaves(data):
        planted = (isinstance(leaf, str) and leaf in planted_strings) or (
            isinstance(leaf, int | float)
            and not isinstance(leaf, bool)
            and any(same_number(number_of(float(leaf)), p) for p in planted_numbers)
        )
        if not planted:
            ev.add_json({key: leaf})
    if tool.result.error:
        ev.texts.append(tool.result.error)


def written_names(step: WorkerStepData) -> list[str]:
    """Names a worker step (its trace record) wrote: its recorded dataflow, else its code's."""
    if "writes" in step.meta.model_fields_set:
        return list(step.meta.writes)
    flow = cell_dataflow(step.action)
    return list(flow.writes) if flow.valid else []


def state_evidence(rollout: Rollout, state: dict[str, Any]) -> Evidence:
    """Collect E_k for a state record (a committed state or a draft, as the trace holds it)."""
    ev = Evidence()
    sid = state.get("id")
    start, end = state.get("source_step_start"), state.get("source_step_end")
    for event in rollout.of_kind(WorkerStepEvent):
        index = event.data.index
        if start is None or end is None or not start <= index <= end:
            continue
        ev.add_text(event.data.output)
        ev.add_text(event.data.error or "")
        if event.data.success and not event.data.error:
            ev.written.update(written_names(event.data))
    opened = [e.seq for e in rollout.of_kind(StateOpenedEvent) if e.data.state_id == sid]
    closed = [e.seq for e in rollout.of_kind(StateCommittedEvent) if e.data.state.id == sid]
    lo, hi = (min(opened) if opened else -1), (min(closed) if closed else math.inf)
    for tool in rollout.of_kind(ToolEvent):
        if lo <= tool.seq <= hi and tool.data.name in VALUE_TOOLS:
            add_tool_result(ev, tool.data)
    codes = {c.get("text"): c.get("code") for c in state.get("constraints") or []}
    checks = [e for e in rollout.of_kind(ConstraintChecksEvent) if e.data.state_id == sid and e.seq <= hi]
    for result in checks[-1].data.results if checks else []:
        code = codes.get(result.text)
        if result.passed is True and code:
            ev.passed_checks.append(str(code))
    return ev
