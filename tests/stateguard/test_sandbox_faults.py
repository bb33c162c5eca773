"""Fault suite: what the parent does with text, replies and files it cannot trust (issue 31).

Each test is one attempt of the adversarial pass: a cell (or a forged reply, or a planted host
file) and the outcome the parent must show. The rule for all of them: 0 exceptions in the parent,
0 silent wrong results; a fault is reported (a failed cell, a note, a degraded reason).
"""

from __future__ import annotations

import json
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
    assert not patched.ok and "__code__ is not allowed" in (patched.error or ""), patched
    later = ws.run_cell("1/0")
    assert not later.ok and later.error == "ZeroDivisionError: division by zero" and later.value is None


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


def test_a_checkpoint_over_checkpoint_mb_is_refused_with_its_size(tmp_path: Path) -> None:
    limits = LIMITS.model_copy(update={"checkpoint_mb": 1})
    with SandboxWorkspace(None, tmp_path / "s", tmp_path / "c", limits) as workspace:
        workspace.run_cell("import os\nbig = os.urandom(3 * 1024 * 1024)")
        with pytest.raises(RuntimeError, match=r"3 MiB, over checkpoint_mb=1"):
            workspace.snapshot("big")
        assert not workspace.has_checkpoint("big") and not workspace.restarts
        assert workspace.run_cell("len(big)").value == str(3 * 1024 * 1024)
