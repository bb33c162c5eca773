"""Stage dependencies recovered from SQL text (paper B.2): parsing, scoping and stage order."""

from __future__ import annotations

import duckdb
import pytest
from pydantic import ValidationError

from synthesis.sql_deps import (
    SQLDependencyError,
    Stage,
    created_tables,
    downstream_of,
    referenced_tables,
    stage_dependencies,
)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # plain FROM / JOIN, comma joins, USING
        ("SELECT * FROM orders", {"orders"}),
        ("SELECT * FROM a JOIN b ON a.id = b.id LEFT JOIN c USING (id)", {"a", "b", "c"}),
        ("SELECT * FROM a, b WHERE a.id = b.id", {"a", "b"}),
        # aliases resolve to the table they name; an alias that looks like a table is not one
        ("SELECT o.x FROM orders AS o JOIN customers c ON o.cid = c.id", {"orders", "customers"}),
        ("SELECT s1.v FROM s2 AS s1", {"s2"}),
        ("SELECT x.v FROM (SELECT v FROM inner_t) AS x", {"inner_t"}),
        # nested subqueries at any depth
        ("SELECT * FROM a WHERE id IN (SELECT id FROM b WHERE EXISTS (SELECT 1 FROM c))", {"a", "b", "c"}),
        ("SELECT (SELECT MAX(v) FROM m) AS top, v FROM a", {"a", "m"}),
        ("SELECT * FROM (SELECT * FROM (SELECT * FROM deep) d1) d2", {"deep"}),
        # set operations
        ("SELECT v FROM a UNION SELECT v FROM b UNION ALL SELECT v FROM c", {"a", "b", "c"}),
        ("SELECT v FROM a INTERSECT SELECT v FROM b EXCEPT SELECT v FROM c", {"a", "b", "c"}),
        # comments never count
        ("SELECT * FROM real_t -- FROM fake\n", {"real_t"}),
        ("SELECT * /* JOIN fake */ FROM real_t", {"real_t"}),
        ("SELECT *\n-- FROM fake\nFROM real_t /* JOIN fake ON 1=1 */ WHERE v > 1", {"real_t"}),
        # case-insensitive, quoted or not
        ("SELECT * FROM Orders JOIN ORDERS_2 ON TRUE", {"orders", "orders_2"}),
        ('SELECT * FROM "Orders"', {"orders"}),
        # schema-qualified names keep their qualifier
        ("SELECT * FROM raw.orders JOIN clean.orders USING (id)", {"raw.orders", "clean.orders"}),
        ('SELECT * FROM "Raw"."Orders"', {"raw.orders"}),
        ("SELECT * FROM memory.main.t", {"memory.main.t"}),
        # table functions and file reads are not tables
        ("SELECT * FROM read_csv('x.csv'), range(3) r, a", {"a"}),
        ("SELECT * FROM UNNEST([1, 2]) u(x)", set()),
        # CREATE ... AS: the target is excluded
        ("CREATE TABLE s3 AS SELECT * FROM s1 JOIN s2 USING (id)", {"s1", "s2"}),
        ("CREATE OR REPLACE TABLE S3 (a INT) AS SELECT v FROM s1", {"s1"}),
        ("CREATE VIEW s3 AS SELECT * FROM s1", {"s1"}),
        # ... but a genuine read of the same name (the previous definition) is a read
        ("CREATE OR REPLACE TABLE t AS SELECT * FROM t WHERE v > 1", {"t"}),
    ],
)
def test_referenced_tables(sql: str, expected: set[str]) -> None:
    assert referenced_tables(sql) == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # CTE names are not tables
        ("WITH a AS (SELECT * FROM raw) SELECT * FROM a", {"raw"}),
        ("WITH a AS (SELECT * FROM raw), b AS (SELECT * FROM a) SELECT * FROM b JOIN a USING (v)", {"raw"}),
        ("WITH x AS (SELECT 1 AS v) SELECT * FROM x UNION ALL SELECT * FROM y", {"y"}),
        # a CTE is visible inside nested subqueries of its query
        ("WITH a AS (SELECT 5 AS v) SELECT * FROM t WHERE v IN (SELECT v FROM a)", {"t"}),
        ("WITH a AS (SELECT 5 AS v) SELECT * FROM (SELECT * FROM a) s", set()),
        # non-recursive CTE body does not see itself: `t` inside is the real table
        ("WITH t AS (SELECT v + 1 AS v FROM t) SELECT * FROM t", {"t"}),
        # ... nor CTEs defined after it
        ("WITH a AS (SELECT * FROM b), b AS (SELECT 1 AS v) SELECT * FROM a, b", {"b"}),
        # a recursive CTE does see itself
        (
            "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
            set(),
        ),
        # a CTE scoped to a subquery does not hide the same name outside it
        ("SELECT * FROM (WITH t AS (SELECT 7 AS v) SELECT * FROM t) x, t", {"t"}),
        # a qualified name never refers to a CTE
        ("WITH t AS (SELECT 1 AS v) SELECT * FROM main.t", {"main.t"}),
        # CTE names are case-insensitive too
        ("WITH Big AS (SELECT * FROM raw) SELECT * FROM BIG", {"raw"}),
    ],
)
def test_cte_scoping(sql: str, expected: set[str]) -> None:
    assert referenced_tables(sql) == expected


@pytest.mark.parametrize(
    "sql",
    [
        "WITH t AS (SELECT v + 1 AS v FROM t) SELECT * FROM t",
        "WITH a AS (SELECT * FROM b), b AS (SELECT 1 AS v) SELECT * FROM a",
        "SELECT * FROM (WITH t AS (SELECT 7 AS v) SELECT * FROM t) x, t",
        "WITH RECURSIVE r AS (SELECT 1 AS v UNION ALL SELECT v + 1 FROM r WHERE v < 3) SELECT * FROM r",
        "WITH a AS (SELECT 5 AS v) SELECT * FROM t WHERE v IN (SELECT v FROM a)",
        "SELECT s1.v FROM s2 AS s1 -- FROM fake\n /* JOIN fake */",
    ],
)
def test_reported_tables_are_exactly_what_duckdb_needs(sql: str) -> None:
    """Creating only the reported tables is enough for DuckDB to run the query, and each one
    is needed (dropping it breaks the query): the scoping rules match DuckDB's."""
    tables = referenced_tables(sql)
    con = duckdb.connect()
    for name in tables:
        con.execute(f"CREATE TABLE {name} AS SELECT 1 AS v")
    con.execute(sql).fetchall()
    for name in tables:
        con.execute(f"ALTER TABLE {name} RENAME TO moved_away")
        with pytest.raises((duckdb.CatalogException, duckdb.BinderException)):
            con.execute(sql).fetchall()
        con.execute(f"ALTER TABLE moved_away RENAME TO {name}")


def test_multi_statement_script() -> None:
    sql = """
        DROP TABLE IF EXISTS s3;
        CREATE TEMP TABLE scratch AS SELECT * FROM s1 WHERE v > 0;
        CREATE TABLE s3 AS SELECT * FROM scratch JOIN s2 USING (id);
    """
    assert referenced_tables(sql) == {"s1", "s2"}
    assert created_tables(sql) == ["scratch", "s3"]


def test_unparseable_sql_raises_clearly() -> None:
    with pytest.raises(SQLDependencyError, match="cannot parse SQL"):
        referenced_tables("SELECT FROM WHERE (((")
    with pytest.raises(SQLDependencyError, match="no statement"):
        referenced_tables("  ;  ")


# ------------------------------------------------------------------------------------------
# stages


def _thread() -> list[Stage]:
    return [
        Stage(name="s1", sql="CREATE TABLE s1 AS SELECT * FROM raw.people WHERE age > 30"),
        Stage(name="s2", kind="pandas", inputs=["S1"], code="s2 = s1.groupby('city').size()"),
        Stage(name="s3", sql="SELECT * FROM s1 JOIN main.s2 USING (city) -- JOIN s5"),
        Stage(name="s4", sql="WITH s5 AS (SELECT * FROM s1) SELECT * FROM s5, people"),
        Stage.from_sql("CREATE TABLE S5 AS SELECT * FROM s3 UNION ALL SELECT * FROM s3"),
        Stage(name="s6", kind="pandas", inputs=["s2", "s4", "people"]),
    ]


def test_stage_dependencies_interleaved_sql_and_pandas() -> None:
    deps = stage_dependencies(_thread())
    assert deps == {
        "s1": [],  # raw base tables are not stages
        "s2": ["s1"],  # explicit pandas inputs, normalized to lower case
        "s3": ["s1", "s2"],  # `main.s2` is the stage s2; the comment is ignored
        "s4": ["s1"],  # the CTE named like a later stage is not a reference to it
        "s5": ["s3"],  # UNION of the same stage counted once
        "s6": ["s2", "s4"],
    }


def test_stage_dependencies_are_in_stage_order() -> None:
    stages = [
        Stage(name="a", sql="SELECT 1 AS v"),
        Stage(name="b", sql="SELECT 2 AS v"),
        Stage(name="c", sql="SELECT * FROM b UNION ALL SELECT * FROM a"),
    ]
    assert stage_dependencies(stages)["c"] == ["a", "b"]


def test_reference_to_a_later_stage_is_an_error() -> None:
    stages = [
        Stage(name="s1", sql="SELECT * FROM raw"),
        Stage(name="s2", sql="SELECT * FROM s3"),
        Stage(name="s3", sql="SELECT * FROM s1"),
    ]
    with pytest.raises(SQLDependencyError, match=r"'s2' \(position 2\) reads 's3', which is defined later"):
        stage_dependencies(stages)


def test_pandas_reference_to_a_later_stage_is_an_error() -> None:
    stages = [
        Stage(name="s1", kind="pandas", inputs=["s2"]),
        Stage(name="s2", sql="SELECT 1 AS v"),
    ]
    with pytest.raises(SQLDependencyError, match="defined later"):
        stage_dependencies(stages)


def test_self_reference_is_an_error() -> None:
    stages = [Stage(name="t", sql="CREATE OR REPLACE TABLE t AS SELECT * FROM t")]
    with pytest.raises(SQLDependencyError, match="reads its own result table"):
        stage_dependencies(stages)


def test_unknown_table_with_known_base_tables() -> None:
    stages = [Stage(name="s1", sql="SELECT * FROM people"), Stage(name="s2", sql="SELECT * FROM s_1")]
    with pytest.raises(SQLDependencyError, match="'s_1', which is neither an earlier stage nor a known base"):
        stage_dependencies(stages, base_tables=["People"])
    assert stage_dependencies(stages) == {"s1": [], "s2": []}  # without the list: all raw
    ok = [Stage(name="s1", sql="SELECT * FROM main.people")]
    assert stage_dependencies(ok, base_tables=["people"]) == {"s1": []}


def test_duplicate_stage_names_are_an_error() -> None:
    stages = [Stage(name="s1", sql="SELECT 1 AS v"), Stage(name="S1", sql="SELECT 2 AS v")]
    with pytest.raises(SQLDependencyError, match="appears twice"):
        stage_dependencies(stages)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "s1"}, "needs `sql`"),
        ({"name": "s1", "sql": "SELECT 1", "inputs": ["raw"]}, "must not list `inputs`"),
        ({"name": "s1", "kind": "pandas"}, "explicit `inputs`"),
        ({"name": "s1", "kind": "pandas", "inputs": [], "sql": "SELECT 1"}, "must not carry `sql`"),
        ({"name": "s1", "sql": "CREATE TABLE s9 AS SELECT 1"}, "creates s9 but not 's1'"),
        ({"name": "  ", "sql": "SELECT 1"}, "blank"),
        ({"name": "s1", "sql": "SELECT FROM ((("}, "cannot parse"),
    ],
)
def test_stage_validation(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Stage.model_validate(fields)


def test_stage_from_sql_names_the_stage_after_its_target() -> None:
    assert Stage.from_sql("CREATE TABLE main.Result_1 AS SELECT 1 AS v").name == "result_1"
    with pytest.raises(SQLDependencyError, match="no CREATE"):
        Stage.from_sql("SELECT 1")


def test_downstream_of() -> None:
    deps = stage_dependencies(_thread())
    assert downstream_of("s1", deps) == ["s2", "s3", "s4", "s5", "s6"]
    assert downstream_of("s3", deps) == ["s5"]
    assert downstream_of("s6", deps) == []
