"""Round 29: rule groups of two keys, a flag named by its head word, rebuilt extremes, wrapped fields.

* A rule whose group is said as two phrases in a row ("at the same loudness in the same kind of
  noise", "of its own mode and of the same sex") states two keys, each phrase read on its own words
  (`rule_windows.stated_group`, `Stated.more`). Before, two phrases in a row abstained. A window or
  transform over one of them is re-run over both; a statistic merged or joined back is regrouped on
  both; a look-up by `.map` (one key only) abstains.
* A rule an earlier turn computed over two agreeing keys is recalled with both (`rule_groups`).
* A flag is named by the last part of its name alone ("patients with a signal" for `alt_signal`)
  when no other recorded flag's name ends with that word (`superseded.FlagHistory`).
* A summary rebuilt under its name whose output `max_x` took MAX(x) when first built and now takes
  MIN(x) is re-run as first built (`named_stats`): one extreme is read against the other only with
  that earlier build as evidence, never from the name alone.
* A field that holds a conversion or rounding of an aggregate (`float(x.mean())`,
  `round(x.median(), 2)`) is named by its field name (`code_text.unwrapped`, which `counted_rows`
  uses too).
* A time said in days is held in another unit only by a number the code compares with: "between 100
  and 365 days" is not held by the 1 of `rinfct = 1` (`unstated_cutoff.changed`).
* A row mask named by a word of the question is kept for later turns only where no noun follows the
  word ("keep them in measured", not "the runs in incoherent noise"), so a mask built and never read
  is found (`dead_subsets._kept`).
* A subgroup share said as "what percentage of the dose-D patients show one": the flag said back as
  "show one" / "have one", a compound of a column and its value either way round ("dose-D",
  "thick-solder"), and a plural noun naming a numbering column (`patient`, 1 to 606) naming the rows
  (`share_base`).

Made after the round was frozen for fresh39's first look, before fresh39 was read, from the misses of
earlier splits:
* A SQL flag set as `COALESCE(profits >= 2, FALSE)` is recorded as its condition, so the rule written
  out later as `profits >= 2` is the replaced one (`superseded._flag_text`).
* The term a definition gives its rows is read from "... make someone a top earner.", "... is what
  the field team calls heavily infested." and "I'll call short-lived.", and from a redefinition that
  states it ("a chick is heavily infested when ..."), as well as "X is a Y when" at the first
  definition (`superseded._DEFINED_TERMS`).

Made after fresh39's first look (so fresh39 is no longer unseen for these):
* A number with a comparator on each side ("after 7 days or fewer") states no one bound: neither is
  read (`extract.comparisons`). Before, "after 7" was read and the code's `los <= 7` was a reversed
  comparison (a false repair on fresh39).
* A turn's own context that says a flag's term "means" a condition ("low-income again means a
  bracket of 8 or lower") states the flag's rule, not a condition on the rows (`extract.
  context_requirements`). Before, the rollback's code, which filters no rows by income, was a dropped
  filter (a false repair on fresh39).
* A noun for a column's values right after the column's word ("a grassy score over 2") and the plural
  noun a count asks for ("how many tastings had ...") are accounted for when a clause must parse
  whole (`extract.unbound_words`, `condition_part`).
* A codebook in a column's parenthesis ("gender (1 male, 2 female)") gives every code's words as the
  column's words, so "the same sex" names `gender` (`Vocabulary.with_descriptions`).

After the finals (the one detection they lost, fresh28's wilms_tumour turn 11, had been caught by the
rollback's context read as a row condition, which the "means" reading above no longer makes):
* The answer's scale ("as a number from 0 to 1") is no number a question states for a rule, so a
  rollback that puts back a rule none of the flag's versions had is found although the question
  says "from 0 to 1" (`superseded._mentions`).
"""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import (
    code_text,
    dead_subsets,
    extract,
    rule_windows,
    share_base,
    unstated_cutoff,
)
from stateguard.verification.named_stats import named_statistics
from stateguard.verification.regrouped import GroupingHistory
from stateguard.verification.rule_groups import RuleGroupHistory
from stateguard.verification.superseded import FlagHistory
from stateguard.verification.vocabulary import ColumnInfo, Vocabulary
from tests.stateguard.verification.conftest import flag_history, session_with

NOISE = (
    "a run is good when its share correct is at least 0.2 above the median share of all runs played at "
    "the same loudness in the same kind of noise"
)


@pytest.mark.parametrize(
    ("rule", "columns", "keys"),
    [
        (NOISE, ["Loud", "Noise", "Age"], ["Loud", "Noise"]),
        (
            "at least 0.2 above the median share of all runs played at the same loudness",
            ["Loud", "Noise"],
            ["Loud"],
        ),
        (
            "at least twice the median of its own mode and of the same sex",
            ["mode", "sex", "owned"],
            ["mode", "sex"],
        ),
        # two phrases naming the one column are no two keys
        ("twice the median of its own mode with the same mode", ["mode", "sex"], None),
    ],
)
def test_two_group_phrases_in_a_row_state_two_keys(
    rule: str, columns: list[str], keys: list[str] | None
) -> None:
    stated = rule_windows.stated_group(rule, columns, {}, ["share"])
    assert (stated.keys if stated else None) == keys


PRICEY = (
    "an order is pricey when its price is at least 1.5 times the median price of all orders from the same "
    "region in the same category"
)


@pytest.mark.parametrize(
    ("keys", "found"),
    [('["region", "category"]', False), ('["category", "region"]', False), ('"region"', True)],
)
def test_a_transform_over_one_of_two_stated_keys_is_re_run_over_both(keys: str, found: bool) -> None:
    session = session_with()
    first = "import json\nprint(json.dumps({'n': len(orders)}))"
    assert session.turn("How many orders are there?", first) == []
    code = (
        "import json\n"
        f'med = orders.groupby({keys})["price"].transform("median")\n'
        'orders["pricey"] = orders["price"] >= 1.5 * med\n'
        'print(json.dumps({"n_pricey": int(orders["pricey"].sum())}))'
    )
    findings = session.turn("Flag the pricey orders and count them.", code, own_context=PRICEY)
    assert bool([f for f in findings if "grouped by other keys" in f.reason]) is found


def test_a_statistic_merged_back_on_one_of_two_stated_keys_is_regrouped_on_both() -> None:
    code = (
        'medians = orders.groupby("region")["price"].median().rename("m").reset_index()\n'
        'w = orders.merge(medians, on="region", how="left")\n'
        'n = int((w["price"] >= 1.5 * w["m"]).sum())'
    )
    stated = rule_windows.Stated("region", "", ("category",))
    joined = rule_windows.joined_site(code, inspect_code(code), stated)
    assert joined is not None and joined.keys == ["region"]
    assert joined.before.startswith('"region")') and joined.before.endswith('on="region"')
    assert joined.after.startswith("['region', 'category'])") and joined.after.endswith(
        "on=['region', 'category']"
    )
    # a look-up by `.map` takes one key: two stated keys abstain
    mapped = (
        'med = orders.groupby("region")["price"].median()\n'
        'n = int((orders["price"] >= 1.5 * orders["region"].map(med)).sum())'
    )
    assert rule_windows.joined_site(mapped, inspect_code(mapped), stated) is None


def test_a_rule_over_two_agreeing_keys_is_recalled_with_both() -> None:
    stated = rule_windows.Stated("region", "same region, same category", ("category",))
    agreed = (
        "med = orders.groupby(['category', 'region'])['price'].transform('median')\n"
        "orders['pricey'] = orders['price'] >= 1.5 * med"
    )
    history = RuleGroupHistory()
    rule = history.agreeing(7, agreed, inspect_code(agreed), stated)
    assert rule is not None and rule.keys == ("region", "category")
    history.record(rule)
    later = (
        "med = orders.groupby('region')['price'].transform('median')\n"
        "n = int((orders['price'] >= 1.5 * med).sum())"
    )
    recalled = history.recalled("Back to the pricey rule we dropped: how many?", later, inspect_code(later))
    assert recalled is not None and recalled.keys == ["region", "category"]
    # the code over both keys, in either order, is the recorded rule
    assert history.recalled("Back to the rule we dropped: how many?", agreed, inspect_code(agreed)) is None


DEFINE = "con.execute('CREATE TABLE flagged AS SELECT *, alt_m > 40 AS alt_signal FROM labs')"
UPDATE = "con.execute('UPDATE flagged SET alt_signal = (alt_m >= 3 * alt_b)')"
OLD_READ = "n = con.execute('SELECT dose, count_if(alt_m > 40) AS n_signal FROM normal_start GROUP BY dose').fetchall()"


@pytest.mark.parametrize(
    ("question", "other_flag", "found"),
    [
        ("Redo the table on the normal-start patients with the baseline-relative signal.", False, True),
        ("Redo the table on the normal-start patients.", False, False),  # the flag is not named
        # another flag's name ends with the same word: which one is meant is not known
        ("Redo the table on the normal-start patients with the baseline-relative signal.", True, False),
    ],
)
def test_a_flag_named_by_the_last_word_of_its_name(question: str, other_flag: bool, found: bool) -> None:
    history = FlagHistory()
    cells = [DEFINE, UPDATE]
    if other_flag:
        cells.insert(1, "con.execute('CREATE TABLE s AS SELECT *, ast_m > 30 AS ast_signal FROM labs')")
    for turn, code in enumerate(cells, start=2):
        history.record(turn, code, inspect_code(code))
    restated = history.restated(question, OLD_READ, inspect_code(OLD_READ))
    assert [(r.before, r.after) for r in restated] == ([("alt_m > 40", "alt_signal")] if found else [])


FIRST = (
    "CREATE TABLE dose_tab AS SELECT dose, count(*) AS n, max(tbl_m) AS max_tbl_m FROM flagged GROUP BY dose"
)
AGAIN = "CREATE OR REPLACE TABLE dose_tab AS SELECT dose, count(*) AS n, min(tbl_m) AS max_tbl_m FROM normal_start GROUP BY dose"


def _sql(text: str) -> str:
    return f'con.execute("""{text}""")'


@pytest.mark.parametrize(
    ("first", "question", "found"),
    [
        (FIRST, "Redo `dose_tab` on the normal-start patients.", True),
        (FIRST.replace("max(tbl_m)", "min(tbl_m)"), "Redo `dose_tab` on the normal-start patients.", False),
        (None, "Redo `dose_tab` on the normal-start patients.", False),  # one extreme against the other: no
    ],
)
def test_a_rebuilt_extreme_is_read_against_its_first_build(
    first: str | None, question: str, found: bool
) -> None:
    history = GroupingHistory()
    if first is not None:
        history.record(3, inspect_code(_sql(first)))
    sem = inspect_code(_sql(AGAIN))
    named = named_statistics(question, sem, history.earlier_statistics(question, sem))
    assert [(r.function, r.fields) for r, _, _ in named] == ([("max", ["max_tbl_m"])] if found else [])


@pytest.mark.parametrize("wrap", ["float({})", "round({}, 2)", "np.round({}, 2)", "float(round({}, 2))"])
def test_a_field_holding_a_converted_aggregate_is_named_by_its_field(wrap: str) -> None:
    code = f"pw = cars[cars['powerful']]\nresult = {{'median_price': {wrap.format(chr(112) + 'w[' + repr('Price') + '].mean()')}}}"
    named = named_statistics("what is their typical (median) price?", inspect_code(code))
    assert [(r.function, r.fields) for r, _, _ in named] == [("median", ["median_price"])]


SPELLS = (
    "How many young women are there, and how many were followed between 100 and 365 days, both ends included?"
)


@pytest.mark.parametrize(
    ("test", "found"),
    [
        ("time BETWEEN 100 AND 300", True),  # the 1 of `rinfct = 1` holds no year
        ("time BETWEEN 100 AND 365", False),
    ],
)
def test_a_time_in_days_is_held_in_another_unit_only_by_a_compared_number(test: str, found: bool) -> None:
    code = (
        f"n, m = con.execute('SELECT count(*), count_if({test}) FROM young').fetchone()\n"
        "k = con.execute('SELECT count(*) FROM young WHERE rinfct = 1').fetchone()[0]"
    )
    changed = unstated_cutoff.changed(SPELLS, [SPELLS], code)
    assert (changed.after if changed else None) == ("BETWEEN 100 AND 365" if found else None)


MASKED = (
    'ome["good"] = ome["share"] >= 0.75\n'
    'incoherent = ome["Noise"] == "incoherent"\n'
    'result = {"n_good": int(ome["good"].sum()), "pct_incoherent_good": 100 * ome["good"].mean()}'
)


@pytest.mark.parametrize(
    ("said", "found"),
    [
        ("How many runs are good, and what percentage of the runs in incoherent noise are good?", True),
        ("Keep the incoherent runs in incoherent, and how many runs are good?", False),  # kept by its name
        ("Keep the incoherent runs in incoherent for later; how many runs are good?", False),
    ],
)
def test_a_mask_named_by_a_word_that_describes_rows_is_not_kept(said: str, found: bool) -> None:
    unused = dead_subsets.unused(MASKED, said)
    assert (unused.name if unused else None) == ("incoherent" if found else None)


def _table(name: str, **columns: ColumnInfo) -> Vocabulary:
    """A vocabulary of one table with the given columns."""
    return Vocabulary(tables={name: dict(columns)})


FLAG = ColumnInfo(kind="other", values=["False", "True"])


def _labs() -> Vocabulary:
    return _table(
        "flagged",
        patient=ColumnInfo(kind="num", low=1, high=606),
        dose=ColumnInfo(kind="text", values=["A", "B", "C", "D"]),
        alt_m=ColumnInfo(kind="num", low=4, high=300),
        alt_signal=FLAG,
    )


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many have a signal, and what percentage of the dose-D patients show one?", ("dose", "D")),
        ("How many have a signal, and what percentage of the D-dose patients have one?", ("dose", "D")),
        ("How many have a signal, and what percentage of the dose-D patients showed it twice?", None),
    ],
)
def test_a_subgroup_share_said_with_its_column_and_show_one(
    question: str, expected: tuple[str, str] | None
) -> None:
    found = share_base.subgroup_shares(question, _labs(), ["flagged"], ["n_signal", "pct_dose_d_signal"])
    assert [(s.flag, s.column, s.value) for s in found] == ([("alt_signal", *expected)] if expected else [])


@pytest.mark.parametrize(
    ("define", "question", "found"),
    [
        (
            "con.execute('CREATE TABLE rated AS SELECT *, COALESCE(profits >= 2, FALSE) AS star FROM firms')",
            "Rebuild the table with stars as currently defined.",
            True,
        ),
        (
            "con.execute('CREATE TABLE rated AS SELECT *, profits >= 2 AS star FROM firms')",
            "Rebuild the table with stars as currently defined.",
            True,
        ),
        # a number the question states is the replaced rule's: that rule is asked for
        (
            "con.execute('CREATE TABLE rated AS SELECT *, COALESCE(profits >= 2, FALSE) AS star FROM firms')",
            "How many stars would have profits of 2 or more?",
            False,
        ),
    ],
)
def test_a_sql_flag_set_through_coalesce_is_its_condition(define: str, question: str, found: bool) -> None:
    history = FlagHistory()
    redefine = "con.execute('UPDATE rated SET star = profits >= 4 * median_profits')"
    for turn, code in ((2, define), (7, redefine)):
        history.record(turn, code, inspect_code(code))
    read = "n = con.execute('SELECT count_if(profits >= 2) AS n_star FROM intl').fetchone()[0]"
    restated = history.restated(question, read, inspect_code(read))
    assert [(r.before, r.after) for r in restated] == ([("profits >= 2", "star")] if found else [])


@pytest.mark.parametrize(
    ("said", "term"),
    [
        ("Earnings above forty thousand dollars make someone a top earner. Add a column.", "top earner"),
        (
            "A chick carrying fifteen or more ticks is what the field team calls heavily infested. Record it.",
            "heavily infested",
        ),
        ("Any cabinet that lasted under a year I'll call short-lived. Add it.", "short-lived"),
        ("A husband is a high earner if his income tops 45.", "high earner"),
        ("Add a column for the earnings.", None),
    ],
)
def test_the_term_a_definition_gives_its_rows(said: str, term: str | None) -> None:
    history = FlagHistory()
    code = 'ps["top_pay"] = ps["earnings"] > 40000'
    history.record(2, code, inspect_code(code), said)
    assert history.terms == ({"top_pay": [term]} if term else {})


def test_a_redefinition_s_term_names_the_flag_later() -> None:
    history = flag_history(
        (2, 'chicks["heavy"] = chicks["TICKS"] >= 15', "Flag the chicks with many ticks."),
        (
            7,
            'chicks["heavy"] = chicks["TICKS"] >= chicks["year_median"] + 10',
            "Now a chick is heavily infested when it carries ten more.",
        ),
    )
    read = 'infested = upland[upland["TICKS"] >= 15]\nn = len(infested)'
    question = "For the upland chicks that are heavily infested by today's definition: how many?"
    restated = history.restated(question, read, inspect_code(read))
    assert [(r.before, r.term) for r in restated] == [('upland["TICKS"] >= 15', "heavily infested")]


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("how many patients went home within a week, that is after 7 days or fewer", []),
        ("how many stayed 7 days or fewer", [("<=", 7.0)]),
        ("how many stayed more than 7 days", [(">", 7.0)]),
    ],
)
def test_a_number_with_a_comparator_on_each_side_is_no_bound(
    clause: str, expected: list[tuple[str, float]]
) -> None:
    assert [(r.op, r.value) for r in extract.comparisons(clause)] == expected


def _turnout() -> Vocabulary:
    return _table(
        "tagged",
        income=ColumnInfo(kind="num", low=1, high=14),
        age=ColumnInfo(kind="num", low=18, high=90),
        low_income=FLAG,
    ).with_descriptions("Columns: income (family income bracket, 1 to 14), age (in years).")


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            "The desk goes back to the fixed one: low-income again means a family income bracket of 8 or lower.",
            [],
        ),
        # a term that names no flag of the data: a rule on the rows, read as before
        ("From now on a respondent counts only when the family income bracket is 8 or lower.", [("<=", 8.0)]),
    ],
)
def test_a_flag_s_term_that_means_a_condition_is_no_row_condition(
    context: str, expected: list[tuple[str, float]]
) -> None:
    found = extract.context_requirements(context, _turnout(), ["tagged"])
    assert [(r.op, r.value) for r in found] == expected


def _fries() -> Vocabulary:
    scores = ColumnInfo(kind="num", low=0, high=15)
    return _table("fries", tasting=ColumnInfo(kind="num", low=1, high=696), grassy=scores, potato=scores)


@pytest.mark.parametrize(
    ("segment", "unbound"),
    [
        ("how many tastings had a grassy score over 2", []),
        ("how many batches had a grassy score over 2", []),  # the rows a count asks for
        ("the batches had a grassy score over 2", ["batches"]),
        ("how many tastings had a score over 2", ["score"]),  # no column's word before it
        ("how many tastings had a crispy score over 2", ["crispy", "score"]),
    ],
)
def test_a_measure_noun_after_a_column_s_word_is_bound(segment: str, unbound: list[str]) -> None:
    part = extract.condition_part(segment, "over 2")
    assert extract.unbound_words(part, _fries(), ["fries"]) == unbound


def test_a_codebook_in_a_parenthesis_gives_every_code_s_words() -> None:
    vocab = _table(
        "ch",
        gender=ColumnInfo(kind="num", low=1, high=2),
        ageentry=ColumnInfo(kind="num", low=700, high=1200),
    ).with_descriptions("Columns: ageentry (age on entry, in months) and gender (1 male, 2 female).")
    assert vocab.column_words["gender"] == ("male", "female")
    rule = "at least 48 months older than the median entry age of all residents of the same sex"
    stated = rule_windows.stated_group(rule, ["gender"], vocab.column_words, ["ageentry"], {})
    assert stated is not None and stated.keys == ["gender"]


@pytest.mark.parametrize(
    ("question", "found"),
    [
        ("Put the 48-month `older` back and refresh `fav`. What share of `fav` is that, from 0 to 1?", True),
        ("Put the 48-month `older` back and refresh `fav`. How many are older?", True),
        # a number the earlier rule does not have states a new rule
        ("Put `older` back at 60 months and refresh `fav`. How many are older?", False),
    ],
)
def test_the_answer_s_scale_is_no_number_of_a_restored_rule(question: str, found: bool) -> None:
    history = FlagHistory()
    for turn, code in (
        (2, 'wt["older"] = wt["age"] >= 48'),
        (7, 'wt["older"] = wt["age"] >= 1.5 * wt["med"]'),
    ):
        history.record(turn, code, inspect_code(code))
    back = 'wt["older"] = wt["age"] >= 60\nfav = wt[wt["histol"] == 1].copy()'
    restored = history.restored(question, back, inspect_code(back))
    assert [r.after for r in restored] == (['wt["age"] >= 48'] if found else [])


@pytest.mark.parametrize(
    ("text", "rounding", "value"),
    [
        ("int(len(kept))", False, "len(kept)"),
        ("float(int(x.sum()))", False, "x.sum()"),
        ("int(a) + int(b)", False, "int(a) + int(b)"),  # no call wraps the whole text
        ("round(x.mean(), 2)", False, "round(x.mean(), 2)"),
        ("float(round(x.mean(), 2))", True, "x.mean()"),
        ("np.round(x.median(), 1)", True, "x.median()"),
    ],
)
def test_a_field_s_value_with_its_conversions_taken_off(text: str, rounding: bool, value: str) -> None:
    assert code_text.unwrapped(text, rounding=rounding) == value
