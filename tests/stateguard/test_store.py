"""Store invariants and queries: references, immutability, lineage, invalidation closure."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.state import AnalyticalState, Conclusion, Relation, RelationType, VariableRef
from stateguard.store import IndexEntry, StateStore, StoreError


def st(sid: str, variables=(), relations=(), issue: str = "") -> AnalyticalState:
    rels = [Relation(type=RelationType(t), related_state_id=u) for u, t in relations] or [
        Relation(type="init")
    ]
    return AnalyticalState(
        id=sid,
        issue=issue or f"issue of {sid}",
        used_variables=[VariableRef(name=n, version=v, value=x) for n, v, x in variables],
        conclusions=[Conclusion(text=f"{sid} done")],
        relations=rels,
    )


@pytest.fixture()
def chain(tmp_path) -> StateStore:
    """S1 defines revenue; S2 reads it; S3 reads margin; S4 reads ratio (three states downstream);
    S5 is an unrelated branch; S6 revises revenue and invalidates S1."""
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("revenue", "S1", 1000)]))
    store.commit(st("S2", [("revenue", "S1", 1000), ("margin", "S2", 400)], [("S1", "progress")]))
    store.commit(st("S3", [("margin", "S2", 400), ("ratio", "S3", 0.4)], [("S2", "progress")]))
    store.commit(st("S4", [("ratio", "S3", 0.4), ("report", "S4", "r")], [("S3", "progress")]))
    store.commit(st("S5", [("n_rows", "S5", 10)]))
    store.commit(st("S6", [("revenue", "S6", 950)], [("S1", "invalidate")]))
    return store


def test_invalidation_closure_reaches_three_states_downstream(chain: StateStore) -> None:
    inv = chain.invalidated_by("S6")
    assert inv.states == ["S1", "S2", "S3", "S4"]
    assert set(inv.variables) == {"revenue@S1", "margin@S2", "ratio@S3", "report@S4"}
    assert chain.invalid_states() == ["S1", "S2", "S3", "S4"]
    assert not chain.is_invalid("S5") and not chain.is_invalid("S6")
    assert not chain.is_invalid("revenue@S6")
    assert chain.why_invalid("ratio@S3") == [("S6", "S1")]


def test_closure_follows_variable_reads_without_relations(tmp_path) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("cogs", "S1", 0.6)]))
    store.commit(st("S2", [("x", "S2", 1)]))
    # S3 relates only to S2 but reads cogs@S1: the variable read alone makes it depend on S1.
    store.commit(st("S3", [("cogs", "S1", 0.6), ("profit", "S3", 5)], [("S2", "progress")]))
    store.commit(st("S4", [("cogs", "S4", 0.62)], [("S1", "invalidate")]))
    assert store.invalidated_by("S4").states == ["S1", "S3"]
    assert not store.is_invalid("S2")


def test_invalidation_is_precise_to_the_redefined_variables(tmp_path) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("sales", "S1", "table"), ("revenue", "S1", 1000)]))
    store.commit(
        st("S2", [("sales", "S1", "table"), ("n", "S2", 5)], [("S1", "progress")])
    )  # uses only sales
    store.commit(st("S3", [("revenue", "S1", 1000), ("margin", "S3", 400)], [("S1", "branch")]))
    store.commit(
        st("S4", [("note", "S4", "x")], [("S1", "branch")])
    )  # relates to S1 but reads nothing from it
    store.commit(st("S5", [("sales", "S1", "table"), ("revenue", "S5", 950)], [("S1", "invalidate")]))
    inv = store.invalidated_by("S5")
    assert inv.states == ["S1", "S3", "S4"]
    assert set(inv.variables) == {"revenue@S1", "margin@S3", "note@S4"}
    assert not store.is_invalid("sales@S1") and not store.is_invalid("S2")
    # A later state reading only the still-valid sales@S1 from S1 is not stale; one reading margin@S3 is.
    store.commit(st("S6", [("sales", "S1", "table"), ("k", "S6", 1)], [("S1", "branch")]))
    store.commit(st("S7", [("margin", "S3", 400), ("m2", "S7", 1)], [("S3", "branch")]))
    assert not store.is_invalid("S6") and store.is_invalid("S7")


def test_later_state_built_on_stale_upstream_is_stale_too(chain: StateStore) -> None:
    chain.commit(st("S7", [("ratio", "S3", 0.4), ("growth", "S7", 2)], [("S4", "progress")]))
    assert chain.is_invalid("S7") and chain.is_invalid("growth@S7")
    chain.commit(st("S8", [("revenue", "S6", 950), ("g2", "S8", 3)], [("S6", "branch")]))
    assert not chain.is_invalid("S8")


def test_invalidating_state_is_not_stale_through_its_own_upstream(tmp_path) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("a", "S1", 1)]))
    store.commit(st("S2", [("b", "S2", 2)], [("S1", "progress")]))
    store.commit(st("S3", [("a", "S3", 5)], [("S2", "progress"), ("S1", "invalidate")]))
    assert store.invalidated_by("S3").states == ["S1", "S2"]
    assert not store.is_invalid("S3")


def test_current_version_and_lineage(chain: StateStore) -> None:
    assert chain.current_version("revenue") == "revenue@S6"
    assert chain.current_version("nope") is None
    lin = chain.lineage("revenue")
    assert [v.version for v in lin.versions] == ["revenue@S1", "revenue@S6"]
    assert lin.versions[0].read_by == ["S2"]
    assert [v.invalid for v in lin.versions] == [True, False]
    assert lin.versions[1].value == 950


def test_index_upstream_downstream(chain: StateStore) -> None:
    assert [e.id for e in chain.index()] == ["S1", "S2", "S3", "S4", "S5", "S6"]
    assert [e.id for e in chain.index(last=2)] == ["S5", "S6"]
    assert chain.index()[0].conclusions == ["S1 done"]
    assert chain.upstream("S6") == [("S1", RelationType.INVALIDATE)]
    assert sorted(chain.downstream("S1")) == [("S2", RelationType.PROGRESS), ("S6", RelationType.INVALIDATE)]
    assert chain.latest_id() == "S6"


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (st("S3", relations=[("S3", "progress")]), "itself"),
        (st("S3", relations=[("S9", "progress")]), "not a committed state"),
        (st("S3", [("revenue", "S2", 1)]), "no committed state defined that version"),
        (st("S2"), "ids must increase"),
    ],
)
def test_bad_commits_are_refused_and_write_nothing(tmp_path, state: AnalyticalState, message: str) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("revenue", "S1", 1)]))
    store.commit(st("S2", [("cost", "S2", 1)]))
    before = [store.raw_record(s) for s in store.ids()]
    with pytest.raises(StoreError, match=message):
        store.commit(state)
    assert [store.raw_record(s) for s in store.ids()] == before
    assert store.downstream("S3") == [] and store.upstream("S3") == []


def test_committed_records_are_immutable_and_survive_reopen(tmp_path, chain: StateStore) -> None:
    raw = {s: chain.raw_record(s) for s in chain.ids()}
    path = chain.path
    chain.close()
    again = StateStore(path)
    assert {s: again.raw_record(s) for s in again.ids()} == raw
    assert again.load("S3").used_variables[1].key == "ratio@S3"
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises ValidationError on a frozen model
        again.load("S3").issue = "changed"  # type: ignore[misc]


def test_reserved_ids_are_never_reused(tmp_path) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    assert store.reserve_id() == "S1"
    assert store.reserve_id() == "S2"  # S1 was abandoned
    store.commit(st("S2"))
    assert store.peek_next_id() == "S3"
    with pytest.raises(StoreError, match="ids must increase"):
        store.commit(st("S1"))


def test_foreign_schema_version_is_refused(tmp_path) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    store._set_meta("schema_version", "stateguard/0")
    store.close()
    with pytest.raises(StoreError, match="schema_version"):
        StateStore(tmp_path / "s.sqlite")


def test_open_read_only_reads_without_writing(tmp_path: Path) -> None:
    import os

    from stateguard.store import StoreError

    path = tmp_path / "states.sqlite"
    writer = StateStore(path)
    writer.close()
    before = sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns
    reader = StateStore.open_read_only(path)
    assert reader.ids() == []
    reader.close()
    assert (sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns) == before  # nothing created or touched
    with pytest.raises(StoreError, match="no state store here"):
        StateStore.open_read_only(tmp_path / "missing.sqlite")
    (tmp_path / "junk.sqlite").write_text("not a database")
    with pytest.raises(StoreError, match="not a StateGuard state store"):
        StateStore.open_read_only(tmp_path / "junk.sqlite")


def test_commits_never_checkpoint_the_wal_themselves(tmp_path: Path) -> None:
    """Automatic checkpoints are off on the writer's connection; a background connection folds the
    log in, so no commit pays for copying the WAL back (the old p99)."""
    import time

    store = StateStore(tmp_path / "s.sqlite")
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    assert store._wal is not None
    store._wal.every = 5
    for k in range(1, 13):
        store.commit(st(f"S{k}", [(f"v{k}", f"S{k}", k)]))
    deadline = time.monotonic() + 20
    while store._wal.checkpoints == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store._wal.checkpoints >= 1
    store.close()
    assert not (tmp_path / "s.sqlite-wal").exists()  # the last close still folds the log in
    assert StateStore.open_read_only(tmp_path / "s.sqlite").ids() == [f"S{k}" for k in range(1, 13)]


def test_a_second_connection_sees_fresh_heads(tmp_path: Path) -> None:
    """The writer keeps the latest id, the count and the next id in memory; a commit made through
    another connection to the same file must still show up."""
    a = StateStore(tmp_path / "s.sqlite")
    a.commit(st("S1"))
    assert (a.latest_id(), len(a), a.peek_next_id()) == ("S1", 1, "S2")
    b = StateStore(tmp_path / "s.sqlite")
    b.commit(st("S2", relations=[("S1", "progress")]))
    assert b.reserve_id() == "S3"
    assert (a.latest_id(), len(a), a.peek_next_id()) == ("S2", 2, "S4")
    b.close()
    a.close()


def test_the_index_reads_only_new_commits_and_sees_another_connections(tmp_path: Path) -> None:
    """The index is kept between calls (the harness asks at every activation); it must still list
    every commit, in order, whichever connection made it, and `last` must slice as LIMIT did."""
    a = StateStore(tmp_path / "s.sqlite")
    assert a.index() == [] and a.index(last=3) == []
    a.commit(st("S1", issue="first"))
    a.commit(st("S2", relations=[("S1", "progress")]))
    assert [e.id for e in a.index()] == ["S1", "S2"]
    queries: list[str] = []
    a._db.set_trace_callback(queries.append)
    assert [e.id for e in a.index(last=5)] == ["S1", "S2"]
    assert not [q for q in queries if "FROM states" in q]  # nothing new: no read of the table
    b = StateStore(tmp_path / "s.sqlite")
    b.commit(st("S3", relations=[("S2", "progress")]))
    assert [e.id for e in a.index()] == ["S1", "S2", "S3"]
    assert [q for q in queries if "FROM states WHERE num >" in q]  # only the rows after the kept ones
    assert [e.id for e in a.index(last=2)] == ["S2", "S3"] and a.index(last=0) == []
    assert a.index()[0] == IndexEntry(id="S1", issue="first", conclusions=["S1 done"])
    reopened = StateStore.open_read_only(tmp_path / "s.sqlite")
    assert reopened.index() == a.index()
    a._db.set_trace_callback(None)
    b.close()
    a.close()


def test_load_hands_out_the_state_as_its_row_reads(tmp_path: Path) -> None:
    """Committed states are kept parsed after a load or a commit: a kept state must equal what its
    row parses to, for every kind of value, and a caller's object is never the one kept."""
    store = StateStore(tmp_path / "s.sqlite")
    values = [3, 2.5, "text", True, None, float("nan"), (1, 2), [1, 2], {"a": [1]}]
    mine = st("S1", [(f"v{k}", "S1", v) for k, v in enumerate(values)])
    store.commit(mine)
    store.commit(st("S2", [("w", "S2", 1)], relations=[("S1", "progress")]))
    for sid in ("S1", "S2"):
        parsed = AnalyticalState.model_validate_json(store.raw_record(sid))
        loaded = store.load(sid)
        assert loaded.canonical_json() == parsed.canonical_json()  # text, so NaN compares too
        assert store.load(sid) is loaded  # parsed once, then kept
    assert store.load("S1") is not mine
    assert [v.value for v in store.load("S1").used_variables][:5] == values[:5]
    assert store.load("S1").used_variables[6].value == [1, 2]  # the tuple as JSON reads it back
    with pytest.raises(KeyError, match="no committed state 'S9'"):
        store.load("S9")
    assert "S2" in store and "S9" not in store
    store.close()


def test_a_committed_state_is_kept_apart_from_the_callers_lists(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "s.sqlite")
    state = st("S1", [("v", "S1", 1)])
    store.commit(state)
    state.used_variables.append(VariableRef(name="late", version="S1", value=2))  # a caller's later edit
    assert [v.name for v in store.load("S1").used_variables] == ["v"]
    store.close()
    assert [v.name for v in StateStore(tmp_path / "s.sqlite").load("S1").used_variables] == ["v"]


def test_kept_states_are_bounded(tmp_path: Path) -> None:
    from stateguard.store import _LOADED_KEPT

    store = StateStore(tmp_path / "s.sqlite")
    for k in range(1, _LOADED_KEPT + 6):
        store.commit(st(f"S{k}", [(f"v{k}", f"S{k}", k)]))
    assert len(store._loaded) == _LOADED_KEPT
    assert "S1" not in store._loaded and f"S{_LOADED_KEPT + 5}" in store._loaded
    assert store.load("S1").id == "S1"  # dropped from memory, read again from its row
    store.close()


def test_kept_states_answer_version_questions_as_the_tables_do(tmp_path: Path) -> None:
    """`has_version` and the commit's reference checks read a kept state's record instead of the
    variables table: the answers, and the refusals, must be the table's."""
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("v", "S1", 1)]))
    store.commit(st("S2", [("v", "S1", 1), ("w", "S2", 2)], relations=[("S1", "progress")]))
    questions = [("v", "S1"), ("w", "S1"), ("v", "S2"), ("w", "S2"), ("v", "S3")]
    kept = [store.has_version(n, v) for n, v in questions]
    store._loaded.clear()
    assert kept == [store.has_version(n, v) for n, v in questions] == [True, False, False, True, False]
    store.load("S2")
    with pytest.raises(StoreError, match=r"S3 reads v@S2, but no committed state defined that version"):
        store.commit(st("S3", [("v", "S2", 1)], relations=[("S2", "progress")]))
    with pytest.raises(StoreError, match=r"S3 relates to S9, which is not a committed state"):
        store.commit(st("S3", relations=[("S9", "progress")]))
    store.commit(st("S3", [("w", "S2", 2)], relations=[("S2", "progress")]))
    assert store.ids() == ["S1", "S2", "S3"]
    store.close()


def test_reserving_an_id_writes_one_page(tmp_path: Path) -> None:
    """A reserved id is written at once, as one page of the log (its meta row), not two."""
    store = StateStore(tmp_path / "s.sqlite")
    wal = tmp_path / "s.sqlite-wal"
    page = store._db.execute("PRAGMA page_size").fetchone()[0]
    store.reserve_id()
    before = wal.stat().st_size
    assert store.reserve_id() == "S2"
    assert wal.stat().st_size - before == page + 24  # one WAL frame: a 24-byte header and the page
    store.close()
    assert StateStore(tmp_path / "s.sqlite").reserve_id() == "S3"


def test_a_commit_asks_nothing_of_an_empty_invalid_table(tmp_path: Path) -> None:
    """While no state was ever invalidated, a commit's staleness checks need no query, and the top
    committed number comes from the heads; once an Invalidate is committed (here through another
    connection, which only `PRAGMA data_version` reveals), reading a stale version must again
    make the reader stale."""
    a = StateStore(tmp_path / "s.sqlite")
    a.commit(st("S1", [("revenue", "S1", 1000)]))
    queries: list[str] = []
    a._db.set_trace_callback(queries.append)
    a.commit(st("S2", [("revenue", "S1", 1000), ("margin", "S2", 4)], [("S1", "progress")]))
    assert not [q for q in queries if "FROM invalid" in q or "MAX(num)" in q]
    a._db.set_trace_callback(None)
    b = StateStore(tmp_path / "s.sqlite")
    b.commit(st("S3", [("revenue", "S3", 950)], [("S1", "invalidate")]))
    b.close()
    a.commit(st("S4", [("margin", "S2", 4), ("ratio", "S4", 1)], [("S2", "progress")]))
    assert a.is_invalid("S4") and a.why_invalid("S4") == [("S3", "S1")]
    with pytest.raises(StoreError, match="ids must increase"):
        a.commit(st("S3", [("late", "S3", 1)]))
    a.close()


def test_a_committed_version_is_asked_of_the_table_once(tmp_path: Path) -> None:
    """A variable carried along unchanged is checked at every UPDATE and COMMIT: once a version is
    found committed the answer is remembered (a committed row is never deleted); a "no" is not,
    since a later commit may define it."""
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("revenue", "S1", 1000)]))
    store.commit(st("S2", [("x", "S2", 1)]))
    store._loaded.clear()  # as after many other states: S1's record no longer kept in memory
    queries: list[str] = []
    store._db.set_trace_callback(queries.append)
    assert store.has_version("revenue", "S1") and store.has_version("revenue", "S1")
    assert not store.has_version("margin", "S3") and not store.has_version("margin", "S3")
    assert len([q for q in queries if "FROM variables" in q]) == 3  # revenue once, margin twice
    store._db.set_trace_callback(None)
    store.commit(st("S3", [("margin", "S3", 4)]))
    store._loaded.clear()
    assert store.has_version("margin", "S3") and not store.has_version("margin", "S2")
    store.close()


def test_pinned_heads_check_other_connections_once_and_a_commit_checks_again(tmp_path: Path) -> None:
    """Inside `pinned_heads` (one harness action) the heads are checked against other connections
    once: later reads in the block see that view, even after another connection commits; a commit
    in the block still checks inside its transaction and refuses an id that is no longer new."""
    a = StateStore(tmp_path / "s.sqlite")
    a.commit(st("S1", [("revenue", "S1", 1000)]))
    b = StateStore(tmp_path / "s.sqlite")
    queries: list[str] = []
    a._db.set_trace_callback(queries.append)
    with a.pinned_heads():
        assert (a.peek_next_id(), a.latest_id(), len(a)) == ("S2", "S1", 1)
        b.commit(st("S2", relations=[("S1", "invalidate")]))
        assert (a.peek_next_id(), a.latest_id(), len(a)) == ("S2", "S1", 1)  # the block's view
        assert not a.is_invalid("S1")  # nothing was invalid in that view
        assert queries == ["PRAGMA data_version"]
        with pytest.raises(StoreError, match="ids must increase and S2 is already committed"):
            a.commit(st("S2"))
        assert (a.peek_next_id(), a.latest_id(), len(a)) == ("S3", "S2", 2)  # the commit's check
        assert a.is_invalid("S1") and a.is_invalid("revenue@S1")
    assert queries.count("PRAGMA data_version") == 2
    b.commit(st("S3", relations=[("S2", "progress")]))
    assert (a.peek_next_id(), a.latest_id(), len(a)) == ("S4", "S3", 3)  # after the block: checked again
    assert a.reserve_id() == "S4"
    a._db.set_trace_callback(None)
    b.close()
    a.close()


def test_is_invalid_asks_no_query_of_a_store_that_never_invalidated(tmp_path: Path) -> None:
    """While the `invalid` table is empty, `is_invalid` answers from the heads; an Invalidate
    committed through another connection must still be seen."""
    a = StateStore(tmp_path / "s.sqlite")
    a.commit(st("S1", [("revenue", "S1", 1000)]))
    queries: list[str] = []
    a._db.set_trace_callback(queries.append)
    assert not a.is_invalid("S1") and not a.is_invalid("revenue@S1")
    assert not [q for q in queries if "FROM invalid WHERE" in q]
    b = StateStore(tmp_path / "s.sqlite")
    b.commit(st("S2", [("revenue", "S2", 950)], [("S1", "invalidate")]))
    b.close()
    assert a.is_invalid("S1") and a.is_invalid("revenue@S1") and not a.is_invalid("revenue@S2")
    a._db.set_trace_callback(None)
    a.close()


def test_a_harness_action_checks_the_heads_once(tmp_path: Path) -> None:
    """OPEN asks the store for the next id three times and the latest id once, FINALIZE for the
    latest id and whether its upstream is stale: each action checks the heads once (the commit
    once more, inside its transaction), and a clean store is not asked about staleness."""
    from stateguard import Harness, HarnessConfig, WorkerStep
    from stateguard.actions import RawAction

    store = StateStore(tmp_path / "s.sqlite")
    store.commit(st("S1", [("revenue", "S1", 1000)]))
    h = Harness(store, HarnessConfig(regime="turn_aligned"))
    h.turn_start = 0
    queries: list[str] = []
    store._db.set_trace_callback(queries.append)
    sent: dict[str, list[str]] = {}
    actions = [
        ("OPEN_STATE", {"issue": "next", "relations": [{"related_state_id": "S1"}]}),
        ("UPDATE_STATE", {"used_variables": [{"name": "revenue", "version": "S1", "value": 1000}]}),
        ("FINALIZE_RELATIONS", {"mode": "confirm"}),
        ("COMMIT_STATE", {}),
    ]
    for name, arguments in actions:
        if name == "UPDATE_STATE":
            h.record_step(WorkerStep(index=0, action="x = 1", output="1"))
        queries.clear()
        assert h.apply(RawAction(name=name, arguments=arguments)).accepted
        sent[name] = list(queries)
    store._db.set_trace_callback(None)
    assert {name: q.count("PRAGMA data_version") for name, q in sent.items()} == {
        "OPEN_STATE": 1,
        "UPDATE_STATE": 0,
        "FINALIZE_RELATIONS": 1,
        "COMMIT_STATE": 1,
    }
    assert sent["FINALIZE_RELATIONS"] == ["PRAGMA data_version"]
    state = store.load("S2")
    assert [(r.type.value, r.related_state_id) for r in state.relations] == [("progress", "S1")]
    assert [v.key for v in state.used_variables] == ["revenue@S1"]
    assert (store.latest_id(), store.peek_next_id()) == ("S2", "S3")
    store.close()


def test_pinned_heads_nest_and_end_on_an_exception(tmp_path: Path) -> None:
    """`pinned_heads()` (a class now, not a generator): the heads stay pinned until the outermost
    block ends, also when a block ends with an exception, and are checked again after it."""
    a = StateStore(tmp_path / "s.sqlite")
    b = StateStore(tmp_path / "s.sqlite")
    with a.pinned_heads():
        assert a.latest_id() is None
        b.commit(st("S1", [("revenue", "S1", 1000)]))
        with pytest.raises(RuntimeError), a.pinned_heads():
            assert a.latest_id() is None
            raise RuntimeError("boom")
        assert a.latest_id() is None  # still the outer block's view
    assert a._pins == 0 and a.latest_id() == "S1"
    b.close()
    a.close()
