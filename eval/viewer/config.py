"""Knobs of the run viewer (`configs/view.yaml` holds the same fields with their defaults).

cfg = load_config(overrides=["jobs=4", "text_chars=2000"])   # file defaults, then key=value
build_view(run_dir, config=cfg)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CONFIG_FILE", "ViewerConfig", "ViewerError", "load_config"]

CONFIG_FILE = Path(__file__).resolve().parents[2] / "configs" / "view.yaml"


class ViewerError(RuntimeError):
    """A run folder, tool or option the viewer cannot use; the message says what to do instead."""


@dataclass(frozen=True)
class ViewerConfig:
    out: str | None = field(default=None, metadata={"help": "Output folder; default <run>/view."})
    jobs: int = field(
        default=0, metadata={"help": "Parallel task builders (each runs its own `dot`); 0 = CPU count."}
    )
    dot: str = field(default="dot", metadata={"help": "Graphviz `dot` binary (Debian package graphviz)."})
    label_chars: int = field(default=42, metadata={"help": "Issue text shown inside a graph node."})
    value_chars: int = field(
        default=400, metadata={"help": "Longest variable value shown in the state panel."}
    )
    text_chars: int = field(
        default=4000, metadata={"help": "Longest code, output or hint text in the timeline."}
    )
    resamples: int = field(
        default=2000, metadata={"help": "Bootstrap resamples when summary.json is missing."}
    )

    def __post_init__(self) -> None:
        for name in ("jobs", "label_chars", "value_chars", "text_chars", "resamples"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ViewerError(f"view option {name}={value!r}: expected a non-negative integer")

    @property
    def workers(self) -> int:
        import os

        return self.jobs or os.cpu_count() or 1


def _coerce(name: str, text: str) -> Any:
    kind = {f.name: f.type for f in dataclasses.fields(ViewerConfig)}[name]
    if text.lower() in ("null", "none", "~"):
        return None
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise ViewerError(f"view option {name}={text!r}: expected an integer") from None
    return text


def load_config(
    path: Path | None = CONFIG_FILE, overrides: list[str] | None = None, **values: Any
) -> ViewerConfig:
    """Defaults from `path` (when it exists), then `key=value` overrides, then keyword values."""
    known = {f.name for f in dataclasses.fields(ViewerConfig)}
    merged: dict[str, Any] = {}
    if path is not None and path.is_file():
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ViewerError(f"{path}: expected a mapping of view options ({', '.join(sorted(known))})")
        merged.update(loaded)
    for item in overrides or []:
        key, sep, text = item.partition("=")
        if not sep or key not in known:
            raise ViewerError(f"override {item!r}: use key=value with key one of {', '.join(sorted(known))}")
        merged[key] = _coerce(key, text)
    merged.update({k: v for k, v in values.items() if v is not None})
    unknown = sorted(set(merged) - known)
    if unknown:
        raise ViewerError(f"{path}: unknown view option(s) {unknown}; known: {', '.join(sorted(known))}")
    return ViewerConfig(**merged)
