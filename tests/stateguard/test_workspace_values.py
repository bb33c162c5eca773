"""Shown cell values are stable across runs: default object reprs lose their memory address."""

from __future__ import annotations

from stateguard.workspace import DictWorkspace


class Thing:
    pass


def test_object_addresses_are_not_shown() -> None:
    ws = DictWorkspace({"Thing": Thing})
    value = ws.run_cell("Thing()").value
    assert value is not None and value.endswith("Thing object at 0x…>")
    assert ws.run_cell("'at 0x12ab>'").value == "'at 0x12ab>'"  # only a repr's trailing address is touched
