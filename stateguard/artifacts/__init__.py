"""The formats layer: every file passed between synthesis, evaluation and training, typed once.

Path constants and folder helpers (`task_folder`, `run_folder`) are the only place artifact file
names are spelled; pydantic models with load/save (`graph`, `manifest`, `faults`, `replay`) own
the task folder's hidden files, `corpus_records` the trajectory export's records (and typed
readings of each logged activation's observation and tool results), `sft_rows` the SFT corpus
rows (`SftRow`, written with `datasets`, read with pyarrow), `rl_prompts` the RL prompt rows in
verl's layout (`RlPromptRow`, its JSON parts typed), `export_summary` the export's summary; `events` types
each trace event kind (`stateguard.trace_payloads`, outside, reads its free-dict fields as the
runtime's models); `records`, `state` and `hints` are the record base, the analytical-state model
and the hints that the events embed (the runtime names them as `stateguard.records`, `.state` and
`.hints`); `mistakes` is the one table of mistake kinds, `faults` the scripted worker's
mistakes, `teacher_plan` and `activation_log` the synthesis teacher's stored plan and log. Loading a
file whose field is missing or renamed fails with the file and the field named
(`files.ArtifactError`). The package imports nothing outside itself; `tests/test_import_graph.py`
holds it to that.
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
