"""The formats layer: every file passed between synthesis, evaluation and training, typed once.

Path constants and folder helpers (`task_folder`, `run_folder`) are the only place artifact file
names are spelled; pydantic models with load/save (`graph`, `manifest`, `faults`, `replay`) own
the task folder's hidden files, `corpus_records` the trajectory export's records; `events` types
each trace event kind and `payloads` reads its free-dict fields (flow, draft, arguments) as the
runtime's models. Loading a file whose field is missing or renamed fails with the file and the
field named (`files.ArtifactError`). `corpus_records` and `payloads` are imported by their module
path (they build on `stateguard.teacher` and `stateguard.actions`, which import this package).
`tests/test_artifact_names.py` keeps other modules from spelling the names by hand.
"""

from stateguard.artifacts.files import ArtifactError, dump_json, load_model, read_json, write_json
from stateguard.artifacts.graph import (
    GraphSegment,
    GraphStage,
    GraphThread,
    RelationGraph,
    load_graph,
    save_graph,
)
from stateguard.artifacts.manifest import TaskManifest, load_manifest, save_manifest
from stateguard.artifacts.run_folder import CorpusFolder, RolloutFolder, RunFolder
from stateguard.artifacts.task_folder import TaskFolder

__all__ = [
    "ArtifactError",
    "CorpusFolder",
    "GraphSegment",
    "GraphStage",
    "GraphThread",
    "RelationGraph",
    "RolloutFolder",
    "RunFolder",
    "TaskFolder",
    "TaskManifest",
    "dump_json",
    "load_graph",
    "load_manifest",
    "load_model",
    "read_json",
    "save_graph",
    "save_manifest",
    "write_json",
]
