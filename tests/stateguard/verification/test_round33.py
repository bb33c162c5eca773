"""Round 33: readings that did not account for the whole text, made to abstain or read whole.

Written after fresh43's first look (whose three false repairs each came from words read in part):

* an order the clause says outright ("(lowest rate first)") decides a top-k ranking whose own word
  is "most" or "least" grading an adjective ("the four most sheltered towns"), whose side of the
  ranked quantity the words do not say; two other directions that disagree are no reading;
* "a thousand", "a million", "a billion" are numbers a text names (a column in thousands writes "a
  million" as 1000), so a code's 1000 there is no cut-off nobody stated;
* a whole number that ends a name in the code ("over 18" beside `pop18`) names that column, and is
  no stated cut-off the code left out;
* "the same <column>" said outside every group phrase read leaves the rule's group unread, unless it
  leads right into a phrase read ("who sat the same exam in the same school"): then the two are two
  keys, each naming its own column.
"""

from __future__ import annotations

from stateguard.verification import rule_windows, unstated_cutoff
from stateguard.verification.extract import rankings


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
