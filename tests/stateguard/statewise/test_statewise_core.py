"""The recovery core on a toy interface: planner, attribution, resolution, repair, check, and run_task."""

from __future__ import annotations

from datetime import timedelta

import pytest

from statewise.attribution import attribute
from statewise.check import check_action
from statewise.clarify import CallbackDeveloper, parse_reply
from statewise.interface import Action
from statewise.planner import PlannerError, ScriptedPlanner
from statewise.records import Authority, Evidence
from statewise.recovery import RecoveryConfig, run_task
from statewise.resolution import ResolutionPolicy, resolve, signals_for
from statewise.store import RecordStore
from tests.stateguard.statewise.toy import FILES, INTERFACE, NOW, SPEC, ToyEnv, record, task


def store_with(*records: object) -> RecordStore:
    store = RecordStore()
    for r in records:
        store.add(r)  # type: ignore[arg-type]
    return store


def test_scripted_planner_binds_declared_keys_defaults_and_stops() -> None:
    planner = ScriptedPlanner(SPEC)
    got = planner.propose(task(), [record("src.path", "in/b.txt")])
    assert got.slots == {"src": "in/b.txt", "mode": "copy", "dest": "out", "name": "r.txt"}
    assert set(got.used) == {"src"}
    assert planner.propose(task(), [record("copy.mode", "hold")]).is_stop
    bad = task().model_copy(update={"params": {}})
    assert "does not give 'name'" in planner.propose(bad, []).reason


class FailsWithout(ScriptedPlanner):
    """A scripted planner that cannot plan when the record `key` is missing (an LLM that gives up)."""

    def __init__(self, key: str):
        super().__init__(SPEC)
        self.key = key

    def propose(self, task_, records):  # type: ignore[no-untyped-def]
        if not any(r.key == self.key for r in records):
            raise PlannerError("no plan")
        return super().propose(task_, records)


def test_attribution_separates_critical_records_from_retrieved_ones() -> None:
    store = store_with(
        record("src.path", "in/a.txt"),
        record("dest.dir", "out"),
        record("note.colour", "blue"),
        record("note.backup", "out"),
    )
    records = store.retrieve("p/a")
    ids = {r.key: r.id for r in records}
    proposal = ScriptedPlanner(SPEC).propose(task(), records)
    result = attribute(ScriptedPlanner(SPEC), SPEC, task(), records, proposal)
    assert set(result.critical) == {ids["src.path"], ids["dest.dir"]}
    # note.colour is linked to nothing: never probed; note.backup carries the proposed dest value verbatim
    # but moves nothing: its independence is not shown, so it is kept for verification
    assert {p.key for p in result.probes} == {"src.path", "dest.dir", "note.backup"} and len(
        result.probes
    ) == 6
    assert result.inconclusive == [ids["note.backup"]]
    # dest.dir equals its slot default: removing it changes nothing, altering it does; still critical
    assert any(p.changed for p in result.probes if p.key == "dest.dir" and p.variant == "altered")
    flaky = attribute(FailsWithout("dest.dir"), SPEC, task(), records, proposal)
    assert (
        ids["dest.dir"] in flaky.critical
    )  # the removal probe failed, the altered probe still shows the dependence
    assert any(p.changed is None for p in flaky.probes)


def test_signals_from_metadata() -> None:
    t = task()
    store = RecordStore()
    old = store.add(record("dest.dir", "out", age=90))
    assert signals_for(old, t, INTERFACE, store)[0] == ["expired"]
    store.add_evidence(
        Evidence(
            key="dest.dir",
            scope="p/b",
            value="shared",
            source="note",
            observed_at=NOW,
            authority=Authority.OBSERVED,
        )
    )
    assert (
        "conflict" not in signals_for(old, t, INTERFACE, store)[0]
    )  # a sibling scope's note is not about p/a
    store.add_evidence(
        Evidence(
            key="dest.dir",
            scope="p",
            value="shared",
            source="note",
            observed_at=NOW,
            authority=Authority.OBSERVED,
        )
    )
    assert signals_for(old, t, INTERFACE, store) == (["expired", "conflict"], ["shared"])
    broad = record("src.path", "in/a.txt", scope="p", prov_scope="p/z")
    assert signals_for(broad, t, INTERFACE, store)[0] == ["scope"]
    guess = record("copy.mode", "maybe", authority=Authority.INFERRED)
    assert signals_for(guess, t, INTERFACE, store)[0] == ["authority", "type"]


def test_resolution_by_probe_question_and_policy() -> None:
    env, store = ToyEnv(FILES), RecordStore()
    op = SPEC.operations["copy_file"]
    asked: list[str] = []
    dev = CallbackDeveloper(lambda q: asked.append(q) or "no: shared")  # type: ignore[func-returns-value]
    policy = ResolutionPolicy()
    stale = resolve(record("src.path", "in/a.txt"), task(), op, INTERFACE, env, store, dev, policy)
    assert (stale.status, stale.value, stale.method, stale.defect) == (
        "defective",
        "in/b.txt",
        "probe",
        "stale",
    )
    fine = resolve(record("src.path", "in/b.txt"), task(), op, INTERFACE, env, store, dev, policy)
    assert fine.status == "valid" and asked == []
    fresh_intent = resolve(record("dest.dir", "out"), task(), op, INTERFACE, env, store, dev, policy)
    assert fresh_intent.status == "valid" and asked == []  # reversible, no doubt: not asked
    expired = resolve(record("dest.dir", "out", age=90), task(), op, INTERFACE, env, store, dev, policy)
    assert (expired.status, expired.value, expired.method) == ("defective", "shared", "developer") and len(
        asked
    ) == 1
    assert "dest.dir = 'out'" in asked[0] and "expired" in asked[0]
    irreversible = SPEC.operations["delete_dir"]
    resolve(record("dest.dir", "cache"), task("delete_dir"), irreversible, INTERFACE, env, store, dev, policy)
    assert len(asked) == 2  # an irreversible action: the intent is confirmed first
    no_pointer = ToyEnv({k: v for k, v in FILES.items() if k != "CURRENT"})
    owner = resolve(
        record("src.path", "in/a.txt"),
        task(),
        op,
        INTERFACE,
        no_pointer,
        store,
        CallbackDeveloper(lambda q: "yes"),
        policy,
    )
    assert owner.status == "valid" and owner.method == "developer" and "probe inconclusive" in owner.detail
    unknown = resolve(
        record("dest.dir", "out", age=90),
        task(),
        op,
        INTERFACE,
        env,
        store,
        CallbackDeveloper(lambda q: "hmm, ask Ana"),
        policy,
    )
    assert unknown.status == "unresolved"
    blind = ResolutionPolicy(verify=False)
    assert (
        resolve(record("dest.dir", "out", age=90), task(), op, INTERFACE, env, store, dev, blind).status
        == "unresolved"
    )
    assert (
        resolve(record("src.path", "in/a.txt"), task(), op, INTERFACE, env, store, dev, blind).status
        == "valid"
    )


def test_parse_reply() -> None:
    assert parse_reply("Yes, still right").kind == "confirm"
    assert (parse_reply("no: 90").kind, parse_reply("no: 90").value) == ("correct", 90)
    assert parse_reply("No - shared/finance").value == "shared/finance"
    assert parse_reply("that's undecided for now").kind == "undecided"
    assert parse_reply("no").kind == "unknown"


def test_state_action_check() -> None:
    env = ToyEnv(FILES)
    store = store_with(record("src.path", "in/b.txt"), record("dest.dir", "out"))
    good = Action(
        operation="copy_file", slots={"src": "in/b.txt", "mode": "copy", "dest": "out", "name": "r.txt"}
    )
    assert check_action(good, task(), INTERFACE, env, store).passed
    stale = good.model_copy(update={"slots": {**good.slots, "src": "in/a.txt"}})
    assert "contradicts record src.path" in check_action(stale, task(), INTERFACE, env, store).failures[0]
    frozen = store_with(record("src.path", "in/b.txt"), record("dest.dir", "shared"))
    shared = good.model_copy(update={"slots": {**good.slots, "dest": "shared"}})
    assert "shared carries FROZEN" in " ".join(check_action(shared, task(), INTERFACE, env, frozen).failures)
    away = good.model_copy(update={"slots": {**good.slots, "dest": "../etc"}})
    assert "leaves the workspace" in " ".join(
        check_action(away, task(), INTERFACE, env, RecordStore()).failures
    )
    wrong_param = good.model_copy(update={"slots": {**good.slots, "name": "x"}})
    assert "differs from the task" in " ".join(
        check_action(wrong_param, task(), INTERFACE, env, store).failures
    )
    delete = Action(operation="delete_dir", slots={"folder": "keep"})
    failures = check_action(delete, task("delete_dir"), INTERFACE, env, RecordStore()).failures
    assert any("not permitted" in f for f in failures) and any("has none of ['CACHE']" in f for f in failures)


def test_run_task_repairs_replans_and_executes() -> None:
    env = ToyEnv(FILES)
    store = store_with(
        record("src.path", "in/a.txt"), record("dest.dir", "out"), record("note.colour", "blue")
    )
    before = {r.key: r.id for r in store.records()}
    out = run_task(task(), store, env, INTERFACE, ScriptedPlanner(SPEC), recovery=RecoveryConfig())
    assert out.proposed.slots["src"] == "in/a.txt" and out.final.slots["src"] == "in/b.txt"
    assert env.files["out/r.txt"] == "new" and len(out.corrections) == 1 and out.questions == 0
    assert [r.value for r in store.lineage("src.path")] == ["in/a.txt", "in/b.txt"]
    assert {r.key: r.id for r in store.records()}["note.colour"] == before[
        "note.colour"
    ]  # outside scope: untouched
    assert (
        out.planner_calls == 1 + 4 + 1
    )  # propose, 2 probes per linked record (note.colour is not linked), replan
    # plain agent on a fresh store: acts on the stale premise
    plain_env = ToyEnv(FILES)
    plain = run_task(
        task(), store_with(record("src.path", "in/a.txt")), plain_env, INTERFACE, ScriptedPlanner(SPEC)
    )
    assert plain_env.files["out/r.txt"] == "old" and plain.attribution is None


def test_ablations_change_what_happens() -> None:
    def fresh() -> RecordStore:
        return store_with(record("src.path", "in/a.txt"), record("dest.dir", "shared", age=3))

    for cfg, copied, stopped in [
        (RecoveryConfig(attribution=False), "old", False),
        (RecoveryConfig(attribution=False, verify_all=True), "new", False),
    ]:
        env = ToyEnv({k: v for k, v in FILES.items() if k != "shared/FROZEN"})  # shared is open here
        out = run_task(task(), fresh(), env, INTERFACE, ScriptedPlanner(SPEC), recovery=cfg)
        assert env.files.get("shared/r.txt") == copied and out.stopped is stopped
    # the check stops an action into a frozen folder; without it the action runs
    env = ToyEnv(FILES)
    checked = run_task(task(), fresh(), env, INTERFACE, ScriptedPlanner(SPEC), recovery=RecoveryConfig())
    assert checked.stopped and "FROZEN" in checked.stop_reason and "shared/r.txt" not in env.files
    env = ToyEnv(FILES)
    unchecked = run_task(
        task(),
        fresh(),
        env,
        INTERFACE,
        ScriptedPlanner(SPEC),
        recovery=RecoveryConfig(state_action_check=False),
    )
    assert not unchecked.stopped and env.files["shared/r.txt"] == "new"
    # without persistence the repair is used once and forgotten
    store = fresh()
    run_task(
        task(),
        store,
        ToyEnv({k: v for k, v in FILES.items() if k != "shared/FROZEN"}),
        INTERFACE,
        ScriptedPlanner(SPEC),
        recovery=RecoveryConfig(persistence=False),
    )
    assert [r.value for r in store.lineage("src.path")] == ["in/a.txt"] and store.corrections() == []
    # an unresolved premise stops before anything runs
    env = ToyEnv(FILES)
    doubt = store_with(record("src.path", "in/b.txt"), record("dest.dir", "out", age=90))
    out = run_task(
        task(), doubt, env, INTERFACE, ScriptedPlanner(SPEC), recovery=RecoveryConfig(), developer=None
    )
    assert out.stopped and "unresolved premise: dest.dir" in out.stop_reason and env.executed == []


def test_developer_answer_undecided_is_persisted_as_a_stop() -> None:
    env = ToyEnv(FILES)
    store = store_with(record("src.path", "in/b.txt"), record("copy.mode", "copy", age=70))
    dev = CallbackDeveloper(lambda q: "undecided, hold it")
    out = run_task(
        task(), store, env, INTERFACE, ScriptedPlanner(SPEC), developer=dev, recovery=RecoveryConfig()
    )
    assert out.stopped and env.executed == [] and dev.questions == 1
    assert store.retrieve("p/a", keys=["copy.mode"])[0].value == "undecided"
    # the next task reads the persisted decision and stops without asking
    later = run_task(
        task().model_copy(update={"task_id": "t2", "now": NOW + timedelta(days=1)}),
        store,
        env,
        INTERFACE,
        ScriptedPlanner(SPEC),
        developer=dev,
        recovery=RecoveryConfig(),
    )
    assert later.stopped and dev.questions == 1


def test_unknown_operation_is_an_error_not_a_guess() -> None:
    with pytest.raises(PlannerError, match="no operation 'fly'"):
        ScriptedPlanner(SPEC).propose(task().model_copy(update={"operation": "fly"}), [])


def test_without_replanning_repaired_values_are_patched_and_a_stopped_proposal_stays_stopped() -> None:
    # a stale machine fact: patching the repaired source into the proposal gives the replanned action
    env = ToyEnv(FILES)
    out = run_task(
        task(),
        store_with(record("src.path", "in/a.txt"), record("dest.dir", "out")),
        env,
        INTERFACE,
        ScriptedPlanner(SPEC),
        recovery=RecoveryConfig(replan=False),
    )
    assert (
        out.final.slots["src"] == "in/b.txt" and env.files["out/r.txt"] == "new" and len(out.corrections) == 1
    )
    assert out.planner_calls == 1 + 4  # no replan call
    # an expired 'hold' the developer lifts: only a new plan turns the stop into the copy
    for replan, copied in [(True, "new"), (False, None)]:
        env = ToyEnv(FILES)
        store = store_with(record("src.path", "in/b.txt"), record("copy.mode", "hold", age=70))
        dev = CallbackDeveloper(lambda q: "no: copy")
        out = run_task(
            task(),
            store,
            env,
            INTERFACE,
            ScriptedPlanner(SPEC),
            developer=dev,
            recovery=RecoveryConfig(replan=replan),
        )
        assert (
            out.proposed.is_stop
            and len(out.corrections) == 1
            and store.retrieve("p/a", keys=["copy.mode"])[0].value == "copy"
        )
        assert env.files.get("out/r.txt") == copied and out.stopped is (not replan)
