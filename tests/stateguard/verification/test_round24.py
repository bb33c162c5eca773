"""Round 24: a count of a part of the rows counted before, said by repeating the first count's words
("how many acclaimed budgeted films are comedies") and held to a first count per group of a listed
codebook; a share of a subgroup whose flag the question says as a verb of its own ("qualify") and
whose subgroup is said with a tying word or initials; a stated range tested inside a conditional
count; a bound's quantity said by the words of a column's description; "older" as a comparison, not
a version."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateguard.verification import counted_rows, share_base, standing
from stateguard.verification.bind import _counted_in_aggregate, aggregate_test_as_stated
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, Session, sandboxed, session_with


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Show for every label of the list how many budgeted films are acclaimed under the current rule, 0 "
            "for a label without any, and how many acclaimed budgeted films are comedies.",
            True,
        ),
        (
            "Just show it: the number of metropolitan high scorers (current definition) in each wave of the "
            "list, zero for waves with none, and how many metropolitan high scorers lived in the South.",
            True,
        ),
        (
            "Show per origin on the list how many rated models are powerful under the current rule (zero "
            "where none), and how many of the powerful rated models are vans.",
            True,
        ),
        # fewer words than the first count's: all budgeted films, not the acclaimed ones
        (
            "Show for every label the number of budgeted films that are acclaimed, and how many budgeted "
            "films are comedies.",
            False,
        ),
        # one plain noun is no description of the counted rows
        ("Show the number of films per label, and how many films are comedies.", False),
        # the same words and nothing more: no part of them is counted
        ("Show the number of scored tastings per oil, and how many scored tastings.", False),
    ],
)
def test_a_count_of_a_part_said_by_repeating_the_first_count_s_words(question: str, expected: bool) -> None:
    assert counted_rows.count_of_those(question) is expected


LABELLED = """
import json
counts = {frame}[{frame}["dear"]]["region"].value_counts().rename("k").reset_index()
book = pd.DataFrame({{"region": ["North", "South", "Mars"], "label": ["north", "south", "nowhere"]}})
shown = pd.merge(book, counts, on="region", how="left")
result = {{"n_dear_by_label": dict(zip(shown["label"], shown["k"].fillna(0).astype(int))),
          "n_dear_toys": int(({second}["dear"] & {second}["category"].eq("toys")).sum())}}
print(json.dumps(result))
"""


@pytest.mark.parametrize(("second", "caught"), [("orders", True), ("rated", False)])
def test_a_second_count_over_the_parent_of_a_per_label_count_s_rows_is_found(
    second: str, caught: bool
) -> None:
    session = session_with(
        "orders['dear'] = orders['price'] > 150",
        "rated = orders[orders['rating'] >= 2.5].copy()",
    )
    question = (
        "For each region on the list, the number of dear rated orders (0 where none), and how many dear "
        "rated orders are toys."
    )
    findings = session.turn(question, LABELLED.format(frame="rated", second=second))
    # the list leaves out East and West: the first count is held to the group sizes, not to the number
    # of the rows, and is still read
    assert bool(findings) is caught
    if caught:
        assert "n_dear_toys" in findings[0].reason


def _vocab() -> Vocabulary:
    return Vocabulary(
        tables={
            "lines": {
                "lg": ColumnInfo(kind="text", values=["AL", "NL"]),
                "hr": ColumnInfo(kind="num", low=0, high=70),
                "full_time": ColumnInfo(kind="other", values=["False", "True"]),
            },
            "fam": {
                "sex": ColumnInfo(kind="text", values=["man", "woman"]),
                "region": ColumnInfo(kind="text", values=["north", "south"]),
                "year": ColumnInfo(kind="num", low=1980, high=1990),
                "heavy": ColumnInfo(kind="other", values=["False", "True"]),
            },
        }
    )


@pytest.mark.parametrize(
    ("question", "fields", "expected"),
    [
        (
            "How many lines are full-time, and what per cent of the American League lines qualify?",
            ["n_full_time", "pct_al_full_time"],
            ("full_time", "lg", "AL"),
        ),
        (
            "How many are heavy, and what percentage of the woman-headed households qualify?",
            ["n_heavy", "pct_woman_heavy"],
            ("heavy", "sex", "woman"),
        ),
        (
            "What share of the families living in the south, in per cent, are married to one?",
            ["pct_south_heavy"],
            ("heavy", "region", "south"),
        ),
        (
            "What share, in percent, of the 1986 rows carries the tag?",
            ["pct_1986_heavy"],
            ("heavy", None, 1986.0),
        ),
        # the verb names no flag and no share field names one: no reading
        ("What percentage of the woman-headed households qualify?", ["pct_woman"], None),
        # a word the parse cannot place ("rural") abstains
        ("What percentage of the rural woman-headed households qualify?", ["pct_woman_heavy"], None),
    ],
)
def test_a_subgroup_share_whose_flag_is_said_as_a_verb_of_its_own(
    question: str, fields: list[str], expected: tuple[str, str | None, object] | None
) -> None:
    vocab = _vocab()
    tables = ["lines"] if "lines" in question or "League" in question else ["fam"]
    found = share_base.subgroup_shares(question, vocab, tables, fields)
    assert [(s.flag, s.column, s.value) for s in found] == ([expected] if expected else [])


SHARE = """
import json
con.execute("CREATE OR REPLACE TABLE d AS SELECT *, price > 150 AS dear FROM o")
n = con.execute("SELECT count_if(dear) FROM d").fetchone()[0]
pct = con.execute("SELECT 100.0 * count_if(dear) / count(*) FROM d{where}").fetchone()[0]
result = {{"n_dear": n, "pct_north_dear": round(pct, 2)}}
print(json.dumps(result))
"""


@pytest.mark.parametrize(("where", "caught"), [("", True), (" WHERE region = 'North'", False)])
def test_a_share_of_the_north_based_orders_taken_over_every_order_is_found(where: str, caught: bool) -> None:
    session = session_with(DUCKDB_ORDERS)
    question = (
        "An order is dear when its price tops 150: keep it as a boolean `dear` in a table `d` built from `o`. "
        "How many orders are dear, and what percentage of the North-based orders qualify?"
    )
    findings = session.turn(question, SHARE.format(where=where))
    assert bool(findings) is caught


RANGE = Requirement(kind=Kind.COMPARISON, text="between 3 and 6", op=">=", value=3.0, upper=6.0)
SHARE_RANGE = Requirement(
    kind=Kind.COMPARISON, text="between 30% and 45%", op=">=", value=30.0, upper=45.0, percent=True
)


@pytest.mark.parametrize(
    ("sql", "req", "stated"),
    [
        ("SELECT count_if(V3 >= 3 AND V3 < 6) FROM t", RANGE, "SELECT count_if(V3 BETWEEN 3 AND 6) FROM t"),
        (
            "SELECT count(*) FILTER (WHERE V3 BETWEEN 3 AND 5) FROM t",
            RANGE,
            "SELECT count(*) FILTER (WHERE V3 BETWEEN 3 AND 6) FROM t",
        ),
        (
            "SELECT count_if(v2 BETWEEN 0.30 AND 0.40) FROM t",
            SHARE_RANGE,
            "SELECT count_if(v2 BETWEEN 0.3 AND 0.45) FROM t",
        ),
        # as stated, in either form: nothing to re-run
        ("SELECT count_if(V3 >= 3 AND V3 <= 6) FROM t", RANGE, None),
        ("SELECT count_if(V3 BETWEEN 3 AND 6) FROM t", RANGE, None),
        # no stated end at all: another range, not this one moved
        ("SELECT count_if(V3 BETWEEN 7 AND 9) FROM t", RANGE, None),
        # two range tests of the column: which one is meant is open
        ("SELECT count_if(V3 BETWEEN 3 AND 5), count_if(V3 BETWEEN 2 AND 6) FROM t", RANGE, None),
    ],
)
def test_a_stated_range_tested_inside_a_conditional_count(
    sql: str, req: Requirement, stated: str | None
) -> None:
    assert aggregate_test_as_stated(sql, "V3" if "V3" in sql else "v2", req) == stated


def test_a_range_inside_a_conditional_count_is_counted_in_an_aggregate_only_right_inside_it() -> None:
    from types import SimpleNamespace

    inside: object = SimpleNamespace(sql="SELECT count_if(V3 >= 3 AND V3 < 6) FROM t", aggregates=[])
    outside: object = SimpleNamespace(sql="SELECT count(*) FROM t WHERE V3 >= 3 AND V3 < 6", aggregates=[])
    assert _counted_in_aggregate(inside, "V3", RANGE)  # type: ignore[arg-type]
    assert not _counted_in_aggregate(outside, "V3", RANGE)  # type: ignore[arg-type]


def test_a_range_in_a_conditional_count_is_re_run_as_stated_in_a_sandboxed_session(tmp_path: Path) -> None:
    context = "Columns: order_id, region, category, price, rating (the customer's star score, 1 to 5)."
    question = "How many orders are there, and how many have a star score between 2 and 4 inclusive?"

    def run(test: str) -> list[object]:
        session, ws = sandboxed(tmp_path / test.replace(" ", "_").replace("<", "lt").replace("=", "e"))
        code = (
            "import json\n"
            f"n, k = con.execute('SELECT count(*), count_if({test}) FROM o').fetchone()\n"
            "result = {'n_orders': n, 'n_star_2_to_4': k}\nprint(json.dumps(result))"
        )
        try:
            return session.turn(question, code, context=context)
        finally:
            ws.close()

    assert run("rating >= 2 AND rating < 4")
    assert not run("rating >= 2 AND rating <= 4")


@pytest.mark.parametrize(
    ("question", "back"),
    [
        (
            "Looking only at the older children of `fav` under the current definition: their median age?",
            False,
        ),
        ("How many are older than 60?", False),
        ("How many were flagged in the old data?", True),
        ("Count them with the older figures.", True),
        ("Restore the dropped rows and count them.", True),
    ],
)
def test_older_compares_and_points_at_a_version_only_before_what_has_versions(
    question: str, back: bool
) -> None:
    assert standing._brings_back(question) is back


def test_a_standing_scope_read_around_under_a_question_about_the_older_rows() -> None:
    def run(frame: str) -> list[object]:
        session = Session()
        assert not session.turn(
            "From here on only orders with a rating of at least 2 count: keep them as `rated`. How many are there?",
            "rated = orders[orders['rating'] >= 2].copy()\nprint(len(rated))",
        )
        assert not session.turn(
            "Flag the orders with an order number above 200 as `older` on `orders` and refresh `rated`.",
            "orders['older'] = orders['order_id'] > 200\nrated = orders[orders['rating'] >= 2].copy()\n"
            "print(int(rated['older'].sum()))",
        )
        code = (
            f"old = {frame}[{frame}['older']]\nimport json\n"
            "print(json.dumps({'median_price_older': float(old['price'].median())}))"
        )
        return session.turn("Looking only at the older orders of `rated`: their median price?", code)

    assert run("orders")
    assert not run("rated")


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        (
            "what is their median number of weekly hours, their mean years of experience, and how many",
            [("median", ["weekly", "hours"]), ("mean", ["experience"])],
        ),
        ("the mean number of species per site", [("mean", ["species"])]),
        # a measure noun without "of": the noun itself is the subject
        ("their mean years, and how many", [("mean", ["years"])]),
        ("the median price of the cars", [("median", ["price"])]),
    ],
)
def test_a_statistic_of_a_measure_noun_is_of_the_quantity_after_of(
    clause: str, expected: list[tuple[str, list[str]]]
) -> None:
    from stateguard.verification import extract

    assert [(r.function, r.subject) for r in extract.aggregations(clause, [])] == expected


# After fresh34's first look: its three false repairs, each an older reading.


def test_a_number_of_decades_is_named_in_years() -> None:
    from stateguard.verification import unstated_cutoff

    said = "A pair counts as settled once two decades or more have gone by since its last dispute."
    assert 20.0 in unstated_cutoff.mentioned([said])
    assert 36.0 in unstated_cutoff.mentioned(["at least 3 dozen eggs"])
    assert 20.0 not in unstated_cutoff.mentioned(["once two years or more have gone by"])


@pytest.mark.parametrize(
    ("question", "scoped"),
    [
        ("Per label, how many records are there? The sea label has to stay, with 0 records.", False),
        ("Per label, how many records are there? The sea label must remain with no rows.", False),
        ("How many records of the sea label are there?", True),
    ],
)
def test_an_entry_that_has_to_stay_with_nothing_is_no_scope(question: str, scoped: bool) -> None:
    from stateguard.verification import extract

    vocab = Vocabulary(
        tables={"codes": {"boundary": ColumnInfo(kind="text", values=["none", "land", "sea"])}}
    )
    reqs = extract.extract(question, vocab=vocab)
    assert any(r.kind is Kind.SCOPE and "sea" in r.values for r in reqs) is scoped


def test_a_bound_on_the_quantity_a_column_is_the_log_of_binds_no_column() -> None:
    context = (
        "Columns: obs, country, year, lrpmg (log of the real price of motor gasoline), lgaspcar (log of "
        "gasoline use per car)."
    )
    setup = (
        "import duckdb, numpy as np\ncon = duckdb.connect()\n"
        "gas = pd.DataFrame({'obs': range(40), 'lrpmg': np.linspace(-2.5, 1.1, 40), 'lgaspcar': np.linspace(3, 6, 40)})\n"
        "con.execute('CREATE TABLE gas AS SELECT * FROM gas')"
    )
    code = (
        "import json\n"
        "row = con.execute('SELECT count(*), avg(lgaspcar), count(*) FILTER (WHERE lrpmg > 0) FROM gas').fetchone()\n"
        "result = {'n_records': row[0], 'mean_lgaspcar': row[1], 'n_price_log_positive': row[2]}\n"
        "print(json.dumps(result))"
    )
    question = (
        "How many records are there, what is the mean log consumption per car, and how many records have a "
        "positive log real price (a real price above 1)?"
    )
    session = session_with(setup)
    assert not session.turn(question, code, context=context)
    assert "real price > 1" in session.verifier.last.summary()["unverified"]
    # said as the log, the bound binds the column
    said_log = question.replace("(a real price above 1)", "(a log real price above 0.5)")
    session = session_with(setup)
    session.turn(said_log, code, context=context)
    assert any("lrpmg" in note for note in session.verifier.last.summary()["code"])


def test_a_bound_said_in_decades_is_a_bound_in_years() -> None:
    from stateguard.verification import extract

    said = "A pair counts as settled once two decades or more have gone by since its last dispute."
    assert [(r.op, r.value) for r in extract.comparisons(said)] == [(">=", 20.0)]
    assert [(r.op, r.value) for r in extract.comparisons("once two years or more have gone by")] == [
        (">=", 2.0)
    ]
