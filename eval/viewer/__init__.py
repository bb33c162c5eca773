"""The run viewer: any evaluation or synthesis run's traces as a static HTML folder.

    python -m eval.viewer runs/eval/synth-20250101-120000          # or: make view RUN=<run folder>
    python -m eval.viewer /tmp/synth-view --out /tmp/synth-view-html

`build_view(run_dir)` writes `index.html` (benchmarks x arms, one row per task), one page per
task (state graph laid out by Graphviz at build time, timeline of worker steps and manager
activations, filters) and `assets/`. Nothing is fetched at view time; open index.html from disk.
"""

from eval.viewer.build import BuildReport, build_view
from eval.viewer.config import ViewerConfig, ViewerError

__all__ = ["BuildReport", "ViewerConfig", "ViewerError", "build_view"]
