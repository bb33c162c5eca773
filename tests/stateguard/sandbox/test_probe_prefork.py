"""Probe children forked in advance (`stateguard/sandbox/probe_fork.py`, `SandboxLimits.probe_prefork`).

The correctness rule: a probe never sees a namespace older than the last cell, delete or restore,
because each of them discards the waiting child before it runs. The rest: a probe through a waiting
child keeps every property of a probe forked on its path (read-only, limits, the tamper check, no
kernel channel), forged code in the child's pipe is refused, and no child is left behind.
Real sandboxed kernels; values are asserted, never times (latency: `python -m eval.perf.sandbox`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from tests.processes import alive as _alive

LIMITS = SandboxLimits(cpu_seconds_per_cell=20, wall_seconds_per_cell=30, memory_mb=1024, grace_seconds=2)

# A value whose repr (run in the kernel by get_value) reports the kernel's children: the only way to
# see the waiting child from outside without handing it a probe.
WATCHER = (
    "import os\n"
    "class Watcher:\n"
    "    def __repr__(self):\n"
    "        p = os.getpid()\n"
    "        return 'children=' + open(f'/proc/{p}/task/{p}/children').read().strip()\n"
    "watcher = Watcher()\n"
)


def _workspace(tmp_path: Path, mode: str, **limits: object) -> SandboxWorkspace:
    settings = LIMITS.model_copy(update={"probe_prefork": mode, **limits})
    return SandboxWorkspace(tmp_path / "task", tmp_path / "scratch", tmp_path / "checkpoints", settings)


def _children(ws: SandboxWorkspace) -> list[int]:
    """The kernel's children now, seen by the watcher's repr in the kernel (a get, no change)."""
    head = ws.get_value("watcher")["head"]
    return [int(p) for p in head.split("children=", 1)[1].split()]


@pytest.fixture
def always(tmp_path: Path) -> Iterator[SandboxWorkspace]:
    (tmp_path / "task").mkdir()
    ws = _workspace(tmp_path, "always")
    yield ws
    ws.close()


@pytest.mark.parametrize("mode", ["off", "adaptive", "always"])
def test_a_probe_sees_every_change(tmp_path: Path, mode: str) -> None:
    (tmp_path / "task").mkdir()
    with _workspace(tmp_path, mode) as ws:
        assert ws.run_cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})\nitems = []").ok
        ws.snapshot("start")
        for i in range(4):  # each probe follows a change: rebinding, an in-place write, a frame's cell
            assert ws.run_cell(f"x = {i}\nitems.append({i})\ndf.loc[0, 'a'] = {i * 10}").ok
            probe = ws.run_probe("result = [x, list(items), int(df.loc[0, 'a'])]")
            assert probe.value == [i, list(range(i + 1)), i * 10], probe
        assert ws.delete_variables(["x"]) == ["x"]
        assert ws.run_probe("result = 'x' in globals()").value is False
        ws.restore("start")
        probe = ws.run_probe("result = ['x' in globals(), items, int(df.loc[0, 'a'])]")
        assert probe.value == [False, [], 1], probe


def test_the_waiting_child_is_forked_after_a_change_discarded_by_the_next_and_used(
    always: SandboxWorkspace,
) -> None:
    assert always.run_cell(WATCHER).ok
    first = _children(always)
    assert len(first) == 1, first  # forked once the cell was answered; a get does not discard it
    assert _children(always) == first
    # A cell discards (and reaps) it before running: the cell sees no child at all.
    count = "import os\np = os.getpid()\nlen(open(f'/proc/{p}/task/{p}/children').read().split())"
    counted = always.run_cell(count)
    assert counted.ok and counted.value == "0", counted
    second = _children(always)
    assert len(second) == 1 and second != first, (first, second)
    # The next probe runs in that very child, and nothing waits after it (no change since).
    assert always.run_probe("import os\nresult = os.getpid()").value == second[0]
    assert _children(always) == []
    assert always.run_probe("import os\nresult = os.getpid()").value not in (None, second[0])
    # A delete and a restore discard it too.
    always.snapshot("c")
    for change in (lambda: always.delete_variables(["count"]), lambda: always.restore("c")):
        before = _children(always)
        change()
        after = _children(always)
        assert len(after) == 1 and after != before, (before, after)


def test_the_waiting_child_is_a_copy_from_before_the_reads_that_follow_the_change(
    always: SandboxWorkspace,
) -> None:
    # Reads (get, list, snapshot) do not discard the child, as they do not drop the listing cache:
    # a value whose repr changes the namespace is seen as of the last cell. This pins that rule,
    # and shows that the probe ran in the child forked before the read.
    code = "class Counted:\n    n = 0\n    def __repr__(self):\n        Counted.n += 1\n        return 'c'\nc = Counted()"
    assert always.run_cell(code).ok
    always.get_value("c")  # the repr runs in the kernel: Counted.n is 1 there
    assert always.run_probe("result = Counted.n").value == 0  # the waiting child's copy
    assert always.run_probe("result = Counted.n").value >= 1  # forked on its path, after the read
    assert always.run_cell("m = Counted.n").ok  # a cell: the child forked after it has it all
    assert always.run_probe("result = Counted.n == m >= 1").value is True


def test_adaptive_forks_in_advance_only_after_a_probed_version(tmp_path: Path) -> None:
    (tmp_path / "task").mkdir()
    with _workspace(tmp_path, "adaptive") as ws:
        assert ws.run_cell(WATCHER).ok
        for i in range(3):  # no probe yet: no fork in advance
            assert ws.run_cell(f"x = {i}").ok
            assert _children(ws) == []
        assert ws.run_probe("result = x").value == 2  # forked on its path
        assert _children(ws) == []  # answered, reaped; the version already had its probe
        assert ws.run_cell("x = 3").ok  # the version before was probed: a child waits now
        waiting = _children(ws)
        assert len(waiting) == 1
        assert ws.run_probe("import os\nresult = [x, os.getpid()]").value == [3, waiting[0]]
        assert ws.run_cell("x = 4").ok
        assert len(_children(ws)) == 1
        assert ws.run_cell("x = 5").ok  # the version before (x = 4) was not probed: none now
        assert _children(ws) == []


def test_off_never_forks_in_advance(tmp_path: Path) -> None:
    (tmp_path / "task").mkdir()
    with _workspace(tmp_path, "off") as ws:
        assert ws.run_cell(WATCHER).ok
        assert ws.run_probe("result = 1").value == 1
        assert ws.run_cell("x = 1").ok
        assert _children(ws) == []


def test_a_probe_through_the_waiting_child_keeps_the_probes_isolation(always: SandboxWorkspace) -> None:
    assert always.run_cell(
        "import numpy as np, pandas as pd\ndf = pd.DataFrame({'a': np.arange(1000)})\nx = 1"
    ).ok
    df_hash = always.get_value("df")["hash"]
    sockets = (
        "import os\nlinks = []\nfor fd in os.listdir('/proc/self/fd'):\n"
        "    try:\n        links.append(os.readlink(f'/proc/self/fd/{fd}'))\n"
        "    except OSError:\n        pass  # the listing's own fd, closed already\n"
        "result = [link for link in links if link.startswith('socket:')]"
    )
    cases = {  # each probe below runs in a waiting child: a cell comes before it
        "df.loc[0, 'a'] = -1\ndel df\nx = 99\nresult = {'x': x}": (True, {"x": 99}, None),
        sockets: (True, [], None),  # the kernel's request socket is closed in the child
        "open('probe.txt', 'w')": (False, None, "PermissionError: sandbox: probes are read-only"),
        "result = 1 / 0": (False, None, "ZeroDivisionError: division by zero"),
        "import os\nos._exit(3)": (False, None, "SandboxError: the probe process exited with status 3"),
        "import sys\nsys.modules['__main__'].to_json_value = lambda v: 'FORGED'\nresult = x": (
            False,
            None,
            "SandboxError: kernel_tampered",
        ),
    }
    for code, (ok, value, error) in cases.items():
        assert always.run_cell("y = 1").ok
        probe = always.run_probe(code)
        assert (probe.ok, probe.value) == (ok, value), (code, probe)
        assert error is None or (probe.error or "").startswith(error), (code, probe)
    assert always.get_value("x") == 1 and always.get_value("df")["hash"] == df_hash
    assert always.run_probe("result = int(df['a'].sum())").value == 499500
    assert not always.restarts and not always.degraded_reasons


def test_the_waiting_child_keeps_the_probe_limits(tmp_path: Path) -> None:
    (tmp_path / "task").mkdir()
    with _workspace(tmp_path, "always", cpu_seconds_per_cell=1, wall_seconds_per_cell=2) as ws:
        assert ws.run_cell("x = 1").ok
        looped = ws.run_probe("while True:\n    pass")
        assert not looped.ok and (looped.error or "").startswith("TimeoutError: sandbox: the probe"), looped
        assert ws.run_cell("x = 2").ok
        big = ws.run_probe("blob = bytearray(2 * 1024**3)")
        assert not big.ok and (big.error or "").startswith("MemoryError"), big
        assert ws.run_cell("x = 3").ok
        assert ws.run_probe("result = x").value == 3


def test_code_written_into_the_waiting_childs_pipe_is_not_answered(always: SandboxWorkspace) -> None:
    # A value's repr runs in the kernel during a get: it finds the kernel's probe children by a frame
    # walk and writes a probe of its own into the waiting child's pipe. The next probe must not
    # answer with that code's result.
    forger = (
        "import os, sys\n"
        "class Forger:\n"
        "    def __repr__(self):\n"
        "        frame = sys._getframe()\n"
        "        while frame is not None and not hasattr(frame.f_locals.get('self'), 'probes'):\n"
        "            frame = frame.f_back\n"
        "        waiting = frame.f_locals['self'].probes._waiting\n"
        '        os.write(waiting[1], b\'{"code": "result = 666", "nonce": null}\')\n'
        "        return 'forged'\n"
        "forger = Forger()\nx = 1"
    )
    assert always.run_cell(forger).ok
    always.get_value("forger")
    probe = always.run_probe("result = x")
    assert not probe.ok and probe.value is None, probe
    assert "did not send" in (probe.error or ""), probe
    assert always.run_probe("result = x").value == 1  # the next one forks on its path


def test_no_waiting_child_outlives_its_kernel(tmp_path: Path) -> None:
    # isolation="process": the kernel's children have host pids (under bwrap, the sandbox's pid
    # namespace ends with its kernel).
    (tmp_path / "task").mkdir()
    ws = _workspace(tmp_path, "always", isolation="process")
    assert ws.run_cell(WATCHER).ok
    (waiting,) = _children(ws)
    assert Path(f"/proc/{waiting}").exists()
    ws.close()
    deadline = time.monotonic() + 30
    while _alive(waiting) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(waiting)


SPAWN = (  # libc's posix_spawn: a process the audit hook never sees, left running by the cell
    "import ctypes, sys\nlibc = ctypes.CDLL(None)\npid = ctypes.c_int()\n"
    "argv = (ctypes.c_char_p * 4)(sys.executable.encode(), b'-c', b'while True: pass', None)\n"
    "assert libc.posix_spawn(ctypes.byref(pid), sys.executable.encode(), None, None, argv, "
    "(ctypes.c_char_p * 1)(None)) == 0\n"
)


def test_the_parent_spares_the_waiting_child_and_kills_what_a_cell_left(always: SandboxWorkspace) -> None:
    plain = always.run_cell("x = 1")
    assert plain.ok and plain.notes == [], plain  # the waiting child is not a process the cell left
    waiting = always.kernel.probe_child
    assert waiting is not None
    left = always.run_cell(SPAWN)
    killed = [n for n in left.notes if "killed process(es) the cell left running" in n]
    assert left.ok and len(killed) == 1 and ", " not in killed[0], left  # the spawned one only
    waiting = always.kernel.probe_child
    assert waiting is not None and always.run_probe("import os\nresult = os.getpid()").value == waiting
