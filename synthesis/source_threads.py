"""Thread families over any one table: the analysis threads of a raw-task source (paper B.1).

The hand-written families of `synthesis.threads` know their dataset (penguin species, gapminder
continents). A table drawn from DSBench, BIRD-INTERACT or IDA-Bench (`synthesis.sources.external`)
is only known by its profile, so these families are written over roles that the source preparation
picked: one categorical column `category` and two numeric columns `measures` (m1, m2).

    segment_level     rows of one category value -> those with m1 >= threshold (tunable) -> summary
    high_share        rows with m2 >= threshold (tunable) -> per category -> the top category
    category_profile  per category, mean m1 over categories with >= min_rows rows (tunable) -> top

They return `synthesis.threads.Thread` records, so task planning, interleaving, Combine (the two
per-category stages share the join key), the definition update and the rollback work unchanged.
Thresholds are read from the data (quantiles), so every instance is specific to its table.
Their stage texts are templates in `synthesis/thread_families.yaml` (filled by
`synthesis.threads.family_renderer`); this file picks the columns, values and thresholds.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import duckdb

from synthesis.sources.external import SourceDataset
from synthesis.sources.tabular import register_dataset
from synthesis.threads import FAMILIES, Thread, family_renderer, fill_quantile

__all__ = ["register", "source_families"]

Family = Callable[[duckdb.DuckDBPyConnection, random.Random], Thread]
MIN_SEGMENT_ROWS = 8  # a category value a thread filters on keeps at least this many rows with m1


def _slug(value: object, limit: int = 24) -> str:
    out = "".join(ch.lower() if ch.isalnum() else "_" for ch in str(value))
    slug = "_".join(part for part in out.split("_") if part)[:limit].strip("_") or "v"
    return slug if slug[0].isalpha() else f"v_{slug}"


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _num(value: float) -> str:
    value = round(float(value), 6)
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _quantile(con: duckdb.DuckDBPyConnection, sql: str, q: float) -> float:
    row = con.execute(fill_quantile(sql, q)).fetchone()
    if row is None or row[0] is None:
        raise ValueError(f"quantile query returned no value: {sql}")
    return float(row[0])


def _two_thresholds(con: duckdb.DuckDBPyConnection, sql: str, rng: random.Random) -> tuple[float, float]:
    """A threshold and an alternative (the definition update), both quantiles of the data, rounded."""
    qs = rng.sample([0.3, 0.4, 0.5, 0.6, 0.7], 2)
    low, alt = (float(f"{_quantile(con, sql, q):.3g}") for q in qs)
    if alt == low:
        alt = float(f"{_quantile(con, sql, 0.9):.3g}")
    return low, alt


def source_families(sd: SourceDataset) -> list[Family]:
    """The three families bound to one prepared source table."""
    schema, table, cat = sd.info.name, sd.table, sd.category
    m1, m2 = sd.measures
    qualified = f"{schema}.{table}"
    ts = _slug(table, 12)
    draws = {"table": table, "cat": cat, "m1": m1, "m2": m2}  # the roles the templates name

    def segments(con: duckdb.DuckDBPyConnection) -> list[str]:
        rows = con.execute(
            f"SELECT {cat} FROM {qualified} WHERE {cat} IS NOT NULL AND {m1} IS NOT NULL GROUP BY {cat} "
            f"HAVING COUNT(*) >= {MIN_SEGMENT_ROWS} ORDER BY COUNT(*) DESC, {cat} LIMIT 6"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def segment_level(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
        value = rng.choice(segments(con))
        where = f"{cat} = {_text(value)} AND {m1} IS NOT NULL"
        low, alt = _two_thresholds(
            con, f"SELECT quantile_cont({m1}, {{q}}) FROM {qualified} WHERE {where}", rng
        )
        s = f"{ts}_{_slug(value, 16)}"
        names = {"rows": f"{s}_rows", "high": f"{s}_high", "summary": f"{s}_high_summary"}

        render = family_renderer(
            "segment_level",
            {**draws, "value": value, "where": where},
            lambda p: {"t": _num(float(p["threshold"]))},  # type: ignore[arg-type]
        )

        return Thread(
            thread_id="segment_level",
            family="segment_level",
            params={"threshold": low},
            keys=list(names),
            render=render,
            default_names=names,
            tunable="high",
            tunable_param="threshold",
            alternative=alt,
            describe_change=lambda v: (
                f"a {value} row of {table} counts as high when its {m1} is at least {_num(float(v))}"  # type: ignore[arg-type]
            ),
            base_tables=(table,),
        )

    def high_share(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
        low, alt = _two_thresholds(
            con, f"SELECT quantile_cont({m2}, {{q}}) FROM {qualified} WHERE {m2} IS NOT NULL", rng
        )
        s = f"{ts}_{_slug(m2, 16)}_high"
        names = {"high": s, "by_cat": f"{s}_by_{_slug(cat, 12)}", "top": f"{s}_top_{_slug(cat, 12)}"}

        render = family_renderer(
            "high_share",
            draws,
            lambda p: {"t": _num(float(p["threshold"]))},  # type: ignore[arg-type]
        )

        return Thread(
            thread_id="high_share",
            family="high_share",
            params={"threshold": low},
            keys=list(names),
            render=render,
            default_names=names,
            tunable="high",
            tunable_param="threshold",
            alternative=alt,
            describe_change=lambda v: (
                f"a row of {table} counts as high when its {m2} is at least {_num(float(v))}"  # type: ignore[arg-type]
            ),
            base_tables=(table,),
        )

    def category_profile(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
        counts = sorted(
            int(r[0])
            for r in con.execute(
                f"SELECT COUNT(*) FROM {qualified} WHERE {cat} IS NOT NULL AND {m1} IS NOT NULL GROUP BY {cat}"
            ).fetchall()
        )
        low = rng.choice([1, 2, 3])
        alt = max(counts[len(counts) // 2], low + 1)  # the median group size: about half the groups drop out
        s = f"{ts}_{_slug(cat, 12)}_{_slug(m1, 12)}"
        names = {"profile": f"{s}_profile", "top": f"{s}_profile_top"}

        render = family_renderer("category_profile", draws, lambda p: {"k": int(p["min_rows"])})  # type: ignore[call-overload]

        return Thread(
            thread_id="category_profile",
            family="category_profile",
            params={"min_rows": low},
            keys=list(names),
            render=render,
            default_names=names,
            tunable="profile",
            tunable_param="min_rows",
            alternative=alt,
            describe_change=lambda v: f"the {cat} profile of {m1} keeps the groups of at least {v} rows",
            base_tables=(table,),
        )

    return [segment_level, high_share, category_profile]


def register(sd: SourceDataset) -> None:
    """Make the dataset and its thread families known in this process (each worker calls it)."""
    register_dataset(sd.info)
    FAMILIES[sd.info.name] = source_families(sd)
