"""Ray fan-out (`backend=ray` of `make synth` and `make eval`): the same per-task function, on a cluster.

    python -m synthesis.pipeline backend=ray workers=64      # joins RAY_ADDRESS's cluster if set
    python -m eval.runner backend=ray workers=32

`map_tasks(fn, items, *args, in_flight=k)` runs `fn(item, *args)` as Ray tasks, at most `k` in
flight, and yields `(item, result)` as they finish. It joins a running cluster when
RAY_ADDRESS is set or one is reachable, else starts a local one. Ray ships with the `rl` extra
(verl needs it); without it the error says how to install it. No scheduling logic lives here:
Ray does the placement, retries and data movement.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["map_tasks"]

T = TypeVar("T")


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "backend=ray needs Ray: `pip install -e .[rl]` (or `pip install ray`), or use backend=process"
        ) from exc
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
            num_cpus=None if address else max(1, (os.cpu_count() or 1)),
        )
    return ray


def map_tasks(
    fn: Callable[..., Any],
    items: Iterable[T],
    *args: Any,
    in_flight: int = 1,
    on_error: Callable[[T, BaseException], Any] | None = None,
) -> Iterator[tuple[T, Any]]:
    """Yield (item, fn(item, *args)) for every item, computed as Ray tasks, in completion order.
    A task that fails after Ray's own retries (its worker died, or `fn` raised) ends the iteration
    with that error, unless `on_error(item, error)` gives the value to yield for it instead."""
    ray = _ray()
    remote = ray.remote(fn)
    shared = [ray.put(a) for a in args]
    pending: dict[Any, T] = {}
    queue = list(items)
    while queue or pending:
        while queue and len(pending) < max(1, in_flight):
            item = queue.pop(0)
            pending[remote.remote(item, *shared)] = item
        ready, _ = ray.wait(list(pending), num_returns=1)
        ref = ready[0]
        item = pending.pop(ref)
        try:
            value = ray.get(ref)
        except Exception as exc:
            if on_error is None:
                raise
            value = on_error(item, exc)
        yield item, value
