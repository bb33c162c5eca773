"""Run the runner's jobs in worker processes so that no job is lost and no process outlives the run.

    for job, outcome in run_in_pool(run_job, jobs, workers=2, retries=2):
        ...   # outcome: the JobOutcome run_job returned, or JobOutcome.crash(...) for a worker that died

`concurrent.futures.ProcessPoolExecutor` (spawn) does the work. What it does not do, this adds:
* A worker process that dies (SIGKILL, OOM kill, a segfault in a C extension) breaks the whole
  pool, and every job in flight fails with `BrokenProcessPool`. The pool is recreated and those
  jobs are retried, each one alone (nothing else in flight), so a job that kills its worker
  again is identified exactly and an innocent job that shared the pool with it is not charged.
  After `retries` further deaths the job is given up as crashed, with how its worker ended.
* Workers die with the runner: each sets PR_SET_PDEATHSIG (SIGKILL when the runner process
  goes, even by SIGKILL), and on SIGTERM it raises SystemExit, so the rollout's `finally`
  blocks close its workspace (and the kernel process) before it exits. The runner turns SIGTERM
  and SIGHUP into SystemExit too (`exit_on_signals`), and on the way out terminates the workers
  it still has, then kills those that do not leave within a few seconds.
Workers ignore SIGINT: Ctrl-C reaches the runner, which shuts them down in order.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from types import FrameType
from typing import Any, TypeVar

from eval.results import JobOutcome

__all__ = ["crash_outcome", "die_with_parent", "exit_on_signals", "run_in_pool", "worker_pool"]

J = TypeVar("J")
PR_SET_PDEATHSIG = 1
TERM_GRACE_S = 5.0


def die_with_parent(parent: int | None = None) -> bool:
    """Ask Linux to SIGKILL this process when its parent exits; False where that is unavailable.
    If the parent is already gone (it died before the call), exit now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if parent is not None and os.getppid() != parent:
        os._exit(1)
    return True


def _raise_exit(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _worker_init(parent: int) -> None:
    die_with_parent(parent)
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_on_signals() -> None:
    """SIGTERM / SIGHUP become SystemExit in the main thread, so cleanup code runs (the default
    action would end the process on the spot and leave its workers and kernels behind)."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_exit)


def crash_outcome(error: str, attempts: int) -> JobOutcome:
    return JobOutcome.crash(error, attempts)


class _Pool:
    """One ProcessPoolExecutor and the worker processes it started (to end them ourselves)."""

    def __init__(self, workers: int):
        self.executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=get_context("spawn"),
            initializer=_worker_init,
            initargs=(os.getpid(),),
        )
        self.processes: dict[int, Any] = {}

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        fut = self.executor.submit(fn, *args)
        # The executor keeps its processes private; remembering them lets us say how one died and
        # end them on shutdown (the executor itself would wait for the running jobs to finish).
        self.processes.update(getattr(self.executor, "_processes", None) or {})
        return fut

    def death_note(self) -> str:
        # The executor's management thread reaps the workers of a broken pool; read the exit codes
        # after it is done (a concurrent waitpid would see none).
        manager = getattr(self.executor, "_executor_manager_thread", None)
        if manager is not None:
            manager.join(TERM_GRACE_S)
        codes = [(pid, p.exitcode) for pid, p in self.processes.items() if p.exitcode not in (None, 0)]
        killed = [f"pid {pid} {_how(code)}" for pid, code in codes if code != -signal.SIGTERM]
        return (
            "; ".join(killed or [f"pid {pid} {_how(code)}" for pid, code in codes]) or "a worker process died"
        )

    def close(self, *, terminate: bool) -> None:
        procs = list(self.processes.values())
        if terminate:
            for p in procs:
                with contextlib.suppress(Exception):
                    p.terminate()  # SIGTERM: the worker's SystemExit closes its workspace
            deadline = time.monotonic() + TERM_GRACE_S
            for p in procs:
                with contextlib.suppress(Exception):
                    p.join(max(0.0, deadline - time.monotonic()))
                    if p.is_alive():
                        p.kill()
                        p.join(1.0)
        self.executor.shutdown(wait=not terminate, cancel_futures=True)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A spawn `ProcessPoolExecutor` for callers that submit and collect their own futures, with the
    same worker lifetime as `run_in_pool`: each worker dies with this process and leaves through its
    `finally` blocks on SIGTERM. Leaving the block early (an exception, or SIGTERM made SystemExit by
    `exit_on_signals`) cancels the jobs not started and ends the running workers, instead of waiting
    for every queued job as the executor's own `with` would."""
    pool = _Pool(workers)
    finished = False
    try:
        yield pool.executor
        finished = True
    finally:
        if finished:
            pool.executor.shutdown(wait=True)  # every job submitted runs to its end
        else:
            pool.processes.update(getattr(pool.executor, "_processes", None) or {})
            pool.close(terminate=True)


def _how(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def run_in_pool(
    fn: Callable[..., JobOutcome],
    jobs: list[J],
    *args: Any,
    workers: int,
    retries: int,
) -> Iterator[tuple[J, JobOutcome]]:
    """Yield (job, fn(job, *args)) in completion order; a job whose worker died `retries + 1` times
    yields a crash outcome instead. Jobs run `workers` at a time; a retry runs alone."""
    fresh: deque[J] = deque(jobs)
    retry: deque[tuple[J, int]] = deque()
    pool = _Pool(workers)
    inflight: dict[Future[Any], tuple[J, int]] = {}
    finished = False
    try:
        while fresh or retry or inflight:
            if retry and not inflight:
                job, attempt = retry.popleft()
                inflight[pool.submit(fn, job, *args)] = (job, attempt)
            while (
                not retry
                and fresh
                and len(inflight) < workers
                and not any(a > 1 for _, a in inflight.values())
            ):
                job = fresh.popleft()
                inflight[pool.submit(fn, job, *args)] = (job, 1)
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            broken: list[tuple[J, int]] = []
            for fut in done:
                job, attempt = inflight.pop(fut)
                try:
                    outcome = fut.result()
                except BrokenProcessPool:
                    broken.append((job, attempt))
                    continue
                except Exception as exc:  # noqa: BLE001 - fn raised outside its own guard: a crash, retried
                    given_up: list[tuple[J, JobOutcome]] = []
                    _requeue(retry, [(job, attempt)], retries, f"{type(exc).__name__}: {exc}", given_up)
                    yield from given_up
                    continue
                yield job, outcome.model_copy(update={"attempts": attempt})
            if broken:
                # Every job still in flight fails with BrokenProcessPool too: collect them all.
                if inflight:
                    wait(list(inflight))
                    broken += list(inflight.values())
                    inflight.clear()
                note = f"its worker process died ({pool.death_note()})"
                pool.close(terminate=True)
                pool = _Pool(workers)
                crashed: list[tuple[J, JobOutcome]] = []
                _requeue(retry, broken, retries, note, crashed)
                yield from crashed
        finished = True
    finally:
        pool.close(terminate=not finished)


def _requeue(
    retry: deque[tuple[J, int]],
    jobs: list[tuple[J, int]],
    retries: int,
    note: str,
    crashed: list[tuple[J, JobOutcome]],
) -> None:
    for job, attempt in jobs:
        if attempt > retries:
            crashed.append((job, crash_outcome(f"{note}; gave up after {attempt} attempt(s)", attempt)))
        else:
            retry.append((job, attempt + 1))
