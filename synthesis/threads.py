"""Executable analysis threads over a DuckDB dataset (first step of paper Eq. 21).

A thread is a chain of SQL stages, each `CREATE OR REPLACE TABLE <stage> AS SELECT ...`, plus a
natural-language question and an answer query over the stage's own table. Threads come from
parameterized families; a seeded RNG picks the categories, years and thresholds, and the
values are read from the data (`describe()` and quantiles), so intermediate results are
specific to the dataset.

    con = duckdb.connect(); load_into_duckdb(con, "penguins")
    threads = generate_threads(con, "penguins", random.Random(0))
    threads[0].stages()                      # list[StageSpec] with the default table names

The stage texts (SQL, questions, answer queries) are data, in `synthesis/thread_families.yaml`;
each family here draws its parameters from the data and names its tables, and `family_renderer`
fills the family's templates with them. The generic families over B.1 source tables
(`synthesis.source_threads`) keep their texts in the same file.

Stage SQL reads base tables unqualified (`penguins`, `flights`); a task loads them into the
`main` schema of its own connection. Each family also names one *tunable* stage (a numeric
definition such as a threshold) and offers an alternative value, so a task can re-create that
stage under a changed definition (`Thread.stages(params=..., names=...)`).
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

import duckdb
import yaml

from synthesis.sources.spelling import slug, sql_text
from synthesis.sources.tabular import DatasetProfile, describe

__all__ = [
    "FAMILIES",
    "FAMILY_FILE",
    "StageSpec",
    "Thread",
    "family_renderer",
    "family_thread",
    "fill_quantile",
    "generate_threads",
    "num",
    "quantile",
    "rounded",
]

AnswerKind = Literal["row", "map"]


# The profile of each connection's base tables, made once per (connection, dataset): a family draws
# several instances per task and each asked for it (eight full profiles of nyc per task). The
# families only read the base tables, so the profile cannot change while the connection lives; a
# weak key lets a finished task's connection (and its copy of the data) go.
_PROFILES: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, DatasetProfile]] = (
    weakref.WeakKeyDictionary()
)


def _profile(con: duckdb.DuckDBPyConnection, dataset: str) -> DatasetProfile:
    per_con = _PROFILES.setdefault(con, {})
    if dataset not in per_con:
        per_con[dataset] = describe(con, dataset)
    return per_con[dataset]


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


def fill_quantile(sql: str, q: float) -> str:
    """`sql` with its `{q}` placeholder set to `q` (not str.format: a data value may hold braces)."""
    return sql.replace("{q}", str(q))


def quantile(con: duckdb.DuckDBPyConnection, sql: str, q: float, step: float | None = None) -> float:
    """The value of `sql` (one row, one column, a `{q}` placeholder) at `q`, rounded to a multiple of
    `step` when given."""
    row = con.execute(fill_quantile(sql, q)).fetchone()
    if row is None or row[0] is None:
        raise ValueError(f"quantile query returned no value: {sql}")
    return float(row[0]) if step is None else round(float(row[0]) / step) * step


def num(value: float, places: int | None = None) -> str:
    """A number as the SQL and the texts write it: `40`, not `40.0`; `places` rounds it first."""
    if places is not None:
        value = round(float(value), places)
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


FAMILY_FILE = Path(__file__).with_name("thread_families.yaml")
Renderer = Callable[[Mapping[str, object], Mapping[str, str]], list[StageSpec]]


class _Rounded:
    """`{r[expr]}` in a template: `rounded(expr)`; `expr` may name draws itself, as in `{r[AVG({m1})]}`."""

    def __init__(self, fill: Mapping[str, object]) -> None:
        self.fill = fill

    def __getitem__(self, expr: str) -> str:
        return rounded(expr.format_map(self.fill))


@cache
def _families() -> dict[str, Any]:
    return dict(yaml.safe_load(FAMILY_FILE.read_text(encoding="utf-8")))


def _fill(template: str | None, fill: Mapping[str, object]) -> str | None:
    return None if template is None else template.format_map(fill)


def family_renderer(
    family: str, draws: Mapping[str, object], values: Callable[[Mapping[str, object]], Mapping[str, object]]
) -> Renderer:
    """The `Thread.render` of `family`: its stage templates (FAMILY_FILE) filled with the family's
    draws, the values of its parameters (`values(params)`) and the stage names."""
    stages = _families()[family]["stages"]

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        fill: dict[str, object] = {**draws, **values(p), "n": n}
        fill["r"] = _Rounded(fill)
        return [
            StageSpec(
                name=n[st["key"]],
                thread=family,
                note=st["note"].format_map(fill),
                sql=st["sql"].format_map(fill),
                question=st["question"].format_map(fill),
                answer_sql=st["answer_sql"].format_map(fill),
                answer_kind=st["answer_kind"],
                fields=tuple(f.format_map(fill) for f in st["fields"]),
                join_key=_fill(st.get("join_key"), fill),
                join_value=_fill(st.get("join_value"), fill),
            )
            for st in stages
        ]

    return render


def family_thread(
    family: str,
    draws: Mapping[str, object],
    values: Callable[[Mapping[str, object]], Mapping[str, object]],
    names: dict[str, str],
    *,
    value: object,
    tunable: str,
    param: str,
    alternative: object,
    describe_change: Callable[[object], str],
    base_tables: tuple[str, ...],
) -> Thread:
    """An instance of `family` with one tunable parameter `param` (= `value`; the counterfactual
    moves it to `alternative` in stage `tunable`): its stages are the family's templates
    (`family_renderer(family, draws, values)`) under the stage `names`."""
    return Thread(
        thread_id=family,
        family=family,
        params={param: value},
        keys=list(names),
        render=family_renderer(family, draws, values),
        default_names=names,
        tunable=tunable,
        tunable_param=param,
        alternative=alternative,
        describe_change=describe_change,
        base_tables=base_tables,
    )


# --- penguins --------------------------------------------------------------------------------


def _penguin_mass(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    species = rng.choice(_profile(con, "penguins").table("penguins").column("species").top_values)
    where = f"species = {sql_text(species)} AND body_mass_g IS NOT NULL"
    q_sql = f"SELECT quantile_cont(body_mass_g, {{q}}) FROM penguins.penguins WHERE {where}"
    qs = rng.sample([0.4, 0.5, 0.6, 0.7], 2)
    low, alt = quantile(con, q_sql, qs[0], 50), quantile(con, q_sql, qs[1], 50)
    if alt == low:
        alt = low + 150
    s = slug(species)
    names = {
        "birds": f"{s}_birds",
        "heavy": f"{s}_heavy",
        "by_island": f"{s}_heavy_by_island",
        "top": f"{s}_heavy_top_island",
    }

    return family_thread(
        "penguin_mass",
        {"species": species, "where": where},
        lambda p: {"t": num(float(p["threshold"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="heavy",
        param="threshold",
        alternative=alt,
        describe_change=lambda v: (
            f"a {species} penguin counts as heavy when its body mass is at least {num(float(v))} g"  # type: ignore[arg-type]
        ),
        base_tables=("penguins",),
    )


def _penguin_bills(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    island = rng.choice(_profile(con, "penguins").table("penguins").column("island").top_values)
    where = f"island = {sql_text(island)} AND bill_length_mm IS NOT NULL AND bill_depth_mm IS NOT NULL"
    q_sql = f"SELECT quantile_cont(bill_length_mm, {{q}}) FROM penguins.penguins WHERE {where}"
    qs = rng.sample([0.1, 0.2, 0.3], 2)
    low, alt = quantile(con, q_sql, qs[0], 0.5), quantile(con, q_sql, qs[1], 0.5)
    if alt == low:
        alt = low + 1.0
    s = slug(island)
    names = {"birds": f"{s}_measured", "ratio": f"{s}_bill_ratio", "rank": f"{s}_bill_ratio_rank"}

    return family_thread(
        "penguin_bills",
        {"island": island, "where": where},
        lambda p: {"t": num(float(p["min_bill"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="birds",
        param="min_bill",
        alternative=alt,
        describe_change=lambda v: (
            f"only penguins on {island} with a bill length of at least {num(float(v))} mm are kept"  # type: ignore[arg-type]
        ),
        base_tables=("penguins",),
    )


def _penguin_flippers(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    prof = _profile(con, "penguins").table("penguins")
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
    names = {
        "by_year": f"{sex}_flipper_by_year",
        "growth": f"{sex}_flipper_change",
        "leader": f"{sex}_flipper_leader",
    }

    return family_thread(
        "penguin_flippers",
        {"sex": sex, "sex_sql": sql_text(sex), "y0": y0, "y1": y1},
        lambda p: {"k": int(str(p["min_n"]))},
        names,
        value=min_n,
        tunable="by_year",
        param="min_n",
        alternative=alt_n,
        describe_change=lambda v: f"a species-year group needs at least {v} {sex} birds to be kept",
        base_tables=("penguins",),
    )


# --- gapminder -------------------------------------------------------------------------------


def _gap_growth(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    prof = _profile(con, "gapminder").table("gapminder")
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
        + sql_text(continent)
        + " GROUP BY country)"
    )
    qs = rng.sample([0.5, 0.6, 0.75], 2)
    low, alt = quantile(con, growth_sql, qs[0], 10), quantile(con, growth_sql, qs[1], 10)
    if alt == low:
        alt = low + 20
    s = slug(continent)
    names = {
        "rows": f"{s}_{y0}_{y1}",
        "growth": f"{s}_gdp_growth",
        "fast": f"{s}_fast_growers",
        "top": f"{s}_top_growers",
    }

    return family_thread(
        "gap_growth",
        {"continent": continent, "continent_sql": sql_text(continent), "y0": y0, "y1": y1},
        lambda p: {"t": num(float(p["threshold"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="fast",
        param="threshold",
        alternative=alt,
        describe_change=lambda v: (
            f"a fast grower is a country whose GDP per capita grew by at least {num(float(v))}%"  # type: ignore[arg-type]
        ),
        base_tables=("gapminder",),
    )


def _gap_lifeexp(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    years = [r[0] for r in con.execute("SELECT DISTINCT year FROM gapminder.gapminder ORDER BY 1").fetchall()]
    year = rng.choice(years)
    q_sql = f"SELECT quantile_cont(pop, {{q}}) FROM gapminder.gapminder WHERE year = {year}"
    low = quantile(con, q_sql, rng.choice([0.1, 0.2]), 100_000)
    alt = quantile(con, q_sql, 0.35, 100_000)
    if alt == low:
        alt = low + 500_000
    names = {
        "rows": f"lifeexp_{year}",
        "by_cont": f"lifeexp_{year}_by_continent",
        "gap": f"lifeexp_{year}_gap",
    }

    return family_thread(
        "gap_lifeexp",
        {"year": year},
        lambda p: {"t": int(float(p["min_pop"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="rows",
        param="min_pop",
        alternative=alt,
        describe_change=lambda v: f"only countries with a population of at least {int(float(v)):,} count",  # type: ignore[arg-type]
        base_tables=("gapminder",),
    )


def _gap_popshare(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    years = [r[0] for r in con.execute("SELECT DISTINCT year FROM gapminder.gapminder ORDER BY 1").fetchall()]
    year = rng.choice(years)
    q_sql = f"SELECT quantile_cont(lifeExp, {{q}}) FROM gapminder.gapminder WHERE year = {year}"
    low, alt = quantile(con, q_sql, rng.choice([0.25, 0.4]), 1), quantile(con, q_sql, 0.6, 1)
    if alt == low:
        alt = low + 5
    names = {"pop": f"pop_{year}_by_continent", "share": f"pop_share_{year}", "top": f"pop_share_{year}_top"}

    return family_thread(
        "gap_popshare",
        {"year": year},
        lambda p: {"t": num(float(p["min_lifeexp"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="pop",
        param="min_lifeexp",
        alternative=alt,
        describe_change=lambda v: (
            f"only countries with a life expectancy of at least {num(float(str(v)))} years count"
        ),
        base_tables=("gapminder",),
    )


# --- nyc flights -----------------------------------------------------------------------------


def _nyc_delays(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    q_sql = "SELECT quantile_cont(dep_delay, {q}) FROM nyc.flights WHERE dep_delay > 0"
    low, alt = quantile(con, q_sql, rng.choice([0.5, 0.6]), 5), quantile(con, q_sql, 0.8, 5)
    if alt == low:
        alt = low + 30
    k = rng.choice([3, 5])
    names = {
        "delayed": "delayed_flights",
        "by_cm": "delayed_by_carrier_month",
        "share": "carrier_delay_share",
        "top": "top_delay_carriers",
    }

    return family_thread(
        "nyc_delays",
        {"k": k},
        lambda p: {"t": num(float(p["threshold"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="delayed",
        param="threshold",
        alternative=alt,
        describe_change=lambda v: (
            f"a flight counts as delayed when its departure delay is at least {num(float(v))} minutes"  # type: ignore[arg-type]
        ),
        base_tables=("flights",),
    )


def _nyc_weather(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    origin = rng.choice(_profile(con, "nyc").table("weather").column("origin").top_values)
    q_sql = f"SELECT quantile_cont(wind_speed, {{q}}) FROM nyc.weather WHERE origin = {sql_text(origin)}"
    low, alt = quantile(con, q_sql, rng.choice([0.75, 0.8]), 1), quantile(con, q_sql, 0.9, 1)
    if alt == low:
        alt = low + 3
    s = slug(origin)
    names = {
        "windy": f"{s}_windy_hours",
        "flights": f"{s}_windy_flights",
        "by_carrier": f"{s}_windy_delay_by_carrier",
    }

    return family_thread(
        "nyc_weather",
        {"origin": origin, "origin_sql": sql_text(origin)},
        lambda p: {"t": num(float(p["wind"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="windy",
        param="wind",
        alternative=alt,
        describe_change=lambda v: (
            f"an hour at {origin} is windy when the wind speed is at least {num(float(v))} mph"  # type: ignore[arg-type]
        ),
        base_tables=("weather", "flights"),
    )


def _nyc_routes(con: duckdb.DuckDBPyConnection, rng: random.Random) -> Thread:
    q_sql = "SELECT quantile_cont(distance, {q}) FROM nyc.flights"
    low, alt = quantile(con, q_sql, rng.choice([0.7, 0.8]), 100), quantile(con, q_sql, 0.9, 100)
    if alt == low:
        alt = low + 300
    names = {"long": "long_flights", "by_dest": "long_by_dest", "by_carrier": "long_by_carrier"}

    return family_thread(
        "nyc_routes",
        {},
        lambda p: {"t": num(float(p["distance"]))},  # type: ignore[arg-type]
        names,
        value=low,
        tunable="long",
        param="distance",
        alternative=alt,
        describe_change=lambda v: f"a long flight covers at least {num(float(v))} miles",  # type: ignore[arg-type]
        base_tables=("flights",),
    )


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
                t = replace(
                    other[0], default_names={k: f"{v}_{round_}" for k, v in other[0].default_names.items()}
                )
            threads.append(_renamed(t, f"{t.family}_{round_}"))
            used |= set(t.default_names.values())
    return threads


def _renamed(thread: Thread, thread_id: str) -> Thread:
    """The same thread under another id (its stages carry the new id too)."""
    inner = thread.render

    def render(p: Mapping[str, object], n: Mapping[str, str]) -> list[StageSpec]:
        return [replace(spec, thread=thread_id) for spec in inner(p, n)]

    return replace(thread, thread_id=thread_id, render=render)
