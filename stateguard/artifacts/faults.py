"""`faults.json` (next to a task's `task.json`, hidden side): the scripted worker's mistakes.

Two forms, both typed here:
- a `FaultsFile` of named variants, each a list of `Fault` (one scripted-worker mistake; its kinds
  are rows of `mistakes.MISTAKES`; hand-written tasks; docs/faults.md has the format);
- the synthesized benchmark's list of `ShippedFault` (one contaminating counterfactual per
  record, written by `synthesis.worker_faults`; bytes pinned by the frozen benchmark).

    shipped = load_faults(folder.faults)   # FaultsFile | list[ShippedFault] | None when absent
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from stateguard.artifacts.files import ArtifactError, describe_errors, read_json, write_json
from stateguard.artifacts.mistakes import MISTAKES, FaultKind, SemanticKind

__all__ = ["Fault", "FaultsFile", "ShippedFault", "load_faults", "save_shipped_faults"]


class Fault(BaseModel):
    """One scripted-worker mistake at `turn` (`stateguard.workers.faults` applies and checks it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: FaultKind
    turn: int = Field(ge=1)
    code: str | None = Field(
        default=None, description="θ' for a counterfactual fault: the whole faulty program."
    )
    replace: list[tuple[str, str]] = Field(
        default_factory=list,
        description="θ' as edits of the reference code: (old, new), each old occurring once.",
    )
    semantic: SemanticKind | None = Field(default=None, description="Counterfactual only: what θ' changes.")
    decimals: int = Field(default=1, ge=0, description="Digits a precision fault rounds to.")
    description: str = Field(default="", description="What the mistake is, in words (reports only).")

    @model_validator(mode="after")
    def _consistent(self) -> Fault:
        if self.kind == "counterfactual" and (self.code is None) == (not self.replace):
            raise ValueError(
                f"counterfactual fault at turn {self.turn}: give exactly one of `code` or `replace`"
            )
        if self.kind != "counterfactual" and (self.code is not None or self.replace or self.semantic):
            raise ValueError(
                f"{self.kind} fault at turn {self.turn}: `code`, `replace` and `semantic` are for "
                "counterfactual faults only"
            )
        return self

    @property
    def label(self) -> str:
        """The kind the detection report groups by: `stale`, ..., `counterfactual:<semantic>`."""
        if self.kind == "counterfactual":
            return f"counterfactual:{self.semantic or 'other'}"
        return self.kind

    @property
    def group(self) -> str:
        """The per-kind detection report's row (the mistakes table's; one row per kind)."""
        return MISTAKES[self.label].group

    def describe(self) -> str:
        return f"{self.label} at turn {self.turn}"


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
