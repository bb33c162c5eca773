"""Round 28: counts "of those" the words say without a count word, and rule groups said with "had".

* A count of a part of the rows counted before, said as the question's last part after "and" with no
  comma ("Give their number and how many of them ..."), or as "the number of those ..." after a
  comma or "plus", is read (`counted_rows._LAST_PART`). The first part need not say its count with a
  count word ("the long stays per procedure name, 0 for a name without any"): the probe holds the
  first reported value to the size of the rows the code counted, so a value that is no count abstains.
* A per-label count taken as `frame.loc[mask, "key"].value_counts()` counts the rows of
  `frame.loc[mask]` per key (`counted_rows._column_of_rows`); before, its frame was read as
  `frame.loc`, which no probe could take.
* A per-label SQL count of a joined subquery's rows (`LEFT JOIN (SELECT ... WHERE x) u ON ...`,
  `count(u.id)`) counts the subquery's rows, as a joined table's count does.
* A subgroup share whose flag is said back as what the rows did ("what percentage of the Montreal
  applications ended that way") takes the flag the answer's share field names (`share_base`).
* A rule's group said as "the patients who had the same procedure" or "at its own pair of sites" is
  read (`rule_windows._SAME`, `_OWN`).
* A statistic's words end at "but", "yet", "while" and "without" ("their election's median share but
  fall short of 55 percent": the median of share).
"""

from __future__ import annotations

import pytest

from stateguard.verification import counted_rows, rule_offsets, rule_windows, share_base
from stateguard.verification.extract import aggregations, comparisons
from stateguard.verification.sql_edit import set_group_by
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import DUCKDB_ORDERS, session_with


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "What about the dearest orders, 200 and up? Give their number and how many of them are toys.",
            True,
        ),
        (
            "Just show me, nothing to keep: the dear orders per region of the list, 0 for a region without "
            "any, and how many of those dear orders are toys.",
            True,
        ),
        (
            "For the report only: dear orders per region of the sheet, 0 where a region has none, and the "
            "number of those dear orders that are toys.",
            True,
        ),
        ("The dear orders per region of the sheet, plus the number of those that are toys.", True),
        # the first part refers back itself: both counts are of rows named before
        ("Of those orders, the number per region, and how many of those are toys.", False),
        # no reference back: another count, not one of a part
        ("Give the number of dear orders and how many toys orders there are.", False),
        # nothing before the count "of those"
        ("How many of those are toys?", False),
    ],
)
def test_a_count_of_those_said_after_and_or_as_the_number_of_those(question: str, expected: bool) -> None:
    assert counted_rows.count_of_those(question) is expected


LOC_COUNTS = """
import json
counts = rated.loc[rated["dear"], "region"].value_counts().rename("k").reset_index()
book = pd.DataFrame({{"region": ["North", "South", "Mars"], "label": ["north", "south", "nowhere"]}})
shown = pd.merge(book, counts, on="region", how="left")
result = {{"n_dear_by_label": dict(zip(shown["label"], shown["k"].fillna(0).astype(int))),
          "n_dear_toys": int(({second}["dear"] & {second}["category"].eq("toys")).sum())}}
print(json.dumps(result))
"""


JOINED_SUBQUERY = """
import json
book = pd.DataFrame({{"region": ["North", "South", "East", "West", "Mars"],
                     "label": ["north", "south", "east", "west", "nowhere"]}})
con.execute("CREATE OR REPLACE TABLE book AS SELECT * FROM book")
per_label = con.execute('''
SELECT b.label, count(d.order_id)
FROM book b
LEFT JOIN (SELECT order_id, region FROM o WHERE price > 150) d ON d.region = b.region
GROUP BY b.label ORDER BY b.label
''').fetchall()
n_toys = con.execute("SELECT count(*) FROM o WHERE {where}").fetchone()[0]
result = {{"n_dear_by_label": dict(per_label), "n_dear_toys": n_toys}}
print(json.dumps(result))
"""


PER_LABEL_QUESTION = (
    "Just show me, nothing kept: the dear orders per label of the list, 0 for a label without any, and how "
    "many of those dear orders are toys."
)
DEAR_RATED = ("orders['dear'] = orders['price'] > 150", "rated = orders[orders['rating'] >= 2.5].copy()")


@pytest.mark.parametrize(
    ("cells", "code", "caught"),
    [
        # pandas: `rated.loc[rated["dear"], "region"].value_counts()`, the second count over the parent or not
        (DEAR_RATED, LOC_COUNTS.format(second="orders"), True),
        (DEAR_RATED, LOC_COUNTS.format(second="rated"), False),
        # SQL: `count(d.order_id)` of a joined subquery, the second count without the subquery's condition or with it
        ((DUCKDB_ORDERS,), JOINED_SUBQUERY.format(where="category = 'toys'"), True),
        ((DUCKDB_ORDERS,), JOINED_SUBQUERY.format(where="price > 150 AND category = 'toys'"), False),
    ],
)
def test_a_per_label_count_then_a_count_of_those(cells: tuple[str, ...], code: str, caught: bool) -> None:
    session = session_with(*cells)
    findings = session.turn(PER_LABEL_QUESTION, code)
    assert bool(findings) is caught
    if caught:
        assert "n_dear_toys" in findings[0].reason


def _vocab() -> Vocabulary:
    return Vocabulary(
        tables={
            "coded": {
                "location": ColumnInfo(kind="text", values=["Montreal", "Toronto", "Vancouver"]),
                "against_merits": ColumnInfo(kind="other", values=["False", "True"]),
                "late": ColumnInfo(kind="other", values=["False", "True"]),
            }
        }
    )


@pytest.mark.parametrize(
    ("question", "fields", "expected"),
    [
        (
            "How many are there, and what percentage of the Montreal applications ended that way?",
            ["n_against", "pct_montreal_against_merits"],
            ("against_merits", "location", "Montreal"),
        ),
        (
            "What share of the Toronto cases did so?",
            ["pct_toronto_against_merits"],
            ("against_merits", "location", "Toronto"),
        ),
        # two share fields name two flags: the words said back bind neither
        (
            "What share of the Toronto cases did so?",
            ["pct_toronto_against_merits", "pct_toronto_late"],
            None,
        ),
        # "that way" with a word more than a verb before it: no reading
        (
            "What percentage of the Montreal applications sadly ended that way?",
            ["pct_montreal_against_merits"],
            None,
        ),
    ],
)
def test_a_subgroup_share_whose_flag_is_said_back(
    question: str, fields: list[str], expected: tuple[str, str, str] | None
) -> None:
    found = share_base.subgroup_shares(question, _vocab(), ["coded"], fields)
    assert [(s.flag, s.column, s.value) for s in found] == ([expected] if expected else [])


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            "a stay is long when it lasts at least twice the median stay of the patients who had the same "
            "procedure",
            "procedure",
        ),
        ("at least 20% faster than the median speed timed at its own pair of sites", "pair"),
        ("at least twice the median stay of all patients", None),
    ],
)
def test_a_rule_group_said_with_had_the_same_or_at_its_own(rule: str, expected: str | None) -> None:
    stated = rule_windows.stated_group(rule, ["procedure", "pair", "period", "gender"], {}, ["los", "speed"])
    assert (stated.column if stated else None) == expected


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        (
            "which rows were at least 8 points above their election's median share but fall short of 55 percent",
            [("median", ["share"])],
        ),
        ("the mean score yet no higher than 4", [("mean", ["score"])]),
        ("the median income while under 30", [("median", ["income"])]),
    ],
)
def test_a_statistic_s_words_end_where_the_clause_goes_on(
    clause: str, expected: list[tuple[str, list[str]]]
) -> None:
    assert [(r.function, r.subject) for r in aggregations(clause, [])] == expected


def test_an_offset_from_a_correlated_subquery_s_statistic_is_a_site() -> None:
    code = (
        "n = con.execute('''SELECT count(*) FROM modern m\n"
        "WHERE m.share >= (SELECT median(r.share) FROM results r WHERE r.year = m.year) + 6''').fetchone()[0]"
    )
    rule = "which rows were at least 8 points above their election's median share?"
    found = rule_offsets.changed(rule, code)
    assert found is not None
    assert found.after == ">= (SELECT median(r.share) FROM results r WHERE r.year = m.year) + 8"
    # a sign inside the parentheses is still the distance (`(m + 1.5 * sd)`)
    assert [
        (s.distance, s.times) for s in rule_offsets.sites('x = df["a"] >= (df["m"] + 1.5 * df["sd"])')
    ] == [(1.5, True)]


# After fresh38's look: a false repair (an older reading) and a regrouped summary behind an alias.


@pytest.mark.parametrize(
    ("clause", "op"),
    [
        ("how many of them never went above 40 U/L in ALT?", "<="),
        ("how many did not go above 40", "<="),
        ("how many went above 40", ">"),
    ],
)
def test_never_before_a_bound_negates_it(clause: str, op: str) -> None:
    assert [(r.op, r.value) for r in comparisons(clause)] == [(op, 40.0)]


def test_a_summary_regrouped_behind_its_old_key_s_alias_is_grouped_back_by_the_key() -> None:
    sql = "SELECT race AS marital, count(*) AS n FROM young GROUP BY race"
    assert set_group_by(sql, ["marital"]) == "SELECT marital, COUNT(*) AS n FROM young GROUP BY marital"
    # an alias that is no key to group by stays as written
    other = "SELECT race AS grp, count(*) AS n FROM young GROUP BY race"
    assert set_group_by(other, ["marital"]) == "SELECT race AS grp, COUNT(*) AS n FROM young GROUP BY marital"
