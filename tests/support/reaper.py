"""Run a command, kill it with a signal once it has started work, and report what it left alive.

    python tests/support/reaper.py --signal KILL --wait-for '<run>/tasks/*/*/trace.jsonl' -- python -m eval.runner ...

This process makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the
command started that outlives it is re-parented here instead of to init and can be found: after
the kill it waits up to `--grace` seconds for the command's whole process tree to be gone, then
prints one JSON line {"rc", "tree_before", "survivors", "seconds"} (each process as
"pid cmdline") and kills any survivor so that the test leaves nothing behind. Linux only.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def _table() -> dict[int, tuple[int, str, str]]:
    """pid -> (ppid, state, cmdline) for every process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out[int(name)] = (int(fields[1]), fields[0], cmd[:200])
    return out


def descendants(root: int) -> list[str]:
    """Live (non-zombie) processes below `root`, as "pid cmdline"."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], list(children.get(root, []))
    while stack:
        pid = stack.pop()
        ppid, state, cmd = table[pid]
        if state != "Z":
            found.append(f"{pid} {cmd}")
        stack += children.get(pid, [])
    return sorted(found)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--signal", default="KILL")
    parser.add_argument("--wait-for", required=True, help="glob that must match before the kill")
    parser.add_argument("--count", type=int, default=1, help="how many files the glob must match")
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--grace", type=float, default=20.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(json.dumps({"error": "PR_SET_CHILD_SUBREAPER failed"}))
        return 2
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + args.timeout
    while len(glob.glob(args.wait_for)) < args.count:
        if proc.poll() is not None or time.monotonic() > deadline:
            print(
                json.dumps(
                    {"error": f"no {args.wait_for} before the command ended or timed out", "rc": proc.poll()}
                )
            )
            proc.kill()
            return 2
        time.sleep(0.05)
    time.sleep(0.5)  # let the jobs get going: kernels started, cells running
    before = descendants(os.getpid())
    proc.send_signal(getattr(signal, f"SIG{args.signal}"))
    rc = proc.wait()
    start = time.monotonic()
    left = descendants(os.getpid())
    while left and time.monotonic() - start < args.grace:
        time.sleep(0.1)
        _reap()
        left = descendants(os.getpid())
    seconds = round(time.monotonic() - start, 2)
    for line in left:  # clean up whatever survived, so the test run leaves nothing behind
        with contextlib.suppress(OSError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    time.sleep(0.2)
    _reap()
    print(json.dumps({"rc": rc, "tree_before": before, "survivors": left, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
