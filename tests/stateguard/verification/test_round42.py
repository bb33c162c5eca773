"""Round 42: a rule's group statistic may be a ranking or a lag within each group.

Written from fresh60's first look, which missed the group keys of three rule updates: a SQL
`percent_rank() OVER (PARTITION BY season, round_no ...)` ("in the top fifth of the boxes of the same
season and the same round"), a SQL `lag(inv) OVER (PARTITION BY firm ...)` ("30 % more than the same
firm did in the year before") and a pandas `groupby("region")["infant"].rank(...)` ("one of the eight
countries with the highest rates of its region"). Each check here runs against the right keys and
against other keys.
"""

from __future__ import annotations

import pytest

from stateguard.inspection.inspect import inspect_code
from stateguard.verification import rule_windows
from tests.stateguard.verification.conftest import session_with

RANKED = """
place = nations.groupby({keys})["infant"].rank(method="min", ascending=False)
nations["severe"] = place <= 8
"""


@pytest.mark.parametrize(
    ("keys", "site"),
    [('"region"', False), ('["region", "oil"]', True), ('"oil"', True)],
)
def test_a_grouped_pandas_ranking_is_the_rules_statistic(keys: str, site: bool) -> None:
    code = RANKED.format(keys=keys)
    sem = inspect_code(code)
    stated = rule_windows.Stated("region", "of its region")
    found = rule_windows.code_site(sem, stated, code)
    assert (found is not None) is site
    if found is not None:
        assert found.fixed.startswith("nations.groupby('region')")
        assert found.before == code.strip().splitlines()[0].split(" = ", 1)[1]


@pytest.mark.parametrize("method", ["shift()", "diff()", "pct_change()", "cumsum()", "rank(pct=True)"])
def test_each_per_row_method_of_a_group_gives_the_codes_keys(method: str) -> None:
    code = f'prev = panel.groupby(["firm", "era"])["inv"].{method}\npanel["heavy"] = panel["inv"] > prev'
    assert rule_windows.rule_keys(code, inspect_code(code)) == ["firm", "era"]


def test_a_whole_frame_method_is_no_group_statistic() -> None:
    code = 'place = nations["infant"].rank(ascending=False)\nnations["severe"] = place <= 8'
    assert rule_windows.rule_keys(code, inspect_code(code)) is None


@pytest.mark.parametrize(
    ("partition", "fixed"),
    [("season, round_no", None), ("round_no", "PARTITION BY season, round_no")],
)
def test_a_sql_ranking_window_is_rekeyed_as_stated(partition: str, fixed: str | None) -> None:
    code = (
        'con.execute("""CREATE OR REPLACE TABLE players AS SELECT * REPLACE '
        f'(percent_rank() OVER (PARTITION BY {partition} ORDER BY cash) >= 0.8 AS rich) FROM players""")'
    )
    site = rule_windows.code_site(inspect_code(code), rule_windows.Stated("season", "x", ("round_no",)), code)
    assert (site is None) is (fixed is None)
    if site is not None:
        assert fixed in site.fixed and "PERCENT_RANK()" in site.fixed


def test_the_same_group_after_than_and_before_an_auxiliary_verb() -> None:
    rule = (
        "She proposes calling a year heavy when the firm invested at least 30 % more than the same firm "
        "did in the year before; a firm's first year, with no year before it, is not heavy."
    )
    stated = rule_windows.stated_group(
        rule, ["firm", "year", "inv", "value"], {}, [], None, ["year"], ["firm"]
    )
    assert stated is not None and stated.keys == ["firm"]


NATIONS = """
import json
nations = pd.DataFrame({
    "country": [f"c{i}" for i in range(60)],
    "region": np.where(np.arange(60) % 3 == 0, "Asia", np.where(np.arange(60) % 3 == 1, "Africa", "Europe")),
    "oil": np.where(np.arange(60) % 4 == 0, "yes", "no"),
    "infant": (np.arange(60) * 37) % 200 + 5.0,
})
"""
CONTEXT = (
    "A demographer would call a country severe when it is one of the eight countries with the highest "
    "infant-mortality rates of its region (ranked from the highest rate down)."
)


@pytest.mark.parametrize(("keys", "caught"), [('"region"', False), ('["region", "oil"]', True)])
def test_a_ranking_over_other_keys_is_found_end_to_end(keys: str, caught: bool) -> None:
    session = session_with(NATIONS)
    # turn 1's context is the task's description; a rule is stated in a later turn's own context
    assert not session.turn("How many countries are there?", 'print(json.dumps({"n": len(nations)}))')
    code = (
        RANKED.format(keys=keys)
        + 'result = {"n_severe": int(nations["severe"].sum())}\nprint(json.dumps(result))'
    )
    findings = session.turn(
        "Recast severe in `nations` on her terms. How many severe countries are there now?",
        code,
        own_context=CONTEXT,
    )
    assert bool(findings) is caught, findings
