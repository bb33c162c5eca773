"""`manifest.json` of a task folder: the SHA-256 of every agent file, written last by the task
builders and checked by replay (a changed data file or question is refused before scoring).

    save_manifest(folder, TaskManifest.of(folder))
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from stateguard.artifacts.files import load_model, write_json
from stateguard.artifacts.task_folder import AGENT_DIR, TaskFolder

__all__ = ["TaskManifest", "load_manifest", "save_manifest"]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class TaskManifest(BaseModel):
    FORMAT: ClassVar[str] = "stateguard/task-manifest/1"  # not written: the frozen benchmark pins the bytes

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    agent_dir: str = Field(
        default=AGENT_DIR, description="Folder (relative to the task root) the hashes cover."
    )
    sha256: dict[str, str] = Field(description="agent-relative POSIX path -> SHA-256 of its bytes.")

    @classmethod
    def of(cls, folder: TaskFolder, task_id: str | None = None) -> TaskManifest:
        """Hash every file under the folder's agent side, sorted by path."""
        agent = folder.agent
        files = {p.relative_to(agent).as_posix(): _sha256(p) for p in sorted(agent.rglob("*")) if p.is_file()}
        return cls(task_id=task_id or folder.task_id, agent_dir=AGENT_DIR, sha256=files)


def load_manifest(folder: TaskFolder) -> TaskManifest:
    return load_model(folder.manifest, TaskManifest)


def save_manifest(folder: TaskFolder, manifest: TaskManifest) -> Path:
    write_json(folder.manifest, manifest.model_dump(mode="json"))
    return folder.manifest
