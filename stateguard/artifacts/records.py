"""Base for every typed record StateGuard writes to disk or passes across a package boundary.

Each serialized record carries `schema_version` so that readers (metrics, rewards, the viewer,
resumed runs) can refuse or migrate files written by another version of the code.
"""

from __future__ import annotations

import json
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SCHEMA_VERSION",
    "Record",
    "json_dump",
]

SCHEMA_VERSION = "stateguard/1"


class Record(BaseModel):
    """Frozen-by-convention pydantic model with a schema version and canonical JSON."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: str = Field(default=SCHEMA_VERSION, description="Version of the on-disk schema.")

    def canonical_json(self) -> str:
        """Deterministic JSON (sorted keys, no spaces): equal records give equal bytes."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "<record>") -> Self:
        """Parse a serialized record, refusing other schema versions with a clear message."""
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source}: not valid JSON ({exc.msg} at char {exc.pos})") from exc
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version != SCHEMA_VERSION:
            raise ValueError(
                f"{source}: schema_version is {version!r}, this code reads {SCHEMA_VERSION!r}; "
                "re-create the file with this version of StateGuard"
            )
        return cls.model_validate(data)


_MODEL_DUMP = BaseModel.model_dump


def json_dump(model: BaseModel) -> Any:
    """`model.model_dump(mode="json")`, taken from the model's serializer directly where its class
    does not override `model_dump` (the same value, without the wrapper's 1 µs: the trace and the
    store dump records on every action)."""
    if type(model).model_dump is _MODEL_DUMP:
        return model.__pydantic_serializer__.to_python(model, mode="json")
    return model.model_dump(mode="json")
