"""A DuckDB connection in a checkpoint is a copy of its tables and views (sandbox/duckdb_copy.py)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.sandbox.duckdb_copy import ConnectionCopy, copy_connection

ROOMY = SandboxLimits(cpu_seconds_per_cell=20, wall_seconds_per_cell=30, memory_mb=1024, grace_seconds=2)

TYPED = """
CREATE TABLE t AS SELECT range AS i, range::HUGEINT AS h, (range / 4)::DECIMAL(10, 2) AS d,
    'x' || range AS s, DATE '2020-01-01' + range::INT AS day, uuid() AS u,
    (CASE WHEN range % 2 = 0 THEN 'a' ELSE 'b' END)::ENUM('a', 'b') AS e, [range, 1] AS l,
    {'k': range} AS st, '{"a": 1}'::JSON AS j, NULL::DOUBLE AS n
FROM range(7) ORDER BY range DESC
"""


def _copy(con: duckdb.DuckDBPyConnection) -> ConnectionCopy:
    copy, why = copy_connection(con)
    assert copy is not None, why
    return copy


def test_a_copy_rebuilds_tables_views_types_and_row_order() -> None:
    con = duckdb.connect(config={"threads": 1})
    con.execute(TYPED)
    con.execute("CREATE VIEW odd AS SELECT i, e FROM t WHERE i % 2 = 1")
    con.execute("CREATE VIEW odd_count AS SELECT count(*) AS n FROM odd")
    con.execute("CREATE TABLE habits AS SELECT {'habit': 'tea', 'bits': 2} AS h")  # no BIT type in it
    back = pickle.loads(pickle.dumps(_copy(con))).reopen()
    assert back.sql("SELECT h.habit, h.bits FROM habits").fetchall() == [("tea", 2)]
    assert back.sql("DESCRIBE t").fetchall() == con.sql("DESCRIBE t").fetchall()
    assert (
        back.sql("SELECT * EXCLUDE (n) FROM t").fetchall()
        == con.sql("SELECT * EXCLUDE (n) FROM t").fetchall()
    )
    assert [r[0] for r in back.sql("SELECT i FROM t").fetchall()] == [6, 5, 4, 3, 2, 1, 0]
    assert back.sql("SELECT * FROM odd_count").fetchall() == [(3,)]
    assert back.sql("SELECT current_setting('threads')").fetchall() == [(1,)]


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        ("CREATE TEMP TABLE tmp AS SELECT 1 AS x", "temporary or registered"),
        ("CREATE SEQUENCE seq", "sequences"),
        ("CREATE MACRO twice(x) AS x * 2", "macros"),
        ("CREATE TABLE k (id INTEGER PRIMARY KEY)", "constraints"),
        ("CREATE TABLE dflt (id INTEGER DEFAULT 3)", "defaults"),
        ("CREATE SCHEMA other", "other schemas"),
        ("SET default_order = 'desc'", "settings differ"),
        ("CREATE TABLE b AS SELECT '101'::BIT AS bits", "does not survive a copy"),
        ("ATTACH ':memory:' AS second", "not one in-memory database"),
    ],
)
def test_what_a_copy_could_not_rebuild_exactly_is_refused(setup: str, why: str) -> None:
    con = duckdb.connect(config={"threads": 1})
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.execute(setup)
    copy, reason = copy_connection(con)
    assert copy is None and why in reason


def test_a_cursor_reads_the_settings_that_decide_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cursor does not inherit the progress bar its connection detected (a fresh connection may
    turn it on, a cursor does not): display settings are no reason to refuse a copy."""
    from stateguard.sandbox import duckdb_copy

    opened_now = duckdb_copy._fresh_settings

    def other_progress_bar(threads: str) -> dict[str, object]:
        settings = dict(opened_now(threads))
        settings["enable_progress_bar"] = "true" if settings["enable_progress_bar"] == "false" else "false"
        return settings

    monkeypatch.setattr(duckdb_copy, "_fresh_settings", other_progress_bar)
    con = duckdb.connect(config={"threads": 1})
    con.execute("CREATE TABLE t AS SELECT 7 AS x")
    con.execute("SELECT 42")  # busy: read through a cursor
    assert _copy(con).reopen().sql("SELECT x FROM t").fetchall() == [(7,)]
    assert con.fetchall() == [(42,)]


def test_a_registered_frame_and_an_unfinished_result_are_refused() -> None:
    import pandas as pd

    con = duckdb.connect(config={"threads": 1})
    con.register("frame", pd.DataFrame({"a": [1]}))
    assert copy_connection(con)[0] is None
    con.unregister("frame")
    assert copy_connection(con)[0] is not None
    con.execute("CREATE TABLE t AS SELECT 7 AS x")
    con.execute("SELECT 42")  # its result not fetched yet: the copy reads the catalog through a cursor
    copy = _copy(con)
    assert copy.reopen().sql("SELECT x FROM t").fetchall() == [(7,)]
    assert con.fetchall() == [(42,)]  # the user's pending result is untouched


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[SandboxWorkspace]:
    (tmp_path / "task").mkdir()
    workspace = SandboxWorkspace(tmp_path / "task", tmp_path / "scratch", tmp_path / "ckpt", ROOMY)
    yield workspace
    workspace.close()


def test_a_restore_rewinds_the_tables_a_turn_rebuilt_from_themselves(ws: SandboxWorkspace) -> None:
    setup = (
        "import duckdb\ncon = duckdb.connect(config={'threads': 1})\nsame = con\n"
        "con.execute('CREATE TABLE panel AS SELECT range AS g FROM range(10)')\nn = 10\n"
        # one row fetched of ten: the connection holds an unfinished result (read through a cursor)
        "first = con.execute('SELECT g FROM panel ORDER BY g').fetchone()"
    )
    assert ws.run_cell(setup).ok
    ws.snapshot("per-state")  # the harness's own checkpoints do not copy: the connection stays live
    plain = ws.checkpoint_info("per-state")
    assert plain is not None and set(plain.skipped) == {"con", "same"}
    ws.snapshot("before", copy_connections=True)
    info = ws.checkpoint_info("before")
    assert info is not None and not info.skipped and {"con", "same", "n"} <= set(info.saved)
    rebuild = "con.execute('CREATE OR REPLACE TABLE panel AS SELECT *, g >= 7 AS fast FROM panel WHERE g > 2')\nn = 7"
    assert ws.run_cell(rebuild).ok
    ws.restore("before")
    after = ws.run_cell(
        "con.sql('SELECT count(*), max(g) FROM panel').fetchall(), [c[0] for c in con.sql('DESCRIBE panel').fetchall()], n, same is con"
    )
    assert after.ok, after.error
    assert after.value == "([(10, 9)], ['g'], 10, True)"
    # the redo of the rebuild now reads the table as it was
    assert ws.run_cell(rebuild).ok
    assert ws.run_cell("con.sql('SELECT count(*), count_if(fast) FROM panel').fetchall()").value == "[(7, 3)]"


def test_two_connections_are_not_copied_and_stay_live(ws: SandboxWorkspace) -> None:
    setup = (
        "import duckdb\ncon = duckdb.connect()\ncur = con.cursor()\n"
        "con.execute('CREATE TABLE t AS SELECT 1 AS x')"
    )
    assert ws.run_cell(setup).ok
    ws.snapshot("c", copy_connections=True)
    info = ws.checkpoint_info("c")
    assert info is not None and set(info.skipped) == {"con", "cur"}
    assert "2 connections" in info.skipped["con"]
    assert ws.run_cell("con.execute('CREATE OR REPLACE TABLE t AS SELECT 2 AS x')").ok
    ws.restore("c")
    # kept live, not rolled back (as every connection in a checkpoint taken without copies)
    assert ws.run_cell("cur.sql('SELECT x FROM t').fetchall()").value == "[(2,)]"


def test_a_copying_checkpoint_survives_a_replay_after_the_kernel_dies(ws: SandboxWorkspace) -> None:
    """The history records that the snapshot copied the connection, so a replay retakes it as one."""
    setup = "import duckdb\ncon = duckdb.connect()\ncon.execute('CREATE TABLE t AS SELECT range AS x FROM range(3)')"
    assert ws.run_cell(setup).ok
    ws.snapshot("save", copy_connections=True)
    assert ws.run_cell("con.execute('CREATE OR REPLACE TABLE t AS SELECT x * 10 AS x FROM t')").ok
    ws.restore("save")
    ws.kernel.kill()
    # replayed: the cell, the snapshot (retaken, copying again), the rebuild, the restore of the retake
    after = ws.run_cell("con.sql('SELECT sum(x) FROM t').fetchall()")
    assert after.value == "[(3,)]", after
    assert any("rebuilt by replaying" in note for note in after.notes), after.notes
    assert ws.degraded_reasons == []
