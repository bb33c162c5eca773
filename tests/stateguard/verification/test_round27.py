"""Round 27: re-run what the checks already find.

* A replaced SQL rule with string literals (`category = 'toys' AND region = 'North'`) is cut from
  the code with its quotes (`superseded._closed`): the turn, re-run reading the flag, runs and its
  answer is compared; before, the edit left a stray quote and the re-run failed.
* A statistic of a quantity named by its column's own name ("the average nation_rate") is read
  (`extract._AGG` takes words with underscores), and an extreme the code computes where a mean or
  median is stated (`MAX(price)` for "the average price") is re-run as stated (`bind._EXTREMES`).
* A rule's group said by the very name of a numbered column ("the mean score of the pupil's own
  class" for `class`, numbered 180 to 27,380) is read (`rule_windows.groupable(ids=True)`), and the
  column's name beats another column's description that holds the word ("combined-grade class").
* The distance from a statistic a relative rule states ("one standard deviation above the mean",
  "two years younger than the median age") against the code's one comparison with something plus or
  minus a number (`rule_offsets.py`, switch `semantic.rule_offsets`): re-run with the stated distance.

After fresh37's first look (its two false repairs, both older readings):
* A value named beside a count of its column's distinct values ("how many distinct states (DC counts
  as one)", `COUNT(DISTINCT state)`) is one of the values counted, not a scope
  (`RequirementBinder._counts_values_of`).
* A subgroup said as a negated value ("the non-white respondents") is no (column, value) subgroup: the
  share reading abstains (`share_base._group`); before, the plural noun bound a 0/1 column whose
  description holds it ("vote (1 if the respondent voted)").
* A turn that makes the child of an earlier standing scope again (a rule restored in the parent, the
  child rebuilt) and then reads the parent for a value the question asks of the child's rows ("what
  fraction of the adults is that") is re-run reading the child (`standing.remade_read_around`); a
  restoring word does not count as bringing rows back when the code rebuilds the child with the
  scope's own test. "everything after this point uses only ..." states a standing scope.
* A share asked of a subgroup said as a compound of a value and its column ("the thick-solder runs")
  or by a true/false column's adjective ("the southern rows" for `south`), reported in a field whose
  flag word is plural (`pct_south_strongholds`) beside a statistic of a quantity called a share
  (`median_share_strongholds`), is read (`share_base`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_offsets, rule_windows, share_base
from stateguard.verification.extract import aggregations
from stateguard.verification.superseded import KIND, FlagHistory
from stateguard.verification.verifier import SemanticConfig
from stateguard.verification.vocabulary import Vocabulary
from tests.stateguard.verification.conftest import sandboxed, session_with

DEFINE = (
    "import json\ncon.execute(\"CREATE OR REPLACE TABLE oc AS SELECT *, category = 'toys' AND region = 'North' "
    'AS northern_toy FROM o")\n'
    "print(json.dumps({'n': con.execute('SELECT count_if(northern_toy) FROM oc').fetchone()[0]}))"
)
WIDEN = (
    "import json\ncon.execute(\"UPDATE oc SET northern_toy = category = 'toys' AND (region = 'North' OR price >= 200)\")\n"
    "print(json.dumps({'n': con.execute('SELECT count_if(northern_toy) FROM oc').fetchone()[0]}))"
)
OLD_RULE_READ = (
    "import json\nm = con.execute(\"\"\"\nSELECT avg(rating)\nFROM oc\nWHERE category = 'toys' AND region = 'North'\n"
    '""").fetchone()[0]\nprint(json.dumps({"mean_rating": round(m, 3)}))'
)
USE = "What is the mean rating of the northern-toy orders as currently defined?"


def test_a_replaced_sql_rule_with_string_literals_is_cut_with_its_quotes() -> None:
    history = FlagHistory()
    history.record(2, DEFINE, inspect_code(DEFINE))
    history.record(3, WIDEN, inspect_code(WIDEN))
    found = history.restated(USE, OLD_RULE_READ, inspect_code(OLD_RULE_READ))
    assert [(f.before, f.after) for f in found] == [
        ("category = 'toys' AND region = 'North'", "northern_toy")
    ]


def test_the_turn_that_writes_out_the_replaced_sql_rule_is_re_run_and_found(tmp_path: Path) -> None:
    session, ws = sandboxed(tmp_path)
    try:
        assert session.turn("Flag the northern-toy orders and count them.", DEFINE) == []
        widen = "The desk widens the northern-toy flag; recode it as they ask and count the orders again."
        assert session.turn(widen, WIDEN) == []
        findings = session.turn(USE, OLD_RULE_READ)
        assert len([f for f in findings if KIND in f.evidence]) == 1
        assert not any("could not be re-run" in n for n in session.verifier.last.notes)
        reading = (
            "import json\nm = con.execute('SELECT avg(rating) FROM oc WHERE northern_toy').fetchone()[0]\n"
        )
        assert session.turn(USE, reading + 'print(json.dumps({"mean_rating": round(m, 3)}))') == []
    finally:
        ws.close()


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("what is the average nation_rate of those cases", [("mean", ["nation_rate"])]),
        ("How many are they, what is their mean nation_rate, and which judge", [("mean", ["nation_rate"])]),
        ("the median age", [("median", ["age"])]),
        ("the mean of `price_usd`", []),  # a name in backticks is the turn's own field
    ],
)
def test_a_statistic_of_a_column_named_as_written(clause: str, expected: list[tuple[str, list[str]]]) -> None:
    assert [(r.function, r.subject) for r in aggregations(clause, [])] == expected


QUESTION = "How many toy orders are there, and what is the average price of those orders?"


@pytest.mark.parametrize(("statistic", "found"), [("max", True), ("min", True), ("avg", False)])
def test_an_extreme_computed_where_a_mean_is_stated_is_re_run_as_stated(
    tmp_path: Path, statistic: str, found: bool
) -> None:
    session, ws = sandboxed(tmp_path)
    code = (
        "import json\n"
        f"n, p = con.execute(\"SELECT count(*), {statistic}(price) FROM o WHERE category = 'toys'\").fetchone()\n"
        "print(json.dumps({'n_toys': n, 'mean_price': round(p, 2)}))"
    )
    try:
        findings = session.turn(QUESTION, code)
    finally:
        ws.close()
    assert bool([f for f in findings if "different statistic than the mean" in f.reason]) is found


def test_an_extreme_stays_when_the_code_also_computes_the_stated_mean() -> None:
    session = session_with()
    code = (
        "import json\ntoys = orders[orders['category'] == 'toys']\n"
        "print(json.dumps({'n_toys': len(toys), 'mean_price': round(float(toys['price'].mean()), 2), "
        "'max_price': float(toys['price'].max())}))"
    )
    assert session.turn(QUESTION, code) == []


RULE = "a top reader scores at least one standard deviation above the mean score of the pupil's own class"


@pytest.mark.parametrize(
    ("rule", "ids", "described", "expected"),
    [
        (RULE, ["class"], {"comb": ("combined-grade", "class")}, "class"),
        (RULE, [], {}, None),  # not a column that can name a group: no reading
        # a numbered column named only by a part of its name is no group
        ("above the mean score of the pupil's own class", ["class_no"], {}, None),
        ("above the mean score of the pupil's own class", ["class_no"], {"class_no": ("class",)}, None),
        # bands of a numbered measure: no group (the clean run of scotvote's turn 7)
        ("3 points above the average Yes share of its council-tax band", ["council_tax"], {}, None),
    ],
)
def test_a_rule_grouped_by_a_numbered_column_said_by_its_name(
    rule: str, ids: list[str], described: dict[str, tuple[str, ...]], expected: str | None
) -> None:
    stated = rule_windows.stated_group(rule, ["gs", "comb"], described, ["lang"], {}, [], ids)
    assert (stated.column if stated else None) == expected


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            "a top reader is at least one standard deviation above the mean score of its class",
            (1.0, True, True),
        ),
        ("stood a standard deviation or more above their class mean", (1.0, True, True)),
        (
            "a mother is young when at least two years younger than the median age of her group",
            (2.0, False, False),
        ),
        ("two or more years below their schooling group's median age", (2.0, False, False)),
        ("1.5 SD above the average", (1.5, True, True)),
        ("at least twice the median ozone of its month", None),  # a multiple (`rule_multiples.py`)
        ("a lot more than the mean", None),  # no number said
        ("two years above the median, or three years below the mean", None),  # two distances: abstain
    ],
)
def test_the_distance_a_rule_states(rule: str, expected: tuple[float, bool, bool] | None) -> None:
    said = rule_offsets.stated(rule)
    assert (None if said is None else (said.distance, said.up, said.sd)) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "f = x >= AVG(x) OVER (PARTITION BY g) + 1.5 * STDDEV_SAMP(x) OVER (PARTITION BY g)",
            [(1.5, True, True)],
        ),
        ('kids["young"] = kids["age"] <= med - 3', [(3.0, False, False)]),
        ('a = df[df["x"] >= -2]', []),  # a negative bound, no distance from anything
        ("n = len(df) - 1\nb = df[df['x'] > 5]", []),  # arithmetic outside a comparison
    ],
)
def test_the_distance_the_code_applies(code: str, expected: list[tuple[float, bool, bool]]) -> None:
    assert [(s.distance, s.up, s.times) for s in rule_offsets.sites(code)] == expected


OFFSET_RULE = "An order is pricey when its price is at least 20 above the median price of its own category."


def _pricey(distance: int) -> str:
    return (
        "import json\nmed = orders.groupby('category')['price'].transform('median')\n"
        f"orders['pricey'] = orders['price'] >= med + {distance}\n"
        "print(json.dumps({'n_pricey': int(orders['pricey'].sum())}))"
    )


@pytest.mark.parametrize(
    ("distance", "switch", "found"), [(30, True, True), (20, True, False), (30, False, False)]
)
def test_a_rule_applied_at_another_distance_is_found_when_re_run_as_stated(
    distance: int, switch: bool, found: bool
) -> None:
    session = session_with(config=SemanticConfig(rule_offsets=switch))
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    findings = session.turn(
        "Flag the pricey orders and count them.", _pricey(distance), own_context=OFFSET_RULE
    )
    assert bool([f for f in findings if "distance above" in f.reason]) is found


@pytest.mark.parametrize(
    ("question", "column"),
    [
        (
            "How many orders are there, and what was the longest mean wait?",
            "wait",
        ),  # an extreme of it is asked
        (
            "How many orders are there, and how far does the mean wait go?",
            "meanwait",
        ),  # the column's own name
    ],
)
def test_an_extreme_of_a_statistic_the_words_rank_or_a_column_names_is_left_alone(
    question: str, column: str
) -> None:
    session = session_with(f"orders['{column}'] = orders['rating'] * 3")
    code = (
        f"import json\nresult = {{'n': len(orders), 'top_mean_wait': float(orders['{column}'].max())}}\n"
        "print(json.dumps(result))"
    )
    context = f"Columns: order_id, region, {column} (mean wait in days), price."
    assert [
        f for f in session.turn(question, code, context=context) if "different statistic" in f.reason
    ] == []


@pytest.mark.parametrize(
    ("cell", "found"),
    [
        ("n_regions = int(orders['region'].nunique())", False),  # the distinct values counted: North is one
        ("n_regions = int((orders['region'] == orders['region']).sum())", True),  # no distinct count: a scope
    ],
)
def test_a_value_named_beside_a_count_of_its_columns_distinct_values_is_one_of_them(
    cell: str, found: bool
) -> None:
    session = session_with()
    question = "How many orders are there, and how many distinct regions (North counts as one)?"
    code = f"import json\n{cell}\nprint(json.dumps({{'n_orders': len(orders), 'n_regions': n_regions}}))"
    findings = session.turn(question, code)
    assert bool([f for f in findings if "filter on region" in f.reason]) is found


def test_a_share_of_a_negated_value_is_no_subgroup() -> None:
    vocab = Vocabulary.from_probe(
        json.dumps(
            {
                "nes": {
                    "race": {"kind": "text", "values": ["others", "white"]},
                    "vote": {"kind": "num", "low": 0, "high": 1},
                    "low_income": {"kind": "text", "values": ["False", "True"]},
                }
            }
        )
    ).with_descriptions("Columns: race, vote (1 if the respondent voted, 0 if not), income.")
    said = "what percentage of the {} voters are low-income?"
    assert (
        share_base.subgroup_shares(
            "what percentage of the non-white respondents are low-income?", vocab, ["nes"]
        )
        == []
    )
    found = share_base.subgroup_shares(said.format("white"), vocab, ["nes"])
    assert [(s.flag, s.column, s.value) for s in found] == [("low_income", "race", "white")]


SCOPE_TURN = (
    "Cheap orders distort the ratings, so everything after this point uses only orders priced at 50 or more; "
    "keep them as `kept`. How many are there?"
)
SCOPE_CODE = (
    "import json\nkept = orders[orders['price'] >= 50].copy()\nprint(json.dumps({'n_kept': len(kept)}))"
)


@pytest.mark.parametrize(("read", "found"), [("orders", True), ("kept", False)])
def test_a_child_made_again_then_read_around_is_re_run_reading_the_child(read: str, found: bool) -> None:
    session = session_with()
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    assert session.turn(SCOPE_TURN, SCOPE_CODE) == []
    question = (
        "Restore the rating-4 rule for `good` in `orders` and rebuild `kept`. How many kept orders are good, "
        "and what fraction of the kept orders is that?"
    )
    code = (
        "import json\norders['good'] = orders['rating'] >= 4\nkept = orders[orders['price'] >= 50].copy()\n"
        f"result = {{'n_good': int(kept['good'].sum()), 'frac_good': float({read}['good'].mean())}}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn(question, code)
    assert bool([f for f in findings if "filtered out for the rest of the analysis" in f.reason]) is found


def _runs_vocab() -> Vocabulary:
    return Vocabulary.from_probe(
        json.dumps(
            {
                "graded": {
                    "Solder": {"kind": "text", "values": ["Thick", "Thin"]},
                    "south": {"kind": "text", "values": ["False", "True"]},
                    "poor": {"kind": "text", "values": ["False", "True"]},
                    "skips": {"kind": "num", "low": 0, "high": 48},
                }
            }
        )
    )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what percentage of the thick-solder runs are poor?", [("poor", "Solder", "Thick")]),
        ("what percentage of the southern runs are poor?", [("poor", "south", "True")]),
        ("what percentage of the thick-skips runs are poor?", []),  # `skips` holds no value "thick"
        ("what percentage of the runs are poor?", []),  # no subgroup
    ],
)
def test_a_subgroup_said_by_a_value_and_its_column_or_a_true_false_columns_adjective(
    question: str, expected: list[tuple[str, str, str]]
) -> None:
    found = share_base.subgroup_shares(question, _runs_vocab(), ["graded"])
    assert [(s.flag, s.column, s.value) for s in found] == expected


def test_the_share_field_of_a_plural_flag_beside_a_statistic_of_a_share() -> None:
    share = share_base.SubgroupShare("stronghold", "south", "True", "the southern rows are strongholds")
    fields = ["n_strongholds", "median_share_strongholds", "pct_south_strongholds"]
    assert share_base.share_field(fields, share) == "pct_south_strongholds"
