"""`make view RUN=<run folder>`: build the static HTML viewer of an evaluation or synthesis run.

    python -m eval.viewer runs/eval/synth-20250101-120000            # -> <run>/view/index.html
    python -m eval.viewer /tmp/synth-view --out /tmp/synth-html jobs=2 text_chars=2000
    python -m eval.viewer --help

Options not given on the command line come from configs/view.yaml. The last line printed says
where index.html is; open it from disk (no server and no network needed).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from eval.viewer.build import build_view
from eval.viewer.config import CONFIG_FILE, ViewerConfig, ViewerError, load_config


def _parser() -> argparse.ArgumentParser:
    options = "\n".join(
        f"  {f.name:<12} {f.metadata.get('help', '')} (default {f.default!r})"
        for f in dataclasses.fields(ViewerConfig)
    )
    parser = argparse.ArgumentParser(
        prog="python -m eval.viewer",
        description="Turn a run's traces into a self-contained static HTML viewer (run overview, one page "
        "per task with its state graph and timeline). Needs Graphviz's `dot` (apt-get install -y graphviz).",
        epilog=f"key=value options (defaults from {CONFIG_FILE}):\n{options}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="an evaluation run folder (results/, tasks/), a synthesis out_dir (corpus/runs/) or rollout "
        "folders (trace.jsonl in it or its subfolders, e.g. python -m eval.demo's run_dir)",
    )
    parser.add_argument("--out", metavar="DIR", default=None, help="output folder (default: RUN_DIR/view)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel task builders (default: CPU count)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="any option listed below")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_intermixed_args(argv)  # options may come before or after key=value
    try:
        cfg = load_config(CONFIG_FILE, args.overrides, out=args.out, jobs=args.jobs)
        report = build_view(args.run_dir, config=cfg)
    except ViewerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(report.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
