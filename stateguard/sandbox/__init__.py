"""Sandboxed live workspace: the analysis namespace in a separate, limited kernel process.

    from stateguard.sandbox import SandboxLimits, SandboxWorkspace
    ws = SandboxWorkspace(task_dir, scratch_dir, checkpoint_dir, SandboxLimits(memory_mb=2048))
    ws.run_cell("import pandas as pd\\ndf = pd.read_csv('data.csv')\\ndf.shape")

Modules: `workspace` (the parent-side `SandboxWorkspace`), `process` (starting and talking to
the kernel), `protocol` (pipe framing), `kernel` (the child's request loop), `policy` (the
child's audit hook), `guards` (per-cell timers, output caps, rlimits), `values` (hashes and
JSON views of values), `snapshot` (checkpoint pickling, kernel side), `checkpoints` (checkpoint
files, parent side), `limits` (`SandboxLimits`).
"""

from stateguard.sandbox.checkpoints import CheckpointInfo
from stateguard.sandbox.limits import SandboxLimits
from stateguard.sandbox.process import KernelDied, network_namespace_available
from stateguard.sandbox.workspace import SandboxWorkspace

__all__ = ["CheckpointInfo", "KernelDied", "SandboxLimits", "SandboxWorkspace", "network_namespace_available"]
