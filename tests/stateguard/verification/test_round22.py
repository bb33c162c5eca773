"""The twenty-second round: the rows the code counts, compared in the live workspace. A count "of those"
must count only rows of the count before it; a share's numerator only rows of its denominator."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import counted_rows
from stateguard.verification.verifier import SemanticConfig
from tests.stateguard.verification.conftest import Session


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "How many journals have more than a thousand citations, and of those, how many are published by a society?",
            True,
        ),
        (
            "Some people took three or more medicines. How many? And of those, how many also saw a doctor?",
            True,
        ),
        (
            "Some county-years show a ratio over 1. How many are they, and how many of that number lie in the west?",
            True,
        ),
        (
            "Quite a few wives are on their husband's plan. How many? And how many of that group hold cover of their own?",
            True,
        ),
        (
            "For each label in the codebook, count the working wives married to a high earner, writing 0 where there "
            "are none, and tell me how many of those wives are Black.",
            True,
        ),
        (
            "How many journals have more than a thousand citations, and how many are published by a society?",
            False,
        ),
        ("How many orders are there? How many customers?", False),
        ("Which region has the most orders, and how many of those are toys?", False),
        ("How many of these orders are toys, and how many of these orders cost over 100?", False),
    ],
)
def test_a_count_of_those_is_read_from_the_question_s_shape(question: str, expected: bool) -> None:
    assert counted_rows.count_of_those(question) is expected


@pytest.mark.parametrize(
    ("sql", "position", "expected"),
    [
        (
            "SELECT count(*), count(*) FILTER (WHERE b = 1) FROM t WHERE a > 2",
            1,
            "SELECT * FROM t WHERE a > 2 AND b = 1",
        ),
        ("SELECT count(*), count_if(b = 1) FROM t", 1, "SELECT * FROM t WHERE b = 1"),
        ("SELECT sum(CASE WHEN b = 1 THEN 1 ELSE 0 END) FROM t", 0, "SELECT * FROM t WHERE b = 1"),
        (
            "SELECT count(w.x) FROM c LEFT JOIN t AS w ON w.k = c.k",
            0,
            "SELECT w.* FROM t AS w WHERE NOT w.x IS NULL",
        ),
        ("SELECT count(*), (SELECT count_if(b = 1) FROM u) FROM t", 1, "SELECT * FROM u WHERE b = 1"),
        (
            "WITH s AS (SELECT * FROM t WHERE a > 2) SELECT count(*) FROM s",
            0,
            "WITH s AS (SELECT * FROM t WHERE a > 2) SELECT * FROM s",
        ),
        ("SELECT avg(a) FROM t", 0, None),
        ("SELECT count(DISTINCT a) FROM t", 0, None),
        (
            "SELECT g, count(*) FROM t GROUP BY g",
            1,
            None,
        ),  # grouped: only where the caller adds the groups up
    ],
)
def test_the_rows_a_sql_count_counts(sql: str, position: int, expected: str | None) -> None:
    assert counted_rows.sql_rows(sql, position) == expected


def test_the_rows_of_a_per_group_count_and_of_a_joined_grouped_subquery() -> None:
    grouped = (
        "SELECT c.label, count(w.id) FROM codes c LEFT JOIN t w ON w.k = c.k AND w.flag GROUP BY c.label"
    )
    assert counted_rows.sql_rows(grouped, -1, grouped=True) == (
        "SELECT w.* FROM t AS w WHERE w.flag AND NOT w.id IS NULL"
    )
    code = (
        'per = con.execute("""SELECT e.label, coalesce(h.n, 0) FROM codes e LEFT JOIN '
        '(SELECT k, count(*) AS n FROM t WHERE flag GROUP BY k) h ON h.k = e.k""").fetchall()\n'
        'result = {"by_label": dict(per)}'
    )
    rows = counted_rows.field_rows("dict(per)", inspect_code(code), code)
    assert rows is not None and rows.sql == "SELECT * FROM t WHERE flag"


def test_the_rows_of_a_share_s_numerator_and_denominator() -> None:
    assert counted_rows.sql_share_rows(
        "SELECT round(100.0 * count(*) FILTER (WHERE a AND b) / count(*) FILTER (WHERE b), 2) FROM t", 0
    ) == ("SELECT * FROM t WHERE a AND b", "SELECT * FROM t WHERE b")
    assert (
        counted_rows.sql_share_rows("SELECT 10.0 * count_if(a) / count(*) FROM t", 0) is None
    )  # not a share
    code = "is_toy = orders['category'] == 'toys'\nresult = {'pct': 100 * (orders['rating'] >= 4)[is_toy].sum() / is_toy.sum()}"
    assert counted_rows.share_rows(
        "100 * (orders['rating'] >= 4).sum() / is_toy.sum()", inspect_code(code), code
    ) == (
        counted_rows.Rows(mask="(orders['rating'] >= 4)", frames=("orders",)),
        counted_rows.Rows(mask="is_toy", frames=("orders",)),
    )


def _probe_outcome(snippet: str, namespace: dict[str, object]) -> tuple[bool, dict[str, object]]:
    exec(snippet, namespace)  # noqa: S102 - the probe's own snippet on a test namespace
    return bool(namespace["_v"]), dict(namespace["_o"])  # type: ignore[call-overload]


def test_a_count_of_those_taken_from_the_whole_table_is_found_in_duckdb() -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE jr AS SELECT i AS id, i * 37 % 2000 AS cites, i % 3 = 0 AS society FROM range(300) r(i)"
    )
    for inner, violated in (("cited", False), ("jr", True)):
        code = (
            'n, k = con.execute("""WITH cited AS (SELECT * FROM jr WHERE cites > 1000) '
            f'SELECT count(*), (SELECT count_if(society) FROM {inner}) FROM cited""").fetchone()\n'
            'result = {"answer_type": "scalar", "n_cited": n, "n_society": k}'
        )
        namespace: dict[str, object] = {"con": con}
        exec(code, namespace)  # noqa: S102
        sem = inspect_code(code)
        rows = [counted_rows.field_rows(sem.fields[f], sem, code) for f in ("n_cited", "n_society")]
        assert rows[0] is not None and rows[1] is not None
        snippet = counted_rows.probe("result", "n_cited", "n_society", rows[0], rows[1], "con")
        assert snippet is not None
        found, observed = _probe_outcome(snippet, namespace)
        assert found is violated
        assert observed["reported_values_are_these_sizes"] is True
        assert (observed["inner_rows_outside"] > 0) is violated  # type: ignore[operator]


def test_a_probe_abstains_when_the_reported_values_are_not_the_counts_it_read() -> None:
    frame = pd.DataFrame({"a": range(10), "b": [1, 0] * 5})
    namespace: dict[str, object] = {"f": frame, "result": {"n": 10, "k": 99}}
    snippet = counted_rows.probe(
        "result",
        "n",
        "k",
        counted_rows.Rows(frame="f"),
        counted_rows.Rows(mask="f['b'] == 1", frames=("f",)),
        None,
    )
    assert snippet is not None
    found, observed = _probe_outcome(snippet, namespace)
    assert not found and observed["reported_values_are_these_sizes"] is False


def _share_turn(session: Session, numerator: str) -> list[object]:
    question = (
        "How many orders are rated 4 or more, and what percentage of the toy orders are rated 4 or more?"
    )
    code = (
        "top = orders['rating'] >= 4\nis_toy = orders['category'] == 'toys'\n"
        f"result = {{'n_top': int(top.sum()), 'pct_toys_top': round(100 * {numerator}.sum() / is_toy.sum(), 2)}}\n"
        "import json\nprint(json.dumps(result))"
    )
    return session.turn(question, code)


def test_a_share_whose_numerator_counts_rows_outside_its_denominator_is_found() -> None:
    assert _share_turn(Session(), "top")
    assert not _share_turn(Session(), "(top & is_toy)")


def test_a_count_of_those_counted_on_every_row_is_found_and_the_switch_turns_it_off() -> None:
    question = "How many orders are priced over 200? And of those, how many are rated 4 or more?"
    code = (
        "dear = orders[orders['price'] > 200]\n"
        "result = {{'n_dear': len(dear), 'n_of_those_top': int(({frame}['rating'] >= 4).sum())}}\n"
        "import json\nprint(json.dumps(result))"
    )
    assert Session().turn(question, code.format(frame="orders"))
    assert not Session().turn(question, code.format(frame="dear"))
    off = SemanticConfig(counted_rows=False, carried_scopes=False, subset_counts=False)
    assert not Session(off).turn(question, code.format(frame="orders"))


def test_a_count_of_those_with_no_row_among_the_first_count_s_rows_abstains() -> None:
    # "how many of those (customers) bought toys in the other region": the same keys, other rows
    frame = pd.DataFrame({"id": [1, 2, 3, 1, 2], "year": [1, 1, 1, 2, 2]})
    namespace: dict[str, object] = {"f": frame, "result": {"n": 3, "k": 2}}
    snippet = counted_rows.probe(
        "result",
        "n",
        "k",
        counted_rows.Rows(mask="f['year'] == 1", frames=("f",)),
        counted_rows.Rows(mask="f['year'] == 2", frames=("f",)),
        None,
    )
    assert snippet is not None
    found, observed = _probe_outcome(snippet, namespace)
    assert not found and observed["inner_rows_outside"] == 2


RULE = (
    "Prices differ by category. New rule: an order is premium when its price is at least 1.5 times the "
    "median price of the orders in the same category."
)


def _rule_turns(
    recalled_key: str, first_key: str = "category", config: SemanticConfig | None = None
) -> list[list[object]]:
    session = Session(config)
    opening = "result = {'n_orders': len(orders)}\nimport json\nprint(json.dumps(result))"
    assert not session.turn("How many orders are there?", opening)  # a turn's own context counts from turn 2
    first = (
        f"orders['premium'] = orders['price'] >= 1.5 * orders.groupby('{first_key}')['price'].transform('median')\n"
        "result = {'n_premium': int(orders['premium'].sum())}\nimport json\nprint(json.dumps(result))"
    )
    later = (
        f"med = orders.groupby('{recalled_key}')['price'].median()\n"
        f"hit = orders['price'] >= 1.5 * orders['{recalled_key}'].map(med)\n"
        "result = {'n_hit': int(hit.sum()), 'mean_price': round(float(orders.loc[hit, 'price'].mean()), 2)}\n"
        "import json\nprint(json.dumps(result))"
    )
    found_first = session.turn(
        "Update `premium` under the new rule. How many orders are premium now?", first, own_context=RULE
    )
    found_later = session.turn(
        "Back to the category-relative rule we withdrew: how many orders reach it, and their mean price?",
        later,
    )
    return [found_first, found_later]


def test_a_withdrawn_rule_recalled_later_is_taken_over_the_key_its_first_turn_agreed_on() -> None:
    first, later = _rule_turns("region")
    assert not first and later
    assert _rule_turns("category") == [[], []]
    assert _rule_turns("region", config=SemanticConfig(rule_groups=False)) == [[], []]


def test_a_first_turn_whose_code_took_another_key_than_its_words_records_nothing() -> None:
    first, later = _rule_turns("region", first_key="region")
    assert first  # the first turn's own words catch it
    assert not later  # and nothing was recorded for the later turn to be held to


def test_a_head_taken_from_a_frame_sorted_the_other_way_is_read_by_the_sort() -> None:
    question = "Which five orders have the highest price (highest first, smaller order id first when tied)?"
    code = (
        "ranked = orders.dropna(subset=['price']).sort_values(['price', 'order_id'], ascending=[{first}, True])\n"
        "result = {{'top5': ranked['order_id'].head(5).tolist()}}\nimport json\nprint(json.dumps(result))"
    )
    assert Session().turn(question, code.format(first="True"))
    assert not Session().turn(question, code.format(first="False"))


# After fresh30's look: its three false repairs, all from older readings.


def test_a_statistic_the_code_takes_for_another_stated_one_is_not_swapped() -> None:
    # "average ratings, and the median rating of the customers": the code's mean of `rating` is the first
    # statistic asked; the median is of another quantity (`customer_id`) the words do not bind
    question = "Give the average rating per order, and the median rating of the customers."
    code = (
        "result = {'mean_rating': float(orders['rating'].mean()), "
        "'median_customer': float(orders['customer_id'].median())}\nimport json\nprint(json.dumps(result))"
    )
    assert not Session().turn(question, code)
    swapped = code.replace("orders['rating'].mean()", "orders['rating'].median()")
    assert Session().turn(
        "Give the average rating per order.", swapped.replace(", 'median_customer'", ", 'x'")
    )


def test_the_noun_a_bound_s_number_counts_names_the_quantity() -> None:
    from stateguard.verification.bind import RequirementBinder
    from stateguard.verification.extract import comparisons
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    (bound,) = comparisons("how many of these lines are short of 450 at-bats")
    assert (bound.subject, bound.after, bound.op, bound.value) == (
        ["these", "lines"],
        ["at-bats"],
        "<",
        450.0,
    )
    vocab = Vocabulary(
        tables={
            "lines": {
                "line": ColumnInfo(kind="num"),
                "ab": ColumnInfo(kind="num"),
                "rbi": ColumnInfo(kind="num"),
            }
        }
    ).with_descriptions("Columns: line (row number), ab (at-bats), rbi (runs batted in).")
    code = 'n = con.execute("SELECT count(*) FROM lines WHERE ab < 450").fetchone()[0]'
    binder = RequirementBinder(inspect_code(code), vocab, frozenset())
    assert binder.resolve(bound) == ["ab"]
    assert binder.resolve(bound.model_copy(update={"after": []})) == ["line"]


# Read from fresh30's misses after its look (fresh30 is a seen split from here on).


def test_a_standing_scope_said_from_this_point_outlives_a_column_merged_onto_its_parent() -> None:
    from stateguard.verification import standing

    history = standing.StandingScopes()
    made = 'intact = pos[pos["Stumps"] == 0].copy()'
    history.record(
        6, "From this point, logged sites are out: keep the rest as `intact`.", made, inspect_code(made)
    )
    merged = 'medians = pos.groupby("euc", as_index=False)["stags"].median()\npos = pos.merge(medians, on="euc", how="left")'
    history.record(
        7, "Switch the flag to the new definition and rebuild `intact`.", merged, inspect_code(merged)
    )
    code = 'tab = pos.groupby("euc").agg(n=("site", "count"))'
    [scope] = history.bypassed("Rebuild `tab` for the intact sites only.", code)
    assert (scope.parent, scope.child) == ("pos", "intact")
    history.record(
        8,
        "Read the file again.",
        'pos = pd.read_csv("possum.csv")',
        inspect_code('pos = pd.read_csv("possum.csv")'),
    )
    assert history.bypassed("Rebuild `tab` for the intact sites only.", code) == []  # a parent read anew


def test_a_child_named_like_an_earlier_version_word_in_a_compound_is_no_way_back() -> None:
    from stateguard.verification.standing import _brings_back

    assert not _brings_back("Of the prior-treatment clients who are depressed by the revised rule")
    assert _brings_back("Back to the prior definition: how many are depressed?")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Sites scoring 7 or more: how many are there, and at how many of them were three species seen?",
            True,
        ),
        (
            "Per league, the number of full-time lines, and how many of all those full-time lines have more walks?",
            True,
        ),
    ],
)
def test_more_ways_to_say_a_count_of_those(question: str, expected: bool) -> None:
    assert counted_rows.count_of_those(question) is expected


def test_a_sum_of_a_0_1_column_counts_its_rows_at_1() -> None:
    assert counted_rows.sql_rows("SELECT count(*), sum(censor) FROM uis WHERE ndt >= 5", 1) == (
        "SELECT * FROM uis WHERE ndt >= 5 AND CAST(censor AS INT) = 1"
    )


def test_a_rule_s_side_said_between_commas_after_its_multiple() -> None:
    from stateguard.verification import rule_multiples

    said = rule_multiples.stated(
        "prolific when the count is two and a half times, or more, the median count of its group"
    )
    assert said is not None and (said.multiple, said.op) == (2.5, ">=")


def test_a_two_word_flag_named_noun_first() -> None:
    from stateguard.verification.extract import flag_scopes
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(
        tables={"rated": {"prolific_mentor": ColumnInfo(kind="text", values=["False", "True"])}}
    )
    [scope] = flag_scopes(
        "Take the rated students whose mentor is prolific by the present rule", vocab, ["rated"]
    )
    assert scope.columns == ["prolific_mentor"] and scope.values == ["True"]
    assert flag_scopes("How many students say their mentor is prolific?", vocab, ["rated"]) == []


# After fresh31's look (its first look was with this round's final code): its two false repairs, older readings.


def test_a_rate_said_as_one_in_four_is_a_quarter() -> None:
    from stateguard.verification import unstated_cutoff

    said = "A plot where more than one shoot in four is diseased is badly hit."
    assert unstated_cutoff.stated(said) == {(0.25, False): "more than one shoot in four"}
    assert unstated_cutoff.stated("more than 2 children in 1990") == {(2.0, False): "more than 2"}  # a year
    assert unstated_cutoff.changed(said, [said], 'cn["badly_hit"] = (cn["r"] / cn["n"]) > 0.25') is None


def test_a_value_spelled_like_a_flag_the_turn_reads_is_no_scope() -> None:
    from stateguard.verification.extract import scopes
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(
        tables={
            "cover": {"label": ColumnInfo(kind="text", values=["light", "strong", "great"])},
            "known": {"strong": ColumnInfo(kind="text", values=["False", "True"])},
        }
    )
    clause = "how many magnitude labels have no strong identified-station record"
    assert scopes(clause, vocab, ["cover", "known"]) == []
    assert scopes(clause, vocab, ["cover"])  # without the flag, the value is read


def test_a_rule_s_group_said_in_one_word_that_opens_a_column_s_description() -> None:
    from stateguard.verification import rule_windows
    from stateguard.verification.vocabulary import ColumnInfo, Vocabulary

    vocab = Vocabulary(
        tables={
            "lines": {
                "team": ColumnInfo(kind="text", values=["BOS", "NYA"]),
                "lg": ColumnInfo(kind="text", values=["AL", "NL"]),
                "age": ColumnInfo(kind="num", low=0, high=16),
            }
        }
    ).with_descriptions("Columns: id (player code), year, team, lg (league code), age (years at sampling).")
    assert vocab.column_words["lg"] == ("league", "code")  # a list's parenthesis is its last name's own
    columns = rule_windows.groupable(vocab)
    rule = (
        "full-time when its at-bats are at least 2.5 times the median at-bats of all lines in the same league"
    )
    assert rule_windows.stated_group(rule, columns, vocab.column_words) == rule_windows.Stated(
        "lg", "in the same league"
    )
    same_year = "at least 2.5 times the median at-bats of all lines in the same year"
    assert rule_windows.stated_group(same_year, columns, vocab.column_words) is None  # not `age (years ...)`


def test_a_rule_s_statistic_merged_back_or_grouped_by_a_series_is_read() -> None:
    from stateguard.verification import rule_windows

    stated = rule_windows.Stated("category", "in the same category")
    merged = (
        'medians = orders.groupby("region", as_index=False)["price"].median()\n'
        'orders = orders.merge(medians, on="region", how="left", suffixes=("", "_med"))\n'
        'orders["premium"] = orders["price"] >= 1.5 * orders["price_med"]'
    )
    found = rule_windows.joined_site(merged, inspect_code(merged), stated)
    assert found is not None and found.keys == ["region"]
    assert found.after.startswith("'category'") and found.after.endswith("'category'")
    series = 'med = orders["price"].groupby(orders["region"]).transform("median")\nhit = orders["price"] >= 1.5 * med'
    site = rule_windows.code_site(inspect_code(series), stated)
    assert (
        site is not None and site.fixed == "orders['price'].groupby(orders['category']).transform('median')"
    )


def test_a_group_of_two_keys_said_with_and_is_not_its_first_key() -> None:
    from stateguard.verification import rule_windows

    columns = ["Origin", "model_year", "Cylinders"]
    # read to its end (round 35), the second key's words name `model_year`: both keys
    found = rule_windows.stated_group(
        "the mean weight of the cars of the same origin and model year", columns
    )
    assert found is not None and found.keys == ["Origin", "model_year"]
    # a second key whose words name nothing: no group, not the first key alone
    assert (
        rule_windows.stated_group("the mean weight of the cars of the same origin and paint shade", columns)
        is None
    )
    said = "at least 1.5 times the median weight of the cars of the same origin"
    assert rule_windows.stated_group(said, columns) == rule_windows.Stated("Origin", "of the same origin")
