"""Round 33: readings that did not account for the whole text, made to abstain or read whole.

Written after fresh43's first look (whose three false repairs each came from words read in part):

* an order the clause says outright ("(lowest rate first)") decides a top-k ranking whose own word
  is "most" or "least" grading an adjective ("the four most sheltered towns"), whose side of the
  ranked quantity the words do not say; two other directions that disagree are no reading;
* "a thousand", "a million", "a billion" are numbers a text names (a column in thousands writes "a
  million" as 1000), so a code's 1000 there is no cut-off nobody stated;
* a whole number that ends a name in the code ("over 18" beside `pop18`) names that column, and is
  no stated cut-off the code left out;
* "three times the patient's own baseline level": a multiple of the row's own value is a stated
  multiple, as one of a statistic is;
* a group phrase two or three columns answer to ("in the same area" for a sales area and a product
  area) is no stated group, but where the code's one group statistic takes none of them, each reading
  is re-run, and a finding needs every one of them to change the answer;
* "the same <column>" said outside every group phrase read leaves the rule's group unread, unless it
  leads right into a phrase read ("who sat the same exam in the same school"): then the two are two
  keys, each naming its own column.
"""

from __future__ import annotations

import pytest

from stateguard.verification import rule_multiples, rule_windows, unstated_cutoff
from stateguard.verification.extract import rankings
from tests.stateguard.verification.conftest import Session


def test_an_order_said_outright_beats_the_grade_of_an_adjective() -> None:
    clause = "List the ids of the four most sheltered towns by wind speed (lowest speed first, ties by id)."
    (req,) = rankings(clause)
    assert req.k == 4 and req.descending is False
    # without the parenthesis "most" reads largest first, as before
    (plain,) = rankings("List the ids of the four most sheltered towns by wind speed.")
    assert plain.descending is True
    # a superlative of its own against an outright order that disagrees: no reading
    assert rankings("the three largest towns (smallest first)") == []
    # the two agreeing: read
    (agree,) = rankings("the three largest towns (largest area first)")
    assert agree.k == 3 and agree.descending is True


def test_a_million_said_with_a_is_a_number_the_text_names() -> None:
    assert 1e6 in unstated_cutoff.mentioned(["towns of fewer than a million people"])
    assert 1e3 in unstated_cutoff.mentioned(["more than a thousand voters"])
    assert 1e6 not in unstated_cutoff.mentioned(["towns of fewer than many people"])


def test_a_number_that_ends_a_column_name_is_no_left_out_cut_off() -> None:
    code = 'n = con.execute("SELECT count(*) FROM towns WHERE pop18 < 250").fetchone()[0]'
    said = "Towns with fewer than 250 thousand residents aged 18 or over: how many are there?"
    assert unstated_cutoff.changed(said, [said], code) is None
    # the same words with a column whose name ends in no number: 18 is a stated cut-off the code lacks
    other = 'n = con.execute("SELECT count(*) FROM towns WHERE adults < 250 AND age_min < 3").fetchone()[0]'
    found = unstated_cutoff.changed(said, [said], other)
    assert found is not None and found.stated == 18 and found.before == "< 3"
    # a number after an underscore (`above_40`) is a name's part, not the column's number: still read
    flagged = "above_40 = bool(margin > 30)"
    asked = "Is the margin above 40?"
    hit = unstated_cutoff.changed(asked, [asked], flagged)
    assert hit is not None and hit.after == "> 40"


PUPILS = ["school", "exam", "sex"]


def test_an_unread_the_same_column_leaves_the_group_unread() -> None:
    rule = "a pupil is strong when the score is 5 points above the median of the pupils who sat the same exam"
    # "sat the same exam" alone: no phrase reads it, and nothing else is read either
    assert rule_windows.stated_group(rule, PUPILS, {}) is None
    # one phrase read, another "the same <column>" outside it: the group is not read whole
    two = "the median of the pupils of the same school, counting the same exam twice"
    assert rule_windows.stated_group(two, PUPILS, {}) is None
    # a "the same" naming no column is no group: the phrase read stands
    cut = "the median of the pupils of the same school; keep the same cut-off as before"
    found = rule_windows.stated_group(cut, PUPILS, {})
    assert found is not None and found.keys == ["school"]


def test_a_the_same_phrase_leading_into_a_read_one_is_a_first_key() -> None:
    rule = "5 points above the median of the pupils who sat the same exam in the same school"
    found = rule_windows.stated_group(rule, PUPILS, {})
    assert found is not None and found.keys == ["exam", "school"]
    assert found.text == "the same exam in the same school"
    # its words naming no column: no reading at all
    vague = "5 points above the median of the pupils who sat the same paper in the same school"
    assert rule_windows.stated_group(vague, PUPILS, {}) is None


# -- a group phrase two columns answer to ------------------------------------------------------------

AREAS = (
    "Columns: order_id, region (the sales area of the order), category (the product area it sells in), price."
)
AREA_RULE = "New rule: an order is premium at 1.5 times the median price of the orders in the same area."


def test_a_phrase_two_columns_answer_to_has_two_readings_and_no_stated_group() -> None:
    described = {"region": ("sales", "area", "order"), "category": ("product", "area", "sells")}
    columns = ["region", "category", "customer_id"]
    assert rule_windows.stated_group(AREA_RULE, columns, described, ["price"]) is None
    found = rule_windows.readings(AREA_RULE, columns, described, ["price"])
    assert [r.keys for r in found] == [["category"], ["region"]]
    # a phrase one column answers to, a second group phrase, or a measure's word: no readings
    assert rule_windows.readings(AREA_RULE.replace("area", "sales area"), columns, described, ["price"]) == []
    two = AREA_RULE.replace("same area", "same area and of the same customer_id")
    assert rule_windows.readings(two, columns, described, ["price"]) == []
    assert rule_windows.readings(AREA_RULE.replace("area", "price"), columns, described, ["price"]) == []


@pytest.mark.parametrize(
    ("keys", "caught"), [(["region"], False), (["category"], False), (["customer_id"], True)]
)
def test_a_key_no_reading_of_the_phrase_names_is_re_run_over_every_reading(
    keys: list[str], caught: bool
) -> None:
    session = Session()
    assert not session.turn("How many orders are there?", "n = len(orders)\nprint(n)", context=AREAS)
    question = "Update `premium` under the new rule. How many are premium now?"
    findings = session.turn(question, _premium(keys), context=AREAS, own_context=AREA_RULE)
    assert bool(findings) is caught
    if caught:
        assert "over each category or region" in findings[0].reason


def test_a_reading_that_reports_the_same_answer_drops_the_finding() -> None:
    # the code's key splits the rows as one reading does (a copy of `region` under another name): that
    # reading's re-run reports the same answer, so no finding, though the other reading changes it
    session = Session()
    setup = "orders['zone'] = orders['region']\nprint(len(orders))"
    assert not session.turn("How many orders are there?", setup, context=AREAS)
    question = "Update `premium` under the new rule. How many are premium now?"
    findings = session.turn(question, _premium(["zone"]), context=AREAS, own_context=AREA_RULE)
    assert findings == []
    assert any("reports the same answer" in n for n in session.verifier.last.notes)


def _premium(keys: list[str]) -> str:
    return (
        f"orders['premium'] = orders['price'] >= 1.5 * orders.groupby({keys!r})['price'].transform('median')\n"
        "result = {'n_premium': int(orders['premium'].sum())}\nimport json\nprint(json.dumps(result))"
    )


def test_a_multiple_of_the_row_s_own_value_is_a_stated_multiple() -> None:
    rule = "a signal is now a peak level of at least three times the patient's own baseline level"
    found = rule_multiples.changed(rule, 'con.execute("UPDATE t SET signal = (peak >= 2 * base)")')
    assert found is not None and found.stated.multiple == 3.0 and found.after == "peak >= 3 *"
    # "the patient's baseline level" without "own" (no statistic either): not read, as before
    assert rule_multiples.stated("at least three times the patient's baseline level") is None


# -- after fresh44's look (tuned on it) ---------------------------------------------------------------


def test_a_phrase_a_name_reads_in_part_and_a_description_whole_binds_neither() -> None:
    from stateguard.verification.bind import _outworded

    words = {"lwage": ("natural", "log", "wage")}
    pool = ["wage", "lwage", "ed"]
    # "log wage": `wage` leaves "log" out, `lwage`'s description says both words in a row
    assert _outworded(["log", "wage"], "wage", pool, words)
    # every word named by the column, or no description holding the words: the name stands
    assert not _outworded(["wage"], "wage", pool, words)
    assert not _outworded(["hourly", "wage"], "wage", pool, words)
    # a word the column's own description holds is the column's: "total spending" is `totexp (total
    # yearly spending)`'s, though `wfood (share of total spending ...)` says the two words in a row
    budget = {"totexp": ("total", "yearly", "spending"), "wfood": ("share", "total", "spending", "food")}
    assert not _outworded(["total", "spending"], "totexp", ["totexp", "wfood"], budget)


def test_an_anti_join_is_no_join_that_must_keep_every_entry() -> None:
    from stateguard.verification.bind_shape import _ANTI_OR_SEMI

    assert _ANTI_OR_SEMI.match("ANTI JOIN (SELECT nation FROM big WHERE linked) AS b ON b.nation = k.code")
    assert _ANTI_OR_SEMI.match("SEMI JOIN big AS b ON b.nation = k.code")
    assert not _ANTI_OR_SEMI.match("LEFT JOIN big AS b ON b.nation = k.code")


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        # a participle naming no column ends the first phrase of a chain
        (
            "above the mean count of the firms in its own sector controlled from the same nation",
            ["sector", "nation"],
        ),
        # a "the same <column>" right after a phrase read, led by a word no phrase starts with
        (
            "above the median count of the patients in the same treatment during the same period",
            ["treatment", "period"],
        ),
        # one of the two naming nothing: no reading at all
        ("above the median count of the patients in the same arm during the same period", None),
    ],
)
def test_chained_group_phrases_read_two_keys_or_none(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, ["sector", "nation", "treatment", "period"], {}, ["count"])
    assert (found.keys if found is not None else None) == keys


def test_a_grouped_subquery_joined_back_is_regrouped_by_two_stated_keys() -> None:
    from stateguard.inspection.inspect import inspect_code

    code = (
        'con.execute("""\nCREATE OR REPLACE TABLE tagged AS\n'
        "SELECT t.* REPLACE (t.links >= g.avg_links + 10 AS linked)\nFROM tagged t\n"
        "JOIN (SELECT sector, avg(links) AS avg_links FROM tagged GROUP BY sector) g\n"
        '  ON g.sector = t.sector\n""")'
    )
    two = rule_windows.Stated("sector", "in its own sector controlled from the same nation", ("nation",))
    joined = rule_windows.joined_site(code, inspect_code(code), two)
    assert joined is not None and joined.keys == ["sector"]
    assert "GROUP BY sector, nation" in joined.after
    assert "ON g.sector = t.sector AND g.nation = t.nation" in joined.after
    # grouped by both already: nothing to re-run
    both = code.replace("sector, avg", "sector, nation, avg").replace("BY sector", "BY sector, nation")
    both = both.replace("g.sector = t.sector", "g.sector = t.sector AND g.nation = t.nation")
    assert rule_windows.joined_site(both, inspect_code(both), two) is None


def test_a_gloss_after_a_comma_whose_words_spell_a_name_reads_the_group() -> None:
    columns = ["sex", "bluecol", "ind"]
    described = {"bluecol": ("yes", "blue", "collar", "job"), "ind": ("job", "manufacturing")}
    rule = "at or above the 80th percentile of the log wages of the same sex in the same kind of job, blue-collar or not."
    found = rule_windows.stated_group(rule, columns, described, ["lwage"])
    assert found is not None and found.keys == ["sex", "bluecol"]
    # without the gloss "kind of job" has two described readings: no second key, no reading
    bare = rule.replace(", blue-collar or not", "")
    assert rule_windows.stated_group(bare, columns, described, ["lwage"]) is None
    # a gloss whose words spell no name says nothing
    assert (
        rule_windows.stated_group(rule.replace("blue-collar", "office-based"), columns, described, ["lwage"])
        is None
    )
