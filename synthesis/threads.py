"""Executable analysis threads over a DuckDB dataset (first step of paper Eq. 21).

A thread is a chain of SQL stages, each `CREATE OR REPLACE TABLE <stage> AS SELECT ...`, plus a
natural-language question and an answer query over the stage's own table. Threads come from
parameterized families; a seeded RNG picks the categories, years and thresholds, and the
values are read from the data (`describe()` and quantiles), so intermediate results are
specific to the dataset.

    con = duckdb.connect(); load_into_duckdb(con, "penguins")
    threads = generate_threads(con, "penguins", random.Random(0))
    threads[0].stages()                      # list[StageSpec] with the default table names

Stage SQL reads base tables unqualified (`penguins`, `flights`); a task loads them into the
`main` schema of its own connection. Each family also names one *tunable* stage (a numeric
definition such as a threshold) and offers an alternative value, so a task can re-create that
stage under a changed definition (`Thread.stages(params=..., names=...)`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import duckdb

from synthesis.sources.tabular import describe

__all__ = ["FAMILIES", "StageSpec", "Thread", "generate_threads", "rounded"]

AnswerKind = Literal["row", "map"]


def rounded(expr: str, digits: int = 2) -> str:
    """SQL for a DOUBLE rounded to `digits` places (never DECIMAL, so it prints as a float)."""
    return f"ROUND(CAST(({expr}) AS DOUBLE), {digits})"


@dataclass(frozen=True)
class StageSpec:
    """One stage: the SQL that materializes `name`, its question and its answer query.

    `answer_kind` "row": the answer query returns one row, `fields` names its columns.
    "map": it returns rows `(key, v1, ...)`; the answer is `{fields[0]: {key: v}}` with `v` the
    single value, or a dict over `fields[1:]` when there are several.
    """

    name: str
    sql: str
    question: str
    answer_sql: str
    answer_kind: AnswerKind
    fields: tuple[str, ...]
    thread: str
    key: str = "thread-local stage"
    note: str = ""
    join_key: str | None = None
    join_value: str | None = None


@dataclass
class Thread:
    """A family instance: fixed parameters, and a renderer from (params, names) to stages."""

    thread_id: str
    family: str
    params: dict[str, object]
    keys: list[str]
    render: Callable[[Mapping[str, object], Mapping[str, str]], list[StageSpec]]
    default_names: dict[str, str]
    tunable: str
    tunable_param: str
    alternative: object
    describe_change: Callable[[object], str]
    base_tables: tuple[str, ...]
    extra: dict[str, object] = field(default_factory=dict)

    def stages(
        self, params: Mapping[str, object] | None = None, names: Mapping[str, str] | None = None
    ) -> list[StageSpec]:
        p = dict(self.params)
        p.update(params or {})
        n = dict(self.default_names)
        n.update(names or {})
        return self.render(p, n)


def _slug(value: object) -> str:
    out = "".join(ch.lower() if ch.isalnum() else "_" for ch in str(value))
    return "_".join(part for part in out.split("_") if part)


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _quantile(con: duckdb.DuckDBPyConnection, sql: str, q: float, step: float) -> float:
    row = con.execute(sql.format(q=q)).fetchone()
    if row is None:
        raise ValueError(f"quantile query returned no row: {sql}")
    return round(float(row[0]) / step) * step


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# --- penguins --------------------------------------------------------------------------------


def _penguin_mass(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    species = rng.choice(describe(con, "penguins").table("penguins").column("species").top_values)
    where = f"species = {_sql_text(species)} AND body_mass_g IS NOT NULL"
    q_sql = f"SELECT quantile_cont(body_mass_g, {{q}}) FROM penguins.penguins WHERE {where}"
    qs = rng.sample([0.4, 0.5, 0.6, 0.7], 2)
    low, alt = _quantile(con, q_sql, qs[0], 50), _quantile(con, q_sql, qs[1], 50)
    if alt == low:
        alt = low + 150
    s = _slug(species)
    names = {"birds": f"{s}_birds", "heavy": f"{s}_heavy", "by_island": f"{s}_heavy_by_island",
             "top": f"{s}_heavy_top_island"}  # fmt: skip

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["threshold"]))  # type: ignore[arg-type]
        tid = "penguin_mass"
        return [
            StageSpec(
                name=n["birds"], thread=tid, note=f"{species} penguins with a body mass",
                sql=f"CREATE OR REPLACE TABLE {n['birds']} AS\nSELECT * FROM penguins\nWHERE {where}",
                question=f"Keep the {species} penguins that have a recorded body mass. Report `n_birds` "
                "(count) and `mean_mass_g` (mean body mass in grams, rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(body_mass_g)')} FROM {n['birds']}",
                answer_kind="row", fields=("n_birds", "mean_mass_g"),
            ),
            StageSpec(
                name=n["heavy"], thread=tid, note=f"heavy {species} penguins (>= {t} g)",
                sql=f"CREATE OR REPLACE TABLE {n['heavy']} AS\nSELECT * FROM {n['birds']}\nWHERE body_mass_g >= {t}",
                question=f"Call a {species} penguin heavy when its body mass is at least {t} g. Among "
                f"the {species} penguins with a recorded mass, report `n_heavy` (count of heavy birds) "
                "and `mean_flipper_mm` (their mean flipper length in mm, rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(flipper_length_mm)')} FROM {n['heavy']}",
                answer_kind="row", fields=("n_heavy", "mean_flipper_mm"),
            ),
            StageSpec(
                name=n["by_island"], thread=tid, note=f"heavy {species} penguins per island",
                sql=f"CREATE OR REPLACE TABLE {n['by_island']} AS\nSELECT island, COUNT(*) AS n_heavy, "
                f"AVG(body_mass_g) AS mean_mass_g\nFROM {n['heavy']}\nGROUP BY island",
                question=f"For each island, count the heavy {species} penguins and their mean body mass. "
                "Report `per_island`: island -> {`n_heavy`, `mean_mass_g` (grams, rounded to 2 decimal "
                "places)}.",
                answer_sql=f"SELECT island, n_heavy, {rounded('mean_mass_g')} FROM {n['by_island']} ORDER BY island",
                answer_kind="map", fields=("per_island", "n_heavy", "mean_mass_g"),
                join_key="island", join_value="n_heavy",
            ),
            StageSpec(
                name=n["top"], thread=tid, note=f"island with the most heavy {species} penguins",
                sql=f"CREATE OR REPLACE TABLE {n['top']} AS\nSELECT island, n_heavy FROM {n['by_island']}\n"
                "ORDER BY n_heavy DESC, island\nLIMIT 1",
                question=f"Which island has the most heavy {species} penguins (ties broken alphabetically)? "
                "Report `island` and `n_heavy`.",
                answer_sql=f"SELECT island, n_heavy FROM {n['top']}",
                answer_kind="row", fields=("island", "n_heavy"),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="penguin_mass", family="penguin_mass", params={"threshold": low}, keys=list(names),
        render=render, default_names=names, tunable="heavy", tunable_param="threshold", alternative=alt,
        describe_change=lambda v: f"a {species} penguin counts as heavy when its body mass is at least "
        f"{_num(float(v))} g",  # type: ignore[arg-type]
        base_tables=("penguins",),
    )  # fmt: skip


def _penguin_bills(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    island = rng.choice(describe(con, "penguins").table("penguins").column("island").top_values)
    where = f"island = {_sql_text(island)} AND bill_length_mm IS NOT NULL AND bill_depth_mm IS NOT NULL"
    q_sql = f"SELECT quantile_cont(bill_length_mm, {{q}}) FROM penguins.penguins WHERE {where}"
    qs = rng.sample([0.1, 0.2, 0.3], 2)
    low, alt = _quantile(con, q_sql, qs[0], 0.5), _quantile(con, q_sql, qs[1], 0.5)
    if alt == low:
        alt = low + 1.0
    s = _slug(island)
    names = {"birds": f"{s}_measured", "ratio": f"{s}_bill_ratio", "rank": f"{s}_bill_ratio_rank"}

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["min_bill"]))  # type: ignore[arg-type]
        tid = "penguin_bills"
        return [
            StageSpec(
                name=n["birds"], thread=tid, note=f"measured penguins on {island} (bill >= {t} mm)",
                sql=f"CREATE OR REPLACE TABLE {n['birds']} AS\nSELECT * FROM penguins\nWHERE {where} "
                f"AND bill_length_mm >= {t}",
                question=f"Keep the penguins on {island} island with both bill measurements and a bill "
                f"length of at least {t} mm. Report `n_birds` (count) and `n_species` (number of species).",
                answer_sql=f"SELECT COUNT(*), COUNT(DISTINCT species) FROM {n['birds']}",
                answer_kind="row", fields=("n_birds", "n_species"),
            ),
            StageSpec(
                name=n["ratio"], thread=tid, note=f"mean bill length/depth ratio per species on {island}",
                sql=f"CREATE OR REPLACE TABLE {n['ratio']} AS\nSELECT species, COUNT(*) AS n_birds, "
                f"AVG(bill_length_mm / bill_depth_mm) AS mean_bill_ratio\nFROM {n['birds']}\nGROUP BY species",
                question=f"For each species among the kept {island} penguins (bill length at least {t} mm), compute "
                "the mean ratio of bill length to bill "
                "depth (unitless). Report `bill_ratio`: species -> mean ratio rounded to 2 decimal places.",
                answer_sql=f"SELECT species, {rounded('mean_bill_ratio')} FROM {n['ratio']} ORDER BY species",
                answer_kind="map", fields=("bill_ratio",), join_key="species", join_value="mean_bill_ratio",
            ),
            StageSpec(
                name=n["rank"], thread=tid, note="species ranked by bill ratio",
                sql=f"CREATE OR REPLACE TABLE {n['rank']} AS\nSELECT species, mean_bill_ratio, "
                f"RANK() OVER (ORDER BY mean_bill_ratio DESC) AS ratio_rank\nFROM {n['ratio']}",
                question=f"Rank the species on {island} by that mean bill ratio, highest first. Report `top_species` and "
                "`top_ratio` (rounded to 2 decimal places).",
                answer_sql=f"SELECT species, {rounded('mean_bill_ratio')} FROM {n['rank']} "
                "ORDER BY ratio_rank, species LIMIT 1",
                answer_kind="row", fields=("top_species", "top_ratio"),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="penguin_bills", family="penguin_bills", params={"min_bill": low}, keys=list(names),
        render=render, default_names=names, tunable="birds", tunable_param="min_bill", alternative=alt,
        describe_change=lambda v: f"only penguins on {island} with a bill length of at least "
        f"{_num(float(v))} mm are kept",  # type: ignore[arg-type]
        base_tables=("penguins",),
    )  # fmt: skip


def _penguin_flippers(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    prof = describe(con, "penguins").table("penguins")
    sex = rng.choice([v for v in prof.column("sex").top_values if v])
    y0, y1 = int(prof.column("year").min_value), int(prof.column("year").max_value)
    counts = sorted(
        n
        for (n,) in con.execute(
            "SELECT COUNT(*) FROM penguins.penguins WHERE sex = ? AND flipper_length_mm IS NOT NULL "
            "GROUP BY species, year",
            [sex],
        ).fetchall()
    )
    min_n = counts[0]  # keeps every group; the alternative drops the smallest ones
    alt_n = max(rng.choice(counts[1:4]), counts[0] + 1)
    names = {"by_year": f"{sex}_flipper_by_year", "growth": f"{sex}_flipper_change",
             "leader": f"{sex}_flipper_leader"}  # fmt: skip

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        k = int(str(p["min_n"]))
        tid = "penguin_flippers"
        return [
            StageSpec(
                name=n["by_year"], thread=tid, note=f"mean flipper length of {sex} penguins per species and year",
                sql=f"CREATE OR REPLACE TABLE {n['by_year']} AS\nSELECT species, year, COUNT(*) AS n_birds, "
                f"AVG(flipper_length_mm) AS mean_flipper_mm\nFROM penguins\nWHERE sex = {_sql_text(sex)} "
                f"AND flipper_length_mm IS NOT NULL\nGROUP BY species, year\nHAVING COUNT(*) >= {k}",
                question=f"For {sex} penguins with a flipper measurement, compute the mean flipper length "
                f"(mm) per species and year, keeping only species-year groups with at least {k} birds. "
                "Report `n_groups` and `overall_max_mm` (largest group mean, rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('MAX(mean_flipper_mm)')} FROM {n['by_year']}",
                answer_kind="row", fields=("n_groups", "overall_max_mm"),
            ),
            StageSpec(
                name=n["growth"], thread=tid, note=f"flipper change {y0}->{y1} per species",
                sql=f"CREATE OR REPLACE TABLE {n['growth']} AS\nSELECT species,\n"
                f"  MAX(CASE WHEN year = {y1} THEN mean_flipper_mm END) - "
                f"MAX(CASE WHEN year = {y0} THEN mean_flipper_mm END) AS change_mm\n"
                f"FROM {n['by_year']}\nGROUP BY species\nHAVING change_mm IS NOT NULL",
                question=f"Per species, how much did the mean flipper length of {sex} penguins change from {y0} to {y1}? "
                "Report `change_mm`: species -> change in mm, rounded to 2 decimal places.",
                answer_sql=f"SELECT species, {rounded('change_mm')} FROM {n['growth']} ORDER BY species",
                answer_kind="map", fields=("change_mm",), join_key="species", join_value="change_mm",
            ),
            StageSpec(
                name=n["leader"], thread=tid, note="species with the largest flipper change",
                sql=f"CREATE OR REPLACE TABLE {n['leader']} AS\nSELECT species, change_mm FROM {n['growth']}\n"
                "ORDER BY change_mm DESC, species\nLIMIT 1",
                question=f"Which species had the largest increase in mean {sex} flipper length? Report `species` and `change_mm` "
                "(rounded to 2 decimal places).",
                answer_sql=f"SELECT species, {rounded('change_mm')} FROM {n['leader']}",
                answer_kind="row", fields=("species", "change_mm"),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="penguin_flippers", family="penguin_flippers", params={"min_n": min_n}, keys=list(names),
        render=render, default_names=names, tunable="by_year", tunable_param="min_n",
        alternative=alt_n,
        describe_change=lambda v: f"a species-year group needs at least {v} {sex} birds to be kept",
        base_tables=("penguins",),
    )  # fmt: skip


# --- gapminder -------------------------------------------------------------------------------


def _gap_growth(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    prof = describe(con, "gapminder").table("gapminder")
    continent = rng.choice(prof.column("continent").top_values)
    years = [r[0] for r in con.execute("SELECT DISTINCT year FROM gapminder.gapminder ORDER BY 1").fetchall()]
    y0 = rng.choice(years[: len(years) // 2])
    y1 = rng.choice(years[len(years) // 2 :])
    growth_sql = (
        "SELECT quantile_cont(g, {q}) FROM (SELECT 100 * (MAX(CASE WHEN year = "
        + str(y1)
        + " THEN gdpPercap END) / MAX(CASE WHEN year = "
        + str(y0)
        + " THEN gdpPercap END) - 1) AS g FROM gapminder.gapminder WHERE continent = "
        + _sql_text(continent)
        + " GROUP BY country)"
    )
    qs = rng.sample([0.5, 0.6, 0.75], 2)
    low, alt = _quantile(con, growth_sql, qs[0], 10), _quantile(con, growth_sql, qs[1], 10)
    if alt == low:
        alt = low + 20
    s = _slug(continent)
    names = {"rows": f"{s}_{y0}_{y1}", "growth": f"{s}_gdp_growth", "fast": f"{s}_fast_growers",
             "top": f"{s}_top_growers"}  # fmt: skip

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["threshold"]))  # type: ignore[arg-type]
        tid = "gap_growth"
        return [
            StageSpec(
                name=n["rows"], thread=tid, note=f"{continent} rows for {y0} and {y1}",
                sql=f"CREATE OR REPLACE TABLE {n['rows']} AS\nSELECT * FROM gapminder\n"
                f"WHERE continent = {_sql_text(continent)} AND year IN ({y0}, {y1})",
                question=f"Keep the {continent} rows for the years {y0} and {y1}. Report `n_rows` and "
                f"`n_countries`.",
                answer_sql=f"SELECT COUNT(*), COUNT(DISTINCT country) FROM {n['rows']}",
                answer_kind="row", fields=("n_rows", "n_countries"),
            ),
            StageSpec(
                name=n["growth"], thread=tid, note=f"GDP per capita growth {y0}->{y1} per country",
                sql=f"CREATE OR REPLACE TABLE {n['growth']} AS\nSELECT country,\n"
                f"  100 * (MAX(CASE WHEN year = {y1} THEN gdpPercap END) / "
                f"MAX(CASE WHEN year = {y0} THEN gdpPercap END) - 1) AS growth_pct\n"
                f"FROM {n['rows']}\nGROUP BY country",
                question=f"For each {continent} country kept for {y0} and {y1}, compute the growth of GDP per capita from {y0} to "
                f"{y1} in percent. Report `n_countries`, `median_growth_pct` and `max_growth_pct` (percent, "
                "rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('MEDIAN(growth_pct)')}, {rounded('MAX(growth_pct)')} "
                f"FROM {n['growth']}",
                answer_kind="row", fields=("n_countries", "median_growth_pct", "max_growth_pct"),
            ),
            StageSpec(
                name=n["fast"], thread=tid, note=f"fast growers (>= {t}%)",
                sql=f"CREATE OR REPLACE TABLE {n['fast']} AS\nSELECT * FROM {n['growth']}\n"
                f"WHERE growth_pct >= {t}",
                question=f"Call a {continent} country a fast grower when its GDP-per-capita growth from {y0} to {y1} is "
                f"at least {t}%. Report "
                "`n_fast` (count) and `mean_growth_pct` (their mean growth in percent, rounded to 2 "
                "decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(growth_pct)')} FROM {n['fast']}",
                answer_kind="row", fields=("n_fast", "mean_growth_pct"),
            ),
            StageSpec(
                name=n["top"], thread=tid, note="top-3 fast growers",
                sql=f"CREATE OR REPLACE TABLE {n['top']} AS\nSELECT country, growth_pct FROM {n['fast']}\n"
                "ORDER BY growth_pct DESC, country\nLIMIT 3",
                question=f"List the (at most) three fastest-growing {continent} countries ({y0} to {y1}). Report `top_growers`: country -> "
                "growth in percent, rounded to 2 decimal places.",
                answer_sql=f"SELECT country, {rounded('growth_pct')} FROM {n['top']} ORDER BY growth_pct DESC, country",
                answer_kind="map", fields=("top_growers",),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="gap_growth", family="gap_growth", params={"threshold": low}, keys=list(names), render=render,
        default_names=names, tunable="fast", tunable_param="threshold", alternative=alt,
        describe_change=lambda v: f"a fast grower is a country whose GDP per capita grew by at least "
        f"{_num(float(v))}%",  # type: ignore[arg-type]
        base_tables=("gapminder",),
    )  # fmt: skip


def _gap_lifeexp(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    years = [r[0] for r in con.execute("SELECT DISTINCT year FROM gapminder.gapminder ORDER BY 1").fetchall()]
    year = rng.choice(years)
    q_sql = f"SELECT quantile_cont(pop, {{q}}) FROM gapminder.gapminder WHERE year = {year}"
    low = _quantile(con, q_sql, rng.choice([0.1, 0.2]), 100_000)
    alt = _quantile(con, q_sql, 0.35, 100_000)
    if alt == low:
        alt = low + 500_000
    names = {
        "rows": f"lifeexp_{year}",
        "by_cont": f"lifeexp_{year}_by_continent",
        "gap": f"lifeexp_{year}_gap",
    }

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = int(float(p["min_pop"]))  # type: ignore[arg-type]
        tid = "gap_lifeexp"
        return [
            StageSpec(
                name=n["rows"], thread=tid, note=f"countries in {year} with population >= {t}",
                sql=f"CREATE OR REPLACE TABLE {n['rows']} AS\nSELECT * FROM gapminder\n"
                f"WHERE year = {year} AND pop >= {t}",
                question=f"Keep the countries in {year} with a population of at least {t:,} people. Report "
                "`n_countries` and `mean_lifeexp` (years, rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(lifeExp)')} FROM {n['rows']}",
                answer_kind="row", fields=("n_countries", "mean_lifeexp"),
            ),
            StageSpec(
                name=n["by_cont"], thread=tid, note=f"mean life expectancy per continent in {year}",
                sql=f"CREATE OR REPLACE TABLE {n['by_cont']} AS\nSELECT continent, COUNT(*) AS n_countries, "
                f"AVG(lifeExp) AS mean_lifeexp\nFROM {n['rows']}\nGROUP BY continent",
                question=f"Compute the mean life expectancy per continent over the countries kept for {year}. Report "
                "`lifeexp_by_continent`: continent -> years, rounded to 2 decimal places.",
                answer_sql=f"SELECT continent, {rounded('mean_lifeexp')} FROM {n['by_cont']} ORDER BY continent",
                answer_kind="map", fields=("lifeexp_by_continent",), join_key="continent",
                join_value="mean_lifeexp",
            ),
            StageSpec(
                name=n["gap"], thread=tid, note="gap between the best and worst continent",
                sql=f"CREATE OR REPLACE TABLE {n['gap']} AS\nSELECT arg_max(continent, mean_lifeexp) AS best, "
                "arg_min(continent, mean_lifeexp) AS worst,\n  MAX(mean_lifeexp) - MIN(mean_lifeexp) AS gap_years\n"
                f"FROM {n['by_cont']}",
                question=f"Which continents have the highest and lowest mean life expectancy in {year}, and how large is the gap? "
                "Report `best`, `worst` and `gap_years` (rounded to 2 decimal places).",
                answer_sql=f"SELECT best, worst, {rounded('gap_years')} FROM {n['gap']}",
                answer_kind="row", fields=("best", "worst", "gap_years"),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="gap_lifeexp", family="gap_lifeexp", params={"min_pop": low}, keys=list(names), render=render,
        default_names=names, tunable="rows", tunable_param="min_pop", alternative=alt,
        describe_change=lambda v: f"only countries with a population of at least {int(float(v)):,} count",  # type: ignore[arg-type]
        base_tables=("gapminder",),
    )  # fmt: skip


def _gap_popshare(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    years = [r[0] for r in con.execute("SELECT DISTINCT year FROM gapminder.gapminder ORDER BY 1").fetchall()]
    year = rng.choice(years)
    q_sql = f"SELECT quantile_cont(lifeExp, {{q}}) FROM gapminder.gapminder WHERE year = {year}"
    low, alt = _quantile(con, q_sql, rng.choice([0.25, 0.4]), 1), _quantile(con, q_sql, 0.6, 1)
    if alt == low:
        alt = low + 5
    names = {"pop": f"pop_{year}_by_continent", "share": f"pop_share_{year}", "top": f"pop_share_{year}_top"}

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["min_lifeexp"]))  # type: ignore[arg-type]
        tid = "gap_popshare"
        return [
            StageSpec(
                name=n["pop"], thread=tid, note=f"population in {year} per continent (lifeExp >= {t})",
                sql=f"CREATE OR REPLACE TABLE {n['pop']} AS\nSELECT continent, SUM(pop) AS total_pop, "
                f"COUNT(*) AS n_countries\nFROM gapminder\nWHERE year = {year} AND lifeExp >= {t}\n"
                "GROUP BY continent",
                question=f"In {year}, over countries with a life expectancy of at least {t} years, total the "
                "population per continent. Report `total_pop`: continent -> people (integer).",
                answer_sql=f"SELECT continent, CAST(total_pop AS BIGINT) FROM {n['pop']} ORDER BY continent",
                answer_kind="map", fields=("total_pop",),
            ),
            StageSpec(
                name=n["share"], thread=tid, note=f"population share per continent in {year}",
                sql=f"CREATE OR REPLACE TABLE {n['share']} AS\nSELECT continent, "
                f"100 * total_pop / SUM(total_pop) OVER () AS share_pct\nFROM {n['pop']}",
                question=f"What share of that {year} population (countries with a life expectancy of at least {t} years) "
                "lives on each continent? Report `share_pct`: "
                "continent -> percent, rounded to 2 decimal places.",
                answer_sql=f"SELECT continent, {rounded('share_pct')} FROM {n['share']} ORDER BY continent",
                answer_kind="map", fields=("share_pct",), join_key="continent", join_value="share_pct",
            ),
            StageSpec(
                name=n["top"], thread=tid, note="continent with the largest share",
                sql=f"CREATE OR REPLACE TABLE {n['top']} AS\nSELECT continent, share_pct FROM {n['share']}\n"
                "ORDER BY share_pct DESC, continent\nLIMIT 1",
                question=f"Which continent holds the largest share of that {year} population? Report `continent` and `share_pct` "
                "(rounded to 2 decimal places).",
                answer_sql=f"SELECT continent, {rounded('share_pct')} FROM {n['top']}",
                answer_kind="row", fields=("continent", "share_pct"),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="gap_popshare", family="gap_popshare", params={"min_lifeexp": low}, keys=list(names),
        render=render, default_names=names, tunable="pop", tunable_param="min_lifeexp", alternative=alt,
        describe_change=lambda v: f"only countries with a life expectancy of at least {_num(float(str(v)))} years "
        "count",
        base_tables=("gapminder",),
    )  # fmt: skip


# --- nyc flights -----------------------------------------------------------------------------


def _nyc_delays(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    q_sql = "SELECT quantile_cont(dep_delay, {q}) FROM nyc.flights WHERE dep_delay > 0"
    low, alt = _quantile(con, q_sql, rng.choice([0.5, 0.6]), 5), _quantile(con, q_sql, 0.8, 5)
    if alt == low:
        alt = low + 30
    k = rng.choice([3, 5])
    names = {"delayed": "delayed_flights", "by_cm": "delayed_by_carrier_month", "share": "carrier_delay_share",
             "top": "top_delay_carriers"}  # fmt: skip

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["threshold"]))  # type: ignore[arg-type]
        tid = "nyc_delays"
        return [
            StageSpec(
                name=n["delayed"], thread=tid, note=f"flights delayed >= {t} min",
                sql=f"CREATE OR REPLACE TABLE {n['delayed']} AS\nSELECT * FROM flights\nWHERE dep_delay >= {t}",
                question=f"A flight is delayed when its departure delay is at least {t} minutes. Report "
                "`n_delayed` and `mean_delay_min` (minutes, rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(dep_delay)')} FROM {n['delayed']}",
                answer_kind="row", fields=("n_delayed", "mean_delay_min"),
            ),
            StageSpec(
                name=n["by_cm"], thread=tid, note="delayed flights per carrier and month",
                sql=f"CREATE OR REPLACE TABLE {n['by_cm']} AS\nSELECT carrier, month, COUNT(*) AS n_delayed\n"
                f"FROM {n['delayed']}\nGROUP BY carrier, month",
                question=f"Count the flights delayed by at least {t} minutes per carrier and month. Report `n_cells` (carrier-month "
                "pairs) and `max_cell` (the largest count).",
                answer_sql=f"SELECT COUNT(*), MAX(n_delayed) FROM {n['by_cm']}",
                answer_kind="row", fields=("n_cells", "max_cell"),
            ),
            StageSpec(
                name=n["share"], thread=tid, note="share of delayed flights per carrier",
                sql=f"CREATE OR REPLACE TABLE {n['share']} AS\nSELECT carrier, SUM(n_delayed) AS n_delayed, "
                f"100 * SUM(n_delayed) / SUM(SUM(n_delayed)) OVER () AS share_pct\nFROM {n['by_cm']}\n"
                "GROUP BY carrier",
                question=f"What share of all flights delayed by at least {t} minutes does each carrier have? Report `share_pct`: "
                "carrier -> percent, rounded to 2 decimal places.",
                answer_sql=f"SELECT carrier, {rounded('share_pct')} FROM {n['share']} ORDER BY carrier",
                answer_kind="map", fields=("share_pct",), join_key="carrier", join_value="share_pct",
            ),
            StageSpec(
                name=n["top"], thread=tid, note=f"top-{k} carriers by delay share",
                sql=f"CREATE OR REPLACE TABLE {n['top']} AS\nSELECT carrier, share_pct FROM {n['share']}\n"
                f"ORDER BY share_pct DESC, carrier\nLIMIT {k}",
                question=f"Which {k} carriers have the largest shares of those delays (at least {t} minutes)? Report `top_carriers`: carrier -> "
                "percent, rounded to 2 decimal places.",
                answer_sql=f"SELECT carrier, {rounded('share_pct')} FROM {n['top']} ORDER BY share_pct DESC, carrier",
                answer_kind="map", fields=("top_carriers",),
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="nyc_delays", family="nyc_delays", params={"threshold": low}, keys=list(names), render=render,
        default_names=names, tunable="delayed", tunable_param="threshold", alternative=alt,
        describe_change=lambda v: f"a flight counts as delayed when its departure delay is at least "
        f"{_num(float(v))} minutes",  # type: ignore[arg-type]
        base_tables=("flights",),
    )  # fmt: skip


def _nyc_weather(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    origin = rng.choice(describe(con, "nyc").table("weather").column("origin").top_values)
    q_sql = f"SELECT quantile_cont(wind_speed, {{q}}) FROM nyc.weather WHERE origin = {_sql_text(origin)}"
    low, alt = _quantile(con, q_sql, rng.choice([0.75, 0.8]), 1), _quantile(con, q_sql, 0.9, 1)
    if alt == low:
        alt = low + 3
    s = _slug(origin)
    names = {
        "windy": f"{s}_windy_hours",
        "flights": f"{s}_windy_flights",
        "by_carrier": f"{s}_windy_delay_by_carrier",
    }

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["wind"]))  # type: ignore[arg-type]
        tid = "nyc_weather"
        return [
            StageSpec(
                name=n["windy"], thread=tid, note=f"windy hours at {origin} (>= {t} mph)",
                sql=f"CREATE OR REPLACE TABLE {n['windy']} AS\nSELECT origin, year, month, day, hour, wind_speed\n"
                f"FROM weather\nWHERE origin = {_sql_text(origin)} AND wind_speed >= {t}",
                question=f"An hour at {origin} is windy when the wind speed is at least {t} mph. Report "
                "`n_hours` and `mean_wind_mph` (rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(wind_speed)')} FROM {n['windy']}",
                answer_kind="row", fields=("n_hours", "mean_wind_mph"),
            ),
            StageSpec(
                name=n["flights"], thread=tid, note="flights scheduled in windy hours",
                sql=f"CREATE OR REPLACE TABLE {n['flights']} AS\nSELECT f.*\nFROM flights AS f\n"
                f"JOIN {n['windy']} AS w USING (origin, year, month, day, hour)\nWHERE f.dep_delay IS NOT NULL",
                question=f"Match the flights scheduled to depart from {origin} in those windy hours. Report `n_flights` and "
                "`mean_dep_delay_min` (rounded to 2 decimal places).",
                answer_sql=f"SELECT COUNT(*), {rounded('AVG(dep_delay)')} FROM {n['flights']}",
                answer_kind="row", fields=("n_flights", "mean_dep_delay_min"),
            ),
            StageSpec(
                name=n["by_carrier"], thread=tid, note="mean windy-hour delay per carrier",
                sql=f"CREATE OR REPLACE TABLE {n['by_carrier']} AS\nSELECT carrier, COUNT(*) AS n_flights, "
                f"AVG(dep_delay) AS mean_delay_min\nFROM {n['flights']}\nGROUP BY carrier\nHAVING COUNT(*) >= 20",
                question="Per carrier with at least 20 such flights, what is the mean departure delay? Report "
                "`delay_by_carrier`: carrier -> minutes, rounded to 2 decimal places.",
                answer_sql=f"SELECT carrier, {rounded('mean_delay_min')} FROM {n['by_carrier']} ORDER BY carrier",
                answer_kind="map", fields=("delay_by_carrier",), join_key="carrier", join_value="mean_delay_min",
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="nyc_weather", family="nyc_weather", params={"wind": low}, keys=list(names), render=render,
        default_names=names, tunable="windy", tunable_param="wind", alternative=alt,
        describe_change=lambda v: f"an hour at {origin} is windy when the wind speed is at least "
        f"{_num(float(v))} mph",  # type: ignore[arg-type]
        base_tables=("weather", "flights"),
    )  # fmt: skip


def _nyc_routes(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    q_sql = "SELECT quantile_cont(distance, {q}) FROM nyc.flights"
    low, alt = _quantile(con, q_sql, rng.choice([0.7, 0.8]), 100), _quantile(con, q_sql, 0.9, 100)
    if alt == low:
        alt = low + 300
    names = {"long": "long_flights", "by_dest": "long_by_dest", "by_carrier": "long_by_carrier"}

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        t = _num(float(p["distance"]))  # type: ignore[arg-type]
        tid = "nyc_routes"
        return [
            StageSpec(
                name=n["long"], thread=tid, note=f"flights of at least {t} miles",
                sql=f"CREATE OR REPLACE TABLE {n['long']} AS\nSELECT * FROM flights\n"
                f"WHERE distance >= {t} AND arr_delay IS NOT NULL",
                question=f"Keep flights of at least {t} miles with a recorded arrival delay. Report "
                "`n_flights` and `n_destinations`.",
                answer_sql=f"SELECT COUNT(*), COUNT(DISTINCT dest) FROM {n['long']}",
                answer_kind="row", fields=("n_flights", "n_destinations"),
            ),
            StageSpec(
                name=n["by_dest"], thread=tid, note="mean arrival delay per destination",
                sql=f"CREATE OR REPLACE TABLE {n['by_dest']} AS\nSELECT dest, COUNT(*) AS n_flights, "
                f"AVG(arr_delay) AS mean_arr_delay\nFROM {n['long']}\nGROUP BY dest",
                question=f"Among flights of at least {t} miles, which destination has the largest mean arrival delay? Report `dest` and "
                "`mean_arr_delay_min` (rounded to 2 decimal places).",
                answer_sql=f"SELECT dest, {rounded('mean_arr_delay')} FROM {n['by_dest']} "
                "ORDER BY mean_arr_delay DESC, dest LIMIT 1",
                answer_kind="row", fields=("dest", "mean_arr_delay_min"),
            ),
            StageSpec(
                name=n["by_carrier"], thread=tid, note="long-flight counts per carrier",
                sql=f"CREATE OR REPLACE TABLE {n['by_carrier']} AS\nSELECT carrier, COUNT(*) AS n_long, "
                f"AVG(arr_delay) AS mean_arr_delay\nFROM {n['long']}\nGROUP BY carrier",
                question=f"How many flights of at least {t} miles (with an arrival delay) does each carrier operate? Report `n_long`: "
                "carrier -> count.",
                answer_sql=f"SELECT carrier, n_long FROM {n['by_carrier']} ORDER BY carrier",
                answer_kind="map", fields=("n_long",), join_key="carrier", join_value="n_long",
            ),
        ]  # fmt: skip

    return Thread(
        thread_id="nyc_routes", family="nyc_routes", params={"distance": low}, keys=list(names), render=render,
        default_names=names, tunable="long", tunable_param="distance", alternative=alt,
        describe_change=lambda v: f"a long flight covers at least {_num(float(v))} miles",  # type: ignore[arg-type]
        base_tables=("flights",),
    )  # fmt: skip


FAMILIES: dict[str, list[Callable[[duckdb.DuckDBPyConnection, random.Random], Thread]]] = {
    "penguins": [_penguin_mass, _penguin_bills, _penguin_flippers],
    "gapminder": [_gap_growth, _gap_lifeexp, _gap_popshare],
    "nyc": [_nyc_delays, _nyc_weather, _nyc_routes],
}


def generate_threads(
    con: duckdb.DuckDBPyConnection, dataset: str, rng: random.Random, *, copies: int = 1
) -> list[Thread]:
    """Threads of `dataset` (loaded in `con` with `load_into_duckdb`): `copies` rounds over its families.

    Round 1 is one thread per family, in family order. Later rounds (for long tasks) draw fresh
    instances of each family (another species, continent, airport, ...) whose table names differ
    from every earlier thread's. A family whose tables do not depend on a categorical draw gets an
    instance with other parameters (thresholds) and names suffixed `_<round>`; a family that
    yields neither in six draws sits that round out. Copies get the thread id `<family>_<round>`.
    """
    if dataset not in FAMILIES:
        raise ValueError(f"no thread families for dataset {dataset!r}; known: {sorted(FAMILIES)}")
    if copies < 1:
        raise ValueError(f"copies must be >= 1, got {copies}")
    threads = [family(con, rng) for family in FAMILIES[dataset]]
    used = {name for t in threads for name in t.default_names.values()}
    for round_ in range(2, copies + 1):
        for family in FAMILIES[dataset]:
            draws = [family(con, rng) for _draw in range(6)]
            fresh = [t for t in draws if not used & set(t.default_names.values())]
            if fresh:
                t = fresh[0]
            else:  # same tables (a family without a categorical draw): other parameters, suffixed names
                seen = [x.params for x in threads if x.family == draws[0].family]
                other = [t for t in draws if t.params not in seen]
                if not other:
                    continue
                t = replace(other[0], default_names={k: f"{v}_{round_}" for k, v in other[0].default_names.items()})
            threads.append(_renamed(t, f"{t.family}_{round_}"))
            used |= set(t.default_names.values())
    return threads


def _renamed(thread: Thread, thread_id: str) -> Thread:
    """The same thread under another id (its stages carry the new id too)."""
    inner = thread.render

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        return [replace(spec, thread=thread_id) for spec in inner(p, n)]

    return replace(thread, thread_id=thread_id, render=render)
