"""The thirteenth round: a stated number the code never holds against the code's one comparison with a
number no text names (re-run as stated), one matcher for the words that name a flag column, and a share
asked of a subgroup with the flag said as its verb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stateguard.verification import (
    repeated_keys,
    rule_windows,
    share_base,
    standing,
    stated_sides,
    unstated_cutoff,
)
from stateguard.verification.extract import flag_scopes
from stateguard.verification.vocabulary import Vocabulary, flag_words, names_flag, token_run
from tests.stateguard.verification.conftest import Session, sandboxed, session_with

COUNT = "import json\nprint(json.dumps({'n': len(orders)}))"


def _vocab(tables: dict[str, dict[str, dict[str, object]]]) -> Vocabulary:
    return Vocabulary.from_probe(json.dumps(tables))


# -- a stated number the code never holds, against a number no text names ------------------------------


def test_the_one_unstated_comparison_is_written_with_the_stated_number() -> None:
    code = "gap = orders['price'] - orders['rating']\nresult = {'n': int((gap < 1).sum())}\nprint(json_dumps_rounded(result, 2))"
    found = unstated_cutoff.changed("how many gaps are less than 2?", ["How many orders?"], code)
    assert found is not None
    assert (found.before, found.after, found.op, found.stated) == ("< 1", "< 2", "<", 2.0)


@pytest.mark.parametrize(
    ("said", "earlier", "code", "why"),
    [
        ("more than 2?", [], "n = int((x > 2).sum())", "the code holds the stated number"),
        ("more than 60?", [], "n = int((x > 0.6).sum())", "a percentage's fraction holds it"),
        ("falls by more than 5%?", [], "n = int((x < -5).sum())", "its sign aside"),
        ("at least 10 and below 3?", [], "n = int(((x >= 8) & (x < 4)).sum())", "two stated numbers missing"),
        ("more than 2?", ["ids run 1 to 200"], "n = int((x > 1).sum())", "an earlier text names 1"),
        ("more than 2?", [], "n = int(((x > 1) & (y > 7)).sum())", "two unstated comparisons"),
        ("more than 2?", [], "n = int((x > 0).sum())", "0 is never read"),
        ("more than 2?", [], "n = int((x > 1.5 * m).sum())", "a multiple is another rule's"),
        (
            "more than 2?",
            [],
            "# keep x > 1 rows\nn = int((x >= 9).sum()) + int((z >= 9).sum())",
            "written twice",
        ),
    ],
)
def test_what_abstains(said: str, earlier: list[str], code: str, why: str) -> None:
    assert unstated_cutoff.changed(said, [*earlier, said], code) is None, why


def test_the_description_counts_only_its_cut_offs() -> None:
    code = "n = int((x > 1).sum())"
    assert unstated_cutoff.changed("more than 2?", ["more than 2?"], code, "ids run 1 to 200") is not None
    assert unstated_cutoff.changed("more than 2?", ["more than 2?"], code, "keep rows above 1") is None


def test_sql_and_pandas_comparison_sites() -> None:
    sql = "con.execute('SELECT COUNT(*) FROM o WHERE rating >= 3 AND price > 10 * 2')"
    assert [t for t, _, _ in unstated_cutoff.sites(sql)] == [">= 3"]
    assert [t for t, _, _ in unstated_cutoff.sites("n = x.gt(4).sum()")] == [".gt(4)"]
    found = unstated_cutoff.changed("at least 5?", [], "n = x.ge(4).sum()")
    assert found is not None and (found.after, found.op) == (".ge(5)", ">=")


@pytest.mark.parametrize(("cut", "flagged"), [("2.5", False), ("3", True), ("5.5", False)])
def test_a_turn_re_run_with_the_stated_number(cut: str, flagged: bool) -> None:
    """3 is said nowhere and changes the answer (the question says 4); 5.5 is said nowhere too, but
    no rating is above it nor above 5 (ratings run 1 to 5), so the turn re-run with 5 reports the
    same answer: no finding."""
    session = session_with()
    assert session.turn("How many orders are there?", COUNT) == []
    code = f"import json\nprint(json.dumps({{'n_top': int((orders['rating'] > {cut}).sum())}}))"
    stated = {"2.5": "2.5", "3": "4", "5.5": "5"}[cut]
    findings = session.turn(f"How many orders are rated more than {stated}?", code)
    assert bool(findings) is flagged
    if flagged:
        assert "4" in findings[0].reason or "4" in findings[0].evidence


def test_a_stated_gap_the_code_tests_at_another_number() -> None:
    session = Session()
    code = (
        "import json\n_gap = orders['price'] - orders['rating'] * 50\n"
        "print(json.dumps({'n_close': int((_gap.abs() < 20).sum())}))"
    )
    assert session.turn("How many orders have a price within less than 40 of fifty times their rating?", code)
    clean = code.replace("< 20", "< 40")
    assert (
        Session().turn("How many orders have a price within less than 40 of fifty times their rating?", clean)
        == []
    )


# -- one matcher for the words naming a flag ----------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "column", "named"),
    [
        ("short survivors", "short_surv", True),
        ("large-handed", "large_hand", True),
        ("under-report", "under", True),
        ("underweight", "under", False),  # six letters past the token: another word
        ("fits", "fit", True),
        ("fitness", "fit", False),  # a short token goes on only by a plural
        ("at risk", "at_risk", True),
        ("risk", "at_risk", False),
    ],
)
def test_the_words_that_name_a_flag(said: str, column: str, named: bool) -> None:
    assert names_flag(said, column) is named
    assert flag_words("") == ""


def test_a_token_run() -> None:
    assert token_run(["n", "frugal", "cars"], ["frugal"]) == [1]
    assert token_run(["n", "non", "frugal"], ["frugal", "cars"]) == []
    assert token_run(["a", "b"], []) == []


def test_a_flag_scope_named_by_longer_words() -> None:
    vocab = _vocab({"people": {"large_hand": {"kind": "text", "values": ["False", "True"]}}})
    found = flag_scopes("What is the mean height of the large-handed students overall?", vocab, ["people"])
    assert [r.columns for r in found] == [["large_hand"]]
    assert flag_scopes("What is the mean hand span of the students?", vocab, ["people"]) == []


# -- a share of a subgroup with the flag said as its verb ---------------------------------------------


def test_a_share_of_the_women_that_under_report() -> None:
    vocab = _vocab(
        {
            "people": {
                "sex": {"kind": "text", "values": ["F", "M"]},
                "under": {"kind": "text", "values": ["False", "True"]},
            }
        }
    )
    found = share_base.subgroup_shares("and what percentage of the women under-report?", vocab, ["people"])
    # the data writes the women as "F": the first letter of the word the lexicon maps "women" to
    assert [(s.flag, s.column, s.value) for s in found] == [("under", "sex", "F")]
    # no flag at the end, or no value of the data in the subgroup: nothing
    assert share_base.subgroup_shares("what percentage of the women smoke?", vocab, ["people"]) == []
    assert share_base.subgroup_shares("what percentage of the runners under-report?", vocab, ["people"]) == []


# -- a reported mapping keyed by values that repeat -------------------------------------------------


SHEET = (
    "sheet = pd.DataFrame({{'label': ['North', 'South', 'East', 'West', 'Polar']}})\n"
    "_per = orders.groupby({keys}).size().rename('n').reset_index()\n"
    "_by = sheet.merge(_per, left_on='label', right_on='region', how='left')\n"
)


@pytest.mark.parametrize(("keys", "flagged"), [("'region'", False), ("['region', 'category']", True)])
def test_a_mapping_keyed_by_a_column_whose_values_repeat(keys: str, flagged: bool) -> None:
    session = session_with()
    code = (
        "import json\n"
        + SHEET.format(keys=keys)
        + "result = {'n_by_label': dict(zip(_by['label'], _by['n'].fillna(0).astype(int)))}\n"
        "print(json.dumps(result))"
    )
    findings = session.turn("How many orders fall under each label of the sheet, 0 where none?", code)
    assert bool(findings) is flagged
    if flagged:
        assert "rows_written_over" in findings[0].evidence


def test_rows_that_repeat_whole_lose_nothing() -> None:
    session = session_with()
    code = (
        "import json\n_codes = orders[['region']].assign(code=orders['region'].str[0])\n"
        "result = {'code_of': dict(zip(_codes['region'], _codes['code']))}\nprint(json.dumps(result))"
    )
    assert session.turn("Give each region's one-letter code.", code) == []


def test_mapping_sites() -> None:
    text = (
        "{r[0]: {'n': r[1]} for r in _rows}, {r.label: r.n for r in by.itertuples() if r.n > 0}, "
        "{k: row.to_dict() for k, row in by_x.iterrows()}, t.set_index('a')['b'].to_dict(), dict(zip(f.index, f['n']))"
    )
    found = {(s.frame, s.key, s.columns) for s in repeated_keys.sites(text)}
    assert found == {
        ("_rows", "0", ()),
        ("by", "label", ()),
        ("by_x", "", ()),
        ("t", "a", ("b",)),
        ("f", "", ("n",)),
    }


# -- the group of a rule's statistic said as "the same X" ------------------------------------------


def test_a_rules_group_said_as_the_same_column() -> None:
    cols = ["county", "span", "district"]
    rule = "crowded when its ratio is at least the median ratio of the districts with the same grade span"
    found = rule_windows.stated_group(rule, cols)
    assert found is not None and found.column == "span"
    both = "the median of the districts with the same span, and of its own county"
    assert rule_windows.stated_group(both, cols) is None  # two groups: abstains


# -- a number stated on one side, tested on the other ------------------------------------------------


@pytest.mark.parametrize(
    ("said", "code", "after"),
    [
        (
            "In how many districts do more than half of the pupils qualify?",
            "n = int((s['meal'] < 50).sum())",
            "> 50",
        ),
        ("How many are 25 or older?", "n = int((s['age'] <= 25).sum())", ">= 25"),
        ("How many rated at least 4?", "n = int((4 > s['rating']).sum())", "4 <"),
        ("How many above 80?", "n = int(s['x'].lt(80).sum())", ".gt(80)"),
    ],
)
def test_the_one_test_of_a_stated_number_on_the_other_side(said: str, code: str, after: str) -> None:
    found = stated_sides.flipped(said, code)
    assert found is not None and found.after == after


@pytest.mark.parametrize(
    ("said", "code", "why"),
    [
        ("How many are over 50?", "n = int((x > 50).sum())", "the stated side"),
        (
            "Patients seen for less than 30 days tell little. Drop them.",
            "k = t[t.days >= 30]",
            "a dropping word",
        ),
        ("How many above 50, and how many at most 50?", "n = int((x < 50).sum())", "both sides stated"),
        ("How many fell by more than 5%?", "n = int((x < -5).sum())", "another sign"),
        ("How many above 50?", "n = int((x < 50).sum()) + int((y > 50).sum())", "two tests of it"),
        ("How many above 50?", "lab = np.where(x < 50, 'low', 'high')", "a line labelling both sides"),
    ],
)
def test_what_keeps_its_side(said: str, code: str, why: str) -> None:
    assert stated_sides.flipped(said, code) is None, why


@pytest.mark.parametrize(("op", "flagged"), [(">", False), ("<", True)])
def test_a_turn_re_run_on_the_stated_side(op: str, flagged: bool) -> None:
    session = session_with()
    code = f"import json\nprint(json.dumps({{'n_high': int((orders['rating'] {op} 3.5).sum())}}))"
    findings = session.turn("How many orders are rated above 3.5?", code)
    assert bool(findings) is flagged


# -- a scope this turn sets, read around on a line that only reads the scope's column ---------------


def test_a_line_reading_the_scope_column_without_testing_it_is_read_around() -> None:
    """`SUM(enrolment)` over the parent reads the scope's column but does not test it (a BETWEEN on
    another column beside it changes nothing): that line reads around the scope."""
    scope = standing.Scope(None, "flagged", "kept", True, columns=("enrolment",))
    cell = (
        'con.execute("CREATE TABLE kept AS SELECT * FROM flagged WHERE enrolment >= 200")\n'
        '_row = con.execute("SELECT COUNT(*), (SELECT SUM(enrolment) FROM flagged), '
        'COUNT(*) FILTER (WHERE spend BETWEEN 5000 AND 6000) FROM kept").fetchone()\n'
    )
    edit = standing.own_edit(scope, [cell])
    assert edit is not None and "(SELECT SUM(enrolment) FROM kept)" in edit[1]
    tested = cell.replace(
        "(SELECT SUM(enrolment) FROM flagged)", "(SELECT COUNT(*) FROM flagged WHERE enrolment < 200)"
    )
    assert standing.own_edit(scope, [tested]) is None


@pytest.mark.parametrize(("frame", "found"), [("reported", False), ("orders", True)])
def test_a_scope_of_recorded_values_kept_with_dropna(frame: str, found: bool) -> None:
    code = (
        "import json\nreported = orders.dropna(subset=['price']).copy()\n"
        f"result = {{'n': len(reported), 'mean_rating': round(float({frame}['rating'].mean()), 3)}}\n"
        "print(json.dumps(result))"
    )
    question = "Going forward, use only the orders with a recorded price; call them `reported`. How many, and their mean rating?"
    assert bool(Session().turn(question, code)) is found


# -- fresh18's first-look false repairs -------------------------------------------------------------


SQL_ORDERS = "import duckdb\ncon = duckdb.connect()\ncon.execute('CREATE TABLE o AS SELECT * FROM orders')"


@pytest.mark.parametrize(
    ("test", "flagged"), [("rating BETWEEN 2 AND 4", False), ("price IS NOT NULL", True)]
)
def test_a_range_counted_inside_a_sql_filter_is_no_missing_filter(
    tmp_path: Path, test: str, flagged: bool
) -> None:
    """ "count those rated between 2 and 4": the code counts them inside `COUNT(*) FILTER (WHERE ...)`,
    where the code model reads no row condition; only a count that never tests the range is wrong."""
    session, ws = sandboxed(tmp_path)
    code = (
        "import json\n"
        f"_row = con.execute('SELECT COUNT(*), COUNT(*) FILTER (WHERE {test}) FROM o').fetchone()\n"
        "print(json.dumps({'n': _row[0], 'n_rated_2_4': _row[1]}))"
    )
    with ws:
        findings = session.turn(
            "How many orders, and how many with a rating between 2 and 4, both ends included?", code
        )
    assert bool(findings) is flagged


BANDS = (
    SQL_ORDERS
    + "\ncon.execute('CREATE TABLE o2 AS SELECT *, CASE WHEN price > 150 THEN 2 ELSE 1 END AS band FROM o')\n"
    "con.execute(\"CREATE TABLE bands AS SELECT * FROM (VALUES (1, 'cheap'), (2, 'dear'), (3, 'luxury')) t(code, label)\")"
)


def test_a_value_scope_is_not_put_on_a_breakdown_by_that_column() -> None:
    """ "for each label of the codebook, how many orders, and how many dear orders are rated at least 4":
    the statement grouped by label reports every label; "dear" scopes the other value (`band = 2`)."""
    session = session_with(BANDS)
    code = (
        "import json\n"
        "_rows = con.execute('SELECT b.label, COUNT(o.order_id) FROM bands b LEFT JOIN o2 o ON o.band = b.code "
        "GROUP BY b.label ORDER BY b.label').fetchall()\n"
        "_n = con.execute('SELECT COUNT(*) FROM o2 WHERE band = 2 AND rating >= 4').fetchone()[0]\n"
        "print(json.dumps({'n_by_label': {r[0]: r[1] for r in _rows}, 'n_dear_rated_4': _n}))"
    )
    question = (
        "For each label of the band codebook, how many orders carry it (0 where none), and how many dear "
        "orders are rated at least 4?"
    )
    assert session.turn(question, code) == []
