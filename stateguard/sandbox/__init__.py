"""Sandboxed live workspace: the analysis namespace in a separate, limited kernel process.

    from stateguard.sandbox import SandboxLimits, SandboxWorkspace
    ws = SandboxWorkspace(task_dir, scratch_dir, checkpoint_dir, SandboxLimits(memory_mb=2048))
    ws.run_cell("import pandas as pd\\ndf = pd.read_csv('data.csv')\\ndf.shape")

Modules: `workspace` (the parent-side `SandboxWorkspace`), `isolation` (the bubblewrap
sandbox), `seccomp` (its system-call filter), `process` (starting and talking to the kernel),
`protocol` (framing and channels), `kernel` (the child's request loop), `policy` (the child's
audit hook), `guards` (per-cell timers, output caps, rlimits, background threads), `scratch`
(the capped scratch tmpfs and its host mirror), `recovery` (replay after a kernel death),
`values` (hashes and JSON views of values), `snapshot` (checkpoint pickling, kernel side),
`checkpoints` (checkpoint files, parent side), `limits` (`SandboxLimits`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stateguard.lazy_exports import lazy_getattr

# Imported on first use (PEP 562): the kernel process (`python -m stateguard.sandbox.kernel`)
# imports this package too, and must not pay for the parent's modules at every start.
_NAMES_BY_MODULE = {
    "stateguard.sandbox.checkpoints": ("CheckpointInfo",),
    "stateguard.sandbox.isolation": ("IsolationUnavailable", "check_isolation"),
    "stateguard.sandbox.limits": ("SandboxLimits",),
    "stateguard.sandbox.process": ("KernelDied", "network_namespace_available"),
    "stateguard.sandbox.sandbox_workspace": ("SandboxWorkspace",),
}

if TYPE_CHECKING:
    from stateguard.sandbox.checkpoints import CheckpointInfo
    from stateguard.sandbox.isolation import IsolationUnavailable, check_isolation
    from stateguard.sandbox.limits import SandboxLimits
    from stateguard.sandbox.process import KernelDied, network_namespace_available
    from stateguard.sandbox.sandbox_workspace import SandboxWorkspace


__getattr__ = lazy_getattr(__name__, {n: m for m, names in _NAMES_BY_MODULE.items() for n in names})


__all__ = [
    "CheckpointInfo",
    "IsolationUnavailable",
    "KernelDied",
    "SandboxLimits",
    "SandboxWorkspace",
    "check_isolation",
    "network_namespace_available",
]
