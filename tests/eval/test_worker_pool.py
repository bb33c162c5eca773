"""`eval.jobs.worker_pool`: a pool whose workers never outlive the run that made them.

Before it, `python -m eval.perf.semantic` ran its rollouts in a plain `ProcessPoolExecutor`: a SIGTERM
to the runner ended the runner alone, and its two workers went on computing rollouts for half an hour.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eval.jobs import worker_pool
from tests.processes import alive as _alive

REPO = Path(__file__).resolve().parents[2]


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return not _alive(pid)


def test_leaving_the_block_early_ends_the_running_workers_and_drops_the_queue() -> None:
    start = time.monotonic()
    with pytest.raises(RuntimeError), worker_pool(1) as pool:
        pid = pool.submit(os.getpid).result(timeout=60)
        running = pool.submit(time.sleep, 60)
        queued = pool.submit(time.sleep, 60)
        time.sleep(0.5)
        raise RuntimeError("the caller gives up")
    assert _gone_within(pid, 10)
    # neither sleep ran to its end: the queued one was cancelled or failed with its worker
    assert not running.cancelled() and running.exception(timeout=10) is not None
    assert queued.cancelled() or queued.exception(timeout=10) is not None
    assert time.monotonic() - start < 30  # not the 120 s the two sleeps would take


def test_a_normal_end_waits_for_every_job() -> None:
    with worker_pool(2) as pool:
        futures = [pool.submit(pow, 2, k) for k in range(6)]
    assert [f.result() for f in futures] == [1, 2, 4, 8, 16, 32]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_workers_end_with_the_process_that_made_them(tmp_path: Path, sig: signal.Signals) -> None:
    script = tmp_path / "runner.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys, time
            from eval.jobs import exit_on_signals, worker_pool

            if __name__ == "__main__":
                exit_on_signals()
                with worker_pool(2) as pool:
                    jobs = [pool.submit(time.sleep, 120) for _ in range(4)]
                    time.sleep(1)
                    pids = list(getattr(pool, "_processes", {}))
                    print(" ".join(str(p) for p in pids), flush=True)
                    for job in jobs:
                        job.result()
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert runner.stdout is not None
        pids = [int(p) for p in runner.stdout.readline().split()]
        assert pids and all(_alive(p) for p in pids)
        runner.send_signal(sig)
        runner.wait(timeout=30)
        assert all(_gone_within(p, 15) for p in pids)
    finally:
        if runner.poll() is None:
            runner.kill()
