"""Tables of the paper's raw-task sources (B.1: DSBench, BIRD-INTERACT, IDA-Bench) as synthesis datasets.

`make synth` draws threads from these sources when their folders are configured
(`sources.dsbench`, `sources.bird_interact`, `sources.ida_bench` in configs/synth.yaml; all null by
default, so nothing changes without the data):

    python -m synthesis.pipeline synth=debug sources.dsbench=<DSBench root> sources.ida_bench=<IDA-Bench root>

For every raw task the readers return (`read_dsbench`, `read_bird_interact`, `read_ida_bench`), its
agent-visible CSV tables are tried in order (DSBench: the task's tables or the modelling `train.csv`;
IDA-Bench: `datasets/*.csv`; BIRD-INTERACT: the database's tables exported as `<db>/*.csv`, since
the release ships PostgreSQL dumps, one per database, not per task). The first table with a
categorical column (2-12 values) and two numeric columns becomes a dataset: its columns are renamed
to plain identifiers, typed (BIGINT, DOUBLE or VARCHAR), capped at `max_rows` rows, and written as a
clean CSV under `<out_dir>/_sources/<name>/`; the record (`SourceDataset`) carries the picked column
roles, and `synthesis.source_threads.register` makes the dataset and its thread families known in
a process (the task layer registers; this raw-data layer imports nothing of it), so `build_task` works on it as on the packaged datasets. Tables without those columns
are skipped with the reason logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import duckdb
from pydantic import BaseModel, ConfigDict

from synthesis.sources.bird_interact import read_bird_interact
from synthesis.sources.dsbench import read_dsbench
from synthesis.sources.ida_bench import read_ida_bench
from synthesis.sources.records import RawTask
from synthesis.sources.spelling import slug
from synthesis.sources.tabular import ColumnSpec, DatasetInfo, TableSpec

__all__ = ["SOURCE_KINDS", "SourceDataset", "prepare_sources"]

log = logging.getLogger(__name__)

SourceKind = Literal["dsbench", "bird_interact", "ida_bench"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("dsbench", "bird_interact", "ida_bench")
_READERS: dict[str, Callable[[Path], list[RawTask]]] = {
    "dsbench": read_dsbench,
    "bird_interact": read_bird_interact,
    "ida_bench": read_ida_bench,
}
_PREFIX = {"dsbench": "ds", "bird_interact": "bird", "ida_bench": "ida"}
_LABEL = {"dsbench": "DSBench", "bird_interact": "BIRD-INTERACT", "ida_bench": "IDA-Bench"}
_INTEGER = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
)
_FLOAT = ("FLOAT", "DOUBLE", "REAL", "DECIMAL")
MAX_CATEGORIES = 12
MIN_NUMERIC_DISTINCT = 8


class SourceDataset(BaseModel):
    """One source table prepared for synthesis: the dataset record plus the column roles threads use."""

    model_config = ConfigDict(frozen=True)

    source: SourceKind
    raw_task_id: str
    file: str  # the table's path inside the raw task (relative to its root)
    info: DatasetInfo
    table: str
    category: str
    measures: tuple[str, str]


def _candidate_files(kind: str, raw: RawTask) -> list[Path]:
    if kind == "bird_interact":
        db_dir = Path(raw.root) / str(raw.metadata.get("database", ""))
        return sorted(db_dir.glob("*.csv")) if db_dir.is_dir() else []
    return [
        raw.path_of(f)
        for f in raw.files("table", "train", present_only=True)
        if f.path.lower().endswith(".csv")
    ]


def _columns(con: duckdb.DuckDBPyConnection, path: Path, max_rows: int) -> list[tuple[str, str, str]]:
    """(original name, clean identifier, type) per column; the table is loaded as `raw`."""
    con.execute(
        f"CREATE OR REPLACE TABLE raw AS SELECT * FROM read_csv_auto('{path.as_posix()}', header = true) "
        f"LIMIT {int(max_rows)}"
    )
    reserved = {
        k
        for (k,) in con.execute(
            "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category <> 'unreserved'"
        ).fetchall()
    }
    out, used = [], set()
    for name, sql_type in con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'raw' ORDER BY ordinal_position"
    ).fetchall():
        clean = slug(name, 30, fallback="x")
        if clean in reserved:
            clean += "_"
        while clean in used:
            clean += "_"
        used.add(clean)
        base = sql_type.upper()
        typ = "BIGINT" if base.startswith(_INTEGER) else "DOUBLE" if base.startswith(_FLOAT) else "VARCHAR"
        out.append((name, clean, typ))
    return out


def _pick_roles(
    con: duckdb.DuckDBPyConnection, cols: list[tuple[str, str, str]]
) -> tuple[str, tuple[str, str]] | str:
    """(category, (m1, m2)) read from `clean`, or the reason the table does not fit the families."""
    n_rows = con.execute("SELECT COUNT(*) FROM clean").fetchone()[0]  # type: ignore[index]
    cats, nums = [], []
    for _orig, name, typ in cols:
        distinct, non_null = con.execute(
            f"SELECT COUNT(DISTINCT {name}), COUNT({name}) FROM clean"
        ).fetchone()  # type: ignore[misc]
        if typ == "VARCHAR" and 2 <= distinct <= MAX_CATEGORIES:
            cats.append(name)
        elif (
            typ != "VARCHAR"
            and distinct >= MIN_NUMERIC_DISTINCT
            and non_null >= n_rows / 2
            and not (typ == "BIGINT" and distinct == non_null)
        ):  # an integer that never repeats: an id
            nums.append(name)
    if not cats:
        return f"no categorical column with 2-{MAX_CATEGORIES} values"
    if len(nums) < 2:
        return f"fewer than two numeric columns with >= {MIN_NUMERIC_DISTINCT} values"
    return cats[0], (nums[0], nums[1])


def _prepare(
    kind: str, raw: RawTask, path: Path, cache: Path, max_rows: int, taken: set[str]
) -> SourceDataset | str:
    con = duckdb.connect(config={"threads": 1})
    try:
        try:
            cols = _columns(con, path, max_rows)
        except duckdb.Error as exc:
            return f"not readable as CSV ({exc})"
        select = ", ".join(f'CAST("{o.replace(chr(34), chr(34) * 2)}" AS {t}) AS {c}' for o, c, t in cols)
        try:
            con.execute(f"CREATE TABLE clean AS SELECT {select} FROM raw")
        except duckdb.Error as exc:
            return f"columns do not cast ({exc})"
        roles = _pick_roles(con, cols)
        if isinstance(roles, str):
            return roles
        name = f"{_PREFIX[kind]}_{slug(raw.task_id, 28, fallback='x')}"
        while name in taken:
            name += "_"
        table = slug(path.stem, 20, fallback="x")
        folder = cache / name
        folder.mkdir(parents=True, exist_ok=True)
        con.execute(f"COPY clean TO '{(folder / f'{table}.csv').as_posix()}' (HEADER, DELIMITER ',')")
        rows = con.execute("SELECT COUNT(*) FROM clean").fetchone()[0]  # type: ignore[index]
    finally:
        con.close()
    title = str(raw.metadata.get("name") or raw.task_id)
    info = DatasetInfo(
        name=name,
        package=name,
        distribution=f"{_LABEL[kind]} task {raw.task_id}",
        version="local",
        license="as published by the source",
        license_source=f"{_LABEL[kind]} release",
        homepage="",
        description=f"A table of the {_LABEL[kind]} task {title!r} ({path.name}, {rows} rows; columns renamed "
        "to plain identifiers).",
        tables=(
            TableSpec(
                name=table,
                file=f"{table}.csv",
                row_count=int(rows),
                columns=tuple(ColumnSpec(name=c, sql_type=t) for _o, c, t in cols),
            ),
        ),
        local_dir=str(folder.resolve()),
    )
    rel = path.relative_to(raw.root).as_posix() if path.is_relative_to(raw.root) else path.name
    return SourceDataset(
        source=kind,
        raw_task_id=raw.task_id,
        file=rel,
        info=info,
        table=table,
        category=roles[0],
        measures=roles[1],
    )


def prepare_sources(
    folders: Mapping[str, str | None], cache: Path, *, max_tables: int = 20, max_rows: int = 20_000
) -> list[SourceDataset]:
    """Usable tables of every configured source (at most `max_tables` per source), in reading order."""
    unknown = sorted(set(folders) - set(SOURCE_KINDS))
    if unknown:
        raise ValueError(f"sources.{unknown[0]}: unknown raw-task source; known: {', '.join(SOURCE_KINDS)}")
    out: list[SourceDataset] = []
    taken: set[str] = set()
    for kind in SOURCE_KINDS:
        folder = folders.get(kind)
        if not folder:
            continue
        if not Path(folder).exists():
            raise FileNotFoundError(
                f"sources.{kind}={folder}: no such folder (set it to the {_LABEL[kind]} root, "
                "or null to leave the source out)"
            )
        found, seen_files = 0, set()
        for raw in _READERS[kind](Path(folder)):
            if found >= max_tables:
                break
            for path in _candidate_files(kind, raw):
                if path.resolve() in seen_files:  # BIRD-INTERACT: many tasks share one database
                    continue
                seen_files.add(path.resolve())
                result = _prepare(kind, raw, path, cache, max_rows, taken)
                if isinstance(result, str):
                    log.info("%s task %s: %s skipped: %s", _LABEL[kind], raw.task_id, path.name, result)
                    continue
                taken.add(result.info.name)
                out.append(result)
                found += 1
                break
    return out
