"""Per-workspace resource limits of the sandboxed kernel.

The limits travel to the kernel in its first message; the parent enforces the one limit a
runaway child could otherwise escape (the wall deadline plus `grace_seconds`, after which the
process is killed and restarted from the last checkpoint).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SandboxLimits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds_per_cell: float = Field(
        default=60,
        gt=0,
        description="CPU seconds one cell (or probe) may use; the kernel raises TimeoutError in the cell "
        "when they run out (ITIMER_PROF).",
    )
    wall_seconds_per_cell: float = Field(
        default=120,
        gt=0,
        description="Wall-clock seconds one cell (or probe) may take; the kernel raises TimeoutError in the "
        "cell (ITIMER_REAL), and the parent kills the process if no answer arrives within "
        "wall_seconds_per_cell + grace_seconds.",
    )
    memory_mb: int = Field(
        default=4096,
        ge=256,
        description="Address-space cap of the kernel process in MiB (RLIMIT_AS), including the interpreter "
        "and pandas (about 200 MiB). Allocations past it raise MemoryError in the cell.",
    )
    network: bool = Field(
        default=False,
        description="Allow network access. When False the kernel runs in an empty network namespace "
        "(`unshare -n`) where available, and socket creation is refused in any case.",
    )
    max_output_chars: int = Field(
        default=20000,
        ge=100,
        description="Characters of stdout and of stderr kept per cell; the rest is counted and dropped.",
    )
    grace_seconds: float = Field(
        default=5.0,
        gt=0,
        description="Extra seconds past the wall limit before the parent kills an unresponsive kernel "
        "(covers the before/after hashing and the reply).",
    )
