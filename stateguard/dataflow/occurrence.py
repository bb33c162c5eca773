"""One recorded run of a statement unit: what the recorder fills while a cell runs and the resolver
reads afterwards (its own module so that neither of the two imports the other)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Occurrence"]


@dataclass(eq=False)
class Occurrence:
    """One run of a statement unit."""

    uid: int
    blocks: set[int] = field(default_factory=set)
    captures: dict[int, list[Any]] = field(default_factory=dict)  # strong refs: ids stay valid
    keys: dict[int, list[Any] | None] = field(default_factory=dict)  # None: too many or not plain
    done: bool = False
