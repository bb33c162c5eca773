"""A small seccomp filter for the sandbox (bwrap `--seccomp FD`), written as classic BPF.

It is a deny-list on top of what the missing capabilities already refuse: system calls that
reach kernel machinery an analysis kernel never needs and that widen the attack surface of the
kernel the sandbox shares with the host. They fail with EPERM (so libraries see an ordinary
error, nothing crashes):

- mount and namespace control: mount, umount2, pivot_root, chroot, the new mount API, unshare,
  setns, and clone with any CLONE_NEW* flag (so no nested user namespace either);
  clone3 fails with ENOSYS, which makes the C library fall back to clone, whose flags can be
  checked (clone3 passes them in memory a filter cannot read);
- debugging other processes: ptrace, process_vm_readv/writev, perf_event_open;
- kernel keyrings, bpf, userfaultfd, io_uring, open_by_handle_at, kernel modules, kexec,
  reboot, swap, accounting, quotas, syslog, setting the clock or host name;
- the x32 system-call ABI (numbers with bit 30 set) and any other architecture than the one
  the filter was written for (the process is killed: its numbers would mean other calls).

Only x86_64 has a table here; elsewhere `build_filter` returns None and the sandbox runs
without seccomp (namespaces, uid and capabilities still apply), which `describe` reports.
"""

from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _ARG0_LOW = 0, 4, 16
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
CLONE_NEW_FLAGS = 0x7E020080  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME

DENIED_X86_64 = {
    "ptrace": 101,
    "syslog": 103,
    "adjtimex": 159,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "pivot_root": 155,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
}
CLONE_X86_64, CLONE3_X86_64 = 56, 435


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _program(denied: list[int], clone: int, clone3: int, arch: int) -> list[bytes]:
    """Jumps count instructions to skip; each check jumps forward to one of the shared returns."""
    prog = [_op(_LD_ABS, _ARCH), _op(_JEQ, arch, 1, 0), _op(_RET, _KILL_PROCESS), _op(_LD_ABS, _NR)]
    # Layout after the checks: [0] ret ALLOW, [1] ret EPERM, [2] ret ENOSYS, [3] clone: load flags,
    # [4] jset -> EPERM, [5] ret ALLOW.
    checks: list[tuple[int, int, int]] = [(_JGE, X32_BIT, 1)]
    checks += [(_JEQ, nr, 1) for nr in denied]
    checks += [(_JEQ, clone3, 2), (_JEQ, clone, 3)]
    for i, (code, k, target) in enumerate(checks):
        remaining = len(checks) - i - 1  # checks after this one
        jump = remaining + target  # to the return `target` places after the shared ALLOW
        if jump > 255:
            raise ValueError("seccomp program too long for 8-bit jumps")
        prog.append(_op(code, k, jump, 0))
    prog += [
        _op(_RET, _ALLOW),
        _op(_RET, _ERRNO | errno.EPERM),
        _op(_RET, _ERRNO | errno.ENOSYS),
        _op(_LD_ABS, _ARG0_LOW),
        _op(_JSET, CLONE_NEW_FLAGS, 0, 1),
        _op(_RET, _ERRNO | errno.EPERM),
        _op(_RET, _ALLOW),
    ]
    return prog


def build_filter() -> bytes | None:
    """The BPF program as bytes for bwrap, or None on an architecture without a table."""
    if platform.machine() != "x86_64":
        return None
    return b"".join(_program(sorted(DENIED_X86_64.values()), CLONE_X86_64, CLONE3_X86_64, AUDIT_ARCH_X86_64))


def describe() -> str:
    return (
        "seccomp deny-list"
        if platform.machine() == "x86_64"
        else f"no seccomp filter for {platform.machine()}"
    )
