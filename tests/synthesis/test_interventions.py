"""Single-assumption AST interventions (paper B.2): each rewrites exactly one subtree, and
executing the thread tells genuine interventions from benign ones."""

from __future__ import annotations

import random
from collections.abc import Callable

import duckdb
import pytest
from sqlglot import exp

from synthesis.interventions import (
    InterventionKind,
    InterventionNotApplicable,
    InterventionRecord,
    add_in_item,
    avg_to_median,
    candidate_interventions,
    changed_subtree,
    drop_conjunct,
    flip_comparison,
    is_genuine,
    negate_conjunct,
    node_at,
    normalize_sql,
    remove_in_item,
    set_numeric_parameter,
    sum_to_avg,
    swap_ratio,
)
from synthesis.sql_deps import Stage, downstream_of, parse_statements, stage_dependencies

Result = tuple[str, InterventionRecord]


def assert_single_change(
    sql: str,
    result: Result,
    *,
    before_type: type[exp.Expr],
    after_type: type[exp.Expr],
    before_sql: str | None = None,
    after_sql: str | None = None,
) -> tuple[exp.Expr, exp.Expr]:
    """The rewritten SQL differs from the normalized original in exactly one subtree, at the
    recorded path; putting the old subtree back restores the original byte for byte."""
    new_sql, record = result
    original = normalize_sql(sql)
    assert normalize_sql(new_sql) == new_sql  # stable under re-parsing
    before_stmts, after_stmts = parse_statements(original), parse_statements(new_sql)
    assert len(before_stmts) == len(after_stmts)
    for k, (b, a) in enumerate(zip(before_stmts, after_stmts, strict=True)):
        if k != record.statement:
            assert changed_subtree(b, a) is None
    b, a = before_stmts[record.statement], after_stmts[record.statement]
    path = changed_subtree(b, a)
    assert path is not None and path == record.path
    old, new = node_at(b, path), node_at(a, path)
    assert type(old) is before_type, repr(old)
    assert type(new) is after_type, repr(new)
    if before_sql is not None:
        assert old.sql(dialect="duckdb") == before_sql
    if after_sql is not None:
        assert new.sql(dialect="duckdb") == after_sql
    new.replace(old.copy())
    assert ";\n".join(s.sql(dialect="duckdb") for s in after_stmts) == original
    return old, new


# ------------------------------------------------------------------------------------------
# numeric parameter

FILTER = (
    "CREATE TABLE s2 AS SELECT * FROM s1 WHERE age > 30 AND city = 'x' -- keep this\nORDER BY age LIMIT 5"
)


def test_threshold_change() -> None:
    result = set_numeric_parameter(FILTER, 45)
    assert_single_change(
        FILTER, result, before_type=exp.Literal, after_type=exp.Literal, before_sql="30", after_sql="45"
    )
    record = result[1]
    assert record.kind is InterventionKind.NUMERIC_PARAMETER
    assert record.operation == "set_threshold"
    assert record.stage == "s2"
    assert (record.before, record.after) == ("30", "45")
    assert "age > 30" in record.description
    assert "age > 45" in result[0] and "LIMIT 5" in result[0]


def test_limit_change() -> None:
    result = set_numeric_parameter(FILTER, 3, occurrence=1)
    assert_single_change(FILTER, result, before_type=exp.Literal, after_type=exp.Literal, before_sql="5")
    assert result[1].operation == "set_limit"
    assert result[0].endswith("LIMIT 3")
    with pytest.raises(InterventionNotApplicable, match="non-negative integer"):
        set_numeric_parameter(FILTER, 2.5, occurrence=1)


@pytest.mark.parametrize(
    ("sql", "occurrence", "new_value", "before_type", "after_type", "before_sql", "after_sql"),
    [
        # HAVING threshold
        (
            "SELECT g, COUNT(*) FROM t GROUP BY g HAVING COUNT(*) >= 3",
            0,
            5,
            exp.Literal,
            exp.Literal,
            "3",
            "5",
        ),
        # a negative threshold that stays negative: only the magnitude under the minus differs
        ("SELECT * FROM t WHERE x > -2.5", 0, -4, exp.Literal, exp.Literal, "2.5", "4"),
        # sign flips: the minus node itself is the change
        ("SELECT * FROM t WHERE x > -2.5", 0, 1.5, exp.Neg, exp.Literal, "-2.5", "1.5"),
        ("SELECT * FROM t WHERE x > 2", 0, -1, exp.Literal, exp.Neg, "2", "-1"),
        # BETWEEN bounds, in order
        ("SELECT * FROM t WHERE x BETWEEN 10 AND 20", 1, 25, exp.Literal, exp.Literal, "20", "25"),
        # the WHERE of a CTE and of a subquery
        (
            "WITH c AS (SELECT * FROM t WHERE x < 0.5) SELECT * FROM c WHERE y IN (SELECT y FROM u WHERE z = 7)",
            1,
            8,
            exp.Literal,
            exp.Literal,
            "7",
            "8",
        ),
    ],
)
def test_numeric_parameter_sites(
    sql: str,
    occurrence: int,
    new_value: float,
    before_type: type[exp.Expr],
    after_type: type[exp.Expr],
    before_sql: str,
    after_sql: str,
) -> None:
    result = set_numeric_parameter(sql, new_value, occurrence=occurrence)
    assert_single_change(
        sql,
        result,
        before_type=before_type,
        after_type=after_type,
        before_sql=before_sql,
        after_sql=after_sql,
    )


def test_numeric_parameter_ignores_literals_that_are_not_filter_parameters() -> None:
    # select-list arithmetic, function arguments, IN-list items and a subquery's select list
    # are not thresholds; only `3` qualifies
    sql = "SELECT v * 100 FROM t WHERE ROUND(x, 2) > 3 AND k IN (1, 2) AND v > (SELECT AVG(v) * 2 FROM t)"
    new_sql, record = set_numeric_parameter(sql, 4)
    assert record.before == "3" and "ROUND(x, 2) > 4" in new_sql
    with pytest.raises(InterventionNotApplicable, match="has 1 numeric parameter site"):
        set_numeric_parameter(sql, 4, occurrence=1)
    with pytest.raises(InterventionNotApplicable, match="no numeric parameter"):
        set_numeric_parameter("SELECT 5 FROM t", 4)
    with pytest.raises(InterventionNotApplicable, match="equals the current value"):
        set_numeric_parameter("SELECT * FROM t WHERE x > 30", 30.0)


# ------------------------------------------------------------------------------------------
# formula semantics


def test_avg_to_median() -> None:
    sql = "CREATE TABLE s2 AS SELECT city, AVG(income) AS m, SUM(income) AS s FROM s1 GROUP BY city"
    result = avg_to_median(sql)
    assert_single_change(
        sql,
        result,
        before_type=exp.Avg,
        after_type=exp.Median,
        before_sql="AVG(income)",
        after_sql="MEDIAN(income)",
    )
    assert result[1].kind is InterventionKind.FORMULA_SEMANTICS
    assert result[1].operation == "avg_to_median"


def test_avg_to_median_in_a_window_keeps_the_window() -> None:
    sql = "SELECT id, AVG(v) OVER (PARTITION BY g ORDER BY id) AS running FROM t"
    result = avg_to_median(sql)
    assert_single_change(sql, result, before_type=exp.Avg, after_type=exp.Median)
    assert "MEDIAN(v) OVER (PARTITION BY g ORDER BY id)" in result[0]


def test_sum_to_avg_picks_the_requested_occurrence() -> None:
    sql = "SELECT SUM(a) AS x, SUM(b) AS y FROM t"
    result = sum_to_avg(sql, occurrence=1)
    assert_single_change(
        sql, result, before_type=exp.Sum, after_type=exp.Avg, before_sql="SUM(b)", after_sql="AVG(b)"
    )
    with pytest.raises(InterventionNotApplicable, match="no AVG call"):
        avg_to_median(sql)


def test_swap_ratio() -> None:
    sql = "SELECT SUM(spend) / SUM(income) AS r FROM t GROUP BY g"
    result = swap_ratio(sql)
    assert_single_change(
        sql,
        result,
        before_type=exp.Div,
        after_type=exp.Div,
        before_sql="SUM(spend) / SUM(income)",
        after_sql="SUM(income) / SUM(spend)",
    )


def test_swap_ratio_parenthesizes_compound_operands() -> None:
    sql = "SELECT 100 * a / b AS pct FROM t"
    new_sql, record = swap_ratio(sql)
    assert record.after == "b / (100 * a)"
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 2.0 AS a, 50.0 AS b")
    assert con.execute(new_sql).fetchone() == (0.25,)  # 50 / (100 * 2), not 50 / 100 * 2


# ------------------------------------------------------------------------------------------
# comparison direction


@pytest.mark.parametrize(
    ("op", "flipped", "before_type", "after_type"),
    [
        (">", "<", exp.GT, exp.LT),
        ("<", ">", exp.LT, exp.GT),
        (">=", "<=", exp.GTE, exp.LTE),
        ("<=", ">=", exp.LTE, exp.GTE),
    ],
)
def test_flip_comparison(
    op: str, flipped: str, before_type: type[exp.Expr], after_type: type[exp.Expr]
) -> None:
    sql = f"SELECT * FROM t WHERE kind = 'a' AND score {op} 0.7"
    result = flip_comparison(sql)
    old, new = assert_single_change(sql, result, before_type=before_type, after_type=after_type)
    assert old.this == new.this and old.expression == new.expression  # operands untouched
    assert result[1].after == f"score {flipped} 0.7"
    assert result[1].kind is InterventionKind.COMPARISON_DIRECTION


def test_flip_comparison_in_having_and_out_of_range() -> None:
    sql = "SELECT g FROM t WHERE x > 1 GROUP BY g HAVING SUM(x) <= 10"
    result = flip_comparison(sql, occurrence=1)
    assert_single_change(sql, result, before_type=exp.LTE, after_type=exp.GTE)
    with pytest.raises(InterventionNotApplicable, match="occurrence 2 out of range"):
        flip_comparison(sql, occurrence=2)
    with pytest.raises(InterventionNotApplicable, match="no ordering comparison"):
        flip_comparison("SELECT * FROM t WHERE a = 1")


# ------------------------------------------------------------------------------------------
# category scope

CATS = "SELECT * FROM t WHERE region IN ('north', 'south', 'east') AND year IN (2020, 2021)"


def test_remove_in_item() -> None:
    result = remove_in_item(CATS, item=1)
    assert_single_change(
        CATS,
        result,
        before_type=exp.In,
        after_type=exp.In,
        before_sql="region IN ('north', 'south', 'east')",
        after_sql="region IN ('north', 'east')",
    )
    assert result[1].kind is InterventionKind.CATEGORY_SCOPE


def test_add_in_item() -> None:
    result = add_in_item(CATS, 2022, occurrence=1)
    assert_single_change(
        CATS, result, before_type=exp.In, after_type=exp.In, after_sql="year IN (2020, 2021, 2022)"
    )
    result = add_in_item(CATS, "west")
    assert_single_change(CATS, result, before_type=exp.In, after_type=exp.In)
    assert result[1].after == "region IN ('north', 'south', 'east', 'west')"


def test_not_in_list_is_a_category_site() -> None:
    sql = "SELECT * FROM t WHERE region NOT IN ('north', 'south')"
    result = remove_in_item(sql, item=0)
    assert_single_change(sql, result, before_type=exp.In, after_type=exp.In)
    assert "NOT region IN ('south')" in result[0]


def test_category_scope_not_applicable() -> None:
    with pytest.raises(InterventionNotApplicable, match="already in the list"):
        add_in_item(CATS, "north")
    with pytest.raises(InterventionNotApplicable, match="single item"):
        remove_in_item("SELECT * FROM t WHERE a IN (1)")
    with pytest.raises(InterventionNotApplicable, match="no IN"):
        remove_in_item("SELECT * FROM t WHERE a IN (SELECT a FROM u)")
    with pytest.raises(InterventionNotApplicable, match="item 5 out of range"):
        remove_in_item(CATS, item=5)


# ------------------------------------------------------------------------------------------
# filter condition

CHAIN = "SELECT * FROM t WHERE a > 1 AND (b = 2 OR c = 3) AND NOT d"


# CHAIN parses as And(And(a > 1, (b = 2 OR c = 3)), NOT d): dropping a member replaces the
# And that joins it to its neighbour with that neighbour.
@pytest.mark.parametrize(
    ("conjunct", "after_type", "remaining"),
    [
        (0, exp.Paren, "(b = 2 OR c = 3) AND NOT d"),
        (1, exp.GT, "a > 1 AND NOT d"),
        (2, exp.And, "a > 1 AND (b = 2 OR c = 3)"),
    ],
)
def test_drop_conjunct(conjunct: int, after_type: type[exp.Expr], remaining: str) -> None:
    result = drop_conjunct(CHAIN, conjunct=conjunct)
    assert_single_change(CHAIN, result, before_type=exp.And, after_type=after_type)
    assert result[0] == f"SELECT * FROM t WHERE {remaining}"
    assert result[1].kind is InterventionKind.FILTER_CONDITION
    assert result[1].operation == "drop_conjunct"


@pytest.mark.parametrize(
    ("conjunct", "before_type", "after_type", "after_sql"),
    [
        (0, exp.GT, exp.Not, "NOT (a > 1)"),
        (1, exp.Paren, exp.Not, "NOT (b = 2 OR c = 3)"),
        (2, exp.Not, exp.Column, "d"),  # negating a negation unwraps it
    ],
)
def test_negate_conjunct(
    conjunct: int, before_type: type[exp.Expr], after_type: type[exp.Expr], after_sql: str
) -> None:
    result = negate_conjunct(CHAIN, conjunct=conjunct)
    assert_single_change(CHAIN, result, before_type=before_type, after_type=after_type, after_sql=after_sql)


def test_filter_condition_single_condition_and_nested_where() -> None:
    sql = "WITH c AS (SELECT * FROM t WHERE x > 1) SELECT * FROM c WHERE y < 2 AND z = 3"
    with pytest.raises(InterventionNotApplicable, match="single condition"):
        drop_conjunct(sql, where=0)
    result = negate_conjunct(sql, where=0)
    assert_single_change(sql, result, before_type=exp.GT, after_type=exp.Not)
    result = drop_conjunct(sql, where=1, conjunct=1)
    assert_single_change(sql, result, before_type=exp.And, after_type=exp.LT)
    with pytest.raises(InterventionNotApplicable, match="conjunct 3 out of range"):
        negate_conjunct(sql, where=1, conjunct=3)
    with pytest.raises(InterventionNotApplicable, match="no WHERE clause"):
        negate_conjunct("SELECT 1")


def test_negation_keeps_exactly_the_rejected_rows() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(10)")
    sql = "SELECT x FROM t WHERE x > 6 AND x % 2 = 0"
    new_sql, _ = negate_conjunct(sql, conjunct=0)
    assert sorted(con.execute(new_sql).fetchall()) == [(0,), (2,), (4,), (6,)]


def test_multi_statement_sql_changes_only_its_statement() -> None:
    sql = "DROP TABLE IF EXISTS s2; CREATE TABLE s2 AS SELECT * FROM s1 WHERE v >= 3"
    result = flip_comparison(sql)
    assert result[1].statement == 1 and result[1].stage == "s2"
    assert_single_change(sql, result, before_type=exp.GTE, after_type=exp.LTE)


# ------------------------------------------------------------------------------------------
# enumeration

RICH = (
    "CREATE TABLE s3 AS WITH big AS (SELECT * FROM s1 WHERE age > 30 AND city IN ('a', 'b')) "
    "SELECT city, AVG(income) AS m, SUM(spend) / SUM(income) AS r FROM big "
    "GROUP BY city HAVING COUNT(*) >= 2 ORDER BY m DESC LIMIT 10"
)


def test_candidates_cover_every_kind_and_each_changes_one_subtree() -> None:
    candidates = candidate_interventions(RICH, random.Random(3), category_values={"city": ["a", "b", "c"]})
    kinds = {record.kind for _, record in candidates}
    assert kinds == set(InterventionKind)
    ops = [record.operation for _, record in candidates]
    assert ops.count("set_threshold") == 2 and ops.count("set_limit") == 1
    assert ops.count("sum_to_avg") == 2 and ops.count("swap_ratio") == 1
    assert ops.count("add_in_item") == 1 and ops.count("remove_in_item") == 2
    assert ops.count("drop_conjunct") == 2 and ops.count("negate_conjunct") == 2
    assert len({new_sql for new_sql, _ in candidates}) == len(candidates)
    for new_sql, record in candidates:
        assert record.stage == "s3"
        stmt_before, stmt_after = parse_statements(normalize_sql(RICH))[0], parse_statements(new_sql)[0]
        assert changed_subtree(stmt_before, stmt_after) == record.path
        assert new_sql != normalize_sql(RICH)


def test_candidates_are_deterministic_for_a_seed() -> None:
    first = candidate_interventions(RICH, 11, category_values={"city": ["a", "b", "c", "d", "e"]})
    again = candidate_interventions(
        RICH, random.Random(11), category_values={"city": ["a", "b", "c", "d", "e"]}
    )
    assert first == again
    seeds = {
        tuple(sql for sql, _ in candidate_interventions(RICH, s, category_values={"city": list("abcdefg")}))
        for s in range(10)
    }
    assert len(seeds) > 1  # the seed does pick the values


def test_candidates_without_category_values_only_remove() -> None:
    ops = [r.operation for _, r in candidate_interventions(RICH, 0)]
    assert "add_in_item" not in ops and "remove_in_item" in ops


def test_candidates_of_a_plain_select_are_empty() -> None:
    assert candidate_interventions("SELECT a, b FROM t", 0) == []


# ------------------------------------------------------------------------------------------
# genuine vs benign, by executing the thread


PEOPLE = [
    (1, 25, "ams", 100),
    (2, 45, "ams", 300),
    (3, 41, "ber", 200),
    (4, 52, "ber", 1000),
    (5, 60, "cph", 400),
    (6, 38, "cph", 500),
    (7, 29, "ber", 50),
]

THREAD = {
    "s1": "CREATE TABLE s1 AS SELECT * FROM people WHERE age > 30 AND city IN ('ams', 'ber', 'cph', 'dub')",
    "s2": (
        "CREATE TABLE s2 AS SELECT city, AVG(income) AS mean_income, SUM(income) AS total, "
        "COUNT(*) AS n FROM s1 GROUP BY city"
    ),
    "s3": "CREATE TABLE s3 AS SELECT city FROM s2 WHERE mean_income > 250",
}


def _run(thread: dict[str, str]) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect()
    con.execute("CREATE TABLE people (id INT, age INT, city VARCHAR, income DOUBLE)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", PEOPLE)
    out: dict[str, list[tuple[object, ...]]] = {}
    for name, sql in thread.items():
        con.execute(sql)
        out[name] = sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr)
    return out


Make = Callable[[str], Result]


@pytest.mark.parametrize(
    ("stage", "make", "genuine"),
    [
        # no age lies in (30, 32]: the filter keeps the same rows
        ("s1", lambda sql: set_numeric_parameter(sql, 32), False),
        # age 38 lies in (30, 40]
        ("s1", lambda sql: set_numeric_parameter(sql, 40), True),
        # nobody lives in 'dub'
        ("s1", lambda sql: remove_in_item(sql, item=3), False),
        ("s1", lambda sql: remove_in_item(sql, item=0), True),
        # every row over 30 already lives in a listed city
        ("s1", lambda sql: drop_conjunct(sql, conjunct=1), False),
        ("s1", lambda sql: negate_conjunct(sql, conjunct=0), True),
        ("s1", lambda sql: flip_comparison(sql), True),
        # every group has at most two rows, where median and mean coincide
        ("s2", avg_to_median, False),
        ("s2", sum_to_avg, True),
        # no group mean lies in (250, 260]
        ("s3", lambda sql: set_numeric_parameter(sql, 260), False),
        ("s3", lambda sql: set_numeric_parameter(sql, 500), True),
        ("s3", lambda sql: flip_comparison(sql), True),
    ],
)
def test_genuine_and_benign_interventions(stage: str, make: Make, genuine: bool) -> None:
    before = _run(THREAD)
    new_sql, record = make(THREAD[stage])
    assert record.stage == stage
    after = _run({**THREAD, stage: new_sql})

    deps = stage_dependencies([Stage(name=n, sql=s) for n, s in THREAD.items()])
    affected = [stage, *downstream_of(stage, deps)]
    for name in THREAD:
        if name not in affected:
            assert after[name] == before[name]  # upstream of the intervention: untouched
    changed = any(after[name] != before[name] for name in affected)
    assert changed is genuine

    fingerprints_before = {name: repr(rows) for name, rows in before.items()}
    fingerprints_after = {name: repr(rows) for name, rows in after.items()}
    assert is_genuine(fingerprints_before, fingerprints_after) is genuine
    assert is_genuine(fingerprints_before, fingerprints_after, downstream=affected) is genuine


def test_a_change_seen_only_upstream_of_the_compared_stages_is_benign() -> None:
    """Moving the s1 threshold to 38 drops one cph row: s1 and s2 change (cph mean 450 -> 400)
    but s3 (mean > 250) keeps the same cities."""
    before = _run(THREAD)
    after = _run({**THREAD, "s1": set_numeric_parameter(THREAD["s1"], 38)[0]})
    assert before["s1"] != after["s1"] and before["s3"] == after["s3"]
    fp_before = {k: repr(v) for k, v in before.items()}
    fp_after = {k: repr(v) for k, v in after.items()}
    assert is_genuine(fp_before, fp_after, downstream=["s3"]) is False
    assert is_genuine(fp_before, fp_after, downstream=["s2", "s3"]) is True


def test_is_genuine_inputs() -> None:
    assert is_genuine({"a": "x", "b": "y"}, {"a": "x", "b": "z"}) is True
    assert is_genuine({"a": "x"}, {"a": "x"}) is False
    assert is_genuine(["x", "y"], ["x", "y"]) is False
    assert is_genuine(["x", "y"], ["x", "q"]) is True
    assert is_genuine({}, {}) is False
    with pytest.raises(ValueError, match="missing on one side"):
        is_genuine({"a": "x"}, {"b": "x"})
    with pytest.raises(ValueError, match="missing on one side"):
        is_genuine({"a": "x"}, {"a": "x"}, downstream=["c"])
    with pytest.raises(ValueError, match="fingerprints before"):
        is_genuine(["x"], ["x", "y"])
    with pytest.raises(ValueError, match="as mappings or both as sequences"):
        is_genuine({"a": "x"}, ["x"])
