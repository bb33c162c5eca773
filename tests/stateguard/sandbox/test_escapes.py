"""Adversarial suite: escape attempts against the bubblewrap sandbox, in the evaluation's own layout.

Every attempt runs through `SandboxWorkspace.run_cell`, as agent code would, in ONE shared kernel
(restarted when an attempt kills it) whose task sits in a benchmark folder next to its hidden
answers and other tasks, and whose run folder holds the manager's state store and trace. After
each attempt the host is checked: no secret reached the cell's output or the scratch dir, no
file outside the workspace's own scratch/checkpoint dirs changed, nothing appeared in the host's
/tmp, and the workspace still works. The attempts go around the audit hook on purpose (C-level
I/O in DuckDB, Arrow and SQLite, libc through ctypes/cffi, a patched policy module): what is
tested is the operating-system boundary.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.state import AnalyticalState, Conclusion, Relation, VariableRef
from stateguard.store import StateStore

SECRET_ANSWER = "ANSWER-5b1d0e77"
SECRET_OTHER = "OTHER-TASK-9c42aa"
SECRET_STATE = "STATE-VALUE-31f7"
SECRET_TRACE = "TRACE-EVENT-8e05"
SECRET_ENV = "ENV-TOKEN-d4c9"
LIMITS = SandboxLimits(
    cpu_seconds_per_cell=30,
    wall_seconds_per_cell=45,
    memory_mb=2048,
    grace_seconds=5,
    scratch_mb=64,
    tmp_mb=16,
    max_processes=256,
    replay=False,
)


class Layout:
    """bench/<task>/{agent,hidden} and runs/eval/r/tasks/<task>/<arm>/ as `make eval` lays them out."""

    def __init__(self, root: Path):
        self.root = root
        bench = root / "bench"
        self.task = bench / "taskA" / "agent"
        (self.task / "data").mkdir(parents=True)
        (self.task / "data" / "sales.csv").write_text("region,amount\nnorth,10\nsouth,20\n")
        self.hidden = bench / "taskA" / "hidden" / "task.json"
        self.hidden.parent.mkdir(parents=True)
        self.hidden.write_text(json.dumps([{"turn_id": 1, "answer": SECRET_ANSWER}]))
        other = bench / "taskB" / "hidden"
        other.mkdir(parents=True)
        (other / "task.json").write_text(json.dumps([{"answer": SECRET_OTHER}]))
        arm = root / "runs" / "eval" / "r1" / "tasks" / "taskA" / "stateguard"
        arm.mkdir(parents=True)
        self.scratch, self.checkpoints = arm / "scratch", arm / "checkpoints"
        self.store_path = arm / "states.sqlite"
        store = StateStore(self.store_path)
        store.commit(
            AnalyticalState(
                id="S1",
                issue="total",
                relations=[Relation(type="init")],
                used_variables=[VariableRef(name="total", version="S1", value=SECRET_STATE)],
                conclusions=[Conclusion(text="done")],
            )
        )
        store.close()
        (arm / "trace.jsonl").write_text(json.dumps({"event": SECRET_TRACE}) + "\n")
        (root / "runs" / "eval" / "r1" / "config.yaml").write_text("workspace: sandbox\n")
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.baseline = self.fingerprint()

    def fingerprint(self) -> dict[str, str]:
        """Hash of every file outside the workspace's own scratch and checkpoint dirs."""
        out = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and not any(p in path.parents for p in (self.scratch, self.checkpoints)):
                out[str(path.relative_to(self.root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        return out

    def secrets(self) -> list[str]:
        found = [SECRET_ANSWER, SECRET_OTHER, SECRET_STATE, SECRET_TRACE, SECRET_ENV]
        shadow = Path("/etc/shadow")
        if os.access(shadow, os.R_OK):
            found += [line for line in shadow.read_text().splitlines()[:3] if len(line) > 8]
        return found


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    lay = Layout(tmp_path_factory.mktemp("escape"))
    yield lay
    lay.listener.close()


@pytest.fixture(scope="module")
def ws(layout: Layout) -> Iterator[SandboxWorkspace]:
    os.environ["STATEGUARD_TEST_TOKEN"] = SECRET_ENV  # a parent secret the kernel must not inherit
    try:
        workspace = SandboxWorkspace(layout.task, layout.scratch, layout.checkpoints, LIMITS)
    finally:
        del os.environ["STATEGUARD_TEST_TOKEN"]
    assert workspace.isolation == "bwrap"
    yield workspace
    workspace.close()


def attempt(ws: SandboxWorkspace, layout: Layout, code: str) -> str:
    """Run one attempt and check the host; returns everything the cell could show (for extra checks)."""
    r = ws.run_cell(
        code.format(
            hidden=layout.hidden,
            task=layout.task,
            store=layout.store_path,
            root=layout.root,
            port=layout.port,
        )
    )
    shown = "\n".join(str(x) for x in (r.stdout, r.stderr, r.value, r.error, r.traceback, r.notes))
    for path in layout.scratch.rglob("*"):
        if path.is_file() and path.stat().st_size < 1 << 20:
            shown += "\n" + path.read_text(errors="replace")
    leaked = [s for s in layout.secrets() if s in shown]
    assert not leaked, (leaked, shown[:2000])
    assert layout.fingerprint() == layout.baseline, "a file outside the workspace changed"
    assert not Path("/tmp/stateguard-escaped").exists()
    try:
        connection, _ = layout.listener.accept()
        connection.close()
        raise AssertionError("the sandbox reached a host port")
    except BlockingIOError:
        pass
    check = ws.run_cell("1 + 1")
    assert check.ok and check.value == "2", check
    return shown


LIBRARY_ROUTES = {
    "duckdb_read_hidden": "import duckdb\nduckdb.sql(\"select content from read_text('{hidden}')\").fetchall()",
    "duckdb_read_shadow": "import duckdb\nduckdb.sql(\"select content from read_text('/etc/shadow')\").fetchall()",
    "duckdb_glob_run": "import duckdb\nduckdb.sql(\"select filename, content from read_text('{root}/**/*.json*')\").fetchall()",
    "duckdb_copy_over_task": "import duckdb\nduckdb.sql(\"copy (select 1 as x) to '{task}/data/sales.csv' (header)\")",
    "duckdb_copy_host_tmp": "import duckdb\nduckdb.sql(\"copy (select 1 as x) to '/tmp/stateguard-escaped'\")\nopen('/tmp/stateguard-escaped').read()",
    "arrow_write_task": "import pyarrow.fs as pf\nwith pf.LocalFileSystem().open_output_stream('{task}/data/sales.csv') as f:\n    f.write(b'x')",
    "arrow_write_anywhere": "import pyarrow.fs as pf\nfs = pf.LocalFileSystem()\nfor p in ['{root}/runs/eval/r1/config.yaml', '{store}', '/tmp/stateguard-escaped']:\n    try:\n        with fs.open_output_stream(p) as f:\n            f.write(b'pwned')\n    except OSError as e:\n        print(p, e)",
    "arrow_list_root": "import pyarrow.fs as pf\n[i.path for i in pf.LocalFileSystem().get_file_info(pf.FileSelector('{root}', recursive=True))]",
    "pandas_read_parquet": "import pandas as pd\npd.read_parquet('{hidden}')",
    "pandas_read_json": "import pandas as pd\npd.read_json('{hidden}')",
    "sqlite_read_store": "import sqlite3\nsqlite3.connect('file:{store}?mode=ro', uri=True).execute('select * from sqlite_master').fetchall()",
    "sqlite_update_store": "import sqlite3\nfor p in ['../states.sqlite', '{store}']:\n    try:\n        c = sqlite3.connect(p)\n        c.execute(\"update states set body = replace(body, 'STATE', 'FORGED')\")\n        c.commit()\n        print(p, c.execute('select count(*) from sqlite_master').fetchone())\n    except sqlite3.Error as e:\n        print(p, e)",
    "libc_open_hidden": "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n[(p, libc.open(p.encode(), os.O_RDONLY), ctypes.get_errno()) for p in ['{hidden}', '/etc/shadow', '{store}']]",
    "read_parent_environ": "import os\n{{p: open(f'/proc/{{p}}/environ', 'rb').read() for p in os.listdir('/proc') if p.isdigit()}}",
    "other_task": "open('{root}/bench/taskB/hidden/task.json').read()",
    "trace": "open('../trace.jsonl').read()",
}


@pytest.mark.parametrize("name", sorted(LIBRARY_ROUTES))
def test_library_io_cannot_reach_outside_the_task(ws: SandboxWorkspace, layout: Layout, name: str) -> None:
    attempt(ws, layout, LIBRARY_ROUTES[name])


def test_the_state_store_is_not_even_visible(ws: SandboxWorkspace, layout: Layout) -> None:
    shown = attempt(ws, layout, "import os\nsorted(os.listdir('..')), os.path.exists('{store}')")
    assert "['scratch']" in shown and "False" in shown
    store = StateStore.open_read_only(layout.store_path)
    try:
        assert store.load("S1").used_variables[0].value == SECRET_STATE  # the committed value, untouched
    finally:
        store.close()


def test_the_kernel_runs_unprivileged_and_alone(ws: SandboxWorkspace, layout: Layout) -> None:
    shown = attempt(
        ws,
        layout,
        "import os\nstatus = open('/proc/self/status').read()\n"
        "[l for l in status.splitlines() if l.startswith(('Uid', 'CapEff', 'CapBnd', 'NoNewPrivs', 'Seccomp:'))],"
        " sorted(p for p in os.listdir('/proc') if p.isdigit())",
    )
    assert "CapEff:\\t0000000000000000" in shown and "NoNewPrivs:\\t1" in shown and "Seccomp:\\t2" in shown
    assert "Uid:\\t0\\t" not in shown
    assert "['1', '2']" in shown  # bwrap's init and the kernel: no host process is visible


def test_nsenter_cannot_reenter_the_host_network(ws: SandboxWorkspace, layout: Layout) -> None:
    code = (
        "import ctypes, os, cffi\nlibc = ctypes.CDLL(None, use_errno=True)\nout = []\n"
        "for p in [p for p in os.listdir('/proc') if p.isdigit()] + [str(os.getppid())]:\n"
        "    try:\n        fd = os.open(f'/proc/{{p}}/ns/net', os.O_RDONLY)\n    except OSError as e:\n"
        "        out.append((p, 'open', e.errno)); continue\n"
        "    out.append((p, libc.setns(fd, 0x40000000), ctypes.get_errno()))\n"
        "ffi = cffi.FFI(); ffi.cdef('int unshare(int); int setns(int, int);'); C = ffi.dlopen(None)\n"
        "out.append(('unshare', C.unshare(0x40000000 | 0x10000000)))\n"
        "s = libc.socket(2, 1, 0)\nimport struct\n"
        "addr = struct.pack('=H', 2) + struct.pack('>H', {port}) + bytes([127, 0, 0, 1]) + bytes(8)\n"
        "out.append(('connect', libc.connect(s, addr, len(addr)), ctypes.get_errno()))\n"
        "print(out)\nsorted(l.split(':')[0].strip() for l in open('/proc/self/net/dev').readlines()[2:])"
    )
    shown = attempt(ws, layout, code)
    assert "['lo']" in shown
    assert "('connect', -1, 111)" in shown  # ECONNREFUSED: its own loopback, not the host's listener


def test_spawned_processes_stay_inside(ws: SandboxWorkspace, layout: Layout) -> None:
    code = (
        "import ctypes, _imp, importlib.machinery\nroutes = []\n"
        "for name in ('_posixsubprocess',):\n"
        "    try:\n        alias = _imp.create_builtin(importlib.machinery.ModuleSpec(name, None))\n"
        "        routes.append(hasattr(alias, 'fork_exec'))\n    except Exception as e:\n        routes.append(repr(e))\n"
        "libc = ctypes.CDLL(None)\n"
        "rc = libc.system(b'id > id.txt; cat {hidden} /etc/shadow {store} > cat.txt 2>&1; ls -a {root} > ls.txt 2>&1')\n"
        "routes, rc, open('id.txt').read(), open('cat.txt').read(), open('ls.txt').read()"
    )
    shown = attempt(ws, layout, code)
    assert "uid=0(" not in shown and "(sandbox)" in shown
    assert "No such file or directory" in shown


def test_process_count_is_capped(ws: SandboxWorkspace, layout: Layout) -> None:
    # posix_spawn through libc (no Python runs in the children): spawn until the kernel says no.
    code = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "argv = (ctypes.c_char_p * 3)(b'/bin/sleep', b'30', None)\npid = ctypes.c_int()\nkids, err = [], 0\n"
        "for _ in range(2000):\n    err = libc.posix_spawn(ctypes.byref(pid), b'/bin/sleep', None, None, argv, None)\n"
        "    if err:\n        break\n    kids.append(pid.value)\n"
        "for k in kids:\n    libc.kill(k, 9)\nfor k in kids:\n    os.waitpid(k, 0)\nlen(kids), err"
    )
    shown = attempt(ws, layout, code)
    kids = int(shown.split("(", 1)[1].split(",")[0]) if "(" in shown else -1
    assert 0 < kids < LIMITS.max_processes and ", 11)" in shown, shown[:500]  # EAGAIN at the cap


def test_symlink_race_reads_nothing_outside(ws: SandboxWorkspace, layout: Layout) -> None:
    code = (
        "import os, threading\nstop = False\n"
        "def flip():\n    while not stop:\n        for target in ('{hidden}', '/etc/shadow', 'decoy.txt'):\n"
        "            os.symlink(target, 'link.tmp'); os.replace('link.tmp', 'link')\n"
        "open('decoy.txt', 'w').write('decoy')\nt = threading.Thread(target=flip); t.start()\nseen = set()\n"
        "for _ in range(3000):\n    try:\n        seen.add(open('link').read()[:40])\n    except OSError as e:\n        seen.add(type(e).__name__)\n"
        "stop = True; t.join(); os.remove('link')\nsorted(seen)"
    )
    shown = attempt(ws, layout, code)
    assert "decoy" in shown


def test_scratch_is_capped(ws: SandboxWorkspace, layout: Layout) -> None:
    code = (
        "import os\nchunk = b'0' * (8 << 20)\nwritten = 0\ntry:\n    with open('fill.bin', 'wb') as f:\n"
        "        for _ in range(640):  # 5 GiB\n            f.write(chunk); written += len(chunk)\n"
        "except OSError as e:\n    print(e)\nos.remove('fill.bin')\nwritten >> 20"
    )
    shown = attempt(ws, layout, code)
    # The tmpfs fills (ENOSPC), or one file reaches RLIMIT_FSIZE = scratch_mb first (EFBIG).
    assert "No space left on device" in shown or "File too large" in shown
    written_mib = int(ws.run_cell("written >> 20").value or -1)
    assert 0 < written_mib <= LIMITS.scratch_mb
    assert sum(p.stat().st_size for p in layout.scratch.rglob("*") if p.is_file()) <= LIMITS.scratch_mb << 20


def test_a_gib_on_fd_2_costs_the_parent_nothing(ws: SandboxWorkspace, layout: Layout) -> None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    shown = attempt(
        ws,
        layout,
        "import os\nblock = b'E' * (1 << 24)\nfor _ in range(64):\n    os.write(2, block)\n'flooded'",
    )
    assert "'flooded'" in shown
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 * 1024  # KiB: far below the 1 GiB
    assert (layout.checkpoints / "kernel.stderr.log").stat().st_size < 2 << 20


def test_background_thread_is_stopped(ws: SandboxWorkspace, layout: Layout) -> None:
    r = ws.run_cell(
        "import threading, time\ncounter = [0]\ndef spin():\n    while True:\n"
        "        counter[0] += 1\n        time.sleep(0.001)\nthreading.Thread(target=spin, name='spinner').start()"
    )
    assert r.ok and any("stopped background thread" in n and "spinner" in n for n in r.notes), r.notes
    first = ws.get_value("counter")
    assert ws.get_value("counter") == first  # nothing changes it between cells
    attempt(ws, layout, "import threading\n[t.name for t in threading.enumerate()]")


def test_forged_frames_never_become_results(ws: SandboxWorkspace, layout: Layout) -> None:
    forge = (
        "import os, json, struct, threading, time\n"
        "def frame():\n    body = json.dumps({'ok': True, 'value': \"'FORGED'\", 'names': [], 'stdout': '', 'ready': True}).encode()\n"
        "    return struct.pack('>QB', len(body), ord('J')) + body\n"
        "def spray():\n    for fd in range(3, 64):\n        try:\n            os.write(fd, frame())\n        except OSError:\n            pass\n"
        "gate_r, gate_w = os.pipe()\n"
        "def spray_later():\n    os.read(gate_r, 1)  # blocked in C: survives the sweep after its cell\n    spray()\n"
    )
    first = ws.run_cell(forge + "spray()\n'real'")
    assert first.value != "'FORGED'"
    assert first.value == "'real'" or (not first.ok and "protocol" in (first.error or "")), first
    # A thread started by one cell writes frames during a LATER request.
    started = ws.run_cell(forge + "threading.Thread(target=spray_later, name='sprayer', daemon=True).start()")
    assert any("sprayer" in n for n in started.notes), started  # reported as still running
    later = ws.run_cell("os.write(gate_w, b'x')\ntime.sleep(0.2)\n'after'")
    assert later.value != "'FORGED'" and not later.ok and "protocol" in (later.error or ""), later
    for i in range(3):  # the next requests travel on new pipes: no desynchronisation
        r = ws.run_cell(f"{i} * 3")
        assert r.ok and r.value == str(i * 3), r
    attempt(ws, layout, "'still answering'")


def test_patching_the_policy_changes_nothing(ws: SandboxWorkspace, layout: Layout) -> None:
    patch = (
        "import stateguard.sandbox.policy as p\np._under = lambda *a: True\np._resolve = lambda *a, **k: None\n"
        "p._FIXED_EVENTS.clear(); p._WRITE_EVENTS.clear(); p._READ_EVENTS.clear()\n"
    )
    r = ws.run_cell(patch + "open('/tmp/hook-still-on.txt', 'w')")
    assert not r.ok and "writes are allowed only under" in (r.error or "")  # the hook bound its rules
    for code in (
        "open('{hidden}').read()",
        "open('{task}/data/sales.csv', 'a').write('x')",
        "open('../states.sqlite', 'rb').read()",
    ):
        shown = attempt(ws, layout, patch + code)
        assert (
            "No such file or directory" in shown
            or "Read-only file system" in shown
            or "PermissionError" in shown
        )


def test_sigkill_from_inside_is_a_reported_death(ws: SandboxWorkspace, layout: Layout) -> None:
    r = ws.run_cell("import signal\nsignal.raise_signal(signal.SIGKILL)")
    assert not r.ok and "SandboxDied" in (r.error or "") and "SIGKILL" in (r.error or ""), r
    attempt(ws, layout, "'back'")


def test_scikit_learn_fits_inside(ws: SandboxWorkspace) -> None:
    r = ws.run_cell(
        "import numpy as np\nfrom sklearn.linear_model import LogisticRegression\nfrom sklearn.ensemble import RandomForestClassifier\n"
        "rng = np.random.default_rng(0)\nX = rng.random((300, 4)); y = (X[:, 0] + X[:, 1] > 1).astype(int)\n"
        "lr = LogisticRegression().fit(X, y)\nrf = RandomForestClassifier(n_estimators=20, random_state=0).fit(X, y)\n"
        "round(lr.score(X, y), 2) > 0.9, round(rf.score(X, y), 2) > 0.9"
    )
    assert r.ok and r.value == "(True, True)", (r.error, r.traceback)


def test_scratch_is_mirrored_and_links_are_not(ws: SandboxWorkspace, layout: Layout) -> None:
    r = ws.run_cell(
        "import os\nos.makedirs('out', exist_ok=True)\nopen('out/result.csv', 'w').write('a\\n1\\n')\n"
        "os.symlink('/etc/passwd', 'out/passwd-link')"
    )
    assert r.ok, r.error
    assert (layout.scratch / "out" / "result.csv").read_text() == "a\n1\n"
    assert not (layout.scratch / "out" / "passwd-link").exists()
    assert any("not a regular file" in n for n in r.notes)
    assert ws.run_cell("os.remove('out/passwd-link'); os.remove('out/result.csv')").ok
    assert not (layout.scratch / "out" / "result.csv").exists()


def test_mirroring_keeps_no_descriptor_open(ws: SandboxWorkspace) -> None:
    """The parent mirrors the scratch dir after every cell: a descriptor kept per walk would exhaust the
    parent's fds (select() fails past 1024) after a few hundred cells."""
    assert ws.run_cell("import os\nos.makedirs('a/b', exist_ok=True)").ok
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        assert ws.run_cell("x = 1").ok
    assert len(os.listdir("/proc/self/fd")) == before


def test_threads_are_used_by_libraries_without_noise(ws: SandboxWorkspace) -> None:
    r = ws.run_cell(
        "import duckdb\ncon = duckdb.connect()\ncon.execute('select sum(i) from range(100000) t(i)').fetchall()"
    )
    assert r.ok and r.notes == [], r
    threading.enumerate()  # (native DuckDB threads are not Python threads: nothing to sweep)
