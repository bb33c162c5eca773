"""The sixteenth round: a SQL table the turn rebuilt from itself re-run as its first run read it, "N
percent of the median" as a multiple, ranges in words and with a unit, a row index is no number of
the code, and postfix comparatives such as "or faster"."""

from __future__ import annotations

import contextlib
import io
import json

import duckdb
import pytest

from stateguard.verification import probes, rule_multiples, unstated_cutoff
from stateguard.verification.extract import scopes
from stateguard.verification.vocabulary import Vocabulary
from tests.stateguard.verification.conftest import session_with

# -- the answer gate on a table rebuilt from itself ----------------------------------------------------

PRICES = "CREATE TABLE pcs AS SELECT * FROM (VALUES (1, 2500), (2, 3500), (3, 3000), (4, 2000)) v(lid, price)"
CELL = (
    'con.execute("CREATE OR REPLACE TABLE pcs AS SELECT *, price <= 3000 AS high_end FROM pcs")\n'
    "import json\n"
    'print(json.dumps({"n": con.execute("SELECT COUNT(*) FILTER (WHERE high_end) FROM pcs").fetchone()[0]}))\n'
)


def _gate(cell: str, before: str, after: str) -> tuple[dict[str, int], list[str]]:
    """Run the turn, then the answer probe in the namespace it left: the re-run's answer and the
    table's columns afterwards."""
    space: dict[str, object] = {"con": duckdb.connect()}
    space["con"].execute(PRICES)  # type: ignore[attr-defined]
    with contextlib.redirect_stdout(io.StringIO()):
        exec(cell, space)  # noqa: S102 - the turn itself
    out = io.StringIO()
    program = probes.answer_probe([cell], probes.SpanEdit(kind="text", before=before, after=after), "con")
    with contextlib.redirect_stdout(out):
        exec(program, space)  # noqa: S102 - the probe program, as the sandbox runs it
    applied, printed = probes.parse_answer(out.getvalue())
    assert applied == 1
    columns = [d[0] for d in space["con"].execute("SELECT * FROM pcs LIMIT 0").description]  # type: ignore[attr-defined]
    return json.loads(printed.strip().splitlines()[-1]), columns


def test_a_table_rebuilt_from_itself_is_re_run_on_its_first_input() -> None:
    answer, columns = _gate(CELL, "<= 3000", ">= 3000")
    # the first run left `high_end` in pcs; read as is, the re-run would add `high_end_1` and count 3
    assert answer == {"n": 2}
    assert columns == ["lid", "price", "high_end"]


def test_a_table_rebuilt_from_itself_with_a_filter_is_left_alone() -> None:
    cell = CELL.replace('FROM pcs")', 'FROM pcs WHERE price > 0")')
    _, columns = _gate(cell, "<= 3000", ">= 3000")
    assert columns == ["lid", "price", "high_end", "high_end_1"]  # not a plain copy: run as written


# -- numbers said otherwise ------------------------------------------------------------------------------


def test_a_postfix_comparative_of_speed() -> None:
    assert unstated_cutoff.bounds("How many run at 66 MHz or faster?") == [
        (66.0, False, ">=", "66 MHz or faster")
    ]
    assert unstated_cutoff.bounds("machines at 33 MHz or slower")[0][2] == "<="


def test_a_percentage_of_the_median_is_a_multiple() -> None:
    rule = "a patient is frail when the score is below 85 percent of the median score of the same cell type"
    said = rule_multiples.stated(rule)
    assert said is not None and (said.multiple, said.op) == (0.85, "<")
    found = rule_multiples.changed(rule, "x = karno < 0.75 * MEDIAN(karno) OVER (PARTITION BY cell)")
    assert found is not None and found.after == "karno < 0.85 *"
    assert rule_multiples.changed(rule, "x = karno < 0.85 * MEDIAN(karno) OVER (PARTITION BY cell)") is None


@pytest.mark.parametrize(
    ("said", "ends"),
    [
        ("count the women with two to five pregnancies, inclusive", (2.0, 5.0)),
        ("the pupils aged 5 to 7 years, both ends included", (5.0, 7.0)),
        ("a hard drive somewhere between 500 and 1,000 MB, both limits included", (500.0, 1000.0)),
        ("the listings from 3 to 5 inclusive", (3.0, 5.0)),
    ],
)
def test_range_ends_in_words_and_with_a_unit(said: str, ends: tuple[float, float]) -> None:
    assert tuple(x for x, *_ in unstated_cutoff.bounds(said)) == ends


def test_a_range_of_years_alone_is_still_no_bound() -> None:
    assert unstated_cutoff.bounds("from 1990 to 2000 the share rose") == []


def test_a_row_index_is_no_number_of_the_code() -> None:
    code = (
        '_row = con.execute("SELECT COUNT(*), COUNT(*) FILTER (WHERE hd BETWEEN 500 AND 1200) FROM t").fetchone()\n'
        'result = {"n": _row[0], "n_hd": _row[1]}'
    )
    assert 1.0 not in unstated_cutoff.numbers_of(code)
    said = "count the machines whose hard drive is between 500 and 1,000 MB"
    found = unstated_cutoff.changed(said, [said], code)
    # before, `_row[1]` held the stated 1,000 "in thousands" and hid the moved end
    assert found is not None and found.after == "BETWEEN 500 AND 1000"


# -- after fresh21's first look: the readings behind its false repairs ----------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "Split `flagged` by the applicant's race as the file records it (black or not) into `race_summary`.",
        "Compare black applicants against the rest.",
        "the share among black vs. the rest",
    ],
)
def test_a_value_against_the_rest_is_a_split_not_a_scope(question: str) -> None:
    vocab = Vocabulary.from_probe(
        json.dumps(
            {
                "t": {
                    "race": {"kind": "text", "values": ["black", "not black"]},
                    "n": {"kind": "num", "low": 1, "high": 9},
                }
            }
        )
    )
    assert scopes(question, vocab, ["t"]) == []
    assert scopes("How many black applicants were denied?", vocab, ["t"])[0].values == ["black"]  # a scope


def test_keeping_every_entry_named_by_the_join_key_of_the_data_side() -> None:
    session = session_with(
        "book = pd.DataFrame([('North', 'N'), ('South', 'S'), ('East', 'E'), ('West', 'W'), ('Polar', 'P')],"
        " columns=['code', 'name'])"
    )
    code = (
        "import json\n"
        "per_region = orders.groupby('region').size().rename('n').reset_index()\n"
        "merged = book.merge(per_region, left_on='code', right_on='region', how='left')\n"
        "print(json.dumps({'n_unused': int(merged['n'].isna().sum())}))\n"
    )
    question = "Merge in, per region, the number of orders, keeping every region. How many codes are unused?"
    # "region" is the data side's join key, not that side: the codebook's left join keeps every region
    assert session.turn(question, code) == []


def test_a_noun_naming_a_key_of_another_join_of_the_span_names_no_side() -> None:
    session = session_with(
        "roster = pd.DataFrame({'name': ['a', 'b', 'c', 'd', 'e'], 'area': ['x', 'x', 'y', 'z', 'w']})",
        "cm = pd.DataFrame({'name': ['a', 'b', 'c', 'd', 'e'], 'busy': [True, True, False, True, False]})",
    )
    code = (
        "import json\n"
        "_n = cm[cm['busy']].merge(roster, on='name').groupby('area').size().rename('n_busy').reset_index()\n"
        "_per_area = roster[['area']].drop_duplicates().merge(_n, on='area', how='left').fillna({'n_busy': 0})\n"
        "print(json.dumps({'n_areas_without_busy': int((_per_area['n_busy'] == 0).sum())}))\n"
    )
    # "area" is the second join's key: the first join's roster side is not the areas' list
    assert session.turn("How many roster areas have no busy committee?", code) == []
