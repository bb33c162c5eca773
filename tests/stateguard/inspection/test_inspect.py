"""Code inspection: the kept side of row conditions, aggregates, keys, joins and ordering, from
SQL run through a connection and from pandas statements; and the SQL edits probes re-run."""

from __future__ import annotations

from stateguard.inspection.inspect import inspect_code
from stateguard.tools import inspect_python
from stateguard.verification import sql_edit

STAGE = '''
con.execute("""
CREATE OR REPLACE TABLE windy AS
SELECT f.*, w.wind_speed FROM flights AS f LEFT JOIN weather AS w USING (origin, hour)
WHERE NOT (f.dep_delay IS NULL) AND NOT (f.distance >= 35) AND 13 <= w.wind_speed AND species IN ('a', 'b')
""")
windy = con.table("windy").df()
_answer_sql = "SELECT COUNT(*), ROUND(CAST((MEDIAN(dep_delay)) AS DOUBLE), 2) FROM windy"
_row = con.execute(_answer_sql).fetchone()
result = {"n": _row[0], "mean_delay": _row[1]}
'''


def test_sql_conditions_keep_the_right_side() -> None:
    sem = inspect_code(STAGE)
    stage = sem.for_target("windy")
    assert stage is not None and stage.sources == ["flights", "weather"]
    kept = {(c.column, c.op, c.value) for c in stage.conditions}
    assert kept == {
        ("dep_delay", "notnull", None),
        ("distance", "<", 35.0),
        ("wind_speed", ">=", 13.0),
        ("species", "in", None),
    }
    assert stage.joins[0].how == "left" and stage.joins[0].keys == ["origin", "hour"]
    assert sem.frames == {"windy": "windy"} and sem.connection == "con"
    answer = sem.for_target("_row")
    assert answer is not None and [
        (a.function, a.column, a.standalone, a.position) for a in answer.aggregates
    ] == [("count", None, True, 0), ("median", "dep_delay", True, 1)]
    assert sem.fields["mean_delay"] == "_row[1]"


def test_pandas_masks_aggregates_keys_and_merges() -> None:
    sem = inspect_code(
        "big = df[(df.mass > 4000) & ~(df.sex == 'male') & df.bill.notna()]\n"
        "res = big.groupby(['species', 'island'])['flipper'].median()\n"
        "share = (df.rating > 4).mean() * 100\n"
        "m = pd.merge(a, b, on='id', how='left')\n"
        "top = res.sort_values(ascending=False).head(3)\n"
        "q = df.query(\"rating >= 4 and region == 'North'\").dropna(subset=['price'])\n"
        "df = df.drop(df[df.x < 4].index)\n"
    )
    by = {s.target: s for s in sem.selections}
    assert {(c.column, c.op, c.value) for c in by["big"].conditions} == {
        ("mass", ">", 4000.0),
        ("sex", "!=", "male"),
        ("bill", "notnull", None),
    }
    assert by["big"].frame == "df" and by["res"].group_keys == ["species", "island"]
    assert [(a.function, a.column, a.standalone) for a in by["res"].aggregates] == [
        ("median", "flipper", True)
    ]
    assert [(a.function, a.standalone) for a in by["share"].aggregates] == [
        ("mean", False)
    ]  # inside arithmetic
    assert (by["m"].joins[0].how, by["m"].joins[0].keys) == ("left", ["id"])
    assert by["top"].order == [("res", True)] and by["top"].limit == 3
    assert {(c.column, c.op) for c in by["q"].conditions} == {
        ("rating", ">="),
        ("region", "=="),
        ("price", "notnull"),
    }
    assert [(c.column, c.op, c.value) for c in by["df"].conditions] == [
        ("x", ">=", 4.0)
    ]  # a drop keeps the rest


def test_inspect_python_tool_carries_the_semantics() -> None:
    data = inspect_python(STAGE)
    assert data["valid"] and "windy" in data["writes"]
    assert data["semantics"]["connection"] == "con" and len(data["semantics"]["selections"]) == 2


def test_sql_edits_for_reruns() -> None:
    sql = "SELECT carrier, MEDIAN(x) AS m FROM t LEFT JOIN u USING (k) WHERE NOT (y >= 3) GROUP BY carrier ORDER BY m LIMIT 3"
    assert "y >= 3" in (sql_edit.replace_condition(sql, "NOT (y >= 3)", "y >= 3") or "").replace(
        "NOT (y >= 3)", ""
    )
    assert "AVG(x)" in (sql_edit.swap_aggregate(sql, "MEDIAN(x)", "mean") or "")
    assert "LEFT" not in (sql_edit.set_join(sql, "inner") or "LEFT")
    edited = sql_edit.set_order(sql, descending=True, limit=5) or ""
    assert "DESC" in edited and "LIMIT 5" in edited
    assert sql_edit.add_condition(sql, "z IS NOT NULL") is not None
    assert sql_edit.replace_condition(sql, "nothing = 1", "y > 1") is None
