"""The interfaces StateWise ships: `data` (sandboxed pandas workspace) and `coding` (bubblewrap shell).

from statewise.interfaces import get_interface
interface = get_interface("coding")
"""

from __future__ import annotations

from statewise.interface import Interface

INTERFACES = ("data", "coding")


def get_interface(name: str) -> Interface:
    if name == "data":
        from statewise.interfaces.data import DATA_INTERFACE

        return DATA_INTERFACE
    if name == "coding":
        from statewise.interfaces.coding import CODING_INTERFACE

        return CODING_INTERFACE
    raise ValueError(f"interface {name!r}: use one of {', '.join(INTERFACES)}")
