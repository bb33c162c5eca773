"""The store's layout 2 (stateguard/store_schema.py): a store written by the previous layout opens
migrated and answers every query as a store written natively; a commit touches one page per table;
every runtime query goes through a key."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from stateguard.state import AnalyticalState, Conclusion, Relation, VariableRef
from stateguard.store import StateStore, StoreCorrupt, StoreError
from tests.stateguard import store_scenario

FIXTURE = Path(__file__).parent / "fixtures" / "store-layout1"  # written by 27ba99a (store_scenario.py)
NAMES = ["revenue", "sales", "margin", "ratio", "note", "nan", "both", "late", "nope"]
OLD_TABLES = {"digests", "v1_states", "v1_relations", "v1_variables"}


def _layout1(tmp_path: Path) -> Path:
    folder = tmp_path / "old"
    shutil.copytree(FIXTURE, folder)
    return folder / "states.sqlite"


def _tables(path: Path) -> set[str]:
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        db.close()


def _answers(store: StateStore) -> dict[str, object]:
    """Everything a reader can ask, as plain values (NaN compared through the record's text)."""
    ids = store.ids()
    return {
        "ids": ids,
        "len": len(store),
        "latest": store.latest_id(),
        "next": store.peek_next_id(),
        "records": [store.raw_record(s) for s in ids],
        "index": [e.model_dump() for e in store.index()],
        "upstream": {s: store.upstream(s) for s in [*ids, "S4", "S99"]},
        "downstream": {s: store.downstream(s) for s in [*ids, "S4", "S99"]},
        "current": {n: store.current_version(n) for n in NAMES},
        "lineage": {
            n: [(v.version, repr(v.value), v.read_by, v.invalid) for v in store.lineage(n).versions]
            for n in NAMES
        },
        "has": {(n, s): store.has_version(n, s) for n in NAMES for s in [*ids, "S4", "bad"]},
        "invalid": store.invalid_states(),
        "by": {s: store.invalidated_by(s).model_dump() for s in ids},
        "why": {k: store.why_invalid(k) for k in [*ids, "revenue@S1", "sales@S1", "late@S8"]},
        "contains": [s in store for s in [*ids, "S4", "S0", "x", 3]],
    }


@pytest.fixture()
def native(tmp_path: Path) -> StateStore:
    store = StateStore(tmp_path / "native" / "states.sqlite")
    store_scenario.write(store)
    return store


def test_the_fixture_is_a_layout_1_store() -> None:
    tables = _tables(FIXTURE / "states.sqlite")
    assert {"states", "relations", "variables", "digests", "invalid", "meta"} <= tables


def test_a_layout_1_store_is_migrated_on_open_and_answers_as_a_native_one(
    tmp_path: Path, native: StateStore
) -> None:
    path = _layout1(tmp_path)
    store = StateStore(path)
    expected = _answers(native)
    assert expected["invalid"] == ["S1", "S2", "S5", "S3", "S6", "S8"]  # the closure's order, kept
    assert _answers(store) == expected
    assert store._meta("store_layout") == "2"
    # It keeps working as the native store does: the next commit, and its staleness.
    for s in (native, store):
        sid = s.reserve_id()
        s.commit(
            AnalyticalState(
                id=sid,
                issue="after the migration",
                used_variables=[
                    VariableRef(name="ratio", version="S3", value=[0.4, None, True]),
                    VariableRef(name="revenue", version=sid, value=1),
                ],
                conclusions=[Conclusion(text="x")],
                relations=[
                    Relation(type="progress", related_state_id="S8"),
                    Relation(type="invalidate", related_state_id="S7"),
                ],
            )
        )
    assert _answers(store) == _answers(native)
    native.close()
    store.close()
    assert not _tables(path) & OLD_TABLES
    again = StateStore(path)  # opens as layout 2 now, digests and counter checked
    assert again.ids() == ["S1", "S2", "S3", "S5", "S6", "S7", "S8", "S9"]
    again.close()
    reader = StateStore.open_read_only(path)
    assert reader.is_invalid("S3") and reader.current_version("revenue") == "revenue@S9"
    reader.close()


def test_a_layout_1_store_opens_read_only_without_being_written(tmp_path: Path, native: StateStore) -> None:
    path = _layout1(tmp_path)
    before = sorted(os.listdir(path.parent)), path.read_bytes(), path.stat().st_mtime_ns
    reader = StateStore.open_read_only(path)
    assert _answers(reader) == _answers(native)
    reader.close()
    assert (sorted(os.listdir(path.parent)), path.read_bytes(), path.stat().st_mtime_ns) == before
    assert "digests" in _tables(path)


def test_a_damaged_layout_1_store_is_refused_and_not_migrated(tmp_path: Path) -> None:
    path = _layout1(tmp_path)
    db = sqlite3.connect(path)
    db.execute("UPDATE variables SET value='[999]' WHERE state_id='S3'")
    db.commit()
    db.close()
    damaged = path.read_bytes()
    for opener in (StateStore, StateStore.open_read_only):
        with pytest.raises(StoreCorrupt, match=r"committed state\(s\) S3 changed on disk after their commit"):
            opener(path)
    assert path.read_bytes() == damaged and "digests" in _tables(path)


def test_a_migration_that_does_not_carry_every_row_over_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digests are checked again on the new tables: a state whose rows changed on the way
    stops the migration and the store stays as it was."""
    import stateguard.store_schema as schema

    path = _layout1(tmp_path)
    lossy = [s.replace("ORDER BY rowid) - 1, value", "ORDER BY rowid) - 1, 'lost'") for s in schema._MIGRATE]
    monkeypatch.setattr(schema, "_MIGRATE", lossy)
    with pytest.raises(StoreCorrupt, match=r"committed state\(s\) S1, S2, S3, S5, S6 and 2 more changed"):
        StateStore(path)
    monkeypatch.undo()
    assert "digests" in _tables(path) and "v1_states" not in _tables(path)
    assert StateStore(path).ids() == ["S1", "S2", "S3", "S5", "S6", "S7", "S8"]


def test_an_unknown_layout_is_refused_with_the_file_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "states.sqlite"
    store = StateStore(path)
    store._set_meta("store_layout", "3")
    store.close()
    for opener in (StateStore, StateStore.open_read_only):
        with pytest.raises(
            StoreError, match=r"states\.sqlite: store layout '3' .* a newer StateGuard wrote it"
        ):
            opener(path)


def test_a_commit_writes_one_page_per_table(tmp_path: Path) -> None:
    """A state with a relation and two variables is one row in each of three b-trees (layout 1
    wrote twelve pages for it: three tables with five indexes, and the digest with its key)."""
    store = StateStore(tmp_path / "s.sqlite")
    store.commit(
        AnalyticalState(id="S1", issue="a", used_variables=[VariableRef(name="v", version="S1", value=1)])
    )
    page = store._db.execute("PRAGMA page_size").fetchone()[0]
    wal = tmp_path / "s.sqlite-wal"
    before = wal.stat().st_size
    store.commit(
        AnalyticalState(
            id="S2",
            issue="b",
            used_variables=[
                VariableRef(name="v", version="S1", value=1),
                VariableRef(name="w", version="S2", value=2),
            ],
            relations=[Relation(type="progress", related_state_id="S1")],
        )
    )
    assert (wal.stat().st_size - before) / (page + 24) == 3  # WAL frames: a 24-byte header and a page
    store.close()


def test_every_runtime_query_goes_through_a_key(tmp_path: Path, native: StateStore) -> None:
    """The statements a harness cycle, the readers and an invalidation send: none scans a table,
    apart from the count of states (read again only when another connection committed) and
    `ids()`, whose answer is the whole table."""
    from stateguard import Harness, HarnessConfig, WorkerStep
    from stateguard.actions import RawAction

    sent: list[str] = []
    native._db.set_trace_callback(sent.append)
    h = Harness(native, HarnessConfig(regime="turn_aligned"))
    h.turn_start = 0
    for name, arguments in [
        ("OPEN_STATE", {"issue": "next", "relations": [{"related_state_id": "S8"}]}),
        ("UPDATE_STATE", {"used_variables": [{"name": "late", "version": "S8", "value": -1}]}),
        ("FINALIZE_RELATIONS", {"mode": "confirm"}),
        ("COMMIT_STATE", {}),
    ]:
        if name == "UPDATE_STATE":
            h.record_step(WorkerStep(index=0, action="x = 1", output="1"))
        assert h.apply(RawAction(name=name, arguments=arguments)).accepted
    native._loaded.clear()
    _answers(native)
    sid = native.reserve_id()
    native.commit(
        AnalyticalState(id=sid, issue="r", relations=[Relation(type="invalidate", related_state_id="S2")])
    )
    native._db.set_trace_callback(None)
    assert native.invalidated_by(sid).states == ["S2", "S3", "S8", "S6", "S9", "S7"]  # breadth first
    plans = {}
    for sql in {s for s in sent if s.lstrip().upper().startswith(("SELECT", "INSERT", "UPDATE"))}:
        plans[sql] = [str(r[3]) for r in native._db.execute(f"EXPLAIN QUERY PLAN {sql}")]
    scans = {sql: plan for sql, plan in plans.items() if any(p.startswith("SCAN") for p in plan)}
    assert [sql for sql in scans if "COUNT(*) FROM states" not in sql] == [
        "SELECT num FROM states ORDER BY num"
    ]
    assert any("FROM variables" in sql for sql in plans) and any("FROM relations" in sql for sql in plans)
    native.close()


@pytest.mark.parametrize(
    "value",
    [
        3,
        -(2**70),
        2.5,
        float("nan"),
        float("-inf"),
        True,
        None,
        'naïve ☃ \t"q"',
        (1, "a"),
        {"z": 1, "a": [1.0, {"y": None, "b": "é"}]},
        {"2": "b", "10": "a"},
        Path("written as text"),
        [Path("x"), {"k": object.__name__}],
    ],
)
def test_a_value_is_written_as_json_dumps_wrote_it(value: object) -> None:
    import json

    from stateguard.store_schema import value_text

    assert value_text(value) == json.dumps(value, sort_keys=True, default=str)


def test_a_record_is_its_canonical_json_and_a_cycle_still_fails(native: StateStore) -> None:
    import json

    from stateguard.store_schema import value_text

    for sid in native.ids():
        assert native.raw_record(sid) == native.load(sid).canonical_json()
    loop: list[object] = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        value_text({"a": loop})
    assert value_text({"b": [1, 2], "a": 1}) == json.dumps({"b": [1, 2], "a": 1}, sort_keys=True)
    native.close()


def test_a_write_transaction_commits_or_rolls_back_whole(tmp_path: Path) -> None:
    """`immediate_transaction` (a class now, not a generator): it holds the write lock from the
    start, commits the block's writes, and on any exception rolls them back and lets it through."""
    from stateguard.store import immediate_transaction

    db = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None)
    db.execute("CREATE TABLE t(x)")
    with immediate_transaction(db) as conn:
        assert conn is db and db.in_transaction
        other = sqlite3.connect(tmp_path / "t.sqlite", isolation_level=None, timeout=0)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")  # the write lock is taken at BEGIN, not at the first write
        db.execute("INSERT INTO t VALUES(1)")
    assert not db.in_transaction
    for error in (KeyError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)), immediate_transaction(db):
            db.execute("INSERT INTO t VALUES(2)")
            raise error
        assert not db.in_transaction
    assert db.execute("SELECT x FROM t").fetchall() == [(1,)]
    other.close()
    db.close()


def test_the_conclusions_column_is_json_dumps_of_their_texts(native: StateStore) -> None:
    import json

    db = native._db
    for conclusions, record in db.execute("SELECT conclusions, record FROM states"):
        assert conclusions == json.dumps([c["text"] for c in json.loads(record)["conclusions"]])
    native.close()
