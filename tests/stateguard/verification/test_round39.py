"""Round 39: a peers' phrase of peer nouns alone ("compared with its own cohort: ...") that points at
the group the rule then names, and a distance in a named kind of standard deviation ("more than one
sample standard deviation above the average"), which is no bound on the value itself.

Written from the misses of fresh55's final run (a seen split): the turn-7 rules whose misses made
its contamination rate higher than the baseline's.
"""

from __future__ import annotations

import pytest

from stateguard.verification import extract, rule_offsets, rule_windows, unstated_cutoff
from tests.stateguard.verification.conftest import Session

COHORT_RULE = (
    "The statistician wants an interview compared with its own cohort: an interview is settled when its "
    "score is more than 0.25 above the median score of all interviews in `visits` held at the same month "
    "by people with the same certificate status."
)
COLUMNS = ["month", "certificate", "worker"]


def test_a_phrase_of_peer_nouns_points_at_the_keys_named_after_it() -> None:
    found = rule_windows.stated_group(COHORT_RULE, COLUMNS, {}, ["score"], None, [], ["row_no"])
    assert found is not None and sorted(found.keys) == ["certificate", "month"]


def test_a_phrase_of_peer_nouns_alone_states_no_group() -> None:
    alone = (
        "an interview is settled when its score is more than 0.25 above the median score of its own cohort."
    )
    assert rule_windows.stated_group(alone, COLUMNS, {}, ["score"], None, [], ["row_no"]) is None


def test_a_peer_noun_that_is_a_column_is_still_a_key() -> None:
    # with a column named `cohort` the phrase names it: three phrases, and the group is not read as two
    columns = [*COLUMNS, "cohort"]
    assert rule_windows.stated_group(COHORT_RULE, columns, {}, ["score"], None, [], ["row_no"]) is None


def test_a_distance_in_a_named_kind_of_standard_deviation() -> None:
    said = rule_offsets.stated(
        "a respondent is firm when the index is more than one sample standard deviation above the average "
        "index of the respondents who gave the same answer"
    )
    assert said is not None and (said.distance, said.up, said.sd) == (1.0, True, True)
    pooled = rule_offsets.stated("a score two pooled SDs below the mean score of the class")
    assert pooled is not None and (pooled.distance, pooled.up, pooled.sd) == (2.0, False, True)
    # a plain standard deviation is read as before
    plain = rule_offsets.stated("at least one standard deviation above the mean score")
    assert plain is not None and plain.sd


@pytest.mark.parametrize(
    "text",
    [
        "the index is more than one sample standard deviation above the average index",
        "a reading at least 3 full standard deviations above the mean",
    ],
)
def test_a_distance_from_a_statistic_is_no_bound_on_the_value(text: str) -> None:
    assert extract.comparisons(text) == []
    assert [words for *_, words in unstated_cutoff.bounds(text)] == []


def test_a_plain_bound_is_still_read() -> None:
    assert [(r.op, r.value) for r in extract.comparisons("the index is more than 6")] == [(">", 6.0)]
    assert [x for x, *_ in unstated_cutoff.bounds("the index is more than 6")] == [6.0]


TEAMS = (
    "import json\n"
    "scores = pd.DataFrame({'team': list('aaaaabbbbbcccccddddd'), 'division': list('xxyyyxxyyyxxyyyxxyyy'), "
    "'index': [3, 5, 7, 8, 2, 6, 6, 7, 9, 1, 4, 4, 8, 3, 7, 2, 9, 5, 5, 6]})"
)


@pytest.mark.parametrize(("k", "caught"), [("1.0", False), ("0.5", True)])
def test_a_distance_in_sample_standard_deviations_is_checked(k: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(TEAMS).ok
    code = (
        "grp = scores.groupby('team')['index']\n"
        f"scores['firm'] = scores['index'] > grp.transform('mean') + {k} * grp.transform('std')\n"
        "print(json.dumps({'n_firm': int(scores['firm'].sum())}))"
    )
    question = (
        "A respondent is firm when the index is more than one sample standard deviation above the average "
        "index of all rows in `scores` of the same team. Add a boolean firm to `scores`. How many rows are firm?"
    )
    findings = session.turn(question, code)
    assert bool(findings) is caught
    if caught:
        assert "standard deviation" in findings[0].reason


@pytest.mark.parametrize(("keys", "caught"), [('["team", "division"]', False), ('["team"]', True)])
def test_the_keys_after_a_peers_phrase_are_checked(keys: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(TEAMS).ok
    code = (
        f"med = scores.groupby({keys})['index'].transform('median')\n"
        "scores['high'] = scores['index'] > med + 1\n"
        "print(json.dumps({'n_high': int(scores['high'].sum())}))"
    )
    question = (
        "Each row is compared with its own peers: a row is high when its index is more than 1 above the "
        "median index of all rows in `scores` of the same team in the same division. Add a boolean high to "
        "`scores`. How many rows are high?"
    )
    findings = session.turn(question, code)
    assert bool(findings) is caught
    if caught:
        assert "division" in findings[0].reason


VISITS = (
    "import json\n"
    "tracked = pd.DataFrame({'sec': [1, 0, 1, 1, 0, 1, 1, 0, 1, 1], "
    "'run_mean': [0.5, 1.0, 1.1, 1.3, 2.0, 0.9, 1.0, 1.6, 1.2, 2.2]})"
)


@pytest.mark.parametrize(("cut", "caught"), [("1", False), ("1.25", True)])
def test_an_equality_on_another_column_is_not_the_stated_bound(cut: str, caught: bool) -> None:
    # `sec == 1` holds the stated number; the bound on run_mean is still the one to check
    session = Session()
    assert session.ws.run_cell(VISITS).ok
    code = (
        "holders = tracked[tracked['sec'] == 1]\n"
        f"print(json.dumps({{'n': len(holders), 'n_high': int((holders['run_mean'] >= {cut}).sum())}}))"
    )
    findings = session.turn("Among the holders' interviews, at how many was run_mean at least 1?", code)
    assert bool(findings) is caught
    if caught:
        assert "run mean" in findings[0].reason


# the phrases set aside: a summary before a colon, a parenthesis that restates the keys, bin widths
SITES = (["site", "month", "weekday", "place"], ["nox", "cell_mean"])


def _group(rule: str, columns: list[str], measures: list[str], years: list[str] | None = None) -> list[str]:
    found = rule_windows.stated_group(rule, columns, {}, measures, {}, years or [], ["day_no"])
    return sorted(found.keys) if found is not None else []


def test_a_parenthesis_that_restates_the_keys_is_set_aside() -> None:
    rule = (
        "a high day is a reading more than two standard deviations above the mean NOx of the same site in the "
        "same month (mean and sample standard deviation over all of that site's readings that month)."
    )
    assert _group(rule, *SITES) == ["month", "site"]
    # a parenthesis that names another key leaves the group unread
    other = rule.replace("that site's readings that month", "that place's readings that month")
    assert _group(other, *SITES) == []


def test_a_summary_before_a_colon_is_set_aside_for_the_definition_after_it() -> None:
    rule = (
        "The hydrologist would rather measure each month against its own season in its own time: a flood "
        "month is one whose stage is at least 1.2 metres above the median stage of the same calendar month "
        "over the same decade (all months of `stages`)."
    )
    assert _group(rule, ["month", "flood"], ["time", "stage"], ["year", "decade"]) == ["decade", "month"]
    # the summary names a column the definition does not: not read
    other = rule.replace("in its own time", "in its own flood")
    assert _group(other, ["month", "flood"], ["time", "stage"], ["year", "decade"]) == []
    # without the colon the summary is a phrase of its own, naming a measure: not read
    plain = rule.replace("in its own time:", "in its own time, and")
    assert _group(plain, ["month", "flood"], ["time", "stage"], ["year", "decade"]) == []


def test_the_width_of_a_bin_said_before_its_noun() -> None:
    rule = "a month is warm when its mean comes within 1.5 F of the warmest mean in the same five-year span."
    assert _group(rule, ["month", "span", "season"], ["temp"]) == ["span"]
    assert _group(rule.replace("five-year", "two-month"), ["month", "span", "season"], ["temp"]) == ["span"]
    # a width alone names nothing
    assert _group("the warmest mean of the same five-year", ["month", "span"], ["temp"]) == []


@pytest.mark.parametrize(("keys", "caught"), [('["site", "month"]', False), ('["site"]', True)])
def test_the_keys_of_a_rule_with_a_restating_parenthesis_are_checked(keys: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import json\n"
        "readings = pd.DataFrame({'site': list('aaaaaaaabbbbbbbb'), 'month': [1, 1, 1, 1, 2, 2, 2, 2] * 2, "
        "'nox': [10, 12, 11, 30, 50, 52, 51, 58, 20, 22, 21, 40, 5, 6, 7, 9]})"
    ).ok
    code = (
        f"med = readings.groupby({keys})['nox'].transform('median')\n"
        "readings['high'] = readings['nox'] > med + 5\n"
        "print(json.dumps({'n_high': int(readings['high'].sum())}))"
    )
    question = (
        "The analyst judges each reading against its own site and season: a reading is high when its nox is "
        "more than 5 above the median nox of the same site in the same month (over all of that site's "
        "readings that month). Add a boolean high to `readings`. How many readings are high?"
    )
    findings = session.turn(question, code)
    assert bool(findings) is caught
    if caught:
        assert "month" in findings[0].reason


def test_a_numbered_point_of_a_sequence_is_a_bound_on_it() -> None:
    got = extract.comparisons("how many player-games come after game number 100?")
    assert [(r.op, r.value, r.subject) for r in got] == [(">", 100.0, ["game", "number"])]
    # the points of time read as before, with no subject of their own
    assert [(r.op, r.value, r.subject) for r in extract.comparisons("before month 10")] == [("<", 10.0, [])]
    assert [(r.op, r.value) for r in extract.comparisons("the laps after lap 20")] == [(">", 20.0)]


@pytest.mark.parametrize(("op", "caught"), [(">", False), ("<", True)])
def test_a_bound_after_a_numbered_game_is_checked(op: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import json\ngames = pd.DataFrame({'gameno': list(range(90, 110)), 'hr': [0, 1] * 10})"
    ).ok
    code = f"print(json.dumps({{'n_late': int((games['gameno'] {op} 100).sum())}}))"
    findings = session.turn("How many player-games come after game number 100?", code)
    assert bool(findings) is caught


# After fresh56's first look (its two clean-run false repairs)


def test_speed_superlatives_have_no_direction_of_their_own() -> None:
    from stateguard.artifacts.lexicon import LEXICON

    # the slowest reading is the largest reaction time but the smallest speed
    assert not {"fastest", "slowest"} & {*LEXICON.descending, *LEXICON.ascending}
    # a rate of growth has one: the fastest-growing rows are the largest growth first
    assert "fastest-growing" in LEXICON.descending and "slowest-growing" in LEXICON.ascending


@pytest.mark.parametrize("direction", ["DESC", "ASC"])
def test_the_slowest_readings_are_not_checked_for_a_direction(direction: str) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import json\ntrials = pd.DataFrame({'obs_no': range(1, 9), 'rt': [250, 410, 300, 380, 290, 350, 500, 270]})"
    ).ok
    code = (
        f"top = trials.sort_values(['rt', 'obs_no'], ascending=[{direction == 'ASC'}, True]).head(5)\n"
        "print(json.dumps({'top5_rt_obs_no': top['obs_no'].tolist()}))"
    )
    assert session.turn("Give the obs_no of the five slowest readings, slowest first.", code) == []


@pytest.mark.parametrize(("keys", "caught"), [('["month", "onset"]', False), ('["month"]', True)])
def test_a_completeness_filter_by_another_key_is_not_the_rules_statistic(keys: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(
        "import json\n"
        "rated = pd.DataFrame({'subject': [1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5], "
        "'month': [0, 2, 6, 0, 2, 6, 0, 2, 0, 2, 6, 0, 2, 6], "
        "'onset': ['early'] * 6 + ['late'] * 8, "
        "'ill': [1, 2, 3, 0, 1, 1, 1, 1, 0, 0, 2, 1, 3, 4]})"
    ).ok
    code = (
        f"peer = rated.groupby({keys})['ill'].mean().rename('peer')\n"
        f"rated['persistent'] = rated['ill'] >= 1.5 * rated.join(peer, on={keys})['peer']\n"
        "complete = rated[rated.groupby('subject')['month'].transform('count') == 3].copy()\n"
        "print(json.dumps({'n_persistent': int(complete['persistent'].sum())}))"
    )
    question = (
        "A review is persistent when its ill is at least 1.5 times the mean ill of all reviews in `rated` at "
        "the same month from women with the same onset. Redefine persistent in `rated` and rebuild `complete` "
        "(the women with all three reviews). How many reviews in `complete` are persistent?"
    )
    findings = session.turn(question, code)
    assert bool(findings) is caught


def test_a_table_rebuilt_from_itself_through_a_subquery_is_re_run_on_its_first_input() -> None:
    import contextlib
    import io
    import json

    import duckdb

    from stateguard.verification import probes

    cell = (
        'con.execute("CREATE OR REPLACE TABLE panel AS SELECT *, growth >= 3 AS fast FROM '
        "(SELECT *, CASE WHEN gdp < 7 THEN 'poor' ELSE 'rich' END AS band FROM panel)\")\n"
        "import json\n"
        'print(json.dumps({"n": con.execute("SELECT count_if(fast) FROM panel").fetchone()[0]}))\n'
    )
    space: dict[str, object] = {"con": duckdb.connect()}
    space["con"].execute(  # type: ignore[attr-defined]
        "CREATE TABLE panel AS SELECT * FROM (VALUES (1, 2.5, 6.0), (2, 3.5, 8.0), (3, 4.5, 7.5)) v(id, growth, gdp)"
    )
    with contextlib.redirect_stdout(io.StringIO()):
        exec(cell, space)  # noqa: S102 - the turn itself
    out = io.StringIO()
    program = probes.answer_probe([cell], probes.SpanEdit(kind="text", before=">= 3", after=">= 4"), "con")
    with contextlib.redirect_stdout(out):
        exec(program, space)  # noqa: S102 - the probe program, as the sandbox runs it
    applied, printed = probes.parse_answer(out.getvalue())
    assert applied == 1
    # read as is, the re-run would keep the first run's `fast` and count 2; from its first input, 1
    assert json.loads(printed.strip().splitlines()[-1]) == {"n": 1}
    columns = [d[0] for d in space["con"].execute("SELECT * FROM panel LIMIT 0").description]  # type: ignore[attr-defined]
    assert columns == ["id", "growth", "gdp", "band", "fast"]


def test_a_rate_said_a_year_is_no_quantity() -> None:
    got = extract.comparisons("calls a country-decade a fast grower at 4 % a year or more")
    assert [(r.op, r.value, r.subject) for r in got] == [(">=", 4.0, [])]
    # words between the number and "or more" that name a quantity still do
    assert extract.comparisons("how many have 3,000 residents or more")[0].subject == ["residents"]


# After fresh57's first look (its one clean-run false repair)

CELLS = (
    "import json\n"
    "cells = pd.DataFrame({'cell': range(1, 9), 'Income': ['0-50', '50-100', '100-150', '>150'] * 2, "
    "'Freq': [5, 12, 40, 28, 61, 9, 30, 17]})"
)


def test_a_cut_off_on_numbers_the_turn_names_is_not_an_unnamed_bound() -> None:
    session = Session()
    assert session.ws.run_cell(CELLS).ok
    code = (
        "earners = cells[cells['Income'] != '0-50'].copy()\n"
        "mid = earners['Freq'].between(10, 30)\n"
        "print(json.dumps({'n': len(earners), 'n_mid': int(mid.sum())}))"
    )
    question = (
        "From here on every question is about the cells above 50 thousand kroner only: keep them as `earners`. "
        "How many cells is that, and how many hold 10 to 30 respondents, both ends included?"
    )
    assert session.turn(question, code) == []
    # the bound on 50 binds no cut-off: `between(10, 30)` stands for the words "10 to 30"
    assert not [n for n in session.verifier.last.notes if "between(10, 30)" in n]


@pytest.mark.parametrize(("cut", "caught"), [("20", False), ("15", True)])
def test_an_unnamed_cut_off_is_still_the_stated_bound(cut: str, caught: bool) -> None:
    session = Session()
    assert session.ws.run_cell(CELLS).ok
    code = f"print(json.dumps({{'n_big': int((cells['Freq'] > {cut}).sum())}}))"
    findings = session.turn("How many of the cells are above 20?", code)
    assert bool(findings) is caught
