"""Reading and writing artifact files: one place that turns a bad file into a clear error.

Every artifact model loads through `load_model` / `load_model_list`, so a missing, renamed or
mistyped field fails with the file and the field named (`hidden/graph.json: stages.3.sql: Field
required`) instead of surfacing later as a KeyError or, worse, a silent default.

    graph = load_model(folder.graph, RelationGraph)
    write_json(folder.graph, graph.model_dump(mode="json", exclude_unset=True))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = [
    "ArtifactError",
    "describe_errors",
    "dump_json",
    "load_model",
    "load_model_list",
    "read_json",
    "write_json",
]

M = TypeVar("M", bound=BaseModel)


class ArtifactError(ValueError):
    """An artifact file is missing, not JSON, or does not match its model."""


def describe_errors(exc: ValidationError, limit: int = 5, drop: str | None = None) -> str:
    """`field.path: message` for the first `limit` problems of a validation error (`drop`: a
    leading location element to leave out, such as the tag of a discriminated union)."""
    parts = []
    for err in exc.errors()[:limit]:
        loc = list(err["loc"])
        if drop is not None and loc and loc[0] == drop:
            loc = loc[1:]
        where = ".".join(str(x) for x in loc) or "<top>"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def read_json(path: str | Path) -> Any:
    """The parsed JSON of `path`; a missing file or bad JSON is an ArtifactError naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ArtifactError(f"{path}: file missing") from None
    except UnicodeDecodeError as exc:
        raise ArtifactError(
            f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); save it as UTF-8"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None


def load_model(path: str | Path, model: type[M]) -> M:
    """`path` parsed as `model`; a field that is missing, renamed or of the wrong type is named."""
    raw = read_json(path)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ArtifactError(f"{path}: not a valid {model.__name__}: {describe_errors(exc)}") from None


def load_model_list(path: str | Path, model: type[M]) -> list[M]:
    """`path` parsed as a JSON list of `model`; errors name the file, the item and the field."""
    raw = read_json(path)
    try:
        return TypeAdapter(list[model]).validate_python(raw)  # type: ignore[valid-type]
    except ValidationError as exc:
        raise ArtifactError(f"{path}: not a list of {model.__name__}: {describe_errors(exc)}") from None


def dump_json(obj: Any, *, sorted_ascii: bool = False) -> str:
    """The repository's artifact JSON style: one-space indent, UTF-8 kept, trailing newline (the
    frozen benchmark's bytes depend on it). `sorted_ascii`: sorted keys and non-ASCII escaped, the
    style the replay files (`hidden/fingerprints.json`, `hidden/replay.json`) were first written in."""
    if sorted_ascii:
        return json.dumps(obj, indent=1, sort_keys=True) + "\n"
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def write_json(path: str | Path, obj: Any, *, sorted_ascii: bool = False) -> None:
    Path(path).write_text(dump_json(obj, sorted_ascii=sorted_ascii), encoding="utf-8")
