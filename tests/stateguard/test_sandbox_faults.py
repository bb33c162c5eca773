"""Fault suite: what the parent does with text, replies and files it cannot trust (issue 31).

Each test is one attempt of the adversarial pass: a cell (or a forged reply, or a planted host
file) and the outcome the parent must show. The rule for all of them: 0 exceptions in the parent,
0 silent wrong results; a fault is reported (a failed cell, a note, a degraded reason).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from stateguard.encodable import escape_text, escape_tree
from stateguard.sandbox import SandboxLimits, SandboxWorkspace
from stateguard.trace import Trace, read_trace
from stateguard.workspace import DictWorkspace

LIMITS = SandboxLimits(
    cpu_seconds_per_cell=20,
    wall_seconds_per_cell=30,
    memory_mb=1024,
    grace_seconds=5,
    scratch_mb=64,
    tmp_mb=16,
)
SURROGATE_CELL = "print('caf\\udce9'); x = '\\udce9'\nx"


@pytest.fixture
def ws(tmp_path: Path):
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", LIMITS) as workspace:
        yield workspace


# --- text the parent cannot encode --------------------------------------------------------------


def test_escape_text_keeps_valid_text_and_escapes_lone_surrogates() -> None:
    assert escape_text("café 😀") == "café 😀"
    assert escape_text("caf\udce9") == "caf\\udce9"
    assert escape_tree({"k\udce9": ["\ud800", ("a",)]}) == {"k\\udce9": ["\\ud800", ("a",)]}


def test_lone_surrogate_output_serializes_in_the_dict_workspace() -> None:
    result = DictWorkspace().run_cell(SURROGATE_CELL)
    assert result.ok and result.stdout == "caf\\udce9\n"
    json.loads(result.model_dump_json())  # raised UnicodeEncodeError before


def test_lone_surrogate_output_value_and_listing_serialize_in_the_sandbox(ws: SandboxWorkspace) -> None:
    result = ws.run_cell(SURROGATE_CELL)
    assert result.ok and result.stdout == "caf\\udce9\n" and result.value == "'\\udce9'"
    json.loads(result.model_dump_json())
    assert ws.get_value("x") == "\\udce9"  # JSON's "\udce9" escape comes back escaped, not as a surrogate
    [listing] = ws.list_variables()
    listing.model_dump_json()
    probe = ws.run_probe("result = {x: [x]}\nprint(x)")
    assert probe.value == {"\\udce9": ["\\udce9"]} and probe.stdout == "\\udce9\n"
    probe.model_dump_json()


@pytest.mark.parametrize("make", [DictWorkspace, None])
def test_cell_code_with_a_lone_surrogate_is_a_failed_cell(make, ws: SandboxWorkspace) -> None:
    workspace = make() if make else ws
    result = workspace.run_cell("x = 'caf\udce9'")  # the text itself holds the surrogate
    assert not result.ok and "lone surrogate \\udce9 at character 8" in (result.error or "")
    result.model_dump_json()
    assert workspace.run_cell("y = 1").ok


def test_trace_escapes_lone_surrogates_in_events(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "trace.jsonl", clock=lambda: None)
    trace.emit("answers", answers={"1": "caf\udce9"})
    trace.close()
    [event] = read_trace(tmp_path / "trace.jsonl")
    assert event.model_dump()["data"]["answers"] == {"1": "caf\\udce9"}
    event.model_dump_json()


# --- the parent trusts nothing the kernel says --------------------------------------------------


def test_a_cell_cannot_rewrite_the_kernels_request_handlers(ws: SandboxWorkspace) -> None:
    attack = (
        "import sys\nK = sys.modules['__main__'].Kernel\n"
        "def forged(self, request):\n    return {'ok': True, 'value': \"'FORGED'\", 'names': []}\n"
        "K.run.__code__ = forged.__code__\n"
    )
    patched = ws.run_cell(attack)
    assert not patched.ok and "kernel's own functions is not allowed" in (patched.error or ""), patched
    later = ws.run_cell("1/0")
    assert not later.ok and later.error == "ZeroDivisionError: division by zero" and later.value is None


# Ways a cell can rewrite what its own kernel answers past the audit hook: replacing a module
# attribute the reply path uses, walking frames up to the request loop (its handler table, the
# kernel's own attributes), and ctypes writes of a handler's code pointer (the attack on
# `Kernel.run.__code__` and `Kernel.get`, done where no audit event sees it). Each would make every
# later reply of that kernel claim what the cell chose (on the code before the tripwire, `1/0` came
# back ok); the tripwire (stateguard/sandbox/tripwire.py) makes each a reported kernel fault.
_FORGE = "{**reply, 'ok': True, 'error': None, 'traceback': None, 'value': \"'FORGED'\"}"
_TO_LOOP = "import sys\nf = sys._getframe()\nwhile 'handlers' not in f.f_locals:\n    f = f.f_back\n"


def _code_pointer_write(handler: str, forged_body: str) -> str:
    return (
        f"import ctypes, sys, types\nK = sys.modules['__main__'].Kernel\n"
        f"K.honest = types.FunctionType(K.{handler}.__code__, K.{handler}.__globals__, 'honest')\n"
        "scope = {}\n"
        f"exec('def forged(self, request):\\n    reply = Kernel.honest(self, request)\\n    return ' + {forged_body!r}, scope)\n"
        "code = scope['forged'].__code__\nctypes.pythonapi.Py_IncRef(ctypes.py_object(code))\n"
        f"slots = [ctypes.c_void_p.from_address(id(K.{handler}) + o) for o in range(16, 128, 8)]\n"
        f"[slot] = [s for s in slots if s.value == id(K.{handler}.__code__)]  # PyFunctionObject.func_code\n"
        "slot.value = id(code)\n"
    )


PATCH_ROUTES = {
    "module attribute": (
        "import sys\nm = sys.modules['__main__']\nreal = m.send_message\n"
        f"m.send_message = lambda fd, reply: real(fd, {_FORGE} if 'stdout' in reply else reply)\n"
    ),
    "frame walk to the handler table": (
        f"{_TO_LOOP}handlers = f.f_locals['handlers']\nreal = handlers['run']\n"
        f"handlers['run'] = lambda request: (lambda reply: {_FORGE})(real(request))\n"
    ),
    # The cell's timers swallow its exception: `1/0` ends with ok=True, error=None.
    "frame walk to the kernel's attributes": (
        f"{_TO_LOOP}import contextlib\nk = f.f_locals['self']\n"
        "class Timers:\n    wall_seconds = k.timers.wall_seconds\n"
        "    @contextlib.contextmanager\n    def armed(self, what):\n"
        "        try:\n            yield\n        except Exception:\n            pass\n"
        "k.timers = Timers()\n"
    ),
    "ctypes write of Kernel.run's code": _code_pointer_write("run", _FORGE),
    "ctypes write of Kernel.get's code": _code_pointer_write("get", "{'ok': True, 'value': 'FORGED'}"),
}


@pytest.mark.parametrize("route", PATCH_ROUTES)
def test_a_cell_that_patches_its_kernel_is_a_reported_fault_not_a_lie(
    ws: SandboxWorkspace, route: str
) -> None:
    assert ws.run_cell("x = 1").ok
    patched = ws.run_cell(PATCH_ROUTES[route])
    # Reported on the patching cell itself: the kernel stops before writing that cell's reply.
    assert not patched.ok and "kernel_tampered" in (patched.error or ""), patched
    json.loads(patched.model_dump_json())
    assert len(ws.restarts) == 1 and "kernel_tampered" in ws.restarts[0]
    [reason] = ws.degraded_reasons
    assert reason.startswith("workspace: kernel_tampered:") and "not replayed" in reason
    # The rebuilt kernel replayed the cells before it, not the patch: it answers honestly.
    lie = ws.run_cell("1/0")
    assert not lie.ok and lie.error == "ZeroDivisionError: division by zero" and lie.value is None, lie
    assert ws.get_value("x") == 1
    assert len(ws.restarts) == 1


def test_a_cell_that_patches_json_cannot_forge_the_kernels_replies(ws: SandboxWorkspace) -> None:
    # json is not the kernel's to watch (cells patch it legitimately), so the reply path does not go
    # through json's Python code: its encoder (protocol.encode_json) is bound before any cell runs.
    patched = ws.run_cell(
        "import json\nreal = json._default_encoder\n"
        "class Forger(json.JSONEncoder):\n    def encode(self, o):\n"
        f"        reply = o\n        return real.encode({_FORGE} if isinstance(o, dict) and 'stdout' in o else o)\n"
        "json._default_encoder = Forger()\njson.encoder.c_make_encoder = None\n1/0"
    )
    assert not patched.ok and patched.error == "ZeroDivisionError: division by zero", patched
    assert ws.run_cell("1/0").error == "ZeroDivisionError: division by zero"
    assert ws.run_probe("result = 1/0").error == "ZeroDivisionError: division by zero"
    assert not ws.restarts


def test_a_cell_that_patches_contextlib_cannot_swallow_later_errors(ws: SandboxWorkspace) -> None:
    # The kernel ran each cell inside contextlib's redirect_stdout and a @contextmanager timer: a cell
    # that made their __exit__ return True turned every later `1/0` into ok. Both are the sandbox's
    # own classes now (guards.Redirected, guards.Armed), so the patch reaches nothing of the kernel.
    patched = ws.run_cell(
        "import contextlib\n"
        "contextlib._RedirectStream.__exit__ = lambda self, *exc: True\n"
        "contextlib._GeneratorContextManager.__exit__ = lambda self, *exc: True\n"
    )
    assert patched.ok, patched
    assert ws.run_cell("1/0").error == "ZeroDivisionError: division by zero"
    assert ws.run_probe("result = 1/0").error == "ZeroDivisionError: division by zero"
    assert not ws.restarts


def test_a_probe_that_patches_the_kernel_gets_no_forged_result(ws: SandboxWorkspace) -> None:
    assert ws.run_cell("x = 1").ok
    probe = ws.run_probe("import sys\nsys.modules['__main__'].to_json_value = lambda v: 'FORGED'\nresult = x")
    assert not probe.ok and "kernel_tampered" in (probe.error or "") and probe.value is None, probe
    # The probe ran in a fork: the kernel itself is untouched and keeps answering.
    assert ws.run_probe("result = x + 1").value == 2 and not ws.restarts and not ws.degraded_reasons


# Legitimate patches of builtins, pandas, json, print and sys.stdout: libraries and agents do these,
# and a false fault would destroy the task's work, so the tripwire must not see them.
LEGITIMATE_PATCHES = [
    "import builtins\n_open = builtins.open\nbuiltins.open = lambda *a, **k: _open(*a, **k)\n"
    "builtins.print = builtins.print\nbuiltins.my_helper = len",
    "import pandas as pd\npd.set_option('display.max_rows', 5)\n"
    "pd.DataFrame.total = lambda self: float(self.sum().sum())\npd.read_csv = pd.read_csv\n"
    "df = pd.DataFrame({'a': [1, 2]})\ntotal = df.total()",
    "import json, functools\njson.dumps = functools.partial(json.dumps, default=str)\n"
    "json.JSONEncoder.default = lambda self, o: str(o)\ntext = json.dumps({'a': object()})[:6]",
    "_print = print\ndef print(*args, **kwargs):\n    _print('>', *args, **kwargs)\nprint('hi')",
    "import io, sys\nsys.stdout = io.StringIO()\nprint('swallowed')\nsys.stdout = sys.__stdout__",
    "import sys, types\nsys.modules['my_helpers'] = types.ModuleType('my_helpers')\n"
    "import __main__\n__main__.extra = 1\nsys.setrecursionlimit(5000)",
]


def test_legitimate_patches_are_not_kernel_faults(ws: SandboxWorkspace) -> None:
    for code in LEGITIMATE_PATCHES:
        result = ws.run_cell(code)
        assert result.ok, (code, result)
    assert ws.get_value("total") == 3.0 and ws.get_value("text") == '{"a": '
    assert ws.run_cell("print('after')").stdout == "> after\n"
    assert [v.name for v in ws.list_variables()]
    ws.snapshot("c1")
    ws.restore("c1")
    assert ws.run_probe("result = total").value == 3.0
    assert ws.run_cell("1/0").error == "ZeroDivisionError: division by zero"
    assert not ws.restarts and not ws.degraded_reasons


def test_a_malformed_forgery_from_inside_is_a_kernel_fault_and_the_rebuilt_kernel_is_honest(
    ws: SandboxWorkspace,
) -> None:
    assert ws.run_cell("x = 5").ok
    # What the tripwire leaves open: the cell forges its OWN reply, written into its reply pipe with
    # the nonce read from the request loop's frame. Malformed, it is a reported fault.
    forged = ws.run_cell(
        f"{_TO_LOOP}import json, os\nfd, nonce = f.f_locals['reply_fd'], f.f_locals['nonce']\n"
        "body = json.dumps({'ok': 'yes', 'names': [1], 'nonce': nonce}).encode()\n"
        "os.write(fd, len(body).to_bytes(8, 'big') + b'J' + body)\n"
    )
    assert not forged.ok and "broke the protocol (a malformed run reply" in (forged.error or ""), forged
    assert len(ws.restarts) == 1
    later = ws.run_cell("1/0")  # the failed patching cell is not replayed: the new kernel is clean
    assert not later.ok and later.error == "ZeroDivisionError: division by zero"
    assert ws.get_value("x") == 5


FORGED = {
    "list": [
        {"variables": [{"name": "x"}]},  # a summary without its type: ValidationError in the parent before
        {"variables": "not a list"},
        {"ok": "yes", "variables": []},
    ],
    "get": [{"ok": True, "value": float("nan"), "missing": "no"}],
    "delete": [{"ok": True, "removed": [1, 2], "names": None}],
    "run": [
        # a flow read with an empty path: IndexError in the dataflow graph before
        {"ok": True, "flow": {"units": [{"unit": 0, "reads": [{"path": []}]}]}, "names": []},
        {"ok": True, "flow": {"units": [{"unit": 0, "writes": [{"path": ["a"], "deps": [{"path": [""]}]}]}]}},
        {"ok": True, "names": [{"x": 1}]},
        {"stdout": "no ok field"},
    ],
    "snapshot": [{"ok": True, "size": -5}, {"ok": True, "size": 10**12}],
}
CASES = [(op, forged) for op, shapes in FORGED.items() for forged in shapes]


@pytest.mark.parametrize(("op", "forged"), CASES, ids=[f"{op}-{i}" for i, (op, _) in enumerate(CASES)])
def test_forged_replies_are_a_reported_kernel_fault(
    ws: SandboxWorkspace, monkeypatch: pytest.MonkeyPatch, op: str, forged: dict
) -> None:
    from stateguard.sandbox import protocol

    ws.run_cell("x = 41 + 1")
    ws.snapshot("c1")
    real = protocol.FrameReader.read_message
    sent = {"n": 0}

    def forge_once(self, deadline=None):  # the next reply of `op` is replaced, keeping its nonce
        message = real(self, deadline)
        if sent["n"] == 0 and ("variables" in message or op != "list") and "nonce" in message:
            sent["n"] += 1
            return {**forged, "nonce": message["nonce"]}
        return message

    monkeypatch.setattr(protocol.FrameReader, "read_message", forge_once)
    if op == "run":
        result = ws.run_cell("y = 1")
        assert not result.ok and "broke the protocol" in (result.error or ""), result
    elif op == "list":
        assert [v.name for v in ws.list_variables()] == ["x"]  # asked again of the rebuilt kernel
    elif op == "get":
        assert ws.get_value("x") == 42
    elif op == "delete":
        assert ws.delete_variables(["x"]) == ["x"]
    elif op == "snapshot":
        ws.snapshot("c2")
        assert ws.checkpoint_info("c2").size_bytes < 10**6
    assert sent["n"] == 1 and len(ws.restarts) == 1 and "broke the protocol" in ws.restarts[0], ws.restarts
    assert ws.run_cell("x + 1").value == ("43" if op != "delete" else None) or op == "delete"


# A value whose own code patches the kernel whenever the kernel touches it: listing it (`__repr__`),
# deleting it (`__del__`) or loading it from a checkpoint (`__setstate__`). Each request trips the
# tripwire; the workspace is rebuilt (the checkpoint brings the value back) and asked again, which
# trips it again. Before, the second KernelDied came out of the workspace's public method.
_PATCH = "        import sys\n        sys.modules['__main__'].send_message = lambda *a: None\n"
HOSTILE = {
    "repr": f"class Evil:\n    def __repr__(self):\n{_PATCH}        return 'evil'\n",
    "del": f"class Evil:\n    def __del__(self):\n{_PATCH}",
    "setstate": f"class Evil:\n    def __setstate__(self, state):\n{_PATCH}",
}


def _plant(ws: SandboxWorkspace, hook: str) -> None:
    assert ws.run_cell("x = 1").ok
    assert ws.run_cell(HOSTILE[hook] + "e = Evil()\ne.a = 1").ok
    ws.snapshot("c1")  # what every rebuild restores: the hostile value comes back each time


def test_a_value_that_trips_the_kernel_whenever_it_is_listed_degrades_the_listing(
    ws: SandboxWorkspace,
) -> None:
    _plant(ws, "repr")
    listing = ws.list_variables()  # raised KernelTampered before
    assert sorted(v.name for v in listing) == ["Evil", "e", "x"], listing
    assert all(
        v.type == "unknown" and v.head.startswith("not described: the kernel died on it twice")
        for v in listing
    )
    json.loads(json.dumps([v.model_dump() for v in listing]))
    assert any(r.startswith("workspace: listing the variables failed") for r in ws.degraded_reasons)
    restarts = len(ws.restarts)
    assert ws.list_variables() == listing and len(ws.restarts) == restarts  # not asked again: same namespace
    value = ws.get_value("e")
    assert value["type"] == "unknown" and value["head"].startswith("not read: the kernel died on it twice"), (
        value
    )
    assert ws.get_value("x") == 1
    r = ws.run_cell("x + 1")
    assert r.value == "2" and any("listing the variables failed" in n for n in r.notes), r
    assert ws.run_cell("del e").ok
    assert sorted(v.name for v in ws.list_variables()) == ["Evil", "x"]  # a new namespace is listed again


def test_a_value_that_trips_the_kernel_when_deleted_is_not_removed(ws: SandboxWorkspace) -> None:
    _plant(ws, "del")
    assert ws.delete_variables(["e"]) == []  # raised KernelTampered before
    assert "e" in [v.name for v in ws.list_variables()]
    assert any(r.startswith("workspace: deleting e failed") for r in ws.degraded_reasons)
    assert ws.run_cell("x + 1").value == "2"


def test_a_checkpoint_whose_loading_trips_the_kernel_is_refused(ws: SandboxWorkspace) -> None:
    from stateguard.sandbox.checkpoints import CheckpointRefused

    _plant(ws, "setstate")
    assert ws.run_cell("del e").ok
    with pytest.raises(CheckpointRefused, match=r"'c1' could not be loaded.*kernel_tampered"):
        ws.restore("c1")  # raised KernelTampered before
    assert ws.degraded_reasons
    assert ws.run_cell("y = 2\ny").value == "2"


# Every reply of one op malformed, the rebuilt kernel's included: the public method answers anyway.
ALWAYS_FORGED = {
    "list": {"variables": "not a list"},
    "get": {"ok": True, "missing": "no"},
    "delete": {"ok": True, "removed": [1]},
    "snapshot": {"ok": True, "size": -5},
    "probe": {"ok": "yes"},
}


@pytest.mark.parametrize("op", ALWAYS_FORGED)
def test_a_reply_forged_again_after_the_rebuild_is_a_degraded_answer(
    ws: SandboxWorkspace, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    from stateguard.sandbox import replies

    assert ws.run_cell("x = 41 + 1").ok
    ws.snapshot("c1")
    real = replies.validate
    forging = {"on": True, "n": 0}

    def forge(reply_op, raw, listing=None):  # type: ignore[no-untyped-def]
        if forging["on"] and reply_op == op:
            forging["n"] += 1
            raw = {**ALWAYS_FORGED[op], "nonce": raw.get("nonce")}
        return real(reply_op, raw, listing)

    monkeypatch.setattr(replies, "validate", forge)
    if op == "list":
        assert [(v.name, v.type) for v in ws.list_variables()] == [("x", "unknown")]
    elif op == "get":
        assert ws.get_value("x")["type"] == "unknown"
    elif op == "delete":
        assert ws.delete_variables(["x"]) == []
    elif op == "snapshot":
        with pytest.raises(RuntimeError, match=r"snapshot 'c2' failed: .*broke the protocol"):
            ws.snapshot("c2")
        assert not ws.has_checkpoint("c2")
    else:
        probe = ws.run_probe("result = x")
        assert not probe.ok and "broke the protocol" in (probe.error or ""), probe
    forging["on"] = False
    assert forging["n"] >= 1 and ws.restarts and all("broke the protocol" in r for r in ws.restarts)
    assert ws.run_cell("x + 1").value == "43"


def test_well_formed_forged_dataflow_never_raises_in_the_parent() -> None:
    """Any run reply that passes the schema, however odd its dataflow (units out of order, paths of
    dunders, escapes and subscripts, aliases to unknown names), is applied by the parent's graph
    without an exception (the issue's forged flow raised IndexError there). Seeded, parent only."""
    import random

    from stateguard.dataflow import DataflowGraph
    from stateguard.sandbox.replies import MalformedReply, validate
    from stateguard.workspace import cell_names

    rng = random.Random(31)
    names = [
        "x",
        "df",
        "a.b",
        "__class__",
        "1",
        " ",
        "x@S3",
        "é",
        "\\udce9",
        "[0]",
        "df['a']",
        "__builtins__",
    ]

    def path() -> list[str]:
        return [rng.choice(names) for _ in range(rng.randint(1, 3))]

    def ref() -> dict:
        return {"path": path(), "deep": rng.random() < 0.5}

    def unit() -> dict:
        writes = [
            {
                "path": path(),
                "kind": rng.choice(["bind", "mutate", "grow", "delete"]),
                "deps": [ref() for _ in range(rng.randint(0, 2))],
                "keep": rng.random() < 0.3,
                "aliases": [rng.choice(names) for _ in range(rng.randint(0, 2))],
            }
            for _ in range(rng.randint(0, 3))
        ]
        reads = [ref() for _ in range(rng.randint(0, 3))]
        return {"unit": rng.randint(-3, 5), "complete": rng.random() < 0.8, "reads": reads, "writes": writes}

    applied = 0
    for _ in range(60):
        graph = DataflowGraph()
        for cell in range(1, 12):
            flow = {"units": [unit() for _ in range(rng.randint(0, 4))], "unchanged": [rng.choice(names)]}
            try:
                reply = validate("run", {"ok": True, "flow": flow, "names": names[:3]})
            except MalformedReply:
                continue
            graph.apply(cell, reply.flow)
            cell_names("x = df", reply.flow)
            for name in names:
                graph.stale_reasons(name)
            graph.forget([rng.choice(names)])
            applied += 1
    assert applied > 500, applied


def test_a_checkpoint_over_checkpoint_mb_is_refused_with_its_size(tmp_path: Path) -> None:
    limits = LIMITS.model_copy(update={"checkpoint_mb": 1})
    with SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", limits) as workspace:
        workspace.run_cell("import os\nbig = os.urandom(3 * 1024 * 1024)")
        with pytest.raises(RuntimeError, match=r"3 MiB, over checkpoint_mb=1"):
            workspace.snapshot("big")
        assert not workspace.has_checkpoint("big") and not workspace.restarts
        assert workspace.run_cell("len(big)").value == str(3 * 1024 * 1024)


# --- the scratch mirror never fakes or loses a file ---------------------------------------------


def _host(ws: SandboxWorkspace) -> dict[str, bytes]:
    """The host scratch, read through directory fds (a deep path is longer than PATH_MAX)."""
    out: dict[str, bytes] = {}

    def walk(fd: int, rel: str) -> None:
        for entry in os.scandir(fd):
            name = f"{rel}{entry.name}"
            if entry.is_symlink():
                out[name] = b"<link>"
            elif entry.is_dir():
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                try:
                    walk(sub, name + "/")
                finally:
                    os.close(sub)
            else:
                f = os.open(entry.name, os.O_RDONLY, dir_fd=fd)
                try:
                    out[name] = os.read(f, 1 << 24)
                finally:
                    os.close(f)

    root = os.open(ws.scratch_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        walk(root, "")
    finally:
        os.close(root)
    return out


def test_long_names_deep_paths_and_lookalike_names_are_all_mirrored(ws: SandboxWorkspace) -> None:
    r = ws.run_cell(
        "import os\nopen('gone.txt', 'w').write('old')\nopen('a', 'w').write('A')\n"
        "open('a.mirror-partial', 'w').write('B')\nopen('.sg-mirror-0123456789abcdef', 'w').write('C')"
    )
    assert r.ok, r
    r = ws.run_cell(
        "os.remove('gone.txt')\nopen('n' * 250, 'w').write('long')\n"
        "base = os.getcwd()\nfor _ in range(25):\n    os.mkdir('d' * 200)\n    os.chdir('d' * 200)\n"
        "open('deep.txt', 'w').write('deep')\nos.chdir(base)\n"
        "open('z-after.txt', 'w').write('z')"
    )
    assert r.ok and not [n for n in r.notes if n.startswith("scratch")], r
    host = _host(ws)
    deep = "/".join(["d" * 200] * 25) + "/deep.txt"
    assert host == {
        "a": b"A",
        "a.mirror-partial": b"B",
        ".sg-mirror-0123456789abcdef": b"C",
        "n" * 250: b"long",
        deep: b"deep",
        "z-after.txt": b"z",
    }


def test_a_same_size_rewrite_with_its_mtime_put_back_is_copied(ws: SandboxWorkspace) -> None:
    assert ws.run_cell("import os\nopen('v.txt', 'w').write('one')\nst = os.stat('v.txt')").ok
    assert ws.run_cell(
        "open('v.txt', 'w').write('two')\nos.utime('v.txt', ns=(st.st_atime_ns, st.st_mtime_ns))"
    ).ok
    assert (ws.scratch_dir / "v.txt").read_text() == "two"


def test_a_same_size_rewrite_in_the_tick_of_the_last_sync_is_copied(
    ws: SandboxWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before Linux 6.13 ctime moves once per clock tick: a rewrite within the tick of the last sync
    # kept the file's whole stamp and the host kept the old content. This machine's timestamps are
    # fine-grained, so the coarse clock is simulated: a stamp without the times, and every sync
    # counted as within the tick of the last change.
    from stateguard.sandbox import scratch

    monkeypatch.setattr(scratch, "_stamp", lambda info: (info.st_ino, info.st_size))
    monkeypatch.setattr(scratch, "FRESH_NS", 3600 * 10**9)
    assert ws.run_cell("open('v.txt', 'w').write('one')").ok
    assert (ws.scratch_dir / "v.txt").read_text() == "one"
    assert ws.run_cell("open('v.txt', 'w').write('two')").ok
    assert (ws.scratch_dir / "v.txt").read_text() == "two"


def test_a_host_scratch_deleted_between_cells_is_written_again(ws: SandboxWorkspace) -> None:
    assert ws.run_cell("import os\nos.makedirs('sub')\nopen('sub/keep.txt', 'w').write('k')").ok
    shutil.rmtree(ws.scratch_dir)
    r = ws.run_cell("1")
    assert (ws.scratch_dir / "sub" / "keep.txt").read_text() == "k"
    assert any("had disappeared" in n for n in r.notes), r.notes


def test_a_fifo_planted_on_the_host_while_the_kernel_is_dead_fails_nothing(tmp_path: Path) -> None:
    # The fallback recovery copies the host scratch as the base of later replays; a FIFO there made
    # that copy raise shutil.Error out of run_cell.
    limits = LIMITS.model_copy(update={"replay": False})
    with SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", limits) as workspace:
        assert workspace.run_cell("x = 1\nopen('a.txt', 'w').write('a')").ok
        os.mkfifo(workspace.scratch_dir / "pipe")
        _kill_kernel(workspace)
        r = workspace.run_cell("x")
        assert not r.ok and (r.error or "").startswith("SandboxDied:"), r
        assert any("left out of the copy a replay starts from: pipe" in n for n in r.notes), r.notes
        assert workspace.run_cell("open('a.txt').read()").value == "'a'"


@pytest.mark.parametrize("isolation", ["process", "bwrap"])
def test_a_module_planted_in_scratch_does_not_run_when_the_next_kernel_starts(
    tmp_path: Path, isolation: str
) -> None:
    # The kernel started with the scratch dir first on sys.path, so a `secrets.py` written by a cell
    # ran in the next kernel while it imported its own modules (before its tripwire was armed); under
    # process isolation, where the scratch dir is not emptied at a start, that start died and
    # KernelDied came out of run_cell.
    limits = LIMITS.model_copy(update={"isolation": isolation, "replay": False})
    with SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", limits) as workspace:
        planted = "open('secrets.py', 'w').write('import os\\nos._exit(5)\\n')\n"
        assert workspace.run_cell(planted + "open('helper.py', 'w').write('VALUE = 7\\n')").ok
        r = workspace.run_cell("import os\nos._exit(1)")
        assert not r.ok and (r.error or "").startswith("SandboxDied:"), r
        assert workspace.run_cell("import helper\nhelper.VALUE").value == "7"  # cells import what they wrote
        assert len(workspace.restarts) == 1


def test_links_planted_on_the_host_are_replaced_not_followed(ws: SandboxWorkspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious")
    assert ws.run_cell(
        "import os\nos.makedirs('sub')\nopen('sub/x.txt', 'w').write('1')\nopen('f.txt', 'w').write('1')"
    ).ok
    (ws.scratch_dir / "f.txt").unlink()
    (ws.scratch_dir / "f.txt").symlink_to(outside / "victim.txt")
    shutil.rmtree(ws.scratch_dir / "sub")
    (ws.scratch_dir / "sub").symlink_to(outside)
    for name in ("f.txt.mirror-partial", ".sg-mirror-x"):
        (ws.scratch_dir / name).symlink_to(outside / "victim.txt")
    r = ws.run_cell(
        "open('f.txt', 'w').write('2')\nopen('sub/victim.txt', 'w').write('2')\nopen('sub/x.txt', 'w').write('2')"
    )
    assert r.ok, r
    assert (outside / "victim.txt").read_text() == "precious" and sorted(
        p.name for p in outside.iterdir()
    ) == ["victim.txt"]
    assert not (ws.scratch_dir / "sub").is_symlink() and not (ws.scratch_dir / "f.txt").is_symlink()
    assert _host(ws) == {"f.txt": b"2", "sub/victim.txt": b"2", "sub/x.txt": b"2"}


def test_hard_links_are_mirrored_once_and_named(ws: SandboxWorkspace) -> None:
    r = ws.run_cell(
        "import os\nopen('big.bin', 'wb').write(os.urandom(1 << 20))\n"
        "for i in range(5):\n    os.link('big.bin', f'link{i}.bin')"
    )
    assert r.ok
    [kept] = _host(ws)  # whichever name the walk met first
    assert sum(f"a hard link to {kept}" in n for n in r.notes) == 5, r.notes


def test_sparse_files_count_at_their_apparent_size(ws: SandboxWorkspace) -> None:
    big = ws.run_cell("f = open('sparse.bin', 'wb')\nf.truncate(2 << 30)")
    assert not big.ok and "File too large" in (big.error or ""), big  # RLIMIT_FSIZE = scratch_mb
    r = ws.run_cell(
        "f.close()\nfor name in ('s1.bin', 's2.bin'):\n    with open(name, 'wb') as f:\n        f.truncate(40 << 20)"
    )
    assert r.ok, r
    host = _host(ws)
    assert len([n for n in host if n.startswith("s") and n.endswith(".bin") and n != "sparse.bin"]) == 1, (
        sorted(host)
    )
    assert any("past scratch_mb (64 MiB)" in n for n in r.notes), r.notes


@pytest.mark.parametrize("kind", ["oversize", "fifo", "socket", "hardlink"])
def test_a_host_scratch_the_sandbox_cannot_hold_is_refused_untouched(tmp_path: Path, kind: str) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    target = scratch / "thing"
    if kind == "oversize":
        with target.open("wb") as f:
            f.truncate(100 << 20)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
    else:
        target.write_text("x")
        os.link(target, scratch / "other")
    before = target.lstat()
    with pytest.raises(ValueError, match=r"cannot be copied into the sandbox unchanged: .*(thing|other|MiB)"):
        SandboxWorkspace(None, scratch, tmp_path / "ckpt", LIMITS)
    after = target.lstat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


# --- one resource envelope for the kernel's process tree ----------------------------------------

SPAWN = (
    "import ctypes, os, sys, time\nlibc = ctypes.CDLL(None)\n"
    "def spawn(code):  # libc directly: the audit hook never sees it, only the OS boundary counts\n"
    "    pid = ctypes.c_int()\n"
    "    argv = (ctypes.c_char_p * 4)(sys.executable.encode(), b'-c', code.encode(), None)\n"
    "    assert libc.posix_spawn(ctypes.byref(pid), sys.executable.encode(), None, None, argv, (ctypes.c_char_p * 1)(None)) == 0\n"
    "    return pid.value\n"
    "def rss_mib(pid):\n"
    "    try:\n"
    "        return int([l for l in open(f'/proc/{pid}/status') if l.startswith('VmRSS')][0].split()[1]) / 1024\n"
    "    except (OSError, IndexError):\n"
    "        return 0.0\n"
)


def _envelope_here() -> bool:
    from stateguard.sandbox import cgroup

    envelope = cgroup.try_create(256, 8)
    if envelope is None:
        return False
    envelope.remove()
    return True


needs_cgroup = pytest.mark.skipif(not _envelope_here(), reason="no writable cgroup on this machine")


@pytest.fixture
def small(tmp_path: Path):
    # Only memory is small; the wall time is generous: on a loaded machine four interpreters take
    # many seconds to start and fill their memory, and the cells below wait for that, not a timer.
    limits = LIMITS.model_copy(update={"memory_mb": 512, "wall_seconds_per_cell": 120})
    with SandboxWorkspace(None, tmp_path / "scratch", tmp_path / "ckpt", limits) as workspace:
        yield workspace


# Four children that each hold 300 MiB and then say so with a file; the cell waits until every
# child has either said so or ended. (A fixed 6 s sleep could end, on a loaded machine, before any
# child had its memory: then no OOM kill had happened yet and the test failed for the load.)
SPREAD = SPAWN + (
    'child = \'import os, time; x = b"x" * (300 << 20); open(f"ready-{os.getpid()}", "w").close(); time.sleep(120)\'\n'
    "pids = [spawn(child) for _ in range(4)]\nended = {}\ndeadline = time.monotonic() + 100\n"
    "while time.monotonic() < deadline:\n"
    "    for p in pids:\n"
    "        if p not in ended and os.waitpid(p, os.WNOHANG)[0]:\n"
    "            ended[p] = True\n"
    "    if all(p in ended or os.path.exists(f'ready-{p}') for p in pids):\n"
    "        break\n"
    "    time.sleep(0.05)\n"
    "alive = [p for p in pids if p not in ended]\n"
    "(round(sum(rss_mib(p) for p in alive) + rss_mib(os.getpid())), len(ended))"
)


@needs_cgroup
def test_memory_spread_over_processes_stays_under_memory_mb(small: SandboxWorkspace) -> None:
    envelope = small.kernel.envelope
    assert envelope is not None
    r = small.run_cell(SPREAD)
    if r.ok:
        total, ended = eval(r.value or "")
        assert total < 512, (total, r)  # four 300 MiB children cannot all live inside a 512 MiB envelope
        assert ended >= 2 and envelope.oom_kills() >= 1, (ended, envelope.oom_kills(), r)
    else:  # the OOM killer chose the kernel itself: the envelope held, and the kernel was recovered
        assert "SIGKILL (the envelope's OOM killer has ended" in (r.error or ""), r
    assert small.run_cell("1 + 1").value == "2"


@needs_cgroup
def test_memfd_is_charged_to_the_envelope(small: SandboxWorkspace) -> None:
    r = small.run_cell(
        # 48 files of 32 MiB: each stays under RLIMIT_FSIZE (scratch_mb), only the envelope sees the sum
        "import os\nchunk = b'x' * (32 << 20)\nfds = []\n"
        "for _ in range(48):\n    fds.append(os.memfd_create('big'))\n    os.write(fds[-1], chunk)\n'wrote 1.5 GiB'"
    )
    assert r.value != "'wrote 1.5 GiB'" and not r.ok, r
    assert "the envelope's OOM killer" in (r.error or ""), r  # the envelope ended it, not a timer
    assert small.run_cell("1 + 1").value == "2"


@needs_cgroup
def test_a_child_spinning_after_its_cell_is_killed_with_the_cell(small: SandboxWorkspace) -> None:
    r = small.run_cell(SPAWN + "child = spawn('while True: pass')")
    assert r.ok and any("killed process(es) the cell left running" in n and "python" in n for n in r.notes), r
    alive = small.run_cell("sorted(int(p) for p in os.listdir('/proc') if p.isdigit())")
    assert alive.value == "[1, 2]", alive  # the sandbox's pid 1 and the kernel, nothing else


def test_without_a_cgroup_the_degradation_is_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stateguard.sandbox import cgroup

    monkeypatch.setattr(cgroup, "try_create", lambda *a: None)
    with SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", LIMITS) as workspace:
        assert workspace.kernel.envelope is None
        r = workspace.run_cell("1")
        assert any("no cgroup for the kernel's process tree" in n for n in r.notes), r.notes


# --- honest recovery ------------------------------------------------------------------------------


def _kill_kernel(ws: SandboxWorkspace) -> None:
    import signal

    os.kill(ws.pid, signal.SIGKILL)
    ws.kernel.proc.wait(10)


def test_a_replay_whose_values_differ_is_not_called_faithful(ws: SandboxWorkspace) -> None:
    assert ws.run_cell(
        "import random\nx = random.random()\ny = 7"
    ).ok  # prints nothing: same outcome on replay
    _kill_kernel(ws)
    r = ws.run_cell("y")
    assert not any("every cell ended as before" in n for n in r.notes), r.notes
    assert any("differ from those before the kernel died: x" in n for n in r.notes), r.notes
    (reason,) = ws.degraded_reasons
    assert "differ from those before the kernel died: x" in reason, reason


def test_a_faithful_replay_says_the_values_were_checked(ws: SandboxWorkspace) -> None:
    assert ws.run_cell("import random\nrandom.seed(1)\nx = random.random()\nrows = [1, 2]").ok
    _kill_kernel(ws)
    r = ws.run_cell("x > 0, rows")
    assert r.value == "(True, [1, 2])", r
    assert any(
        "every cell ended as before; 2 variable(s) hash as before the kernel died" in n for n in r.notes
    ), r.notes
    assert ws.degraded_reasons == []


@pytest.mark.parametrize("damage", ["swap", "flip", "truncate"])
def test_a_swapped_or_damaged_checkpoint_file_is_refused(ws: SandboxWorkspace, damage: str) -> None:
    from stateguard.sandbox.checkpoints import CheckpointRefused

    assert ws.run_cell("v = 'three'").ok
    ws.snapshot("c3")
    assert ws.run_cell("v = 'four!'").ok  # same size pickle
    ws.snapshot("c4")
    c3, c4 = ws.checkpoint_dir / "c3.pkl", ws.checkpoint_dir / "c4.pkl"
    if damage == "swap":
        assert c3.stat().st_size == c4.stat().st_size
        tmp = c3.with_name("x")
        c3.rename(tmp)
        c4.rename(c3)
        tmp.rename(c4)
    elif damage == "flip":
        data = bytearray(c3.read_bytes())
        data[len(data) // 3] ^= 0xFF
        c3.write_bytes(bytes(data))
    else:
        c3.write_bytes(c3.read_bytes()[:-5])
    with pytest.raises(CheckpointRefused, match=r"c3.pkl"):
        ws.restore("c3")
    assert ws.get_value("v") == "four!"  # nothing was loaded


def test_a_checkpoint_file_carries_the_xxh3_of_its_bytes_and_an_older_one_is_refused(
    ws: SandboxWorkspace,
) -> None:
    import struct

    import xxhash

    from stateguard.sandbox.checkpoints import MAGIC, CheckpointRefused

    assert ws.run_cell("import numpy as np\nv = np.arange(300_000)").ok  # a few MB: many pipe buffers
    ws.snapshot("c5")
    data = (ws.checkpoint_dir / "c5.pkl").read_bytes()
    assert data.endswith(MAGIC)
    (length,) = struct.unpack(">Q", data[-len(MAGIC) - 8 : -len(MAGIC)])
    identity = json.loads(data[-len(MAGIC) - 8 - length : -len(MAGIC) - 8])
    payload = data[: -len(MAGIC) - 8 - length]
    # The 2.4 MB array is a part of its own (`parts.py`): the identity records its size and digest,
    # and the checkpoint's digest covers its bytes, then that list of parts.
    (key,) = identity["parts"]
    part = (ws.checkpoint_dir / ".parts" / f"{key}.part").read_bytes()
    (part_length,) = struct.unpack(">Q", part[-16:-8])
    part_bytes = part[: -16 - part_length]
    parts = {key: [len(part_bytes), xxhash.xxh3_128(part_bytes).hexdigest()]}
    listed = json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
    assert identity == {
        "checkpoint_id": "c5",
        "size": len(payload),
        "xxh3_128": xxhash.xxh3_128(payload + listed).hexdigest(),
        "parts": parts,
    }
    assert ws.run_cell("v = None").ok
    ws.restore("c5")
    assert ws.run_cell("ok = bool((v == np.arange(300_000)).all())").ok
    assert ws.get_value("ok") is True
    # A file of the earlier format (a SHA-256 identity, magic SGCKPT01) is refused, not loaded.
    old = json.dumps({"checkpoint_id": "c5", "size": len(payload), "sha256": "0" * 64}).encode()
    (ws.checkpoint_dir / "c5.pkl").write_bytes(payload + old + struct.pack(">Q", len(old)) + b"SGCKPT01")
    with pytest.raises(CheckpointRefused, match="not written by this version"):
        ws.restore("c5")


def test_a_snapshot_streams_through_a_widened_pipe(
    ws: SandboxWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from stateguard.sandbox import process

    sizes: list[int | None] = []
    real = process.widen_pipe

    def spy(fd: int) -> int | None:
        sizes.append(real(fd))
        return sizes[-1]

    monkeypatch.setattr(process, "widen_pipe", spy)
    assert ws.run_cell("w = list(range(200_000))").ok
    assert sizes == []  # a cell's reply pipe keeps the default size
    ws.snapshot("c6")
    assert sizes == [process.PIPE_BYTES]  # Linux grants an unprivileged process 1 MiB
    read_fd, write_fd = os.pipe()
    try:
        assert process.widen_pipe(read_fd) == fcntl.fcntl(read_fd, 1032) == process.PIPE_BYTES  # F_GETPIPE_SZ
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert ws.run_cell("w = None").ok
    ws.restore("c6")
    assert ws.run_cell("n = len(w)").ok and ws.get_value("n") == 200_000


# --- network=True under bwrap --------------------------------------------------------------------


def test_network_under_bwrap_is_refused_when_the_limits_are_read(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from eval.components import check_workspace

    with pytest.raises(ValidationError, match="network=True is not available with isolation='bwrap'"):
        SandboxLimits(network=True)
    with pytest.raises(ValueError, match="network=True is not available"):
        check_workspace("sandbox", {"network": True})  # make eval: exit 2 at start-up
    with pytest.raises(ValueError, match="choose isolation='process' explicitly"):
        SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", LIMITS.model_copy(update={"network": True}))
    assert not (tmp_path / "s").exists()
    SandboxLimits(network=True, isolation="process")  # the documented opt-in


def test_a_turn_that_prints_a_lone_surrogate_does_not_crash_either_arm(tmp_path: Path) -> None:
    """End to end (issue 31: both arms' rollouts crashed, exit 1): turn 1 prints one and answers one."""
    from stateguard.flows import LONGDS
    from stateguard.policies.rules import RulesManager
    from stateguard.rollout import rollout
    from stateguard.task import load_task
    from stateguard.workers import FaultModel, ScriptedWorker

    root = Path(__file__).resolve().parents[2]
    task = load_task(root / "eval" / "benchmarks" / "demo" / "six_turn")
    first = task.turns[0]
    code = "print('caf\\udce9')\n" + first.code.replace(
        '"n_orders": int(len(sales))', '"n_orders": "caf\\udce9"'
    )
    assert code != first.code
    turns = [first.model_copy(update={"code": code})]
    task = task.model_copy(update={"turns": turns + list(task.turns[1:])})
    for arm, manager in (("baseline", None), ("stateguard", RulesManager())):
        result = rollout(
            task,
            ScriptedWorker(FaultModel(faults=[]), reference=task),
            DictWorkspace(),
            flow=LONGDS,
            manager=manager,
            run_dir=tmp_path / arm,
        )
        assert result.answers[1]["n_orders"] == "caf\\udce9", result.answers[1]
        json.loads((tmp_path / arm / "result.json").read_text())
        events = read_trace(tmp_path / arm / "trace.jsonl")
        assert any("caf\\\\udce9" in e.model_dump_json() for e in events)  # the escape, JSON-encoded
