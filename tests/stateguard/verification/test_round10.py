"""The tenth round: ranges whose ends are said to count, a standing scope read around through a
table its parent was cut from, a bound carried into a count "of those", and a query grouped by a
key it never reports that splits the groups it does report."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import carried, listed_joins, outside, rule_windows, split_groups, standing
from stateguard.verification.extract import comparisons
from tests.stateguard.verification.conftest import WITHOUT_UNSTATED, session_with
from tests.stateguard.verification.conftest import sandboxed as _sandboxed

# -- ranges -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clause", "subject", "low", "high"),
    [
        ("count those whose rating is from 3.0 to 3.5 inclusive", ["rating"], 3.0, 3.5),
        ("orders whose price lies in the range $50 to $120, ends included", ["price"], 50.0, 120.0),
        ("with a price in the range of 1,000 to 2,500", ["price"], 1000.0, 2500.0),
        ("a rating of 2 to 4, both ends included", ["rating"], 2.0, 4.0),
    ],
)
def test_a_range_whose_ends_are_said_to_count_is_two_bounds(
    clause: str, subject: list[str], low: float, high: float
) -> None:
    (req,) = comparisons(clause)
    assert (req.subject, req.op, req.value, req.upper) == (subject, ">=", low, high)


@pytest.mark.parametrize(
    "clause",
    [
        "How many orders from 1990 to 2000 were rated?",
        "the price went from 10 to 20",
        "the years 1990 to 2000",
    ],
)
def test_a_span_without_its_ends_said_to_count_is_not_read(clause: str) -> None:
    assert comparisons(clause) == []


def test_a_range_counted_with_between_is_a_condition_of_the_code() -> None:
    sem = inspect_code("n = int(kept['rating'].between(3.0, 3.5).sum())")
    assert [(c.column, c.op, c.value) for s in sem.selections for c in s.conditions] == [
        ("rating", ">=", 3.0),
        ("rating", "<=", 3.5),
    ]


def test_a_counted_range_in_the_kept_frame_is_no_missing_filter() -> None:
    session = session_with()
    question = (
        "Leave out orders rated under 2 and call the rest `kept`. How many orders are in `kept`, and "
        "count those whose rating is from 3.0 to 3.5 inclusive."
    )
    code = (
        "import json\nkept = orders[orders['rating'] >= 2]\n"
        "print(json.dumps({'n': len(kept), 'n_mid': int(kept['rating'].between(3.0, 3.5).sum())}))"
    )
    assert session.turn(question, code) == []


# -- standing scopes through a parent's own source ----------------------------------------------


def test_lineage_follows_tables_cut_from_one_another() -> None:
    scopes = standing.StandingScopes()
    scopes.record(
        1,
        "Flag the pricey orders.",
        'con.execute("CREATE TABLE f AS SELECT *, price > 100 AS pricey FROM o")',
        inspect_code('con.execute("CREATE TABLE f AS SELECT *, price > 100 AS pricey FROM o")'),
    )
    code = "con.execute(\"CREATE TABLE shop AS SELECT * FROM f WHERE category <> 'garden'\")"
    scopes.record(
        2, "Set garden orders aside from now on, keeping the rest in `shop`.", code, inspect_code(code)
    )
    assert scopes.ancestors("shop") == ("f", "o")
    (scope,) = [s for s in scopes.scopes if s.child]
    assert (scope.parent, scope.child, scope.ancestors) == ("f", "shop", ("o",))
    # a table rebuilt by aggregation is no longer a cut of anything
    code = 'con.execute("CREATE OR REPLACE TABLE f AS SELECT region, COUNT(*) AS n FROM o GROUP BY region")'
    scopes.record(3, "Count per region.", code, inspect_code(code))
    assert scopes.ancestors("f") == ()


OWN = (
    "Garden orders are sold by a partner: set them aside until we finish and keep the other rows of "
    "`flagged` as `shop`. How many orders remain, and how many of them cost more than 100?"
)


@pytest.mark.parametrize(("table", "found"), [("shop", False), ("o", True)])
def test_the_scope_turn_that_counts_on_the_table_its_parent_was_cut_from(
    tmp_path: Path, table: str, found: bool
) -> None:
    session, ws = _sandboxed(tmp_path)
    with ws:
        flag = 'con.execute("CREATE OR REPLACE TABLE flagged AS SELECT *, rating >= 4 AS liked FROM o")'
        assert session.turn("Flag the orders rated 4 or more as liked.", flag) == []
        code = (
            "import json\n"
            "con.execute(\"CREATE OR REPLACE TABLE shop AS SELECT * FROM flagged WHERE category <> 'garden'\")\n"
            f'_row = con.execute("SELECT COUNT(*), (SELECT COUNT(*) FROM {table} WHERE price > 100) FROM shop").fetchone()\n'
            "print(json.dumps({'n_shop': _row[0], 'n_over_100': _row[1]}))"
        )
        findings = session.turn(OWN, code)
    assert bool(findings) is found
    if found:
        assert "this turn filtered out" in findings[0].reason


@pytest.mark.parametrize(
    "words",
    [
        "and keep it that way for the remaining questions",
        "going forward, drop them",
        "leave them out for good",
        "in what follows, use only the others",
        "for all the following questions",
        "exclude both until the end of this analysis",
    ],
)
def test_more_words_that_set_a_scope_for_the_rest(words: str) -> None:
    assert standing._STANDING.search(words)


@pytest.mark.parametrize("words", ["the remaining orders", "until the end of the year", "to the end of 1990"])
def test_words_that_set_no_standing_scope(words: str) -> None:
    assert not standing._STANDING.search(words)


# -- a bound carried into a count "of those" ----------------------------------------------------

TWO = "How many orders cost no more than 100? And of those, how many were rated above 4?"


def test_the_first_counts_bound_is_carried_to_the_second() -> None:
    (bound,) = carried.carried_bounds(TWO)
    assert (bound.op, bound.value) == ("<=", 100.0)
    assert carried.carried_bounds("How many orders cost no more than 100? How many were rated above 4?") == []
    sem = inspect_code("few = orders[orders['price'] <= 100]\nn = int((orders['rating'] > 4).sum())")
    assert carried.bound_column(bound, sem) == "price"
    both = inspect_code("a = orders[orders['price'] <= 100]\nb = orders[orders['rating'] <= 100]")
    assert carried.bound_column(bound, both) is None  # two columns tested that way: no binding


def test_a_count_written_into_a_field_is_counted_on_its_own_frame() -> None:
    sem = inspect_code("result = {'n': len(few), 'k': int((orders['rating'] > 4).sum())}")
    (sel,) = [s for s in sem.selections if s.conditions]
    assert carried.counted_frame(sel) == "orders"


@pytest.mark.parametrize(("frame", "found"), [("few", False), ("orders", True)])
def test_a_count_of_those_on_every_row_is_a_finding(frame: str, found: bool) -> None:
    session = session_with()
    code = (
        "import json\nfew = orders.loc[orders['price'] <= 100]\n"
        f"result = {{'n_cheap': len(few), 'n_liked': int(({frame}['rating'] > 4).sum())}}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn(TWO, code)
    assert bool(findings) is found
    if found:
        assert "price" in findings[0].reason


@pytest.mark.parametrize("opening", ["In how many", "For how many"])
def test_a_count_opened_by_a_preposition_is_a_count(opening: str) -> None:
    question = f"{opening} orders was the rating above 4? And of those, how many cost over 100?"
    assert carried.subset_count_fields(question, {"n": 3, "k": 5}) == ("n", "k")


# -- a hidden group key that splits the reported groups -----------------------------------------


def test_hidden_keys_are_those_the_select_list_does_not_show() -> None:
    sql = (
        "SELECT r.region, COUNT(*) AS n FROM o r GROUP BY r.region, r.category ORDER BY r.region, r.category"
    )
    assert split_groups.hidden_keys(sql) == (["r.region"], ["r.category"])
    assert split_groups.without_keys(sql, ["r.category"]) == (
        "SELECT r.region, COUNT(*) AS n FROM o AS r GROUP BY r.region ORDER BY r.region"
    )
    assert split_groups.hidden_keys("SELECT region AS r, COUNT(*) FROM o GROUP BY region") is None
    assert split_groups.hidden_keys("SELECT region, COUNT(*) FROM o GROUP BY 1, 2") is None


@pytest.mark.parametrize(
    ("keys", "found"),
    [
        ("region", False),
        ("region, region_no", False),  # one number per region: the same groups
        ("region, category", True),  # cuts every region in three
    ],
)
def test_a_key_the_query_does_not_report_that_splits_its_groups(
    tmp_path: Path, keys: str, found: bool
) -> None:
    session, ws = _sandboxed(
        tmp_path,
        "con.execute(\"CREATE OR REPLACE TABLE o2 AS SELECT *, CASE region WHEN 'North' THEN 1 WHEN 'South' THEN 2 "
        "WHEN 'East' THEN 3 ELSE 4 END AS region_no FROM o\")",
    )
    code = (
        "import json\n"
        f'_rows = con.execute("SELECT region, COUNT(*) FROM o2 GROUP BY {keys}").fetchall()\n'
        "print(json.dumps({'n_by_region': {r[0]: r[1] for r in _rows}}))"
    )
    with ws:
        findings = session.turn("Region by region, how many orders are there?", code)
    assert bool(findings) is found
    if found:
        assert "category" in findings[0].reason and "'differ': True" in findings[0].evidence


# -- a stated number the code never tests, beside one test of a number the question never states --


@pytest.mark.parametrize(
    ("cut", "found"),
    [
        ("orders['price'] > 100", False),  # as stated
        ("orders['price'] > 120", True),  # a nearby number on the same side
        ("orders['price'] > 290", False),  # far off: no reading binds it
        ("orders['price'] < 120", False),  # the other side: not this bound
    ],
)
def test_a_changed_number_is_bound_by_pairing(cut: str, found: bool) -> None:
    session = session_with(config=WITHOUT_UNSTATED)
    code = f"import json\nhigh = orders[{cut}]\nprint(json.dumps({{'n_high': len(high)}}))"
    findings = session.turn("How many orders carried upward of 100?", code)
    assert bool(findings) is found
    if found:
        assert "threshold" in findings[0].reason and "price" in findings[0].reason


def test_two_unstated_numbers_on_the_same_side_bind_nothing() -> None:
    session = session_with()
    code = (
        "import json\nhigh = orders[(orders['price'] > 120) & (orders['rating'] > 1.5)]\n"
        "print(json.dumps({'n_high': len(high)}))"
    )
    assert session.turn("How many orders carried upward of 100?", code) == []


# -- the statistic a turn's own rule names -------------------------------------------------------

RULE = (
    "From now on an order is pricey when it costs more than 1.2 times the median price of its own "
    "category (the median over all orders of that category)."
)


@pytest.mark.parametrize(("function", "found"), [("median", False), ("mean", True)])
def test_the_per_row_statistic_of_a_rule_stated_in_the_turns_context(function: str, found: bool) -> None:
    session = session_with()
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    code = (
        "import json\n"
        f"orders['pricey'] = orders['price'] > 1.2 * orders.groupby('category')['price'].transform('{function}')\n"
        "print(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )
    findings = session.turn(
        "Redefine `pricey` in `orders` that way. How many orders are pricey now?", code, own_context=RULE
    )
    assert bool(findings) is found
    if found:
        assert "median" in findings[0].reason


# -- a typed-in list joined so that its unmatched entries are lost -------------------------------


def test_a_frame_built_by_a_comprehension_over_written_out_values_is_a_list() -> None:
    code = (
        "_groups = {'a': ['North', 'South'], 'b': ['East', 'Mars']}\n"
        "areas = pd.DataFrame([(r, g) for g, names in _groups.items() for r in names], columns=['region', 'grp'])\n"
        "other = pd.DataFrame([(r, 1) for r in orders['region']], columns=['region', 'one'])"
    )
    assert inspect_code(code).listed == ["areas"]


LIST = "areas = pd.DataFrame({'region': ['North', 'South', 'East', 'West', 'Mars']})"


@pytest.mark.parametrize(
    ("merge", "found"),
    [
        ("areas.merge(_n, on='region', how='left')", False),
        ("areas.merge(_n, on='region', how='inner')", True),  # Mars, with no order, is lost
        ("_n.merge(areas, on='region', how='left')", True),  # the list on the dropped side
    ],
)
def test_a_list_join_that_loses_the_entries_the_code_counts_as_empty(merge: str, found: bool) -> None:
    session = session_with()
    assert session.turn("Type the regions into a frame `areas`.", f"import pandas as pd\n{LIST}") == []
    code = (
        "import json\n"
        "_n = orders[orders['rating'] > 4].groupby('region').size().rename('n').reset_index()\n"
        f"per_area = {merge}.fillna({{'n': 0}})\n"
        "print(json.dumps({'n_by_region': {r: int(n) for r, n in zip(per_area['region'], per_area['n'])}, "
        "'n_without': int((per_area['n'] == 0).sum())}))"
    )
    findings = session.turn("Region by region, how many orders were rated above 4?", code)
    assert bool(findings) is found
    if found:
        assert "typed-in list areas" in findings[0].reason


def test_a_list_join_without_a_zero_in_the_code_is_left_alone() -> None:
    session = session_with(LIST)
    code = (
        "import json\n"
        "_n = orders[orders['rating'] > 4].groupby('region').size().rename('n').reset_index()\n"
        "per_area = areas.merge(_n, on='region', how='inner')\n"
        "print(json.dumps({'regions': sorted(per_area['region'])}))"
    )
    assert session.turn("Which listed regions have an order rated above 4?", code) == []


def test_tables_made_row_for_row_from_a_list_are_lists_too() -> None:
    sem = inspect_code(
        'con.execute("CREATE TABLE terms AS SELECT name, y * 4 AS q, LEAD(y) OVER (ORDER BY y) AS nxt FROM lst")\n'
        'con.execute("CREATE TABLE few AS SELECT * FROM lst WHERE y > 3")'
    )
    assert listed_joins.with_copies({"lst"}, sem) == {"lst", "terms"}


# -- the group a rule's per-row statistic is taken over -----------------------------------------


def test_the_rules_group_is_read_whole_or_not_at_all() -> None:
    cols = ["region", "category", "price"]
    assert rule_windows.stated_group("above the median price of its own region", cols) == rule_windows.Stated(
        "region", "of its own region"
    )
    assert rule_windows.stated_group("the mean of its category group", cols).column == "category"
    stated = rule_windows.stated_group("the average price (taken over the whole series)", cols)
    assert stated is not None and stated.column is None
    assert rule_windows.stated_group("above the median of its own neighbourhood", cols) is None
    assert rule_windows.stated_group("of its own region, over the whole series", cols) is None


RULE_BY_REGION = (
    "From now on an order is pricey when it costs more than the median price of its own region "
    "(the median over all orders of that region)."
)


@pytest.mark.parametrize(("key", "found"), [("region", False), ("category", True)])
def test_a_rule_statistic_over_another_group_than_stated(key: str, found: bool) -> None:
    session = session_with()
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    code = (
        "import json\n"
        f"orders['pricey'] = orders['price'] > orders.groupby('{key}')['price'].transform('median')\n"
        "print(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )
    findings = session.turn(
        "Redefine `pricey` that way. How many orders are pricey now?", code, own_context=RULE_BY_REGION
    )
    assert bool(findings) is found
    if found:
        assert "region" in findings[0].reason


@pytest.mark.parametrize(("partition", "found"), [("", False), ("PARTITION BY category ", True)])
def test_a_sql_window_partitioned_where_the_rule_takes_the_whole_series(
    tmp_path: Path, partition: str, found: bool
) -> None:
    session, ws = _sandboxed(tmp_path)
    rule = "From now on an order is pricey when it costs more than the average price (taken over the whole series)."
    code = (
        "import json\n"
        f'con.execute("CREATE OR REPLACE TABLE p AS SELECT *, price > AVG(price) OVER ({partition}) AS pricey FROM o")\n'
        "n = con.execute('SELECT COUNT(*) FILTER (WHERE pricey) FROM p').fetchone()[0]\n"
        "print(json.dumps({'n_pricey': int(n)}))"
    )
    with ws:
        assert session.turn("How many orders?", "import json\nprint(json.dumps({'n': 1}))") == []
        findings = session.turn(
            "Flag `pricey` in a table `p` that way. How many orders are pricey?", code, own_context=rule
        )
    assert bool(findings) is found


@pytest.mark.parametrize(("cut", "found"), [(50, False), (60, True)])
def test_the_bound_of_a_rule_stated_in_the_turns_context(cut: int, found: bool) -> None:
    session = session_with()
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    code = (
        "import json\n"
        f"orders['pricey'] = orders['price'] >= {cut}\n"
        "print(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )
    rule = "The new yardstick: an order is pricey when it brought in at least 50 per unit."
    findings = session.turn(
        "Redefine `pricey` that way. How many orders are pricey now?", code, own_context=rule
    )
    assert bool(findings) is found
    if found:
        assert "threshold" in findings[0].reason


# -- a scope that opens the question and holds for everything after its colon -------------------


@pytest.mark.parametrize(("frame", "found"), [("liked", False), ("orders", True)])
def test_an_opening_flag_scope_holds_for_every_value_asked(frame: str, found: bool) -> None:
    session = session_with("orders['good'] = orders['rating'] >= 4")
    question = (
        "For the orders with good ratings: what is their mean price, and how many of them cost less than 100?"
    )
    code = (
        "import json\nliked = orders[orders['good']]\n"
        f"result = {{'mean_price': round(float(liked['price'].mean()), 2), 'n_cheap': int(({frame}['price'] < 100).sum())}}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn(question, code)
    assert bool(findings) is found
    if found:
        assert "good" in findings[0].reason


def test_an_opening_scope_that_the_rest_reaches_past_is_no_scope() -> None:
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(
        tables={
            "orders": {
                "good": ColumnInfo(kind="other", values=["False", "True"]),
                "price": ColumnInfo(kind="num"),
            }
        }
    )
    (scope,) = carried.preamble_scopes(
        "For the orders with good ratings: what is their mean price?", vocab, ["orders"]
    )
    assert scope.columns == ["good"]
    asked = "For the orders with good ratings: what is their mean price, and that of the others?"
    assert carried.preamble_scopes(asked, vocab, ["orders"]) == []


def test_a_standing_sentence_anchors_a_list_of_its_numbers_and_numbers_with_commas() -> None:
    sem = inspect_code(
        "a = con.execute('SELECT COUNT(*) FROM m WHERE yr NOT IN (1990, 1991)').fetchone()[0]\n"
        "b = con.execute('SELECT AVG(t) FROM m WHERE yr NOT IN (1990, 1991)').fetchone()[0]"
    )
    said = "The quarters of 1990 and 1991 are odd; leave those two years out from here on. How many remain?"
    (scope,) = standing.inline_scopes(1, said, sem)
    assert scope.condition == "NOT yr IN (1990, 1991)"
    sem = inspect_code(
        "a = con.execute('SELECT COUNT(*) FROM c WHERE pop >= 1000').fetchone()[0]\n"
        "b = con.execute('SELECT AVG(r) FROM c WHERE pop >= 1000').fetchone()[0]"
    )
    said = "A county of fewer than 1,000 people is noisy; set those aside from here on. How many are left?"
    (scope,) = standing.inline_scopes(1, said, sem)
    assert scope.condition == "pop >= 1000"


# -- a range asked as its outside ------------------------------------------------------------------


def test_the_outside_of_a_range_and_the_codes_plain_test() -> None:
    q = "and count the orders whose price lies outside the band from 50 to 120"
    assert [(a, b) for a, b, _ in outside.asked(q)] == [(50.0, 120.0)]
    (found,) = outside.flipped(q, "n = int(kept['price'].between(50, 120).sum())")
    assert (found.before, found.after) == (
        "kept['price'].between(50, 120)",
        "~kept['price'].between(50, 120)",
    )
    (found,) = outside.flipped(
        q, 'con.execute("SELECT COUNT(*) FILTER (WHERE price BETWEEN 50 AND 120) FROM o")'
    )
    assert found.after == "NOT BETWEEN 50 AND 120"
    assert outside.flipped(q, "n = int((~kept['price'].between(50, 120)).sum())") == []
    assert (
        outside.flipped(
            q, 'con.execute("SELECT COUNT(*) FILTER (WHERE price NOT BETWEEN 50 AND 120) FROM o")'
        )
        == []
    )
    assert outside.flipped("count the orders priced from 50 to 120", "kept['price'].between(50, 120)") == []


@pytest.mark.parametrize(
    ("test", "found"),
    [("~orders['price'].between(50, 120)", False), ("orders['price'].between(50, 120)", True)],
)
def test_a_range_asked_as_its_outside_and_tested_as_itself(test: str, found: bool) -> None:
    session = session_with()
    code = f"import json\nprint(json.dumps({{'n_out': int(({test}).sum())}}))"
    findings = session.turn("How many orders have a price outside the band from 50 to 120?", code)
    assert bool(findings) is found


def test_a_fill_of_the_lists_own_column_expects_unmatched_data_not_entries() -> None:
    """Days joined to a table of positions, the days without one filled with 0: the list is the
    lookup, the days are what is kept (dev ohlc turn 5)."""
    session = session_with()
    assert (
        session.turn(
            "Type the positions.",
            "import pandas as pd\nareas = pd.DataFrame({'region': ['North', 'Mars'], 'w': [1, 2]})",
        )
        == []
    )
    code = (
        "import json\nt = areas.merge(orders, on='region', how='right')\n"
        "t['w'] = t['w'].fillna(0)\n"
        "print(json.dumps({'total': round(float((t['w'] * t['price'].fillna(0)).sum()), 2)}))"
    )
    assert session.turn("Join the weights to every order and total the weighted prices.", code) == []


# -- fresh15's first look: the readings behind its four false repairs -----------------------------


def test_a_stated_number_may_be_kept_in_thousands() -> None:
    from stateguard.policies.checks import code_forms

    assert 5.0 in code_forms(5000.0, "lb") and 2.0 in code_forms(2_000_000.0, "")
    assert code_forms(1500.0, "lb") == [1500.0]


def test_a_number_named_twice_binds_no_loose_bound() -> None:
    from stateguard.verification.bind_loose import named_once

    (req,) = comparisons("events that fewer than 15 stations reported")
    assert named_once("An event that fewer than 15 stations reported is poor.", req)
    assert not named_once("An event that fewer than 15 stations reported is poor; keep at least 15.", req)
    (req,) = comparisons("cars above 5,000 lb")
    assert named_once("The cars above 5,000 lb are limousines.", req)


def test_a_whole_number_bound_written_as_the_next_number_on_its_side() -> None:
    from stateguard.verification.bind import _tested_anywhere

    sem = inspect_code(
        "_row = con.execute('SELECT COUNT(*), COUNT(*) FILTER (WHERE cases > 0) FROM cells WHERE controls >= 20').fetchone()"
    )
    assert _tested_anywhere(sem, ["cases"], 1.0, ">=")  # "at least one case"
    assert not _tested_anywhere(sem, ["cases"], 1.0)
    assert not _tested_anywhere(sem, ["cases"], 1.5, ">=")


def test_a_value_that_is_a_function_word_binds_only_when_quoted() -> None:
    from stateguard.verification.extract import scopes
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(tables={"book": {"code": ColumnInfo(kind="text", values=["none", "light", "heavy"])}})
    assert scopes("for each label, how many cells are risky (0 if none)", vocab, ["book"]) == []
    (req,) = scopes("how many cells are coded 'none'", vocab, ["book"], counted=True)
    assert req.values == ["none"]
