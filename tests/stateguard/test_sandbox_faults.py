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
