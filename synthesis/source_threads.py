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
from synthesis.sources.spelling import slug, sql_text
from synthesis.sources.tabular import register_dataset
from synthesis.threads import FAMILIES, Thread, family_thread, num, quantile

__all__ = ["register", "source_families"]

Family = Callable[[duckdb.DuckDBPyConnection, random.Random], Thread]
MIN_SEGMENT_ROWS = 8  # a category value a thread filters on keeps at least this many rows with m1


def _two_thresholds(con: duckdb.DuckDBPyConnection, sql: str, rng: random.Random) -> tuple[float, float]:
    """A threshold and an alternative (the definition update), both quantiles of the data, rounded."""
    qs = rng.sample([0.3, 0.4, 0.5, 0.6, 0.7], 2)
    low, alt = (float(f"{quantile(con, sql, q):.3g}") for q in qs)
    if alt == low:
        alt = float(f"{quantile(con, sql, 0.9):.3g}")
    return low, alt


def source_families(sd: SourceDataset) -> list[Family]:
    """The three families bound to one prepared source table."""
    schema, table, cat = sd.info.name, sd.table, sd.category
    m1, m2 = sd.measures
    qualified = f"{schema}.{table}"
    ts = slug(table, 12, fallback="v")
    draws = {"table": table, "cat": cat, "m1": m1, "m2": m2}  # the roles the templates name

    def segments(con: duckdb.DuckDBPyConnection) -> list[str]:
        rows = con.execute(
            f"SELECT {cat} FROM {qualified} WHERE {cat} IS NOT NULL AND {m1} IS NOT NULL GROUP BY {cat} "
            f"HAVING COUNT(*) >= {MIN_SEGMENT_ROWS} ORDER BY COUNT(*) DESC, {cat} LIMIT 6"
        ).fetchall()
        return [str(r[0]) for r in rows]

    def segment_level(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
        value = rng.choice(segments(con))
        where = f"{cat} = {sql_text(value)} AND {m1} IS NOT NULL"
        low, alt = _two_thresholds(
            con, f"SELECT quantile_cont({m1}, {{q}}) FROM {qualified} WHERE {where}", rng
        )
        s = f"{ts}_{slug(value, 16, fallback='v')}"
        names = {"rows": f"{s}_rows", "high": f"{s}_high", "summary": f"{s}_high_summary"}

        return family_thread(
            "segment_level",
            {**draws, "value": value, "where": where},
            lambda p: {"t": num(float(p["threshold"]), 6)},  # type: ignore[arg-type]
            names,
            value=low,
            tunable="high",
            param="threshold",
            alternative=alt,
            describe_change=lambda v: (
                f"a {value} row of {table} counts as high when its {m1} is at least {num(float(v), 6)}"  # type: ignore[arg-type]
            ),
            base_tables=(table,),
        )

    def high_share(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
        low, alt = _two_thresholds(
            con, f"SELECT quantile_cont({m2}, {{q}}) FROM {qualified} WHERE {m2} IS NOT NULL", rng
        )
        s = f"{ts}_{slug(m2, 16, fallback='v')}_high"
        names = {
            "high": s,
            "by_cat": f"{s}_by_{slug(cat, 12, fallback='v')}",
            "top": f"{s}_top_{slug(cat, 12, fallback='v')}",
        }

        return family_thread(
            "high_share",
            draws,
            lambda p: {"t": num(float(p["threshold"]), 6)},  # type: ignore[arg-type]
            names,
            value=low,
            tunable="high",
            param="threshold",
            alternative=alt,
            describe_change=lambda v: (
                f"a row of {table} counts as high when its {m2} is at least {num(float(v), 6)}"  # type: ignore[arg-type]
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
        s = f"{ts}_{slug(cat, 12, fallback='v')}_{slug(m1, 12, fallback='v')}"
        names = {"profile": f"{s}_profile", "top": f"{s}_profile_top"}

        return family_thread(
            "category_profile",
            draws,
            lambda p: {"k": int(p["min_rows"])},  # type: ignore[call-overload]
            names,
            value=low,
            tunable="profile",
            param="min_rows",
            alternative=alt,
            describe_change=lambda v: f"the {cat} profile of {m1} keeps the groups of at least {v} rows",
            base_tables=(table,),
        )

    return [segment_level, high_share, category_profile]


def register(sd: SourceDataset) -> None:
    """Make the dataset and its thread families known in this process (each worker calls it)."""
    register_dataset(sd.info)
    FAMILIES[sd.info.name] = source_families(sd)
