"""The synthesized corpus's statistics for `make tables RUN=<synthesis out_dir>`.

    python -m eval.tables runs/synth-debug            # -> runs/synth-debug/tables/corpus_stats.md

`make synth` exports the manager corpus and writes `corpus_stats.json`
(`stateguard.corpus_stats.CorpusStats`) into the export folder. This finds that record for a run
folder -- the folder itself, its `corpus/`, or the export folder its `synth_summary.json` names --
and renders it as one Markdown table next to the paper's D.2 figures.
"""

from __future__ import annotations

from pathlib import Path

from stateguard.artifacts.export_summary import DEFAULT_CORPUS_DIR, SYNTH_SUMMARY_FILE, synth_export_dir
from stateguard.artifacts.run_folder import CORPUS_STATS_FILE, CORPUS_STATS_TABLE
from stateguard.corpus_stats import CorpusStats, render_markdown

__all__ = ["STATS_FILE", "find_corpus_stats", "write_corpus_table"]

STATS_FILE = CORPUS_STATS_FILE


def find_corpus_stats(run_dir: Path) -> Path | None:
    """The corpus statistics record of a synthesis run folder, or None when it has none."""
    candidates = [run_dir / STATS_FILE, run_dir / DEFAULT_CORPUS_DIR / STATS_FILE]
    export_dir = synth_export_dir(run_dir / SYNTH_SUMMARY_FILE)
    if export_dir is not None:
        candidates.insert(0, export_dir / STATS_FILE)
    return next((p for p in candidates if p.is_file()), None)


def write_corpus_table(stats_path: Path, out: Path) -> Path:
    """Render the record as `out/corpus_stats.md`; a damaged record is an error naming the file."""
    try:
        stats = CorpusStats.model_validate_json(stats_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{stats_path}: not a corpus statistics record ({exc}); rerun `make synth`") from exc
    out.mkdir(parents=True, exist_ok=True)
    path = out / CORPUS_STATS_TABLE
    path.write_text(render_markdown(stats), encoding="utf-8")
    return path
