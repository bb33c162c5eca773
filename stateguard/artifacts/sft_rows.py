"""`corpus/sft/`: the manager SFT corpus, one `SftRow` per sample, as a Hugging Face `datasets` folder.

`synthesis.export` builds the rows and writes them with `write_sft_rows` (`datasets`'
`save_to_disk`: `state.json` naming Arrow stream files, `dataset_info.json`); `eval.decisions`
reads them back with `read_sft_rows` (pyarrow alone, so evaluation needs no `datasets`);
`training.sft.data` loads the folder with `datasets` and maps it in columnar batches, naming the
columns through `SftColumn`. The column order is the model's field order, and the corpus bytes are
pinned by the debug corpus, so fields are only ever appended, never reordered.

    write_sft_rows(CorpusFolder(out).sft, rows)
    rows = read_sft_rows(path)                 # ArtifactError naming the folder, row and field
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stateguard.artifacts.files import ArtifactError, describe_errors

__all__ = ["SftColumn", "SftKind", "SftRow", "read_sft_rows", "write_sft_rows"]

STATE_FILE = "state.json"  # datasets' save_to_disk: names the Arrow files of the dataset
INFO_FILE = "dataset_info.json"


class SftKind(StrEnum):
    ATOMIC = "atomic"  # one manager activation
    FULL = "full"  # a whole trajectory, every activation in order


class SftRow(BaseModel):
    """One SFT sample. `messages` and `tools` are JSON text (one Arrow string column each), so the
    chat's nested, varying shapes never meet Arrow's schema inference. Fields with a default are
    the columns later exports added; older corpora without them still read."""

    FORMAT: ClassVar[str] = "stateguard/sft-row/1"  # not written: corpus bytes are pinned

    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: str = Field(description="clean | repair | heavy | abandon | benign | auto")
    task_id: str
    trajectory_id: str = Field(description="<task_id>/<variant>[-<attempt>]")
    tools: str = Field(description="JSON: the tool schemas offered to the manager")
    intervention_kind: str = Field("none", description="the trajectory's intervention family, or none")
    intervention_op: str = "none"
    t_star: int = Field(-1, description="the fault turn, -1 without an intervention")
    benign: bool = Field(False, description="a hard negative: the intervention changed nothing")
    flow: str = "longds"
    regime: str = Field("turn_aligned", description="turn_aligned | segment_induced: the system prompt")
    teacher: str = ""
    kind: SftKind
    activation: int = Field(description="the activation's index; -1 for a full sample")
    turn: int = Field(0, description="the activation's turn (0 for none and for full samples)")
    relations: str = Field("[]", description="JSON: relation types of the turns the sample covers")
    messages: str = Field(description="JSON: the chat (system, user, assistant tool calls, tool results)")


class SftColumn(StrEnum):
    """Column names for code that reads the corpus columnwise (a `datasets` batch); each is a field
    of `SftRow` (tests/stateguard/artifacts/test_sft_rows.py checks)."""

    MESSAGES = "messages"
    TOOLS = "tools"
    KIND = "kind"


def write_sft_rows(folder: str | Path, rows: Iterable[SftRow], batch_rows: int = 1000) -> None:
    """Save the rows as a `datasets` folder (needs the `train` extra's `datasets`).

    The rows go to disk `batch_rows` at a time (an Arrow stream of record batches, memory-mapped
    back), so a corpus of any size neither holds a second in-memory copy nor meets Arrow's 2 GiB
    limit on one string column (the paper-scale corpus passes it); `save_to_disk` then shards it
    (500 MB a file). The dataset's fingerprint is the SHA-256 of the rows, so the same rows give the
    same bytes."""
    import os
    import tempfile

    import pyarrow as pa
    from datasets import Dataset, DatasetInfo, Features
    from datasets.table import MemoryMappedTable

    if batch_rows < 1:
        raise ValueError(f"batch_rows={batch_rows}: write at least one row per batch")
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, name = tempfile.mkstemp(prefix=f".{root.name}-", suffix=".arrow", dir=root.parent)
    os.close(fd)
    try:
        schema: pa.Schema | None = None
        with pa.OSFile(name, "wb") as sink:
            writer: pa.RecordBatchStreamWriter | None = None
            for batch in _batches(rows, batch_rows, digest):
                table = pa.Table.from_pylist(batch, schema=schema)
                if writer is None:
                    schema = table.schema
                    writer = pa.ipc.new_stream(sink, schema)
                writer.write_table(table)
            if writer is not None:
                writer.close()
        if schema is None:  # no rows: an empty dataset, as before
            Dataset.from_list([]).save_to_disk(str(root))
            return
        table = MemoryMappedTable.from_file(name)
        info = DatasetInfo(features=Features.from_arrow_schema(schema))
        Dataset(table, info=info, fingerprint=digest.hexdigest()[:16]).save_to_disk(str(root))
    finally:
        Path(name).unlink(missing_ok=True)


def _batches(rows: Iterable[SftRow], size: int, digest: hashlib._Hash) -> Iterator[list[dict[str, object]]]:
    """The rows as plain dicts, `size` at a time, each also fed to `digest` as one JSON line."""
    batch: list[dict[str, object]] = []
    for row in rows:
        record = row.model_dump(mode="json")
        digest.update(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def read_sft_rows(folder: str | Path) -> list[SftRow]:
    """Every row of a corpus folder, read with pyarrow; ArtifactError naming the folder (and the row
    and field) when it is not an SFT corpus as `write_sft_rows` saves it."""
    import pyarrow as pa

    root = Path(folder)
    state = root / STATE_FILE
    if not state.is_file():
        raise ArtifactError(f"{root} has no {STATE_FILE}: not an SFT corpus folder")
    try:
        names = [f["filename"] for f in json.loads(state.read_text(encoding="utf-8"))["_data_files"]]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ArtifactError(f"{state}: not a datasets state file ({exc}); re-export the corpus") from None
    rows: list[SftRow] = []
    for name in names:
        with pa.memory_map(str(root / name)) as src:
            table = pa.ipc.open_stream(src).read_all()
        for number, raw in enumerate(table.to_pylist()):
            try:
                rows.append(SftRow.model_validate(raw))
            except ValidationError as exc:
                raise ArtifactError(
                    f"{root / name} row {number}: not an SftRow ({describe_errors(exc)}); re-export the corpus"
                ) from None
    return rows
