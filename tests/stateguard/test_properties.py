"""Property-based tests of the harness contract (hypothesis stateful testing).

A rule-based machine drives one Harness (in-memory store and trace, a small DictWorkspace) with a
random mix of worker steps, review events and manager actions. Actions are legal for the stage,
legal elsewhere, tools, or garbage (unknown names, non-object arguments, missing or mistyped
fields, unknown/self/abandoned state ids, bogus variable versions, out-of-range source intervals,
hints with code or leaked values). After every step the machine checks the store/version/relation
invariants; around every action it checks that a rejection changes nothing but the trace, which
gains exactly one `action` verdict line.

Budget: 2 regimes x 60 examples x up to 40 steps. With the fixed seed (derandomize=True) one full
run applies about 2,700 harness actions (about 4,000 steps in all) and takes ~10 s on a 2-core
machine.
"""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from stateguard import (
    LEGAL,
    AnalyticalState,
    ControlAction,
    DictWorkspace,
    EventType,
    Harness,
    HarnessConfig,
    Regime,
    Stage,
    StateStore,
    ToolAction,
    Trace,
    WorkerStep,
)
from stateguard.lifecycle import Actor
from stateguard.state import state_number

INITIAL_NS = {"a": 1, "b": [1, 2], "rev": 100.5, "tot": {"k": 3}}
GOOD_NAMES = ["a", "b", "rev", "tot", "fresh"]
BAD_NAMES = ["", "a b", "x@S1"]  # VariableArg accepts the last two; VariableRef does not
VALUES = [0, 3, 2.5, 100.5, 1234.5678, "ok", [1, 2], {"k": 1}, None, 10**400]
GARBAGE_NAMES = ["", "open_state", "OPEN", "DELETE_STATE", "run_python", "COMMIT_STATE "]
REASONS = [
    "the rate ignores refunds",
    "the value 1234.57 disagrees with the recorded output",
    "it should be 100.5 instead",
    "use `df.dropna()` before summing",
    "x = a + 1",
    "",
]
CODES = ["x = a + 1", "def (", "result = a", "a = 5\nresult = a", "import os"]
FORWARD = [  # preference order for legal actions, so simple examples walk the happy path
    "OPEN_STATE", "FINALIZE_RELATIONS", "COMMIT_STATE", "REPAIR", "UPDATE_STATE", "ABANDON_STATE", "RESUME_WORKER", "ABSTAIN",
]
def mostly(good: st.SearchStrategy, bad: st.SearchStrategy, odds: int = 8) -> st.SearchStrategy:
    """`bad` about once in `odds` draws, else `good`; shrinks towards `good`."""
    return st.integers(1, odds).flatmap(lambda i: bad if i == odds else good)


GARBAGE = st.one_of(  # arguments that are not an object, or an object of the wrong shape
    st.none(), st.integers(-2, 5), st.text(max_size=3), st.lists(st.integers(), max_size=2), st.just({"bogus": 1})
)
TEXT = mostly(st.sampled_from(["revenue", "margin by region"]), st.just(""))
CONSTRAINTS = st.lists(st.fixed_dictionaries({"text": TEXT}), max_size=1)
CITED = st.lists(mostly(st.sampled_from(GOOD_NAMES), st.sampled_from(["a@S1", "nope"])), max_size=2)
CONCLUSIONS = st.lists(st.one_of(TEXT, st.fixed_dictionaries({"text": TEXT, "variables": CITED})), max_size=2)
NEW_VAR = st.fixed_dictionaries(  # a value computed in this state: the harness assigns the version
    {"name": mostly(st.sampled_from(GOOD_NAMES), st.sampled_from(BAD_NAMES))}, optional={"value": st.sampled_from(VALUES)}
)
MODE = mostly(st.just("confirm"), st.sampled_from(["reselect", "bad"]))
EVIDENCE = st.sampled_from([None, "", "S2 contradicts S1"])


class HarnessMachine(RuleBasedStateMachine):
    REGIME = Regime.TURN_ALIGNED

    @initialize(
        budget=st.integers(1, 3),
        light=st.integers(0, 2),
        on_exhausted=st.sampled_from(["rollback", "abandon"]),
        per_activation=st.integers(2, 8),
    )
    def setup(self, budget: int, light: int, on_exhausted: str, per_activation: int) -> None:
        self.ws = DictWorkspace(copy.deepcopy(INITIAL_NS))
        self.config = HarnessConfig(
            regime=self.REGIME, repair_budget=budget, light_attempts=light,
            on_budget_exhausted=on_exhausted, max_actions_per_activation=per_activation,
        )  # fmt: skip
        self.h = Harness(StateStore(":memory:"), self.config, trace=Trace(), workspace=self.ws)
        self.next_step = 0
        self.records: dict[str, str] = {}  # first-seen raw record of every committed state
        self.states: dict[str, AnalyticalState] = {}  # ... and its parsed form
        self.commit_order: list[str] = []
        self.abandoned: set[str] = set()
        self.repairs: dict[str, int] = {}  # accepted REPAIRs per draft id
        self.last_commit_ns = copy.deepcopy(self.ws.namespace)

    # ------------------------------------------------------------------ worker and reviews
    def _worker_step(self, data: st.DataObject, gap: bool = False) -> None:
        """One worker step; it may also (re)define or drop a workspace variable."""
        var, value = data.draw(st.sampled_from(GOOD_NAMES)), data.draw(st.sampled_from(VALUES))
        op = data.draw(st.sampled_from(["keep", "set", "drop"]))
        if op == "set":
            self.ws.namespace[var] = copy.deepcopy(value)
        elif op == "drop":
            self.ws.namespace.pop(var, None)
        self.next_step += 1 if gap else 0  # a skipped index leaves a hole in the recorded steps
        self.h.record_step(WorkerStep(index=self.next_step, action=f"{var} = ...", output="ok"))
        self.next_step += 1

    def _hand_to_worker(self, data: st.DataObject) -> None:
        """The worker takes its turn (one step), then the manager is activated again, as in a rollout."""
        self._worker_step(data)
        if self.REGIME is Regime.SEGMENT_INDUCED:
            self.h.begin_review(EventType.PAUSE)
        elif self.h.stage in (Stage.OPEN, Stage.REPAIRING):
            self.h.begin_review(EventType.TURN_END)
        else:
            self.h.begin_review(EventType.TURN_START)

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """One rule for everything, so swarm testing cannot switch the manager off for a whole run."""
        kind = data.draw(st.sampled_from(["legal"] * 8 + ["worker", "worker", "review", "control", "tool", "garbage"]))
        if kind == "worker":  # out-of-band worker step, sometimes skipping an index
            self._worker_step(data, gap=data.draw(st.booleans()))
        elif kind == "review":  # a review point at an arbitrary moment, sometimes terminal
            event = data.draw(st.sampled_from([EventType.TURN_START, EventType.TURN_END, EventType.PAUSE]))
            self.h.begin_review(event, terminal=data.draw(st.booleans()))
        else:
            self._act(data, kind)

    # ------------------------------------------------------------------ manager actions
    def _ids(self) -> st.SearchStrategy[str]:
        h = self.h
        bad = sorted(self.abandoned) + ["S99", "S0", "s1", "7", h.draft.id if h.draft else h.store.peek_next_id()]
        return mostly(st.sampled_from(h.store.ids() or bad), st.sampled_from(bad))

    def _relations(self) -> st.SearchStrategy[list]:
        kinds = mostly(st.sampled_from([None, "invalidate", "progress", "branch", "combine", "init"]), st.just("weird"))
        committed = self.h.store.ids()
        good = st.fixed_dictionaries({"related_state_id": st.sampled_from(committed), "type": kinds})
        bad = st.fixed_dictionaries({"related_state_id": self._ids()}, optional={"type": kinds})
        return mostly(st.lists(good, min_size=1, max_size=2) if committed else st.just([]),
                      st.lists(st.one_of(bad, st.just({})), max_size=2))  # fmt: skip

    def _interval(self) -> st.SearchStrategy:
        lo, hi = self.h.traced_upto, max(self.next_step - 1, 0)
        good = st.tuples(st.integers(lo, max(lo, hi)), st.just(hi)).map(list)
        near = st.integers(lo - 2, hi + 2)
        return mostly(good, st.one_of(st.none(), st.lists(near, min_size=2, max_size=2), st.lists(near, max_size=3)))

    def _variables(self) -> st.SearchStrategy[list]:
        defined = [(v.name, sid) for sid, state in self.states.items() for v in state.defined_variables()]
        bogus = st.fixed_dictionaries({"name": st.sampled_from(GOOD_NAMES),  # unknown, future or malformed
                                       "version": st.one_of(self._ids(), st.sampled_from(["a@S1", "S1@S2", "v1"]))})
        if defined:  # reuse a committed version unchanged
            reuse = st.sampled_from(defined).map(lambda p: {"name": p[0], "version": p[1]})
            var = st.one_of(NEW_VAR, mostly(reuse, bogus))
        else:
            var = st.one_of(NEW_VAR, bogus)
        return mostly(st.lists(var, min_size=1, max_size=3, unique_by=lambda v: v["name"]),
                      st.lists(var, max_size=3))  # may list a name twice

    def _hint(self) -> st.SearchStrategy[dict]:
        draft_names = [v.name for v in self.h.draft.used_variables] if self.h.draft else []
        known = sorted(set(self.ws.namespace) | set(draft_names)) or GOOD_NAMES
        return st.fixed_dictionaries({
            "error_variables": mostly(st.lists(st.sampled_from(known), min_size=1, max_size=2),
                                      st.lists(st.sampled_from(["zz", "a@S1", "rev"]), max_size=2)),
            "faulty_reasoning": mostly(st.just(REASONS[0]), st.sampled_from(REASONS[1:])),
        })  # fmt: skip

    def _spec(self, name: str) -> tuple[dict, dict]:
        """(required, optional) argument strategies of a well-formed call, built only for `name`."""
        segment = self.REGIME is Regime.SEGMENT_INDUCED  # the segment flow needs an interval
        if name == "OPEN_STATE":
            return {"issue": TEXT, "relations": self._relations()}, {"constraints": CONSTRAINTS}
        if name == "UPDATE_STATE":
            interval = {"source_interval": self._interval()}
            required = {"used_variables": self._variables(), "conclusions": CONCLUSIONS}
            return ({**required, **interval}, {"issue": TEXT}) if segment else (required, {**interval, "issue": TEXT})
        if name == "FINALIZE_RELATIONS":
            return {}, {"mode": MODE, "relations": self._relations(), "conflict_evidence": EVIDENCE}
        if name == "REPAIR":
            return {"analytical_evidence": mostly(st.just("step 1 failed"), st.just("")), "error_hint": self._hint()}, {}
        if name in ("ABANDON_STATE", "ABSTAIN"):
            return {}, {"reason": TEXT}
        if name in ("compile_python", "inspect_python", "run_probe"):
            return {"code": st.sampled_from(CODES)}, {}
        if name == "check_execution":
            return {"step_id": st.integers(-1, self.next_step + 1)}, {}
        if name == "load_state":
            return {"state_id": self._ids()}, {}
        return {}, {}  # RESUME_WORKER, COMMIT_STATE and unknown names take no arguments

    def _args(self, name: str) -> st.SearchStrategy:
        spec, optional = self._spec(name)
        structured = st.fixed_dictionaries(spec, optional=optional)
        corrupted = st.fixed_dictionaries(  # a mistyped required field, or an unknown argument
            {k: st.one_of(v, GARBAGE) for k, v in spec.items()}, optional={**optional, "unexpected": st.just(1)}
        )
        missing = st.fixed_dictionaries({}, optional=optional)  # required fields left out
        return mostly(structured, st.one_of(corrupted, missing, GARBAGE), odds=5)

    def _snapshot(self) -> dict:
        h = self.h
        return {
            "records": {i: h.store.raw_record(i) for i in h.store.ids()},
            "ids": h.store.ids(),
            "draft": None if h.draft is None else h.draft.model_dump(mode="json"),
            "stage": h.stage,
            "repair_attempts": h.repair_attempts,
            "pending_hints": [x.model_dump(mode="json") for x in h.pending_hints],
            "traced_upto": h.traced_upto,
            "workspace": copy.deepcopy(self.ws.namespace),
        }

    def _act(self, data: st.DataObject, kind: str) -> None:
        h = self.h
        order = list(FORWARD)
        if h.draft is not None and state_number(h.draft.id) % 3 == 1:  # S1, S4, ...: repair until the budget
            spent = h.repair_attempts >= self.config.repair_budget  # is spent, then abandon (rollback)
            order.insert(0, order.pop(order.index("ABANDON_STATE" if spent else "REPAIR")))
        if not [i for i in h.steps if i >= h.traced_upto]:  # nothing to form a segment from yet
            order.insert(0, order.pop(order.index("RESUME_WORKER")))
        legal = sorted((a.value for a in LEGAL[self.REGIME][h.stage]), key=order.index)
        pools = {
            "legal": legal[:1] * len(legal) + legal,  # the preferred action half of the time
            "control": [a.value for a in ControlAction],
            "tool": [t.value for t in ToolAction],
            "garbage": GARBAGE_NAMES,
        }
        name = data.draw(st.sampled_from(pools[kind]), label="name")
        args = data.draw(self._args(name), label="arguments")
        before, lines = self._snapshot(), h.trace.lines()
        draft_id = h.draft.id if h.draft else None
        try:
            result = h.apply((name, copy.deepcopy(args)))
        except Exception as exc:  # garbage must be rejected with feedback, never crash the harness
            raise AssertionError(f"apply({name!r}, {args!r}) raised {type(exc).__name__}: {exc}") from exc
        after, new_lines = self._snapshot(), h.trace.lines()
        assert new_lines[: len(lines)] == lines, "trace is append-only"
        if not result.accepted:
            assert after == before, f"rejected {name} changed harness state: {result.feedback}"
            assert len(new_lines) == len(lines) + 1, "a rejection adds exactly one trace line"
            event = json.loads(new_lines[-1])
            assert event["kind"] == "action" and event["data"]["accepted"] is False
            return
        if name == "REPAIR":
            self.repairs[draft_id] = self.repairs.get(draft_id, 0) + 1
            if h.repair_attempts <= self.config.light_attempts:
                assert after["workspace"] == before["workspace"], "a light repair must not touch the workspace"
            else:
                gone = {v for v in args["error_hint"]["error_variables"] if "@" not in v}  # all localized
                assert not gone & set(self.ws.namespace), "heavy repair keeps a localized variable"
        elif name == "ABANDON_STATE":
            self.abandoned.add(draft_id)
            exhausted = before["repair_attempts"] >= self.config.repair_budget
            if exhausted and self.config.on_budget_exhausted == "rollback" and self.commit_order:
                assert self.ws.namespace == self.last_commit_ns, "rollback must restore the last checkpoint"
            else:
                assert after["workspace"] == before["workspace"]
        elif name == "COMMIT_STATE":
            self.commit_order.append(draft_id)
            self.last_commit_ns = copy.deepcopy(self.ws.namespace)
        if name not in ("REPAIR", "ABANDON_STATE"):
            assert after["workspace"] == before["workspace"], f"{name} must not touch the workspace"
        if result.next_actor is Actor.WORKER:
            self._hand_to_worker(data)

    # ------------------------------------------------------------------ invariants after every step
    @invariant()
    def store_contract(self) -> None:
        h, store = self.h, self.h.store
        ids = store.ids()
        assert ids == self.commit_order, "store ids are exactly the accepted commits, in order"
        numbers = [state_number(i) for i in ids]
        assert all(x < y for x, y in zip(numbers, numbers[1:], strict=False)), f"ids not increasing: {ids}"
        if h.draft is not None:
            assert h.draft.id not in store and h.draft.id not in self.abandoned
            assert not numbers or state_number(h.draft.id) > numbers[-1]
        for sid in ids:
            raw = store.raw_record(sid)
            assert self.records.setdefault(sid, raw) == raw, f"committed state {sid} changed"
            self.states.setdefault(sid, AnalyticalState.model_validate_json(raw))
            assert self.states[sid].id == sid and sid not in self.abandoned
        states = self.states
        for sid, state in states.items():
            n = state_number(sid)
            for rel in state.relations:
                up = rel.related_state_id
                if up is not None:
                    assert up != sid and up in states and state_number(up) < n, f"{sid} -> {up}"
                    assert up not in self.abandoned and ids.index(up) < ids.index(sid)
            for var in state.used_variables:
                if var.version != sid:  # a read: an earlier committed state defined exactly this version
                    assert state_number(var.version) < n and var.version in states, f"{sid} reads {var.key}"
                    assert any(v.name == var.name and v.version == var.version
                               for v in states[var.version].used_variables)
        for name in {v.name for s in states.values() for v in s.used_variables}:
            versions = [info.version for info in store.lineage(name).versions]
            owners = [key.split("@", 1)[1] for key in versions]
            nums = [state_number(o) for o in owners]
            assert all(x < y for x, y in zip(nums, nums[1:], strict=False)), f"{name}: {versions}"
            for owner in owners:  # a defined version is the id of the state that defined it
                assert any(v.name == name and v.version == owner for v in states[owner].used_variables)
        assert 0 <= h.repair_attempts <= self.config.repair_budget
        assert all(count <= self.config.repair_budget for count in self.repairs.values()), self.repairs


class SegmentMachine(HarnessMachine):
    REGIME = Regime.SEGMENT_INDUCED


SETTINGS = settings(
    max_examples=30,
    stateful_step_count=60,
    deadline=None,
    derandomize=True,
    database=None,
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],  # no slow 'explain' phase
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
TestTurnAligned = HarnessMachine.TestCase
TestTurnAligned.settings = SETTINGS
TestSegmentInduced = SegmentMachine.TestCase
TestSegmentInduced.settings = SETTINGS
