"""DAComp-DE table dependencies from SQL (paper C.4): a table of cases, then build order."""

import pytest

from eval.benchmarks.dacomp_de.deps import DependencyCycleError, read_references, table_dependencies

OWN = {
    "staging": {"stg_a": "select * from raw.a", "stg_b": "select * from raw.b"},
    "intermediate": {"int_x": "select * from staging.stg_a"},
}


def _parents(layer: str, table: str, sql: str) -> list[str]:
    sources = {k: dict(v) for k, v in OWN.items()}
    sources.setdefault(layer, {})[table] = sql
    return table_dependencies(sources).parents[table]


@pytest.mark.parametrize(
    ("layer", "table", "sql", "parents"),
    [
        ("marts", "m", "select * from staging.stg_a join intermediate.int_x using (id)", ["int_x", "stg_a"]),
        ("marts", "m", "select * from raw.a", []),  # raw sources are not own tables
        ("marts", "m", "select * from stg_b", ["stg_b"]),  # bare name of an own table
        ("marts", "m", "select * from raw.stg_a", []),  # same name, other schema: not the own table
        ("marts", "m", "select * from STAGING.STG_A", ["stg_a"]),  # identifiers are case-insensitive
        # a CTE that shadows an own table's name is not a dependency
        ("marts", "m", "with stg_a as (select * from raw.a) select * from stg_a", []),
        # references inside CTE bodies, subqueries and set operations all count
        (
            "marts",
            "m",
            "with c as (select * from staging.stg_a) select * from c "
            "where id in (select id from staging.stg_b) union all select * from intermediate.int_x",
            ["int_x", "stg_a", "stg_b"],
        ),
        # comments never count
        (
            "marts",
            "m",
            "select * from staging.stg_a -- join staging.stg_b\n/* join intermediate.int_x */",
            ["stg_a"],
        ),
        (
            "marts",
            "m",
            "select * from marts.m union all select * from staging.stg_a",
            ["stg_a"],
        ),  # no self edge
        ("marts", "m2", "select * from mart.m1", ["m1"]),  # mart and marts are one layer
        ("marts", "m", "select * from read_csv('x.csv')", []),  # table functions are not tables
        ("marts", "m", "select * from staging.stg_a;\nselect * from staging.stg_b", ["stg_a", "stg_b"]),
    ],
)
def test_parents(layer: str, table: str, sql: str, parents: list[str]) -> None:
    if table == "m2":
        layer_sql = {**OWN, "marts": {"m1": "select 1", "m2": sql}}
        assert table_dependencies(layer_sql).parents["m2"] == parents
    else:
        assert _parents(layer, table, sql) == parents


def test_unparsable_sql_has_no_edges_and_is_listed() -> None:
    graph = table_dependencies({**OWN, "marts": {"m": "select from from staging.stg_a ((("}})
    assert graph.parents["m"] == []
    assert "m" in graph.unparsed and graph.unparsed["m"]


def test_read_references_keeps_schema() -> None:
    assert read_references("select * from raw.a join staging.b using (k) join c using (k)") == [
        ("raw", "a"),
        ("staging", "b"),
        (None, "c"),
    ]


def test_build_order_parents_first_then_layer_then_name() -> None:
    sources = {
        "marts": {"m_top": "select * from intermediate.int_late", "m_alpha": "select 1"},
        "intermediate": {
            "int_late": "select * from intermediate.int_early",
            "int_early": "select * from staging.s",
        },
        "staging": {"s": "select * from raw.s"},
    }
    graph = table_dependencies(sources)
    assert graph.build_order() == ["s", "int_early", "int_late", "m_alpha", "m_top"]
    assert graph.children("int_early") == ["int_late"]
    # a marts table that reads nothing still waits behind staging on ties only
    assert graph.build_order(["marts", "staging", "intermediate"])[0] == "m_alpha"


def test_cycle_and_duplicate_are_errors() -> None:
    cyclic = table_dependencies(
        {"intermediate": {"a": "select * from intermediate.b", "b": "select * from a"}}
    )
    with pytest.raises(DependencyCycleError, match=r"\['a', 'b'\]"):
        cyclic.build_order()
    with pytest.raises(ValueError, match="both sql/staging/ and sql/marts/"):
        table_dependencies({"staging": {"t": "select 1"}, "marts": {"t": "select 2"}})
