"""The sandbox kernel's variable listing: after a cell only the values that may have changed are
described again (`SummaryCache` with `stateguard.value_version` tokens), every change is still
seen, and the parent re-validates only the entries that differ from the last listing's
(`replies.ListingMemo`).

    .venv/bin/python -m pytest -q tests/stateguard/sandbox/test_listing.py
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.sandbox.replies import ListingMemo, MalformedReply, validate
from stateguard.workspace import VariableSummary

LIMITS = SandboxLimits(cpu_seconds_per_cell=20, wall_seconds_per_cell=30, memory_mb=1024, grace_seconds=5)

# Counts how often the kernel renders a DataFrame (a listing's `head` is `repr(df.head())`).
SETUP = """
import numpy as np
import pandas as pd
renders = [0]
_real_repr = pd.DataFrame.__repr__
def _counting_repr(self):
    renders[0] += 1
    return _real_repr(self)
pd.DataFrame.__repr__ = _counting_repr
frames = 5
for i in range(frames):
    globals()[f"f{i}"] = pd.DataFrame({"a": np.arange(1000) + i, "b": np.ones(1000)})
"""


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxWorkspace]:
    root = tmp_path_factory.mktemp("listing")
    with SandboxWorkspace(None, root / "scratch", root / "ckpt", LIMITS) as workspace:
        assert workspace.run_cell(SETUP).ok
        workspace.list_variables()
        yield workspace


def _hashes(ws: SandboxWorkspace) -> dict[str, str]:
    return {v.name: v.content_hash for v in ws.list_variables()}


def test_a_cell_that_changes_one_scalar_does_not_describe_the_frames_again(ws: SandboxWorkspace) -> None:
    assert ws.run_cell("renders[0] = 0\ncounter = 1").ok
    ws.list_variables()
    # Before the cache every listing rendered all five frames again.
    assert ws.get_value("renders") == [0]
    assert ws.run_cell("renders[0] = 0\nf2 = f2 + 1").ok
    ws.list_variables()
    assert ws.get_value("renders") == [1]  # only the frame the cell rebound


def test_a_frame_a_cell_wrote_is_hashed_once_for_the_replay_check_and_the_listing(
    ws: SandboxWorkspace,
) -> None:
    counting = (
        "hashings = [0]\n_real_hash = pd.util.hash_pandas_object\n"
        "def _counting_hash(*a, **k):\n    hashings[0] += 1\n    return _real_hash(*a, **k)\n"
        "pd.util.hash_pandas_object = _counting_hash\n"
    )
    assert ws.run_cell(counting).ok
    ws.list_variables()
    assert ws.run_cell("hashings[0] = 0\nnew = f0 * 2").ok  # the replay check hashes `new` ...
    listed = {v.name: v.content_hash for v in ws.list_variables()}  # ... and the listing reuses it
    assert ws.get_value("hashings") == [1]
    assert listed["new"] == ws.get_value("new")["hash"]
    assert ws.run_cell("pd.util.hash_pandas_object = _real_hash").ok


@pytest.mark.parametrize(
    ("cell", "changed"),
    [
        ("g = f0\ng.loc[0, 'a'] = -5", "f0"),  # through an alias the cell names instead
        ("def bump():\n    f1.loc[3, 'b'] = 9.5\nbump()", "f1"),  # inside a function
        ("box = [f3]\nbox[0]['c'] = 1", "f3"),  # through a container: a new column
        ("f4.index = f4.index + 1", "f4"),  # the index replaced in place
    ],
)
def test_every_in_place_change_shows_in_the_next_listing(
    ws: SandboxWorkspace, cell: str, changed: str
) -> None:
    before = _hashes(ws)
    assert ws.run_cell(cell).ok
    after = _hashes(ws)
    assert after[changed] != before[changed]
    assert {k: after[k] for k in before if k.startswith("f") and k != changed} == {
        k: v for k, v in before.items() if k.startswith("f") and k != changed
    }
    # The reused and the fresh summaries agree (`get_value` may reuse the listing's hash, so the
    # fresh one is computed by a cell).
    assert after[changed] == ws.get_value(changed)["hash"] == _fresh_hash(ws, changed)


def _fresh_hash(ws: SandboxWorkspace, name: str) -> str:
    cell = f"from stateguard.dataflow.change import content_hash as _ch\n_fresh = _ch({name})"
    assert ws.run_cell(cell).ok
    fresh = ws.get_value("_fresh")
    assert ws.run_cell("del _fresh, _ch").ok
    return str(fresh)


def test_get_value_of_a_frame_the_listing_hashed_does_not_hash_it_again(ws: SandboxWorkspace) -> None:
    counting = (
        "hashings = [0]\n_real_hash = pd.util.hash_pandas_object\n"
        "def _counting_hash(*a, **k):\n    hashings[0] += 1\n    return _real_hash(*a, **k)\n"
        "pd.util.hash_pandas_object = _counting_hash\n"
        "seen = f0 + 0\n"
    )
    assert ws.run_cell(counting).ok
    listed = {v.name: v.content_hash for v in ws.list_variables()}
    assert ws.run_cell("hashings[0] = 0").ok
    value = ws.get_value("seen")
    assert value["hash"] == listed["seen"] and value["shape"] == [1000, 2]
    assert ws.get_value("hashings") == [0]  # the listing's hash, for the same unchanged frame
    # Changed in place since the listing: hashed afresh, and the new hash is the true one.
    assert ws.run_cell("hashings[0] = 0\nseen.loc[0, 'a'] = -1").ok
    changed = ws.get_value("seen")["hash"]
    assert ws.get_value("hashings") == [1]
    assert changed != listed["seen"]
    # Rebound to another (equal) object: not the listed one, so hashed again, to the same digest.
    assert ws.run_cell("hashings[0] = 0\nseen = seen.copy()").ok
    assert ws.get_value("seen")["hash"] == changed
    assert ws.get_value("hashings") == [1]
    assert ws.run_cell("pd.util.hash_pandas_object = _real_hash\ndel seen").ok
    assert _fresh_hash(ws, "f0") == listed["f0"]


DB_FRAME = """
import duckdb
_con = duckdb.connect()
flights = _con.execute(
    "SELECT i AS n, CASE WHEN i % 7 = 0 THEN NULL ELSE i END AS delay, 'c' || (i % 5) AS carrier, "
    "TIMESTAMP '2013-01-01' + INTERVAL (i) MINUTE AS time_hour FROM range(3000) t(i)"
).df()
_con.close()
del _con
"""


def test_a_database_frame_with_timestamps_and_nulls_is_hashed_once_per_version(ws: SandboxWorkspace) -> None:
    """A frame read from a database (a timestamp column, a nullable integer column, as the nyc
    tasks' frames) is hashed once by the cell that wrote it; the listings and `get_value` after
    it reuse that hash until it changes, and every change is seen."""
    counting = (
        "hashings = [0]\n_real_hash = pd.util.hash_pandas_object\n"
        "def _counting_hash(*a, **k):\n    hashings[0] += 1\n    return _real_hash(*a, **k)\n"
        "pd.util.hash_pandas_object = _counting_hash\n"
    )
    assert ws.run_cell(counting).ok
    assert ws.run_cell("hashings[0] = 0\n" + DB_FRAME).ok
    kinds = ws.run_cell("kinds = sorted(type(b.values).__name__ for b in flights._mgr.blocks)")
    assert kinds.ok
    assert {"DatetimeArray", "IntegerArray"} <= set(ws.get_value("kinds"))
    first = _hashes(ws)["flights"]
    ws.list_variables()
    assert ws.run_cell("unrelated = 2").ok
    assert _hashes(ws)["flights"] == first
    assert ws.get_value("flights")["hash"] == first
    assert ws.get_value("hashings") == [1]  # the cell's replay hash, reused by 3 listings and a read
    # A write into the timestamp column, then into the nullable one: each a new hash, the true one.
    seen = {first}
    for cell in (
        "flights.loc[5, 'time_hour'] = pd.Timestamp('2020-02-02')",
        "flights.loc[7, 'delay'] = 99",  # a NULL becomes a number: the mask changes
        "col = flights['delay'].array\ncol[1] = -1",  # through an alias of the array
    ):
        assert ws.run_cell(cell).ok, cell
        listed = _hashes(ws)["flights"]
        assert listed not in seen, cell
        assert listed == _fresh_hash(ws, "flights"), cell
        seen.add(listed)
    assert ws.run_cell("pd.util.hash_pandas_object = _real_hash\ndel flights, kinds, unrelated").ok


def test_the_listing_cache_keeps_no_value_alive_that_a_cell_let_go(ws: SandboxWorkspace) -> None:
    assert ws.run_cell("import weakref\nbig = np.zeros(1000)").ok
    ws.list_variables()  # now in the cache
    assert ws.run_cell("ref = weakref.ref(big)\ndel big").ok
    assert ws.run_cell("import gc\ngc.collect()\nfreed = ref() is None").ok
    assert ws.get_value("freed") is True


def test_restore_and_delete_are_listed_afresh(ws: SandboxWorkspace) -> None:
    ws.run_cell("keep = f0.copy()")
    ws.snapshot("c1")
    first = _hashes(ws)
    assert ws.run_cell("keep.loc[0, 'a'] = 123456").ok
    assert _hashes(ws)["keep"] != first["keep"]
    ws.restore("c1")
    assert _hashes(ws)["keep"] == first["keep"]
    ws.delete_variables(["keep"])
    assert "keep" not in _hashes(ws)


# --- the parent's memo: an entry is reused only when it is exactly one that passed ---------------


def _entry(name: str, content_hash: str = "h1", head: str = "1") -> dict[str, object]:
    return {
        "name": name,
        "type": "int",
        "shape": None,
        "dtype": None,
        "head": head,
        "content_hash": content_hash,
    }


def test_unchanged_entries_are_reused_and_changed_ones_validated() -> None:
    memo = ListingMemo()
    first = validate("list", {"ok": True, "variables": [_entry("a"), _entry("b")]}, memo)
    second = validate("list", {"ok": True, "variables": [_entry("a"), _entry("b", "h2")]}, memo)
    assert second.variables[0] is first.variables[0]
    assert second.variables[1] == VariableSummary(**_entry("b", "h2"))  # type: ignore[arg-type]
    assert second.variables[1] is not first.variables[1]


@pytest.mark.parametrize(
    "bad",
    [
        {**_entry("a"), "content_hash": 5},  # a type the schema refuses, next to a reused entry
        {**_entry("a"), "head": ["x"]},
        ["not", "an", "entry"],
        {**_entry("a"), "name": ["unhashable"]},
    ],
)
def test_a_changed_entry_that_breaks_the_schema_is_a_malformed_reply(bad: object) -> None:
    memo = ListingMemo()
    validate("list", {"ok": True, "variables": [_entry("a"), _entry("b")]}, memo)
    with pytest.raises(MalformedReply, match="variables"):
        validate("list", {"ok": True, "variables": [_entry("b"), bad]}, memo)


def test_a_listing_with_a_bad_ok_is_refused_even_with_every_entry_known() -> None:
    memo = ListingMemo()
    validate("list", {"ok": True, "variables": [_entry("a")]}, memo)
    with pytest.raises(MalformedReply):
        validate("list", {"ok": "yes", "variables": [_entry("a")]}, memo)
    with pytest.raises(MalformedReply):
        validate("list", {"ok": True, "variables": {"a": _entry("a")}}, memo)


def test_the_kernel_process_listing_survives_a_restart(tmp_path: Path) -> None:
    with SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", LIMITS) as workspace:
        assert workspace.run_cell("x = 1").ok
        assert [v.name for v in workspace.list_variables()] == ["x"]
        workspace.kernel.kill()  # the rebuilt kernel replays `x = 1` and lists it through a new memo
        assert [(v.name, v.head) for v in workspace.list_variables()] == [("x", "1")]
