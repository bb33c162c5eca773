"""The replay files of a task folder: `hidden/fingerprints.json` and the marker `hidden/replay.json`.

`synthesis.replay` writes both when it builds and verifies a task; the pipeline's rerun check and
the benchmark loader read them back. The frozen benchmark pins their bytes (sorted keys, one-space
indent, ASCII), so the models keep exactly the fields that were written.

    table = load_fingerprints(folder)          # FingerprintTable; table.turn(3) -> TurnFingerprints
    save_marker(folder, ReplayMarker(ok=True, task_id=..., turns=24, sha256={...}))
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, RootModel

from stateguard.artifacts.files import load_model, write_json
from stateguard.artifacts.task_folder import TaskFolder

__all__ = [
    "ANSWER_KEY",
    "FingerprintTable",
    "ReplayMarker",
    "TurnFingerprints",
    "load_fingerprints",
    "load_marker",
    "save_fingerprints",
    "save_marker",
]

ANSWER_KEY = "answer"  # the answer's digest sits next to the stage names of its turn


class TurnFingerprints(RootModel[dict[str, str]]):
    """One turn's digests: every stage the turn builds -> its fingerprint, plus `answer` -> the
    SHA-256 of the answer's canonical JSON."""

    @classmethod
    def of(cls, stages: dict[str, str], answer: str | None) -> TurnFingerprints:
        entry = dict(stages)
        if answer is not None:
            entry[ANSWER_KEY] = answer
        return cls(entry)

    @property
    def answer(self) -> str | None:
        return self.root.get(ANSWER_KEY)

    @property
    def stages(self) -> dict[str, str]:
        return {name: digest for name, digest in self.root.items() if name != ANSWER_KEY}


class FingerprintTable(RootModel[dict[str, TurnFingerprints]]):
    """`hidden/fingerprints.json`: turn id (as JSON writes it, a string) -> that turn's digests.
    A placeholder such as `{"status": "pending"}` does not validate."""

    FORMAT: ClassVar[str] = "stateguard/fingerprints/1"  # not written: the frozen benchmark pins the bytes

    def turn(self, turn_id: int) -> TurnFingerprints | None:
        return self.root.get(str(turn_id))

    @property
    def turn_ids(self) -> set[str]:
        return set(self.root)

    def as_json(self) -> dict[str, dict[str, str]]:
        return {t: dict(entry.root) for t, entry in self.root.items()}


class ReplayMarker(BaseModel):
    """`hidden/replay.json`: a passing replay, vouching for the files whose hashes it holds."""

    FORMAT: ClassVar[str] = "stateguard/replay-marker/1"  # not written: the frozen benchmark pins the bytes

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    task_id: str
    turns: int = Field(ge=0)
    sha256: dict[str, str] = Field(description="task-relative POSIX path -> SHA-256 of the file vouched for.")


def load_fingerprints(folder: TaskFolder) -> FingerprintTable:
    return load_model(folder.fingerprints, FingerprintTable)


def save_fingerprints(folder: TaskFolder, table: FingerprintTable) -> Path:
    write_json(folder.fingerprints, table.as_json(), sorted_ascii=True)
    return folder.fingerprints


def load_marker(folder: TaskFolder) -> ReplayMarker:
    return load_model(folder.replay, ReplayMarker)


def save_marker(folder: TaskFolder, marker: ReplayMarker) -> Path:
    write_json(folder.replay, marker.model_dump(mode="json"), sorted_ascii=True)
    return folder.replay
