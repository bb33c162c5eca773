"""Corpus throughput: kept manager trajectories per CPU-minute of `make synth` (issue 16's target).

    python -m synthesis.corpus_bench                            # penguins+gapminder, then nyc
    python -m synthesis.corpus_bench --datasets penguins,gapminder --tasks 2 --profile prof.out

Each row builds its tasks (the debug preset's mix per dataset: turn-aligned, DABstep- and
DAComp-DE-shaped) and exports the corpus in one process (`workers=1`), in a fresh folder, and
counts the CPU seconds of this process and of its finished children (the sandboxed kernels),
user + sys (`resource.getrusage`), so the figure holds on a machine shared with other work. The
2-core figure is twice the per-CPU-minute one: the pipeline's process pool splits tasks across
cores with nothing shared. `--profile` writes a cProfile of the penguins/gapminder row.
"""

from __future__ import annotations

import argparse
import cProfile
import resource
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_dir

from synthesis.pipeline import run

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(datasets: list[str], tasks: int, out: Path, profile: Path | None = None) -> dict[str, float]:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(
            "synth",
            overrides=[
                "synth=debug",
                f"out_dir={out}",
                "progress=false",
                "workers=1",
                f"datasets=[{','.join(datasets)}]",
                f"tasks_per_dataset={tasks}",
                f"shapes.dabstep={tasks}",
                f"shapes.dacomp_de={tasks}",
            ],
        )
    cpu0, wall0 = _cpu_s(), time.perf_counter()
    prof = cProfile.Profile() if profile is not None else None
    if prof is not None:
        prof.enable()
    result = run(cfg)
    if prof is not None:
        prof.disable()
        prof.dump_stats(str(profile))
    cpu, wall = _cpu_s() - cpu0, time.perf_counter() - wall0
    export = result.export
    kept = float(export.kept if export else 0)
    return {
        "tasks": float(len(result.tasks)),
        "attempted": float(export.trajectories if export else 0),
        "kept": kept,
        "cpu_s": cpu,
        "wall_s": wall,
        "export_s": float(export.elapsed_s if export else 0.0),
        "per_cpu_min": 60 * kept / cpu if cpu else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m synthesis.corpus_bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--datasets",
        default="penguins,gapminder;nyc",
        help="';'-separated rows, each a ','-separated dataset list",
    )
    parser.add_argument("--tasks", type=int, default=1, help="per dataset: tasks of each shape")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile output of the first row")
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="build in KEEP/<row> and keep it (to compare outputs byte for byte across code changes)",
    )
    args = parser.parse_args(argv)
    print("| datasets | tasks | attempted | kept | CPU s | wall s | kept / CPU-min | implied 2 cores / min |")
    print("|---|---|---|---|---|---|---|---|")
    for i, row in enumerate(args.datasets.split(";")):
        with tempfile.TemporaryDirectory(prefix="sg-corpus-bench-") as tmp:
            out = Path(tmp) if args.keep is None else args.keep / row.replace(",", "+")
            m = measure(row.split(","), args.tasks, out, args.profile if i == 0 else None)
        print(
            f"| {row} | {m['tasks']:.0f} | {m['attempted']:.0f} | {m['kept']:.0f} | {m['cpu_s']:.1f} | "
            f"{m['wall_s']:.1f} | {m['per_cpu_min']:.1f} | {2 * m['per_cpu_min']:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
