"""The tripwire's check in-process (no kernel): silent until a watched object changes, with and
without the dict version tags. The kernel-level routes are in tests/stateguard/test_sandbox_faults.py.

    .venv/bin/python -m pytest -q tests/stateguard/sandbox/test_tripwire.py
"""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

from stateguard.sandbox import protocol, tripwire


class Helper:
    def step(self) -> int:
        return 1


class FakeKernel:
    def __init__(self) -> None:
        self.helper = Helper()
        self.limit = 3
        self.nonce: Any = None  # changes on every request: not watched

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "n": len(request)}


@pytest.fixture(params=["version tags", "no version tags"])
def armed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    if request.param == "no version tags":  # another interpreter layout: every dict compared in full
        monkeypatch.setattr(tripwire, "_version_tags", lambda: None)
    kernel = FakeKernel()
    handlers = {"run": kernel.run}
    watch = tripwire.arm(kernel, handlers, (protocol.send_message,))
    assert tripwire.verify(watch) is None
    return kernel, handlers, watch


def test_the_fast_path_is_available_on_this_interpreter() -> None:
    assert tripwire._version_tags() is not None
    assert isinstance(tripwire.code_pointer(tripwire.verify), ctypes.c_void_p)


def test_unchanged_state_and_legitimate_changes_pass(armed, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _, watch = armed
    kernel.nonce = "abc"  # per-request attributes
    monkeypatch.setattr(protocol, "MAX_MESSAGE_BYTES", 5)  # a value that is not code
    monkeypatch.setattr("builtins.print", lambda *a, **k: None)  # builtins are the cells' to patch
    monkeypatch.setattr("json.dumps", lambda *a, **k: "{}")
    assert tripwire.verify(watch) is None


@pytest.mark.parametrize(
    "change",
    [
        "module function",
        "module builtin shadowed",
        "handler table",
        "kernel attribute",
        "kernel attribute added",
        "class attribute added",
    ],
)
def test_each_watched_change_is_named(armed, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    kernel, handlers, watch = armed
    if change == "module function":
        monkeypatch.setattr(protocol, "write_all", lambda fd, data: None)
        expected = "module stateguard.sandbox.protocol: write_all was replaced"
    elif change == "module builtin shadowed":
        monkeypatch.setattr(protocol, "len", lambda x: 0, raising=False)
        expected = "a builtin the reply path uses, shadowed in stateguard.sandbox.protocol"
    elif change == "handler table":
        monkeypatch.setitem(handlers, "run", lambda request: {"ok": True})
        expected = "the handler table: run was replaced"
    elif change == "kernel attribute":
        monkeypatch.setattr(kernel, "helper", Helper())
        expected = "the kernel's attributes: helper was replaced"
    elif change == "kernel attribute added":
        monkeypatch.setattr(kernel, "run", lambda request: {"ok": True}, raising=False)
        expected = "the kernel's attributes (a name was added or removed)"
    else:
        monkeypatch.setattr(FakeKernel, "__getattribute__", object.__getattribute__, raising=False)
        expected = "class FakeKernel (a name was added or removed)"
    found = tripwire.verify(watch)
    assert found is not None and found.startswith(expected), found


def test_a_swapped_code_pointer_is_seen(armed) -> None:
    _, _, watch = armed
    target = protocol.write_all
    original = target.__code__
    slot = tripwire.code_pointer(target)
    replacement = (lambda fd, data: None).__code__
    slot.value = id(replacement)  # what a cell's ctypes write does
    try:
        found = tripwire.verify(watch)
    finally:
        slot.value = id(original)
    assert found is not None and "__code__" in found and "write_all" in found, found
    assert tripwire.verify(watch) is None
