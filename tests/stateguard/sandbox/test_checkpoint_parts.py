"""Incremental checkpoints (`stateguard/sandbox/parts.py`, `checkpoints.py`): a large array is a part
written once per workspace and referred to by content key, with real sandboxed kernels.

What must hold: a restore gives the namespace as it was (frames, shared references, distinct equal
arrays kept distinct), an in-place change since the last checkpoint makes a new part, an unchanged
array is not written again, a damaged or missing part is refused before anything is loaded, and
parts go with the last checkpoint that refers to them.
"""

from __future__ import annotations

import json
import os
import signal
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.sandbox.checkpoints import MAGIC, CheckpointRefused, remove_all

LIMITS = SandboxLimits(cpu_seconds_per_cell=20, wall_seconds_per_cell=30, memory_mb=1024, grace_seconds=2)

SETUP = (
    "import numpy as np, pandas as pd\n"
    "n = 100_000\n"
    "df = pd.DataFrame({'i': np.arange(n), 'f': np.arange(n) / 7, 's': [f'k{j % 97}' for j in range(n)]})\n"
    "alias = df\n"  # two names, one frame
    "frames = {'first': df, 'again': df}\n"  # and the same frame inside a container
    "a = np.arange(n, dtype=float)\n"
    "b = a.copy()\n"  # equal bytes, a different array
    "shared = [a, a]\n"
    "small = {'k': [1, 2, 3]}\n"
    "df.to_pickle('original.pkl')\n"
)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[SandboxWorkspace]:
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", LIMITS) as workspace:
        r = workspace.run_cell(SETUP)
        assert r.ok, r.error
        yield workspace


def _parts(ws: SandboxWorkspace) -> set[str]:
    folder = ws.checkpoint_dir / ".parts"
    return {p.stem for p in folder.glob("*.part")} if folder.exists() else set()


def _identity(ws: SandboxWorkspace, checkpoint: str) -> dict:
    data = (ws.checkpoint_dir / f"{checkpoint}.pkl").read_bytes()
    assert data.endswith(MAGIC)
    (length,) = struct.unpack(">Q", data[-len(MAGIC) - 8 : -len(MAGIC)])
    return json.loads(data[-len(MAGIC) - 8 - length : -len(MAGIC) - 8])


def _check(ws: SandboxWorkspace, code: str) -> object:
    r = ws.run_cell(code)
    assert r.ok, r.error
    return r.value


def test_a_restore_gives_the_namespace_back_with_its_shared_references(ws: SandboxWorkspace) -> None:
    ws.snapshot("c1")
    assert len(_parts(ws)) >= 4  # the int and float blocks, the string column, a, b
    assert ws.checkpoint_info("c1").size_bytes > 2_000_000  # parts counted in the checkpoint's size
    assert (ws.checkpoint_dir / "c1.pkl").stat().st_size < 100_000  # the file itself holds the small rest
    _check(ws, "df = alias = None\na[:] = 0\nb = None\nshared = frames = small = None")
    ws.restore("c1")
    got = _check(
        ws,
        "(df.equals(pd.read_pickle('original.pkl')), alias is df, frames['first'] is df, "
        "frames['again'] is df, shared[0] is a and shared[1] is a, a is not b, "
        "bool((a == np.arange(n) / 1).all()), bool((a == b).all()), small, str(df['s'].dtype))",
    )
    assert got == "(True, True, True, True, True, True, True, True, {'k': [1, 2, 3]}, 'str')"
    # The two equal arrays are still two: a write to one does not reach the other.
    assert _check(ws, "a[0] = -5.0\n(float(b[0]), float(shared[1][0]))") == "(0.0, -5.0)"


def test_an_unchanged_array_is_written_once_and_an_in_place_change_makes_a_new_part(
    ws: SandboxWorkspace,
) -> None:
    ws.snapshot("c1")
    first = _parts(ws)
    mtimes = {k: (ws.checkpoint_dir / ".parts" / f"{k}.part").stat().st_mtime_ns for k in first}
    _check(ws, "x = 1")  # nothing large changes
    ws.snapshot("c2")
    assert _parts(ws) == first  # no part written again
    assert {k: (ws.checkpoint_dir / ".parts" / f"{k}.part").stat().st_mtime_ns for k in first} == mtimes
    assert set(_identity(ws, "c2")["parts"]) == set(_identity(ws, "c1")["parts"])
    # In place, same objects: the float block of the frame and the array `a` (through an alias).
    _check(ws, "df.loc[3, 'f'] = -1.0\nshared[0][7] = -2.0")
    ws.snapshot("c3")
    new = _parts(ws) - first
    assert len(new) == 2, new  # exactly the two changed arrays
    assert set(_identity(ws, "c3")["parts"]) - set(_identity(ws, "c1")["parts"]) == new
    ws.restore("c2")
    assert _check(ws, "(float(df.loc[3, 'f']), float(a[7]))") == "(0.42857142857142855, 7.0)"
    ws.restore("c3")
    assert _check(ws, "(float(alias.loc[3, 'f']), float(a[7]), alias is df)") == "(-1.0, -2.0, True)"


@pytest.mark.parametrize("damage", ["flip", "missing", "truncate"])
def test_a_damaged_or_missing_part_is_refused_before_anything_is_loaded(
    ws: SandboxWorkspace, damage: str
) -> None:
    ws.snapshot("c1")
    _check(ws, "df = 'changed'")
    key = sorted(_identity(ws, "c1")["parts"])[0]
    part = ws.checkpoint_dir / ".parts" / f"{key}.part"
    if damage == "flip":
        data = bytearray(part.read_bytes())
        data[len(data) // 2] ^= 0xFF
        part.write_bytes(bytes(data))
    elif damage == "missing":
        part.unlink()
    else:
        part.write_bytes(part.read_bytes()[:-5])
    with pytest.raises(CheckpointRefused, match=key):
        ws.restore("c1")
    assert ws.get_value("df") == "changed"  # nothing was loaded


def test_the_part_list_is_covered_by_the_checkpoint_digest(ws: SandboxWorkspace) -> None:
    ws.snapshot("c1")
    path = ws.checkpoint_dir / "c1.pkl"
    data = path.read_bytes()
    (length,) = struct.unpack(">Q", data[-len(MAGIC) - 8 : -len(MAGIC)])
    identity = json.loads(data[-len(MAGIC) - 8 - length : -len(MAGIC) - 8])
    dropped = dict(list(identity["parts"].items())[1:])  # one part left out of the list
    record = json.dumps({**identity, "parts": dropped}).encode()
    path.write_bytes(data[: -len(MAGIC) - 8 - length] + record + struct.pack(">Q", len(record)) + MAGIC)
    with pytest.raises(CheckpointRefused, match="do not match the hash"):
        ws.restore("c1")


def test_parts_go_with_the_last_checkpoint_that_refers_to_them(ws: SandboxWorkspace) -> None:
    ws.snapshot("c1")
    first = _parts(ws)
    _check(ws, "a = a + 1")  # a new array; the rest unchanged
    ws.snapshot("c2")
    (only_c2,) = _parts(ws) - first
    ws.drop_checkpoint("c1")
    assert _parts(ws) == set(_identity(ws, "c2")["parts"])  # a's old part went with c1
    assert only_c2 in _parts(ws)
    ws.restore("c2")
    assert _check(ws, "float(a[0])") == "1.0"
    ws.drop_checkpoint("c2")
    assert _parts(ws) == set()
    ws.snapshot("c3")
    remove_all(ws.checkpoint_dir)  # what the runner does at a rollout's end
    assert not (ws.checkpoint_dir / ".parts").exists() and not ws.has_checkpoint("c3")


def test_a_later_workspace_on_the_directory_restores_and_reuses_the_parts(tmp_path: Path) -> None:
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", LIMITS) as first:
        assert first.run_cell(SETUP).ok
        first.snapshot("c1")
        parts = _parts(first)
    with SandboxWorkspace(None, tmp_path / "scratch2", tmp_path / "ckpt", LIMITS) as later:
        later.restore("c1")
        assert _check(later, "(alias is df, int(df['i'].sum()), float(a[9]))") == "(True, 4999950000, 9.0)"
        later.snapshot("c2")  # the same values: every part is already there
        assert _parts(later) == parts
        later.drop_checkpoint("c2")  # c1 still refers to them
        assert _parts(later) == parts
        later.restore("c1")
        assert _check(later, "bool((a == b).all())") == "True"


def test_a_replay_after_a_kernel_death_restores_a_checkpoint_with_parts(ws: SandboxWorkspace) -> None:
    ws.snapshot("c1")
    _check(ws, "df = None")
    ws.restore("c1")  # in the history: a replay restores c1 again, parts and all
    _check(ws, "total = int(df['i'].sum())")
    os.kill(ws.pid, signal.SIGKILL)
    ws.kernel.proc.wait(10)
    r = ws.run_cell("(total, alias is df, float(a[9]))")
    assert r.value == "(4999950000, True, 9.0)", r
    assert any("rebuilt by replaying" in n for n in r.notes), r.notes
    assert ws.degraded_reasons == []


def test_a_live_resource_is_skipped_at_every_checkpoint_and_the_frames_still_become_parts(
    ws: SandboxWorkspace,
) -> None:
    _check(ws, "import sqlite3\ncon = sqlite3.connect(':memory:')")
    ws.snapshot("c1")
    first = _parts(ws)
    assert first and set(ws.checkpoint_info("c1").skipped) == {"con"}
    _check(ws, "x = 2")
    ws.snapshot("c2")  # `con` is tested alone first: the frames are not pickled twice
    assert _parts(ws) == first
    assert ws.checkpoint_info("c2").skipped == ws.checkpoint_info("c1").skipped
    _check(ws, "df = None")
    ws.restore("c2")
    assert _check(ws, "(con.execute('select 41 + 1').fetchone()[0], alias is df, x)") == "(42, True, 2)"


def test_a_file_of_the_previous_format_without_parts_still_restores(tmp_path: Path) -> None:
    import xxhash

    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", LIMITS) as ws:
        _check(ws, "v = [1, 2, 3]\nw = {'k': v}")
        ws.snapshot("c1")  # nothing large: no parts
        path = ws.checkpoint_dir / "c1.pkl"
        data = path.read_bytes()
        (length,) = struct.unpack(">Q", data[-len(MAGIC) - 8 : -len(MAGIC)])
        payload = data[: -len(MAGIC) - 8 - length]
        assert json.loads(data[-len(MAGIC) - 8 - length : -len(MAGIC) - 8])["parts"] == {}
        old = json.dumps(
            {"checkpoint_id": "c1", "size": len(payload), "xxh3_128": xxhash.xxh3_128(payload).hexdigest()}
        ).encode()
        path.write_bytes(payload + old + struct.pack(">Q", len(old)) + b"SGCKPT02")
        _check(ws, "v = None")
        ws.restore("c1")
        assert _check(ws, "(v, w['k'] is v)") == "([1, 2, 3], True)"


def test_a_checkpoint_taken_again_under_its_id_lets_go_of_the_parts_only_it_held(
    ws: SandboxWorkspace,
) -> None:
    ws.snapshot("c1")
    _check(ws, "a = a * 2")
    ws.snapshot("c1")  # the same id, a new `a`: the old `a`'s part is referred to by nothing now
    assert _parts(ws) == set(_identity(ws, "c1")["parts"])
    ws.restore("c1")
    assert _check(ws, "float(a[3])") == "6.0"
