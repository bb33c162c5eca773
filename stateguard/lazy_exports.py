"""Names a package exports but imports only on first use (PEP 562 module `__getattr__`).

    __getattr__ = lazy_getattr(__name__, {"SandboxWorkspace": "stateguard.sandbox.sandbox_workspace"})

A package the sandbox kernel imports (`stateguard`, `stateguard.sandbox`) must not pay for the
parent's modules at every kernel start; its public names still resolve as attributes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `exports[name]` and returns its `name`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
