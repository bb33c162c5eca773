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
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import duckdb

from synthesis.threads import StageSpec, Thread, rounded

if TYPE_CHECKING:
    from synthesis.sources.external import SourceDataset

__all__ = ["source_families"]

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
    row = con.execute(sql.format(q=q)).fetchone()
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

        def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
            t = _num(float(p["threshold"]))  # type: ignore[arg-type]
            tid = "segment_level"
            return [
                StageSpec(
                    name=n["rows"],
                    thread=tid,
                    note=f"{table} rows with {cat} {value} and a {m1}",
                    sql=f"CREATE OR REPLACE TABLE {n['rows']} AS\nSELECT * FROM {table}\nWHERE {where}",
                    question=f"Keep the rows of {table} whose {cat} is {value!r} and that have a {m1}. Report "
                    f"`n_rows` (count) and `mean_{m1}` (mean {m1}, rounded to 2 decimal places).",
                    answer_sql=f"SELECT COUNT(*), {rounded(f'AVG({m1})')} FROM {n['rows']}",
                    answer_kind="row",
                    fields=("n_rows", f"mean_{m1}"),
                ),
                StageSpec(
                    name=n["high"],
                    thread=tid,
                    note=f"{cat} {value} rows with {m1} >= {t}",
                    sql=f"CREATE OR REPLACE TABLE {n['high']} AS\nSELECT * FROM {n['rows']}\nWHERE {m1} >= {t}",
                    question=f"Among those rows, call a row high when its {m1} is at least {t}. Report "
                    f"`n_high` (count of high rows) and `mean_{m2}` (their mean {m2}, rounded to 2 decimal "
                    "places).",
                    answer_sql=f"SELECT COUNT(*), {rounded(f'AVG({m2})')} FROM {n['high']}",
                    answer_kind="row",
                    fields=("n_high", f"mean_{m2}"),
                ),
                StageSpec(
                    name=n["summary"],
                    thread=tid,
                    note=f"range of {m2} over the high {value} rows",
                    sql=f"CREATE OR REPLACE TABLE {n['summary']} AS\nSELECT COUNT({m2}) AS n_with_{m2}, "
                    f"MIN({m2}) AS min_{m2}, MAX({m2}) AS max_{m2}\nFROM {n['high']}",
                    question=f"Over the high rows, report `n_with_{m2}` (rows with a {m2}), `min_{m2}` and "
                    f"`max_{m2}` (rounded to 2 decimal places).",
                    answer_sql=f"SELECT n_with_{m2}, {rounded(f'min_{m2}')}, {rounded(f'max_{m2}')} "
                    f"FROM {n['summary']}",
                    answer_kind="row",
                    fields=(f"n_with_{m2}", f"min_{m2}", f"max_{m2}"),
                ),
            ]

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

        def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
            t = _num(float(p["threshold"]))  # type: ignore[arg-type]
            tid = "high_share"
            return [
                StageSpec(
                    name=n["high"],
                    thread=tid,
                    note=f"{table} rows with {m2} >= {t}",
                    sql=f"CREATE OR REPLACE TABLE {n['high']} AS\nSELECT * FROM {table}\nWHERE {m2} >= {t}",
                    question=f"Call a row of {table} high when its {m2} is at least {t}. Report `n_high` (count "
                    f"of high rows) and `mean_{m1}` (their mean {m1}, rounded to 2 decimal places).",
                    answer_sql=f"SELECT COUNT(*), {rounded(f'AVG({m1})')} FROM {n['high']}",
                    answer_kind="row",
                    fields=("n_high", f"mean_{m1}"),
                ),
                StageSpec(
                    name=n["by_cat"],
                    thread=tid,
                    note=f"high {m2} rows per {cat}",
                    sql=f"CREATE OR REPLACE TABLE {n['by_cat']} AS\nSELECT {cat}, COUNT(*) AS n_high, "
                    f"AVG({m1}) AS mean_{m1}\nFROM {n['high']}\nWHERE {cat} IS NOT NULL\nGROUP BY {cat}",
                    question=f"For each {cat}, count the high rows and their mean {m1}. Report `per_{cat}`: "
                    f"{cat} -> {{`n_high`, `mean_{m1}` (rounded to 2 decimal places)}}.",
                    answer_sql=f"SELECT {cat}, n_high, {rounded(f'mean_{m1}')} FROM {n['by_cat']} ORDER BY {cat}",
                    answer_kind="map",
                    fields=(f"per_{cat}", "n_high", f"mean_{m1}"),
                    join_key=cat,
                    join_value="n_high",
                ),
                StageSpec(
                    name=n["top"],
                    thread=tid,
                    note=f"{cat} with the most high {m2} rows",
                    sql=f"CREATE OR REPLACE TABLE {n['top']} AS\nSELECT {cat}, n_high FROM {n['by_cat']}\n"
                    f"ORDER BY n_high DESC, {cat}\nLIMIT 1",
                    question=f"Which {cat} has the most high rows (ties broken alphabetically)? Report `{cat}` "
                    "and `n_high`.",
                    answer_sql=f"SELECT {cat}, n_high FROM {n['top']}",
                    answer_kind="row",
                    fields=(cat, "n_high"),
                ),
            ]

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

        def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
            k = int(p["min_rows"])  # type: ignore[call-overload]
            tid = "category_profile"
            return [
                StageSpec(
                    name=n["profile"],
                    thread=tid,
                    note=f"mean {m1} per {cat} (groups of >= {k} rows)",
                    sql=f"CREATE OR REPLACE TABLE {n['profile']} AS\nSELECT {cat}, COUNT(*) AS n_rows, "
                    f"AVG({m1}) AS mean_{m1}\nFROM {table}\nWHERE {cat} IS NOT NULL AND {m1} IS NOT NULL\n"
                    f"GROUP BY {cat}\nHAVING COUNT(*) >= {k}",
                    question=f"Profile {m1} by {cat}: over the rows with both values, keep the {cat} groups of at "
                    f"least {k} rows. Report `profile`: {cat} -> {{`n_rows`, `mean_{m1}` (rounded to 2 decimal "
                    "places)}.",
                    answer_sql=f"SELECT {cat}, n_rows, {rounded(f'mean_{m1}')} FROM {n['profile']} ORDER BY {cat}",
                    answer_kind="map",
                    fields=("profile", "n_rows", f"mean_{m1}"),
                    join_key=cat,
                    join_value=f"mean_{m1}",
                ),
                StageSpec(
                    name=n["top"],
                    thread=tid,
                    note=f"{cat} with the highest mean {m1}",
                    sql=f"CREATE OR REPLACE TABLE {n['top']} AS\nSELECT {cat}, mean_{m1} FROM {n['profile']}\n"
                    f"ORDER BY mean_{m1} DESC, {cat}\nLIMIT 1",
                    question=f"Which {cat} of the profile has the highest mean {m1} (ties broken alphabetically)? "
                    f"Report `{cat}` and `mean_{m1}` (rounded to 2 decimal places).",
                    answer_sql=f"SELECT {cat}, {rounded(f'mean_{m1}')} FROM {n['top']}",
                    answer_kind="row",
                    fields=(cat, f"mean_{m1}"),
                ),
            ]

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
