"""The interfaces StateWise ships: `data` (sandboxed pandas workspace) and `coding` (bubblewrap shell).

from stateguard.statewise.interfaces import get_interface
interface = get_interface("coding")
"""

from __future__ import annotations

from stateguard.statewise.interface import Interface

INTERFACES = ("data", "coding")


def get_interface(name: str) -> Interface:
    if name == "data":
        from stateguard.statewise.interfaces.data import DATA_INTERFACE

        return DATA_INTERFACE
    if name == "coding":
        from stateguard.statewise.interfaces.coding import CODING_INTERFACE

        return CODING_INTERFACE
    raise ValueError(f"interface {name!r}: use one of {', '.join(INTERFACES)}")
