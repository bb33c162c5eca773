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
