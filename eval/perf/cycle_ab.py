"""The harness cycle of an earlier commit and of this checkout, side by side in one process.

On a shared machine two runs of `make bench` a minute apart differ by more than most changes
(whole-process pairs of the cycle moved by ±40% at load 3). Here both versions run in one
process, in alternating blocks of cycles, so load hits them alike: the runtime modules that
differ between `--before` and this checkout (among `MODULES`; then all of `MODULES`, so that an
unchanged harness runs the old trace) are loaded from git under other names, their imports of
each other re-pointed to the old versions, and each version drives its own `Harness` on its own
copy of one filled store (where the old store cannot open this checkout's, one of an earlier
store layout, the old code fills its own once per commit: `states-<size>-prefill-<commit>.sqlite`).
The records (`stateguard/state.py`, `stateguard/artifacts/`) are shared: a change to them is not compared by this tool. Each cycle is
timed twice: the thread's CPU (what load disturbs least) and the wall clock (what the p99 target
is about: lock waits and the scheduler show there only).

    python -m eval.perf.cycle_ab --before 473b698            # 10^5 states (make bench's filled store)
    python -m eval.perf.cycle_ab --before HEAD~3 --size 1000 --rounds 6
    python -m eval.perf.cycle_ab --before HEAD               # the same code on both sides: the noise

Run it with `--before HEAD` as well: at load 1-5 on the 2-core machine the same code on both
sides gave ratios of 0.89-1.08, so a change worth less than about 10% needs several runs; with
the machine nearly idle (load about 1, 30 rounds) it gave 1.00 twice.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from pydantic import BaseModel

from eval.perf.runtime import _prefill, _store, harness_cycle
from stateguard import HarnessConfig, StateStore
from stateguard.store_check import COUNTER_SUFFIX

ROOT = Path(__file__).resolve().parents[2]
# The runtime modules the cycle runs through, in an order where each one's imports come first.
MODULES = [
    "stateguard.store_wal",
    "stateguard.store_check",
    "stateguard.store_schema",
    "stateguard.store",
    "stateguard.trace",
    "stateguard.relation_rules",
    "stateguard.binding",
    "stateguard.observation",
    "stateguard.harness",
]


class Comparison(BaseModel):
    before: str
    loaded: list[str]  # the modules that differ, run in their `before` version
    size: int
    cycles: int  # per version
    before_ms: tuple[float, float]  # CPU (median, p99) of one cycle
    after_ms: tuple[float, float]
    # Wall clock (median, p99) of the same cycles: what the p99 target is about (a checkpoint or
    # lock wait, and the scheduler on a loaded machine, show here and not in the CPU figures).
    before_wall_ms: tuple[float, float] = (0.0, 0.0)
    after_wall_ms: tuple[float, float] = (0.0, 0.0)

    @property
    def ratio(self) -> tuple[float, float]:
        return self.after_ms[0] / self.before_ms[0], self.after_ms[1] / self.before_ms[1]

    @property
    def wall_ratio(self) -> tuple[float, float]:
        return self.after_wall_ms[0] / self.before_wall_ms[0], self.after_wall_ms[1] / self.before_wall_ms[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


def _text_at(commit: str, name: str) -> str | None:
    """Module `name`'s text at `commit`, None where it did not exist yet."""
    try:
        return _git("show", f"{commit}:{name.replace('.', '/')}.py")
    except subprocess.CalledProcessError:
        return None


def changed(commit: str) -> list[str]:
    """The modules of `MODULES` whose text at `commit` differs from this checkout's (or which it
    did not have)."""
    return [
        name
        for name in MODULES
        if _text_at(commit, name) != (ROOT / f"{name.replace('.', '/')}.py").read_text()
    ]


def load_before(commit: str) -> dict[str, types.ModuleType]:
    """When the text of any module of `MODULES` differs at `commit`, all of them as they were
    there, executed as `<name>@before`; a name one of them imported from another points at the
    old object. All, not only those that differ: a module that did not change still imports the
    changed ones (the harness its `Trace`), and only its old copy binds their old versions."""
    old: dict[str, types.ModuleType] = {}
    if not changed(commit):
        return old
    texts = {name: _text_at(commit, name) for name in MODULES}
    # While the old modules run, their imports of each other find the old versions (a name this
    # checkout no longer has would not import otherwise); this checkout's are put back after.
    current = {name: sys.modules.get(name) for name in MODULES}
    try:
        for name in MODULES:
            path = name.replace(".", "/") + ".py"
            text = texts[name]
            if text is None:
                continue  # not there yet: the old modules do not import it
            module = types.ModuleType(f"{name}@before")
            module.__file__ = f"{commit}:{path}"
            sys.modules[module.__name__] = module  # dataclasses and pydantic look their module up
            exec(compile(text, module.__file__, "exec"), module.__dict__)
            old[name] = module
            sys.modules[name] = module
    finally:
        for name, saved in current.items():
            if saved is not None:
                sys.modules[name] = saved
            else:
                sys.modules.pop(name, None)
    for module in old.values():
        for attr, value in list(module.__dict__.items()):
            source = old.get(getattr(value, "__module__", ""))
            if source is not None and source is not module and hasattr(source, attr):
                setattr(module, attr, getattr(source, attr))
    return old


def _copy_store(kept: Path, to: Path, store_cls: Any = StateStore) -> Any:
    for suffix in ("", "-wal", "-shm", COUNTER_SUFFIX):
        Path(f"{to}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(kept, to)
    shutil.copyfile(f"{kept}{COUNTER_SUFFIX}", f"{to}{COUNTER_SUFFIX}")
    return store_cls(to)


def _kept_for(before: str, store_cls: Any, kept: Path, size: int, work_dir: str) -> Path:
    """The filled store the `before` side starts from: this checkout's kept one where the old
    store opens it, else one filled by the old store itself (another store layout; kept as
    `states-<size>-prefill-<commit>.sqlite`), so that each side times a store its own code grew."""
    probe = Path(work_dir) / f"states-{size}-probe.sqlite"
    try:
        _copy_store(kept, probe, store_cls).close()
        return kept
    except Exception:  # noqa: BLE001 - whatever the old code raises on a layout it does not know
        pass
    finally:
        for suffix in ("", "-wal", "-shm", COUNTER_SUFFIX, "-wal.damaged"):
            Path(f"{probe}{suffix}").unlink(missing_ok=True)
    sha = _git("rev-parse", "--short=12", before).strip()
    own = Path(work_dir) / f"states-{size}-prefill-{sha}.sqlite"
    if not Path(f"{own}{COUNTER_SUFFIX}").exists():  # the counter is written last: a whole fill
        for suffix in ("", "-wal", "-shm", COUNTER_SUFFIX):
            Path(f"{own}{suffix}").unlink(missing_ok=True)
        store = store_cls(own.with_suffix(".filling"))
        _prefill(store, size, 10, random.Random(0))
        store.close()
        shutil.copyfile(own.with_suffix(".filling"), own)
        shutil.copyfile(f"{own.with_suffix('.filling')}{COUNTER_SUFFIX}", f"{own}{COUNTER_SUFFIX}")
        for suffix in ("", COUNTER_SUFFIX):
            Path(f"{own.with_suffix('.filling')}{suffix}").unlink(missing_ok=True)
    return own


def run(
    before: str, size: int = 100_000, rounds: int = 16, block: int = 100, work_dir: str = "runs/bench"
) -> Comparison:
    old = load_before(before)
    cfg = OmegaConf.create({"work_dir": work_dir, "reuse_prefill": True, "thread_length": 10, "seed": 0})
    _store(size, cfg)[0].close()  # fills (or finds) the kept store
    kept = Path(work_dir) / f"states-{size}-prefill.sqlite"
    versions: dict[str, Any] = {}
    for label, modules in (("before", old), ("after", {})):
        store_cls = modules["stateguard.store"].StateStore if "stateguard.store" in modules else StateStore
        harness_mod = modules.get("stateguard.harness", sys.modules["stateguard.harness"])
        origin = kept if store_cls is StateStore else _kept_for(before, store_cls, kept, size, work_dir)
        store = _copy_store(origin, Path(work_dir) / f"states-{size}-{label}.sqlite", store_cls)
        versions[label] = (
            store,
            harness_cycle(store, harness_mod.Harness(store, HarnessConfig(regime="turn_aligned"))),
        )
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    wall: dict[str, list[float]] = {"before": [], "after": []}
    try:
        i = 0
        for r in range(rounds + 1):  # round 0 warms both up and is not counted
            for label in ("before", "after") if r % 2 == 0 else ("after", "before"):
                cycle = versions[label][1]
                for _ in range(block):
                    start, start_wall = time.thread_time(), time.perf_counter()
                    cycle(i)
                    if r:
                        cpu[label].append((time.thread_time() - start) * 1000)
                        wall[label].append((time.perf_counter() - start_wall) * 1000)
                    i += 1
    finally:
        for store, _ in versions.values():
            store.close()

    def stats(values: list[float]) -> tuple[float, float]:
        ordered = sorted(values)
        return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]

    return Comparison(
        before=before,
        loaded=changed(before),
        size=size,
        cycles=len(cpu["after"]),
        before_ms=stats(cpu["before"]),
        after_ms=stats(cpu["after"]),
        before_wall_ms=stats(wall["before"]),
        after_wall_ms=stats(wall["after"]),
    )


def render(c: Comparison) -> str:
    return (
        f"cycle at {c.size:,} states, {c.cycles} cycles each, CPU (median / p99 ms): "
        f"{c.before} {c.before_ms[0]:.3f} / {c.before_ms[1]:.3f}, this checkout {c.after_ms[0]:.3f} / "
        f"{c.after_ms[1]:.3f}; ratio {c.ratio[0]:.2f} / {c.ratio[1]:.2f}\n"
        f"wall (median / p99 ms): {c.before} {c.before_wall_ms[0]:.3f} / {c.before_wall_ms[1]:.3f}, "
        f"this checkout {c.after_wall_ms[0]:.3f} / {c.after_wall_ms[1]:.3f}; "
        f"ratio {c.wall_ratio[0]:.2f} / {c.wall_ratio[1]:.2f}\n"
        f"before's modules: {', '.join(c.loaded) or 'none differ (both sides run the same code)'}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", required=True, help="the commit to compare with (e.g. HEAD~1)")
    parser.add_argument("--size", type=int, default=100_000, help="committed states before measuring")
    parser.add_argument("--rounds", type=int, default=16, help="blocks per version, after one warm-up round")
    parser.add_argument("--block", type=int, default=100, help="cycles per block")
    parser.add_argument(
        "--work-dir", default="runs/bench", help="where the filled store is kept (as make bench)"
    )
    args = parser.parse_args(argv)
    print(render(run(args.before, args.size, args.rounds, args.block, args.work_dir)))


if __name__ == "__main__":
    main()
