"""One spelling of values in SQL text and names, shared by the raw-data layer and the thread families."""

from __future__ import annotations

import duckdb
import pytest

from synthesis.sources.spelling import slug, sql_text
from synthesis.threads import family_thread, num, quantile


@pytest.mark.parametrize(
    ("value", "limit", "fallback", "expected"),
    [
        ("Gentoo penguin", None, None, "gentoo_penguin"),  # the hand-written families: no cut
        ("2019 sales", None, None, "2019_sales"),
        ("2019 sales", 12, "v", "v_2019_sales"),  # names drawn from raw data are identifiers
        ("Very Long Category Name Here", 12, "v", "very_long_ca"),
        ("a very_long_name", 7, "v", "a_very"),  # cut, then the trailing `_` stripped
        ("!!!", 40, "x", "x"),
    ],
)
def test_slug(value: str, limit: int | None, fallback: str | None, expected: str) -> None:
    assert slug(value, limit, fallback=fallback) == expected


def test_sql_text_and_num() -> None:
    assert sql_text("O'Hare") == "'O''Hare'"
    assert (num(40.0), num(2.5), num(1 / 3, 6), num(3.0000001, 6)) == ("40", "2.5", "0.333333", "3")


def test_quantile_rounds_to_its_step_only_when_given() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range::DOUBLE AS x FROM range(101)")
    sql = "SELECT quantile_cont(x, {q}) FROM t"
    assert quantile(con, sql, 0.37) == 37.0
    assert quantile(con, sql, 0.37, 10) == 40.0
    with pytest.raises(ValueError, match="no value"):
        quantile(con, "SELECT quantile_cont(x, {q}) FROM t WHERE x < 0", 0.5)


def test_family_thread_fills_the_thread_shape() -> None:
    thread = family_thread(
        "penguin_mass",
        {"species": "Adelie", "where": "TRUE"},
        lambda p: {"t": num(float(p["threshold"]))},  # type: ignore[arg-type]
        {"birds": "b", "heavy": "h", "by_island": "i", "top": "t"},
        value=3500.0,
        tunable="heavy",
        param="threshold",
        alternative=3700.0,
        describe_change=lambda v: f"at least {v}",
        base_tables=("penguins",),
    )
    assert (thread.thread_id, thread.family, thread.params, thread.tunable_param) == (
        "penguin_mass",
        "penguin_mass",
        {"threshold": 3500.0},
        "threshold",
    )
    assert thread.keys == ["birds", "heavy", "by_island", "top"]
    assert [s.name for s in thread.stages()] == ["b", "h", "i", "t"]
