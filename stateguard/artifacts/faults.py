"""`faults.json` (next to a task's `task.json`, hidden side): the scripted worker's mistakes.

Two forms, both typed here:
- a `FaultsFile` of named variants, each a list of `stateguard.workers.faults.Fault`
  (hand-written tasks; docs/faults.md has the format);
- the synthesized benchmark's list of `ShippedFault` (one contaminating counterfactual per
  record, written by `synthesis.worker_faults`; bytes pinned by the frozen benchmark).

    shipped = load_faults(folder.faults)   # FaultsFile | list[ShippedFault] | None when absent
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from stateguard.artifacts.files import ArtifactError, describe_errors, read_json, write_json
from stateguard.workers.faults import Fault

__all__ = ["FaultsFile", "ShippedFault", "load_faults", "save_shipped_faults"]


class FaultsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Only the version this reader knows: a newer file must not be read as if it were this one.
    schema_version: Literal[1] = 1
    # Required: a file of `{}` declares nothing, which is a mistake (an empty or truncated file), not a choice.
    variants: dict[str, list[Fault]]
    notes: str = ""


class ShippedFault(BaseModel):
    """A counterfactual θ -> θ' that the synthesized task's scripted worker ships at `turn`."""

    FORMAT: ClassVar[str] = "stateguard/shipped-faults/1"  # not written: the frozen benchmark pins the bytes

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int = Field(ge=1)
    stage: str | None = Field(default=None, description="The stage whose SQL was changed.")
    kind: str | None = Field(
        default=None, description="synthesis.interventions kind (numeric_parameter, ...)."
    )
    operation: str | None = None
    description: str = ""
    code: str = Field(description="The whole faulty turn code the worker runs instead of the reference.")
    contaminates: list[int] = Field(default_factory=list, description="Later turns whose answer changes.")


_SHIPPED = TypeAdapter(list[ShippedFault])


def load_faults(path: str | Path) -> FaultsFile | list[ShippedFault] | None:
    """The faults declared in `path`, None when there is no such file; errors name file and field."""
    path = Path(path)
    if not path.is_file():
        return None
    raw = read_json(path)
    try:
        if isinstance(raw, list):
            return _SHIPPED.validate_python(raw)
        return FaultsFile.model_validate(raw)
    except ValidationError as exc:
        raise ArtifactError(
            f"{path}: not a faults file ({describe_errors(exc)}); see docs/faults.md"
        ) from None


def save_shipped_faults(path: str | Path, faults: list[ShippedFault]) -> None:
    write_json(path, [f.model_dump(mode="json", exclude_unset=True) for f in faults])
