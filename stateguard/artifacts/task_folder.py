"""Where each file of a synthesized (or LongDS-format) task folder lives: the only place that
spells these names.

    <root>/agent/data/*.csv          what the worker may read
    <root>/agent/questions.json      the turns' text without reference code or answers
    <root>/hidden/task.json          turns with reference code and answers (stateguard.task.Task)
    <root>/hidden/graph.json         the relation graph (artifacts.graph.RelationGraph)
    <root>/hidden/faults.json        the scripted worker's shipped mistakes (artifacts.faults)
    <root>/hidden/fingerprints.json  replay fingerprints (artifacts.replay.FingerprintTable)
    <root>/hidden/replay.json        the replay marker (artifacts.replay.ReplayMarker)
    <root>/manifest.json             SHA-256 of the agent files (artifacts.manifest.TaskManifest)

    folder = TaskFolder(Path("data/synth-bench/penguins_s0_t12"))
    graph = load_graph(folder)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AGENT_DIR",
    "DATA_DIR",
    "FAULTS_FILE",
    "FINGERPRINTS_FILE",
    "GRAPH_FILE",
    "HIDDEN_DIR",
    "MANIFEST_FILE",
    "QUESTIONS_FILE",
    "REPLAY_FILE",
    "TASK_FILE",
    "TaskFolder",
]

AGENT_DIR = "agent"
DATA_DIR = "data"
HIDDEN_DIR = "hidden"
TASK_FILE = "task.json"  # also the file name of a LongDS task folder (turns with code and answers)
QUESTIONS_FILE = "questions.json"
GRAPH_FILE = "graph.json"
FAULTS_FILE = "faults.json"  # next to task.json: the scripted worker's declared mistakes
FINGERPRINTS_FILE = "fingerprints.json"
REPLAY_FILE = "replay.json"
MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True)
class TaskFolder:
    """Paths inside one task folder `<out_dir>/<task_id>/` (nothing is read on construction)."""

    root: Path

    @property
    def task_id(self) -> str:
        return self.root.name

    @property
    def agent(self) -> Path:
        return self.root / AGENT_DIR

    @property
    def data(self) -> Path:
        return self.agent / DATA_DIR

    @property
    def questions(self) -> Path:
        return self.agent / QUESTIONS_FILE

    @property
    def hidden(self) -> Path:
        """The folder `stateguard.task.load_task` reads (it holds task.json)."""
        return self.root / HIDDEN_DIR

    @property
    def task(self) -> Path:
        return self.hidden / TASK_FILE

    @property
    def graph(self) -> Path:
        return self.hidden / GRAPH_FILE

    @property
    def faults(self) -> Path:
        return self.hidden / FAULTS_FILE

    @property
    def fingerprints(self) -> Path:
        return self.hidden / FINGERPRINTS_FILE

    @property
    def replay(self) -> Path:
        return self.hidden / REPLAY_FILE

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_FILE

    def rel(self, path: Path) -> str:
        """`path` relative to the task root, POSIX style (`hidden/graph.json`), as manifests record it."""
        return path.relative_to(self.root).as_posix()

    def is_task(self) -> bool:
        """A synthesized task folder: hidden/task.json and hidden/graph.json exist."""
        return self.task.is_file() and self.graph.is_file()
