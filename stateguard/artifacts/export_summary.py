"""`corpus/export_summary.json`: what one trajectory export kept and wrote (`ExportSummary`).

`synthesis.export` saves it next to the SFT corpus and RL prompts; the trajectory viewer shows it.
The key order is the model's field order (the first exports' layout), so fields are only appended.

    save_export_summary(CorpusFolder(out).export_summary, summary)
    summary = load_export_summary(path)        # ArtifactError naming the file and field
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.files import load_model

__all__ = [
    "DEFAULT_CORPUS_DIR",
    "SYNTH_SUMMARY_FILE",
    "ExportSummary",
    "SynthExport",
    "load_export_summary",
    "save_export_summary",
    "synth_export_dir",
]


class ExportSummary(BaseModel):
    FORMAT: ClassVar[str] = "stateguard/export-summary/1"  # not written: the layout predates it

    model_config = ConfigDict(extra="forbid")

    tasks: int
    trajectories: int = Field(description="trajectories generated (kept or not)")
    kept: int
    kept_by_variant: dict[str, int]
    attempted_by_variant: dict[str, int]
    rejections: dict[str, int] = Field(description="rejection reason -> trajectories")
    sft_samples: dict[str, int] = Field(description="SftKind -> samples")
    sft_duplicates_dropped: int
    rl_prompts: int
    rl_by_action: dict[str, int] = Field(description="expected control action -> RL prompts")
    rl_inconsistent: int = Field(description="RL prompts with g = 1")
    elapsed_s: float
    benign_share: float = 0.0


class SynthExport(ExportSummary):
    """The export's summary as `make synth` reports it (`synth_summary.json`'s `export`): where it went."""

    out_dir: str


SYNTH_SUMMARY_FILE = "synth_summary.json"  # <synth out_dir>/: synthesis.pipeline.SynthResult
DEFAULT_CORPUS_DIR = "corpus"  # the export's folder under a synthesis out_dir unless configured


class _ExportPlace(BaseModel):
    model_config = ConfigDict(extra="ignore")

    out_dir: str


class _SynthSummaryExport(BaseModel):
    """The part of `synth_summary.json` other packages read (the rest is synthesis's own)."""

    model_config = ConfigDict(extra="ignore")

    export: _ExportPlace | None = None


def synth_export_dir(path: str | Path) -> Path | None:
    """Where a synthesis run's summary says its export went; None when there was no export, or the
    file is missing or not a summary (a folder that is no synthesis run)."""
    try:
        export = _SynthSummaryExport.model_validate_json(Path(path).read_text(encoding="utf-8")).export
    except (OSError, ValueError):
        return None
    return Path(export.out_dir) if export is not None and export.out_dir else None


def save_export_summary(path: str | Path, summary: ExportSummary) -> None:
    Path(path).write_text(json.dumps(summary.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


def load_export_summary(path: str | Path) -> ExportSummary:
    return load_model(path, ExportSummary)
