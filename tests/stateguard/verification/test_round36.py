"""Round 36: a strict comparative said with "no", a key phrase another column explains in part, and a
column's every value listed in words that are also the sentence's own.

Written from fresh49's first look, whose clean-run false repairs each came from one of these:

* "no later than half the mean stop of their arm" was read as "later than": the lexicon had the
  negated form of "more than" only;
* "per recurrence number" bound `number` (the tumour count at entry) by a word of its name, though
  "recurrence" is said only of `enum (which recurrence the record is about)`;
* "a score for the answer (no 0, perhaps 1, yes 2)" and "a yes or a perhaps" scoped the turn to
  "perhaps": "no" and "yes" are skipped as values, so the listing looked like one value alone.
"""

from __future__ import annotations

import pytest

from stateguard.artifacts.lexicon import LEXICON
from stateguard.verification import extract, rule_multiples, rule_windows
from stateguard.verification.bind_shape import _resolve_key
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary, rival_reading
from tests.stateguard.verification.conftest import Session


@pytest.mark.parametrize(
    ("phrase", "op"),
    [
        ("no later than", "<="),
        ("not later than", "<="),
        ("no earlier than", ">="),
        ("not younger than", ">="),
        ("no older than", "<="),
        ("no higher than", "<="),
        # written forms keep their one reading
        ("no more than", "<="),
        ("no less than", ">="),
    ],
)
def test_a_strict_comparative_said_with_no_is_the_other_side(phrase: str, op: str) -> None:
    assert LEXICON.ops_of(phrase) == (op,)


def test_a_negated_temporal_comparative_stays_temporal() -> None:
    assert LEXICON.is_temporal("no later than")
    assert not LEXICON.is_temporal("no older than")


def test_no_later_than_a_multiple_is_at_most_it() -> None:
    found = rule_multiples.stated("records that end no later than half the mean stop of their arm")
    assert found is not None and (found.multiple, found.op) == (0.5, "<=")


RECORDS = (
    "records = pd.DataFrame({'rx': [1, 1, 1, 1, 2, 2, 2, 2], 'stop': [2, 10, 4, 20, 3, 5, 12, 40],"
    " 'event': [1, 1, 1, 0, 1, 1, 1, 0]})"
)


@pytest.mark.parametrize(("side", "caught"), [("<=", False), (">", True)])
def test_no_later_than_half_the_mean_keeps_the_lower_side(side: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(RECORDS).ok
    code = (
        "import json\nm = records.groupby('rx')['stop'].transform('mean')\n"
        f"early = records[(records['event'] == 1) & (records['stop'] {side} 0.5 * m)]\n"
        "print(json.dumps({'n_early': len(early)}))"
    )
    question = "How many records end in a recurrence no later than half the mean stop of their arm?"
    context = "Columns: rx (the arm: 1 placebo, 2 thiotepa), stop (the month the record ends), event."
    assert bool(session.turn(question, code, context=context)) is caught


BLADDER = ["id", "rx", "number", "size", "stop", "event", "enum"]
BLADDER_WORDS = {
    "rx": ("arm", "placebo", "thiotepa"),
    "number": ("many", "tumours", "patient", "had", "entry"),
    "enum": ("which", "recurrence", "record", "about"),
}


def test_a_phrase_another_column_explains_in_part_has_two_readings() -> None:
    assert rival_reading(["recurrence", "number"], "number", BLADDER, BLADDER_WORDS)
    # the matched column's own words explain the rest of the phrase: one reading
    assert not rival_reading(["tumour", "number"], "number", BLADDER, BLADDER_WORDS)
    # a word nobody's description says: one reading ("calendar month" is `month`)
    assert not rival_reading(["calendar", "number"], "number", BLADDER, BLADDER_WORDS)
    # a group noun explains nothing
    assert not rival_reading(["number", "group"], "number", BLADDER, {**BLADDER_WORDS, "enum": ("group",)})


def test_a_grouping_phrase_another_column_explains_names_no_key() -> None:
    assert _resolve_key("recurrence number", BLADDER, BLADDER_WORDS) == []
    assert _resolve_key("recurrence number", BLADDER) == ["number"]
    assert _resolve_key("tumour number", BLADDER, BLADDER_WORDS) == ["number"]


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        (
            "no later than half the mean stop of the records of the same arm with the same recurrence number",
            None,
        ),
        (
            "no later than half the mean stop of the records of the same arm with the same tumour number",
            ["rx", "number"],
        ),
        ("no later than half the mean stop of their arm and recurrence number", None),
    ],
)
def test_a_rule_key_another_column_explains_in_part_is_unread(rule: str, keys: list[str] | None) -> None:
    found = rule_windows.stated_group(rule, ["id", "rx", "number", "enum"], BLADDER_WORDS, ["size", "stop"])
    assert (found.keys if found is not None else None) == keys


ANSWERS = Vocabulary(
    tables={
        "answers": {
            "resp": ColumnInfo(kind="text", values=["no", "perhaps", "yes"]),
            "situ": ColumnInfo(kind="text", values=["other", "self"]),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        # the codebook of a score: every value of the column, two of them the sentence's own words
        ("Add a score for the answer (no 0, perhaps 1, yes 2) called yes_score", []),
        ("Which answer (no, perhaps, yes) has the largest share of hot answers", []),
        # alternatives counted: no restriction of the turn
        ("how many of them were a yes or a perhaps", []),
        # one value alone still scopes
        ("Only the perhaps answers: how many are there", ["perhaps"]),
    ],
)
def test_a_columns_values_said_in_the_sentences_own_words_count(clause: str, scoped: list[str]) -> None:
    found = [v for r in extract.scopes(clause, ANSWERS, None) for v in r.values]
    assert found == scoped


def test_a_codebook_of_yes_no_and_perhaps_scopes_no_turn() -> None:
    session = Session()
    frame = "answers = pd.DataFrame({'resp': ['no', 'perhaps', 'yes', 'no', 'yes', 'perhaps'], 'anger': [20, 26, 30, 15, 28, 22]})"
    assert session.ws.run_cell(frame).ok
    code = (
        "import json\nanswers['yes_score'] = answers['resp'].map({'no': 0, 'perhaps': 1, 'yes': 2})\n"
        "hot = answers[answers['anger'] >= 25]\n"
        "print(json.dumps({'n_hot': len(hot), 'mean_score': float(hot['yes_score'].mean())}))"
    )
    question = (
        "Make a score for the answer (no 0, perhaps 1, yes 2) called yes_score, and call an answer hot when "
        "the anger score is 25 or higher. How many answers are hot, and what is their average yes_score?"
    )
    assert session.turn(question, code) == []


@pytest.mark.parametrize(
    ("text", "book"),
    [
        ("the arm: 1 placebo, 2 thiotepa", {"placebo": "1", "thiotepa": "2"}),
        ("1 for men, 0 for women", {"men": "1", "women": "0"}),
        (
            "education level, 1 no formal education, 2 less than primary school, 3 primary school",
            {"no formal education": "1", "less than primary school": "2", "primary school": "3"},
        ),
        # one entry, a clause, a range, the sentence's own words: no codebook
        ("1 if the record ends in a recurrence, else 0", {}),
        ("cache size in kilobytes, 0 for none", {}),
        ("the patient, 1 to 85", {}),
        ("yes/no: 1 yes, 0 no", {}),
    ],
)
def test_a_codebook_in_a_description(text: str, book: dict[str, str]) -> None:
    from stateguard.verification.vocabulary import codebook

    assert codebook(text) == book


TRIAL = Vocabulary(
    tables={
        "records": {
            "rx": ColumnInfo(kind="num", low=1, high=2),
            "educ": ColumnInfo(kind="num", low=1, high=3),
            "stop": ColumnInfo(kind="num", low=1, high=60),
        }
    }
).with_descriptions(
    "Columns: rx (the arm: 1 placebo, 2 thiotepa), educ (schooling, 1 no formal education, "
    "2 less than primary school, 3 primary school) and stop (the month the record ends)."
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        ("what percentage of the Thiotepa records is early", ["2"]),
        # a label inside a longer one said there is the longer one's
        ("how many records of people with less than primary school", ["2"]),
        ("how many records of people with primary school", ["3"]),
        # both labels, alternatives: no scope
        ("how many of the placebo or the thiotepa records", []),
    ],
)
def test_a_codebook_label_scopes_its_code(clause: str, scoped: list[str]) -> None:
    assert TRIAL.codes["rx"] == {"placebo": "1", "thiotepa": "2"}
    found = [v for r in extract.scopes(clause, TRIAL, None) for v in r.values]
    assert found == scoped


def test_a_codebook_is_read_only_for_a_numeric_column() -> None:
    vocab = Vocabulary(tables={"t": {"arm": ColumnInfo(kind="text", values=["a", "b"])}})
    assert vocab.with_descriptions("Columns: arm (1 placebo, 2 thiotepa).").codes == {}


@pytest.mark.parametrize(("kept", "caught"), [("records['rx'] == 2", False), ("records['event'] == 1", True)])
def test_the_rows_a_codebook_label_names_are_kept(kept: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(RECORDS).ok
    code = (
        f"import json\nrecords['early'] = records['stop'] <= 4\nsub = records[{kept}]\n"
        "print(json.dumps({'pct_early': float(100 * sub['early'].mean())}))"
    )
    question = "What percentage of the thiotepa records is early?"
    context = "Columns: rx (the arm: 1 placebo, 2 thiotepa), stop (the month the record ends), event."
    assert bool(session.turn(question, code, context=context)) is caught


def test_a_numbered_point_of_time_bounds_its_number() -> None:
    (req,) = extract.comparisons("how many records end before month 10")
    assert (req.op, req.value) == ("<", 10.0)
    (req,) = extract.comparisons("and how many end after week 6")
    assert (req.op, req.value) == (">", 6.0)
    # a month's name is no numbered point
    assert extract.comparisons("how many records end before month end") == []


def test_a_description_longer_than_a_line_is_read() -> None:
    long = ", ".join(f"{k} level {k}" for k in range(1, 12))
    vocab = Vocabulary(tables={"t": {"educ": ColumnInfo(kind="num", low=1, high=11)}})
    assert vocab.with_descriptions(f"Columns: educ (education level, {long}).").column_words["educ"][:2] == (
        "education",
        "level",
    )


MACHINES = "machines = pd.DataFrame({'vendor': ['a', 'a', 'a', 'a', 'b', 'b', 'b'], 'perf': [10, 20, 60, 100, 30, 40, 200]})"


@pytest.mark.parametrize(("statistic", "caught"), [("median", False), ("mean", True)])
def test_a_statistic_computed_more_often_than_asked_stands_in(statistic: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(MACHINES).ok
    code = (
        "import json\n"
        f"bar = machines.groupby('vendor')['perf'].{statistic}()\n"
        "fast = machines[machines['perf'] >= 1.5 * machines['vendor'].map(bar)]\n"
        "print(json.dumps({'n': len(fast), 'mean_perf': float(fast['perf'].mean())}))"
    )
    question = (
        "Which machines reach one and a half times the median performance of their vendor? "
        "How many, and their mean performance?"
    )
    assert bool(session.turn(question, code)) is caught


def test_a_passive_verbs_agent_is_no_grouping() -> None:
    assert extract.groupings("how many answers were given by respondents with a trait anger below 15") == []
    assert [r.keys for r in extract.groupings("how many answers, broken down by gender")] == [["gender"]]


AGGRESSION = ["Anger", "Gender", "resp", "kind"]
AGGRESSION_WORDS = {"Anger": ("trait", "anger", "score"), "resp": ("answer",)}


@pytest.mark.parametrize(
    ("rule", "keys"),
    [
        # the first sentence explains; the rule's own sentence names the statistic and the group
        (
            "A fixed score says little about whether someone is unusually angry for that kind of answer. "
            "The suggestion: hot when the anger reaches the upper quartile of the anger scores of people of "
            "the same gender with the same response.",
            ["Gender", "resp"],
        ),
        # a rule of one sentence: read as before
        ("Hot when the anger reaches the mean anger of the answers of the same gender.", ["Gender"]),
        # no sentence names a statistic: every phrase is read
        ("Hot when the anger tops the line of the answers of the same gender.", ["Gender"]),
    ],
)
def test_a_group_phrase_in_a_sentence_without_the_statistic_explains(rule: str, keys: list[str]) -> None:
    found = rule_windows.stated_group(rule, AGGRESSION, AGGRESSION_WORDS, ["yes_score"])
    assert found is not None and found.keys == keys


SEXES = Vocabulary(tables={"answers": {"Gender": ColumnInfo(kind="text", values=["F", "M"])}})
SEXES_SPELT = Vocabulary(tables={"people": {"sex": ColumnInfo(kind="text", values=["female", "male"])}})


@pytest.mark.parametrize(
    ("vocab", "clause", "scoped"),
    [
        (SEXES, "what share of the men's answers, in percent, is hot", ["M"]),
        (SEXES_SPELT, "the women alone: how many are there", ["female"]),
        # both: every value of the column, no scope
        (SEXES, "the answers of men and women", []),
        # a count of them is what is counted, not a scope
        (SEXES, "how many respondents are women", []),
    ],
)
def test_an_everyday_word_names_a_value_as_the_data_writes_it(
    vocab: Vocabulary, clause: str, scoped: list[str]
) -> None:
    found = [v for r in extract.scopes(clause, vocab, None) for v in r.values]
    assert found == scoped


def test_prose_about_a_column_is_no_codebook() -> None:
    vocab = Vocabulary(tables={"epi": {"period": ColumnInfo(kind="num", low=1, high=4)}})
    # "two-week period (59 patients, 4 periods each)": one number in the column's range, no codebook
    assert (
        vocab.with_descriptions(
            "one row per patient and two-week period (59 patients, 4 periods each)."
        ).codes
        == {}
    )
    assert vocab.with_descriptions("Columns: period (1 early, 4 late).").codes == {
        "period": {"early": "1", "late": "4"}
    }


def test_a_label_two_codebooks_share_or_the_data_writes_scopes_nothing() -> None:
    status = Vocabulary(
        tables={
            "visits": {
                "baseline": ColumnInfo(kind="num", low=0, high=1),
                "outcome": ColumnInfo(kind="num", low=0, high=1),
            }
        }
    ).with_descriptions(
        "Columns: baseline (status before: 1 good, 0 poor) and outcome (status at the visit: 1 good, 0 poor)."
    )
    assert extract.scopes("the patients whose status was good", status, ["visits"]) == []
    cars = Vocabulary(
        tables={
            "cars": {
                "am": ColumnInfo(kind="num", low=0, high=1),
                "gearbox": ColumnInfo(kind="text", values=["automatic", "manual"]),
            }
        }
    ).with_descriptions("Columns: am (gearbox: 0 automatic, 1 manual).")
    assert [r.columns for r in extract.scopes("the cars with a manual gearbox", cars, None)] == [["gearbox"]]


VOTERS = "voters = pd.DataFrame({'vote': [1, 0, 1, 1, 0, 0], 'tv': [1, 2, 3, 4, 5, 6]})"


def test_a_sum_of_the_coded_column_counts_its_label() -> None:
    session = Session()
    assert session.ws.run_cell(VOTERS).ok
    code = "import json\nprint(json.dumps({'n': len(voters), 'n_dole': int(voters['vote'].sum())}))"
    context = "Columns: vote (1 for Dole, 0 for Clinton) and tv (days of TV news)."
    assert session.turn("How many respondents, and how many Dole voters?", code, context=context) == []


def test_a_long_description_that_opens_with_a_code_names_no_words_of_the_column() -> None:
    vocab = Vocabulary(tables={"t": {"censor4": ColumnInfo(kind="num", low=0, high=1)}})
    text = (
        "Columns: censor4 (1 when the spell ended in a full-time job, in a part-time job, in a job the person "
        "has since left, or was still running at the last interview; for a few spells no flag is set)."
    )
    assert "spell" not in vocab.with_descriptions(text).column_words.get("censor4", ())
    assert (
        "spell"
        in vocab.with_descriptions("Columns: censor4 (1 when the spell was still running).").column_words[
            "censor4"
        ]
    )


RATINGS = Vocabulary(
    tables={
        "ratings": {
            "dept": ColumnInfo(kind="num", low=1, high=15),
            "capmob": ColumnInfo(kind="num", low=-4, high=0),
            "month": ColumnInfo(kind="num", low=1, high=12),
        }
    }
)


@pytest.mark.parametrize(
    ("clause", "scoped"),
    [
        ("Department 12 on its own for a second: how many ratings did it get", [("dept", "12")]),
        (
            "what percentage of the country-years without capital controls (capmob 0) were slumps",
            [("capmob", "0")],
        ),
        ("the records of month 3", [("month", "3")]),
        # a bound, a range, two numbers, a number outside the column's range: no value
        ("how many records end before month 10", []),
        ("the records in month 3 to 5", []),
        ("dept 12 and 13", []),
        ("Department 40 alone", []),
    ],
)
def test_a_columns_name_then_a_whole_number_is_a_value(clause: str, scoped: list[tuple[str, str]]) -> None:
    found = [(c, v) for r in extract.scopes(clause, RATINGS, None) for c in r.columns for v in r.values]
    assert found == scoped


def test_a_codebook_label_and_a_plural_description_word_parse_whole() -> None:
    vocab = Vocabulary(tables={"stays": {"type": ColumnInfo(kind="num", low=1, high=3)}}).with_descriptions(
        "Columns: type (admission type: 1 elective, 2 urgent, 3 emergency)."
    )
    assert extract.unbound_words("what percentage of the emergency admissions turned long", vocab) == ["long"]


def test_a_key_owned_by_the_rows_entity_is_a_grouping() -> None:
    found = extract.groupings("Summarise by the mother's age band in `band_tab`: babies and mean weight")
    assert [r.keys for r in found] == [["age band"]]
    assert extract.groupings("sorted by the patient's age") == []


def test_a_column_name_that_begins_the_word_is_its_key() -> None:
    assert _resolve_key("treatment", ["treat", "sex", "age"]) == ["treat"]
    # two columns begin it: no key
    assert _resolve_key("treatment", ["treat", "treatm", "age"]) == []
    # a short name is no beginning
    assert _resolve_key("agency", ["age", "sex"]) == []


def test_a_hedge_before_a_range_parses() -> None:
    vocab = Vocabulary(tables={"lines": {"hr": ColumnInfo(kind="num", low=0, high=70)}})
    assert "somewhere" not in extract.unbound_words("how many lines have somewhere from 20 to 29 hr", vocab)


@pytest.mark.parametrize(
    ("clause", "bound"),
    [
        ("how many interviews ran past 90 minutes", (">", 90.0)),
        ("and how many were out within 14 days", ("<=", 14.0)),
        # a span of time up to now is no bound
        ("in the past 10 years, how many were sold", None),
    ],
)
def test_past_and_within_state_bounds(clause: str, bound: tuple[str, float] | None) -> None:
    found = extract.comparisons(clause)
    assert ((found[0].op, found[0].value) if found else None) == bound


def test_a_value_set_aside_by_a_participle_after_it_is_left_out() -> None:
    modes = Vocabulary(tables={"trips": {"mode": ColumnInfo(kind="num", low=1, high=4)}}).with_descriptions(
        "Columns: mode (1 air, 2 train, 3 bus, 4 car)."
    )
    (req,) = extract.scopes("With the car travellers still set aside, how many trips are pricey", modes, None)
    assert (req.values, req.exclude) == (["4"], True)


def test_a_label_written_out_in_quotes_is_no_value() -> None:
    weeks = Vocabulary(tables={"schedule": {"week": ColumnInfo(kind="num", low=2, high=10)}})
    assert extract.scopes('with visit labels like "visit 1 (week 2)"', weeks, None) == []


def test_a_hyphenated_pair_of_keys_is_no_begun_name() -> None:
    assert _resolve_key("gender-and-race", ["gender", "race", "grp"]) == []


HITTERS = "bb = pd.DataFrame({'years': [1, 5, 12, 3, 8, 20], 'hits86': [150, 80, 120, 60, 101, 99]})"


def test_a_stated_value_a_column_never_holds_binds_nothing() -> None:
    session = Session()
    assert session.ws.run_cell(HITTERS).ok
    code = "import json\nhigh = bb[bb['hits86'] >= 100]\nprint(json.dumps({'n': len(high)}))"
    assert session.turn("How many players had 100 hits or more in 1986?", code) == []


def test_a_distance_said_with_any_comparative_of_the_lexicon() -> None:
    from stateguard.verification import rule_offsets

    found = rule_offsets.stated("tall when at least 3 inches taller than the median height of the same part")
    assert found is not None and (found.distance, found.up) == (3.0, True)
    found = rule_offsets.stated("cheap when 2 dollars cheaper than the median price of its shop")
    assert found is not None and (found.distance, found.up) == (2.0, False)


def test_a_count_of_parts_of_a_whole_is_no_bound() -> None:
    clause = "when at least three quarters of the other participants are strictly younger"
    assert extract.comparisons(clause) == []
    from stateguard.verification import unstated_cutoff

    assert unstated_cutoff.stated(clause) == {}


def test_that_group_points_back_and_names_no_key() -> None:
    rule = (
        "oldest when at least three quarters of the other participants of the same sex and the same case "
        "status are strictly younger (a percent rank of 0.75 or more within that group)"
    )
    words = {"status": ("case", "alzheimer", "control")}
    found = rule_windows.stated_group(rule, ["id", "sex", "status"], words, ["age"])
    assert found is not None and found.keys == ["sex", "status"]


def test_a_statistic_merged_back_after_a_rename_is_the_rules() -> None:
    from stateguard.verification import rule_statistics

    code = (
        'cell = months.groupby(["decade", "quarter"])["psavert"].mean().rename("m").reset_index()\n'
        'joined = recent.merge(cell, on=["decade", "quarter"], how="left")\n'
        'rel = joined[joined["psavert"] >= joined["m"] + 1.5]\n'
    )
    found = rule_statistics.changed("saved at least 1.5 points more than the median of their decade", code)
    assert found is not None and found.site.after.endswith(".median()")


def test_a_quoted_value_and_its_label_in_a_description() -> None:
    from stateguard.verification.vocabulary import quoted_codebook

    text = '"G" for the Guard corps, otherwise a Roman numeral from I to XV'
    assert quoted_codebook(text, ["G", "I", "II"]) == {"guard corps": "G"}
    # a value the column does not hold is no entry
    assert quoted_codebook(text, ["I", "II"]) == {}
    corps = Vocabulary(tables={"kicks": {"corps": ColumnInfo(kind="text", values=["G", "I", "II"])}})
    corps = corps.with_descriptions(f"Columns: deaths, corps ({text}).")
    (req,) = extract.scopes("what percentage of the Guard corps' years is grim", corps, None)
    assert (req.columns, req.values) == (["corps"], ["G"])


MOODS = (
    "mood = pd.DataFrame({'Film': [1, 1, 1, 2, 2, 2, 1, 2], 'TA2': [10, 12, 20, 8, 9, 16, 11, 15],"
    " 'candid': [True, True, True, True, True, True, False, True]})"
)


@pytest.mark.parametrize(("statistic", "caught"), [("mean", False), ("median", True)])
def test_an_answers_statistic_computed_more_often_than_asked_is_the_answer_field(
    statistic: str, caught: bool
) -> None:
    # the rule's median is asked and computed; the answer's mean is asked, and the code reports a
    # second median in its place: the answer field is the site re-run as the mean
    session = Session()
    assert session.ws.run_cell(MOODS).ok
    code = (
        "import json\ncell_medians = mood.groupby(['Film'])['TA2'].median()\n"
        "above = mood['TA2'].to_numpy() >= cell_medians.reindex(mood['Film']).to_numpy() + 2\n"
        "rel_only = mood[above & mood['candid'].to_numpy()]\n"
        f"result = {{'n': len(rel_only), 'mean_ta2': rel_only['TA2'].{statistic}()}}\n"
        "print(json.dumps(result))"
    )
    question = (
        "Which candid rows are 2 points or more above their film's median TA2? How many, and their mean TA2?"
    )
    assert bool(session.turn(question, code)) is caught
