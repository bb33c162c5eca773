"""Per-workspace settings of the sandboxed kernel: isolation mode and resource limits.

The limits travel to the kernel in its first message; the parent enforces the one limit a
runaway child could otherwise escape (the wall deadline plus `grace_seconds`, after which the
process is killed and the workspace recovered). `isolation`, `scratch_mb` and `max_processes`
shape the bubblewrap sandbox the kernel starts in (`isolation.py`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
        description="Memory of the kernel in MiB, two ways: the address-space cap of each process (RLIMIT_AS, "
        "including the interpreter and pandas, about 200 MiB; allocations past it raise MemoryError in the cell), "
        "and, where a cgroup is available (sandbox/cgroup.py), the RAM of the whole process tree together: "
        "children, shared memory, memfd files and the files in the sandbox's tmpfs mounts; past that the OOM "
        "killer ends a process of the tree and the workspace recovers.",
    )
    network: bool = Field(
        default=False,
        description="Allow network access. When False the kernel has its own network namespace with only a "
        "loopback device, and the audit hook refuses sockets as well. True is accepted with isolation='process' "
        "only (the kernel then shares the host's network, loopback services included); with bwrap it is refused "
        "when the limits are read, since the sandbox has no network set-up of its own.",
    )
    isolation: Literal["bwrap", "process"] = Field(
        default="bwrap",
        description="`bwrap`: the kernel runs in a bubblewrap sandbox (own mount, pid, network, ipc and uts "
        "namespaces, an unprivileged uid without capabilities, seccomp, only the interpreter, the task data "
        "and its scratch visible); the workspace refuses to start where bubblewrap does not work. `process`: "
        "the weaker mode without bubblewrap (a separate process, the audit hook, `unshare -n`), only when "
        "chosen explicitly.",
    )
    scratch_mb: int = Field(
        default=1024,
        ge=16,
        description="Size cap of the scratch dir in MiB (bwrap: a tmpfs of this size, mirrored to the host "
        "scratch dir after every cell). Writes past it fail with 'No space left on device'.",
    )
    tmp_mb: int = Field(
        default=64,
        ge=1,
        description="Size cap in MiB of each of the sandbox's private /tmp and /dev/shm (bwrap only; TMPDIR "
        "points at the scratch dir).",
    )
    checkpoint_mb: int = Field(
        default=1024,
        ge=1,
        description="Largest checkpoint in MiB. A snapshot whose pickled namespace is larger fails with an "
        "error naming its size (nothing is written); a kernel that announces or sends more is killed as faulty.",
    )
    max_processes: int = Field(
        default=64,
        ge=4,
        description="Process and thread cap of the sandbox uid (RLIMIT_NPROC; bwrap only) and, with a cgroup, "
        "of the kernel's whole tree (pids.max, plus 2 for the sandbox's pid 1 and the kernel). Forks past it fail "
        "with 'Resource temporarily unavailable'. Processes a cell leaves running are killed when it ends.",
    )
    replay: bool = Field(
        default=True,
        description="After the kernel dies, rebuild the workspace by re-running its history (cells, deletes, "
        "restores) in a fresh kernel, checked against the recorded outcomes and the last checkpoint; "
        "when that is impossible or diverges, restore the last checkpoint and mark the workspace degraded.",
    )
    replay_seconds: float = Field(
        default=600,
        gt=0,
        description="Wall-clock budget for one replay; past it the replay is abandoned (degraded).",
    )
    max_output_chars: int = Field(
        default=20000,
        ge=100,
        description="Characters of stdout and of stderr kept per cell; the rest is counted and dropped.",
    )
    probe_prefork: Literal["off", "adaptive", "always"] = Field(
        default="adaptive",
        description="When the kernel forks a probe's child in advance (sandbox/probe_fork.py): 'off', each probe "
        "forks the kernel on its own path; 'always', at the end of every cell, delete and restore the kernel forks "
        "a waiting child that the next probe uses (a probe after a cell: 0.7x the time; the cell carries the fork), "
        "at the cost of a fork whenever no probe follows (make eval, which asks no probe: +40% CPU); 'adaptive', "
        "as 'always' but only after a namespace version that was probed, so a run without probes never forks in "
        "advance.",
    )
    grace_seconds: float = Field(
        default=5.0,
        gt=0,
        description="Extra seconds past the wall limit before the parent kills an unresponsive kernel "
        "(covers the before/after hashing and the reply).",
    )

    @model_validator(mode="after")
    def _network_needs_process_isolation(self) -> SandboxLimits:
        check_network(self)
        return self


def check_network(limits: SandboxLimits) -> None:
    """network=True under bwrap would hand the sandbox the host's network namespace (every service
    on the host's 127.0.0.1 included): refused, naming the two choices."""
    if limits.network and limits.isolation == "bwrap":
        raise ValueError(
            "network=True is not available with isolation='bwrap' (the sandbox would share the host's network, "
            "127.0.0.1 included); keep network=False, or choose isolation='process' explicitly"
        )
