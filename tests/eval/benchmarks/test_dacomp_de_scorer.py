"""DAComp-DE scoring end to end on a toy four-table pipeline in real DuckDB databases.

The start database holds raw orders and customers; the gold database is the reference SQL run
by hand. Each case perturbs the agent's SQL and checks the CFS and CS scores exactly:
layer weights 15 / 25 / 60, one table in intermediate and marts, two in staging.
"""

from pathlib import Path

import duckdb
import pytest

from eval.benchmarks.dacomp_de.compare import compare_table
from eval.benchmarks.dacomp_de.config import ExampleSpec, load_eval_config
from eval.benchmarks.dacomp_de.pipeline import build_cfs
from eval.benchmarks.dacomp_de.scorer import SCORING_VERSION, evaluate_submission, weighted_score

CONFIG = load_eval_config(
    Path(__file__).parents[1] / "fixtures" / "dacomp_de" / "evaluation_config_small.yaml"
)
IMPL, EVOL = CONFIG.example("dacomp-de-impl-901"), CONFIG.example("dacomp-de-evol-901")

RAW = """
CREATE SCHEMA raw;
CREATE TABLE raw.customers AS SELECT * FROM (VALUES (1, ' Ann '), (2, 'Bob'), (3, 'Cy')) t(id, name);
CREATE TABLE raw.orders AS SELECT * FROM (VALUES
    (10, 1, 20.0, 'PAID'), (11, 1, 5.5, 'Paid'), (12, 2, 7.0, 'CANCELLED'), (13, 2, 3.0, 'paid')
) t(id, customer, amount, status);
"""
REFERENCE = {
    "staging": {
        "stg_shop__orders": "-- one row per order\n"
        "select id as order_id, customer as customer_id, amount, lower(status) as status from raw.orders",
        "stg_shop__customers": "select id as customer_id, trim(name) as customer_name from raw.customers",
    },
    "intermediate": {
        "int_shop__customer_orders": """
            with kept as (select * from staging.stg_shop__orders where status <> 'cancelled')
            select c.customer_id, c.customer_name, count(k.order_id) as n_orders, coalesce(sum(k.amount), 0) as total
            from staging.stg_shop__customers c left join kept k on k.customer_id = c.customer_id
            group by c.customer_id, c.customer_name
        """,
    },
    "marts": {
        "shop__top_customers": "select customer_name, total from intermediate.int_shop__customer_orders "
        "where n_orders > 0;\n-- trailing comment after the semicolon",
    },
}


def _build_dbs(tmp_path: Path, mart_schema: str) -> tuple[Path, Path]:
    start, gold = tmp_path / "shop_start.duckdb", tmp_path / "gold" / "shop.duckdb"
    gold.parent.mkdir()
    with duckdb.connect(str(start)) as conn:
        conn.execute(RAW)
    with duckdb.connect(str(gold)) as conn:
        conn.execute(RAW)
        for layer, tables in REFERENCE.items():
            schema = mart_schema if layer == "marts" else layer
            conn.execute(f"CREATE SCHEMA {schema}")
            for table, sql in tables.items():
                body = sql.replace("marts.", f"{mart_schema}.").split(";")[0]
                conn.execute(f"CREATE TABLE {schema}.{table} AS {body}")
    return start, gold


def _agent(**changes: str) -> dict[str, dict[str, str]]:
    """The reference pipeline with some tables' SQL replaced (value None-like '' drops the file)."""
    out = {layer: dict(tables) for layer, tables in REFERENCE.items()}
    for table, sql in changes.items():
        layer = next(layer for layer, tables in out.items() if table in tables)
        if sql:
            out[layer][table] = sql
        else:
            del out[layer][table]
    return {layer: tables for layer, tables in out.items() if tables}


ORDERS = "select id as order_id, customer as customer_id, amount, lower(status) as status from raw.orders"
CASES = {
    # name: (agent changes, CFS score, CS score, {table: expected CFS match})
    "reference": ({}, 100.0, 100.0, {}),
    # case and surrounding spaces are ignored: ' ANN ' matches 'Ann' here and downstream
    "case_and_whitespace": (
        {"stg_shop__customers": "select id as customer_id, upper(name) as customer_name from raw.customers"},
        100.0,
        100.0,
        {},
    ),
    # one order dropped: staging row count differs, and the error cascades under CFS only
    "row_count": (
        {"stg_shop__orders": ORDERS + " where amount > 5"},
        7.5,
        92.5,
        {
            "stg_shop__orders": False,
            "stg_shop__customers": True,
            "int_shop__customer_orders": False,
            "shop__top_customers": False,
        },
    ),
    # a marts value differs (25.5 rounded to 26): only marts is lost, in both modes
    "value": (
        {
            "shop__top_customers": "select customer_name, round(total) as total "
            "from intermediate.int_shop__customer_orders where n_orders > 0"
        },
        40.0,
        40.0,
        {"shop__top_customers": False, "int_shop__customer_orders": True},
    ),
    # upstream SQL error: the table is absent, so CFS loses everything downstream; CS does not
    "upstream_error": (
        {"stg_shop__orders": "select id as order_id, amt from raw.orders"},
        7.5,
        92.5,
        {"stg_shop__orders": False, "int_shop__customer_orders": False, "shop__top_customers": False},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_impl_cases(tmp_path: Path, name: str) -> None:
    changes, cfs_score, cs_score, cfs_matches = CASES[name]
    start, gold = _build_dbs(tmp_path, "marts")
    result = evaluate_submission(IMPL, _agent(**changes), start, gold, tmp_path / "work")
    assert result.cs is not None
    assert result.cfs.score == pytest.approx(cfs_score)
    assert result.cs.score == pytest.approx(cs_score)
    assert result.cfs.run_success and result.cfs.schema_valid
    for table, match in cfs_matches.items():
        assert result.cfs.table_correct()[table] is match, (table, result.cfs.tables[table].reason)
    assert result.cfs.level == ("full_match" if cfs_score == 100 else "partial")
    assert result.cfs.scoring_version == SCORING_VERSION
    assert start.stat().st_size > 0 and not (tmp_path / "shop.duckdb").exists()  # inputs never written


def test_reasons_and_build_errors(tmp_path: Path) -> None:
    start, gold = _build_dbs(tmp_path, "marts")
    rows = evaluate_submission(
        IMPL, _agent(stg_shop__orders=ORDERS + " where amount > 5"), start, gold, tmp_path / "a"
    )
    assert rows.cfs.tables["stg_shop__orders"].reason == "row count 3 != gold 4"
    assert rows.cfs.tables["int_shop__customer_orders"].reason == "1 of 3 rows have no equal gold row"
    broken = evaluate_submission(
        IMPL,
        _agent(stg_shop__orders="select id as order_id, amt from raw.orders"),
        start,
        gold,
        tmp_path / "b",
    )
    builds = broken.cfs.builds
    assert not builds["stg_shop__orders"].ok and "amt" in (builds["stg_shop__orders"].error or "")
    assert not builds["int_shop__customer_orders"].ok
    assert "stg_shop__orders" in (builds["int_shop__customer_orders"].error or "")  # the cascade, named
    assert broken.cfs.tables["shop__top_customers"].reason == "missing in prediction (marts)"
    assert broken.cs is not None and broken.cs.builds["int_shop__customer_orders"].ok


@pytest.mark.parametrize(
    ("changes", "missing", "run_success"),
    [
        ({"shop__top_customers": ""}, ["marts"], True),  # no marts SQL: the marts schema never appears
        # every file fails: no agent SQL ran (its schemas exist, as the build opened them)
        ({t: "select nope" for tables in REFERENCE.values() for t in tables}, [], False),
    ],
)
def test_gates_zero_the_score(
    tmp_path: Path, changes: dict[str, str], missing: list[str], run_success: bool
) -> None:
    start, gold = _build_dbs(tmp_path, "marts")
    result = evaluate_submission(IMPL, _agent(**changes), start, gold, tmp_path / "work")
    assert result.cs is not None
    assert (result.cfs.score, result.cs.score) == (0.0, 0.0)
    assert (result.cfs.level, result.cs.level) == ("gate_failed", "gate_failed")
    assert result.cfs.run_success is run_success
    assert result.cfs.missing_schemas == missing
    assert result.cfs.tables["stg_shop__customers"].match is run_success  # staging itself was fine


def test_evolution_unchanged_tables_weigh_nothing(tmp_path: Path) -> None:
    start, gold = _build_dbs(tmp_path, "mart")  # this gold spells the marts schema `mart`
    wrong_name = (
        "select id as customer_id, 'Anne' as customer_name from raw.customers where id = 1 "
        "union all select id, trim(name) from raw.customers where id > 1"
    )
    result = evaluate_submission(EVOL, _agent(stg_shop__customers=wrong_name), start, gold, tmp_path / "work")
    assert result.cs is not None
    # CS: only the unchanged (weight 0) table is wrong, so nothing is lost; still not a full match
    assert (result.cs.score, result.cs.level) == (100.0, "partial")
    assert result.cs.table_correct() == {
        "stg_shop__orders": True,
        "stg_shop__customers": False,
        "int_shop__customer_orders": True,
        "shop__top_customers": True,
    }
    # CFS: the wrong name cascades into intermediate and marts; staging's weighted table still counts
    assert result.cfs.score == pytest.approx(1.0)
    assert result.cfs.layer_scores == {"staging": 1.0, "intermediate": 0.0, "marts": 0.0}
    clean = evaluate_submission(EVOL, _agent(), start, gold, tmp_path / "clean")
    assert (clean.cfs.score, clean.cfs.level) == (100.0, "full_match")


@pytest.mark.parametrize(
    ("example", "matches", "score", "layers"),
    [
        (
            IMPL,
            {
                "stg_shop__orders": True,
                "stg_shop__customers": True,
                "int_shop__customer_orders": True,
                "shop__top_customers": True,
            },
            100.0,
            {"staging": 1.0, "intermediate": 1.0, "marts": 1.0},
        ),
        (IMPL, {"stg_shop__orders": True}, 7.5, {"staging": 0.5, "intermediate": 0.0, "marts": 0.0}),
        (IMPL, {"shop__top_customers": True}, 60.0, {"staging": 0.0, "intermediate": 0.0, "marts": 1.0}),
        (IMPL, {}, 0.0, {"staging": 0.0, "intermediate": 0.0, "marts": 0.0}),
        (
            EVOL,
            {"stg_shop__orders": True, "int_shop__customer_orders": True, "shop__top_customers": True},
            100.0,
            {"staging": 1.0, "intermediate": 1.0, "marts": 1.0},
        ),
        (EVOL, {"stg_shop__customers": True}, 0.0, {"staging": 0.0, "intermediate": 0.0, "marts": 0.0}),
        (EVOL, {"shop__top_customers": True}, 40.0, {"staging": 0.0, "intermediate": 0.0, "marts": 1.0}),
    ],
)
def test_weighted_score(
    example: ExampleSpec, matches: dict[str, bool], score: float, layers: dict[str, float]
) -> None:
    got, got_layers = weighted_score(example, matches)
    assert got == pytest.approx(score)
    assert got_layers == pytest.approx(layers)


def test_layer_without_weighted_tables_is_skipped() -> None:
    data = EVOL.model_copy(deep=True)
    staging = data.layers["staging"].model_copy(
        update={"tables": {"stg_shop__customers": data.layers["staging"].tables["stg_shop__customers"]}}
    )
    only_unchanged = data.model_copy(update={"layers": {**data.layers, "staging": staging}})
    score, layers = weighted_score(only_unchanged, {"shop__top_customers": True})
    assert "staging" not in layers and score == pytest.approx(100 * 40 / 99)


@pytest.mark.parametrize(
    ("pred_rows", "cols", "match", "reason"),
    [
        ("(1, 'A', NULL), (2, 'b', 3.5)", ["k", "v", "x"], True, "match"),  # row order and case ignored
        ("(1, 'a ', NULL), (1, 'a ', NULL)", ["k", "v", "x"], False, "1 of 2 rows have no equal gold row"),
        ("(1, NULL, NULL), (2, 'b', 3.5)", ["k", "v", "x"], False, "1 of 2 rows have no equal gold row"),
        # text-exact, no numeric tolerance: 3.50 prints as '3.50', gold as '3.5'
        ("(1, 'a', NULL), (2, 'b', 3.50)", ["k", "v", "x"], False, "1 of 2 rows have no equal gold row"),
        ("(1, 'a', NULL)", ["k"], False, "row count 1 != gold 2"),
        ("(2, 'zzz', 3.5), (1, 'qqq', NULL)", ["k", "x"], True, "match"),  # v is not compared
        ("(2, 'b', 3.5), (1, 'a', NULL)", [], True, "match"),  # no compare_cols: all shared columns
        ("(2, 'b', 3.5), (1, 'a', NULL)", ["missing_col"], False, "no compared column in both tables"),
    ],
)
def test_compare_table_cases(pred_rows: str, cols: list[str], match: bool, reason: str) -> None:
    with duckdb.connect() as gold, duckdb.connect() as pred:
        gold.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a', NULL), (2, 'b', 3.5)) v(k, v, x)")
        pred.execute(f"CREATE TABLE t AS SELECT * FROM (VALUES {pred_rows}) v(k, v, x)")
        verdict = compare_table(pred, "main", gold, "main", "t", cols)
    assert (verdict.match, verdict.reason) == (match, reason)


def test_cfs_runs_tables_in_dependency_order(tmp_path: Path) -> None:
    start, _ = _build_dbs(tmp_path, "marts")
    # file names sort marts-first and int-before-stg, yet every table builds
    result = build_cfs(_agent(), start, tmp_path / "out" / "shop.duckdb", IMPL)
    assert result.order == [
        "stg_shop__customers",
        "stg_shop__orders",
        "int_shop__customer_orders",
        "shop__top_customers",
    ]
    assert all(b.ok for b in result.tables.values()) and result.run_success
    with duckdb.connect(str(result.db_path), read_only=True) as conn:  # `mart.t` also names the marts table
        assert conn.execute("SELECT count(*) FROM mart.shop__top_customers").fetchone() == (2,)
    assert build_cfs({}, start, tmp_path / "empty" / "shop.duckdb", IMPL).run_success is False
