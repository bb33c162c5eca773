"""Round 30: rules recalled by the key their code took, "med_" names, distances said twice, and the
statistic of a distance rule.

* A turn whose words say its rule's statistic is taken over a group but bind no column ("the women
  with the same nationality status (Swiss or foreign)") records the key its code took, with the
  phrase's words (`rule_groups.RuleGroupHistory.taken`). A later turn that recomputes the rule it
  calls withdrawn over another key is read against that key only when its own group phrase shares a
  word with the recorded one ("their nationality group's median").
* A rule is a version not in force also when "we set aside", "let go", "went back on" it
  (`LEXICON.undone_version`, read only after a rule's noun and its subject).
* A name made of "med" and the aggregated column's own name (`AVG(income) AS med_income`) states the
  median (`named_stats.stated_by`); "med" elsewhere may shorten "medical" and states nothing.
* A distance said in two units ("four years (48 months) older than the median") is read with both;
  a code's other distance is re-run with the one of its order of size, and with none where that is
  unclear (`rule_offsets`).
* The statistic of a rule said as a distance from it ("48 months above their sex's median entry
  age") is read as that of a multiple is (`rule_statistics.stated`).
"""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_offsets, rule_statistics, rule_windows, split_groups, stated_sides
from stateguard.verification.binder import reason, side_status
from stateguard.verification.extract import RULE_VERSION
from stateguard.verification.named_stats import stated_by
from stateguard.verification.requirements import Kind, Requirement
from stateguard.verification.rule_groups import RuleGroupHistory
from stateguard.verification.verifier import _query_behind
from tests.stateguard.verification.conftest import flag_history, session_with

DEFINED = (
    "nat_median = sw.groupby('foreign')['nlinc'].transform('median')\n"
    "sw['comfortable'] = sw['nlinc'] >= 1.3 * nat_median"
)
DEFINING = (
    "a household is comfortable when its non-labour income is at least 1.3 times the median non-labour "
    "income of the women with the same nationality status (Swiss or foreign)"
)


def _recalled_later(question: str, key: str) -> rule_windows.Stated | None:
    history = RuleGroupHistory()
    rule = history.taken(7, DEFINING, DEFINED, inspect_code(DEFINED))
    assert rule is not None and rule.keys == ("foreign",)
    history.record(rule)
    later = (
        f"meds = sw.groupby('{key}')['nlinc'].median()\n"
        f"rel = mothers['nlinc'] >= 1.3 * mothers['{key}'].map(meds)"
    )
    return history.recalled(question, later, inspect_code(later))


@pytest.mark.parametrize(
    ("question", "key", "found"),
    [
        (
            "Last, the definition we have just dropped: who reach 1.3 times their nationality group's median?",
            "lfp",
            True,
        ),
        # the key the defining turn's code took is the recorded one
        (
            "Last, the definition we have just dropped: who reach 1.3 times their nationality group's median?",
            "foreign",
            False,
        ),
        # a group phrase that shares no word with the recorded one: another group, perhaps
        (
            "Last, the definition we have just dropped: who reach 1.3 times their age band's median?",
            "lfp",
            False,
        ),
        # no version named: the rule in force, not a recalled one
        ("Who reach 1.3 times their nationality group's median?", "lfp", False),
        (
            "Thinking of the rule we set aside: who reach 1.3 times their nationality group's median?",
            "lfp",
            True,
        ),
    ],
)
def test_a_rule_whose_words_bind_no_group_is_recalled_by_its_code_s_key(
    question: str, key: str, found: bool
) -> None:
    recalled = _recalled_later(question, key)
    assert (recalled.keys if recalled else None) == (["foreign"] if found else None)


def test_a_turn_that_recalls_a_rule_or_says_no_group_records_nothing() -> None:
    history = RuleGroupHistory()
    assert (
        history.taken(
            12,
            "the rule we dropped: 1.3 times their nationality group's median",
            DEFINED,
            inspect_code(DEFINED),
        )
        is None
    )
    assert (
        history.taken(
            7, "a household is comfortable at 1.3 times the median income", DEFINED, inspect_code(DEFINED)
        )
        is None
    )


@pytest.mark.parametrize(
    ("text", "undone"),
    [
        ("Thinking of the age-relative rule we set aside: which records", True),
        ("the class-relative rule we let go", True),
        ("the gender-relative rule we went back on", True),
        ("Set aside the rows with a missing age.", False),
        ("the rule we set at 5", False),
    ],
)
def test_a_rule_set_aside_is_a_version_not_in_force(text: str, undone: bool) -> None:
    assert bool(RULE_VERSION.search(text)) is undone


@pytest.mark.parametrize(
    ("name", "column", "stated"),
    [
        ("med_income", "income", {"median"}),
        ("med_total", "total", {"median"}),
        ("med_V1", "V1", {"median"}),
        ("med_cost", "income", set()),  # "med" beside another word may be "medical"
        ("med_visits", None, set()),
        ("median_income", "income", {"median"}),
    ],
)
def test_med_and_the_aggregated_column_s_name_state_the_median(
    name: str, column: str | None, stated: set[str]
) -> None:
    assert stated_by(name, column) == stated


ENTRANT = (
    "a late entrant is someone who moved in at least four years (48 months) older than the median entry "
    "age of all residents of the same sex"
)


@pytest.mark.parametrize(
    ("distance", "after"),
    [("36", ">= sex_median + 48"), ("48", None), ("4", None), ("12", None), ("3", ">= sex_median + 4")],
)
def test_a_distance_said_in_two_units_is_read_with_both(distance: str, after: str | None) -> None:
    code = f"ch['late'] = ch['ageentry'] >= sex_median + {distance}"
    found = rule_offsets.changed(ENTRANT, code)
    assert (found.after if found else None) == after


SEX_RULE = "which residents moved in at least 48 months above their sex's median entry age but before 80?"


@pytest.mark.parametrize(("statistic", "found"), [("mean", True), ("median", False)])
def test_the_statistic_of_a_distance_rule_is_read(statistic: str, found: bool) -> None:
    code = (
        f"medians = ch.groupby('gender')['ageentry'].{statistic}()\n"
        "above = followed['ageentry'] >= followed['gender'].map(medians) + 48\n"
    )
    changed = rule_statistics.changed(SEX_RULE, code)
    assert (changed is not None) is found
    if changed is not None:
        assert changed.site.after.endswith(".median()") and changed.stated.function == "median"


def test_a_group_statistic_of_a_selection_of_rows_looked_up_back_is_read() -> None:
    code = (
        "status_median = ps[ps['hours'] > 0].groupby('married')['earnings'].median()\n"
        "ps['top_pay'] = ps['earnings'] >= 2.5 * ps['married'].map(status_median)\n"
    )
    assert rule_windows.rule_keys(code, inspect_code(code)) == ["married"]
    joined = rule_windows.joined_site(code, inspect_code(code), rule_windows.Stated("kids", ""))
    assert joined is not None and joined.after.count("'kids'") == 2


@pytest.mark.parametrize(
    ("first_question", "restoring", "found"),
    [
        # "age-80" is the number the defining turn stated beside 960
        (
            "Residents who moved in at 80 or older (960 months or more) are late entrants.",
            "Restore the age-80 late_entrant.",
            True,
        ),
        # a number no version, and no turn that stated one, has: a new rule is asked for
        (
            "Residents who moved in at 960 months or more are late entrants.",
            "Restore the age-80 late_entrant.",
            False,
        ),
        (
            "Residents who moved in at 80 or older (960 months or more) are late entrants.",
            "Restore the age-75 late_entrant.",
            False,
        ),
    ],
)
def test_a_restoring_question_may_state_the_numbers_the_defining_turn_stated(
    first_question: str, restoring: str, found: bool
) -> None:
    history = flag_history(
        (2, "ch['late_entrant'] = ch['ageentry'] >= 960", first_question),
        (7, "ch['late_entrant'] = ch['ageentry'] >= sex_median + 48", "Recompute it, sex-relative."),
    )
    code = "ch['late_entrant'] = ch['ageentry'] > 960"
    restored = history.restored(restoring, code, inspect_code(code))
    assert [r.after for r in restored] == (["ch['ageentry'] >= 960"] if found else [])


MODE = (
    "WITH rel AS (SELECT * FROM labs WHERE alt_m >= 3 * alt_b)\n"
    "SELECT count(*), (SELECT dose FROM rel GROUP BY {keys} ORDER BY count(*) DESC{tie} LIMIT 1) FROM rel"
)


@pytest.mark.parametrize(
    ("keys", "tie", "found"),
    [
        ("dose, patient", ", dose", (["dose"], ["patient"])),
        ("dose", ", dose", None),  # grouped by the picked column alone
        # a key the tie-break orders by is kept: the re-run breaks ties as the code does
        ("dose, code", ", code", None),
        ("dose, code, patient", ", code", (["dose", "code"], ["patient"])),
    ],
)
def test_a_most_common_value_taken_over_pairs_is_regrouped_on_its_column(
    keys: str, tie: str, found: tuple[list[str], list[str]] | None
) -> None:
    mode = split_groups.mode_keys(MODE.format(keys=keys, tie=tie))
    assert (mode[:2] if mode else None) == found
    if mode is not None:
        assert f"GROUP BY {', '.join(found[0])} ORDER BY" in mode[2]  # type: ignore[index]


def test_a_most_common_value_taken_over_pairs_is_planned_for_a_re_run() -> None:
    # the dict workspace shares the database with probes, so a SQL re-run of the turn is not made
    # here (the sandbox makes it, and the answer gate needs the answer to change)
    setup = (
        "import duckdb, json\ncon = duckdb.connect()\n"
        "con.execute('CREATE TABLE o AS SELECT * FROM orders')\n"
        "print(json.dumps({'n': len(orders)}))"
    )
    code = (
        "import json\n"
        'row = con.execute("SELECT count(*), (SELECT region FROM o GROUP BY region{extra} ORDER BY count(*) DESC, '
        'region LIMIT 1) FROM o").fetchone()\n'
        "print(json.dumps({'n': row[0], 'top_region': row[1]}))"
    )
    question = "How many orders are there, and which region do most of them come from?"
    notes = {}
    for extra in ("", ", customer_id"):
        session = session_with()
        assert session.turn("Load the orders into DuckDB. How many are there?", setup) == []
        assert session.turn(question, code.replace("{extra}", extra)) == []
        notes[extra] = [n for n in session.verifier.last.notes if "groups by" in n]
    assert notes[""] == []
    assert notes[", customer_id"] == ["one result per region: the query groups by customer_id as well"]


def test_rows_sharing_its_group_say_a_group() -> None:
    rule = "less than 75% of the median time in office of the cabinets sharing its majority status"
    assert rule_windows.group_words(rule) == {"majority", "status"}


# -- made after fresh40's first look (tuned on fresh40 from here) ------------------------------------

PRICEY = "orders['pricey'] = orders['price'] > 150"


@pytest.mark.parametrize(
    ("share", "flagged"),
    [
        ("100 * orders.loc[orders['region'] == 'North', 'pricey'].mean()", False),
        # the share of the other regions' orders: the subgroup turned round
        ("100 * orders.loc[orders['region'] != 'North', 'pricey'].mean()", True),
    ],
)
def test_a_subgroup_share_taken_over_the_other_rows_is_found(share: str, flagged: bool) -> None:
    session = session_with(PRICEY)
    assert (
        session.turn("How many orders are there?", "import json\nprint(json.dumps({'n': len(orders)}))") == []
    )
    code = f"import json\nresult = {{'n_pricey': int(orders['pricey'].sum()), 'pct_pricey_north': {share}}}\nprint(json.dumps(result))"
    findings = session.turn(
        "How many orders are pricey, and what percentage of the North orders are pricey?", code
    )
    assert bool([f for f in findings if "North" in f.reason or "region" in f.reason]) is flagged


@pytest.mark.parametrize(
    ("field", "target"),
    [
        ("n_opec", "n_opec"),
        ("int(n_opec)", "n_opec"),
        ("row[1]", "row"),
        ("n_opec + 1", None),
        ("len(x)", None),
    ],
)
def test_the_one_query_behind_a_reported_value(field: str, target: str | None) -> None:
    code = (
        "n_opec = con.execute(\"SELECT count(*) FROM recent WHERE opec = 'yes'\").fetchone()[0]\n"
        "row = con.execute('SELECT count(*), avg(sr) FROM recent').fetchone()\n"
    )
    found = _query_behind(field, inspect_code(code))
    assert (found.target if found else None) == target


def test_the_statistic_of_a_correlated_distance_rule_is_read() -> None:
    question = "which recent years were at least 8 points above their year's median saving rate yet under 25?"
    code = (
        'row = con.execute("""\nWITH rel AS (SELECT r.* FROM recent r\n'
        "    WHERE r.sr >= (SELECT avg(m.sr) FROM marked m WHERE m.year = r.year) + 8 AND NOT r.thrifty)\n"
        'SELECT count(*), avg(sr) FROM rel\n""").fetchone()\n'
    )
    changed = rule_statistics.changed(question, code)
    assert changed is not None
    assert changed.site.after == "(SELECT median(m.sr) FROM marked m WHERE m.year = r.year)"
    assert rule_statistics.changed(question, code.replace("avg(m.sr)", "median(m.sr)")) is None


@pytest.mark.parametrize(
    ("question", "found"),
    [
        (
            "Among the long-fed children: the median duration, and how old were their mothers on average?",
            True,
        ),
        ("Among the long-fed children: the median duration, and how many mothers are older than 30?", True),
        ("Among the long-fed children: the median duration, and how many mothers were 20 or older?", True),
        # an earlier version named: the replaced rule is asked for
        ("Among the children long-fed by the old rule: the median duration?", False),
    ],
)
def test_old_said_of_an_age_names_no_earlier_version(question: str, found: bool) -> None:
    history = flag_history(
        (2, "bf['long_fed'] = bf['duration'] >= 24", "A child is long-fed when fed for 24 weeks or more."),
        (
            7,
            "bf['long_fed'] = bf['duration'] >= 2 * year_median",
            "Recompute long_fed by the new definition.",
        ),
    )
    code = "lf = bf.loc[bf['duration'] >= 24]\nresult = {'median_duration': float(lf['duration'].median())}"
    assert bool(history.restated(question, code, inspect_code(code))) is found


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("SELECT count_if(total >= 5) FROM modern", True),  # the replaced rule on the computed column
        ("SELECT count_if(goal_rich) FROM modern", False),
        ("SELECT count_if(total >= 6) FROM modern", False),
    ],
)
def test_a_replaced_rule_written_on_a_column_computed_from_its_expression(query: str, found: bool) -> None:
    first = (
        'con.execute("CREATE TABLE flagged AS SELECT *, HomeGoals + AwayGoals AS total, '
        '(HomeGoals + AwayGoals) >= 5 AS goal_rich FROM games")'
    )
    second = (
        'con.execute("CREATE OR REPLACE TABLE flagged AS SELECT * REPLACE (total >= 2 * med AS goal_rich) '
        'FROM flagged")'
    )
    history = flag_history(
        (2, first, "A match is goal-rich with five or more goals."),
        (7, second, "Redefine goal-rich by the season-relative rule."),
    )
    assert history.derived == {"total": (("col", "homegoals"), ("op", "+"), ("col", "awaygoals"))}
    code = f'n = con.execute("{query}").fetchone()[0]'
    restated = history.restated("How many goal-rich modern matches are there?", code, inspect_code(code))
    assert [r.before for r in restated] == (["total >= 5"] if found else [])


@pytest.mark.parametrize(
    ("stated", "code", "status"),
    [
        (">=", ">", "threshold"),
        ("<", "<=", "threshold"),
        (">=", "<=", "differs"),
        (">", "<", "differs"),
        ("==", "!=", "differs"),
    ],
)
def test_a_bound_kept_strict_instead_of_inclusive_is_a_cut_off_mistake(
    stated: str, code: str, status: str
) -> None:
    # `> 24` for "at least 24" keeps the direction; the hint names the cut-off, not a reversed side
    assert side_status(stated, code) == status
    req = Requirement(kind=Kind.COMPARISON, text="at least 24", columns=["duration"], op=stated, value=24.0)
    words = reason(req, status)
    assert ("cut-off" in words) is (status == "threshold")
    assert ("reversed" in words) is (status == "differs")


def test_a_group_said_as_done_by_the_same_one() -> None:
    rule = "an interview is drawn-out when it took at least 1.4 times the median length of the interviews done by the same interviewer"
    stated = rule_windows.stated_group(
        rule, ["y", "homeOwn"], {"id": ("interviewer",)}, ["age", "length"], {}, [], ["id"]
    )
    assert stated is not None and stated.keys == ["id"]


@pytest.mark.parametrize(("distance", "after"), [("2", '>= ra["baseline"] + 1'), ("1", None)])
def test_a_distance_from_the_row_s_own_value(distance: str, after: str | None) -> None:
    rule = (
        "a reading is favourable when its score is at least one point above the patient's own baseline score"
    )
    found = rule_offsets.changed(rule, f'ra["favourable"] = ra["y"] >= ra["baseline"] + {distance}')
    assert (found.after if found else None) == after


def test_the_stated_side_check_names_a_strict_bound_a_cut_off() -> None:
    said = "A child breast-fed for at least 24 weeks counts as long-fed"
    strict = stated_sides.flipped(said, 'bf["long_fed"] = bf["duration"] > 24')
    reversed_ = stated_sides.flipped(said, 'bf["long_fed"] = bf["duration"] < 24')
    assert strict is not None and (strict.after, strict.status) == (">= 24", "threshold")
    assert reversed_ is not None and reversed_.status == "differs"
