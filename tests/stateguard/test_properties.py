"""Property-based tests of the harness contract (hypothesis stateful testing).

A rule-based machine drives one Harness (in-memory store and trace, a small DictWorkspace) through
worker steps, review events and manager actions that are legal, illegal for the stage, tools, or
garbage (bad names, non-object/missing/mistyped/unknown arguments, unknown, self, abandoned or
malformed state ids, bogus versions, out-of-range intervals, hints with code or leaked values).
It checks the store, version and relation invariants after every step, and that a rejected action
changes nothing but the trace, which gains exactly one `action` verdict line. Each step's choices
are 16 bytes (0 = the well-formed choice), so failures shrink towards the happy path plus what
matters; `note` prints every action of a failing run. Budget: 2 regimes x 150 examples x 40 steps
= 12,000 steps, ~9,400 of them harness actions (~300 commits, ~200 light/heavy repairs, ~20
rollbacks): ~10 s on a 2-core machine, plus 5-30 s of shrinking when something fails.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from stateguard.actions import RawAction
from stateguard.harness import Harness, HarnessConfig
from stateguard.lifecycle import LEGAL, Actor, ControlAction, Regime, Stage, ToolAction
from stateguard.observation import EventType, WorkerStep
from stateguard.state import AnalyticalState, state_number
from stateguard.store import StateStore
from stateguard.trace import Trace
from stateguard.workspace import DictWorkspace

INITIAL_NS = {"a": 1, "b": [1, 2], "rev": 100.5, "tot": {"k": 3}}
NAMES = ["a", "b", "rev", "tot", "fresh"]
BAD_NAMES = ["", "a b", "x@S1"]  # VariableArg accepts the last two; VariableRef does not
VALUES = [0, 3, 2.5, 100.5, 1234.5678, "ok", [1, 2], {"k": 1}, None, 10**400]  # 10**400: valid JSON
GARBAGE_NAMES = ["", "open_state", "OPEN", "DELETE_STATE", "run_python", "COMMIT_STATE "]
GARBAGE_ARGS = [None, 3, "x", [1, 2], {"bogus": 1}]
REASONS = [
    "the rate ignores refunds",
    "the value 1234.57 disagrees with the output",
    "it should be 100.5 instead",
    "use `df.dropna()` before summing",
    "x = a + 1",
    "",
]
CODES = ["x = a + 1", "def (", "result = a", "a = 5\nresult = a", "import os"]
KINDS = [None, "invalidate", "progress", "branch", "combine", "init"]
FORWARD = [  # preference order of legal actions: the first choice walks the happy path
    "OPEN_STATE",
    "FINALIZE_RELATIONS",
    "COMMIT_STATE",
    "REPAIR",
    "UPDATE_STATE",
    "ABANDON_STATE",
    "RESUME_WORKER",
    "ABSTAIN",
]
STEP_KINDS = ["legal"] * 8 + ["worker", "worker", "review", "control", "tool", "garbage"]


class Picker:
    """Decisions from bytes; 0 (where shrinking goes) is always the first, well-formed choice."""

    def __init__(self, choices: bytes):
        self.choices = iter(choices)

    def int(self, n: int) -> int:
        return next(self.choices, 0) % n

    def pick(self, seq: list) -> Any:
        return seq[self.int(len(seq))]

    def bad(self, odds: int = 10) -> bool:
        return self.int(odds) == odds - 1


class HarnessMachine(RuleBasedStateMachine):
    REGIME = Regime.TURN_ALIGNED

    @initialize(
        budget=st.integers(1, 3), light=st.integers(0, 2), rollback=st.booleans(), per_act=st.integers(2, 8)
    )
    def setup(self, budget: int, light: int, rollback: bool, per_act: int) -> None:
        self.ws = DictWorkspace(copy.deepcopy(INITIAL_NS))
        self.config = HarnessConfig(
            regime=self.REGIME,
            repair_budget=budget,
            light_attempts=light,
            on_budget_exhausted="rollback" if rollback else "abandon",
            max_actions_per_activation=per_act,
        )
        self.h = Harness(StateStore(":memory:"), self.config, trace=Trace(), workspace=self.ws)
        self.next_step = 0
        self.records: dict[str, str] = {}  # first-seen raw record of every committed state
        self.states: dict[str, AnalyticalState] = {}  # ... and its parsed form
        self.commit_order: list[str] = []
        self.repairs: dict[str, int] = {}  # accepted REPAIRs per draft id
        self.abandoned: set[str] = set()
        self.over_budget: set[str] = set()  # drafts that tried a REPAIR beyond the budget
        self.last_commit_ns = copy.deepcopy(self.ws.namespace)

    def _worker_step(self, p: Picker, gap: bool = False) -> None:
        """One worker step; it may also (re)define or drop a workspace variable."""
        var, value, op = p.pick(NAMES), p.pick(VALUES), p.pick(["keep", "set", "drop"])
        if op == "set":
            self.ws.namespace[var] = copy.deepcopy(value)
        elif op == "drop":
            self.ws.namespace.pop(var, None)
        self.next_step += 1 if gap else 0  # a skipped index leaves a hole in the recorded steps
        self.h.record_step(WorkerStep(index=self.next_step, action=f"{var} = ...", output="ok"))
        note(f"worker step {self.next_step} ({op} {var})")
        self.next_step += 1

    def _hand_to_worker(self, p: Picker) -> None:
        """The worker takes its turn (one step), then the manager is activated again, as in a rollout."""
        self._worker_step(p)
        if self.REGIME is Regime.SEGMENT_INDUCED:
            self.h.begin_review(EventType.PAUSE)
        else:
            ended = self.h.stage in (Stage.OPEN, Stage.REPAIRING)
            self.h.begin_review(EventType.TURN_END if ended else EventType.TURN_START)

    @rule(choices=st.binary(min_size=16, max_size=16))  # one byte per decision; extra picks read as 0
    def step(self, choices: bytes) -> None:
        """One rule for everything, so swarm testing cannot switch the manager off for a whole run."""
        p = Picker(choices)
        kind = p.pick(STEP_KINDS)
        if kind == "worker":  # out-of-band worker step, sometimes skipping an index
            self._worker_step(p, gap=p.bad(2))
        elif kind == "review":  # a review point at an arbitrary moment, sometimes terminal
            event = p.pick([EventType.TURN_START, EventType.TURN_END, EventType.PAUSE])
            self.h.begin_review(event, terminal=p.bad(2))
            note(f"review {event.value}")
        else:
            self._act(p, kind)

    def _state_id(self, p: Picker, bad: bool = False) -> str:
        """A committed id, or (when `bad`) an unknown, malformed, abandoned or self id."""
        h, committed = self.h, self.h.store.ids()
        if committed and not (bad or p.bad()):
            return p.pick(committed)
        own = h.draft.id if h.draft else h.store.peek_next_id()
        return p.pick(sorted(self.abandoned) + ["S99", "S0", "s1", "7", own])

    def _relations(self, p: Picker) -> list:
        committed = self.h.store.ids()
        if not p.bad(4):  # one or two committed upstream states (none while the store is empty)
            n = p.int(2) + 1 if committed else 0
            return [{"related_state_id": p.pick(committed), "type": p.pick(KINDS)} for _ in range(n)]
        weird = [*KINDS, "weird"]
        return [
            {"related_state_id": self._state_id(p, bad=p.bad(2)), "type": p.pick(weird)}
            for _ in range(p.int(3))
        ]

    def _interval(self, p: Picker) -> list[int] | None:
        lo, hi = self.h.traced_upto, max(self.next_step - 1, 0)
        if not p.bad():
            return [lo + p.int(max(hi - lo, 0) + 1), hi]
        return p.pick([None, [hi + 1, hi + 2], [lo - 1, hi], [hi, lo - 2], [lo], [lo, lo, hi]])

    def _variable(self, p: Picker) -> dict:
        defined = [(v.name, sid) for sid, state in self.states.items() for v in state.defined_variables()]
        if not p.bad(2):  # a value computed in this state: the harness assigns the version
            return {"name": p.pick(BAD_NAMES) if p.bad() else p.pick(NAMES), "value": p.pick(VALUES)}
        if defined and not p.bad():  # reuse a committed version unchanged
            name, version = p.pick(defined)
            return {"name": name, "version": p.pick([version, f"{name}@{version}"])}
        bogus = p.pick([self._state_id(p, bad=True), "a@S1", "S1@S2", "v1"])  # unknown, later, malformed
        return {"name": p.pick(NAMES), "version": bogus}

    def _text(self, p: Picker) -> str:
        return "" if p.bad() else p.pick(["revenue", "margin by region"])

    def _conclusion(self, p: Picker) -> Any:
        if p.bad(2):  # a bare string
            return self._text(p)
        return {"text": self._text(p), "variables": p.pick([[], ["a"], ["a@S1"], ["nope"]])}

    def _well_formed(self, p: Picker, name: str) -> dict:
        if name == "OPEN_STATE":
            args = {"issue": self._text(p), "relations": self._relations(p)}
            return {**args, "constraints": [{"text": self._text(p)}]} if p.bad(4) else args
        if name == "UPDATE_STATE":
            variables = [self._variable(p) for _ in range(p.int(3) + 1)]
            if not p.bad():  # else a name may be listed twice
                variables = list({v["name"]: v for v in reversed(variables)}.values())
            conclusions = [self._conclusion(p) for _ in range(p.int(3))]
            args = {"used_variables": variables, "conclusions": conclusions}
            if self.REGIME is Regime.SEGMENT_INDUCED or p.bad(3):  # the turn-aligned flow ignores it
                args["source_interval"] = self._interval(p)
            return args
        if name == "FINALIZE_RELATIONS":
            if not p.bad():
                return {"mode": "confirm"}
            return {
                "mode": p.pick(["reselect", "confirm", "bad"]),
                "relations": self._relations(p),
                "conflict_evidence": p.pick(["S2 contradicts S1", None, ""]),
            }
        if name == "REPAIR":
            draft_names = [v.name for v in self.h.draft.used_variables] if self.h.draft else []
            known = sorted(set(self.ws.namespace) | set(draft_names)) or NAMES
            targets = [p.pick(known) for _ in range(p.int(2) + 1)]
            if p.bad():  # empty, unknown, or not localizable
                targets = p.pick([[], ["zz"], ["a@S1", "a@S1"]])
            reason = p.pick(REASONS[1:]) if p.bad() else REASONS[0]
            hint = {"error_variables": targets, "faulty_reasoning": reason}
            return {"analytical_evidence": "" if p.bad() else "step 1 failed", "error_hint": hint}
        if name in ("compile_python", "inspect_python", "run_probe"):
            return {"code": p.pick(CODES)}
        if name == "check_execution":
            return {"step_id": p.int(self.next_step + 2) - 1}
        if name == "load_state":
            return {"state_id": self._state_id(p)}
        return {"reason": self._text(p)} if name in ("ABANDON_STATE", "ABSTAIN") and p.bad(2) else {}

    def _args(self, p: Picker, name: str) -> Any:
        args = self._well_formed(p, name)
        if not p.bad(5):
            return args
        how = p.pick(["garbage", "missing", "unexpected", "mistyped"])
        if how == "garbage" or not args:
            return p.pick(GARBAGE_ARGS)
        key = p.pick(sorted(args))
        if how == "missing":
            del args[key]
        else:
            args["unexpected" if how == "unexpected" else key] = p.pick(GARBAGE_ARGS)
        return args

    def _snapshot(self) -> dict:
        """What a rejected action must leave unchanged (all but the trace)."""
        h = self.h
        return {
            "records": {i: h.store.raw_record(i) for i in h.store.ids()},
            "ids": h.store.ids(),
            "draft": None if h.draft is None else h.draft.model_dump(mode="json"),
            "stage": h.stage,
            "repair_attempts": h.repair_attempts,
            "traced_upto": h.traced_upto,
            "pending_hints": [x.model_dump(mode="json") for x in h.pending_hints],
            "workspace": copy.deepcopy(self.ws.namespace),
        }

    def _act(self, p: Picker, kind: str) -> None:
        h = self.h
        order = list(FORWARD)
        if h.draft is not None and state_number(h.draft.id) % 3 == 2:  # S2, S5, ...: repair until the budget
            done = h.draft.id in self.over_budget  # is spent, once more beyond it, then abandon (rollback)
            order.insert(0, order.pop(order.index("ABANDON_STATE" if done else "REPAIR")))
        if not [i for i in h.steps if i >= h.traced_upto]:  # nothing to form a segment from yet
            order.insert(0, order.pop(order.index("RESUME_WORKER")))
        legal = sorted((a.value for a in LEGAL[self.REGIME][h.stage]), key=order.index)
        pools = {
            "legal": legal[:1] * len(legal) + legal,  # the preferred action half of the time
            "control": [a.value for a in ControlAction],
            "tool": [t.value for t in ToolAction],
            "garbage": GARBAGE_NAMES,
        }
        name = p.pick(pools[kind])
        args = self._args(p, name)
        before, lines = self._snapshot(), h.trace.lines()
        draft_id = h.draft.id if h.draft else ""
        try:
            result = h.apply(RawAction(name=name, arguments=copy.deepcopy(args)))
        except Exception as exc:  # garbage must be rejected with feedback, never crash the harness
            raise AssertionError(f"apply({name!r}, {args!r}) raised {type(exc).__name__}: {exc}") from exc
        verdict = "accepted" if result.accepted else "rejected"
        note(f"apply({name!r}, {args!r}) -> {verdict} ({h.stage.value})")
        after, new_lines = self._snapshot(), h.trace.lines()
        assert new_lines[: len(lines)] == lines, "trace is append-only"
        if not result.accepted:
            if name == "REPAIR" and h.repair_attempts >= self.config.repair_budget:
                self.over_budget.add(draft_id)
            assert after == before, f"rejected {name} changed harness state: {result.feedback}"
            assert len(new_lines) == len(lines) + 1, "a rejection adds exactly one trace line"
            event = json.loads(new_lines[-1])
            assert event["kind"] == "action" and event["data"]["accepted"] is False, event
            return
        if name == "REPAIR":
            self.repairs[draft_id] = self.repairs.get(draft_id, 0) + 1
            if h.repair_attempts <= self.config.light_attempts:
                assert after["workspace"] == before["workspace"], "a light repair touched the workspace"
            else:
                gone = {v for v in args["error_hint"]["error_variables"] if "@" not in v}
                assert not gone & set(self.ws.namespace), "heavy repair keeps a localized variable"
        elif name == "ABANDON_STATE":
            self.abandoned.add(draft_id)
            exhausted = before["repair_attempts"] >= self.config.repair_budget
            if exhausted and self.config.on_budget_exhausted == "rollback" and self.commit_order:
                assert self.ws.namespace == self.last_commit_ns, "rollback must restore the last checkpoint"
            else:
                assert after["workspace"] == before["workspace"], "a plain abandon touched the workspace"
        elif name == "COMMIT_STATE":
            self.commit_order.append(draft_id)
            self.last_commit_ns = copy.deepcopy(self.ws.namespace)
        if name not in ("REPAIR", "ABANDON_STATE"):
            assert after["workspace"] == before["workspace"], f"{name} must not touch the workspace"
        if result.next_actor is Actor.WORKER:
            self._hand_to_worker(p)

    @invariant()  # after every step
    def store_contract(self) -> None:
        h, store = self.h, self.h.store
        ids = store.ids()
        assert ids == self.commit_order, "store ids are exactly the accepted commits, in order"
        numbers = [state_number(i) for i in ids]
        assert all(x < y for x, y in zip(numbers, numbers[1:], strict=False)), f"ids not increasing: {ids}"
        if h.draft is not None:
            assert h.draft.id not in store and h.draft.id not in self.abandoned, f"draft reuses {h.draft.id}"
            assert not numbers or state_number(h.draft.id) > numbers[-1], f"draft {h.draft.id} after {ids}"
        for sid in ids:
            raw = store.raw_record(sid)
            assert self.records.setdefault(sid, raw) == raw, f"committed state {sid} changed"
            self.states.setdefault(sid, AnalyticalState.model_validate_json(raw))
            assert self.states[sid].id == sid and sid not in self.abandoned, f"{sid} was abandoned or renamed"
        states = self.states
        for sid, state in states.items():
            n = state_number(sid)
            for rel in state.relations:
                up = rel.related_state_id
                if up is not None:
                    assert up != sid and up in states and state_number(up) < n, f"{sid} -> {up}"
                    assert up not in self.abandoned and ids.index(up) < ids.index(sid), f"{sid} -> {up}"
            for var in state.used_variables:
                if var.version != sid:  # a read: an earlier committed state defined exactly this version
                    assert state_number(var.version) < n and var.version in states, f"{sid} reads {var.key}"
                    assert any(v.key == var.key for v in states[var.version].defined_variables()), var.key
        for name in {v.name for s in states.values() for v in s.used_variables}:
            versions = [info.version for info in store.lineage(name).versions]
            owners = [key.split("@", 1)[1] for key in versions]
            nums = [state_number(o) for o in owners]
            assert all(x < y for x, y in zip(nums, nums[1:], strict=False)), f"{name}: {versions}"
            for owner in owners:  # a defined version is the id of the state that defined it
                assert any(v.name == name for v in states[owner].defined_variables()), f"{name}@{owner}"
        budget = self.config.repair_budget
        assert 0 <= h.repair_attempts <= budget, f"repair_attempts {h.repair_attempts} > budget {budget}"
        assert all(n <= budget for n in self.repairs.values()), f"accepted repairs {self.repairs} > {budget}"


class SegmentMachine(HarnessMachine):
    REGIME = Regime.SEGMENT_INDUCED


SETTINGS = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    database=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],  # no slow 'explain'
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example, HealthCheck.data_too_large],
)
TestTurnAligned, TestSegmentInduced = HarnessMachine.TestCase, SegmentMachine.TestCase
TestTurnAligned.settings = TestSegmentInduced.settings = SETTINGS
