"""The one rule every `{name: factory}` registry follows when a name is added.

The registries themselves live with the protocol they build (`stateguard.policies.registry`,
`stateguard.workers.registry`, `eval.benchmarks.registry`); each `register_*` there calls `add`.

    add(MANAGERS, "mine", factory, axis="manager", flagged=MODEL_MANAGERS, flag=True)
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["add"]

F = TypeVar("F")


def add(
    registry: dict[str, F],
    name: str,
    factory: F,
    *,
    axis: str,
    flagged: set[str] | None = None,
    flag: bool = False,
) -> None:
    """Put `factory` under `name`, and `name` in `flagged` when `flag` (the set of registered names
    that call a model, whose endpoint a run checks first). A taken name is refused: silently
    replacing a built-in would change what an existing config runs."""
    if name in registry:
        raise ValueError(
            f"{axis} {name!r} is already registered; pick another name (or remove it from the registry first)"
        )
    registry[name] = factory
    if flag and flagged is not None:
        flagged.add(name)
